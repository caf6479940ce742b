/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stream-ordered allocator: a pool holds physical memory beyond what is allocated from it (freed
 * blocks are kept until a synchronisation releases them above the release threshold, or until
 * cuMemPoolTrimTo). libvgpu charges a pool exactly what the driver says it reserves
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), re-read after every allocation, free, trim and
 * synchronisation. Before an allocation the growth it may cause is reserved (allocations from
 * one pool are serialised between the plan and the settle, so two threads never count on the
 * same free blocks). A destroyed pool keeps its charge until its last outstanding allocation is
 * freed (the driver releases its memory only then).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

/* Growth granularity assumed for a pool (the driver maps pool memory in 2 MiB granules). A
 * driver that grows by more is still charged after the call (see vgpu.md, residual windows). */
#define POOL_GRANULARITY (2ULL << 20)
#define PLAN_LOCKS       16

struct pool_charge {
    void *pool;
    int dev;          /* vgpu device index */
    uint64_t charged; /* bytes charged in the region for this pool */
    uint64_t live;    /* outstanding allocations recorded from it */
    bool destroyed;   /* cuMemPoolDestroy'd: charge kept until live == 0 and a sync */
};

static struct pool_charge *pools;
static size_t n_pools, cap_pools;
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
/* Serialise plan -> driver -> settle per pool (striped by pool address). */
static pthread_mutex_t plan_locks[PLAN_LOCKS] = {
#define L PTHREAD_MUTEX_INITIALIZER
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
#undef L
};
atomic_bool vgpu_any_pool;

static pthread_mutex_t *plan_lock(const void *pool)
{
    uintptr_t x = (uintptr_t)pool;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ULL;
    return &plan_locks[(x >> 32) % PLAN_LOCKS];
}

static uint64_t pool_attr(void *pool, CUmemPool_attribute attr)
{
    cuuint64_t v = 0;
    if (!gs_real_cu.cuMemPoolGetAttribute ||
        gs_real_cu.cuMemPoolGetAttribute((CUmemoryPool)pool, attr, &v) != CUDA_SUCCESS)
        return UINT64_MAX;
    return v;
}

static struct pool_charge *find_locked(void *pool)
{
    for (size_t i = 0; i < n_pools; i++)
        if (pools[i].pool == pool)
            return &pools[i];
    return NULL;
}

static void remove_locked(struct pool_charge *pc)
{
    vgpu_uncharge(vgpu_device_at(pc->dev), pc->charged);
    *pc = pools[--n_pools];
}

/* Find or add (NULL only when memory for the table cannot be had: the caller refuses). */
static struct pool_charge *get_locked(void *pool, const struct vgpu_device *d)
{
    struct pool_charge *pc = find_locked(pool);
    if (pc && pc->destroyed && pc->live == 0)
        remove_locked(pc); /* the driver freed it and handed out its address again */
    else if (pc)
        return pc;
    if (n_pools == cap_pools) {
        size_t ncap = cap_pools ? cap_pools * 2 : 16;
        struct pool_charge *np = realloc(pools, ncap * sizeof(*np));
        if (!np)
            return NULL;
        pools = np;
        cap_pools = ncap;
    }
    pc = &pools[n_pools++];
    memset(pc, 0, sizeof(*pc));
    pc->pool = pool;
    pc->dev = vgpu_device_index(d);
    atomic_store(&vgpu_any_pool, true);
    return pc;
}

/* Where each pool puts its memory (its location), for pools created through cuMemPoolCreate;
 * the devices' default and current pools are found by asking the driver. */
struct pool_loc {
    void *pool;
    int dev; /* vgpu device index */
};
static struct pool_loc *locs;
static size_t n_locs, cap_locs;

void vgpu_pool_created(void *pool, struct vgpu_device *d)
{
    if (!pool || !d)
        return;
    int idx = vgpu_device_index(d);
    pthread_mutex_lock(&pools_lock);
    struct pool_loc *hit = NULL;
    for (size_t i = 0; i < n_locs && !hit; i++)
        if (locs[i].pool == pool)
            hit = &locs[i]; /* the address of a destroyed pool handed out again */
    if (!hit && n_locs == cap_locs) {
        size_t ncap = cap_locs ? cap_locs * 2 : 16;
        struct pool_loc *nl = realloc(locs, ncap * sizeof(*nl));
        if (nl) {
            locs = nl;
            cap_locs = ncap;
        }
    }
    if (!hit && n_locs < cap_locs)
        hit = &locs[n_locs++];
    if (hit)
        *hit = (struct pool_loc){.pool = pool, .dev = idx};
    /* no memory to remember it: vgpu_pool_device() asks the driver's device pools, else
     * refuses allocations from it (never charged to a guessed device) */
    pthread_mutex_unlock(&pools_lock);
}

struct vgpu_device *vgpu_pool_device(void *pool)
{
    int idx = -1;
    pthread_mutex_lock(&pools_lock);
    for (size_t i = 0; i < n_locs && idx < 0; i++)
        if (locs[i].pool == pool)
            idx = locs[i].dev;
    pthread_mutex_unlock(&pools_lock);
    if (idx >= 0)
        return vgpu_device_at(idx);
    /* a device's default pool, or the pool cuDeviceSetMemPool made current */
    for (int i = 0; i < VGPU_MAX_DEVICES; i++) {
        struct vgpu_device *d = vgpu_device_at(i);
        if (!d)
            continue;
        CUmemoryPool p = NULL;
        if (gs_real_cu.cuDeviceGetDefaultMemPool &&
            gs_real_cu.cuDeviceGetDefaultMemPool(&p, d->cu_dev) == CUDA_SUCCESS && p == pool)
            return d;
        if (vgpu_pool_of_device(d->cu_dev) == pool)
            return d;
    }
    return NULL;
}

void *vgpu_pool_of_device(CUdevice dev)
{
    CUmemoryPool p = NULL;
    if (!gs_real_cu.cuDeviceGetMemPool || gs_real_cu.cuDeviceGetMemPool(&p, dev) != CUDA_SUCCESS)
        return NULL;
    return p;
}

/* Bring the pool's charge to what the driver reserves. Growth that does not fit: -ENOMEM and the
 * charge stays where it was. */
static int adjust_locked(struct pool_charge *pc)
{
    if (pc->destroyed)
        return 0; /* attributes of a destroyed pool cannot be read: keep the charge */
    uint64_t reserved = pool_attr(pc->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    if (reserved == UINT64_MAX)
        return 0;
    struct vgpu_device *d = vgpu_device_at(pc->dev);
    if (reserved > pc->charged) {
        if (vgpu_charge(d, reserved - pc->charged) < 0)
            return -ENOMEM;
    } else if (reserved < pc->charged) {
        vgpu_uncharge(d, pc->charged - reserved);
    }
    pc->charged = reserved;
    return 0;
}

uint64_t vgpu_pool_plan(void *pool, struct vgpu_device *d, uint64_t size, uint64_t *claimed)
{
    pthread_mutex_lock(plan_lock(pool));
    *claimed = 0;
    uint64_t reserved = pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    uint64_t used = pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    /* The pool grows by what used + size exceeds its reservation. Not `size` less the free
     * blocks: a driver may report used above reserved for a moment (gpusim, when a
     * synchronisation's trim runs inside another allocation), and the growth is then larger than
     * `size`. Unreadable attributes: the whole size. */
    uint64_t grow = size;
    if (reserved != UINT64_MAX && used != UINT64_MAX) {
        uint64_t need = gs_sat_add_u64(used, size);
        grow = need > reserved ? need - reserved : 0;
    }
    if (!grow)
        return 0;
    /* round up to the granularity the pool grows by (saturating) */
    uint64_t up = gs_sat_add_u64(grow, POOL_GRANULARITY - 1);
    return up == UINT64_MAX ? UINT64_MAX : up / POOL_GRANULARITY * POOL_GRANULARITY;
}

void vgpu_pool_cancel(void *pool, uint64_t claimed)
{
    (void)claimed;
    pthread_mutex_unlock(plan_lock(pool));
}

int vgpu_pool_settle(void *pool, struct vgpu_device *d, uint64_t reserved, uint64_t claimed)
{
    (void)claimed;
    pthread_mutex_lock(&pools_lock);
    struct pool_charge *pc = get_locked(pool, d);
    int r;
    if (!pc) {
        vgpu_uncharge(d, reserved);
        r = -ENOMEM;
    } else {
        pc->charged = gs_sat_add_u64(pc->charged, reserved); /* the reservation joins the pool */
        pc->live++;
        r = adjust_locked(pc);
    }
    pthread_mutex_unlock(&pools_lock);
    pthread_mutex_unlock(plan_lock(pool));
    return r;
}

void vgpu_pool_freed(void *pool, struct vgpu_device *d)
{
    (void)d;
    /* The charge is lowered only while no allocation from the pool is in flight: one that
     * counted on free blocks a synchronisation just released is settled first. */
    pthread_mutex_lock(plan_lock(pool));
    pthread_mutex_lock(&pools_lock);
    struct pool_charge *pc = find_locked(pool);
    if (pc) {
        if (pc->live)
            pc->live--;
        adjust_locked(pc);
    }
    pthread_mutex_unlock(&pools_lock);
    pthread_mutex_unlock(plan_lock(pool));
}

void vgpu_pools_sync(void)
{
    /* Snapshot the pools, then adjust each under its plan lock (see vgpu_pool_freed). */
    void *snap[64];
    size_t n = 0, from = 0;
    do {
        pthread_mutex_lock(&pools_lock);
        size_t total = n_pools;
        n = 0;
        for (size_t i = from; i < n_pools && n < GS_ARRAY_SIZE(snap); i++)
            snap[n++] = pools[i].pool;
        pthread_mutex_unlock(&pools_lock);
        for (size_t i = 0; i < n; i++) {
            pthread_mutex_lock(plan_lock(snap[i]));
            pthread_mutex_lock(&pools_lock);
            struct pool_charge *pc = find_locked(snap[i]);
            if (pc && pc->destroyed && pc->live == 0)
                remove_locked(pc); /* the last block went back: the driver released the pool */
            else if (pc)
                adjust_locked(pc);
            pthread_mutex_unlock(&pools_lock);
            pthread_mutex_unlock(plan_lock(snap[i]));
        }
        from += GS_ARRAY_SIZE(snap);
        if (total <= from)
            break;
    } while (n == GS_ARRAY_SIZE(snap));
}

void vgpu_pools_atfork_child(void)
{
    /* Pools do not survive fork (the child's driver starts over) and another thread of the
     * parent may have held any of these locks at the fork, inside a driver call. The tables
     * are forgotten (their charges are the parent's, in the parent's region slot). */
    pthread_mutex_init(&pools_lock, NULL);
    for (int i = 0; i < PLAN_LOCKS; i++)
        pthread_mutex_init(&plan_locks[i], NULL);
    free(pools);
    pools = NULL;
    n_pools = cap_pools = 0;
    free(locs);
    locs = NULL;
    n_locs = cap_locs = 0;
    atomic_store(&vgpu_any_pool, false);
}

void vgpu_pool_destroyed(void *pool)
{
    pthread_mutex_lock(&pools_lock);
    struct pool_charge *pc = find_locked(pool);
    if (pc) {
        pc->destroyed = true;
        if (pc->live == 0)
            remove_locked(pc); /* nothing outstanding: the driver released it at once */
    }
    pthread_mutex_unlock(&pools_lock);
}
