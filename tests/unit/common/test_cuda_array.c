/* SPDX-License-Identifier: Apache-2.0 */
/* The one array-size rule (abi/cuda_array.c) gpusim allocates by and libvgpu charges by:
 * formats, channels, dimensions of 0, mipmap levels, saturation, unknown formats. */
#include "abi/cuda_array.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    is_uint(gs_cuda_format_bytes(CU_AD_FORMAT_UNSIGNED_INT8), 1, "uint8: 1 byte");
    is_uint(gs_cuda_format_bytes(CU_AD_FORMAT_SIGNED_INT16), 2, "int16: 2 bytes");
    is_uint(gs_cuda_format_bytes(CU_AD_FORMAT_HALF), 2, "half: 2 bytes");
    is_uint(gs_cuda_format_bytes(CU_AD_FORMAT_FLOAT), 4, "float: 4 bytes");
    is_uint(gs_cuda_format_bytes(CU_AD_FORMAT_SIGNED_INT32), 4, "int32: 4 bytes");
    is_uint(gs_cuda_format_bytes((CUarray_format)0x7f), 0, "an unknown format: 0 (unknown)");
    is_uint(gs_cuda_texel_bytes(CU_AD_FORMAT_FLOAT, 4), 16, "float4: 16 bytes");
    is_uint(gs_cuda_texel_bytes(CU_AD_FORMAT_FLOAT, 3), 0, "3 channels: unknown");
    is_uint(gs_cuda_texel_bytes(CU_AD_FORMAT_FLOAT, 0), 0, "0 channels: unknown");
    ok(GS_CUDA_TEXEL_MAX == gs_cuda_texel_bytes(CU_AD_FORMAT_FLOAT, 4),
       "GS_CUDA_TEXEL_MAX is the largest known texel");

    is_uint(gs_cuda_array_bytes(1024, 768, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4), 1024 * 768 * 4,
            "2D: width x height x texel");
    is_uint(gs_cuda_array_bytes(100, 0, 0, CU_AD_FORMAT_HALF, 1), 200,
            "1D: a height and depth of 0 count as 1");
    is_uint(gs_cuda_array_bytes(16, 16, 16, CU_AD_FORMAT_FLOAT, 2), 16 * 16 * 16 * 8,
            "3D: width x height x depth x texel");
    is_uint(gs_cuda_array_bytes(16, 16, 16, (CUarray_format)0x7f, 1), 0,
            "unknown format: 0 (gpusim refuses it, libvgpu charges the largest texel)");
    is_uint(gs_cuda_array_bytes(SIZE_MAX, SIZE_MAX, 2, CU_AD_FORMAT_FLOAT, 4), UINT64_MAX,
            "saturates instead of wrapping");

    /* 8x8 float: 256 + 4x4 (64) + 2x2 (16) + 1x1 (4) */
    is_uint(gs_cuda_mipmap_bytes(8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 4), 256 + 64 + 16 + 4,
            "mipmap: the sum of its levels");
    /* levels past the smallest size stay 1 texel each, in every existing dimension */
    is_uint(gs_cuda_mipmap_bytes(2, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 4), 2 + 1 + 1 + 1,
            "mipmap 1D: levels shrink to 1, never 0");
    is_uint(gs_cuda_mipmap_bytes(4, 4, 4, CU_AD_FORMAT_UNSIGNED_INT8, 1, 2), 64 + 8,
            "mipmap 3D: every dimension halves");
    is_uint(gs_cuda_mipmap_bytes(8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0), 0, "0 levels: 0");
    is_uint(gs_cuda_mipmap_bytes(1, 1, 1, CU_AD_FORMAT_FLOAT, 1, 1000), 64 * 4,
            "absurd level counts stop at 64 levels");
    return tap_done();
}
