/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Graph memory (cuGraphAddMemAllocNode): the driver gives a graph's allocations physical memory
 * from the device's graph memory when the graph is launched, and keeps it (after the graph frees
 * them) until cuDeviceGraphMemTrim. libvgpu charges each device's graph memory exactly what the
 * driver says it reserves (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT). Before a launch, what the
 * exec's allocation nodes could add is reserved (the sum of their sizes, each rounded up to the
 * granularity, less what the graph memory has free), so the driver never holds more than the
 * region admitted; after it the charge is brought to what is reserved. Launches are serialised
 * per device between the reservation and the settle (like pool allocations).
 *
 * Bytes per graph come from the allocation nodes libvgpu saw being added; an exec inherits its
 * graph's bytes at instantiation. Nodes added by paths not hooked (cuGraphAddNode with a
 * memory-allocation type, stream capture, cloning, exec update) are not known up front: their
 * growth is charged after the launch (forced, so the books stay truthful and the next
 * allocations are refused) — the residual window documented in vgpu.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

#define GRAPH_GRANULARITY (2ULL << 20)

struct graph_bytes {
    const void *key; /* CUgraph or CUgraphExec */
    uint64_t bytes;  /* worst-case growth of one launch (sum of rounded node sizes) */
    int dev;         /* vgpu device index of the nodes (-1: none seen) */
};

static struct graph_bytes *graphs;
static size_t n_graphs, cap_graphs;
static pthread_mutex_t graphs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t launch_lock[VGPU_MAX_DEVICES];
static uint64_t charged[VGPU_MAX_DEVICES]; /* graph memory charged per device (launch_lock) */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
atomic_bool vgpu_any_graph_mem;

static void init_locks(void)
{
    for (int i = 0; i < VGPU_MAX_DEVICES; i++)
        pthread_mutex_init(&launch_lock[i], NULL);
}

static struct graph_bytes *find_locked(const void *key)
{
    for (size_t i = 0; i < n_graphs; i++)
        if (graphs[i].key == key)
            return &graphs[i];
    return NULL;
}

static struct graph_bytes *get_locked(const void *key)
{
    struct graph_bytes *g = find_locked(key);
    if (g)
        return g;
    if (n_graphs == cap_graphs) {
        size_t ncap = cap_graphs ? cap_graphs * 2 : 16;
        struct graph_bytes *ng = realloc(graphs, ncap * sizeof(*ng));
        if (!ng)
            return NULL;
        graphs = ng;
        cap_graphs = ncap;
    }
    g = &graphs[n_graphs++];
    g->key = key;
    g->bytes = 0;
    g->dev = -1;
    return g;
}

static uint64_t round_up(uint64_t v)
{
    uint64_t up = gs_sat_add_u64(v, GRAPH_GRANULARITY - 1);
    return up == UINT64_MAX ? UINT64_MAX : up / GRAPH_GRANULARITY * GRAPH_GRANULARITY;
}

void vgpu_graphs_atfork_child(void)
{
    /* Graphs and the devices' graph memory do not survive fork; a parent's thread may have held
     * these locks at the fork (a launch lock is held across the driver's launch). */
    pthread_mutex_init(&graphs_lock, NULL);
    for (int i = 0; i < VGPU_MAX_DEVICES; i++)
        pthread_mutex_init(&launch_lock[i], NULL); /* initialised here if never before */
    pthread_once_t done = PTHREAD_ONCE_INIT;
    init_once = done;
    free(graphs);
    graphs = NULL;
    n_graphs = cap_graphs = 0;
    memset(charged, 0, sizeof(charged));
    atomic_store(&vgpu_any_graph_mem, false);
}

int vgpu_graph_add_alloc(const void *graph, int dev, uint64_t bytes)
{
    pthread_mutex_lock(&graphs_lock);
    struct graph_bytes *g = get_locked(graph);
    if (g) {
        g->bytes = gs_sat_add_u64(g->bytes, round_up(bytes));
        if (g->dev < 0)
            g->dev = dev;
        else if (g->dev != dev)
            g->bytes = UINT64_MAX; /* nodes on several devices: cannot be planned, refuse */
    }
    pthread_mutex_unlock(&graphs_lock);
    atomic_store(&vgpu_any_graph_mem, true);
    return g ? 0 : -ENOMEM;
}

int vgpu_graph_instantiated(const void *graph, const void *exec)
{
    int dev = -1;
    pthread_mutex_lock(&graphs_lock);
    struct graph_bytes *g = find_locked(graph);
    if (g && g->bytes) {
        dev = g->dev;
        struct graph_bytes copy = *g;
        struct graph_bytes *x = get_locked(exec);
        if (x) {
            x->bytes = copy.bytes;
            x->dev = copy.dev;
        }
    }
    pthread_mutex_unlock(&graphs_lock);
    return dev;
}

void vgpu_graph_forget(const void *key)
{
    pthread_mutex_lock(&graphs_lock);
    struct graph_bytes *g = find_locked(key);
    if (g)
        *g = graphs[--n_graphs];
    pthread_mutex_unlock(&graphs_lock);
}

static uint64_t graph_attr(struct vgpu_device *d, CUgraphMem_attribute attr)
{
    cuuint64_t v = 0;
    if (!gs_real_cu.cuDeviceGetGraphMemAttribute ||
        gs_real_cu.cuDeviceGetGraphMemAttribute(d->cu_dev, attr, &v) != CUDA_SUCCESS)
        return UINT64_MAX;
    return v;
}

/* Bring device i's graph-memory charge to what the driver reserves (launch_lock held). Growth
 * beyond what was reserved is charged even past the limit when `force` (it is already held). */
static void settle_locked(int i, struct vgpu_device *d, bool force)
{
    uint64_t reserved = graph_attr(d, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    if (reserved == UINT64_MAX)
        return;
    if (reserved > charged[i]) {
        uint64_t more = reserved - charged[i];
        if (vgpu_charge(d, more) < 0) {
            if (!force)
                return;
            VLOG(VGPU_LOG_ERROR,
                 "device %s: graph memory grew %llu bytes beyond what was reserved; charged "
                 "over the limit",
                 d->uuid, (unsigned long long)more);
            vgpu_region_reserve(d->region, d->slot, more, 0);
        }
    } else if (reserved < charged[i]) {
        vgpu_uncharge(d, charged[i] - reserved);
    }
    charged[i] = reserved;
}

int vgpu_graph_launch_begin(const void *exec, struct vgpu_graph_launch *gl)
{
    gl->dev = -1;
    gl->reserved = 0;
    pthread_mutex_lock(&graphs_lock);
    struct graph_bytes *g = find_locked(exec);
    uint64_t bytes = g ? g->bytes : 0;
    int idx = g ? g->dev : -1;
    pthread_mutex_unlock(&graphs_lock);
    struct vgpu_device *d = vgpu_device_at(idx);
    if (!d || !d->region || !bytes)
        return 0; /* no allocation node known: nothing to reserve */
    pthread_once(&init_once, init_locks);
    pthread_mutex_lock(&launch_lock[idx]);
    uint64_t res = graph_attr(d, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    uint64_t used = graph_attr(d, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
    uint64_t head = res != UINT64_MAX && used != UINT64_MAX && res > used ? res - used : 0;
    uint64_t need = bytes > head ? round_up(bytes - head) : 0;
    if (need && vgpu_charge(d, need) < 0) {
        pthread_mutex_unlock(&launch_lock[idx]);
        return -ENOMEM;
    }
    charged[idx] = gs_sat_add_u64(charged[idx], need); /* the reservation joins the charge */
    gl->dev = idx;
    gl->reserved = need;
    return 0;
}

void vgpu_graph_launch_end(struct vgpu_graph_launch *gl)
{
    if (gl->dev < 0)
        return;
    settle_locked(gl->dev, vgpu_device_at(gl->dev), true);
    pthread_mutex_unlock(&launch_lock[gl->dev]);
}

void vgpu_graph_mem_sync(int dev_index)
{
    struct vgpu_device *d = vgpu_device_at(dev_index);
    if (!d || !d->region)
        return;
    pthread_once(&init_once, init_locks);
    pthread_mutex_lock(&launch_lock[dev_index]);
    settle_locked(dev_index, d, true);
    pthread_mutex_unlock(&launch_lock[dev_index]);
}
