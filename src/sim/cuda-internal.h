/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the gpusim libcuda shares inside itself: the process-wide state (cu_g), the objects
 * behind the opaque handles, and helpers. Handles are never freed while the library is loaded:
 * a destroyed object is marked dead and recycled, so a stale handle is reported
 * (CUDA_ERROR_INVALID_HANDLE / _CONTEXT_IS_DESTROYED) instead of being a use-after-free.
 */
#ifndef GS_SIM_CUDA_INTERNAL_H
#define GS_SIM_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "abi/cuda_abi.h"
#include "abi/cuda_abi_data.h"
#include "base/macros.h"
#include "sim/gpusim.h"
#include "sim/sim-config.h"
#include "sim/sim-image.h"
#include "sim/sim-map.h"
#include "sim/sim-state.h"

#define CU_API GS_EXPORT

enum cu_kind {
    CU_OBJ_CTX = 1,
    CU_OBJ_STREAM,
    CU_OBJ_EVENT,
    CU_OBJ_MODULE,
    CU_OBJ_FUNC,
    CU_OBJ_GRAPH,
    CU_OBJ_GRAPH_EXEC,
    CU_OBJ_POOL,
    CU_OBJ_ARRAY,
    CU_OBJ_VMM,
    CU_OBJ_LIBRARY,
    CU_OBJ_KERNEL,
    CU_OBJ_KIND_MAX,
};

#define CU_MAGIC 0x6d697367u /* "gsim" */

/* Common header of every handle object. */
struct cu_obj {
    uint32_t magic;
    uint32_t kind;
    bool alive;
    struct cu_obj *all_next;  /* every object ever made (freed at unload) */
    struct cu_obj *free_next; /* recycled objects of this kind */
};

struct sim_ctx;

struct sim_stream {
    struct cu_obj h;
    struct sim_ctx *ctx;
    unsigned int flags;
    int priority;
    uint64_t tail_ns; /* end of the last work enqueued on it (atomic) */
    uint64_t cb_seq;  /* sequence number of its last host callback (cuda-callback.c) */
};

struct sim_ctx {
    struct cu_obj h;
    int ordinal; /* CUDA device ordinal (after CUDA_VISIBLE_DEVICES) */
    int dev;     /* index in the shared state / config */
    unsigned int flags;
    bool primary;
    int refs;          /* primary: retain count */
    uint64_t charged;  /* context overhead charged */
    size_t limits[10]; /* cuCtxGetLimit / cuCtxSetLimit, by CUlimit */
    struct sim_stream null_stream;
    uint64_t tail_ns;              /* end of the last work enqueued in the context (atomic) */
    uint64_t cb_seq;               /* sequence number of its last host callback */
    bool peer[SIM_MAX_DEVICES];    /* cuCtxEnablePeerAccess, by device ordinal */
    int cache_config, smem_config; /* cuCtxSetCacheConfig / cuCtxSetSharedMemConfig */
};

struct sim_event {
    struct cu_obj h;
    unsigned int flags;
    bool recorded;
    uint64_t t_ns;   /* completion time of the work before the record */
    uint64_t *ipc_t; /* interprocess events: the time in a shared file (0 = not recorded) */
};

/* Completion time of an event's last record; false if never recorded. */
static inline bool cu_event_time(const struct sim_event *e, uint64_t *t)
{
    if (e->ipc_t) {
        *t = __atomic_load_n(e->ipc_t, __ATOMIC_ACQUIRE);
        return *t != 0;
    }
    *t = e->t_ns;
    return e->recorded;
}
/* An interprocess event's shared time slot (cuda-ipc.c); NULL if none is left. */
uint64_t *cu_ipc_event_slot(void);
/* Unlink this process's shared event file (process exit). */
void cu_ipc_exit(void);

struct sim_func;
struct sim_library;
struct sim_module {
    struct cu_obj h;
    struct sim_ctx *ctx; /* NULL: a library's module (context-independent) */
    struct sim_library *lib;
    struct sim_func *funcs;
    struct sim_image img; /* kernel and global names of the image */
    bool any_name;        /* names not checked: compressed fatbin or the "gpusim" test image */
    uint64_t *global_ptr; /* per img.syms entry: its device address once asked for, else 0 */
    int global_dev;       /* device index the globals live on */
};

struct sim_func {
    struct cu_obj h;
    struct sim_module *mod;
    struct sim_func *next;
    uint64_t cost_ns; /* atomic; per wave (cuda-launch.c) */
    bool cost_pinned; /* gpusimSetKernelCost: the launch's whole duration, whatever the grid */
    int max_dynamic_smem, carveout, cluster[3], non_portable_cluster, cluster_policy;
    int cache_config, smem_config; /* cuFuncSetCacheConfig / cuFuncSetSharedMemConfig */
    char name[256];
};

/* cuLibraryLoadData: context-independent code; its kernels (CUkernel) are usable as CUfunction
 * in every context. */
struct sim_kernel;
struct sim_library {
    struct cu_obj h;
    struct sim_module *mod;
    struct sim_kernel *kernels;
};

struct sim_kernel {
    struct cu_obj h;
    struct sim_library *lib;
    struct sim_func *fn;
    struct sim_kernel *next;
};

enum sim_node_kind {
    SIM_NODE_KERNEL = 1,
    SIM_NODE_MEM_ALLOC,
    SIM_NODE_MEM_FREE,
};

struct sim_graph_node {
    int kind;            /* enum sim_node_kind */
    struct sim_func *fn; /* kernel */
    uint64_t dptr, size; /* mem alloc (address fixed at node creation) / mem free */
    int dev;             /* mem alloc: device index */
    struct sim_graph_node *next;
};

struct sim_graph {
    struct cu_obj h;
    struct sim_graph_node *nodes, *last;
    size_t n;
};

struct sim_graph_exec {
    struct cu_obj h;
    struct sim_graph_node *nodes; /* a copy of the graph's nodes, in order */
    size_t n;
    unsigned long long flags;
};

/* Graph memory of a device (cuGraphAddMemAllocNode): reserved at launch in 2 MiB granules, kept
 * after the allocations are freed until cuDeviceGraphMemTrim. */
struct sim_graph_mem {
    uint64_t reserved, used, reserved_high, used_high;
};

struct sim_pool {
    struct cu_obj h;
    int ordinal;
    int dev;
    bool is_default;
    bool destroyed;
    uint64_t reserved, used, reserved_high, used_high;
    uint64_t release_threshold, max_size;
    int reuse[4];
    struct sim_pool *next; /* list of this process's pools */
};

struct sim_array {
    struct cu_obj h;
    struct sim_ctx *ctx; /* owner: destroyed with it */
    int dev;
    uint64_t bytes;
    bool mipmapped;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t row, height, depth; /* bytes per row, rows per slice, slices (each >= 1) */
    uint8_t *host;             /* the texels (MAP_NORESERVE; level 0 of a mipmapped array) */
};

struct sim_vmm {
    struct cu_obj h;
    int dev;
    uint64_t size;
    uint32_t handles; /* cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease */
    uint32_t maps;    /* live mappings; the memory goes when both reach 0 */
};

/* Kinds of entries in the allocation map. */
enum cu_alloc_kind {
    CU_ALLOC_PLAIN = 1,
    CU_ALLOC_PITCH,
    CU_ALLOC_MANAGED,
    CU_ALLOC_POOL,
    CU_ALLOC_RESERVE,
    CU_ALLOC_MAPPING,
    CU_ALLOC_GRAPH,  /* graph memory (launched mem-alloc node) */
    CU_ALLOC_GLOBAL, /* a module's __device__ variable (not freeable, not charged) */
    CU_ALLOC_IPC,    /* another process's memory opened by cuIpcOpenMemHandle (not charged) */
};

/* Host memory (cuMemHostAlloc / cuMemAllocHost, cuMemHostRegister): not device memory. */
enum cu_host_kind {
    CU_HOST_ALLOC = 1,
    CU_HOST_REGISTERED,
};

#define CU_GRANULARITY   (2ull << 20)
#define CU_ADDR_ALIGN    512ull
#define CU_VA_BASE       (1ull << 48)
#define CU_VA_PER_DEVICE (1ull << 44)

struct cu_process {
    pthread_mutex_t lock; /* init, contexts, objects, pools list */
    int init_state;       /* 0 not yet, 1 ready, -1 failed (atomic) */
    CUresult init_error;
    struct sim_config cfg;
    struct sim_state *st;
    int nvis;
    int vis[SIM_MAX_DEVICES]; /* ordinal -> device index */
    struct sim_ctx primary[SIM_MAX_DEVICES];
    struct sim_pool *default_pool[SIM_MAX_DEVICES];
    struct sim_pool *current_pool[SIM_MAX_DEVICES];
    struct sim_pool *pools;
    struct cu_obj *all;
    struct cu_obj *free_list[CU_OBJ_KIND_MAX];

    pthread_mutex_t mem_lock;              /* allocs map, pools' counters, VMM refs */
    struct sim_map allocs;                 /* pointers and VMM mappings */
    struct sim_map reserves;               /* VMM address reservations */
    uint64_t next_va[SIM_MAX_DEVICES + 2]; /* bump pointers (mem_lock); see CU_VA_SLOT_* */
    struct sim_graph_mem graph_mem[SIM_MAX_DEVICES]; /* per device index (mem_lock) */
    struct sim_map hosts; /* host allocations and registrations (mem_lock) */
};

#define CU_VA_SLOT_VMM SIM_MAX_DEVICES       /* VMM reservations */
#define CU_VA_SLOT_LOW (SIM_MAX_DEVICES + 1) /* v1 entry points: addresses below 4 GiB */
#define CU_VA_LOW_BASE 0x10000000ull
#define CU_VA_LOW_END  0xfffff000ull

extern struct cu_process cu_g;

#define CU_CHECK_INIT()                                                                            \
    do {                                                                                           \
        if (GS_UNLIKELY(__atomic_load_n(&cu_g.init_state, __ATOMIC_ACQUIRE) <= 0))                 \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

static inline bool cu_valid(const void *p, uint32_t kind)
{
    const struct cu_obj *o = p;
    return o && o->magic == CU_MAGIC && o->kind == kind && o->alive;
}

/* Allocate (or recycle) a zeroed object of `size` bytes; alive, registered. NULL on ENOMEM. */
void *cu_obj_new(uint32_t kind, size_t size);
/* Mark dead and recycle. */
void cu_obj_del(void *p);
/* The same with cu_g.lock already held. */
void cu_obj_del_locked(void *p);

/* Current context of the calling thread (validated), or NULL with *err set. */
struct sim_ctx *cu_ctx_current(CUresult *err);
/* Resolve a stream handle (NULL, legacy, per-thread -> context's null stream). */
struct sim_stream *cu_stream_resolve(CUstream h, CUresult *err);
/* Wait (sleeping) until CLOCK_MONOTONIC reaches t. */
void cu_wait_until(uint64_t t);
/* Release unused pool memory above each pool's release threshold (at synchronisation). */
void cu_pools_trim_at_sync(void);
/* Enqueue work on a stream's device timeline; returns the end time. */
uint64_t cu_enqueue(struct sim_stream *s, uint64_t cost_ns);
/* Activate / deactivate a context on its device (charge the overhead, count it). */
CUresult cu_ctx_activate(struct sim_ctx *c);
void cu_ctx_deactivate(struct sim_ctx *c);
/* Free what a context owns when it is destroyed (cuCtxDestroy, primary reset or last release):
 * its cuMemAlloc/pitch/managed allocations, arrays, modules and streams (cu_g.lock held). */
void cu_ctx_free_owned_locked(struct sim_ctx *c);
/* Lazily create the default pool of an ordinal (cu_g.lock held). */
struct sim_pool *cu_default_pool_locked(int ordinal);
/* The function a launch means: a CUfunction, or a CUkernel passed as one (the runtime does);
 * NULL if neither. */
struct sim_func *cu_func_resolve(CUfunction f);
/* Cost of a kernel from its (possibly mangled) name: sim_busy_<us>, else the default. */
uint64_t cu_cost_of_name(const char *name);
/* Drop a dead module's globals from the allocation map (mem_lock held). */
void cu_module_drop_globals_locked(struct sim_module *m);
/* Set a context's limits to the driver's defaults. */
void cu_ctx_default_limits(struct sim_ctx *c);
/* Table-only (XH) entry: the runtime's private primary-context retain, modelled. */
CUresult gpusim_internal_primary_retain(CUcontext *pctx, CUdevice dev);
/* Reset process-local allocation state (after fork / at unload). */
void cu_mem_reset(void);
/* A fresh device address range of `size` in a VA slot (mem_lock held). */
uint64_t cu_va_alloc_locked(int slot, uint64_t size, uint64_t align);
/* Host memory owned by a context goes with it (mem_lock held). */
void cu_host_free_ctx_locked(const struct sim_ctx *c);
/* Launch-time graph memory: allocate / free one node's range (cu_g.mem_lock NOT held). */
CUresult cu_graph_mem_alloc(const struct sim_graph_node *n);
void cu_graph_mem_free(uint64_t dptr);
/* Free a pointer allocation of any kind (cuMemFree and friends). */
CUresult cu_free_ptr(CUdeviceptr dptr);

/* Remove an entry of cu_g.allocs and release its host backing (mem_lock held). 0 or -ENOENT. */
int cu_alloc_del_locked(uint64_t key, struct sim_map_entry *out);
/* The allocation holding [p, p + n) (exact key or interior pointer), or NULL (mem_lock held). */
struct sim_map_entry *cu_alloc_find_locked(uint64_t p);
/* Host view of an allocation's bytes, mapped on first use (mem_lock held); NULL on failure. */
uint8_t *cu_backing_map_locked(struct sim_map_entry *e);
/* Managed memory: host-visible bytes whose address is the device pointer (MAP_NORESERVE). */
void *cu_backing_managed(uint64_t size);
/* Backing file names: <shm or state>.<kind>.<slot>.<region> (cuda-copy.c). */
void cu_backing_path(char *buf, size_t len, int slot, const char *kind, int region);
/* Region (CU_VA_SLOT_*) and offset of a synthetic device address; false outside them. */
bool cu_region_of(uint64_t a, int *region, uint64_t *off);
/* This process's backing file of a region, created on first use (mem_lock held); -1. */
int cu_backing_fd_locked(int region);
/* Unlink the backing/event files of slots no live process holds (at cuInit). */
void cu_backing_sweep(void);
/* Unlink this process's backing files (process exit). */
void cu_backing_exit(void);
/* The texels of an array, mapped on first use; NULL on failure. */
uint8_t *cu_array_host(struct sim_array *a);
/* Give an array's texels back (destroy). */
void cu_array_release(struct sim_array *a);
/* Host memory range registered/allocated through cuMemHost*: its size from p, else 0
 * (mem_lock held). */
uint64_t cu_host_span_locked(uint64_t p);

/* Wait until the host callbacks queued up to sequence number `seq` have run (0: none). */
void cu_callbacks_wait(uint64_t seq);
/* fork(): every process-private gpusim lock is taken before (so what it guards is whole in the
 * child), released after in the parent, and made new in the child, whose CUDA state starts over
 * at cuInit (issue 34: a child forked while threads were inside the driver could hang on a copy
 * of a lock held by a thread the child does not have). Lock order: cu_g.lock, cu_g.mem_lock,
 * then the leaves below (each taken alone everywhere else). */
enum cu_fork_phase { CU_FORK_PREPARE, CU_FORK_PARENT, CU_FORK_CHILD };
void cu_callbacks_fork(enum cu_fork_phase phase);
void cu_ipc_fork(enum cu_fork_phase phase);
void cu_tex_fork(enum cu_fork_phase phase);
/* Whether the host callbacks up to `seq` have run. */
bool cu_callbacks_done(uint64_t seq);

/* Blocks of `block` threads with `smem` dynamic shared memory resident on one SM (the
 * occupancy model, cuda-module.c); 0 if one does not fit. */
int cu_blocks_per_sm(const struct sim_device_cfg *d, int block, size_t smem);
/* Cost of launching fn with `blocks` blocks of `block` threads on device index dev: the
 * kernel's cost per wave times the waves (cuda-launch.c). */
uint64_t cu_launch_cost(const struct sim_func *fn, int dev, uint64_t blocks, unsigned int block,
                        size_t smem);

/* Map an ordinal to a device index; -1 if invalid. */
static inline int cu_dev_of(CUdevice d)
{
    return (d >= 0 && d < cu_g.nvis) ? cu_g.vis[d] : -1;
}

#endif /* GS_SIM_CUDA_INTERNAL_H */
