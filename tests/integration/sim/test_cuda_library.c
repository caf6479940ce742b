/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Code as the CUDA runtime and cuBLAS use it: libraries loaded before any context from the
 * images nvcc makes (checked-in fatbin, cubin, PTX, the fatbin embedded in a program), garbage
 * refused with CUDA_ERROR_INVALID_IMAGE, kernels by their mangled names, a CUkernel launched as a
 * CUfunction (its cost from the name), globals, function/kernel attributes, occupancy, context
 * limits, the loading mode and every device attribute.
 */
#include <stdbool.h>

#include "sim/gpusim.h"
#include "simtest.h"
#include "tap.h"

#define FN(n) static GS_CU_PFN(n) n##_p;
#define SIM_EXTRA(X)                                                                               \
    X(cuLibraryLoadData)                                                                           \
    X(cuLibraryLoadFromFile)                                                                       \
    X(cuLibraryUnload)                                                                             \
    X(cuLibraryGetKernel)                                                                          \
    X(cuLibraryGetModule)                                                                          \
    X(cuLibraryGetGlobal)                                                                          \
    X(cuKernelGetFunction)                                                                         \
    X(cuKernelGetAttribute)                                                                        \
    X(cuKernelSetAttribute)                                                                        \
    X(cuFuncGetAttribute)                                                                          \
    X(cuFuncSetAttribute)                                                                          \
    X(cuModuleGetGlobal_v2)                                                                        \
    X(cuModuleGetLoadingMode)                                                                      \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                 \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)                                        \
    X(cuOccupancyAvailableDynamicSMemPerBlock)                                                     \
    X(cuOccupancyMaxActiveClusters)                                                                \
    X(cuCtxGetLimit)                                                                               \
    X(cuCtxSetLimit)                                                                               \
    X(cuLaunchKernel_ptsz)                                                                         \
    X(cuMemcpyHtoD_v2)                                                                             \
    X(gpusimGetKernelCost)
SIM_EXTRA(FN)
#undef FN

static char image_dir[512];

static const char *image(const char *name)
{
    static char path[640];
    snprintf(path, sizeof(path), "%s/%s", image_dir, name);
    return path;
}

static unsigned char *slurp(const char *name)
{
    FILE *f = fopen(image(name), "rb");
    unsigned char *buf = calloc(1, 1 << 20);
    if (!f || !buf || fread(buf, 1, 1 << 20, f) == 0) {
        perror(image(name));
        exit(2);
    }
    fclose(f);
    return buf;
}

static const char ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n\n"
                          ".visible .entry sim_busy_3000()\n{\n\tret;\n}\n";

static CUfunction lead; /* 20 ms queued first, so f starts exactly at the first event */

/* The device time of one launch of f on the null stream, in ms (gpusim's timeline). */
static float launch_ms(CUfunction f, bool ptsz)
{
    CUevent a, b;
    p_cuEventCreate(&a, 0);
    p_cuEventCreate(&b, 0);
    p_cuLaunchKernel(lead, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(a, NULL);
    CUresult r = ptsz ? cuLaunchKernel_ptsz_p(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)
                      : p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(b, NULL);
    p_cuEventSynchronize(b);
    float ms = -1;
    p_cuEventElapsedTime(&ms, a, b);
    p_cuEventDestroy_v2(a);
    p_cuEventDestroy_v2(b);
    return r == CUDA_SUCCESS ? ms : -1;
}

static void test_before_context(CUlibrary *fat)
{
    CUlibrary lib;
    is_int(cuLibraryLoadData_p(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS,
           "cuLibraryLoadData(PTX) with no context");
    is_int(cuLibraryLoadData_p(&lib, "m", NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE,
           "garbage: CUDA_ERROR_INVALID_IMAGE");
    /* A whole ELF header for EM_CUDA with no section table (the driver reads a pointer image's
     * extent from its header, so the header itself must be there). */
    static const unsigned char bad_elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1, [18] = 190};
    is_int(cuLibraryLoadData_p(&lib, bad_elf, NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_IMAGE, "a cubin without sections: CUDA_ERROR_INVALID_IMAGE");
    unsigned char *fb = slurp("kernels.fatbin");
    is_int(cuLibraryLoadData_p(fat, fb, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS,
           "cuLibraryLoadData(nvcc fatbin in memory)");
    /* The wrapper a program registers ({magic 0x466243b1, version, data, ...}) points at it. */
    struct {
        unsigned int magic, version;
        const void *data;
        void *unused;
    } wrapper = {0x466243b1u, 1, fb, NULL};
    CUlibrary wl;
    CUkernel wk;
    is_int(cuLibraryLoadData_p(&wl, &wrapper, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS,
           "cuLibraryLoadData(the program's fatbin wrapper)");
    is_int(cuLibraryGetKernel_p(&wk, wl, "sim_busy_1000"), CUDA_SUCCESS, "names read through it");
    cuLibraryUnload_p(wl);
    wrapper.data = "not a fatbin";
    is_int(cuLibraryLoadData_p(&wl, &wrapper, NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_IMAGE, "a wrapper pointing at something else is refused");
    free(fb); /* the driver keeps nothing pointing into it */
    CUkernel k;
    is_int(cuLibraryGetKernel_p(&k, *fat, "_Z13sim_busy_2000Pfi"), CUDA_SUCCESS,
           "cuLibraryGetKernel by the mangled name, no context");
    is_int(cuLibraryGetKernel_p(&k, *fat, "sim_busy_2000"), CUDA_ERROR_NOT_FOUND,
           "the unmangled C++ name is not in the image");
    CUfunction f;
    is_int(cuKernelGetFunction_p(&f, k), CUDA_ERROR_INVALID_CONTEXT,
           "cuKernelGetFunction needs a context");
    CUmodule m;
    is_int(cuLibraryGetModule_p(&m, *fat), CUDA_ERROR_INVALID_CONTEXT,
           "cuLibraryGetModule needs a context");
    unsigned long long us = 0;
    is_int(gpusimGetKernelCost_p((CUfunction)(void *)k, &us), CUDA_SUCCESS, "cost of a CUkernel");
    is_uint(us, 2000, "sim_busy_2000 in a mangled name costs 2000 us");
    is_int(cuLibraryUnload_p(lib), CUDA_SUCCESS, "cuLibraryUnload");
}

static void test_files(void)
{
    static const char *const files[] = {"kernels.fatbin", "kernels.cubin", "kernels.ptx",
                                        "kernels_embedded.fatbin"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        CUlibrary lib;
        CUkernel k;
        is_int(cuLibraryLoadFromFile_p(&lib, image(files[i]), NULL, NULL, 0, NULL, NULL, 0),
               CUDA_SUCCESS, "cuLibraryLoadFromFile %s", files[i]);
        is_int(cuLibraryGetKernel_p(&k, lib, "_ZN2gs5scaleEPff"), CUDA_SUCCESS,
               "%s: kernel in a namespace", files[i]);
        is_int(cuLibraryGetKernel_p(&k, lib, "nope"), CUDA_ERROR_NOT_FOUND, "%s: no such kernel",
               files[i]);
        cuLibraryUnload_p(lib);
    }
    CUlibrary lib;
    CUkernel k;
    is_int(cuLibraryLoadFromFile_p(&lib, image("kernels_compressed.fatbin"), NULL, NULL, 0, NULL,
                                   NULL, 0),
           CUDA_SUCCESS, "a fully compressed fatbin loads");
    is_int(cuLibraryGetKernel_p(&k, lib, "anything"), CUDA_SUCCESS,
           "its names are unknown to gpusim: any name is accepted");
    cuLibraryUnload_p(lib);
    is_int(cuLibraryLoadFromFile_p(&lib, "/nonexistent/k.fatbin", NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_FILE_NOT_FOUND, "a missing file");
    is_int(cuLibraryLoadFromFile_p(&lib, image("kernels.cu"), NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_IMAGE, "CUDA C++ source is not an image");
    is_int(cuLibraryLoadFromFile_p(&lib, "/dev/null", NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_IMAGE, "a device file is not an image (refused unread)");
    is_int(cuLibraryLoadFromFile_p(&lib, "/", NULL, NULL, 0, NULL, NULL, 0),
           CUDA_ERROR_INVALID_IMAGE, "a directory is not an image");
    CUlibraryOption bad = (CUlibraryOption)7;
    void *val = NULL;
    is_int(cuLibraryLoadData_p(&lib, ptx, NULL, NULL, 0, &bad, &val, 1), CUDA_ERROR_INVALID_VALUE,
           "an unknown library option");
}

static void test_in_context(CUlibrary fat)
{
    CUmodule lm;
    p_cuModuleLoadData(&lm, "gpusim"); /* gpusim's any-name test image */
    p_cuModuleGetFunction(&lead, lm, "sim_busy_20000");
    CUkernel k, k1;
    cuLibraryGetKernel_p(&k, fat, "_Z13sim_busy_2000Pfi");
    cuLibraryGetKernel_p(&k1, fat, "sim_busy_1000");
    CUkernel again;
    cuLibraryGetKernel_p(&again, fat, "_Z13sim_busy_2000Pfi");
    ok(again == k, "the same name gives the same CUkernel");
    float ms = launch_ms((CUfunction)(void *)k, false);
    ok(ms > 1.9999f && ms < 2.0001f, "a CUkernel passed as CUfunction runs its 2 ms (%.4f)", ms);
    ms = launch_ms((CUfunction)(void *)k1, true);
    ok(ms > 0.9999f && ms < 1.0001f, "and through cuLaunchKernel_ptsz its 1 ms (%.4f)", ms);
    CUfunction f, f2;
    is_int(cuKernelGetFunction_p(&f, k), CUDA_SUCCESS, "cuKernelGetFunction");
    CUmodule m;
    is_int(cuLibraryGetModule_p(&m, fat), CUDA_SUCCESS, "cuLibraryGetModule");
    is_int(p_cuModuleGetFunction(&f2, m, "_Z13sim_busy_2000Pfi"), CUDA_SUCCESS,
           "the library's module has the kernel");
    ok(f == f2, "one function for the kernel in this context");
    ms = launch_ms(f, false);
    ok(ms > 1.9999f && ms < 2.0001f, "the CUfunction runs 2 ms too (%.4f)", ms);

    CUdeviceptr g;
    size_t gsize = 0;
    is_int(cuLibraryGetGlobal_p(&g, &gsize, fat, "gs_table"), CUDA_SUCCESS, "cuLibraryGetGlobal");
    is_uint(gsize, 1024, "__device__ float gs_table[256]: 1024 bytes");
    static char host[1024];
    is_int(cuMemcpyHtoD_v2_p(g, host, sizeof(host)), CUDA_SUCCESS, "cudaMemcpyToSymbol reaches it");
    is_int(p_cuMemFree_v2(g), CUDA_ERROR_INVALID_VALUE, "a global is not freeable");
    is_int(cuLibraryGetGlobal_p(&g, &gsize, fat, "nope"), CUDA_ERROR_NOT_FOUND, "no such global");

    /* Attributes (cuBLAS sets the dynamic shared memory of its kernels). */
    int v = 0;
    is_int(cuKernelSetAttribute_p(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536, k, 0),
           CUDA_SUCCESS, "cuKernelSetAttribute 64 KiB dynamic shared memory (T4 opt-in max)");
    cuFuncGetAttribute_p(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
    is_int(v, 65536, "seen through the CUfunction");
    is_int(cuFuncSetAttribute_p(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65537),
           CUDA_ERROR_INVALID_VALUE, "past the opt-in maximum");
    is_int(cuFuncSetAttribute_p(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 8), CUDA_ERROR_INVALID_VALUE,
           "a read-only attribute");
    cuKernelGetAttribute_p(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, k, 0);
    is_int(v, 75, "binary version 7.5 on the T4");
    is_int(cuKernelSetAttribute_p(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2, k, 0),
           CUDA_ERROR_NOT_SUPPORTED, "clusters need compute capability 9.0");

    /* Occupancy on the T4: 1024 threads, 64 KiB shared memory, 16 blocks per SM. */
    int blocks = 0;
    cuOccupancyMaxActiveBlocksPerMultiprocessor_p(&blocks, (CUfunction)(void *)k, 256, 0);
    is_int(blocks, 4, "256-thread blocks: 4 per SM (thread limit)");
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_p(&blocks, f, 32, 32768, 0);
    is_int(blocks, 1, "32 KiB dynamic shared memory: 1 per SM");
    cuOccupancyMaxActiveBlocksPerMultiprocessor_p(&blocks, f, 2048, 0);
    is_int(blocks, 0, "2048-thread blocks never fit");
    size_t smem = 0;
    is_int(cuOccupancyAvailableDynamicSMemPerBlock_p(&smem, f, 2, 256), CUDA_SUCCESS,
           "cuOccupancyAvailableDynamicSMemPerBlock");
    is_uint(smem, 31744, "2 blocks per SM: 32 KiB each less the 1 KiB reserve");
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 128,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    int clusters = 0;
    is_int(cuOccupancyMaxActiveClusters_p(&clusters, f, &cfg), CUDA_ERROR_NOT_SUPPORTED,
           "cuOccupancyMaxActiveClusters on Turing");

    /* Context limits. */
    size_t lim = 0;
    cuCtxGetLimit_p(&lim, CU_LIMIT_MALLOC_HEAP_SIZE);
    is_uint(lim, 8 * MiB, "malloc heap 8 MiB by default");
    is_int(cuCtxSetLimit_p(CU_LIMIT_MALLOC_HEAP_SIZE, 16 * MiB), CUDA_SUCCESS, "cuCtxSetLimit");
    cuCtxGetLimit_p(&lim, CU_LIMIT_MALLOC_HEAP_SIZE);
    is_uint(lim, 16 * MiB, "read back");
    is_int(cuCtxGetLimit_p(&lim, (CUlimit)42), CUDA_ERROR_UNSUPPORTED_LIMIT, "an unknown limit");
    CUmoduleLoadingMode mode;
    cuModuleGetLoadingMode_p(&mode);
    is_int(mode, CU_MODULE_LAZY_LOADING, "lazy loading by default");

    /* A context module from a cubin file, and its global. */
    CUmodule cm;
    is_int(p_cuModuleLoad(&cm, image("kernels.cubin")), CUDA_SUCCESS, "cuModuleLoad(cubin)");
    is_int(p_cuModuleGetFunction(&f, cm, "sim_busy_1000"), CUDA_SUCCESS, "its kernel");
    is_int(p_cuModuleGetFunction(&f, cm, "sim_busy_5"), CUDA_ERROR_NOT_FOUND,
           "a name the image does not have");
    is_int(cuModuleGetGlobal_v2_p(&g, &gsize, cm, "gs_table"), CUDA_SUCCESS, "cuModuleGetGlobal");
    is_int(p_cuModuleLoadData(&cm, "not an image"), CUDA_ERROR_INVALID_IMAGE,
           "cuModuleLoadData(garbage): CUDA_ERROR_INVALID_IMAGE");

    /* Every device attribute the enum has (cuBLAS reads about 111 of them, ids up to 143). */
    int answered = 0;
    for (int a = 1; a < 148; a++)
        answered += p_cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0) == CUDA_SUCCESS;
    is_int(answered, 147, "attributes 1..147 answer");
    is_int(p_cuDeviceGetAttribute(&v, (CUdevice_attribute)148, 0), CUDA_ERROR_INVALID_VALUE,
           "148 is past the enum");
    p_cuDeviceGetAttribute(&v, (CUdevice_attribute)120, 0);
    is_int(v, 0, "CLUSTER_LAUNCH: 0 on Turing");
    p_cuDeviceGetAttribute(&v, (CUdevice_attribute)139, 0);
    is_int(v, (int)((0x1EB8u << 16) | 0x10deu), "GPU_PCI_DEVICE_ID of the T4");
    p_cuDeviceGetAttribute(&v, (CUdevice_attribute)111, 0);
    is_int(v, 1024, "RESERVED_SHARED_MEMORY_PER_BLOCK");

    is_int(cuLibraryUnload_p(fat), CUDA_SUCCESS, "unload the fatbin library");
    is_int(p_cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
           CUDA_ERROR_INVALID_HANDLE, "its CUkernel is gone");
    is_int(p_cuLaunchKernel(f2, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE,
           "and its functions");
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("CUDA_MODULE_LOADING");
    const char *root = getenv("GS_SOURCE_ROOT");
    snprintf(image_dir, sizeof(image_dir), "%s/tests/integration/sim/images", root ? root : ".");
    simtest_load_cuda();
#define LOAD(n) n##_p = (GS_CU_PFN(n))simtest_sym(simtest_cuda_handle, #n);
    SIM_EXTRA(LOAD)
#undef LOAD
    CUlibrary lib;
    is_int(cuLibraryLoadData_p(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_NOT_INITIALIZED,
           "before cuInit");
    p_cuInit(0);
    CUlibrary fat;
    test_before_context(&fat);
    test_files();
    CUcontext ctx;
    p_cuDevicePrimaryCtxRetain(&ctx, 0);
    p_cuCtxSetCurrent(ctx);
    test_in_context(fat);
    p_cuDevicePrimaryCtxRelease_v2(0);
    simtest_cleanup();
    return tap_done();
}
