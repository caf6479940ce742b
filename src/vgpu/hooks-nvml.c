/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exported NVML hooks (list: nvml.def): the memory view of a capped device is the claim's, the
 * same numbers cuMemGetInfo_v2 reports. NVML-only programs (nvidia-smi, agents) never make
 * libvgpu touch CUDA: the device is found by UUID in the limits and the claim's region.
 */
#include <pthread.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

#define UUID_CACHE 64

static struct {
    nvmlDevice_t handle;
    int index;
    char uuid[GS_LIMITS_UUID_MAX];
} uuid_cache[UUID_CACHE];
static int n_cached;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

void vgpu_nvml_atfork_child(void)
{
    pthread_mutex_init(&cache_lock, NULL); /* another thread may have held it at fork() */
}

/* The vgpu device behind an NVML handle (by UUID), or NULL. */
struct vgpu_device *vgpu_nvml_view_device(nvmlDevice_t h)
{
    char uuid[GS_LIMITS_UUID_MAX] = "";
    int index = -1;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < n_cached; i++)
        if (uuid_cache[i].handle == h) {
            memcpy(uuid, uuid_cache[i].uuid, sizeof(uuid));
            index = uuid_cache[i].index;
        }
    pthread_mutex_unlock(&cache_lock);
    if (!uuid[0]) {
        if (!gs_real_nvml.nvmlDeviceGetUUID ||
            gs_real_nvml.nvmlDeviceGetUUID(h, uuid, sizeof(uuid)) != NVML_SUCCESS)
            return NULL;
        unsigned idx = 0;
        if (gs_real_nvml.nvmlDeviceGetIndex &&
            gs_real_nvml.nvmlDeviceGetIndex(h, &idx) == NVML_SUCCESS)
            index = (int)idx;
        pthread_mutex_lock(&cache_lock);
        if (n_cached < UUID_CACHE) {
            uuid_cache[n_cached].handle = h;
            uuid_cache[n_cached].index = index;
            memcpy(uuid_cache[n_cached].uuid, uuid, sizeof(uuid));
            n_cached++;
        }
        pthread_mutex_unlock(&cache_lock);
    }
    return vgpu_device_for_view(uuid, index);
}

/* Capped vgpu device behind an NVML handle, or NULL. */
static struct vgpu_device *capped_device(nvmlDevice_t h)
{
    struct vgpu_device *d = vgpu_nvml_view_device(h);
    return d && d->cfg.memory_limit ? d : NULL;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    if (!gs_real_nvml.nvmlDeviceGetMemoryInfo &&
        (vgpu_depth || !vgpu_nvml_ready() || !gs_real_nvml.nvmlDeviceGetMemoryInfo))
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = gs_real_nvml.nvmlDeviceGetMemoryInfo(device, memory);
    if (r != NVML_SUCCESS || vgpu_depth)
        return r;
    struct vgpu_device *d = capped_device(device);
    if (d) {
        struct vgpu_mem_view v;
        vgpu_memory_view(d, memory->total, memory->free, &v);
        memory->total = v.total;
        memory->used = v.used;
        memory->free = v.free;
    }
    return r;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    if (!gs_real_nvml.nvmlDeviceGetMemoryInfo_v2 &&
        (vgpu_depth || !vgpu_nvml_ready() || !gs_real_nvml.nvmlDeviceGetMemoryInfo_v2))
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = gs_real_nvml.nvmlDeviceGetMemoryInfo_v2(device, memory);
    if (r != NVML_SUCCESS || vgpu_depth)
        return r;
    struct vgpu_device *d = capped_device(device);
    if (d) {
        struct vgpu_mem_view v;
        vgpu_memory_view(d, memory->total, memory->free, &v);
        memory->total = v.total;
        memory->reserved = 0;
        memory->used = v.used;
        memory->free = v.free;
    }
    return r;
}
