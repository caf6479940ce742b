/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_runtime_pattern: a driver-API program that calls the driver the way the CUDA 13 runtime
 * (libcudart) does, so gpusim and libvgpu can be tested under that pattern without the runtime:
 *
 *   - only cuGetProcAddress_v2, cuGetProcAddress and cuGetExportTable are looked up with dlsym;
 *     the first request is an empty name at version 0 (a NULL answer is tolerated), every other
 *     entry point comes from cuGetProcAddress_v2 by base name at the runtime's version;
 *   - the device code is loaded with cuLibraryLoadData before any context exists, kernels are
 *     taken with cuLibraryGetKernel and the CUkernel is passed as the CUfunction to
 *     cuLaunchKernel (cuLaunchKernel_ptsz with --ptsz, like nvcc --default-stream per-thread);
 *   - the primary context is retained out of an interposer's sight (the runtime uses a private
 *     driver interface; gpusim offers "gpusimInternalPrimaryCtxRetain" through cuGetProcAddress
 *     only) and made current with cuCtxSetCurrent; no cuDevicePrimaryCtxRetain is called;
 *   - cudaMalloc/cudaFree/cudaMemGetInfo/cudaMemcpy = cuMemAlloc_v2/cuMemFree_v2/cuMemGetInfo_v2/
 *     cuMemcpyHtoD_v2, DtoH_v2; cudaDeviceReset = cuDevicePrimaryCtxReset_v2; exit =
 *     cuLibraryUnload + cuDevicePrimaryCtxRelease_v2.
 *
 * usage: sim_runtime_pattern [--version N] [--alloc-mib N] [--chunk-mib N] [--launches N]
 *                            [--kernel-us N] [--image FILE --kernel NAME] [--ptsz] [--reset]
 *                            [--realloc-mib N] [--hold-ms N]
 * Prints key=value lines (see the end of main); exit 0, or 2 when a set-up step fails.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda_abi.h"

#define MiB (1024ull * 1024ull)

static GS_CU_PFN(cuGetProcAddress_v2) gpa;
static int api_version = 12080;
static unsigned long long gpa_flags;
static int requests;

#define RT_FUNCS(X)                                                                                \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDeviceTotalMem_v2)                                                                         \
    X(cuDevicePrimaryCtxGetState)                                                                  \
    X(cuDevicePrimaryCtxReset_v2)                                                                  \
    X(cuDevicePrimaryCtxRelease_v2)                                                                \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxSynchronize)                                                                            \
    X(cuCtxGetLimit)                                                                               \
    X(cuLibraryLoadData)                                                                           \
    X(cuLibraryGetKernel)                                                                          \
    X(cuLibraryUnload)                                                                             \
    X(cuKernelSetAttribute)                                                                        \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)                                        \
    X(cuModuleGetLoadingMode)                                                                      \
    X(cuMemGetInfo_v2)                                                                             \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemFree_v2)                                                                                \
    X(cuMemcpyHtoD_v2)                                                                             \
    X(cuMemcpyDtoH_v2)                                                                             \
    X(cuLaunchKernel)

#define DECL(n) static GS_CU_PFN(n) p_##n;
RT_FUNCS(DECL)
#undef DECL
static GS_CU_PFN(cuDevicePrimaryCtxRetain) p_internal_retain;

static void die(const char *what, int code)
{
    printf("error=%s code=%d\n", what, code);
    fflush(stdout);
    exit(2);
}

/* cuGetProcAddress_v2 by base name, as the runtime asks ("cuMemAlloc", not "cuMemAlloc_v2"). */
static void *get(const char *name, bool required)
{
    char base[128];
    snprintf(base, sizeof(base), "%s", name);
    size_t l = strlen(base);
    if (l > 3 && base[l - 3] == '_' && base[l - 2] == 'v')
        base[l - 3] = '\0';
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    requests++;
    CUresult r = gpa(base, &fn, api_version, gpa_flags, &st);
    if ((r != CUDA_SUCCESS || !fn) && required)
        die(base, r);
    return fn;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("open image", 0);
    unsigned char *buf = calloc(1, (1 << 24) + 1);
    if (!buf || fread(buf, 1, 1 << 24, f) == 0)
        die("read image", 0);
    fclose(f);
    return buf;
}

/* The runtime's primary context, retained inside the driver: gpusim's table-only entry, else
 * (a real driver) the public retain, reported as such. */
static CUcontext primary(CUdevice dev)
{
    CUcontext ctx = NULL;
    CUresult r;
    if (p_internal_retain) {
        r = p_internal_retain(&ctx, dev);
    } else {
        GS_CU_PFN(cuDevicePrimaryCtxRetain)
        pub = (GS_CU_PFN(cuDevicePrimaryCtxRetain))get("cuDevicePrimaryCtxRetain", true);
        r = pub(&ctx, dev);
    }
    if (r != CUDA_SUCCESS)
        die("primary context", r);
    return ctx;
}

int main(int argc, char **argv)
{
    unsigned long long alloc_mib = 64, chunk_mib = 1, realloc_mib = 0, kernel_us = 1000;
    long launches = 10, hold_ms = 0;
    bool reset = false, ptsz = false;
    const char *image_path = NULL, *kernel = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--ptsz") == 0) {
            ptsz = true;
        } else if (strcmp(a, "--reset") == 0) {
            reset = true;
        } else if (v && strcmp(a, "--version") == 0) {
            api_version = atoi(v), i++;
        } else if (v && strcmp(a, "--alloc-mib") == 0) {
            alloc_mib = strtoull(v, NULL, 10), i++;
        } else if (v && strcmp(a, "--chunk-mib") == 0) {
            chunk_mib = strtoull(v, NULL, 10), i++;
        } else if (v && strcmp(a, "--realloc-mib") == 0) {
            realloc_mib = strtoull(v, NULL, 10), i++;
        } else if (v && strcmp(a, "--launches") == 0) {
            launches = atol(v), i++;
        } else if (v && strcmp(a, "--kernel-us") == 0) {
            kernel_us = strtoull(v, NULL, 10), i++;
        } else if (v && strcmp(a, "--image") == 0) {
            image_path = v, i++;
        } else if (v && strcmp(a, "--kernel") == 0) {
            kernel = v, i++;
        } else if (v && strcmp(a, "--hold-ms") == 0) {
            hold_ms = atol(v), i++;
        } else {
            fprintf(stderr, "sim_runtime_pattern: unknown argument %s\n", a);
            return 2;
        }
    }
    if (chunk_mib == 0 || (image_path && !kernel))
        die("usage", 0);
    if (ptsz)
        gpa_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    /* The only three names looked up with dlsym. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        die("dlopen libcuda.so.1", 0);
    gpa = (GS_CU_PFN(cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    void *gpa1 = dlsym(h, "cuGetProcAddress");
    GS_CU_PFN(cuGetExportTable)
    export_table = (GS_CU_PFN(cuGetExportTable))dlsym(h, "cuGetExportTable");
    if (!gpa || !gpa1)
        die("dlsym cuGetProcAddress", 0);
    void *first = (void *)1;
    CUdriverProcAddressQueryResult st;
    CUresult fr = gpa("", &first, 0, 0, &st); /* the runtime's first request; NULL tolerated */
    requests++;
    printf("first_request=%d first_null=%d export_table_found=%d\n", (int)fr, first == NULL,
           export_table != NULL);

#define LOAD(n) p_##n = (GS_CU_PFN(n))get(#n, true);
    RT_FUNCS(LOAD)
#undef LOAD
    p_internal_retain =
        (GS_CU_PFN(cuDevicePrimaryCtxRetain))get("gpusimInternalPrimaryCtxRetain", false);
    CUresult r = p_cuInit(0);
    if (r)
        die("cuInit", r);
    if (export_table) {
        /* The runtime asks for the driver's private tables; gpusim has none. */
        static const CUuuid id = {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9,
                                   0x39, 0x12, 0xfd, 0x9d, 0xf9}};
        const void *table = NULL;
        printf("export_table=%d\n", (int)export_table(&table, &id));
    }
    int drv = 0, ndev = 0;
    p_cuDriverGetVersion(&drv);
    p_cuDeviceGetCount(&ndev);
    CUdevice dev;
    if ((r = p_cuDeviceGet(&dev, 0)))
        die("cuDeviceGet", r);
    int attrs_ok = 0, attr_sms = 0, mode = 0;
    for (int a = 1; a <= 143; a++) {
        int v;
        attrs_ok += p_cuDeviceGetAttribute(&v, (CUdevice_attribute)a, dev) == CUDA_SUCCESS;
    }
    p_cuDeviceGetAttribute(&attr_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    p_cuModuleGetLoadingMode((CUmoduleLoadingMode *)&mode);
    printf("driver_version=%d devices=%d attributes_ok=%d sms=%d loading_mode=%d\n", drv, ndev,
           attrs_ok, attr_sms, mode);

    /* Library before any context (the runtime's module registration). */
    CUcontext cur = (CUcontext)1;
    p_cuCtxGetCurrent(&cur);
    char ptx[512], kname[64];
    snprintf(kname, sizeof(kname), "sim_busy_%llu", kernel_us);
    snprintf(
        ptx, sizeof(ptx),
        ".version 8.0\n.target sm_75\n.address_size 64\n\n.visible .entry %s()\n{\n\tret;\n}\n",
        kname);
    unsigned char *image = image_path ? read_file(image_path) : NULL;
    CUlibrary lib;
    r = p_cuLibraryLoadData(&lib, image ? (const void *)image : ptx, NULL, NULL, 0, NULL, NULL, 0);
    printf("context_before_library=%d library_load=%d\n", cur != NULL, (int)r);
    if (r)
        die("cuLibraryLoadData", r);
    CUkernel k;
    if ((r = p_cuLibraryGetKernel(&k, lib, kernel ? kernel : kname)))
        die("cuLibraryGetKernel", r);

    /* cudaSetDevice: the primary context, retained out of sight, made current. */
    CUcontext ctx = primary(dev);
    if ((r = p_cuCtxSetCurrent(ctx)))
        die("cuCtxSetCurrent", r);
    printf("primary_retain=%s\n", p_internal_retain ? "internal" : "public");
    p_cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0, k, dev);
    int blocks = 0;
    p_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, (CUfunction)(void *)k, 256, 0,
                                                           0);
    size_t stack = 0;
    p_cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE);
    size_t free_b = 0, total_b = 0;
    p_cuMemGetInfo_v2(&free_b, &total_b);
    printf("occupancy_blocks=%d stack_limit=%zu free=%zu total=%zu\n", blocks, stack, free_b,
           total_b);

    /* cudaMalloc until --alloc-mib or the first failure. */
    size_t nptr = (size_t)((alloc_mib + chunk_mib - 1) / chunk_mib);
    CUdeviceptr *ptrs = calloc(nptr ? nptr : 1, sizeof(*ptrs));
    size_t got = 0;
    int first_fail = 0;
    for (size_t i = 0; i < nptr; i++) {
        r = p_cuMemAlloc_v2(&ptrs[i], chunk_mib * MiB);
        if (r != CUDA_SUCCESS) {
            first_fail = (int)r;
            break;
        }
        got++;
    }
    p_cuMemGetInfo_v2(&free_b, &total_b);
    printf("allocated_mib=%llu first_fail=%d free_after_alloc=%zu total=%zu\n",
           (unsigned long long)got * chunk_mib, first_fail, free_b, total_b);
    if (got) {
        static char hostbuf[4096];
        int c1 = (int)p_cuMemcpyHtoD_v2(ptrs[0], hostbuf, sizeof(hostbuf));
        int c2 = (int)p_cuMemcpyDtoH_v2(hostbuf, ptrs[0], sizeof(hostbuf));
        printf("memcpy_htod=%d memcpy_dtoh=%d\n", c1, c2);
    }

    /* Kernel launches: the CUkernel handle as the CUfunction. */
    double t0 = now_ms();
    long launched = 0;
    int launch_fail = 0;
    CUstream stream = ptsz ? CU_STREAM_PER_THREAD : NULL;
    for (long i = 0; i < launches; i++) {
        r = p_cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL);
        if (r != CUDA_SUCCESS) {
            launch_fail = (int)r;
            break;
        }
        launched++;
    }
    int sync = (int)p_cuCtxSynchronize();
    printf("launched=%ld launch_fail=%d sync=%d launch_ms=%.3f\n", launched, launch_fail, sync,
           now_ms() - t0);
    if (hold_ms > 0)
        usleep((useconds_t)hold_ms * 1000);

    if (reset) {
        /* cudaDeviceReset: everything the context held goes; the next use re-retains. */
        r = p_cuDevicePrimaryCtxReset_v2(dev);
        unsigned int flags = 0;
        int active = -1;
        p_cuDevicePrimaryCtxGetState(dev, &flags, &active);
        ctx = primary(dev);
        p_cuCtxSetCurrent(ctx);
        p_cuMemGetInfo_v2(&free_b, &total_b);
        printf("reset=%d active_after_reset=%d free_after_reset=%zu total=%zu\n", (int)r, active,
               free_b, total_b);
        got = 0; /* the reset freed them */
        if (realloc_mib) {
            size_t again = 0;
            int fail2 = 0;
            for (unsigned long long m = 0; m < realloc_mib; m += chunk_mib) {
                CUdeviceptr p;
                r = p_cuMemAlloc_v2(&p, chunk_mib * MiB);
                if (r) {
                    fail2 = (int)r;
                    break;
                }
                again++;
            }
            printf("reallocated_mib=%llu realloc_fail=%d\n", (unsigned long long)again * chunk_mib,
                   fail2);
        }
    }
    for (size_t i = 0; i < got; i++)
        p_cuMemFree_v2(ptrs[i]);
    free(ptrs);
    int unload = (int)p_cuLibraryUnload(lib);
    int release = (int)p_cuDevicePrimaryCtxRelease_v2(dev);
    printf("library_unload=%d primary_release=%d getproc_requests=%d\n", unload, release, requests);
    free(image);
    return 0;
}
