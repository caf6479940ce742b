/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: modules, functions, kernel launches and graphs. A launch costs the function's
 * device time on its device's shared timeline (FIFO across every process, like a GPU without
 * MPS time-slicing contexts); the launch itself returns at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

#define BUSY_PREFIX "sim_busy_"

static uint64_t default_cost_ns(void)
{
    static uint64_t cached;
    uint64_t c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c)
        return c - 1;
    const char *env = getenv("GPUSIM_DEFAULT_KERNEL_US");
    unsigned long long us = GPUSIM_DEFAULT_KERNEL_US;
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v <= 3600ull * 1000000ull)
            us = v;
    }
    c = us * 1000ull;
    __atomic_store_n(&cached, c + 1, __ATOMIC_RELAXED);
    return c;
}

/* The identifier a kernel's cost is read from: the name itself, or for an Itanium-mangled
 * C++ name (_Z[N]<len><ident>...) its first identifier, e.g. _Z13sim_busy_2000Pfi. */
static size_t cost_ident(const char *name, const char **id)
{
    *id = name;
    if (strncmp(name, "_Z", 2) != 0)
        return strlen(name);
    const char *p = name + 2;
    if (*p == 'N')
        p++;
    size_t len = 0;
    while (*p >= '0' && *p <= '9' && len < 4096)
        len = len * 10 + (size_t)(*p++ - '0');
    if (len == 0 || strnlen(p, len) < len)
        return strlen(name);
    *id = p;
    return len;
}

/* Cost from the name: sim_busy_<microseconds>, else the default. */
uint64_t cu_cost_of_name(const char *name)
{
    const char *id;
    size_t n = cost_ident(name, &id), pre = strlen(BUSY_PREFIX);
    if (n > pre && n - pre <= 10 && strncmp(id, BUSY_PREFIX, pre) == 0) {
        uint64_t us = 0;
        size_t i = pre;
        for (; i < n && id[i] >= '0' && id[i] <= '9'; i++)
            us = us * 10 + (uint64_t)(id[i] - '0');
        if (i == n)
            return us * 1000ull;
    }
    return default_cost_ns();
}

struct sim_func *cu_func_resolve(CUfunction f)
{
    const struct cu_obj *o = (const struct cu_obj *)f;
    if (GS_LIKELY(cu_valid(o, CU_OBJ_FUNC)))
        return (struct sim_func *)f;
    if (cu_valid(o, CU_OBJ_KERNEL)) {
        struct sim_func *fn = ((const struct sim_kernel *)o)->fn;
        return cu_valid(fn, CU_OBJ_FUNC) ? fn : NULL;
    }
    return NULL;
}

CU_API CUresult gpusimSetKernelCost(CUfunction f, unsigned long long usec)
{
    struct sim_func *fn = cu_func_resolve(f);
    if (!fn || usec > 3600ull * 1000000ull)
        return CUDA_ERROR_INVALID_VALUE;
    __atomic_store_n(&fn->cost_ns, (uint64_t)usec * 1000ull, __ATOMIC_RELAXED);
    __atomic_store_n(&fn->cost_pinned, true, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CU_API CUresult gpusimGetKernelCost(CUfunction f, unsigned long long *usec)
{
    struct sim_func *fn = cu_func_resolve(f);
    if (!fn || !usec)
        return CUDA_ERROR_INVALID_VALUE;
    *usec = __atomic_load_n(&fn->cost_ns, __ATOMIC_RELAXED) / 1000ull;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ launches */
/*
 * A launch runs in waves: the device holds sm_count x (blocks per SM) blocks at once (the
 * occupancy model: threads, registers, shared memory), so a grid of B blocks takes
 * ceil(B / that) waves, each costing the kernel's cost (sim_busy_<us>: microseconds per wave).
 * A grid that fits in one wave costs the kernel's cost, as before. A cost set with
 * gpusimSetKernelCost is the launch's whole duration whatever the grid (tests pin durations
 * with it).
 */
uint64_t cu_launch_cost(const struct sim_func *fn, int dev, uint64_t blocks, unsigned int block,
                        size_t smem)
{
    uint64_t cost = __atomic_load_n(&fn->cost_ns, __ATOMIC_RELAXED);
    if (__atomic_load_n(&fn->cost_pinned, __ATOMIC_RELAXED))
        return cost;
    const struct sim_device_cfg *d = &cu_g.cfg.dev[dev];
    int per_sm = cu_blocks_per_sm(d, (int)block, smem);
    uint64_t slots = (uint64_t)GS_MAX(per_sm, 1) * (uint64_t)GS_MAX(d->sm_count, 1);
    uint64_t waves = blocks / slots + (blocks % slots != 0);
    return gs_sat_mul_u64(cost, GS_MAX(waves, 1));
}

static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                       CUstream hStream)
{
    struct sim_func *fn = cu_func_resolve(f);
    if (GS_UNLIKELY(!fn))
        return CUDA_ERROR_INVALID_HANDLE;
    if (GS_UNLIKELY(gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 ||
                    gz > 65535))
        return CUDA_ERROR_INVALID_VALUE;
    if (GS_UNLIKELY((uint64_t)bx * by * bz > 1024 || bz > 64))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (GS_UNLIKELY(!s))
        return r;
    const struct sim_device_cfg *d = &cu_g.cfg.dev[s->ctx->dev];
    if (GS_UNLIKELY(smem > (unsigned int)d->smem_per_block_optin))
        return CUDA_ERROR_INVALID_VALUE;
    cu_enqueue(s, cu_launch_cost(fn, s->ctx->dev, (uint64_t)gx * gy * gz, bx * by * bz, smem));
    return CUDA_SUCCESS;
}

CU_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                               void **extra)
{
    CU_CHECK_INIT();
    if (GS_UNLIKELY(kernelParams && extra))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream);
}

CU_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                          sharedMemBytes, hStream, kernelParams, extra);
}

CU_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                 void **extra)
{
    CU_CHECK_INIT();
    if (!config || (kernelParams && extra) || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream);
}

CU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    return cuLaunchKernelEx(config, f, kernelParams, extra);
}

CU_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void **kernelParams)
{
    CU_CHECK_INIT();
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream);
}

CU_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams)
{
    return cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                     blockDimZ, sharedMemBytes, hStream, kernelParams);
}
