/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A workload for the monitor's integration tests, through the CUDA driver API (libcuda.so.1 opened
 * at run time: gpusim under `gpuslice run --sim`, with libvgpu preloaded):
 *
 *   mon_workload MIB KERNEL_US GO_FILE
 *
 * allocates MIB MiB on device 0, then launches gpusim's sim_busy_<KERNEL_US> kernel back to back
 * (KERNEL_US 0: none) until GO_FILE exists, then frees and exits 0. Prints "holding" once the
 * memory is allocated. Exit 1 on any driver error (named on stderr).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda_abi.h"

#define SYM(h, fn) ((GS_CU_PFN(fn))dlsym((h), #fn))

static int check(const char *what, CUresult r)
{
    if (r != CUDA_SUCCESS)
        fprintf(stderr, "mon_workload: %s failed: %d\n", what, (int)r);
    return r == CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: mon_workload MIB KERNEL_US GO_FILE\n");
        return 2;
    }
    size_t mib = strtoull(argv[1], NULL, 10);
    unsigned us = (unsigned)strtoul(argv[2], NULL, 10);
    const char *go = argv[3];
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "mon_workload: %s\n", dlerror());
        return 1;
    }
    GS_CU_PFN(cuInit) init = SYM(h, cuInit);
    GS_CU_PFN(cuDevicePrimaryCtxRetain) retain = SYM(h, cuDevicePrimaryCtxRetain);
    GS_CU_PFN(cuCtxSetCurrent) set_current = SYM(h, cuCtxSetCurrent);
    GS_CU_PFN(cuMemAlloc_v2) alloc = SYM(h, cuMemAlloc_v2);
    GS_CU_PFN(cuMemFree_v2) mfree = SYM(h, cuMemFree_v2);
    GS_CU_PFN(cuModuleLoadData) load = SYM(h, cuModuleLoadData);
    GS_CU_PFN(cuModuleGetFunction) get_fn = SYM(h, cuModuleGetFunction);
    GS_CU_PFN(cuLaunchKernel) launch = SYM(h, cuLaunchKernel);
    GS_CU_PFN(cuCtxSynchronize) sync = SYM(h, cuCtxSynchronize);
    if (!init || !retain || !set_current || !alloc || !mfree || !load || !get_fn || !launch ||
        !sync) {
        fprintf(stderr, "mon_workload: libcuda.so.1 lacks a function it needs\n");
        return 1;
    }
    CUcontext ctx;
    CUdeviceptr p = 0;
    if (!check("cuInit", init(0)) || !check("cuDevicePrimaryCtxRetain", retain(&ctx, 0)) ||
        !check("cuCtxSetCurrent", set_current(ctx)))
        return 1;
    if (mib && !check("cuMemAlloc_v2", alloc(&p, mib << 20)))
        return 1;
    printf("holding %zu MiB\n", mib);
    fflush(stdout);
    CUfunction f = NULL;
    if (us) {
        CUmodule mod;
        char name[64];
        snprintf(name, sizeof(name), "sim_busy_%u", us);
        /* "gpusim": gpusim's own image that holds a function of any name. */
        if (!check("cuModuleLoadData", load(&mod, "gpusim")) ||
            !check("cuModuleGetFunction", get_fn(&f, mod, name)))
            return 1;
    }
    while (access(go, F_OK) != 0) {
        if (f) {
            if (!check("cuLaunchKernel", launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)) ||
                !check("cuCtxSynchronize", sync()))
                return 1;
        } else {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (p && !check("cuMemFree_v2", mfree(p)))
        return 1;
    return 0;
}
