/* SPDX-License-Identifier: Apache-2.0 */
/* The device backends' one registration table (see device.h). */
#include "gpu/device.h"

#include <string.h>

#include "gpu/nvidia/nvidia.h"

static const struct gs_device_backend *const backends[] = {
    &gpu_nvidia_backend,
};

const struct gs_device_backend *gs_device_backend_find(const char *name)
{
    if (!name || !*name)
        name = "nvidia";
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}
