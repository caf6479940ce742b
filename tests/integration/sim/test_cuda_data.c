/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim device memory holds data: 1D/2D/3D copies (sync, async, pitched, range- and
 * pitch-checked), memsets D8/D16/D32 and 2D, managed memory seen through its host address,
 * arrays, and a 15 GiB device whose untouched memory costs no host memory. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "abi/cuda_abi_data.h"
#include "simtest.h"
#include "tap.h"

typedef CUresult (*cpy2d_fn)(const CUDA_MEMCPY2D *);
typedef CUresult (*cpy2da_fn)(const CUDA_MEMCPY2D *, CUstream);
typedef CUresult (*cpy3d_fn)(const CUDA_MEMCPY3D *);
typedef CUresult (*set16_fn)(CUdeviceptr, unsigned short, size_t);
typedef CUresult (*set2d32_fn)(CUdeviceptr, size_t, unsigned int, size_t, size_t);
typedef CUresult (*set2d8a_fn)(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream);
typedef CUresult (*htoa_fn)(CUarray, size_t, const void *, size_t);
typedef CUresult (*atoh_fn)(void *, CUarray, size_t, size_t);
typedef CUresult (*set8_fn)(CUdeviceptr, unsigned char, size_t);

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    simtest_load_cuda();
    set8_fn p_cuMemsetD8_v2 = (set8_fn)simtest_sym(simtest_cuda_handle, "cuMemsetD8_v2");
    GS_CU_PFN(cuMemcpyDtoD_v2)
    p_cuMemcpyDtoD_v2 =
        (GS_CU_PFN(cuMemcpyDtoD_v2))simtest_sym(simtest_cuda_handle, "cuMemcpyDtoD_v2");
    GS_CU_PFN(cuMemcpyDtoH_v2)
    p_cuMemcpyDtoH_v2 =
        (GS_CU_PFN(cuMemcpyDtoH_v2))simtest_sym(simtest_cuda_handle, "cuMemcpyDtoH_v2");
    GS_CU_PFN(cuMemcpyHtoD_v2)
    p_cuMemcpyHtoD_v2 =
        (GS_CU_PFN(cuMemcpyHtoD_v2))simtest_sym(simtest_cuda_handle, "cuMemcpyHtoD_v2");
    cpy2d_fn cpy2d = (cpy2d_fn)simtest_sym(simtest_cuda_handle, "cuMemcpy2D_v2");
    cpy2da_fn cpy2da = (cpy2da_fn)simtest_sym(simtest_cuda_handle, "cuMemcpy2DAsync_v2");
    cpy3d_fn cpy3d = (cpy3d_fn)simtest_sym(simtest_cuda_handle, "cuMemcpy3D_v2");
    set16_fn setd16 = (set16_fn)simtest_sym(simtest_cuda_handle, "cuMemsetD16_v2");
    set2d32_fn set2d32 = (set2d32_fn)simtest_sym(simtest_cuda_handle, "cuMemsetD2D32_v2");
    set2d8a_fn set2d8a = (set2d8a_fn)simtest_sym(simtest_cuda_handle, "cuMemsetD2D8Async");
    htoa_fn htoa = (htoa_fn)simtest_sym(simtest_cuda_handle, "cuMemcpyHtoA_v2");
    atoh_fn atoh = (atoh_fn)simtest_sym(simtest_cuda_handle, "cuMemcpyAtoH_v2");

    CUcontext ctx;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);

    /* Pitched 2D: host (W x H, pitch 100) -> device (pitch from cuMemAllocPitch) -> host. */
    enum { W = 70, H = 33 };
    static unsigned char src[100 * H], back[128 * H];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 13 + 1);
    CUdeviceptr d;
    size_t pitch = 0;
    is_int(p_cuMemAllocPitch_v2(&d, &pitch, W, H, 4), CUDA_SUCCESS, "cuMemAllocPitch_v2");
    CUDA_MEMCPY2D c = {0};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = 100;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = pitch;
    c.WidthInBytes = W;
    c.Height = H;
    is_int(cpy2d(&c), CUDA_SUCCESS, "cuMemcpy2D host -> pitched device");
    CUDA_MEMCPY2D b = {0};
    b.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    b.srcDevice = d;
    b.srcPitch = pitch;
    b.dstMemoryType = CU_MEMORYTYPE_HOST;
    b.dstHost = back;
    b.dstPitch = 128;
    b.WidthInBytes = W;
    b.Height = H;
    memset(back, 0xEE, sizeof(back));
    CUstream s;
    p_cuStreamCreate(&s, 0);
    is_int(cpy2da(&b, s), CUDA_SUCCESS, "cuMemcpy2DAsync device -> host");
    p_cuStreamSynchronize(s);
    bool same = true;
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < 128; x++)
            same &= back[y * 128 + x] == (x < W ? src[y * 100 + x] : 0xEE);
    ok(same, "every row came back, nothing past the width written");
    CUDA_MEMCPY2D bad = c;
    bad.srcPitch = W - 1;
    is_int(cpy2d(&bad), CUDA_ERROR_INVALID_VALUE, "a pitch below the width is refused");
    bad = c;
    bad.Height = H + 1;
    is_int(cpy2d(&bad), CUDA_ERROR_INVALID_VALUE, "one row past the allocation is refused");
    bad = c;
    bad.dstMemoryType = (CUmemorytype)9;
    is_int(cpy2d(&bad), CUDA_ERROR_INVALID_VALUE, "an unknown memory type is refused");

    /* 2D memsets on the pitched allocation. */
    is_int(set2d32(d, pitch, 0x01020304u, 8, 4), CUDA_SUCCESS, "cuMemsetD2D32_v2");
    is_int(set2d8a(d + 32, pitch, 0x5A, 4, 4, s), CUDA_SUCCESS, "cuMemsetD2D8Async");
    p_cuStreamSynchronize(s);
    is_int(cpy2d(&b), CUDA_SUCCESS, "read back");
    unsigned int w0;
    memcpy(&w0, back + 128 * 3 + 28, 4);
    ok(w0 == 0x01020304u && back[128 * 3 + 32] == 0x5A && back[128 * 3 + 35] == 0x5A &&
           back[128 * 3 + 36] == src[300 + 36] && back[128 * 4] == src[400],
       "2D sets wrote exactly their rectangles");
    is_int(set2d32(d + 2, pitch, 0, 1, 1), CUDA_ERROR_INVALID_VALUE, "misaligned D2D32");
    is_int(set2d32(d, pitch, 0, pitch, 2), CUDA_ERROR_INVALID_VALUE, "rows wider than the pitch");

    /* 1D D16 and DtoD. */
    CUdeviceptr e;
    p_cuMemAlloc_v2(&e, 4096);
    is_int(setd16(e, 0xBEEF, 2048), CUDA_SUCCESS, "cuMemsetD16_v2");
    is_int(p_cuMemcpyDtoD_v2(e + 2, d, 16), CUDA_SUCCESS, "DtoD");
    unsigned short h16[4];
    p_cuMemcpyDtoH_v2(h16, e, sizeof(h16));
    unsigned char first[2];
    memcpy(first, &h16[1], 2);
    ok(h16[0] == 0xBEEF && first[0] == 0x04 && first[1] == 0x03, "D16 set, then DtoD over it");

    /* 3D: a 5 x 4 x 3 box from a host volume into a device volume and back. */
    enum { X = 5, Y = 4, Z = 3, VP = 8, VH = 6, VD = 4 };
    static unsigned char vol[VP * VH * VD], vol2[VP * VH * VD];
    for (size_t i = 0; i < sizeof(vol); i++)
        vol[i] = (unsigned char)(i + 1);
    CUdeviceptr dv;
    p_cuMemAlloc_v2(&dv, sizeof(vol));
    p_cuMemsetD8_v2(dv, 0, sizeof(vol));
    CUDA_MEMCPY3D m = {0};
    m.srcMemoryType = CU_MEMORYTYPE_HOST;
    m.srcHost = vol;
    m.srcPitch = VP;
    m.srcHeight = VH;
    m.srcXInBytes = 1;
    m.srcY = 1;
    m.srcZ = 1;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = dv;
    m.dstPitch = VP;
    m.dstHeight = VH;
    m.WidthInBytes = X;
    m.Height = Y;
    m.Depth = Z;
    is_int(cpy3d(&m), CUDA_SUCCESS, "cuMemcpy3D host -> device");
    p_cuMemcpyDtoH_v2(vol2, dv, sizeof(vol2));
    same = true;
    for (size_t z = 0; z < VD; z++)
        for (size_t y = 0; y < VH; y++)
            for (size_t x = 0; x < VP; x++) {
                bool in = z < Z && y < Y && x < X;
                size_t si = ((z + 1) * VH + y + 1) * VP + x + 1;
                same &= vol2[(z * VH + y) * VP + x] == (in ? vol[si] : 0);
            }
    ok(same, "the box landed at the origin, the rest untouched");
    m.Depth = VD;
    m.dstZ = 1;
    is_int(cpy3d(&m), CUDA_ERROR_INVALID_VALUE, "a box past the end of the volume is refused");

    /* Managed memory: the device pointer is host memory. */
    CUdeviceptr mp;
    is_int(p_cuMemAllocManaged(&mp, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS, "managed");
    unsigned char *mh = (unsigned char *)(uintptr_t)mp;
    mh[12345] = 77;
    unsigned char got = 0;
    p_cuMemcpyDtoH_v2(&got, mp + 12345, 1);
    p_cuMemsetD8_v2(mp, 9, 100);
    ok(got == 77 && mh[0] == 9 && mh[99] == 9 && mh[100] == 0,
       "host writes are seen by copies, sets by the host");
    is_int(p_cuMemFree_v2(mp), CUDA_SUCCESS, "free managed");

    /* Arrays keep their texels. */
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad = {64, 8, CU_AD_FORMAT_UNSIGNED_INT8, 4};
    is_int(p_cuArrayCreate_v2(&arr, &ad), CUDA_SUCCESS, "array");
    unsigned char tex[256], tex2[256];
    for (int i = 0; i < 256; i++)
        tex[i] = (unsigned char)(255 - i);
    is_int(htoa(arr, 256, tex, 256), CUDA_SUCCESS, "cuMemcpyHtoA_v2");
    is_int(atoh(tex2, arr, 256, 256), CUDA_SUCCESS, "cuMemcpyAtoH_v2");
    ok(memcmp(tex, tex2, 256) == 0, "array round trip");
    is_int(htoa(arr, 64 * 8 * 4 - 10, tex, 11), CUDA_ERROR_INVALID_VALUE, "past the array");
    p_cuArrayDestroy(arr);

    /* The whole 15 GiB device, touched at both ends: host memory follows what is touched. */
    long before = rss_kib();
    CUdeviceptr big;
    size_t total = 0, fr = 0;
    p_cuMemGetInfo_v2(&fr, &total);
    is_int(p_cuMemAlloc_v2(&big, fr - (64 << 20)), CUDA_SUCCESS, "nearly all of the device");
    static unsigned char mb[1 << 20];
    memset(mb, 0x42, sizeof(mb));
    is_int(p_cuMemcpyHtoD_v2(big + fr - (64 << 20) - sizeof(mb), mb, sizeof(mb)), CUDA_SUCCESS,
           "write its last MiB");
    is_int(p_cuMemcpyHtoD_v2(big, mb, sizeof(mb)), CUDA_SUCCESS, "and its first");
    memset(mb, 0, sizeof(mb));
    p_cuMemcpyDtoH_v2(mb, big + fr - (64 << 20) - sizeof(mb), sizeof(mb));
    ok(mb[0] == 0x42 && mb[sizeof(mb) - 1] == 0x42, "the last MiB reads back");
    long after = rss_kib();
    ok(after - before < 256 * 1024, "host memory grew by %ld KiB for %zu bytes of device memory",
       after - before, fr - (64 << 20));
    is_int(p_cuMemFree_v2(big), CUDA_SUCCESS, "free");

    p_cuCtxDestroy_v2(ctx);
    simtest_cleanup();
    return tap_done();
}
