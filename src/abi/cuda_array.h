/* SPDX-License-Identifier: Apache-2.0 */
/* Bytes of CUDA arrays and mipmapped arrays (one rule for gpusim, which allocates them, and
 * libvgpu, which charges them). Compiled into both (libvgpu does not link the common library). */
#ifndef GS_COMMON_CUDA_ARRAY_H
#define GS_COMMON_CUDA_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "abi/cuda_abi.h"

/* Largest texel of a known format (4 channels of 32 bits): libvgpu charges it for a format or
 * channel count it does not know, so an unknown format is never charged less than it can cost. */
#define GS_CUDA_TEXEL_MAX 16u

/* Bytes per channel of a format; 0 for a format this code does not know. */
unsigned gs_cuda_format_bytes(CUarray_format f);
/* Bytes per texel (format x channels, channels 1, 2 or 4); 0 when either is unknown. */
unsigned gs_cuda_texel_bytes(CUarray_format f, unsigned channels);
/* Bytes of a W x H x D array (H and D of 0 mean 1), saturating; 0 when the format or channel
 * count is unknown (gpusim refuses it, libvgpu charges GS_CUDA_TEXEL_MAX per texel). */
uint64_t gs_cuda_array_bytes(size_t width, size_t height, size_t depth, CUarray_format f,
                             unsigned channels);
/* Sum of the levels of a mipmapped array (level l is W>>l x H>>l x D>>l, each at least 1 where
 * the dimension exists), saturating; 0 when the format or channel count is unknown or levels is
 * 0. Levels beyond 64 add nothing (every dimension is 1 by then). */
uint64_t gs_cuda_mipmap_bytes(size_t width, size_t height, size_t depth, CUarray_format f,
                              unsigned channels, unsigned levels);

#endif /* GS_COMMON_CUDA_ARRAY_H */
