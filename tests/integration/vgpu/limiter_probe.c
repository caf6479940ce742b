/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workloads for the compute limiter's accuracy tests (test_limiter_adversarial.py, suite slow) on
 * gpusim. Linked against nothing: dlopens libcuda.so.1 and resolves entry points with dlsym on
 * the handle (libvgpu's dlsym interposition), or with GS_PROBE_RESOLVE=getproc through
 * cuGetProcAddress_v2 (CUDA 12.8), as the CUDA runtime does. Kernel durations are set with
 * gpusimSetKernelCost before each launch, so one (function, grid, block) can vary its duration
 * the way a kernel with a data-dependent loop does. Prints key=value lines; busy_us is the GPU
 * time the program asked for (what gpusim executed), wall_ms the time it ran.
 *
 *   limiter_probe mixed <long_us> <short_us> random10|alternate <ms> [queue]
 *       one kernel; random10: 10 % of launches (at random) take short_us, else long_us;
 *       alternate: long, short, long, ...; <queue> launches between syncs (default 1)
 *   limiter_probe queue <us> <depth> <ms> [new-grid]
 *       <depth> launches between syncs; new-grid: each launch with a grid size never used before
 *   limiter_probe kernel launch|ptsz|ex <us> <ms>
 *       a CUkernel from cuLibraryLoadData/cuLibraryGetKernel (library loaded before any
 *       context, as the runtime does) launched as the CUfunction through cuLaunchKernel,
 *       cuLaunchKernel_ptsz or cuLaunchKernelEx; prints unsupported=1 when the driver has no
 *       cuLibrary* entry points
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi/cuda_abi.h"

typedef CUresult (*library_load_data_fn)(CUlibrary *lib, const void *code, CUjit_option *jo,
                                         void **jv, unsigned int nj, void *lo, void **lv,
                                         unsigned int nl);
typedef CUresult (*library_get_kernel_fn)(CUkernel *k, CUlibrary lib, const char *name);
typedef CUresult (*set_cost_fn)(CUfunction f, unsigned long long usec);

static void *h;
static GS_CU_PFN(cuGetProcAddress_v2) gpa;
static bool via_getproc;

static void die(const char *what, int code)
{
    fprintf(stderr, "limiter_probe: %s failed (%d)\n", what, code);
    exit(2);
}

static void *sym(const char *name, const char *base)
{
    if (via_getproc && base) {
        void *p = NULL;
        CUdriverProcAddressQueryResult st;
        if (gpa(base, &p, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS && p)
            return p;
    }
    return dlsym(h, name);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static GS_CU_PFN(cuLaunchKernel) launch;
static GS_CU_PFN(cuCtxSynchronize) ctx_sync;
static set_cost_fn set_cost;

static CUfunction setup_function(void)
{
    GS_CU_PFN(cuInit) init = (GS_CU_PFN(cuInit))sym("cuInit", "cuInit");
    GS_CU_PFN(cuDeviceGet) dget = (GS_CU_PFN(cuDeviceGet))sym("cuDeviceGet", "cuDeviceGet");
    GS_CU_PFN(cuDevicePrimaryCtxRetain)
    retain = (GS_CU_PFN(cuDevicePrimaryCtxRetain))sym("cuDevicePrimaryCtxRetain",
                                                      "cuDevicePrimaryCtxRetain");
    GS_CU_PFN(cuCtxSetCurrent)
    setcur = (GS_CU_PFN(cuCtxSetCurrent))sym("cuCtxSetCurrent", "cuCtxSetCurrent");
    GS_CU_PFN(cuModuleLoadData)
    load = (GS_CU_PFN(cuModuleLoadData))sym("cuModuleLoadData", "cuModuleLoadData");
    GS_CU_PFN(cuModuleGetFunction)
    getf = (GS_CU_PFN(cuModuleGetFunction))sym("cuModuleGetFunction", "cuModuleGetFunction");
    launch = (GS_CU_PFN(cuLaunchKernel))sym("cuLaunchKernel", "cuLaunchKernel");
    ctx_sync = (GS_CU_PFN(cuCtxSynchronize))sym("cuCtxSynchronize", "cuCtxSynchronize");
    set_cost = (set_cost_fn)dlsym(h, "gpusimSetKernelCost");
    if (!init || !dget || !retain || !setcur || !load || !getf || !launch || !ctx_sync || !set_cost)
        die("resolving entry points", 0);
    CUresult r;
    CUdevice d;
    CUcontext c;
    CUmodule m;
    CUfunction f;
    if ((r = init(0)) || (r = dget(&d, 0)) || (r = retain(&c, d)) || (r = setcur(c)))
        die("context", r);
    if ((r = load(&m, "gpusim")) || (r = getf(&f, m, "sim_probe_kernel")))
        die("module", r);
    return f;
}

static void report(long n, uint64_t busy_us, uint64_t start)
{
    printf("launches=%ld busy_us=%llu wall_ms=%llu\n", n, (unsigned long long)busy_us,
           (unsigned long long)((now_us() - start) / 1000));
}

static int cmd_mixed(unsigned long_us, unsigned short_us, const char *mode, long ms, int queue)
{
    CUfunction f = setup_function();
    bool alternate = strcmp(mode, "alternate") == 0;
    if (!alternate && strcmp(mode, "random10") != 0)
        die("mode (random10|alternate)", 0);
    unsigned seed = 12345;
    uint64_t start = now_us(), end = start + (uint64_t)ms * 1000, busy = 0;
    long n = 0;
    CUresult r;
    while (now_us() < end) {
        for (int i = 0; i < queue; i++, n++) {
            unsigned us = alternate ? (n % 2 ? short_us : long_us)
                                    : (rand_r(&seed) % 10 == 0 ? short_us : long_us);
            if ((r = set_cost(f, us)) || (r = launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)))
                die("launch", r);
            busy += us;
        }
        ctx_sync();
    }
    report(n, busy, start);
    return 0;
}

static int cmd_queue(unsigned us, int depth, long ms, bool new_grid)
{
    CUfunction f = setup_function();
    CUresult r;
    if ((r = set_cost(f, us)))
        die("gpusimSetKernelCost", r);
    uint64_t start = now_us(), end = start + (uint64_t)ms * 1000, busy = 0;
    long n = 0;
    while (now_us() < end) {
        for (int i = 0; i < depth; i++, n++) {
            /* new_grid: every launch another grid size (a key never seen before) */
            unsigned gx = new_grid ? 1 + (unsigned)(n % 2000000000) : 1;
            if ((r = launch(f, gx, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)))
                die("launch", r);
            busy += us;
        }
        ctx_sync();
    }
    report(n, busy, start);
    return 0;
}

static int cmd_kernel(const char *path, unsigned us, long ms)
{
    library_load_data_fn lload =
        (library_load_data_fn)sym("cuLibraryLoadData", "cuLibraryLoadData");
    library_get_kernel_fn lget =
        (library_get_kernel_fn)sym("cuLibraryGetKernel", "cuLibraryGetKernel");
    if (!lload || !lget) {
        printf("unsupported=1\n");
        return 0;
    }
    GS_CU_PFN(cuInit) init = (GS_CU_PFN(cuInit))sym("cuInit", "cuInit");
    if (!init || init(0) != CUDA_SUCCESS)
        die("cuInit", 0);
    /* the runtime loads its fatbinary before any context exists */
    char ptx[512];
    snprintf(ptx, sizeof(ptx),
             ".version 8.0\n.target sm_90\n.address_size 64\n\n"
             ".visible .entry sim_busy_%u()\n{\n\tret;\n}\n",
             us);
    CUlibrary lib;
    CUkernel k;
    CUresult r = lload(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0);
    if (r == CUDA_ERROR_NOT_SUPPORTED) {
        printf("unsupported=1\n");
        return 0;
    }
    if (r)
        die("cuLibraryLoadData", r);
    char name[64];
    snprintf(name, sizeof(name), "sim_busy_%u", us);
    if ((r = lget(&k, lib, name)))
        die("cuLibraryGetKernel", r);
    (void)setup_function();
    CUfunction f = (CUfunction)(void *)k; /* the runtime passes the CUkernel as the CUfunction */
    GS_CU_PFN(cuLaunchKernel)
    lk = strcmp(path, "ptsz") == 0 ? (GS_CU_PFN(cuLaunchKernel))dlsym(h, "cuLaunchKernel_ptsz")
                                   : launch;
    GS_CU_PFN(cuLaunchKernelEx)
    lex = (GS_CU_PFN(cuLaunchKernelEx))sym("cuLaunchKernelEx", "cuLaunchKernelEx");
    if (!lk || !lex)
        die("resolving launch entry points", 0);
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 1,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    uint64_t start = now_us(), end = start + (uint64_t)ms * 1000, busy = 0;
    long n = 0;
    while (now_us() < end) {
        r = strcmp(path, "ex") == 0 ? lex(&cfg, f, NULL, NULL)
                                    : lk(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (r)
            die("launch", r);
        busy += us;
        n++;
        ctx_sync();
    }
    report(n, busy, start);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        die(dlerror(), 0);
    const char *mode = getenv("GS_PROBE_RESOLVE");
    via_getproc = mode && strcmp(mode, "getproc") == 0;
    if (via_getproc && !(gpa = (GS_CU_PFN(cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2")))
        die("dlsym cuGetProcAddress_v2", 0);
    if (argc >= 6 && strcmp(argv[1], "mixed") == 0)
        return cmd_mixed((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), argv[4], atol(argv[5]),
                         argc > 6 ? atoi(argv[6]) : 1);
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "queue") == 0)
        return cmd_queue((unsigned)atoi(argv[2]), atoi(argv[3]), atol(argv[4]),
                         argc == 6 && strcmp(argv[5], "new-grid") == 0);
    if (argc == 5 && strcmp(argv[1], "kernel") == 0)
        return cmd_kernel(argv[2], (unsigned)atoi(argv[3]), atol(argv[4]));
    fprintf(stderr, "usage: limiter_probe mixed|queue|kernel ...\n");
    return 2;
}
