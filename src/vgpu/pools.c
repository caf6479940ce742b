/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stream-ordered allocator: a pool holds physical memory beyond what is allocated from it (freed
 * blocks are kept until a synchronisation releases them above the release threshold, or until
 * cuMemPoolTrimTo). libvgpu charges a pool exactly what the driver says it reserves
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), re-read after every allocation, free, trim and
 * synchronisation.
 */
#include <pthread.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

#define MAX_POOLS 64

struct pool_charge {
    void *pool;
    int dev; /* vgpu device index */
    uint64_t charged;
};

static struct pool_charge pools[MAX_POOLS];
static int n_pools;
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
atomic_bool vgpu_any_pool;

static uint64_t reserved_of(void *pool)
{
    cuuint64_t v = 0;
    if (!gs_real_cu.cuMemPoolGetAttribute ||
        gs_real_cu.cuMemPoolGetAttribute((CUmemoryPool)pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                                         &v) != CUDA_SUCCESS)
        return UINT64_MAX;
    return v;
}

static struct pool_charge *find_locked(void *pool)
{
    for (int i = 0; i < n_pools; i++)
        if (pools[i].pool == pool)
            return &pools[i];
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
    uint64_t reserved = reserved_of(pc->pool);
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

int vgpu_pool_after_alloc(void *pool, struct vgpu_device *d, uint64_t precharged)
{
    pthread_mutex_lock(&pools_lock);
    struct pool_charge *pc = find_locked(pool);
    if (!pc && n_pools < MAX_POOLS) {
        pc = &pools[n_pools++];
        pc->pool = pool;
        pc->dev = vgpu_device_index(d);
        pc->charged = 0;
        atomic_store(&vgpu_any_pool, true);
    }
    if (!pc) {
        /* table full: keep the pre-charge as this allocation's charge */
        pthread_mutex_unlock(&pools_lock);
        return 0;
    }
    pc->charged += precharged; /* the pre-charge becomes part of the pool's charge */
    int r = adjust_locked(pc);
    pthread_mutex_unlock(&pools_lock);
    return r;
}

void vgpu_pools_sync(void)
{
    pthread_mutex_lock(&pools_lock);
    for (int i = 0; i < n_pools; i++)
        adjust_locked(&pools[i]);
    pthread_mutex_unlock(&pools_lock);
}

void vgpu_pool_forget(void *pool)
{
    pthread_mutex_lock(&pools_lock);
    struct pool_charge *pc = find_locked(pool);
    if (pc) {
        vgpu_uncharge(vgpu_device_at(pc->dev), pc->charged);
        *pc = pools[--n_pools];
    }
    pthread_mutex_unlock(&pools_lock);
}

uint64_t vgpu_pool_headroom(void *pool)
{
    cuuint64_t used = 0;
    uint64_t reserved = reserved_of(pool);
    if (reserved == UINT64_MAX ||
        gs_real_cu.cuMemPoolGetAttribute((CUmemoryPool)pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                                         &used) != CUDA_SUCCESS)
        return 0;
    return reserved > used ? reserved - used : 0;
}
