/* SPDX-License-Identifier: Apache-2.0 */
#include "abi/cuda_array.h"

#include "base/macros.h"

unsigned gs_cuda_format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

unsigned gs_cuda_texel_bytes(CUarray_format f, unsigned channels)
{
    if (channels != 1 && channels != 2 && channels != 4)
        return 0;
    return gs_cuda_format_bytes(f) * channels;
}

static uint64_t level_bytes(uint64_t w, uint64_t h, uint64_t d, uint64_t texel)
{
    return gs_sat_mul_u64(gs_sat_mul_u64(gs_sat_mul_u64(w, h ? h : 1), d ? d : 1), texel);
}

uint64_t gs_cuda_array_bytes(size_t width, size_t height, size_t depth, CUarray_format f,
                             unsigned channels)
{
    uint64_t t = gs_cuda_texel_bytes(f, channels);
    if (!t)
        return 0;
    return level_bytes(width, height, depth, t);
}

uint64_t gs_cuda_mipmap_bytes(size_t width, size_t height, size_t depth, CUarray_format f,
                              unsigned channels, unsigned levels)
{
    uint64_t t = gs_cuda_texel_bytes(f, channels);
    if (!t || !levels)
        return 0;
    uint64_t total = 0;
    for (unsigned l = 0; l < levels && l < 64; l++) {
        uint64_t w = GS_MAX((uint64_t)width >> l, 1),
                 h = height ? GS_MAX((uint64_t)height >> l, 1) : 0,
                 z = depth ? GS_MAX((uint64_t)depth >> l, 1) : 0;
        total = gs_sat_add_u64(total, level_bytes(w, h, z, t));
    }
    return total;
}
