/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way to charge an allocation (docs/internals/vgpu.md, "Accounting model"): reserve in
 * the claim's region before the driver call, roll back if the driver fails, settle to what the
 * driver really took, record the allocation (with its context) in the allocation table. And the
 * matching free: forward first, give back only what the driver freed.
 */
#include <errno.h>

#include "vgpu/vgpu-internal.h"

static void *current_ctx(void)
{
    CUcontext c = NULL;
    if (!gs_real_cu.cuCtxGetCurrent || gs_real_cu.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
        return NULL;
    return c;
}

static CUresult call_alloc(vgpu_driver_alloc_fn alloc, void *arg, uint64_t *key, uint64_t *taken)
{
    vgpu_depth++;
    CUresult r = alloc(arg, key, taken);
    vgpu_depth--;
    return r;
}

static void call_undo(vgpu_driver_undo_fn undo, void *arg, uint64_t key)
{
    vgpu_depth++;
    undo(arg, key);
    vgpu_depth--;
}

CUresult vgpu_alloc_charged(const struct vgpu_alloc_req *req, vgpu_driver_alloc_fn alloc,
                            vgpu_driver_undo_fn undo, void *arg)
{
    struct vgpu_device *d = req->dev && req->dev->region ? req->dev : NULL;
    uint64_t key = 0, taken = req->reserve;
    if (!d)
        return call_alloc(alloc, arg, &key, &taken);

    /* 1. reserve before the driver allocates: the driver never holds more than the region
     * admitted */
    uint64_t reserve = req->reserve, claimed = 0;
    if (req->pool)
        reserve = vgpu_pool_plan(req->pool, d, req->reserve, &claimed);
    if (reserve && vgpu_charge(d, reserve) < 0) {
        if (req->pool)
            vgpu_pool_cancel(req->pool, claimed);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }

    /* 2./3. the driver call; its own error comes back */
    CUresult r = call_alloc(alloc, arg, &key, &taken);
    if (r != CUDA_SUCCESS) {
        if (req->pool)
            vgpu_pool_cancel(req->pool, claimed);
        vgpu_uncharge(d, reserve);
        return r;
    }

    /* 4. settle to what the driver really took */
    uint64_t size = reserve;
    if (req->pool) {
        size = 0; /* the pool carries the charge */
        if (vgpu_pool_settle(req->pool, d, reserve, claimed) < 0) {
            call_undo(undo, arg, key);
            vgpu_pool_freed(req->pool, d);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else if (taken < reserve) {
        vgpu_uncharge(d, reserve - taken);
        size = taken;
    } else if (taken > reserve) {
        /* more than the worst case we reserved (a driver that pads more than documented): the
         * difference is admitted or the allocation is undone */
        if (vgpu_charge(d, taken - reserve) < 0) {
            call_undo(undo, arg, key);
            vgpu_uncharge(d, reserve);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        size = taken;
    }

    /* 5. record it (with its context) */
    struct vgpu_alloc a = {.key = key,
                           .size = size,
                           .pool = req->pool,
                           .ctx = req->ctx_known ? req->ctx : current_ctx(),
                           .ctx_id = req->ctx_known ? req->ctx_id : 0,
                           .dev = vgpu_device_index(d),
                           .kind = req->kind,
                           .refs = 1};
    struct vgpu_alloc old;
    int ins = vgpu_table_insert(&a, &old);
    if (ins < 0) {
        call_undo(undo, arg, key);
        if (req->pool)
            vgpu_pool_freed(req->pool, d);
        else
            vgpu_uncharge(d, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (ins == 1)
        vgpu_alloc_uncharge(&old); /* the driver reused a key freed behind our back */
    return CUDA_SUCCESS;
}

void vgpu_alloc_uncharge(const struct vgpu_alloc *a)
{
    struct vgpu_device *d = vgpu_device_at(a->dev);
    if (a->kind == VGPU_KIND_MAPPING)
        return; /* mappings are references, never charges */
    if (a->pool)
        vgpu_pool_freed(a->pool, d);
    else
        vgpu_uncharge(d, a->size);
}

/* The driver refused to free it: the record goes back (never dropped: its charge could then
 * never be given back). */
static void keep_record(const struct vgpu_alloc *a)
{
    struct vgpu_alloc old;
    int r = vgpu_table_insert_keep(a, &old);
    if (r == 1)
        vgpu_alloc_uncharge(&old); /* the driver handed the key out again meanwhile */
    else if (r < 0)
        VLOG(VGPU_LOG_ERROR,
             "allocation %#llx: free refused by the driver and no room to keep its record; its "
             "%llu bytes stay charged",
             (unsigned long long)a->key, (unsigned long long)a->size);
}

CUresult vgpu_free_charged(uint64_t key, uint32_t kind, vgpu_driver_free_fn free_fn, void *arg)
{
    struct vgpu_alloc a;
    bool known = vgpu_table_remove(key, kind, &a);
    vgpu_depth++;
    CUresult r = free_fn(arg, key); /* untracked frees are forwarded as they are */
    vgpu_depth--;
    if (known) {
        if (r == CUDA_SUCCESS)
            vgpu_alloc_uncharge(&a);
        else
            keep_record(&a);
    }
    return r;
}
