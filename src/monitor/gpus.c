/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/gpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"

int mon_gpus_discover(struct mon_gpus *g, struct gs_error *err)
{
    struct gpu_inventory *inv = calloc(1, sizeof(*inv));
    if (!inv)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int r = gpu_discover("/sys", inv, err);
    if (r < 0) {
        free(inv);
        return r;
    }
    memset(g, 0, sizeof(*g));
    for (size_t i = 0; i < inv->n && g->n < MON_MAX_GPUS; i++) {
        const struct gpu_device *d = &inv->dev[i];
        struct mon_gpu *m = &g->gpu[g->n++];
        m->index = d->index;
        m->minor = d->minor;
        snprintf(m->name, sizeof(m->name), "%s", d->name);
        snprintf(m->uuid, sizeof(m->uuid), "%s", d->uuid);
        snprintf(m->product, sizeof(m->product), "%s", d->product);
        snprintf(m->brand, sizeof(m->brand), "%s", d->brand);
        snprintf(m->type, sizeof(m->type), "NVIDIA-%s", d->product);
        m->memory_total = d->memory_total;
        m->memory_published = d->memory_total / GPU_MIB * GPU_MIB;
    }
    g->discovered = true;
    free(inv);
    return 0;
}

unsigned mon_gpus_sample(struct mon_gpus *g, struct gpu_nvml *nv)
{
    unsigned failed = 0;
    for (size_t i = 0; i < g->n; i++) {
        struct mon_gpu *m = &g->gpu[i];
        m->has_memory_used = m->has_utilization = false;
        nvmlDevice_t h;
        if (!nv->lib || nv->nvmlDeviceGetHandleByIndex_v2(m->index, &h) != NVML_SUCCESS) {
            failed += 2;
            continue;
        }
        nvmlMemory_t mem;
        if (nv->nvmlDeviceGetMemoryInfo && nv->nvmlDeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS) {
            m->has_memory_used = true;
            m->memory_used = mem.used;
        } else {
            failed++;
        }
        nvmlUtilization_t u;
        if (nv->nvmlDeviceGetUtilizationRates &&
            nv->nvmlDeviceGetUtilizationRates(h, &u) == NVML_SUCCESS) {
            m->has_utilization = true;
            m->utilization = GS_MIN(u.gpu, 100u);
        } else {
            failed++;
        }
    }
    return failed;
}

const struct mon_gpu *mon_gpus_find(const struct mon_gpus *g, const char *uuid)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->gpu[i].uuid, uuid) == 0)
            return &g->gpu[i];
    return NULL;
}
