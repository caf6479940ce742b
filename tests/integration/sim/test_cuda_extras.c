/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim (h200x2): stream callbacks and host functions run in order on a driver thread after
 * the work before them, and synchronisation waits for them; the linker joins PTX and cubin
 * inputs into a loadable image; texture/surface objects check their resource; occupancy's
 * potential block size; a kernel's duration follows its grid in waves; peer access between the
 * two GPUs; host memory flags; profiler start/stop. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "abi/cuda_abi_data.h"
#include "simtest.h"
#include "tap.h"

#define SYM(T, n) T f_##n = (T)simtest_sym(simtest_cuda_handle, #n)

typedef CUresult (*add_cb_fn)(CUstream, CUstreamCallback, void *, unsigned int);
typedef CUresult (*host_fn_fn)(CUstream, CUhostFn, void *);
typedef CUresult (*link_create_fn)(unsigned int, CUjit_option *, void **, CUlinkState *);
typedef CUresult (*link_add_data_fn)(CUlinkState, int, void *, size_t, const char *, unsigned int,
                                     CUjit_option *, void **);
typedef CUresult (*link_add_file_fn)(CUlinkState, int, const char *, unsigned int, CUjit_option *,
                                     void **);
typedef CUresult (*link_complete_fn)(CUlinkState, void **, size_t *);
typedef CUresult (*link_destroy_fn)(CUlinkState);
typedef CUresult (*tex_create_fn)(CUtexObject *, const CUDA_RESOURCE_DESC *,
                                  const CUDA_TEXTURE_DESC *, const CUDA_RESOURCE_VIEW_DESC *);
typedef CUresult (*tex_destroy_fn)(CUtexObject);
typedef CUresult (*tex_res_fn)(CUDA_RESOURCE_DESC *, CUtexObject);
typedef CUresult (*surf_create_fn)(CUsurfObject *, const CUDA_RESOURCE_DESC *);
typedef CUresult (*potential_fn)(int *, int *, CUfunction, CUoccupancyB2DSize, size_t, int);
typedef CUresult (*peer_fn)(CUcontext, unsigned int);
typedef CUresult (*void_fn)(void);
typedef CUresult (*flags_fn)(unsigned int *, void *);
typedef CUresult (*hostalloc_fn)(void **, size_t, unsigned int);
typedef CUresult (*getglobal_fn)(CUdeviceptr *, size_t *, CUmodule, const char *);

static pthread_t main_thread;
static int order[8], norder;
static bool on_other_thread = true;
static unsigned long long cb_time_us;

static void cb(CUstream s, CUresult status, void *user)
{
    (void)s;
    on_other_thread &= !pthread_equal(pthread_self(), main_thread) && status == CUDA_SUCCESS;
    order[norder++] = (int)(intptr_t)user;
    if ((intptr_t)user == 1)
        cb_time_us = simtest_now_us();
}

static void host_fn(void *user)
{
    on_other_thread &= !pthread_equal(pthread_self(), main_thread);
    order[norder++] = (int)(intptr_t)user;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof(buf) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

int main(void)
{
    tap_plan_auto();
    setenv("GPUSIM_PRESET", "h200x2", 1);
    simtest_state();
    simtest_load_cuda();
    main_thread = pthread_self();
    SYM(add_cb_fn, cuStreamAddCallback);
    SYM(host_fn_fn, cuLaunchHostFunc);
    SYM(link_create_fn, cuLinkCreate_v2);
    SYM(link_add_data_fn, cuLinkAddData_v2);
    SYM(link_add_file_fn, cuLinkAddFile_v2);
    SYM(link_complete_fn, cuLinkComplete);
    SYM(link_destroy_fn, cuLinkDestroy);
    SYM(tex_create_fn, cuTexObjectCreate);
    SYM(tex_destroy_fn, cuTexObjectDestroy);
    SYM(tex_res_fn, cuTexObjectGetResourceDesc);
    SYM(surf_create_fn, cuSurfObjectCreate);
    SYM(potential_fn, cuOccupancyMaxPotentialBlockSize);
    SYM(peer_fn, cuCtxEnablePeerAccess);
    SYM(void_fn, cuProfilerStart);
    SYM(void_fn, cuProfilerStop);
    SYM(flags_fn, cuMemHostGetFlags);
    SYM(hostalloc_fn, cuMemHostAlloc);
    getglobal_fn p_cuModuleGetGlobal_v2 =
        (getglobal_fn)simtest_sym(simtest_cuda_handle, "cuModuleGetGlobal_v2");

    CUcontext ctx, ctx1;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx1, 0, 1);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    CUmodule m;
    CUfunction k20, k1;
    p_cuModuleLoadData(&m, "gpusim");
    p_cuModuleGetFunction(&k20, m, "sim_busy_20000");
    p_cuModuleGetFunction(&k1, m, "sim_busy_1000");

    /* Callbacks. */
    CUstream s;
    p_cuStreamCreate(&s, 0);
    unsigned long long t0 = simtest_now_us();
    p_cuLaunchKernel(k20, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
    is_int(f_cuStreamAddCallback(s, cb, (void *)1, 0), CUDA_SUCCESS, "cuStreamAddCallback");
    is_int(f_cuLaunchHostFunc(s, host_fn, (void *)2), CUDA_SUCCESS, "cuLaunchHostFunc");
    is_int(f_cuStreamAddCallback(s, cb, (void *)3, 0), CUDA_SUCCESS, "another callback");
    is_int(f_cuStreamAddCallback(s, cb, NULL, 1), CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    is_int(p_cuStreamSynchronize(s), CUDA_SUCCESS, "synchronize");
    ok(norder == 3 && order[0] == 1 && order[1] == 2 && order[2] == 3,
       "all three ran, in order, before synchronize returned (%d)", norder);
    ok(on_other_thread, "on a thread of the driver's, with CUDA_SUCCESS");
    ok(cb_time_us - t0 >= 20000, "after the 20 ms kernel queued before them (%llu us)",
       cb_time_us - t0);
    is_int(p_cuStreamQuery(s), CUDA_SUCCESS, "the stream is idle");

    /* Linker: PTX + cubin into one image with both inputs' names. */
    const char *root = getenv("GS_SOURCE_ROOT");
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/integration/sim/images/kernels.ptx", root ? root : ".");
    size_t plen = 0;
    char *ptx = slurp(path, &plen);
    ok(ptx != NULL, "kernels.ptx");
    CUlinkState ls;
    is_int(f_cuLinkCreate_v2(0, NULL, NULL, &ls), CUDA_SUCCESS, "cuLinkCreate_v2");
    is_int(f_cuLinkAddData_v2(ls, CU_JIT_INPUT_PTX, ptx, plen + 1, "k.ptx", 0, NULL, NULL),
           CUDA_SUCCESS, "add PTX");
    snprintf(path, sizeof(path), "%s/tests/integration/sim/images/kernels.cubin",
             root ? root : ".");
    is_int(f_cuLinkAddFile_v2(ls, CU_JIT_INPUT_CUBIN, path, 0, NULL, NULL), CUDA_SUCCESS,
           "add a cubin file");
    is_int(f_cuLinkAddData_v2(ls, CU_JIT_INPUT_PTX, "garbage", 8, "g", 0, NULL, NULL),
           CUDA_ERROR_INVALID_IMAGE, "garbage is not an image");
    is_int(f_cuLinkAddData_v2(ls, CU_JIT_INPUT_NVVM, ptx, plen, "n", 0, NULL, NULL),
           CUDA_ERROR_NOT_SUPPORTED, "NVVM IR: no libNVVM");
    void *cubin = NULL;
    size_t clen = 0;
    is_int(f_cuLinkComplete(ls, &cubin, &clen), CUDA_SUCCESS, "cuLinkComplete");
    CUmodule lm;
    CUfunction lf;
    is_int(p_cuModuleLoadData(&lm, cubin), CUDA_SUCCESS, "the linked image loads");
    is_int(p_cuModuleGetFunction(&lf, lm, "_ZN2gs5scaleEPff"), CUDA_SUCCESS, "its kernel");
    is_int(p_cuModuleGetFunction(&lf, lm, "nope"), CUDA_ERROR_NOT_FOUND, "no other");
    CUdeviceptr gptr;
    size_t gsz = 0;
    is_int(p_cuModuleGetGlobal_v2(&gptr, &gsz, lm, "gs_table"), CUDA_SUCCESS, "its global");
    is_uint(gsz, 1024, "with its size");
    is_int(f_cuLinkDestroy(ls), CUDA_SUCCESS, "cuLinkDestroy");

    /* Texture and surface objects. */
    CUdeviceptr img;
    size_t pitch;
    p_cuMemAllocPitch_v2(&img, &pitch, 160, 120, 4);
    CUDA_RESOURCE_DESC rd;
    memset(&rd, 0, sizeof(rd));
    rd.resType = CU_RESOURCE_TYPE_PITCH2D;
    rd.res.pitch2D.devPtr = img;
    rd.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT8;
    rd.res.pitch2D.numChannels = 1;
    rd.res.pitch2D.width = 160;
    rd.res.pitch2D.height = 120;
    rd.res.pitch2D.pitchInBytes = pitch;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof(td));
    CUtexObject tex = 0;
    is_int(f_cuTexObjectCreate(&tex, &rd, &td, NULL), CUDA_SUCCESS, "texture over pitched memory");
    CUDA_RESOURCE_DESC back;
    f_cuTexObjectGetResourceDesc(&back, tex);
    ok(memcmp(&back, &rd, sizeof(rd)) == 0, "its resource descriptor back");
    rd.res.pitch2D.height = 121;
    CUtexObject tex2 = 0;
    is_int(f_cuTexObjectCreate(&tex2, &rd, &td, NULL), CUDA_ERROR_INVALID_VALUE,
           "a row past the allocation is refused");
    is_int(f_cuTexObjectDestroy(tex), CUDA_SUCCESS, "destroy");
    is_int(f_cuTexObjectDestroy(tex), CUDA_ERROR_INVALID_VALUE, "twice");
    CUsurfObject surf;
    is_int(f_cuSurfObjectCreate(&surf, &rd), CUDA_ERROR_INVALID_VALUE, "surfaces bind arrays only");

    /* Occupancy: H200, 2048 threads per SM: 1024-thread blocks, two per SM, 132 SMs. */
    int grid = 0, block = 0;
    is_int(f_cuOccupancyMaxPotentialBlockSize(&grid, &block, k1, NULL, 0, 0), CUDA_SUCCESS,
           "cuOccupancyMaxPotentialBlockSize");
    ok(block == 1024 && grid == 264, "block %d, grid %d", block, grid);
    is_int(f_cuOccupancyMaxPotentialBlockSize(&grid, &block, k1, NULL, 0, 96), CUDA_SUCCESS,
           "with a block size limit");
    /* 96: 21 blocks, 2016 threads per SM; 64: 32 blocks, 2048 threads (full occupancy) */
    is_int(block, 64, "the fullest SM under the limit");

    /* Waves: 264 blocks of 1024 threads fill the device once; 265 need two waves. */
    CUevent e0, e1, e2, e3;
    p_cuEventCreate(&e0, 0);
    p_cuEventCreate(&e1, 0);
    p_cuEventCreate(&e2, 0);
    p_cuEventCreate(&e3, 0);
    p_cuEventRecord(e0, s);
    p_cuLaunchKernel(k1, 264, 1, 1, 1024, 1, 1, 0, s, NULL, NULL);
    p_cuEventRecord(e1, s);
    p_cuLaunchKernel(k1, 265, 1, 1, 1024, 1, 1, 0, s, NULL, NULL);
    p_cuEventRecord(e2, s);
    p_cuLaunchKernel(k1, 100000, 1, 1, 256, 1, 1, 0, s, NULL, NULL);
    p_cuEventRecord(e3, s);
    p_cuEventSynchronize(e3);
    float a = 0, b = 0, c = 0;
    p_cuEventElapsedTime(&a, e0, e1);
    p_cuEventElapsedTime(&b, e1, e2);
    p_cuEventElapsedTime(&c, e2, e3);
    /* Simulated time; a sanitized build adds host overhead to the events (seen 1.0025). */
    ok(a > 0.99f && a < 1.05f, "one wave: 1 ms (%.4f)", a);
    ok(b > 1.99f && b < 2.05f, "two waves: 2 ms (%.4f)", b);
    /* 256 threads: 8 blocks per SM (2048 threads), 1056 at once: 95 waves */
    ok(c > 94.9f && c < 95.5f, "100000 blocks of 256: 95 waves, 95 ms (%.4f)", c);

    /* Peer access between the two H200s (NVLink). */
    is_int(f_cuCtxEnablePeerAccess(ctx1, 0), CUDA_SUCCESS, "cuCtxEnablePeerAccess");
    is_int(f_cuCtxEnablePeerAccess(ctx1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "twice");
    is_int(f_cuCtxEnablePeerAccess(ctx, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "itself");

    /* Host memory flags. */
    void *hp = NULL;
    f_cuMemHostAlloc(&hp, 4096, 0x02 /* DEVICEMAP */);
    unsigned int fl = 0;
    is_int(f_cuMemHostGetFlags(&fl, (char *)hp + 10), CUDA_SUCCESS, "cuMemHostGetFlags");
    is_uint(fl, 0x02, "the flags it was allocated with");
    is_int(f_cuMemHostGetFlags(&fl, &fl), CUDA_ERROR_INVALID_VALUE, "not pinned memory");

    is_int(f_cuProfilerStart(), CUDA_SUCCESS, "cuProfilerStart");
    is_int(f_cuProfilerStop(), CUDA_SUCCESS, "cuProfilerStop");

    p_cuCtxDestroy_v2(ctx);
    simtest_cleanup();
    return tap_done();
}
