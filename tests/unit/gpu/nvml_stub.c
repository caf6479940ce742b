/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A libnvidia-ml.so.1 with only what the monitor's "usage" needs (GPU_NVML_USE_USAGE) and none of
 * the discovery functions, for test_nvml: it checks that the loader tells "missing for this use"
 * from "optional". nvmlInit_v2 fails while $NVML_STUB_INIT_FAIL is set.
 */
#include <stdlib.h>

#include "abi/nvml_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return getenv("NVML_STUB_INIT_FAIL") ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    return r == NVML_ERROR_DRIVER_NOT_LOADED ? "stub: driver not loaded" : "stub: error";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    *count = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    (void)index, (void)device;
    return NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    (void)device, (void)uuid, (void)length;
    return NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    (void)device, (void)memory;
    return NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                            unsigned int *count,
                                                            nvmlProcessInfo_t *infos)
{
    (void)device, (void)infos;
    *count = 0;
    return NVML_SUCCESS;
}
