/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: copies and sets. gpusim keeps no device data (kernels compute nothing), so a
 * copy or set only checks its device range and takes time on its stream: bytes / bandwidth
 * (PCIe bandwidth for host<->device, memory bandwidth for device<->device and sets), after the
 * work already queued on that stream. Copies use the copy engines: they are not kernels, do not
 * occupy the device timeline and do not count in NVML's utilisation. Device memory reads as zeros
 * (device-to-host copies zero the host buffer).
 */
#include <string.h>

#include "sim/cuda-internal.h"

/* Device index holding [ptr, ptr + n): an allocation or a VMM mapping; -1 if none. */
static int device_of_range(CUdeviceptr ptr, size_t n)
{
    int dev = -1;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, ptr);
    for (size_t i = 0; !e && i < cu_g.allocs.cap; i++) {
        const struct sim_map_entry *c = &cu_g.allocs.e[i];
        if (c->key && ptr > c->key && ptr - c->key < c->size)
            e = c; /* interior pointer: a scan */
    }
    if (e && n <= e->size - (ptr - e->key))
        dev = e->dev;
    pthread_mutex_unlock(&cu_g.mem_lock);
    return dev;
}

/* Queue `bytes` at `gbps` (GB/s = bytes/ns) on the stream; returns when it completes. */
static uint64_t stream_transfer(struct sim_stream *s, uint64_t bytes, int gbps)
{
    uint64_t cost = bytes / (uint64_t)(gbps > 0 ? gbps : 1);
    uint64_t now = sim_now_ns(), cur = __atomic_load_n(&s->tail_ns, __ATOMIC_RELAXED), end;
    do {
        end = gs_sat_add_u64(GS_MAX(now, cur), cost);
    } while (!__atomic_compare_exchange_n(&s->tail_ns, &cur, end, true, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    uint64_t c = __atomic_load_n(&s->ctx->tail_ns, __ATOMIC_RELAXED);
    while (c < end && !__atomic_compare_exchange_n(&s->ctx->tail_ns, &c, end, true,
                                                   __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
    return end;
}

enum dir { H2D, D2H, D2D, SET };

static CUresult copy(enum dir dir, CUdeviceptr dptr, CUdeviceptr dsrc, const void *in, void *out,
                     size_t n, CUstream hStream, bool sync)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    if ((dir == H2D && !in) || (dir == D2H && !out))
        return CUDA_ERROR_INVALID_VALUE;
    int dev = device_of_range(dptr, n);
    if (dev < 0 || (dir == D2D && device_of_range(dsrc, n) < 0))
        return CUDA_ERROR_INVALID_VALUE;
    const struct sim_device_cfg *d = &cu_g.cfg.dev[dev];
    uint64_t end = stream_transfer(s, n, dir == H2D || dir == D2H ? d->pcie_gbps : d->mem_gbps);
    if (dir == D2H)
        memset(out, 0, n);
    if (sync)
        cu_wait_until(end);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy(H2D, dstDevice, 0, srcHost, NULL, ByteCount, NULL, true);
}

CU_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy(D2H, srcDevice, 0, NULL, dstHost, ByteCount, NULL, true);
}

CU_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy(D2D, dstDevice, srcDevice, NULL, NULL, ByteCount, NULL, true);
}

CU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                     CUstream hStream)
{
    return copy(H2D, dstDevice, 0, srcHost, NULL, ByteCount, hStream, false);
}

CU_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    return copy(D2H, srcDevice, 0, NULL, dstHost, ByteCount, hStream, false);
}

CU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    return copy(D2D, dstDevice, srcDevice, NULL, NULL, ByteCount, hStream, false);
}

CU_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    (void)uc;
    return copy(SET, dstDevice, 0, NULL, NULL, N, NULL, true);
}

CU_API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    (void)ui;
    if (N > SIZE_MAX / 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (dstDevice % 4)
        return CUDA_ERROR_INVALID_VALUE;
    return copy(SET, dstDevice, 0, NULL, NULL, N * 4, NULL, true);
}

CU_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    (void)uc;
    return copy(SET, dstDevice, 0, NULL, NULL, N, hStream, false);
}

CU_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    (void)ui;
    if (N > SIZE_MAX / 4 || dstDevice % 4)
        return CUDA_ERROR_INVALID_VALUE;
    return copy(SET, dstDevice, 0, NULL, NULL, N * 4, hStream, false);
}

/* A unified address that is not gpusim's is a host pointer. */
static void *host_ptr(CUdeviceptr p)
{
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): with unified addressing this is a host pointer */
    return (void *)(uintptr_t)p;
}

/* cuMemcpy[Async]: unified addressing, each side a device allocation or host memory. gpusim's
 * device addresses lie at or above CU_VA_BASE: one there that is no allocation is refused. Host to
 * host copies the bytes, in stream order. */
static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream,
                             bool sync)
{
    bool dd = device_of_range(dst, n) >= 0, sd = device_of_range(src, n) >= 0;
    if (dd && sd)
        return copy(D2D, dst, src, NULL, NULL, n, hStream, sync);
    if ((!dd && dst >= CU_VA_BASE) || (!sd && src >= CU_VA_BASE)) {
        CUresult r;
        return cu_stream_resolve(hStream, &r) ? CUDA_ERROR_INVALID_VALUE : r;
    }
    if (dd)
        return copy(H2D, dst, 0, host_ptr(src), NULL, n, hStream, sync);
    if (sd)
        return copy(D2H, src, 0, NULL, host_ptr(dst), n, hStream, sync);
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    cu_wait_until(__atomic_load_n(&s->tail_ns, __ATOMIC_ACQUIRE));
    memmove(host_ptr(dst), host_ptr(src), n);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return unified_copy(dst, src, ByteCount, NULL, true);
}

CU_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return unified_copy(dst, src, ByteCount, CU_STREAM_PER_THREAD, true);
}

CU_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return unified_copy(dst, src, ByteCount, hStream, false);
}

CU_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                   CUstream hStream)
{
    return unified_copy(dst, src, ByteCount, hStream, false);
}
