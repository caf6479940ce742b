/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim costs, printed with a ratio against trivial baselines measured in the same run:
 *   cuLaunchKernel (0 µs kernel)            vs clock_gettime(CLOCK_MONOTONIC)
 *   cuMemAlloc_v2 + cuMemFree_v2 (4 KiB)    vs malloc + free (4 KiB)
 *   cuMemFree_v2 with 50,000 live allocations (alloc+free pair, minus nothing)
 *   cuMemGetInfo_v2                          vs clock_gettime
 *   cuStreamQuery                            vs clock_gettime
 *   cuLaunchKernel with a CUkernel           vs the same launch with its CUfunction
 *   cuLibraryLoadData + cuLibraryUnload (PTX, what cuBLAS does thousands of times with
 *   CUDA_MODULE_LOADING=EAGER)               vs malloc + free (4 KiB)
 * Each figure is the best of 5 runs of 200,000 calls (the least disturbed on a shared host).
 * Not a test of thresholds: it prints figures (TAP "ok" lines carry them).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda_abi.h"
#include "base/macros.h"
#include "tap.h"

#define SYMS(X)                                                                                    \
    X(cuInit)                                                                                      \
    X(cuCtxCreate_v2)                                                                              \
    X(cuCtxDestroy_v2)                                                                             \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleGetFunction)                                                                         \
    X(cuLaunchKernel)                                                                              \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemFree_v2)                                                                                \
    X(cuMemGetInfo_v2)                                                                             \
    X(cuStreamQuery)                                                                               \
    X(cuCtxSynchronize)                                                                            \
    X(cuLibraryLoadData)                                                                           \
    X(cuLibraryGetKernel)                                                                          \
    X(cuLibraryUnload)
#define DECL(n) static GS_CU_PFN(n) p_##n;
SYMS(DECL)

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile unsigned long long sink;
static CUfunction fn, kernel_fn;
static const char ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n\n"
                          ".visible .entry sim_busy_0()\n{\n\tret;\n}\n";
static CUdeviceptr live_ptr;

#define N    200000
#define REPS 5

static void op_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sink += (unsigned long long)ts.tv_nsec;
}

static void op_malloc(void)
{
    void *p = malloc(4096);
    sink += (uintptr_t)p;
    free(p);
}

static void op_launch(void)
{
    p_cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

static void op_launch_kernel(void)
{
    p_cuLaunchKernel(kernel_fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

static void op_library(void)
{
    CUlibrary l;
    if (p_cuLibraryLoadData(&l, ptx, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS)
        p_cuLibraryUnload(l);
}

static void op_alloc_free(void)
{
    p_cuMemAlloc_v2(&live_ptr, 4096);
    p_cuMemFree_v2(live_ptr);
}

static void op_info(void)
{
    size_t fr, tot;
    p_cuMemGetInfo_v2(&fr, &tot);
}

static void op_query(void)
{
    p_cuStreamQuery(NULL);
}

/* Best of REPS runs of N calls, ns per call: the least disturbed figure on a shared host. */
static double bench(void (*op)(void))
{
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double t = now_ns();
        for (int i = 0; i < N; i++)
            op();
        best = GS_MIN(best, (now_ns() - t) / N);
    }
    return best;
}

int main(void)
{
    tap_plan_auto();
    char dir[] = "/tmp/gpusim-bench-XXXXXX", state[64];
    if (!mkdtemp(dir))
        return 2;
    snprintf(state, sizeof(state), "%s/state", dir);
    setenv("GPUSIM_STATE", state, 1);
    setenv("GPUSIM_PRESET", "t4", 1);
    char lib[512];
    snprintf(lib, sizeof(lib), "%s/libcuda.so.1",
             getenv("GS_SIM_DIR") ? getenv("GS_SIM_DIR") : ".");
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) {
        printf("Bail out! %s\n", dlerror());
        return 1;
    }
#define LOAD(n) p_##n = (GS_CU_PFN(n))dlsym(h, #n);
    SYMS(LOAD)
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    p_cuModuleLoadData(&m, "gpusim");
    p_cuModuleGetFunction(&f, m, "sim_busy_0");

    fn = f;
    CUlibrary klib;
    CUkernel k;
    p_cuLibraryLoadData(&klib, ptx, NULL, NULL, 0, NULL, NULL, 0);
    p_cuLibraryGetKernel(&k, klib, "sim_busy_0");
    kernel_fn = (CUfunction)(void *)k;
    double base_clock = bench(op_clock);
    double base_malloc = bench(op_malloc);
    double launch = bench(op_launch);
    double launch_k = bench(op_launch_kernel);
    double library = bench(op_library);
    double pair = bench(op_alloc_free);
    enum { LIVE = 50000 };
    static CUdeviceptr live[LIVE];
    for (int i = 0; i < LIVE; i++)
        p_cuMemAlloc_v2(&live[i], 4096);
    double pair_live = bench(op_alloc_free);
    for (int i = 0; i < LIVE; i++)
        p_cuMemFree_v2(live[i]);
    double info = bench(op_info);
    double query = bench(op_query);

    /* A bench reports figures (diag); its one result is that every figure was measured. */
    ok(base_clock > 0 && base_malloc > 0 && launch > 0 && launch_k > 0 && library > 0 && pair > 0 &&
           pair_live > 0 && info > 0 && query > 0,
       "every operation measured");
    diag("baseline clock_gettime: %.1f ns", base_clock);
    diag("baseline malloc+free 4 KiB: %.1f ns", base_malloc);
    diag("cuLaunchKernel: %.1f ns (%.1fx clock_gettime)", launch, launch / base_clock);
    diag("cuLaunchKernel(CUkernel): %.1f ns (%.2fx with the CUfunction)", launch_k,
         launch_k / launch);
    diag("cuLibraryLoadData+cuLibraryUnload (PTX): %.1f ns (%.1fx malloc+free)", library,
         library / base_malloc);
    diag("cuMemAlloc_v2+cuMemFree_v2: %.1f ns (%.1fx malloc+free)", pair, pair / base_malloc);
    diag("alloc+free with 50000 live: %.1f ns (%.2fx the same pair with none live)", pair_live,
         pair_live / pair);
    diag("cuMemGetInfo_v2: %.1f ns (%.1fx clock_gettime)", info, info / base_clock);
    diag("cuStreamQuery: %.1f ns (%.1fx clock_gettime)", query, query / base_clock);

    p_cuLibraryUnload(klib);
    p_cuCtxDestroy_v2(ctx);
    dlclose(h);
    unlink(state);
    rmdir(dir);
    return tap_done();
}
