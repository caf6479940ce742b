/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: device memory. Nothing is committed on the host: a device pointer is a
 * synthetic address from a per-device bump allocator, recorded in a hash map (O(1) alloc/free)
 * with the bytes charged to the device in the shared state. See docs/internals/gpusim.md for
 * what each API charges.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "abi/cuda_array.h"
#include "sim/cuda-internal.h"

static uint64_t round_up(uint64_t v, uint64_t a)
{
    uint64_t r = gs_sat_add_u64(v, a - 1);
    return r - r % a;
}

/* Next synthetic address in a region of CU_VA_PER_DEVICE bytes (one per device, one for VMM
 * reservations; the v1 entry points' region lies below 4 GiB), mem_lock held. After 16 TiB of
 * allocations (3.75 GiB for v1) the region wraps around. */
uint64_t cu_va_alloc_locked(int slot, uint64_t size, uint64_t align)
{
    uint64_t base = CU_VA_BASE + (uint64_t)slot * CU_VA_PER_DEVICE, end = base + CU_VA_PER_DEVICE;
    if (slot == CU_VA_SLOT_LOW) {
        base = CU_VA_LOW_BASE;
        end = CU_VA_LOW_END;
    }
    uint64_t step = round_up(size ? size : 1, CU_ADDR_ALIGN);
    uint64_t a = round_up(cu_g.next_va[slot], align);
    if (a < base || a > end || step > end - a)
        a = base;
    cu_g.next_va[slot] = a + step;
    return a;
}

/* Give e a fresh address and insert it (mem_lock held). After a wrap a start address still in
 * use is skipped, so one is never handed out twice. 0, or -ENOMEM. */
static int place_locked(struct sim_map *m, struct sim_map_entry *e, int slot, uint64_t align)
{
    int r = -EEXIST;
    for (int tries = 0; tries < 64 && r == -EEXIST; tries++) {
        e->key = cu_va_alloc_locked(slot, e->size, align);
        r = sim_map_put(m, e);
    }
    return r < 0 ? -ENOMEM : 0;
}

void cu_mem_reset(void)
{
    sim_map_clear(&cu_g.allocs);
    sim_map_clear(&cu_g.reserves);
    sim_map_clear(&cu_g.hosts);
    memset(cu_g.graph_mem, 0, sizeof(cu_g.graph_mem));
    cu_g.pools = NULL;
    memset(cu_g.default_pool, 0, sizeof(cu_g.default_pool));
    memset(cu_g.current_pool, 0, sizeof(cu_g.current_pool));
}

/* A context-owned allocation (aux = the context: cuCtxDestroy frees it). */
static CUresult alloc_charged_in(CUdeviceptr *dptr, uint64_t bytes, uint32_t kind,
                                 struct sim_ctx *c, int slot)
{
    int dev = c->dev;
    if (sim_mem_charge(cu_g.st, dev, bytes) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_map_entry e = {.size = bytes, .aux = c, .kind = kind, .dev = dev};
    pthread_mutex_lock(&cu_g.mem_lock);
    int r = place_locked(&cu_g.allocs, &e, slot, CU_ADDR_ALIGN);
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (r < 0) {
        sim_mem_uncharge(cu_g.st, dev, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = e.key;
    return CUDA_SUCCESS;
}

static CUresult alloc_charged(CUdeviceptr *dptr, uint64_t bytes, uint32_t kind, struct sim_ctx *c)
{
    return alloc_charged_in(dptr, bytes, kind, c, c->dev);
}

CU_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_charged(dptr, bytesize, CU_ALLOC_PLAIN, c);
}

CU_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                   size_t Height, unsigned int ElementSizeBytes)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t pitch = round_up(WidthInBytes, CU_ADDR_ALIGN);
    uint64_t bytes = gs_sat_mul_u64(pitch, Height);
    if (bytes == UINT64_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = alloc_charged(dptr, bytes, CU_ALLOC_PITCH, c);
    if (r == CUDA_SUCCESS)
        *pPitch = pitch;
    return r;
}

CU_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    /* Host-visible: the device pointer is the address of host memory (unified memory). */
    if (sim_mem_charge(cu_g.st, c->dev, bytesize) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *h = cu_backing_managed(bytesize);
    struct sim_map_entry e = {.key = (uint64_t)(uintptr_t)h,
                              .size = bytesize,
                              .aux = c,
                              .kind = CU_ALLOC_MANAGED,
                              .dev = c->dev,
                              .host = h};
    int rc = -ENOMEM;
    if (h) {
        pthread_mutex_lock(&cu_g.mem_lock);
        rc = sim_map_put(&cu_g.allocs, &e);
        pthread_mutex_unlock(&cu_g.mem_lock);
    }
    if (rc < 0) {
        if (h)
            munmap(h, bytesize);
        sim_mem_uncharge(cu_g.st, c->dev, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = e.key;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ v1 entry points */
/* The pre-3.2 ABI: 32-bit sizes and device pointers (CUdeviceptr_v1 is an unsigned int). Their
 * allocations come from a region below 4 GiB so the pointer fits; they are ordinary device
 * memory otherwise (cuMemFree_v2 frees them too). */
CU_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    r = alloc_charged_in(&p, bytesize, CU_ALLOC_PLAIN, c, CU_VA_SLOT_LOW);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)p;
    return r;
}

CU_API CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                unsigned int WidthInBytes, unsigned int Height,
                                unsigned int ElementSizeBytes)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t pitch = round_up(WidthInBytes, CU_ADDR_ALIGN);
    uint64_t bytes = gs_sat_mul_u64(pitch, Height);
    if (pitch > UINT32_MAX || bytes > UINT32_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY; /* not addressable through the 32-bit ABI */
    CUdeviceptr p = 0;
    r = alloc_charged_in(&p, bytes, CU_ALLOC_PITCH, c, CU_VA_SLOT_LOW);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)p;
        *pPitch = (unsigned int)pitch;
    }
    return r;
}

CU_API CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    CU_CHECK_INIT();
    if (dptr == 0)
        return CUDA_SUCCESS;
    return cu_free_ptr(dptr);
}

/* Sizes above 4 GiB do not fit the 32-bit ABI: they saturate at UINT_MAX. */
CU_API CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    size_t f = 0, t = 0;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuMemGetInfo_v2(&f, &t);
    if (r != CUDA_SUCCESS)
        return r;
    *free = (unsigned int)GS_MIN(f, (size_t)UINT32_MAX);
    *total = (unsigned int)GS_MIN(t, (size_t)UINT32_MAX);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ pools */
/* Shrink a pool's reserve to max(used, keep) in granules and give the memory back to the
 * device. mem_lock held: the device's books drop before the pool's
 * CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT does, so no reader ever sees a reservation below what the
 * device still holds for the pool (libvgpu charges a pool what that attribute says; an
 * attribute that dropped first let another allocation in while the memory was still held). */
static void pool_trim_locked(struct sim_pool *p, uint64_t keep)
{
    uint64_t target = GS_MAX(round_up(p->used, CU_GRANULARITY), round_up(keep, CU_GRANULARITY));
    if (p->destroyed)
        target = round_up(p->used, CU_GRANULARITY);
    if (p->used == 0 && p->destroyed)
        target = 0;
    if (p->reserved <= target)
        return;
    sim_mem_uncharge(cu_g.st, p->dev, p->reserved - target);
    p->reserved = target;
}

void cu_pools_trim_at_sync(void)
{
    if (!cu_g.pools)
        return;
    pthread_mutex_lock(&cu_g.mem_lock);
    for (struct sim_pool *p = cu_g.pools; p; p = p->next)
        pool_trim_locked(p, p->release_threshold);
    pthread_mutex_unlock(&cu_g.mem_lock);
}

static struct sim_pool *pool_new(int ordinal, bool is_default)
{
    struct sim_pool *p = cu_obj_new(CU_OBJ_POOL, sizeof(*p));
    if (!p)
        return NULL;
    p->ordinal = ordinal;
    p->dev = cu_g.vis[ordinal];
    p->is_default = is_default;
    pthread_mutex_lock(&cu_g.mem_lock);
    p->next = cu_g.pools;
    cu_g.pools = p;
    pthread_mutex_unlock(&cu_g.mem_lock);
    return p;
}

struct sim_pool *cu_default_pool_locked(int ordinal)
{
    if (!cu_g.default_pool[ordinal]) {
        pthread_mutex_unlock(&cu_g.lock); /* pool_new takes cu_g.lock */
        struct sim_pool *p = pool_new(ordinal, true);
        pthread_mutex_lock(&cu_g.lock);
        if (!p)
            return NULL;
        if (cu_g.default_pool[ordinal]) {
            /* another thread won: this one stays unused (never charged) */
            p->destroyed = true;
        } else {
            cu_g.default_pool[ordinal] = p;
        }
    }
    if (!cu_g.current_pool[ordinal])
        cu_g.current_pool[ordinal] = cu_g.default_pool[ordinal];
    return cu_g.current_pool[ordinal];
}

static void pool_unlink_locked(struct sim_pool *p)
{
    for (struct sim_pool **pp = &cu_g.pools; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
}

static CUresult pool_alloc(CUdeviceptr *dptr, uint64_t size, struct sim_pool *p)
{
    pthread_mutex_lock(&cu_g.mem_lock);
    uint64_t need = gs_sat_add_u64(p->used, size), grow = 0;
    if (need > p->reserved)
        grow = round_up(need - p->reserved, CU_GRANULARITY);
    if (p->max_size && gs_sat_add_u64(p->reserved, grow) > p->max_size) {
        pthread_mutex_unlock(&cu_g.mem_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (grow && sim_mem_charge(cu_g.st, p->dev, grow) < 0) {
        /* Like the driver: release what other pools hold unused, then retry once. */
        cu_pools_trim_at_sync();
        if (sim_mem_charge(cu_g.st, p->dev, grow) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct sim_map_entry e = {.size = size, .aux = p, .kind = CU_ALLOC_POOL, .dev = p->dev};
    pthread_mutex_lock(&cu_g.mem_lock);
    int r = place_locked(&cu_g.allocs, &e, p->dev, CU_ADDR_ALIGN);
    if (r == 0) {
        p->reserved += grow;
        p->used += size;
        p->reserved_high = GS_MAX(p->reserved_high, p->reserved);
        p->used_high = GS_MAX(p->used_high, p->used);
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (r < 0) {
        if (grow)
            sim_mem_uncharge(cu_g.st, p->dev, grow);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = e.key;
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.lock);
    struct sim_pool *p = cu_default_pool_locked(s->ctx->ordinal);
    pthread_mutex_unlock(&cu_g.lock);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return pool_alloc(dptr, bytesize, p);
}

CU_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return cuMemAllocAsync(dptr, bytesize, hStream);
}

CU_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    struct sim_pool *p = (struct sim_pool *)pool;
    if (!dptr || bytesize == 0 || !cu_valid(p, CU_OBJ_POOL) || p->destroyed)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(dptr, bytesize, p);
}

CU_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream)
{
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}

/* Free any kind of pointer allocation (not VMM ranges, module globals, nor another process's
 * memory opened by cuIpcOpenMemHandle: the driver frees only what cuMemAlloc* returned, and an
 * opened pointer's bytes are charged to their owner, never to the opener; only
 * cuIpcCloseMemHandle unmaps it). */
CUresult cu_free_ptr(CUdeviceptr dptr)
{
    struct sim_map_entry e;
    pthread_mutex_lock(&cu_g.mem_lock);
    struct sim_map_entry *hit = sim_map_get(&cu_g.allocs, dptr);
    if (!hit || hit->kind == CU_ALLOC_RESERVE || hit->kind == CU_ALLOC_MAPPING ||
        hit->kind == CU_ALLOC_GLOBAL || hit->kind == CU_ALLOC_IPC) {
        pthread_mutex_unlock(&cu_g.mem_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    cu_alloc_del_locked(dptr, &e);
    uint64_t give = 0;
    struct sim_pool *p = e.aux;
    if (e.kind == CU_ALLOC_GRAPH) {
        /* The device's graph memory keeps the bytes until cuDeviceGraphMemTrim. */
        struct sim_graph_mem *gm = &cu_g.graph_mem[e.dev];
        gm->used = gs_sat_sub_u64(gm->used, e.size);
    } else if (e.kind == CU_ALLOC_POOL) {
        p->used = gs_sat_sub_u64(p->used, e.size);
        if (p->destroyed) {
            pool_trim_locked(p, 0);
            if (p->used == 0 && p->reserved == 0) {
                pool_unlink_locked(p);
                pthread_mutex_unlock(&cu_g.mem_lock);
                cu_obj_del(p);
                return CUDA_SUCCESS;
            }
        }
    } else {
        give = e.size;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (give)
        sim_mem_uncharge(cu_g.st, e.dev, give);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CU_CHECK_INIT();
    if (dptr == 0)
        return CUDA_SUCCESS;
    return cu_free_ptr(dptr);
}

CU_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    CUresult r;
    if (!cu_stream_resolve(hStream, &r))
        return r;
    if (dptr == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_free_ptr(dptr);
}

CU_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return cuMemFreeAsync(dptr, hStream);
}

CU_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t used, tot;
    sim_mem_info(cu_g.st, c->dev, &used, &tot);
    *total = tot;
    *free = gs_sat_sub_u64(tot, used);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CU_CHECK_INIT();
    CUresult res = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *hit = sim_map_get(&cu_g.allocs, dptr);
    if (!hit) {
        /* Interior pointer: a scan (rare call). */
        for (size_t i = 0; i < cu_g.allocs.cap; i++) {
            const struct sim_map_entry *e = &cu_g.allocs.e[i];
            if (e->key && e->kind != CU_ALLOC_RESERVE && dptr > e->key && dptr - e->key < e->size) {
                hit = e;
                break;
            }
        }
    }
    if (!hit) {
        /* The device pointer of mapped page-locked host memory (unified addressing: the host
         * address): the driver answers with that allocation's base and size (numba's
         * device_memory_size on a mapped_array relies on it). */
        for (size_t i = 0; i < cu_g.hosts.cap; i++) {
            const struct sim_map_entry *e = &cu_g.hosts.e[i];
            if (e->key && dptr >= e->key && dptr - e->key < e->size) {
                hit = e;
                break;
            }
        }
    }
    if (hit && hit->kind != CU_ALLOC_RESERVE) {
        if (pbase)
            *pbase = hit->key;
        if (psize)
            *psize = hit->size;
        res = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return res;
}

CU_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CU_CHECK_INIT();
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&cu_g.lock);
    cu_default_pool_locked(dev);
    struct sim_pool *p = cu_g.default_pool[dev];
    pthread_mutex_unlock(&cu_g.lock);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool_out = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CU_CHECK_INIT();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&cu_g.lock);
    struct sim_pool *p = cu_default_pool_locked(dev);
    pthread_mutex_unlock(&cu_g.lock);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CU_CHECK_INIT();
    struct sim_pool *p = (struct sim_pool *)pool;
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!cu_valid(p, CU_OBJ_POOL) || p->destroyed || p->ordinal != dev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.lock);
    cu_g.current_pool[dev] = p;
    pthread_mutex_unlock(&cu_g.lock);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CU_CHECK_INIT();
    if (!pool || !poolProps)
        return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(poolProps->location.id) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_pool *p = pool_new(poolProps->location.id, false);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->max_size = poolProps->maxSize;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CU_CHECK_INIT();
    struct sim_pool *p = (struct sim_pool *)pool;
    if (!cu_valid(p, CU_OBJ_POOL) || p->destroyed || p->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.lock);
    if (cu_g.current_pool[p->ordinal] == p)
        cu_g.current_pool[p->ordinal] = cu_g.default_pool[p->ordinal];
    pthread_mutex_unlock(&cu_g.lock);
    pthread_mutex_lock(&cu_g.mem_lock);
    p->destroyed = true;
    pool_trim_locked(p, 0);
    bool gone = p->used == 0;
    if (gone)
        pool_unlink_locked(p);
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (gone)
        cu_obj_del(p);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CU_CHECK_INIT();
    struct sim_pool *p = (struct sim_pool *)pool;
    if (!cu_valid(p, CU_OBJ_POOL) || p->destroyed || !value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&cu_g.mem_lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = !p->reuse[attr]; /* all enabled by default */
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = p->release_threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        *(cuuint64_t *)value = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        *(cuuint64_t *)value = p->reserved_high;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = p->used;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = p->used_high;
        break;
    default:
        r = CUDA_ERROR_INVALID_VALUE;
        break;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

CU_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CU_CHECK_INIT();
    struct sim_pool *p = (struct sim_pool *)pool;
    if (!cu_valid(p, CU_OBJ_POOL) || p->destroyed || !value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&cu_g.mem_lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse[attr] = !*(int *)value;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->release_threshold = *(cuuint64_t *)value;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        /* Only resetting to 0 is allowed: the mark restarts from the current value. */
        if (*(cuuint64_t *)value != 0)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
            p->reserved_high = p->reserved;
        else
            p->used_high = p->used;
        break;
    default:
        r = CUDA_ERROR_INVALID_VALUE;
        break;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

CU_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CU_CHECK_INIT();
    struct sim_pool *p = (struct sim_pool *)pool;
    if (!cu_valid(p, CU_OBJ_POOL) || p->destroyed)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    pool_trim_locked(p, minBytesToKeep);
    pthread_mutex_unlock(&cu_g.mem_lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ VMM */
static int prop_device(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return -1;
    return cu_dev_of(prop->location.id) < 0 ? -1 : prop->location.id;
}

CU_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    CU_CHECK_INIT();
    if (!granularity || prop_device(prop) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = CU_GRANULARITY;
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    CU_CHECK_INIT();
    int ordinal = prop_device(prop);
    if (!handle || ordinal < 0 || flags != 0 || size == 0 || size % CU_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = cu_g.vis[ordinal];
    if (sim_mem_charge(cu_g.st, dev, size) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_vmm *h = cu_obj_new(CU_OBJ_VMM, sizeof(*h));
    if (!h) {
        sim_mem_uncharge(cu_g.st, dev, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->dev = dev;
    h->size = size;
    h->handles = 1;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

/* Like the driver, the physical memory of a handle stays until it is released (every
 * cuMemCreate / cuMemRetainAllocationHandle) and its last mapping is unmapped. mem_lock held;
 * returns true when the memory goes back. */
static bool vmm_gone_locked(const struct sim_vmm *h)
{
    return h->handles == 0 && h->maps == 0;
}

static void vmm_gone(struct sim_vmm *h)
{
    sim_mem_uncharge(cu_g.st, h->dev, h->size);
    cu_obj_del(h);
}

CU_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CU_CHECK_INIT();
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): the driver API's handles are integers */
    struct sim_vmm *h = (struct sim_vmm *)(uintptr_t)handle;
    pthread_mutex_lock(&cu_g.mem_lock);
    if (!cu_valid(h, CU_OBJ_VMM) || h->handles == 0) {
        pthread_mutex_unlock(&cu_g.mem_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    h->handles--;
    bool gone = vmm_gone_locked(h);
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (gone)
        vmm_gone(h);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags)
{
    CU_CHECK_INIT();
    if (!ptr || size == 0 || size % CU_GRANULARITY || flags != 0 || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (size > CU_VA_PER_DEVICE / 2 || alignment > CU_VA_PER_DEVICE / 2)
        return CUDA_ERROR_OUT_OF_MEMORY; /* no address range that large */
    (void)addr;                          /* a hint: gpusim places reservations itself */
    struct sim_map_entry e = {.size = size, .kind = CU_ALLOC_RESERVE, .dev = -1};
    pthread_mutex_lock(&cu_g.mem_lock);
    int r = place_locked(&cu_g.reserves, &e, CU_VA_SLOT_VMM,
                         GS_MAX((uint64_t)alignment, CU_GRANULARITY));
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (r < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = e.key;
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CU_CHECK_INIT();
    pthread_mutex_lock(&cu_g.mem_lock);
    struct sim_map_entry *e = sim_map_get(&cu_g.reserves, ptr);
    if (!e || e->size != size) {
        pthread_mutex_unlock(&cu_g.mem_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    sim_map_del(&cu_g.reserves, ptr, NULL);
    pthread_mutex_unlock(&cu_g.mem_lock);
    return CUDA_SUCCESS;
}

/* The reservation holding [ptr, ptr+size), mem_lock held (reservations are few: a scan). */
static bool in_reservation_locked(uint64_t ptr, uint64_t size)
{
    for (size_t i = 0; i < cu_g.reserves.cap; i++) {
        const struct sim_map_entry *e = &cu_g.reserves.e[i];
        if (e->key && ptr >= e->key && ptr - e->key <= e->size && size <= e->size - (ptr - e->key))
            return true;
    }
    return false;
}

CU_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CU_CHECK_INIT();
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): the driver API's handles are integers */
    struct sim_vmm *h = (struct sim_vmm *)(uintptr_t)handle;
    if (flags != 0 || size == 0 || size % CU_GRANULARITY || offset % CU_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    CUresult r = CUDA_SUCCESS;
    if (!cu_valid(h, CU_OBJ_VMM) || h->handles == 0)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (offset > h->size || size > h->size - offset)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!in_reservation_locked(ptr, size))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (sim_map_get(&cu_g.allocs, ptr))
        r = CUDA_ERROR_ALREADY_MAPPED;
    if (r == CUDA_SUCCESS) {
        struct sim_map_entry e = {
            .key = ptr, .size = size, .aux = h, .kind = CU_ALLOC_MAPPING, .dev = h->dev};
        if (sim_map_put(&cu_g.allocs, &e) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            h->maps++;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

CU_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CU_CHECK_INIT();
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_vmm *gone[64];
    int ngone = 0;
    CUresult r = CUDA_SUCCESS;
    uint64_t cur = ptr, end = gs_sat_add_u64(ptr, size);
    bool more = true;
    /* Unmap every mapping that starts inside [ptr, ptr+size), in address order; handles whose
     * memory goes are freed outside mem_lock, at most 64 at a time. */
    while (more) {
        pthread_mutex_lock(&cu_g.mem_lock);
        while (cur < end && ngone < (int)GS_ARRAY_SIZE(gone)) {
            struct sim_map_entry *e = sim_map_get(&cu_g.allocs, cur);
            if (!e || e->kind != CU_ALLOC_MAPPING) {
                if (cur == ptr)
                    r = CUDA_ERROR_INVALID_VALUE;
                cur = end;
                break;
            }
            struct sim_map_entry out;
            cu_alloc_del_locked(cur, &out);
            struct sim_vmm *h = out.aux;
            h->maps--;
            if (vmm_gone_locked(h))
                gone[ngone++] = h;
            cur = gs_sat_add_u64(cur, out.size);
        }
        more = cur < end;
        pthread_mutex_unlock(&cu_g.mem_lock);
        for (int i = 0; i < ngone; i++)
            vmm_gone(gone[i]);
        ngone = 0;
    }
    return r;
}

CU_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CU_CHECK_INIT();
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    /* addr must be the start of a mapping (the driver accepts any address inside one; gpusim's
     * map is keyed by start address, so an interior address takes a scan). */
    const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, (uint64_t)(uintptr_t)addr);
    for (size_t i = 0; (!e || e->kind != CU_ALLOC_MAPPING) && i < cu_g.allocs.cap; i++) {
        const struct sim_map_entry *c = &cu_g.allocs.e[i];
        uint64_t a = (uint64_t)(uintptr_t)addr;
        if (c->key && c->kind == CU_ALLOC_MAPPING && a >= c->key && a - c->key < c->size)
            e = c;
    }
    if (e && e->kind == CU_ALLOC_MAPPING) {
        struct sim_vmm *h = e->aux;
        h->handles++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

CU_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                               size_t count)
{
    CU_CHECK_INIT();
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            cu_dev_of(desc[i].location.id) < 0)
            return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, ptr);
    bool ok = e && e->kind == CU_ALLOC_MAPPING;
    pthread_mutex_unlock(&cu_g.mem_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ arrays */
/* *out is written only when CUDA_SUCCESS is returned. */
static CUresult array_new(CUarray *out, uint64_t bytes, bool mip, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (bytes == UINT64_MAX || sim_mem_charge(cu_g.st, c->dev, bytes) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_array *a = cu_obj_new(CU_OBJ_ARRAY, sizeof(*a));
    if (!a) {
        sim_mem_uncharge(cu_g.st, c->dev, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->ctx = c;
    a->dev = c->dev;
    a->bytes = bytes;
    a->mipmapped = mip;
    a->desc = *d;
    a->row = (size_t)d->Width * gs_cuda_texel_bytes(d->Format, d->NumChannels);
    a->height = d->Height ? d->Height : 1;
    a->depth = d->Depth ? d->Depth : 1;
    a->host = NULL;
    *out = (CUarray)a;
    return CUDA_SUCCESS;
}

CU_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    CU_CHECK_INIT();
    if (!pHandle || !d || d->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t bytes = gs_cuda_array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE; /* unknown format or channel count */
    CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
    return array_new(pHandle, bytes, false, &d3);
}

CU_API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    CU_CHECK_INIT();
    if (!pHandle || !d || d->Width == 0 || (d->Depth && !d->Height))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t bytes = gs_cuda_array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE; /* unknown format or channel count */
    return array_new(pHandle, bytes, false, d);
}

/* The pre-3.2 entry points: 32-bit dimensions (cuda.h CUDA_ARRAY_DESCRIPTOR_v1), the same
 * arrays otherwise. */
CU_API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
    if (!d)
        return cuArrayCreate_v2(pHandle, NULL);
    CUDA_ARRAY_DESCRIPTOR d2 = {d->Width, d->Height, d->Format, d->NumChannels};
    return cuArrayCreate_v2(pHandle, &d2);
}

CU_API CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
    if (!d)
        return cuArray3DCreate_v2(pHandle, NULL);
    CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width,  d->Height,      d->Depth,
                                  d->Format, d->NumChannels, d->Flags};
    return cuArray3DCreate_v2(pHandle, &d3);
}

CU_API CUresult cuArrayDestroy(CUarray hArray)
{
    CU_CHECK_INIT();
    struct sim_array *a = (struct sim_array *)hArray;
    if (!cu_valid(a, CU_OBJ_ARRAY) || a->mipmapped)
        return CUDA_ERROR_INVALID_HANDLE;
    sim_mem_uncharge(cu_g.st, a->dev, a->bytes);
    cu_array_release(a);
    cu_obj_del(a);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                       unsigned int numMipmapLevels)
{
    CU_CHECK_INIT();
    if (!pHandle || !d || d->Width == 0 || numMipmapLevels == 0 || numMipmapLevels > 32)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t total = gs_cuda_mipmap_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels,
                                          numMipmapLevels);
    if (!total)
        return CUDA_ERROR_INVALID_VALUE; /* unknown format or channel count */
    CUarray a = NULL; /* array_new() sets it on CUDA_SUCCESS, which cu_ctx_current() never gives
                         with a NULL context (in another file, so the analyzer cannot see it) */
    CUresult r = array_new(&a, total, true, d);
    if (r == CUDA_SUCCESS)
        *pHandle = (CUmipmappedArray)a;
    return r;
}

CU_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    CU_CHECK_INIT();
    struct sim_array *a = (struct sim_array *)hMipmappedArray;
    if (!cu_valid(a, CU_OBJ_ARRAY) || !a->mipmapped)
        return CUDA_ERROR_INVALID_HANDLE;
    sim_mem_uncharge(cu_g.st, a->dev, a->bytes);
    cu_array_release(a);
    cu_obj_del(a);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ context teardown */
static bool ctx_owned_kind(uint32_t kind)
{
    return kind == CU_ALLOC_PLAIN || kind == CU_ALLOC_PITCH || kind == CU_ALLOC_MANAGED;
}

/*
 * Like the driver (cuCtxDestroy: "Destroys and cleans up all resources associated with the
 * context", memory from cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, arrays, modules,
 * streams): everything the context owns goes, and its bytes go back to the device. Memory from
 * cuMemCreate, cuMemAllocAsync and cuMemAllocFromPoolAsync belongs to no context and stays until
 * freed explicitly (the driver documents the same). cu_g.lock held.
 */
void cu_ctx_free_owned_locked(struct sim_ctx *c)
{
    uint64_t give[SIM_MAX_DEVICES] = {0};
    pthread_mutex_lock(&cu_g.mem_lock);
    for (size_t i = 0; i < cu_g.allocs.cap;) {
        const struct sim_map_entry *e = &cu_g.allocs.e[i];
        if (e->key && e->aux == c && ctx_owned_kind(e->kind)) {
            if (e->dev >= 0 && e->dev < SIM_MAX_DEVICES)
                give[e->dev] = gs_sat_add_u64(give[e->dev], e->size);
            /* Backward-shift deletion may move a later entry into slot i: look at it again.
             * Entries only move towards their home slot, so none is skipped. */
            cu_alloc_del_locked(e->key, NULL);
            continue;
        }
        i++;
    }
    cu_host_free_ctx_locked(c);
    pthread_mutex_unlock(&cu_g.mem_lock);
    for (struct cu_obj *o = cu_g.all; o; o = o->all_next) {
        if (!o->alive)
            continue;
        if (o->kind == CU_OBJ_ARRAY && ((struct sim_array *)o)->ctx == c) {
            struct sim_array *a = (struct sim_array *)o;
            give[a->dev] = gs_sat_add_u64(give[a->dev], a->bytes);
            cu_array_release(a);
            cu_obj_del_locked(a);
        } else if (o->kind == CU_OBJ_STREAM && ((struct sim_stream *)o)->ctx == c) {
            cu_obj_del_locked(o);
        } else if (o->kind == CU_OBJ_MODULE && ((struct sim_module *)o)->ctx == c) {
            struct sim_module *m = (struct sim_module *)o;
            for (struct sim_func *f = m->funcs; f; f = f->next)
                cu_obj_del_locked(f);
            m->funcs = NULL;
            pthread_mutex_lock(&cu_g.mem_lock);
            cu_module_drop_globals_locked(m);
            pthread_mutex_unlock(&cu_g.mem_lock);
            cu_obj_del_locked(m);
        }
    }
    for (int d = 0; d < SIM_MAX_DEVICES; d++)
        if (give[d])
            sim_mem_uncharge(cu_g.st, d, give[d]);
}

/* ------------------------------------------------------------------ graph memory */
CUresult cu_graph_mem_alloc(const struct sim_graph_node *n)
{
    struct sim_graph_mem *gm = &cu_g.graph_mem[n->dev];
    pthread_mutex_lock(&cu_g.mem_lock);
    if (sim_map_get(&cu_g.allocs, n->dptr)) {
        /* still allocated from an earlier launch and not freed */
        pthread_mutex_unlock(&cu_g.mem_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t need = gs_sat_add_u64(gm->used, n->size), grow = 0;
    if (need > gm->reserved)
        grow = round_up(need - gm->reserved, CU_GRANULARITY);
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (grow && sim_mem_charge(cu_g.st, n->dev, grow) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_map_entry e = {
        .key = n->dptr, .size = n->size, .kind = CU_ALLOC_GRAPH, .dev = n->dev};
    pthread_mutex_lock(&cu_g.mem_lock);
    int r = sim_map_put(&cu_g.allocs, &e);
    if (r == 0) {
        gm->reserved += grow;
        gm->used += n->size;
        gm->reserved_high = GS_MAX(gm->reserved_high, gm->reserved);
        gm->used_high = GS_MAX(gm->used_high, gm->used);
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (r < 0) {
        if (grow)
            sim_mem_uncharge(cu_g.st, n->dev, grow);
        return r == -EEXIST ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

void cu_graph_mem_free(uint64_t dptr)
{
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, dptr);
    bool ours = e && e->kind == CU_ALLOC_GRAPH;
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (ours)
        cu_free_ptr(dptr);
}

CU_API CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    CU_CHECK_INIT();
    int dev = cu_dev_of(device);
    if (dev < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&cu_g.mem_lock);
    struct sim_graph_mem *gm = &cu_g.graph_mem[dev];
    uint64_t keep = round_up(gm->used, CU_GRANULARITY);
    if (gm->reserved > keep) {
        /* the device's books first, as for pools (pool_trim_locked) */
        sim_mem_uncharge(cu_g.st, dev, gm->reserved - keep);
        gm->reserved = keep;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                             void *value)
{
    CU_CHECK_INIT();
    int dev = cu_dev_of(device);
    if (dev < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_graph_mem *gm = &cu_g.graph_mem[dev];
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = gm->used;
        break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = gm->used_high;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        *(cuuint64_t *)value = gm->reserved;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        *(cuuint64_t *)value = gm->reserved_high;
        break;
    default:
        r = CUDA_ERROR_INVALID_VALUE;
        break;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

/* Only the high marks can be set, and only to 0 (they restart from the current value). */
CU_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                             void *value)
{
    CU_CHECK_INIT();
    int dev = cu_dev_of(device);
    if (dev < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value || *(cuuint64_t *)value != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&cu_g.mem_lock);
    struct sim_graph_mem *gm = &cu_g.graph_mem[dev];
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
        gm->used_high = gm->used;
    else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        gm->reserved_high = gm->reserved;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

/* ------------------------------------------------------------------ older entry points */
CU_API CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                     CUdeviceptr_v1 dptr)
{
    CUdeviceptr b = 0;
    size_t sz = 0;
    CUresult r = cuMemGetAddressRange_v2(&b, &sz, dptr);
    if (r != CUDA_SUCCESS)
        return r;
    if (pbase)
        *pbase = (CUdeviceptr_v1)b;
    if (psize)
        *psize = (unsigned int)GS_MIN(sz, (size_t)UINT32_MAX);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    return cuMemAllocHost_v2(pp, bytesize);
}

CU_API CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int Flags)
{
    CUdeviceptr d = 0;
    if (!pdptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuMemHostGetDevicePointer_v2(&d, p, Flags);
    if (r == CUDA_SUCCESS && d > UINT32_MAX)
        return CUDA_ERROR_INVALID_VALUE; /* not addressable through the 32-bit ABI */
    if (r == CUDA_SUCCESS)
        *pdptr = (CUdeviceptr_v1)d;
    return r;
}

CU_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

/* Prefetch and advice are hints about where managed memory should live: gpusim's managed
 * memory is host memory visible to every device, so they only validate their arguments. */
static CUresult managed_range(CUdeviceptr p, size_t n)
{
    CU_CHECK_INIT();
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = cu_alloc_find_locked(p);
    bool ok = e && e->kind == CU_ALLOC_MANAGED && n <= e->size - (p - e->key);
    pthread_mutex_unlock(&cu_g.mem_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CU_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                   CUstream hStream)
{
    CUresult r;
    if (!cu_stream_resolve(hStream, &r))
        return r;
    if (dstDevice != -1 /* CU_DEVICE_CPU */ && cu_dev_of(dstDevice) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return managed_range(devPtr, count);
}

CU_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                        CUstream hStream)
{
    return cuMemPrefetchAsync(devPtr, count, dstDevice, hStream);
}

CU_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, int advice, CUdevice device)
{
    if (advice < 1 || advice > 6)
        return CUDA_ERROR_INVALID_VALUE;
    if (device != -1 && cu_dev_of(device) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return managed_range(devPtr, count);
}

CU_API CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                       unsigned int flags)
{
    CUresult r;
    if (!cu_stream_resolve(hStream, &r))
        return r;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != 4 /* SINGLE */)
        return CUDA_ERROR_INVALID_VALUE;
    return managed_range(dptr, length ? length : 1);
}

CU_API CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                            unsigned int flags)
{
    return cuStreamAttachMemAsync(hStream, dptr, length, flags);
}

/* ------------------------------------------------------------------ array queries */
CU_API CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    CU_CHECK_INIT();
    struct sim_array *a = (struct sim_array *)hArray;
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(a, CU_OBJ_ARRAY) || a->mipmapped)
        return CUDA_ERROR_INVALID_HANDLE;
    pArrayDescriptor->Width = a->desc.Width;
    pArrayDescriptor->Height = a->desc.Height;
    pArrayDescriptor->Format = a->desc.Format;
    pArrayDescriptor->NumChannels = a->desc.NumChannels;
    return CUDA_SUCCESS;
}

CU_API CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    CU_CHECK_INIT();
    struct sim_array *a = (struct sim_array *)hArray;
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(a, CU_OBJ_ARRAY) || a->mipmapped)
        return CUDA_ERROR_INVALID_HANDLE;
    *pArrayDescriptor = a->desc;
    return CUDA_SUCCESS;
}

/* Level 0 of a mipmapped array is an array (its texels are the mipmapped array's first
 * level); other levels are not modelled as separate arrays. */
CU_API CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                                         unsigned int level)
{
    CU_CHECK_INIT();
    struct sim_array *a = (struct sim_array *)hMipmappedArray;
    if (!pLevelArray)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(a, CU_OBJ_ARRAY) || !a->mipmapped)
        return CUDA_ERROR_INVALID_HANDLE;
    if (level != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    *pLevelArray = (CUarray)a;
    return CUDA_SUCCESS;
}
