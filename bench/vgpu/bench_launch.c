/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-launch cost of libvgpu's launch paths on gpusim. Run by bench_launch.py without preload
 * and with LD_PRELOAD=libvgpu.so (an uncapped and a capped slice) in the same run. Links nothing:
 * the driver is dlopened and entry points resolved in the global scope. Kernels cost 0 µs and
 * each timed batch (20,000 launches) starts with a full bucket, so a capped slice never waits:
 * what is measured is the work of charging every launch (gate, estimate, sampled measurements,
 * region counters), not throttling. Prints "op=<name> ns=<per op>" lines.
 *
 *   launch_kernel   cuLaunchKernel of a CUfunction (cuModuleGetFunction)
 *   launch_ckernel  cuLaunchKernel of a CUkernel (cuLibraryLoadData + cuLibraryGetKernel, the
 *                   library loaded before any context, as the CUDA runtime does)
 *   library_load    cuLibraryLoadData + cuLibraryUnload of a small PTX image
 * The CUkernel/library ops print "op=<name> skipped=1" when the driver has no cuLibrary* API.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi/cuda_abi.h"

#define SYM(name) GS_CU_PFN(name) p_##name = (GS_CU_PFN(name))dlsym(RTLD_DEFAULT, #name)

typedef CUresult (*library_load_data_fn)(CUlibrary *lib, const void *code, CUjit_option *jo,
                                         void **jv, unsigned int nj, void *lo, void **lv,
                                         unsigned int nl);
typedef CUresult (*library_get_kernel_fn)(CUkernel *k, CUlibrary lib, const char *name);
typedef CUresult (*library_unload_fn)(CUlibrary lib);

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n\n"
                          ".visible .entry sim_busy_0()\n{\n\tret;\n}\n";

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static GS_CU_PFN(cuLaunchKernel) launch;
static GS_CU_PFN(cuCtxSynchronize) ctx_sync;

/* Batches of launches, each after a 120 ms pause: a capped slice's bucket is full again (100 ms
 * x cores), so no batch waits for budget and the figure is the cost of charging, not throttling.
 * Prints the median batch's time per launch. */
#define BATCHES 9
static void bench_launches(const char *op, CUfunction f, long n)
{
    for (long i = 0; i < 2000; i++) /* warm up: estimates, first measurements */
        launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    ctx_sync();
    double per[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        struct timespec pause = {.tv_nsec = 120 * 1000000L};
        nanosleep(&pause, NULL);
        double t0 = now_ns();
        for (long i = 0; i < n; i++)
            launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        per[b] = (now_ns() - t0) / (double)n;
        ctx_sync();
    }
    for (int i = 1; i < BATCHES; i++) /* insertion sort, then the median */
        for (int j = i; j > 0 && per[j] < per[j - 1]; j--) {
            double x = per[j];
            per[j] = per[j - 1];
            per[j - 1] = x;
        }
    printf("op=%s ns=%.1f\n", op, per[BATCHES / 2]);
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
    SYM(cuModuleLoadData);
    SYM(cuModuleGetFunction);
    launch = (GS_CU_PFN(cuLaunchKernel))dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    ctx_sync = (GS_CU_PFN(cuCtxSynchronize))dlsym(RTLD_DEFAULT, "cuCtxSynchronize");
    library_load_data_fn lload = (library_load_data_fn)dlsym(RTLD_DEFAULT, "cuLibraryLoadData");
    library_get_kernel_fn lget = (library_get_kernel_fn)dlsym(RTLD_DEFAULT, "cuLibraryGetKernel");
    library_unload_fn lunload = (library_unload_fn)dlsym(RTLD_DEFAULT, "cuLibraryUnload");
    CUresult (*set_cost)(CUfunction, unsigned long long) =
        (CUresult(*)(CUfunction, unsigned long long))dlsym(RTLD_DEFAULT, "gpusimSetKernelCost");
    if (!launch || !ctx_sync || p_cuInit(0)) {
        fprintf(stderr, "bench: no driver\n");
        return 2;
    }
    CUlibrary lib = NULL;
    CUkernel k = NULL;
    bool have_lib = lload && lget && lunload &&
                    lload(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
                    lget(&k, lib, "sim_busy_0") == CUDA_SUCCESS;
    CUdevice dev;
    CUcontext ctx;
    if (p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) || p_cuCtxSetCurrent(ctx)) {
        fprintf(stderr, "bench: no device\n");
        return 2;
    }
    CUmodule mod;
    CUfunction f;
    if (p_cuModuleLoadData(&mod, "gpusim") == CUDA_SUCCESS &&
        p_cuModuleGetFunction(&f, mod, "sim_busy_0") == CUDA_SUCCESS) {
        if (set_cost)
            set_cost(f, 0);
        bench_launches("launch_kernel", f, 20000 * scale);
    }
    if (have_lib) {
        bench_launches("launch_ckernel", (CUfunction)(void *)k, 20000 * scale);
        long n = 20000 * scale;
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            CUlibrary l2;
            if (lload(&l2, ptx, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS)
                lunload(l2);
        }
        printf("op=library_load ns=%.1f\n", (now_ns() - t0) / (double)n);
    } else {
        printf("op=launch_ckernel skipped=1\nop=library_load skipped=1\n");
    }
    return 0;
}
