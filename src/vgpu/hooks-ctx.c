/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Context overhead: a context costs device memory the application never allocated. libvgpu
 * charges it as the change of the driver's own per-process usage (NVML, this pid) across each
 * context call; when NVML does not list this process (pid namespaces), the change of the
 * device's total usage is used instead (racy with other processes; documented). Creating a
 * context whose overhead does not fit the limit fails with CUDA_ERROR_OUT_OF_MEMORY.
 */
#include <pthread.h>
#include <unistd.h>

#include "vgpu/vgpu-internal.h"

static uint64_t ctx_charged[VGPU_MAX_DEVICES];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

struct usage {
    bool ok;
    bool listed;       /* NVML lists this pid on the device */
    uint64_t pid_used; /* its usage (0 when not listed) */
    uint64_t dev_used; /* the device's total usage */
};

/* The driver's view of this process's usage on d, and of the whole device. */
static void driver_usage(const struct vgpu_device *d, struct usage *u)
{
    static atomic_bool nvml_init;
    u->ok = u->listed = false;
    u->pid_used = u->dev_used = 0;
    if (!vgpu_nvml_ready() || !gs_real_nvml.nvmlDeviceGetHandleByUUID ||
        !gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3 ||
        !gs_real_nvml.nvmlDeviceGetMemoryInfo)
        return;
    if (!atomic_load(&nvml_init)) {
        if (!gs_real_nvml.nvmlInit_v2 || gs_real_nvml.nvmlInit_v2() != NVML_SUCCESS)
            return;
        atomic_store(&nvml_init, true);
    }
    nvmlDevice_t h;
    nvmlMemory_t m;
    if (gs_real_nvml.nvmlDeviceGetHandleByUUID(d->uuid, &h) != NVML_SUCCESS ||
        gs_real_nvml.nvmlDeviceGetMemoryInfo(h, &m) != NVML_SUCCESS)
        return;
    u->ok = true;
    u->dev_used = m.used;
    nvmlProcessInfo_t infos[256];
    unsigned n = GS_ARRAY_SIZE(infos);
    unsigned pid = (unsigned)getpid();
    if (gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, infos) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < n && i < GS_ARRAY_SIZE(infos); i++) {
        if (infos[i].pid == pid) {
            u->listed = true;
            u->pid_used = infos[i].usedGpuMemory;
        }
    }
}

static int64_t diff(uint64_t before, uint64_t after)
{
    return after >= before ? (int64_t)GS_MIN(after - before, (uint64_t)INT64_MAX)
                           : -(int64_t)GS_MIN(before - after, (uint64_t)INT64_MAX);
}

/* Per-process change when the driver lists us before or after; else the device-wide change. */
static int64_t usage_delta(const struct usage *before, const struct usage *after)
{
    if (before->listed || after->listed)
        return diff(before->pid_used, after->pid_used);
    return diff(before->dev_used, after->dev_used);
}

struct reading {
    struct usage u[VGPU_MAX_DEVICES];
};

static void read_all(struct reading *r, int only)
{
    for (int i = 0; i < VGPU_MAX_DEVICES; i++) {
        r->u[i].ok = false;
        if (only >= 0 && i != only)
            continue;
        struct vgpu_device *d = vgpu_device_at(i);
        if (d && d->region)
            driver_usage(d, &r->u[i]);
    }
}

/* Apply the usage change across a context call. Growth is charged (false if it does not fit);
 * shrinkage gives back at most what was charged for contexts. */
static bool settle(const struct reading *before, int only)
{
    struct reading after;
    read_all(&after, only);
    bool fits = true;
    pthread_mutex_lock(&ctx_lock);
    for (int i = 0; i < VGPU_MAX_DEVICES; i++) {
        if (!before->u[i].ok || !after.u[i].ok)
            continue;
        struct vgpu_device *d = vgpu_device_at(i);
        int64_t delta = usage_delta(&before->u[i], &after.u[i]);
        if (delta > 0) {
            if (vgpu_charge(d, (uint64_t)delta) < 0) {
                fits = false;
                continue;
            }
            ctx_charged[i] += (uint64_t)delta;
            VLOG(VGPU_LOG_DEBUG, "device %s: context overhead %lld bytes charged", d->uuid,
                 (long long)delta);
        } else if (delta < 0) {
            uint64_t give = GS_MIN((uint64_t)-delta, ctx_charged[i]);
            ctx_charged[i] -= give;
            vgpu_uncharge(d, give);
        }
    }
    pthread_mutex_unlock(&ctx_lock);
    return fits;
}

static bool ctx_tracking(void)
{
    if (vgpu_depth)
        return false;
    vgpu_devices_init();
    return atomic_load_explicit(&vgpu_any_tracked, memory_order_relaxed);
}

static int tracked_index(CUdevice dev)
{
    struct vgpu_device *d = vgpu_device_of(dev);
    return d && d->region ? vgpu_device_index(d) : -2;
}

#define NEED(name)                                                                                 \
    do {                                                                                           \
        if (GS_UNLIKELY(!gs_real_cu.name) &&                                                       \
            (vgpu_depth || !vgpu_cuda_ready() || !gs_real_cu.name))                                \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

#define CALL_REAL(res, name, ...)                                                                  \
    do {                                                                                           \
        vgpu_depth++;                                                                              \
        res = gs_real_cu.name(__VA_ARGS__);                                                        \
        vgpu_depth--;                                                                              \
    } while (0)

GS_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    NEED(cuDevicePrimaryCtxRetain);
    int idx;
    if (!ctx_tracking() || (idx = tracked_index(dev)) < 0)
        return gs_real_cu.cuDevicePrimaryCtxRetain(pctx, dev);
    struct reading before;
    read_all(&before, idx);
    CUresult r;
    CALL_REAL(r, cuDevicePrimaryCtxRetain, pctx, dev);
    if (r == CUDA_SUCCESS && !settle(&before, idx)) {
        CALL_REAL(r, cuDevicePrimaryCtxRelease_v2, dev);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return r;
}

static CUresult release_like(CUresult (*fn)(CUdevice), CUdevice dev)
{
    int idx;
    if (!ctx_tracking() || (idx = tracked_index(dev)) < 0)
        return fn(dev);
    struct reading before;
    read_all(&before, idx);
    vgpu_depth++;
    CUresult r = fn(dev);
    vgpu_depth--;
    settle(&before, idx);
    return r;
}

GS_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    NEED(cuDevicePrimaryCtxRelease_v2);
    return release_like(gs_real_cu.cuDevicePrimaryCtxRelease_v2, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    NEED(cuDevicePrimaryCtxReset_v2);
    return release_like(gs_real_cu.cuDevicePrimaryCtxReset_v2, dev);
}

/* After a context was created on dev: charge its overhead or destroy it. */
static CUresult created(CUresult r, CUcontext *pctx, const struct reading *before, int idx)
{
    if (r != CUDA_SUCCESS || idx < 0)
        return r;
    if (!settle(before, idx)) {
        CALL_REAL(r, cuCtxDestroy_v2, *pctx);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

GS_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate_v2);
    int idx = ctx_tracking() ? tracked_index(dev) : -2;
    struct reading before;
    if (idx >= 0)
        read_all(&before, idx);
    CUresult r;
    CALL_REAL(r, cuCtxCreate_v2, pctx, flags, dev);
    return created(r, pctx, &before, idx);
}

GS_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate_v3);
    int idx = ctx_tracking() ? tracked_index(dev) : -2;
    struct reading before;
    if (idx >= 0)
        read_all(&before, idx);
    CUresult r;
    CALL_REAL(r, cuCtxCreate_v3, pctx, paramsArray, numParams, flags, dev);
    return created(r, pctx, &before, idx);
}

GS_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                  unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate_v4);
    int idx = ctx_tracking() ? tracked_index(dev) : -2;
    struct reading before;
    if (idx >= 0)
        read_all(&before, idx);
    CUresult r;
    CALL_REAL(r, cuCtxCreate_v4, pctx, ctxCreateParams, flags, dev);
    return created(r, pctx, &before, idx);
}

GS_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    NEED(cuCtxDestroy_v2);
    if (!ctx_tracking())
        return gs_real_cu.cuCtxDestroy_v2(ctx);
    struct reading before;
    read_all(&before, -1);
    CUresult r;
    CALL_REAL(r, cuCtxDestroy_v2, ctx);
    settle(&before, -1);
    return r;
}
