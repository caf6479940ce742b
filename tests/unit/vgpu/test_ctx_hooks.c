/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The context hooks (hooks-ctx.c) and the allocation table they drain, against a fake driver
 * and fake devices (no gpusim, no region file): the books a region would hold are `charged[d]`,
 * with its limit; the driver's per-process usage (what NVML would list) is `usage[d]`.
 * Deterministic and fast: the "concurrent free" of the overhead race is injected inside the
 * fake driver's context creation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "vgpu/limiter.h"
#include "vgpu/vgpu-internal.h"

#define MiB  (1ULL << 20)
#define NDEV 3

/* ---- what devices.c, config.c, dispatch.c and charge.c provide to the code under test ---- */
struct gs_real_cuda gs_real_cu;
struct gs_real_nvml gs_real_nvml;
_Thread_local int vgpu_depth;
atomic_bool vgpu_any_tracked = true;
atomic_bool vgpu_any_pool;
static struct vgpu_device devs[NDEV];
static uint64_t charged[NDEV], limit[NDEV];
static uint64_t cfg_overhead;

bool vgpu_cuda_ready(void)
{
    return true;
}

bool vgpu_nvml_ready(void)
{
    return true;
}

void vgpu_devices_init(void) {}

uint64_t vgpu_config_context_overhead(void)
{
    return cfg_overhead;
}

struct vgpu_device *vgpu_device_of(CUdevice dev)
{
    return dev >= 0 && dev < NDEV ? &devs[dev] : NULL;
}

struct vgpu_device *vgpu_device_at(int index)
{
    return index >= 0 && index < NDEV ? &devs[index] : NULL;
}

int vgpu_device_index(const struct vgpu_device *d)
{
    return (int)(d - devs);
}

int vgpu_charge(struct vgpu_device *d, uint64_t size)
{
    int i = vgpu_device_index(d);
    if (limit[i] && (size > limit[i] || charged[i] > limit[i] - size))
        return -ENOMEM;
    charged[i] += size;
    return 0;
}

void vgpu_uncharge(struct vgpu_device *d, uint64_t size)
{
    if (!d)
        return;
    int i = vgpu_device_index(d);
    charged[i] = size > charged[i] ? 0 : charged[i] - size;
}

int vgpu_region_reserve(struct vgpu_region *r, int slot, uint64_t size, uint64_t lim)
{
    (void)r;
    (void)lim; /* the hooks use it with 0 (no cap): record past the limit */
    charged[slot] += size;
    return 0;
}

void vgpu_alloc_uncharge(const struct vgpu_alloc *a)
{
    vgpu_uncharge(vgpu_device_at(a->dev), a->size);
}

void vgpu_pools_sync(void) {}

/* the limiter forgets a gone context's events */
static int limiter_told;
void vgpu_limiter_ctx_going(void *ctx)
{
    (void)ctx;
}
void vgpu_limiter_ctx_gone(void *ctx)
{
    (void)ctx;
    limiter_told++;
}

/* ---- a fake driver: primary contexts with reference counts, created contexts, overhead ---- */
struct fake_ctx {
    int dev;
    bool alive;
    bool primary;
    int refs;
};
static struct fake_ctx primaries[NDEV];
static struct fake_ctx created[64];
static int n_created;
static uint64_t usage[NDEV]; /* this process's usage as the driver would list it */
static uint64_t overhead = 64 * MiB;
static uint64_t free_during_create; /* bytes "another thread" frees inside the next creation */
static _Thread_local struct fake_ctx *current;

static CUresult f_retain(CUcontext *p, CUdevice dev)
{
    struct fake_ctx *c = &primaries[dev];
    if (c->refs++ == 0) {
        c->alive = true;
        usage[dev] += overhead;
    }
    *p = (CUcontext)c;
    return CUDA_SUCCESS;
}

static void ctx_gone(struct fake_ctx *c, uint64_t freed)
{
    c->alive = false;
    usage[c->dev] -= GS_MIN(usage[c->dev], freed);
}

static CUresult f_release(CUdevice dev)
{
    struct fake_ctx *c = &primaries[dev];
    if (c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--c->refs == 0)
        ctx_gone(c, overhead);
    return CUDA_SUCCESS;
}

static CUresult f_reset(CUdevice dev)
{
    struct fake_ctx *c = &primaries[dev];
    if (c->refs)
        ctx_gone(c, overhead);
    c->refs = 0;
    return CUDA_SUCCESS;
}

static CUresult f_state(CUdevice dev, unsigned *flags, int *active)
{
    *flags = 0;
    *active = primaries[dev].refs > 0;
    return CUDA_SUCCESS;
}

static CUresult f_create(CUcontext *p, unsigned flags, CUdevice dev)
{
    (void)flags;
    if (n_created == (int)GS_ARRAY_SIZE(created))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_ctx *c = &created[n_created++];
    *c = (struct fake_ctx){.dev = dev, .alive = true};
    usage[dev] += overhead;
    /* another thread of the process frees memory while this context is being created */
    usage[dev] -= GS_MIN(usage[dev], free_during_create);
    free_during_create = 0;
    current = c;
    *p = (CUcontext)c;
    return CUDA_SUCCESS;
}

static CUresult f_destroy(CUcontext ctx)
{
    struct fake_ctx *c = (struct fake_ctx *)ctx;
    if (!c || !c->alive || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_gone(c, overhead);
    if (current == c)
        current = NULL;
    return CUDA_SUCCESS;
}

static CUresult f_set_current(CUcontext ctx)
{
    current = (struct fake_ctx *)ctx;
    return CUDA_SUCCESS;
}

static CUresult f_get_current(CUcontext *p)
{
    *p = (CUcontext)current;
    return CUDA_SUCCESS;
}

static CUresult f_get_device(CUdevice *dev)
{
    if (!current || !current->alive)
        return current ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_CONTEXT;
    *dev = current->dev;
    return CUDA_SUCCESS;
}

/* fake NVML: the process list of device (handle = device index + 1) */
static nvmlReturn_t n_init(void)
{
    return NVML_SUCCESS;
}

static nvmlReturn_t n_by_uuid(const char *uuid, nvmlDevice_t *h)
{
    for (int i = 0; i < NDEV; i++)
        if (strcmp(uuid, devs[i].uuid) == 0) {
            *h = (nvmlDevice_t)(uintptr_t)(i + 1);
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

/* Device 2 lists processes as the driver does for a process in another pid namespace: under
 * a pid this process does not know, beside another container's process. */
#define HOST_PID  4000001u
#define OTHER_PID 4000002u
static uint64_t other_usage = 900 * MiB;

static nvmlReturn_t n_procs(nvmlDevice_t h, unsigned *n, nvmlProcessInfo_t *infos)
{
    int d = (int)(uintptr_t)h - 1;
    if (*n < 2)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    if (d < 2) {
        *n = 1;
        infos[0] = (nvmlProcessInfo_t){.pid = (unsigned)getpid(), .usedGpuMemory = usage[d]};
        return NVML_SUCCESS;
    }
    *n = 0;
    infos[(*n)++] = (nvmlProcessInfo_t){.pid = OTHER_PID, .usedGpuMemory = other_usage};
    if (usage[d])
        infos[(*n)++] = (nvmlProcessInfo_t){.pid = HOST_PID, .usedGpuMemory = usage[d]};
    return NVML_SUCCESS;
}

/* ---- helpers ---- */
static void record(uint64_t key, const void *ctx, int dev, uint64_t size, uint32_t kind)
{
    struct vgpu_alloc a = {
        .key = key, .size = size, .ctx = (void *)ctx, .dev = dev, .kind = kind, .refs = 1};
    charged[dev] += size;
    vgpu_table_insert(&a, NULL);
}

static void setup(void)
{
    for (int i = 0; i < NDEV; i++) {
        devs[i].present = true;
        devs[i].cu_dev = i;
        devs[i].region = (struct vgpu_region *)(uintptr_t)0x1;
        devs[i].slot = i;
        snprintf(devs[i].uuid, sizeof(devs[i].uuid), "GPU-fake-%d", i);
    }
    gs_real_cu.cuDevicePrimaryCtxRetain = f_retain;
    gs_real_cu.cuDevicePrimaryCtxRelease_v2 = f_release;
    gs_real_cu.cuDevicePrimaryCtxReset_v2 = f_reset;
    gs_real_cu.cuDevicePrimaryCtxReset = f_reset;
    gs_real_cu.cuDevicePrimaryCtxRelease = f_release;
    gs_real_cu.cuDevicePrimaryCtxGetState = f_state;
    gs_real_cu.cuCtxCreate_v2 = f_create;
    gs_real_cu.cuCtxDestroy_v2 = f_destroy;
    gs_real_cu.cuCtxSetCurrent = f_set_current;
    gs_real_cu.cuCtxGetCurrent = f_get_current;
    gs_real_cu.cuCtxGetDevice = f_get_device;
    gs_real_nvml.nvmlInit_v2 = n_init;
    gs_real_nvml.nvmlDeviceGetHandleByUUID = n_by_uuid;
    gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3 = n_procs;
    for (int i = 0; i < NDEV; i++)
        primaries[i] = (struct fake_ctx){.dev = i, .primary = true};
}

int main(void)
{
    tap_plan_auto();
    setup();
    CUcontext p0, c;

    /* 1. The runtime's pattern: the primary context retained out of sight, then made current. */
    f_retain(&p0, 0);
    ok(cuCtxSetCurrent(p0) == CUDA_SUCCESS, "cuCtxSetCurrent(primary) forwarded");
    ok(charged[0] == 64 * MiB,
       "a primary context retained out of sight is charged at its first sight (probed: its "
       "whole usage, 64 MiB): %llu MiB",
       (unsigned long long)(charged[0] / MiB));
    ok(vgpu_ctx_count() == 1, "its state exists");
    cuCtxSetCurrent(p0);
    ok(charged[0] == 64 * MiB, "seen again: charged once");

    /* 2. Its allocations and overhead go back with a reset. */
    record(0xa000, p0, 0, 60 * MiB, VGPU_KIND_DPTR);
    record(0xa100, p0, 0, 4 * MiB, VGPU_KIND_ARRAY);
    record(0xa200, p0, 0, 8 * MiB, VGPU_KIND_VMM);            /* VMM handles outlive contexts */
    record(0xa300, (void *)0x77, 0, 2 * MiB, VGPU_KIND_DPTR); /* another context's */
    ok(charged[0] == 138 * MiB, "books: 64 overhead + 60 + 4 + 8 + 2 MiB");
    ok(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS, "cuDevicePrimaryCtxReset_v2 forwarded");
    ok(charged[0] == 10 * MiB,
       "reset gives back the overhead and the context's pointer and array (left: VMM 8 MiB + "
       "the other context's 2 MiB): %llu MiB",
       (unsigned long long)(charged[0] / MiB));
    ok(vgpu_table_count() == 2 && vgpu_table_lookup(0xa200, VGPU_KIND_VMM, NULL) &&
           vgpu_table_lookup(0xa300, VGPU_KIND_DPTR, NULL),
       "only the VMM handle and the other context's record remain");
    ok(vgpu_ctx_count() == 0, "the primary context's state is gone");

    /* 3. The same handle after the reset (the runtime retains it again out of sight). */
    f_retain(&p0, 0);
    cuCtxGetCurrent(&c); /* the thread's cached context is stale: seen anew */
    ok(c == p0 && charged[0] == 74 * MiB,
       "the primary handle reused after a reset is charged again (fixed 64 MiB): %llu MiB",
       (unsigned long long)(charged[0] / MiB));

    /* 4. The last release, not an earlier one, gives it back. */
    ok(cuDevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS && c == p0, "visible retain of the active "
                                                                   "primary");
    ok(charged[0] == 74 * MiB, "no second charge for the same context");
    record(0xb000, p0, 0, 16 * MiB, VGPU_KIND_DPTR);
    ok(cuDevicePrimaryCtxRelease_v2(0) == CUDA_SUCCESS && charged[0] == 90 * MiB,
       "a release that is not the last keeps everything charged");
    CUresult r = cuDevicePrimaryCtxRelease_v2(0);
    ok(r == CUDA_SUCCESS && charged[0] == 10 * MiB,
       "the last release gives back overhead and allocations: %llu MiB",
       (unsigned long long)(charged[0] / MiB));
    ok(primaries[0].refs == 0, "the probe of the primary handle left its count as it was");

    /* 5. The overhead race: another thread frees 64 MiB while each context is created. A signed
     * difference of usage across the call would charge these contexts nothing. */
    uint64_t before = charged[0];
    for (int i = 0; i < 4; i++) {
        usage[0] += 64 * MiB; /* the other thread's allocation, made before */
        free_during_create = 64 * MiB;
        ok(cuCtxCreate_v2(&c, 0, 0) == CUDA_SUCCESS, "context %d created", i);
    }
    ok(charged[0] - before == 4 * 64 * MiB,
       "every context is charged the fixed 64 MiB whatever is freed meanwhile: %llu MiB",
       (unsigned long long)((charged[0] - before) / MiB));
    int told = limiter_told;
    ok(cuCtxDestroy_v2(c) == CUDA_SUCCESS && charged[0] - before == 3 * 64 * MiB,
       "destroying one gives back exactly its 64 MiB");
    ok(limiter_told == told + 1, "and the limiter is told the context is gone");
    ok(cuCtxDestroy_v2(c) == CUDA_ERROR_INVALID_CONTEXT && charged[0] - before == 3 * 64 * MiB,
       "a second destroy is the driver's error and gives nothing back");

    /* 6. Probed once: a driver that now reports less does not lower the amount. */
    overhead = 16 * MiB;
    before = charged[0];
    cuCtxCreate_v2(&c, 0, 0);
    ok(charged[0] - before == 64 * MiB, "the amount was probed once (64 MiB), not per call");
    record(0xc000, c, 0, 5 * MiB, VGPU_KIND_DPTR);
    cuCtxDestroy_v2(c);
    ok(charged[0] == before, "destroy gives back the context's allocation and its overhead");

    /* 7. A context that does not fit is refused and destroyed. */
    limit[0] = charged[0] + 32 * MiB;
    int live = n_created;
    ok(cuCtxCreate_v2(&c, 0, 0) == CUDA_ERROR_OUT_OF_MEMORY,
       "a context whose overhead does not fit: CUDA_ERROR_OUT_OF_MEMORY");
    ok(n_created == live, "charged before creation: the driver never created it");
    limit[0] = 0;

    /* 8. GPUSLICE_CONTEXT_OVERHEAD raises the probe (device 1, probed at its first context). */
    cfg_overhead = 100 * MiB;
    overhead = 64 * MiB;
    r = cuCtxCreate_v2(&c, 0, 1);
    ok(r == CUDA_SUCCESS && charged[1] == 100 * MiB,
       "configured 100 MiB > probed 64 MiB: 100 MiB per context (%llu MiB)",
       (unsigned long long)(charged[1] / MiB));
    cuCtxDestroy_v2(c);
    ok(charged[1] == 0, "and given back whole");

    /* 9. Past the limit out of sight: recorded anyway (the driver holds it already). */
    limit[1] = 50 * MiB;
    CUcontext p1;
    f_retain(&p1, 1);
    ok(cuCtxSetCurrent(p1) == CUDA_SUCCESS && charged[1] == 100 * MiB,
       "a context created out of sight that does not fit is still recorded (the next "
       "allocation is refused)");
    ok(cuDevicePrimaryCtxReset_v2(1) == CUDA_SUCCESS && charged[1] == 0, "and given back at reset");

    /* 10. The CUDA 7 entry points (cuDevicePrimaryCtxReset/Release, no _v2) end it the same. */
    limit[1] = 0;
    f_retain(&p1, 1);
    cuCtxSetCurrent(p1);
    record(0xd000, p1, 1, 7 * MiB, VGPU_KIND_DPTR);
    ok(cuDevicePrimaryCtxReset(1) == CUDA_SUCCESS && charged[1] == 0,
       "cuDevicePrimaryCtxReset (v1) gives back overhead and allocations");
    f_retain(&p1, 1);
    cuCtxSetCurrent(p1);
    record(0xd100, p1, 1, 7 * MiB, VGPU_KIND_DPTR);
    ok(cuDevicePrimaryCtxRelease(1) == CUDA_SUCCESS && charged[1] == 0,
       "the last cuDevicePrimaryCtxRelease (v1) too");

    /* 11. Another pid namespace: the driver lists this process under a pid it does not know. The
     * entry that appeared since the baseline (taken before any context) is this process. */
    vgpu_ctx_baseline(&devs[2]);
    other_usage = 700 * MiB; /* the other container's process changes meanwhile */
    overhead = 48 * MiB;
    cfg_overhead = 0;
    CUcontext p2;
    f_retain(&p2, 2);
    r = cuCtxSetCurrent(p2);
    ok(r == CUDA_SUCCESS && charged[2] == 48 * MiB,
       "pid namespace, primary retained out of sight: its 48 MiB recognised as the new entry "
       "(%llu MiB)",
       (unsigned long long)(charged[2] / MiB));
    cuDevicePrimaryCtxReset_v2(2);
    ok(charged[2] == 0, "and given back at reset");

    return tap_done();
}
