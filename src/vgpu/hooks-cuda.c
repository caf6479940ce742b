/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exported CUDA driver hooks (the list: cuda.def). Each one forwards to the real driver; the
 * memory hooks reserve in the claim's region BEFORE the driver allocates (rollback on failure)
 * and give back only AFTER the driver freed, so the driver's physical usage of the claim never
 * exceeds what the region admits.
 */
#include <errno.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

#define REAL(name) (gs_real_cu.name)

/* Resolve the driver on first use; a missing function reads as "not initialised". */
#define NEED(name)                                                                                 \
    do {                                                                                           \
        if (GS_UNLIKELY(!REAL(name)) && (vgpu_depth || !vgpu_cuda_ready() || !REAL(name)))         \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

/* Forward without accounting: nested call from inside the driver, or nothing tracked. */
#define PASSTHROUGH(name, ...)                                                                     \
    do {                                                                                           \
        if (vgpu_depth)                                                                            \
            return REAL(name)(__VA_ARGS__);                                                        \
        vgpu_devices_init();                                                                       \
        if (!atomic_load_explicit(&vgpu_any_tracked, memory_order_relaxed))                        \
            return REAL(name)(__VA_ARGS__);                                                        \
    } while (0)

#define CALL_REAL(res, name, ...)                                                                  \
    do {                                                                                           \
        vgpu_depth++;                                                                              \
        res = REAL(name)(__VA_ARGS__);                                                             \
        vgpu_depth--;                                                                              \
    } while (0)

static struct vgpu_device *tracked(struct vgpu_device *d)
{
    return d && d->region ? d : NULL;
}

/* ------------------------------------------------------------------ initialisation */

GS_EXPORT CUresult cuInit(unsigned int Flags)
{
    NEED(cuInit);
    CUresult r;
    CALL_REAL(r, cuInit, Flags);
    if (r == CUDA_SUCCESS && !vgpu_depth)
        vgpu_devices_init();
    return r;
}

GS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags)
{
    NEED(cuGetProcAddress);
    CUresult r;
    CALL_REAL(r, cuGetProcAddress, symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn && *pfn) {
        void *h = vgpu_hook_for_real(*pfn);
        if (!h)
            h = vgpu_hook_for_name(symbol);
        if (h)
            *pfn = h;
    }
    return r;
}

GS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    NEED(cuGetProcAddress_v2);
    CUresult r;
    CALL_REAL(r, cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn && *pfn) {
        void *h = vgpu_hook_for_real(*pfn);
        if (!h)
            h = vgpu_hook_for_name(symbol);
        if (h)
            *pfn = h;
    }
    return r;
}

/* ------------------------------------------------------------------ device pointers */

static void untrack(const struct vgpu_alloc *a);

/* Track a new allocation; if the table cannot hold it, undo it (never an untracked charge). */
static CUresult track(uint64_t key, uint64_t size, void *pool, struct vgpu_device *d, uint32_t kind)
{
    struct vgpu_alloc a = {
        .key = key, .size = size, .pool = pool, .dev = vgpu_device_index(d), .kind = kind};
    struct vgpu_alloc old;
    int r = vgpu_table_insert(&a, &old);
    if (r < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (r == 1)
        untrack(&old); /* freed behind our back: its charge goes back now */
    return CUDA_SUCCESS;
}

static CUresult alloc_plain(CUdeviceptr *dptr, size_t bytesize, unsigned int flags, bool managed)
{
    struct vgpu_device *d = tracked(vgpu_device_current());
    CUresult r;
    if (!d) {
        if (managed)
            CALL_REAL(r, cuMemAllocManaged, dptr, bytesize, flags);
        else
            CALL_REAL(r, cuMemAlloc_v2, dptr, bytesize);
        return r;
    }
    if (vgpu_charge(d, bytesize) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (managed)
        CALL_REAL(r, cuMemAllocManaged, dptr, bytesize, flags);
    else
        CALL_REAL(r, cuMemAlloc_v2, dptr, bytesize);
    if (r != CUDA_SUCCESS) {
        vgpu_uncharge(d, bytesize);
        return r;
    }
    if (track(*dptr, bytesize, NULL, d, VGPU_KIND_DPTR) != CUDA_SUCCESS) {
        CALL_REAL(r, cuMemFree_v2, *dptr);
        vgpu_uncharge(d, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

GS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    NEED(cuMemAlloc_v2);
    PASSTHROUGH(cuMemAlloc_v2, dptr, bytesize);
    return alloc_plain(dptr, bytesize, 0, false);
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    NEED(cuMemAllocManaged);
    PASSTHROUGH(cuMemAllocManaged, dptr, bytesize, flags);
    return alloc_plain(dptr, bytesize, flags, true);
}

GS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                      size_t Height, unsigned int ElementSizeBytes)
{
    NEED(cuMemAllocPitch_v2);
    PASSTHROUGH(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    struct vgpu_device *d = tracked(vgpu_device_current());
    CUresult r;
    if (!d) {
        CALL_REAL(r, cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
        return r;
    }
    /* Reserve the lower bound first, then the padding the driver actually chose. */
    uint64_t lower = gs_sat_mul_u64(WidthInBytes, Height);
    if (vgpu_charge(d, lower) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CALL_REAL(r, cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        vgpu_uncharge(d, lower);
        return r;
    }
    uint64_t actual = pPitch ? gs_sat_mul_u64(*pPitch, Height) : lower;
    if (actual > lower && vgpu_charge(d, actual - lower) < 0) {
        CALL_REAL(r, cuMemFree_v2, *dptr);
        vgpu_uncharge(d, lower);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < lower) {
        vgpu_uncharge(d, lower - actual);
    }
    if (track(*dptr, actual, NULL, d, VGPU_KIND_DPTR) != CUDA_SUCCESS) {
        CALL_REAL(r, cuMemFree_v2, *dptr);
        vgpu_uncharge(d, actual);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

/* Give back what an allocation charged, after the driver freed it. */
static void untrack(const struct vgpu_alloc *a)
{
    struct vgpu_device *d = vgpu_device_at(a->dev);
    if (a->pool)
        vgpu_pool_after_alloc(a->pool, d, 0);
    else
        vgpu_uncharge(d, a->size);
}

GS_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    NEED(cuMemFree_v2);
    PASSTHROUGH(cuMemFree_v2, dptr);
    struct vgpu_alloc a;
    bool known = vgpu_table_remove(dptr, VGPU_KIND_DPTR, &a);
    CUresult r;
    CALL_REAL(r, cuMemFree_v2, dptr); /* untracked frees are forwarded as they are */
    if (known) {
        if (r == CUDA_SUCCESS)
            untrack(&a);
        else
            vgpu_table_insert(&a, NULL);
    }
    return r;
}

/* ------------------------------------------------------------------ stream-ordered allocator */

enum async_variant { ASYNC_PLAIN, ASYNC_PTSZ, POOL_PLAIN, POOL_PTSZ };

static CUresult real_alloc_async(enum async_variant v, CUdeviceptr *dptr, size_t size,
                                 CUmemoryPool pool, CUstream s)
{
    CUresult r = CUDA_ERROR_NOT_FOUND;
    vgpu_depth++;
    switch (v) {
    case ASYNC_PLAIN:
        r = REAL(cuMemAllocAsync)(dptr, size, s);
        break;
    case ASYNC_PTSZ:
        r = REAL(cuMemAllocAsync_ptsz)(dptr, size, s);
        break;
    case POOL_PLAIN:
        r = REAL(cuMemAllocFromPoolAsync)(dptr, size, pool, s);
        break;
    case POOL_PTSZ:
        r = REAL(cuMemAllocFromPoolAsync_ptsz)(dptr, size, pool, s);
        break;
    }
    vgpu_depth--;
    return r;
}

static CUresult alloc_async(enum async_variant v, CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                            CUstream s)
{
    if (vgpu_depth)
        return real_alloc_async(v, dptr, size, pool, s);
    vgpu_devices_init();
    struct vgpu_device *d = tracked(vgpu_device_current());
    if (!d)
        return real_alloc_async(v, dptr, size, pool, s);
    void *p = pool ? (void *)pool : vgpu_pool_of_device(d->cu_dev);
    uint64_t head = p ? vgpu_pool_headroom(p) : 0;
    uint64_t pre = size > head ? size - head : 0;
    if (pre && vgpu_charge(d, pre) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = real_alloc_async(v, dptr, size, pool, s);
    if (r != CUDA_SUCCESS) {
        vgpu_uncharge(d, pre);
        return r;
    }
    if (!p) {
        if (track(*dptr, pre, NULL, d, VGPU_KIND_DPTR) != CUDA_SUCCESS) {
            CALL_REAL(r, cuMemFreeAsync, *dptr, s);
            vgpu_uncharge(d, pre);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        return CUDA_SUCCESS;
    }
    if (track(*dptr, 0, p, d, VGPU_KIND_DPTR) != CUDA_SUCCESS ||
        vgpu_pool_after_alloc(p, d, pre) < 0) {
        /* The pool grew past the limit: hand the block back and shrink the pool. */
        vgpu_table_remove(*dptr, VGPU_KIND_DPTR, NULL);
        CALL_REAL(r, cuMemFreeAsync, *dptr, s);
        if (REAL(cuStreamSynchronize))
            CALL_REAL(r, cuStreamSynchronize, s);
        if (REAL(cuMemPoolTrimTo))
            CALL_REAL(r, cuMemPoolTrimTo, (CUmemoryPool)p, 0);
        vgpu_pool_after_alloc(p, d, 0);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

GS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    NEED(cuMemAllocAsync);
    return alloc_async(ASYNC_PLAIN, dptr, bytesize, NULL, hStream);
}

GS_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    NEED(cuMemAllocAsync_ptsz);
    return alloc_async(ASYNC_PTSZ, dptr, bytesize, NULL, hStream);
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream)
{
    NEED(cuMemAllocFromPoolAsync);
    return alloc_async(POOL_PLAIN, dptr, bytesize, pool, hStream);
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream)
{
    NEED(cuMemAllocFromPoolAsync_ptsz);
    return alloc_async(POOL_PTSZ, dptr, bytesize, pool, hStream);
}

static CUresult free_async(bool ptsz, CUdeviceptr dptr, CUstream s)
{
    CUresult r;
    if (vgpu_depth) {
        return ptsz ? REAL(cuMemFreeAsync_ptsz)(dptr, s) : REAL(cuMemFreeAsync)(dptr, s);
    }
    struct vgpu_alloc a;
    bool known = vgpu_table_remove(dptr, VGPU_KIND_DPTR, &a);
    if (ptsz)
        CALL_REAL(r, cuMemFreeAsync_ptsz, dptr, s);
    else
        CALL_REAL(r, cuMemFreeAsync, dptr, s);
    if (known) {
        if (r == CUDA_SUCCESS)
            untrack(&a);
        else
            vgpu_table_insert(&a, NULL);
    }
    return r;
}

GS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    NEED(cuMemFreeAsync);
    return free_async(false, dptr, hStream);
}

GS_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    NEED(cuMemFreeAsync_ptsz);
    return free_async(true, dptr, hStream);
}

/* Pools release memory at synchronisation and trim: re-read what they reserve. */
#define AFTER_SYNC(r)                                                                              \
    do {                                                                                           \
        if (!vgpu_depth && atomic_load_explicit(&vgpu_any_pool, memory_order_relaxed))             \
            vgpu_pools_sync();                                                                     \
        return r;                                                                                  \
    } while (0)

GS_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    NEED(cuMemPoolTrimTo);
    CUresult r;
    CALL_REAL(r, cuMemPoolTrimTo, pool, minBytesToKeep);
    AFTER_SYNC(r);
}

GS_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    NEED(cuMemPoolSetAttribute);
    CUresult r;
    CALL_REAL(r, cuMemPoolSetAttribute, pool, attr, value);
    AFTER_SYNC(r);
}

GS_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    NEED(cuMemPoolDestroy);
    CUresult r;
    CALL_REAL(r, cuMemPoolDestroy, pool);
    if (r == CUDA_SUCCESS && !vgpu_depth)
        vgpu_pool_forget(pool);
    return r;
}

GS_EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
    NEED(cuStreamSynchronize);
    CUresult r;
    CALL_REAL(r, cuStreamSynchronize, hStream);
    AFTER_SYNC(r);
}

GS_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    NEED(cuStreamSynchronize_ptsz);
    CUresult r;
    CALL_REAL(r, cuStreamSynchronize_ptsz, hStream);
    AFTER_SYNC(r);
}

GS_EXPORT CUresult cuCtxSynchronize(void)
{
    NEED(cuCtxSynchronize);
    CUresult r;
    CALL_REAL(r, cuCtxSynchronize);
    AFTER_SYNC(r);
}

GS_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
    NEED(cuEventSynchronize);
    CUresult r;
    CALL_REAL(r, cuEventSynchronize, hEvent);
    AFTER_SYNC(r);
}

/* ------------------------------------------------------------------ VMM */

GS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    NEED(cuMemCreate);
    PASSTHROUGH(cuMemCreate, handle, size, prop, flags);
    struct vgpu_device *d = NULL;
    if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        d = tracked(vgpu_device_of(prop->location.id));
    CUresult r;
    if (!d) {
        CALL_REAL(r, cuMemCreate, handle, size, prop, flags);
        return r;
    }
    if (vgpu_charge(d, size) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CALL_REAL(r, cuMemCreate, handle, size, prop, flags);
    if (r != CUDA_SUCCESS) {
        vgpu_uncharge(d, size);
        return r;
    }
    if (track(*handle, size, NULL, d, VGPU_KIND_VMM) != CUDA_SUCCESS) {
        CALL_REAL(r, cuMemRelease, *handle);
        vgpu_uncharge(d, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult release_tracked(uint64_t key, uint32_t kind, CUresult (*real)(uint64_t))
{
    struct vgpu_alloc a;
    bool known = vgpu_table_remove(key, kind, &a);
    vgpu_depth++;
    CUresult r = real(key);
    vgpu_depth--;
    if (known) {
        if (r == CUDA_SUCCESS)
            untrack(&a);
        else
            vgpu_table_insert(&a, NULL);
    }
    return r;
}

static CUresult real_mem_release(uint64_t h)
{
    return REAL(cuMemRelease)((CUmemGenericAllocationHandle)h);
}

static CUresult real_array_destroy(uint64_t h)
{
    /* The allocation table keys every kind of allocation by a 64-bit integer; an array handle
     * goes in as a pointer and comes back here. */
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): handle round-trips through the table key */
    return REAL(cuArrayDestroy)((CUarray)(uintptr_t)h);
}

static CUresult real_mipmap_destroy(uint64_t h)
{
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): handle round-trips through the table key */
    return REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)(uintptr_t)h);
}

GS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    NEED(cuMemRelease);
    PASSTHROUGH(cuMemRelease, handle);
    return release_tracked(handle, VGPU_KIND_VMM, real_mem_release);
}

/* ------------------------------------------------------------------ arrays */

static uint64_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    default:
        return 4;
    }
}

static uint64_t array_bytes(size_t w, size_t h, size_t depth, CUarray_format f, unsigned ch)
{
    uint64_t b = gs_sat_mul_u64(format_bytes(f), ch ? ch : 1);
    b = gs_sat_mul_u64(b, w ? w : 1);
    b = gs_sat_mul_u64(b, h ? h : 1);
    return gs_sat_mul_u64(b, depth ? depth : 1);
}

static CUresult array_create(uint64_t bytes, void **out_handle, uint32_t kind,
                             CUresult (*create)(void **, const void *, unsigned), const void *desc,
                             unsigned levels)
{
    struct vgpu_device *d = tracked(vgpu_device_current());
    CUresult r;
    if (!d || vgpu_depth) {
        vgpu_depth++;
        r = create(out_handle, desc, levels);
        vgpu_depth--;
        return r;
    }
    if (vgpu_charge(d, bytes) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    vgpu_depth++;
    r = create(out_handle, desc, levels);
    vgpu_depth--;
    if (r != CUDA_SUCCESS) {
        vgpu_uncharge(d, bytes);
        return r;
    }
    if (track((uint64_t)(uintptr_t)*out_handle, bytes, NULL, d, kind) != CUDA_SUCCESS) {
        vgpu_depth++;
        if (kind == VGPU_KIND_ARRAY)
            REAL(cuArrayDestroy)((CUarray)*out_handle);
        else
            REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)*out_handle);
        vgpu_depth--;
        vgpu_uncharge(d, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult create_2d(void **h, const void *desc, unsigned levels)
{
    (void)levels;
    return REAL(cuArrayCreate_v2)((CUarray *)h, desc);
}

static CUresult create_3d(void **h, const void *desc, unsigned levels)
{
    (void)levels;
    return REAL(cuArray3DCreate_v2)((CUarray *)h, desc);
}

static CUresult create_mipmap(void **h, const void *desc, unsigned levels)
{
    return REAL(cuMipmappedArrayCreate)((CUmipmappedArray *)h, desc, levels);
}

GS_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    NEED(cuArrayCreate_v2);
    PASSTHROUGH(cuArrayCreate_v2, pHandle, pAllocateArray);
    if (!pAllocateArray)
        return REAL(cuArrayCreate_v2)(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR *a = pAllocateArray;
    return array_create(array_bytes(a->Width, a->Height, 1, a->Format, a->NumChannels),
                        (void **)pHandle, VGPU_KIND_ARRAY, create_2d, a, 0);
}

GS_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle,
                                      const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    NEED(cuArray3DCreate_v2);
    PASSTHROUGH(cuArray3DCreate_v2, pHandle, pAllocateArray);
    if (!pAllocateArray)
        return REAL(cuArray3DCreate_v2)(pHandle, pAllocateArray);
    const CUDA_ARRAY3D_DESCRIPTOR *a = pAllocateArray;
    return array_create(array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels),
                        (void **)pHandle, VGPU_KIND_ARRAY, create_3d, a, 0);
}

GS_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                          const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                          unsigned int numMipmapLevels)
{
    NEED(cuMipmappedArrayCreate);
    PASSTHROUGH(cuMipmappedArrayCreate, pHandle, pMipmappedArrayDesc, numMipmapLevels);
    const CUDA_ARRAY3D_DESCRIPTOR *a = pMipmappedArrayDesc;
    if (!a)
        return REAL(cuMipmappedArrayCreate)(pHandle, a, numMipmapLevels);
    uint64_t total = 0;
    for (unsigned l = 0; l < numMipmapLevels && l < 64; l++) {
        size_t w = a->Width >> l, h = a->Height >> l, dd = a->Depth >> l;
        total = gs_sat_add_u64(total, array_bytes(w ? w : 1, a->Height ? (h ? h : 1) : 0,
                                                  a->Depth ? (dd ? dd : 1) : 0, a->Format,
                                                  a->NumChannels));
    }
    return array_create(total, (void **)pHandle, VGPU_KIND_MIPMAP, create_mipmap, a,
                        numMipmapLevels);
}

GS_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    NEED(cuArrayDestroy);
    PASSTHROUGH(cuArrayDestroy, hArray);
    return release_tracked((uint64_t)(uintptr_t)hArray, VGPU_KIND_ARRAY, real_array_destroy);
}

GS_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    NEED(cuMipmappedArrayDestroy);
    PASSTHROUGH(cuMipmappedArrayDestroy, hMipmappedArray);
    return release_tracked((uint64_t)(uintptr_t)hMipmappedArray, VGPU_KIND_MIPMAP,
                           real_mipmap_destroy);
}

/* ------------------------------------------------------------------ memory views */

GS_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    NEED(cuMemGetInfo_v2);
    if (vgpu_depth)
        return REAL(cuMemGetInfo_v2)(free, total);
    vgpu_devices_init();
    /* strict: without a current context the driver's own error comes back */
    struct vgpu_device *d = tracked(vgpu_device_current_strict());
    if (!d || !d->cfg.memory_limit || !free || !total)
        return REAL(cuMemGetInfo_v2)(free, total); /* unlimited: the physical truth */
    struct vgpu_mem_view v;
    vgpu_memory_view(d, &v);
    *free = v.free;
    *total = v.total;
    return CUDA_SUCCESS;
}

GS_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    NEED(cuDeviceTotalMem_v2);
    if (vgpu_depth)
        return REAL(cuDeviceTotalMem_v2)(bytes, dev);
    struct vgpu_device *d = tracked(vgpu_device_of(dev));
    if (!d || !d->cfg.memory_limit || !bytes)
        return REAL(cuDeviceTotalMem_v2)(bytes, dev);
    struct vgpu_mem_view v;
    vgpu_memory_view(d, &v);
    *bytes = v.total;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ launches */

static inline bool limiter_off(void)
{
    return vgpu_depth || !atomic_load_explicit(&vgpu_any_compute_cap, memory_order_relaxed);
}

static uint64_t launch_key(const void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz)
{
    uint64_t k = (uint64_t)(uintptr_t)f;
    k = k * 31 + gx;
    k = k * 31 + gy;
    k = k * 31 + gz;
    k = k * 31 + bx;
    k = k * 31 + by;
    k = k * 31 + bz;
    return k ? k : 1;
}

#define LAUNCH_HOOK(name, key, stream, ...)                                                        \
    do {                                                                                           \
        NEED(name);                                                                                \
        if (GS_LIKELY(limiter_off())) {                                                            \
            if (!vgpu_depth)                                                                       \
                vgpu_devices_init();                                                               \
            if (limiter_off())                                                                     \
                return REAL(name)(__VA_ARGS__);                                                    \
        }                                                                                          \
        struct vgpu_launch l;                                                                      \
        vgpu_limiter_before(&l, (key), (stream));                                                  \
        CUresult r;                                                                                \
        CALL_REAL(r, name, __VA_ARGS__);                                                           \
        vgpu_limiter_after(&l, r);                                                                 \
        return r;                                                                                  \
    } while (0)

GS_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                  unsigned int gridDimZ, unsigned int blockDimX,
                                  unsigned int blockDimY, unsigned int blockDimZ,
                                  unsigned int sharedMemBytes, CUstream hStream,
                                  void **kernelParams, void **extra)
{
    LAUNCH_HOOK(cuLaunchKernel,
                launch_key(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ),
                hStream, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, hStream, kernelParams, extra);
}

GS_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void **kernelParams, void **extra)
{
    LAUNCH_HOOK(cuLaunchKernel_ptsz,
                launch_key(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ),
                hStream, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, hStream, kernelParams, extra);
}

static uint64_t config_key(const CUlaunchConfig *c, CUfunction f)
{
    if (!c)
        return launch_key(f, 0, 0, 0, 0, 0, 0);
    return launch_key(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                      c->blockDimZ);
}

GS_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                    void **extra)
{
    LAUNCH_HOOK(cuLaunchKernelEx, config_key(config, f), config ? config->hStream : NULL, config, f,
                kernelParams, extra);
}

GS_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                         void **kernelParams, void **extra)
{
    LAUNCH_HOOK(cuLaunchKernelEx_ptsz, config_key(config, f), config ? config->hStream : NULL,
                config, f, kernelParams, extra);
}

GS_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                             unsigned int gridDimY, unsigned int gridDimZ,
                                             unsigned int blockDimX, unsigned int blockDimY,
                                             unsigned int blockDimZ, unsigned int sharedMemBytes,
                                             CUstream hStream, void **kernelParams)
{
    LAUNCH_HOOK(cuLaunchCooperativeKernel,
                launch_key(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ),
                hStream, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, hStream, kernelParams);
}

GS_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                  unsigned int gridDimY, unsigned int gridDimZ,
                                                  unsigned int blockDimX, unsigned int blockDimY,
                                                  unsigned int blockDimZ,
                                                  unsigned int sharedMemBytes, CUstream hStream,
                                                  void **kernelParams)
{
    LAUNCH_HOOK(cuLaunchCooperativeKernel_ptsz,
                launch_key(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ),
                hStream, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, hStream, kernelParams);
}

GS_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    LAUNCH_HOOK(cuGraphLaunch, launch_key(hGraphExec, 0xffffffffu, 0, 0, 0, 0, 0), hStream,
                hGraphExec, hStream);
}

GS_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    LAUNCH_HOOK(cuGraphLaunch_ptsz, launch_key(hGraphExec, 0xffffffffu, 0, 0, 0, 0, 0), hStream,
                hGraphExec, hStream);
}
