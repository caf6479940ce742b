/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-operation cost of the hooked driver calls, on gpusim. Run twice by bench_vgpu.py (without
 * and with LD_PRELOAD=libvgpu.so) so the delta is measured in the same run. Links nothing: the
 * driver is dlopened and symbols resolved in the global scope (what a linked program gets).
 * Prints "op=<name> ns=<per op> cpu_ns=<per op>" lines: ns is wall-clock time, cpu_ns the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which leaves out the time the program waited
 * for a CPU on a loaded machine.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi/cuda_abi.h"

#define SYM(name) GS_CU_PFN(name) p_##name = (GS_CU_PFN(name))dlsym(RTLD_DEFAULT, #name)

static double clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static double cpu0; /* thread CPU time at the last now_ns() of a timed section's start */

/* Start of a timed section: wall clock returned, CPU clock kept. */
static double start_ns(void)
{
    cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return now_ns();
}

static void report(const char *op, double t0, long n, const char *extra)
{
    double wall = (now_ns() - t0) / (double)n;
    double cpu = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / (double)n;
    printf("op=%s ns=%.1f cpu_ns=%.1f%s\n", op, wall, cpu, extra);
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "bench: %s\n", dlerror());
        return 2;
    }
    SYM(cuInit);
    SYM(cuDeviceGet);
    SYM(cuDevicePrimaryCtxRetain);
    SYM(cuCtxSetCurrent);
    SYM(cuCtxGetCurrent);
    SYM(cuMemAlloc_v2);
    SYM(cuMemFree_v2);
    SYM(cuMemGetInfo_v2);
    SYM(cuModuleLoadData);
    SYM(cuModuleGetFunction);
    SYM(cuLaunchKernel);
    SYM(cuCtxSynchronize);
    CUresult (*set_cost)(CUfunction, unsigned long long) =
        (CUresult(*)(CUfunction, unsigned long long))dlsym(RTLD_DEFAULT, "gpusimSetKernelCost");
    CUdevice dev;
    CUcontext ctx;
    if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) ||
        p_cuCtxSetCurrent(ctx)) {
        fprintf(stderr, "bench: no device\n");
        return 2;
    }
    CUdeviceptr p;
    /* warm up (first calls resolve and initialise) */
    for (int i = 0; i < 1000; i++) {
        p_cuMemAlloc_v2(&p, 4096);
        p_cuMemFree_v2(p);
    }

    long n = 200000 * scale;
    double t0 = start_ns();
    for (long i = 0; i < n; i++) {
        p_cuMemAlloc_v2(&p, 4096);
        p_cuMemFree_v2(p);
    }
    report("alloc_free_pair", t0, n, "");

    const long live = 50000;
    CUdeviceptr *ptrs = calloc((size_t)live, sizeof(*ptrs));
    long got = 0;
    for (long i = 0; i < live; i++)
        if (p_cuMemAlloc_v2(&ptrs[got], 4096) == CUDA_SUCCESS)
            got++;
    t0 = start_ns();
    for (long i = got - 1; i >= 0; i -= 2) /* free every other one, from the end */
        p_cuMemFree_v2(ptrs[i]);
    long freed = (got + 1) / 2;
    char extra[32];
    snprintf(extra, sizeof(extra), " live=%ld", got);
    report("free_with_50000_live", t0, freed, extra);
    for (long i = got - 2; i >= 0; i -= 2)
        p_cuMemFree_v2(ptrs[i]);
    free(ptrs);

    size_t fr, tot;
    n = 1000000 * scale;
    t0 = start_ns();
    for (long i = 0; i < n; i++)
        p_cuMemGetInfo_v2(&fr, &tot);
    report("mem_get_info", t0, n, "");

    /* the CUDA runtime asks for (and sets) the current context around most of its calls:
     * hooked for the first sight of a context retained out of libvgpu's sight */
    CUcontext cur;
    t0 = start_ns();
    for (long i = 0; i < n; i++)
        p_cuCtxGetCurrent(&cur);
    report("ctx_get_current", t0, n, "");
    t0 = start_ns();
    for (long i = 0; i < n; i++)
        p_cuCtxSetCurrent(ctx);
    report("ctx_set_current", t0, n, "");

    CUmodule mod;
    CUfunction f;
    if (p_cuModuleLoadData(&mod, "gpusim") == CUDA_SUCCESS &&
        p_cuModuleGetFunction(&f, mod, "sim_busy_0") == CUDA_SUCCESS) {
        if (set_cost)
            set_cost(f, 0);
        n = 200000 * scale;
        t0 = start_ns();
        for (long i = 0; i < n; i++)
            p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        report("launch_kernel", t0, n, "");
        p_cuCtxSynchronize();
    }
    return 0;
}
