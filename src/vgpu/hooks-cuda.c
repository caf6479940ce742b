/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exported CUDA driver hooks (the list: cuda.def). Each one forwards to the real driver; the
 * memory hooks reserve in the claim's region BEFORE the driver allocates (rollback on failure)
 * and give back only AFTER the driver freed, so the driver's physical usage of the claim never
 * exceeds what the region admits.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "abi/cuda_array.h"

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

/* The request is for the current context's device; the context (one driver query for both)
 * is recorded with the allocation. */
static void for_current_context(struct vgpu_alloc_req *req)
{
    req->dev = tracked(vgpu_device_current_ctx(&req->ctx, &req->ctx_id));
    req->ctx_known = true;
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
        void *h = vgpu_hook_for_answer(symbol, cudaVersion, *pfn);
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
        void *h = vgpu_hook_for_answer(symbol, cudaVersion, *pfn);
        if (h)
            *pfn = h;
    }
    return r;
}

/* ------------------------------------------------------------------ device pointers */
/* Every allocation goes through vgpu_alloc_charged() (charge.c); each hook only describes the
 * driver call (an alloc_* callback) and its undo. */

struct dptr_call {
    CUdeviceptr *dptr;
    size_t bytes;
    unsigned flags;
    bool managed;
};

static CUresult dptr_alloc(void *arg, uint64_t *key, uint64_t *taken)
{
    struct dptr_call *c = arg;
    CUresult r = c->managed ? REAL(cuMemAllocManaged)(c->dptr, c->bytes, c->flags)
                            : REAL(cuMemAlloc_v2)(c->dptr, c->bytes);
    if (r == CUDA_SUCCESS) {
        *key = *c->dptr;
        *taken = c->bytes; /* exactly the size asked for */
    }
    return r;
}

static void dptr_undo(void *arg, uint64_t key)
{
    (void)arg;
    REAL(cuMemFree_v2)((CUdeviceptr)key);
}

static CUresult dptr_free(void *arg, uint64_t key)
{
    (void)arg;
    return REAL(cuMemFree_v2)((CUdeviceptr)key);
}

static CUresult alloc_plain(struct dptr_call *c)
{
    struct vgpu_alloc_req req = {.kind = VGPU_KIND_DPTR, .reserve = c->bytes};
    for_current_context(&req);
    return vgpu_alloc_charged(&req, dptr_alloc, dptr_undo, c);
}

GS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    NEED(cuMemAlloc_v2);
    PASSTHROUGH(cuMemAlloc_v2, dptr, bytesize);
    struct dptr_call c = {.dptr = dptr, .bytes = bytesize};
    return alloc_plain(&c);
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    NEED(cuMemAllocManaged);
    PASSTHROUGH(cuMemAllocManaged, dptr, bytesize, flags);
    struct dptr_call c = {.dptr = dptr, .bytes = bytesize, .flags = flags, .managed = true};
    return alloc_plain(&c);
}

/* The widest row padding a driver applies to cuMemAllocPitch: the worst case is reserved before
 * the call and the difference to the pitch the driver chose is given back right after. */
#define PITCH_ALIGN_WORST 512u

static uint64_t pitch_worst(uint64_t width, uint64_t height)
{
    uint64_t up = gs_sat_add_u64(width, PITCH_ALIGN_WORST - 1);
    up = up == UINT64_MAX ? UINT64_MAX : up / PITCH_ALIGN_WORST * PITCH_ALIGN_WORST;
    return gs_sat_mul_u64(up, height);
}

struct pitch_call {
    CUdeviceptr *dptr;
    size_t *pitch;
    size_t width, height;
    unsigned elem;
};

static CUresult pitch_alloc(void *arg, uint64_t *key, uint64_t *taken)
{
    struct pitch_call *c = arg;
    size_t pitch = 0;
    CUresult r = REAL(cuMemAllocPitch_v2)(c->dptr, &pitch, c->width, c->height, c->elem);
    if (r == CUDA_SUCCESS) {
        *key = *c->dptr;
        *taken = gs_sat_mul_u64(pitch, c->height);
        if (c->pitch)
            *c->pitch = pitch;
    }
    return r;
}

GS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                      size_t Height, unsigned int ElementSizeBytes)
{
    NEED(cuMemAllocPitch_v2);
    PASSTHROUGH(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    struct pitch_call c = {.dptr = dptr,
                           .pitch = pPitch,
                           .width = WidthInBytes,
                           .height = Height,
                           .elem = ElementSizeBytes};
    struct vgpu_alloc_req req = {.kind = VGPU_KIND_DPTR,
                                 .reserve = pitch_worst(WidthInBytes, Height)};
    for_current_context(&req);
    return vgpu_alloc_charged(&req, pitch_alloc, dptr_undo, &c);
}

GS_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    NEED(cuMemFree_v2);
    PASSTHROUGH(cuMemFree_v2, dptr);
    return vgpu_free_charged(dptr, VGPU_KIND_DPTR, dptr_free, NULL);
}

/* ------------------------------------------------------------------ stream-ordered allocator */

enum async_variant { ASYNC_PLAIN, ASYNC_PTSZ, POOL_PLAIN, POOL_PTSZ };

struct async_call {
    enum async_variant v;
    CUdeviceptr *dptr;
    size_t size;
    CUmemoryPool pool;  /* explicit pool (POOL_*), else NULL */
    void *charged_pool; /* the pool that is charged (explicit or the device's current one) */
    CUstream s;
};

static CUresult async_alloc(void *arg, uint64_t *key, uint64_t *taken)
{
    struct async_call *c = arg;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    switch (c->v) {
    case ASYNC_PLAIN:
        r = REAL(cuMemAllocAsync)(c->dptr, c->size, c->s);
        break;
    case ASYNC_PTSZ:
        r = REAL(cuMemAllocAsync_ptsz)(c->dptr, c->size, c->s);
        break;
    case POOL_PLAIN:
        r = REAL(cuMemAllocFromPoolAsync)(c->dptr, c->size, c->pool, c->s);
        break;
    case POOL_PTSZ:
        r = REAL(cuMemAllocFromPoolAsync_ptsz)(c->dptr, c->size, c->pool, c->s);
        break;
    }
    if (r == CUDA_SUCCESS) {
        *key = *c->dptr;
        *taken = c->size; /* pool allocations: the pool's reservation is what counts */
    }
    return r;
}

/* Growth that did not fit: hand the block back and shrink the pool to what it uses. */
static void async_undo(void *arg, uint64_t key)
{
    struct async_call *c = arg;
    REAL(cuMemFreeAsync)((CUdeviceptr)key, c->s);
    if (REAL(cuStreamSynchronize))
        REAL(cuStreamSynchronize)(c->s);
    if (c->charged_pool && REAL(cuMemPoolTrimTo))
        REAL(cuMemPoolTrimTo)((CUmemoryPool)c->charged_pool, 0);
}

/* The device the driver allocates on: a pool's location; for cuMemAllocAsync the device of the
 * stream's context (its current pool), whatever context is current (none included). Returns
 * CUDA_SUCCESS with *out NULL when nothing is tracked there, or the error to answer with. */
static CUresult async_device(const struct async_call *c, struct vgpu_device **out)
{
    *out = NULL;
    struct vgpu_device *only = vgpu_device_only();
    if (only) {
        *out = only; /* one visible device: every stream and pool is on it */
        return CUDA_SUCCESS;
    }
    if (c->pool) {
        *out = vgpu_pool_device(c->pool);
        if (!*out) {
            /* a pool libvgpu cannot place: never charged to a guessed device */
            VLOG(VGPU_LOG_ERROR, "pool %p: its device is unknown; allocation refused", c->pool);
            return CUDA_ERROR_INVALID_VALUE;
        }
        return CUDA_SUCCESS;
    }
    CUcontext ctx = NULL;
    if (REAL(cuStreamGetCtx)) {
        CUresult r;
        CALL_REAL(r, cuStreamGetCtx, c->s, &ctx);
        if (r != CUDA_SUCCESS)
            return r; /* no such stream, or the NULL stream without a current context */
        *out = vgpu_ctx_device(ctx);
    } else {
        *out = vgpu_device_current_strict();
    }
    if (!*out) {
        VLOG(VGPU_LOG_ERROR, "stream %p: its device is unknown; allocation refused", c->s);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return CUDA_SUCCESS;
}

static CUresult alloc_async(struct async_call *c)
{
    vgpu_devices_init();
    if (!atomic_load_explicit(&vgpu_any_tracked, memory_order_relaxed)) {
        uint64_t key, taken;
        return async_alloc(c, &key, &taken);
    }
    vgpu_ctx_current(NULL, NULL); /* first sight of the current context charges its overhead */
    struct vgpu_device *d;
    CUresult r = async_device(c, &d);
    if (r != CUDA_SUCCESS)
        return r;
    /* pool memory belongs to no context: the driver keeps it past the context's end */
    struct vgpu_alloc_req req = {
        .dev = tracked(d), .kind = VGPU_KIND_DPTR, .reserve = c->size, .ctx_known = true};
    if (req.dev) {
        c->charged_pool = c->pool ? (void *)c->pool : vgpu_pool_of_device(d->cu_dev);
        req.pool = c->charged_pool; /* no pool known: charged per allocation */
    }
    return vgpu_alloc_charged(&req, async_alloc, async_undo, c);
}

GS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    NEED(cuMemAllocAsync);
    if (vgpu_depth)
        return REAL(cuMemAllocAsync)(dptr, bytesize, hStream);
    struct async_call c = {.v = ASYNC_PLAIN, .dptr = dptr, .size = bytesize, .s = hStream};
    return alloc_async(&c);
}

GS_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    NEED(cuMemAllocAsync_ptsz);
    if (vgpu_depth)
        return REAL(cuMemAllocAsync_ptsz)(dptr, bytesize, hStream);
    struct async_call c = {.v = ASYNC_PTSZ, .dptr = dptr, .size = bytesize, .s = hStream};
    return alloc_async(&c);
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream)
{
    NEED(cuMemAllocFromPoolAsync);
    if (vgpu_depth)
        return REAL(cuMemAllocFromPoolAsync)(dptr, bytesize, pool, hStream);
    struct async_call c = {
        .v = POOL_PLAIN, .dptr = dptr, .size = bytesize, .pool = pool, .s = hStream};
    return alloc_async(&c);
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream)
{
    NEED(cuMemAllocFromPoolAsync_ptsz);
    if (vgpu_depth)
        return REAL(cuMemAllocFromPoolAsync_ptsz)(dptr, bytesize, pool, hStream);
    struct async_call c = {
        .v = POOL_PTSZ, .dptr = dptr, .size = bytesize, .pool = pool, .s = hStream};
    return alloc_async(&c);
}

struct free_async_call {
    bool ptsz;
    CUstream s;
};

static CUresult async_free(void *arg, uint64_t key)
{
    struct free_async_call *c = arg;
    return c->ptsz ? REAL(cuMemFreeAsync_ptsz)((CUdeviceptr)key, c->s)
                   : REAL(cuMemFreeAsync)((CUdeviceptr)key, c->s);
}

static CUresult free_async(bool ptsz, CUdeviceptr dptr, CUstream s)
{
    struct free_async_call c = {.ptsz = ptsz, .s = s};
    if (vgpu_depth)
        return async_free(&c, dptr);
    return vgpu_free_charged(dptr, VGPU_KIND_DPTR, async_free, &c);
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

GS_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    NEED(cuMemPoolCreate);
    CUresult r;
    CALL_REAL(r, cuMemPoolCreate, pool, poolProps);
    if (r == CUDA_SUCCESS && !vgpu_depth && pool && poolProps &&
        poolProps->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        vgpu_pool_created(*pool, vgpu_device_of(poolProps->location.id)); /* its location */
    return r;
}

GS_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    NEED(cuMemPoolDestroy);
    CUresult r;
    CALL_REAL(r, cuMemPoolDestroy, pool);
    if (r == CUDA_SUCCESS && !vgpu_depth)
        vgpu_pool_destroyed(pool); /* the charge stays until the driver really lets go */
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
/*
 * A physical allocation (cuMemCreate handle) is charged until the driver really frees it: the
 * driver keeps it while the handle is unreleased OR any mapping of it exists (cuMemRelease of a
 * mapped handle frees nothing). The handle's record counts the references the driver holds
 * (1 for the handle, +1 per cuMemMap, +1 per cuMemRetainAllocationHandle, -1 per cuMemRelease /
 * cuMemUnmap); the charge goes back when it reaches 0. Map, unmap, retain and release are
 * serialised with their driver call (vmm_lock), so the books follow the driver's order exactly.
 */
static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;

void vgpu_vmm_atfork_child(void)
{
    pthread_mutex_init(&vmm_lock, NULL); /* held across the driver's map/unmap/release */
}

struct vmm_call {
    CUmemGenericAllocationHandle *handle;
    size_t size;
    const CUmemAllocationProp *prop;
    unsigned long long flags;
};

static CUresult vmm_alloc(void *arg, uint64_t *key, uint64_t *taken)
{
    struct vmm_call *c = arg;
    CUresult r = REAL(cuMemCreate)(c->handle, c->size, c->prop, c->flags);
    if (r == CUDA_SUCCESS) {
        *key = *c->handle;
        *taken = c->size;
    }
    return r;
}

static void vmm_undo(void *arg, uint64_t key)
{
    (void)arg;
    REAL(cuMemRelease)((CUmemGenericAllocationHandle)key);
}

GS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    NEED(cuMemCreate);
    PASSTHROUGH(cuMemCreate, handle, size, prop, flags);
    struct vgpu_device *d = NULL;
    if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        d = tracked(vgpu_device_of(prop->location.id));
    struct vmm_call c = {.handle = handle, .size = size, .prop = prop, .flags = flags};
    struct vgpu_alloc_req req = {.dev = d, .kind = VGPU_KIND_VMM, .reserve = size};
    return vgpu_alloc_charged(&req, vmm_alloc, vmm_undo, &c);
}

/* Drop `n` driver references of handle h (vmm_lock held); the charge goes back at the last. */
static void vmm_unref_locked(uint64_t h, int32_t n)
{
    struct vgpu_alloc a;
    if (vgpu_table_add_refs(h, VGPU_KIND_VMM, -n, &a) == 1)
        vgpu_alloc_uncharge(&a);
}

GS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    NEED(cuMemRelease);
    PASSTHROUGH(cuMemRelease, handle);
    pthread_mutex_lock(&vmm_lock);
    CUresult r;
    CALL_REAL(r, cuMemRelease, handle);
    if (r == CUDA_SUCCESS)
        vmm_unref_locked(handle, 1);
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

GS_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    NEED(cuMemMap);
    PASSTHROUGH(cuMemMap, ptr, size, offset, handle, flags);
    pthread_mutex_lock(&vmm_lock);
    CUresult r;
    CALL_REAL(r, cuMemMap, ptr, size, offset, handle, flags);
    if (r == CUDA_SUCCESS && vgpu_table_add_refs(handle, VGPU_KIND_VMM, 1, NULL) == 0) {
        struct vgpu_alloc m = {.key = ptr, .size = size, .aux = handle, .kind = VGPU_KIND_MAPPING};
        struct vgpu_alloc old;
        int ins = vgpu_table_insert(&m, &old);
        if (ins == 1)
            vmm_unref_locked(old.aux, 1); /* the driver let us map over it: it was gone */
        if (ins < 0) {
            /* no memory to remember the mapping: undo it rather than lose track */
            vgpu_depth++;
            REAL(cuMemUnmap)(ptr, size);
            vgpu_depth--;
            vmm_unref_locked(handle, 1);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

GS_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    NEED(cuMemUnmap);
    PASSTHROUGH(cuMemUnmap, ptr, size);
    pthread_mutex_lock(&vmm_lock);
    CUresult r;
    CALL_REAL(r, cuMemUnmap, ptr, size);
    if (r == CUDA_SUCCESS) {
        /* the range may hold several mappings back to back: drop each one's reference */
        uint64_t cur = ptr, end = gs_sat_add_u64(ptr, size);
        struct vgpu_alloc m;
        while (cur < end && vgpu_table_remove(cur, VGPU_KIND_MAPPING, &m)) {
            vmm_unref_locked(m.aux, 1);
            if (!m.size)
                break;
            cur = gs_sat_add_u64(cur, m.size);
        }
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

GS_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    NEED(cuMemRetainAllocationHandle);
    PASSTHROUGH(cuMemRetainAllocationHandle, handle, addr);
    pthread_mutex_lock(&vmm_lock);
    CUresult r;
    CALL_REAL(r, cuMemRetainAllocationHandle, handle, addr);
    if (r == CUDA_SUCCESS && handle)
        vgpu_table_add_refs(*handle, VGPU_KIND_VMM, 1, NULL);
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

/* ------------------------------------------------------------------ arrays */

struct array_call {
    uint64_t bytes; /* what is charged for it */
    void **handle;
    const void *desc;
    unsigned levels;
    uint32_t kind; /* VGPU_KIND_ARRAY (2D or 3D by dims) or VGPU_KIND_MIPMAP */
    bool three_d;
    bool v1; /* the pre-3.2 entry point (32-bit descriptor) */
};

static CUresult array_alloc(void *arg, uint64_t *key, uint64_t *taken)
{
    struct array_call *c = arg;
    CUresult r;
    if (c->kind == VGPU_KIND_MIPMAP)
        r = REAL(cuMipmappedArrayCreate)((CUmipmappedArray *)c->handle, c->desc, c->levels);
    else if (c->three_d && c->v1)
        r = REAL(cuArray3DCreate)((CUarray *)c->handle, c->desc);
    else if (c->three_d)
        r = REAL(cuArray3DCreate_v2)((CUarray *)c->handle, c->desc);
    else if (c->v1)
        r = REAL(cuArrayCreate)((CUarray *)c->handle, c->desc);
    else
        r = REAL(cuArrayCreate_v2)((CUarray *)c->handle, c->desc);
    if (r == CUDA_SUCCESS) {
        *key = (uint64_t)(uintptr_t)*c->handle;
        *taken = c->bytes;
    }
    return r;
}

static void array_undo(void *arg, uint64_t key)
{
    struct array_call *c = arg;
    if (c->kind == VGPU_KIND_MIPMAP)
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): handle round-trips through the table key */
        REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)(uintptr_t)key);
    else
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): handle round-trips through the table key */
        REAL(cuArrayDestroy)((CUarray)(uintptr_t)key);
}

/* Bytes to charge for an array: its size, or for a format/channel count we do not know the
 * largest texel any known format has (never less than it can cost). */
static uint64_t array_charge(uint64_t bytes, size_t w, size_t h, size_t d, unsigned levels)
{
    if (bytes)
        return bytes;
    uint64_t worst = levels ? gs_cuda_mipmap_bytes(w, h, d, CU_AD_FORMAT_FLOAT, 4, levels)
                            : gs_cuda_array_bytes(w, h, d, CU_AD_FORMAT_FLOAT, 4);
    return worst ? worst : GS_CUDA_TEXEL_MAX;
}

static CUresult array_create(uint64_t bytes, struct array_call *c)
{
    c->bytes = bytes;
    struct vgpu_alloc_req req = {.kind = c->kind, .reserve = bytes};
    for_current_context(&req);
    return vgpu_alloc_charged(&req, array_alloc, array_undo, c);
}

GS_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    NEED(cuArrayCreate_v2);
    PASSTHROUGH(cuArrayCreate_v2, pHandle, pAllocateArray);
    if (!pAllocateArray)
        return REAL(cuArrayCreate_v2)(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR *a = pAllocateArray;
    struct array_call c = {.handle = (void **)pHandle, .desc = a, .kind = VGPU_KIND_ARRAY};
    uint64_t bytes = gs_cuda_array_bytes(a->Width, a->Height, 1, a->Format, a->NumChannels);
    return array_create(array_charge(bytes, a->Width, a->Height, 1, 0), &c);
}

GS_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle,
                                      const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    NEED(cuArray3DCreate_v2);
    PASSTHROUGH(cuArray3DCreate_v2, pHandle, pAllocateArray);
    if (!pAllocateArray)
        return REAL(cuArray3DCreate_v2)(pHandle, pAllocateArray);
    const CUDA_ARRAY3D_DESCRIPTOR *a = pAllocateArray;
    struct array_call c = {
        .handle = (void **)pHandle, .desc = a, .kind = VGPU_KIND_ARRAY, .three_d = true};
    uint64_t bytes = gs_cuda_array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels);
    return array_create(array_charge(bytes, a->Width, a->Height, a->Depth, 0), &c);
}

/* The pre-3.2 names (32-bit dimensions): the same arrays, charged the same way. */
GS_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    NEED(cuArrayCreate);
    PASSTHROUGH(cuArrayCreate, pHandle, pAllocateArray);
    if (!pAllocateArray)
        return REAL(cuArrayCreate)(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR_v1 *a = pAllocateArray;
    struct array_call c = {
        .handle = (void **)pHandle, .desc = a, .kind = VGPU_KIND_ARRAY, .v1 = true};
    uint64_t bytes = gs_cuda_array_bytes(a->Width, a->Height, 1, a->Format, a->NumChannels);
    return array_create(array_charge(bytes, a->Width, a->Height, 1, 0), &c);
}

GS_EXPORT CUresult cuArray3DCreate(CUarray *pHandle,
                                   const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    NEED(cuArray3DCreate);
    PASSTHROUGH(cuArray3DCreate, pHandle, pAllocateArray);
    if (!pAllocateArray)
        return REAL(cuArray3DCreate)(pHandle, pAllocateArray);
    const CUDA_ARRAY3D_DESCRIPTOR_v1 *a = pAllocateArray;
    struct array_call c = {.handle = (void **)pHandle,
                           .desc = a,
                           .kind = VGPU_KIND_ARRAY,
                           .three_d = true,
                           .v1 = true};
    uint64_t bytes = gs_cuda_array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels);
    return array_create(array_charge(bytes, a->Width, a->Height, a->Depth, 0), &c);
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
    struct array_call c = {
        .handle = (void **)pHandle, .desc = a, .levels = numMipmapLevels, .kind = VGPU_KIND_MIPMAP};
    uint64_t bytes = gs_cuda_mipmap_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels,
                                          numMipmapLevels);
    return array_create(
        array_charge(bytes, a->Width, a->Height, a->Depth, numMipmapLevels ? numMipmapLevels : 1),
        &c);
}

static CUresult array_destroy(void *arg, uint64_t key)
{
    (void)arg;
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): handle round-trips through the table key */
    return REAL(cuArrayDestroy)((CUarray)(uintptr_t)key);
}

static CUresult mipmap_destroy(void *arg, uint64_t key)
{
    (void)arg;
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): handle round-trips through the table key */
    return REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)(uintptr_t)key);
}

GS_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    NEED(cuArrayDestroy);
    PASSTHROUGH(cuArrayDestroy, hArray);
    return vgpu_free_charged((uint64_t)(uintptr_t)hArray, VGPU_KIND_ARRAY, array_destroy, NULL);
}

GS_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    NEED(cuMipmappedArrayDestroy);
    PASSTHROUGH(cuMipmappedArrayDestroy, hMipmappedArray);
    return vgpu_free_charged((uint64_t)(uintptr_t)hMipmappedArray, VGPU_KIND_MIPMAP, mipmap_destroy,
                             NULL);
}

/* ------------------------------------------------------------------ graph memory */

GS_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    NEED(cuGraphAddMemAllocNode);
    PASSTHROUGH(cuGraphAddMemAllocNode, phGraphNode, hGraph, dependencies, numDependencies,
                nodeParams);
    CUresult r;
    CALL_REAL(r, cuGraphAddMemAllocNode, phGraphNode, hGraph, dependencies, numDependencies,
              nodeParams);
    if (r == CUDA_SUCCESS && nodeParams &&
        nodeParams->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
        struct vgpu_device *d = tracked(vgpu_device_of(nodeParams->poolProps.location.id));
        if (d)
            vgpu_graph_add_alloc(hGraph, vgpu_device_index(d), nodeParams->bytesize);
    }
    return r;
}

static CUresult instantiated(CUresult r, CUgraphExec *phGraphExec, CUgraph hGraph)
{
    if (r == CUDA_SUCCESS && phGraphExec && !vgpu_depth) {
        int dev = vgpu_graph_instantiated(hGraph, *phGraphExec);
        if (dev >= 0)
            vgpu_graph_mem_sync(dev); /* a driver may reserve at instantiation */
    }
    return r;
}

GS_EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    NEED(cuGraphInstantiate);
    CUresult r;
    CALL_REAL(r, cuGraphInstantiate, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
    return instantiated(r, phGraphExec, hGraph);
}

GS_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                         CUgraphNode *phErrorNode, char *logBuffer,
                                         size_t bufferSize)
{
    NEED(cuGraphInstantiate_v2);
    CUresult r;
    CALL_REAL(r, cuGraphInstantiate_v2, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
    return instantiated(r, phGraphExec, hGraph);
}

GS_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                               unsigned long long flags)
{
    NEED(cuGraphInstantiateWithFlags);
    CUresult r;
    CALL_REAL(r, cuGraphInstantiateWithFlags, phGraphExec, hGraph, flags);
    return instantiated(r, phGraphExec, hGraph);
}

GS_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    NEED(cuGraphExecDestroy);
    CUresult r;
    CALL_REAL(r, cuGraphExecDestroy, hGraphExec);
    if (r == CUDA_SUCCESS && !vgpu_depth &&
        atomic_load_explicit(&vgpu_any_graph_mem, memory_order_relaxed))
        vgpu_graph_forget(hGraphExec);
    return r;
}

GS_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    NEED(cuGraphDestroy);
    CUresult r;
    CALL_REAL(r, cuGraphDestroy, hGraph);
    if (r == CUDA_SUCCESS && !vgpu_depth &&
        atomic_load_explicit(&vgpu_any_graph_mem, memory_order_relaxed))
        vgpu_graph_forget(hGraph);
    return r;
}

GS_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    NEED(cuDeviceGraphMemTrim);
    CUresult r;
    CALL_REAL(r, cuDeviceGraphMemTrim, device);
    if (r == CUDA_SUCCESS && !vgpu_depth) {
        struct vgpu_device *d = tracked(vgpu_device_of(device));
        if (d)
            vgpu_graph_mem_sync(vgpu_device_index(d)); /* the trimmed memory goes back */
    }
    return r;
}

/* ------------------------------------------------------------------ v1 entry points */
/* The pre-3.2 ABI (32-bit sizes and pointers), still exported by the driver: charged exactly
 * like their _v2 counterparts (a v1 pointer is freed by cuMemFree or cuMemFree_v2). */

struct v1_call {
    CUdeviceptr_v1 *dptr;
    unsigned int *pitch;
    unsigned int bytes, width, height, elem;
    bool is_pitch;
};

static CUresult v1_alloc(void *arg, uint64_t *key, uint64_t *taken)
{
    struct v1_call *c = arg;
    CUresult r;
    if (c->is_pitch) {
        unsigned int pitch = 0;
        r = REAL(cuMemAllocPitch)(c->dptr, &pitch, c->width, c->height, c->elem);
        if (r == CUDA_SUCCESS) {
            *taken = gs_sat_mul_u64(pitch, c->height);
            if (c->pitch)
                *c->pitch = pitch;
        }
    } else {
        r = REAL(cuMemAlloc)(c->dptr, c->bytes);
    }
    if (r == CUDA_SUCCESS)
        *key = *c->dptr;
    return r;
}

static void v1_undo(void *arg, uint64_t key)
{
    (void)arg;
    REAL(cuMemFree)((CUdeviceptr_v1)key);
}

static CUresult v1_free(void *arg, uint64_t key)
{
    (void)arg;
    return REAL(cuMemFree)((CUdeviceptr_v1)key);
}

GS_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    NEED(cuMemAlloc);
    PASSTHROUGH(cuMemAlloc, dptr, bytesize);
    struct v1_call c = {.dptr = dptr, .bytes = bytesize};
    struct vgpu_alloc_req req = {.kind = VGPU_KIND_DPTR, .reserve = bytesize};
    for_current_context(&req);
    return vgpu_alloc_charged(&req, v1_alloc, v1_undo, &c);
}

GS_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                   unsigned int WidthInBytes, unsigned int Height,
                                   unsigned int ElementSizeBytes)
{
    NEED(cuMemAllocPitch);
    PASSTHROUGH(cuMemAllocPitch, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    struct v1_call c = {.dptr = dptr,
                        .pitch = pPitch,
                        .width = WidthInBytes,
                        .height = Height,
                        .elem = ElementSizeBytes,
                        .is_pitch = true};
    struct vgpu_alloc_req req = {.kind = VGPU_KIND_DPTR,
                                 .reserve = pitch_worst(WidthInBytes, Height)};
    for_current_context(&req);
    return vgpu_alloc_charged(&req, v1_alloc, v1_undo, &c);
}

GS_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    NEED(cuMemFree);
    PASSTHROUGH(cuMemFree, dptr);
    return vgpu_free_charged(dptr, VGPU_KIND_DPTR, v1_free, NULL);
}

/* The same view as cuMemGetInfo_v2, clamped to 32 bits like the driver's v1. */
GS_EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    NEED(cuMemGetInfo);
    if (vgpu_depth || !free || !total)
        return REAL(cuMemGetInfo)(free, total);
    size_t f = 0, t = 0;
    CUresult r = cuMemGetInfo_v2(&f, &t);
    if (r != CUDA_SUCCESS)
        return r;
    *free = (unsigned int)GS_MIN(f, (size_t)UINT32_MAX);
    *total = (unsigned int)GS_MIN(t, (size_t)UINT32_MAX);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ memory views */

GS_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    NEED(cuMemGetInfo_v2);
    if (vgpu_depth)
        return REAL(cuMemGetInfo_v2)(free, total);
    vgpu_devices_init();
    /* the driver first: its own error without a current context, and what the device really
     * has free (others may hold most of it) */
    CUresult r = REAL(cuMemGetInfo_v2)(free, total);
    if (r != CUDA_SUCCESS || !free || !total)
        return r;
    struct vgpu_device *d = vgpu_device_only();
    d = tracked(d ? d : vgpu_device_current_strict());
    if (!d || !d->cfg.memory_limit)
        return r; /* unlimited: the physical truth */
    struct vgpu_mem_view v;
    vgpu_memory_view(d, *total, *free, &v);
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
    vgpu_memory_view(d, 0, UINT64_MAX, &v);
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

/* Set once device discovery is done: from then on an uncapped launch costs two relaxed loads. */
static atomic_bool launch_devices_known;

#define LAUNCH_HOOK(name, key, stream, ...)                                                        \
    do {                                                                                           \
        NEED(name);                                                                                \
        if (GS_LIKELY(atomic_load_explicit(&launch_devices_known, memory_order_relaxed) &&         \
                      !atomic_load_explicit(&vgpu_any_compute_cap, memory_order_relaxed)))         \
            return REAL(name)(__VA_ARGS__);                                                        \
        if (limiter_off()) {                                                                       \
            if (!vgpu_depth) {                                                                     \
                vgpu_devices_init();                                                               \
                if (vgpu_devices_ready())                                                          \
                    atomic_store_explicit(&launch_devices_known, true, memory_order_relaxed);      \
            }                                                                                      \
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

static CUresult graph_launch_limited(CUgraphExec hGraphExec, CUstream hStream)
{
    LAUNCH_HOOK(cuGraphLaunch, launch_key(hGraphExec, 0xffffffffu, 0, 0, 0, 0, 0), hStream,
                hGraphExec, hStream);
}

static CUresult graph_launch_limited_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    LAUNCH_HOOK(cuGraphLaunch_ptsz, launch_key(hGraphExec, 0xffffffffu, 0, 0, 0, 0, 0), hStream,
                hGraphExec, hStream);
}

/* A graph launch gives the exec's memory-allocation nodes physical memory (graphs.c): reserve
 * it before, settle after; then the compute limiter's path. */
static CUresult graph_launch(bool ptsz, CUgraphExec hGraphExec, CUstream hStream)
{
    if (GS_LIKELY(vgpu_depth || !atomic_load_explicit(&vgpu_any_graph_mem, memory_order_relaxed)))
        return ptsz ? graph_launch_limited_ptsz(hGraphExec, hStream)
                    : graph_launch_limited(hGraphExec, hStream);
    struct vgpu_graph_launch gl;
    if (vgpu_graph_launch_begin(hGraphExec, &gl) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = ptsz ? graph_launch_limited_ptsz(hGraphExec, hStream)
                      : graph_launch_limited(hGraphExec, hStream);
    vgpu_graph_launch_end(&gl);
    return r;
}

GS_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    NEED(cuGraphLaunch);
    return graph_launch(false, hGraphExec, hStream);
}

GS_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    NEED(cuGraphLaunch_ptsz);
    return graph_launch(true, hGraphExec, hStream);
}
