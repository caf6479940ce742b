/* SPDX-License-Identifier: Apache-2.0 */
/* What the parts of libvgpu share with each other (see docs/internals/vgpu.md). */
#ifndef GS_VGPU_VGPU_INTERNAL_H
#define GS_VGPU_VGPU_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/cuda_abi.h"
#include "base/macros.h"
#include "abi/nvml_abi.h"
#include "gpuslice/limits.h"
#include "gpuslice/shared_region.h"

/* ---- real functions (dispatch.c) ---- */
struct gs_real_cuda {
#define CU_HOOK(name) GS_CU_PFN(name) name;
#define CU_REAL(name) GS_CU_PFN(name) name;
#include "vgpu/cuda.def"
#undef CU_HOOK
#undef CU_REAL
};

struct gs_real_nvml {
#define NVML_HOOK(name) GS_NVML_PFN(name) name;
#define NVML_REAL(name) GS_NVML_PFN(name) name;
#include "vgpu/nvml.def"
#undef NVML_HOOK
#undef NVML_REAL
};

extern struct gs_real_cuda gs_real_cu;
extern struct gs_real_nvml gs_real_nvml;

/* Resolve libcuda's functions once (idempotent, thread-safe). Returns false if libcuda.so.1
 * cannot be opened. */
bool vgpu_cuda_ready(void);
bool vgpu_nvml_ready(void);
/* Hook for a real function pointer or a name, NULL if not hooked. */
void *vgpu_hook_for_real(const void *real);
void *vgpu_hook_for_name(const char *name);
/* Hook for a cuGetProcAddress request by base name and CUDA version (the ABI behind cuMemAlloc,
 * cuMemFree, cuMemAllocPitch, cuMemGetInfo, cuGraphInstantiate depends on it). */
void *vgpu_hook_for_proc(const char *symbol, int cuda_version);
/* The hook for what cuGetProcAddress(symbol, cuda_version) answered (real): the hook of that
 * name and version when its real function is the answer (a driver may alias several entry
 * points to one address), else the hook of that real function, else by name and version. */
void *vgpu_hook_for_answer(const char *symbol, int cuda_version, const void *real);

/* Re-entrancy guard: a hook called from inside another hook (e.g. libcuda calling its own
 * exported symbols) forwards straight to the driver. */
extern _Thread_local int vgpu_depth;
#define VGPU_ENTER() (vgpu_depth++ == 0)
#define VGPU_LEAVE() (vgpu_depth--)

/* ---- logging (log.c): silent unless LIBCUDA_LOG_LEVEL >= level ---- */
enum { VGPU_LOG_ERROR = 1, VGPU_LOG_WARN = 2, VGPU_LOG_INFO = 3, VGPU_LOG_DEBUG = 4 };
extern int vgpu_log_level;
void vgpu_log_init(void);
void vgpu_log(int level, const char *fmt, ...) GS_PRINTF(2, 3);
#define VLOG(level, ...)                                                                           \
    do {                                                                                           \
        if (GS_UNLIKELY(vgpu_log_level >= (level)))                                                \
            vgpu_log((level), __VA_ARGS__);                                                        \
    } while (0)

/* ---- configuration (config.c) ---- */
struct vgpu_device_config {
    uint64_t memory_limit; /* 0 = no cap */
    uint32_t cores;        /* 0 = no cap (100 is normalised to 0) */
    char region_path[GS_LIMITS_PATH_MAX];
    bool from_file;
    /* Compute QoS (docs/internals/vgpu.md, "Compute QoS") */
    int32_t policy;   /* enum gs_compute_policy; GS_POLICY_UNSET: HAMi's switch (env mode) */
    int32_t priority; /* 0 high, 1 low, GS_PRIORITY_UNSET: the default (1) */
    char claim[GS_LIMITS_CLAIM_MAX];
    char peers_dir[GS_LIMITS_PATH_MAX]; /* "" = co-tenants not visible */
    bool region_prepared; /* region_path is a claim's region named by its limits file */
};

/* Environment mode: our region next to HAMi-core's at CUDA_DEVICE_MEMORY_SHARED_CACHE. */
#define VGPU_REGION_SUFFIX ".gpuslice"

/* Parse env + limits directory once. */
void vgpu_config_load(void);
/* Effective limits for a CUDA ordinal with the given UUID ("GPU-..."; ordinal -1 if unknown). */
void vgpu_config_for(int ordinal, const char *uuid, struct vgpu_device_config *out);
/* True when at least one limits file was found (the directory is authoritative). */
bool vgpu_config_authoritative(void);
/* "8000m" -> 8000 MiB; returns 0 or -EINVAL. Exposed for unit tests through the test hook. */
int vgpu_parse_size(const char *s, uint64_t *out);
/* HAMi-core's reading of CUDA_DEVICE_MEMORY_LIMIT(_<i>) and CUDA_DEVICE_SM_LIMIT(_<i>): strtoul
 * base 0 and a K/M/G suffix; 0 or -EINVAL/-ERANGE. */
int vgpu_parse_hami_size(const char *s, uint64_t *out);
/* GPU_CORE_UTILIZATION_POLICY=disable (only honoured when no limits file is present). */
bool vgpu_config_compute_disabled(void);
/* GPUSLICE_CONTEXT_OVERHEAD: the least each context is charged (bytes, 0 = the probe alone). */
uint64_t vgpu_config_context_overhead(void);
/* The limits directory in use: GS_LIMITS_DIR_DEFAULT when it holds a limits file, else
 * $GPUSLICE_LIMITS_DIR (else the default). */
const char *vgpu_config_dir(void);

/* ---- shared region (region.c) ---- */
struct vgpu_region;
/* Map (create if needed) the region at path; NULL on failure (logged). Same path => same map. */
struct vgpu_region *vgpu_region_open(const char *path);
/* The same for a claim's region prepared by the plugin or `gpuslice run` (named by a limits
 * file): never created here, refused when missing, truncated, unprepared or replaced, and
 * watched for replacement while mapped (see shared_region.h). */
struct vgpu_region *vgpu_region_open_prepared(const char *path);
/* The region of a device that must refuse every allocation (fail closed: its claim's region
 * cannot be mapped or locked, or has no slot left for it). Never NULL. */
struct vgpu_region *vgpu_region_refusing(void);
/* True for the refusing region and for a claim region that could not be mapped. */
bool vgpu_region_refuses(const struct vgpu_region *r);
/* Device slot for uuid in the region (created on first use), -1 if the table is full, the
 * region refuses or its lock cannot be had. */
int vgpu_region_device(struct vgpu_region *r, const char *uuid, uint64_t limit, uint32_t cores);
struct gs_region_device *vgpu_region_dev(struct vgpu_region *r, int slot);
struct gs_region *vgpu_region_shm(struct vgpu_region *r);
/* Atomically reserve size bytes on slot under limit (0 = no cap). 0, or -ENOMEM at the limit. */
int vgpu_region_reserve(struct vgpu_region *r, int slot, uint64_t size, uint64_t limit);
void vgpu_region_release(struct vgpu_region *r, int slot, uint64_t size);
uint64_t vgpu_region_used(struct vgpu_region *r, int slot);
/* Reclaim slots of dead processes. Returns slots reclaimed. */
enum vgpu_sweep_mode {
    VGPU_SWEEP_PERIODIC = 0, /* at most every GS_REGION_SWEEP_INTERVAL_MS */
    VGPU_SWEEP_OOM = 1,      /* at most every 10 ms */
    VGPU_SWEEP_FORCE = 2,
};
int vgpu_region_sweep(struct vgpu_region *r, enum vgpu_sweep_mode mode);
/* Optional: which of these (dead) pids does the driver still hold memory for? A dead process's
 * charge is given back only once the driver has let go of its memory too. Returns 0 when the
 * driver answered (holds[] filled), -ENOSYS when no driver listing exists at all (the /proc
 * judgement alone decides), another negative errno when the driver could not answer now (every
 * charge is kept until a later sweep). */
typedef int (*vgpu_driver_holds_fn)(const int *pids, bool *holds, int n);
/* Observer of this process's charge per device (uuid, bytes), called after every reservation and
 * release (HAMi-core's region mirror). */
typedef void (*vgpu_usage_hook_fn)(const char *uuid, uint64_t used);
void vgpu_region_set_usage_hook(vgpu_usage_hook_fn fn);
void vgpu_region_set_driver_check(vgpu_driver_holds_fn fn);
/* One live process slot of the claim as a reader sees it (vgpu_region_procs). */
struct vgpu_region_proc_view {
    int pid;             /* as its own pid namespace sees it (getpid() of the process) */
    uint64_t start_time; /* /proc/<pid>/stat field 22 (1 when read as 0, 0 when unknown) */
    uint64_t pidns;      /* inode of its /proc/self/ns/pid, 0 when unknown */
    uint64_t used;       /* bytes charged on the device slot asked about (> 0) */
};
/* The processes of region r with a charge on device slot `slot` (at most max). Returns how many
 * were written; 0 for a refusing region. */
int vgpu_region_procs(struct vgpu_region *r, int slot, struct vgpu_region_proc_view *out, int max);
/* Forget the mappings after fork() in the child (the child registers its own slot). */
void vgpu_region_atfork_child(void);

/* ---- allocation table (alloc-table.c): per-process, keyed by pointer/handle ---- */
enum vgpu_alloc_kind {
    VGPU_KIND_DPTR = 1,    /* cuMemAlloc*, managed, pitch, async: freed by cuMemFree* */
    VGPU_KIND_VMM = 2,     /* cuMemCreate physical handle, charged while the driver holds it */
    VGPU_KIND_ARRAY = 3,   /* CUarray */
    VGPU_KIND_MIPMAP = 4,  /* CUmipmappedArray */
    VGPU_KIND_MAPPING = 5, /* cuMemMap of a VMM handle at a virtual address (never charged) */
};

/* One tracked allocation. Every allocation path records it through vgpu_alloc_charged(). */
struct vgpu_alloc {
    uint64_t key;    /* device pointer, handle, or mapped virtual address */
    uint32_t kind;   /* enum vgpu_alloc_kind (beside the key: a probe reads one cache line) */
    int32_t dev;     /* vgpu device index */
    uint64_t size;   /* bytes charged (0 for pool allocations: the pool is charged; mapping: bytes
                      * mapped) */
    uint64_t aux;    /* MAPPING: the VMM handle it maps */
    void *pool;      /* CUmemoryPool for stream-ordered allocations, else NULL */
    void *ctx;       /* CUcontext current when the allocation was made (NULL if none) */
    uint32_t refs;   /* VMM: references the driver holds (handle until released + mappings +
                      * retains); the charge goes back when it reaches 0 */
    uint32_t ctx_id; /* which context behind the handle `ctx` (a destroyed context's handle can
                      * be handed out again): vgpu_ctx_id(); 0 = none known */
};

/* 0 = inserted, 1 = replaced an entry with the same key (copied to *replaced), -1 = no memory. */
int vgpu_table_insert(const struct vgpu_alloc *a, struct vgpu_alloc *replaced);
/* Put a record back (a free the driver refused): into its shard, else — no memory to grow it —
 * into a fixed spare area, so the charge can still be given back later. Returns as
 * vgpu_table_insert(); -1 only when both are full (the charge then stays: logged by the caller). */
int vgpu_table_insert_keep(const struct vgpu_alloc *a, struct vgpu_alloc *replaced);
/* Unit tests: the table's allocator (NULL: calloc). */
void vgpu_table_set_calloc(void *(*fn)(size_t, size_t));
/* Remove and return the entry; false if not tracked. */
bool vgpu_table_remove(uint64_t key, uint32_t kind, struct vgpu_alloc *out);
bool vgpu_table_lookup(uint64_t key, uint32_t kind, struct vgpu_alloc *out);
/* Add delta to the entry's refs under its shard lock. Returns -1 if not tracked, 1 when refs
 * reached 0 (the entry is removed and copied to *out), else 0 (*out gets the updated entry). */
int vgpu_table_add_refs(uint64_t key, uint32_t kind, int32_t delta, struct vgpu_alloc *out);
/* Remove every entry for which match() is true and call removed() for each (outside the shard
 * locks, so removed() may charge/uncharge). Returns how many were removed. Used to give back
 * what a destroyed/reset context owned (match on ->ctx). */
size_t vgpu_table_remove_if(bool (*match)(const struct vgpu_alloc *a, void *arg),
                            void (*removed)(const struct vgpu_alloc *a, void *arg), void *arg);
/* Records of context ctx with identity `from` take identity `to`. */
void vgpu_table_retag_ctx(const void *ctx, uint32_t from, uint32_t to);
size_t vgpu_table_count(void);
void vgpu_table_reset(void);

/* ---- the one way to charge an allocation (charge.c) ----
 * Every allocation hook goes through vgpu_alloc_charged():
 *   1. reserve `reserve` bytes in the claim's region (against the limit) BEFORE the driver call;
 *   2. call the driver (alloc());
 *   3. on failure give the reservation back and return the driver's error;
 *   4. settle: the driver reports the bytes it really took (<= reserve: the rest goes back now;
 *      more than reserve: the difference is charged, or the allocation is undone with OOM);
 *   5. record {key, size, kind, device, pool, current CUcontext} in the allocation table (no
 *      memory for the record: undone with OOM — never an untracked charge).
 * Pool allocations (req.pool != NULL) reserve what the pool may have to grow by and settle
 * the pool's charge (pools.c) instead of a per-allocation size. */
struct vgpu_alloc_req {
    struct vgpu_device *dev; /* NULL or untracked: the driver is called without accounting */
    uint32_t kind;           /* enum vgpu_alloc_kind */
    uint64_t reserve;        /* worst-case bytes, reserved before the driver call */
    void *pool;              /* stream-ordered allocation from this pool, else NULL */
    void *ctx;               /* the context current at the call, recorded with the allocation */
    uint32_t ctx_id;         /* and its identity (vgpu_ctx_id) */
    bool ctx_known;          /* ctx was looked up by the hook (else the helper asks the driver) */
};
/* The driver call: writes the new key and the bytes actually taken (set *taken = reserve when
 * the size is known up front). */
typedef CUresult (*vgpu_driver_alloc_fn)(void *arg, uint64_t *key, uint64_t *taken);
/* Undo a successful driver allocation (used when settling or recording fails). */
typedef void (*vgpu_driver_undo_fn)(void *arg, uint64_t key);
CUresult vgpu_alloc_charged(const struct vgpu_alloc_req *req, vgpu_driver_alloc_fn alloc,
                            vgpu_driver_undo_fn undo, void *arg);
/* The free side: remove the record, call free(), give the charge back if the driver freed it
 * (or put the record back if it failed). Untracked keys are forwarded untouched. */
typedef CUresult (*vgpu_driver_free_fn)(void *arg, uint64_t key);
CUresult vgpu_free_charged(uint64_t key, uint32_t kind, vgpu_driver_free_fn free_fn, void *arg);
/* Give back what a removed record charged (the driver has freed it). */
void vgpu_alloc_uncharge(const struct vgpu_alloc *a);

/* ---- devices (devices.c) ---- */
#define VGPU_MAX_DEVICES 64

struct vgpu_device {
    bool present;
    CUdevice cu_dev;
    int ordinal;
    char uuid[GS_LIMITS_UUID_MAX];
    struct vgpu_device_config cfg;
    struct vgpu_region *region; /* NULL = untracked (no cap, no region) */
    int slot;                   /* device slot in region */
    uint64_t physical_total;
    /* Bytes this process has charged in its region slot but no allocation uses (freed since):
     * the next allocations take them first without the region's lock. Kept under
     * credit_max (an over-charge of the claim, never an under-charge), flushed back at the
     * limit, at exit and reset after fork. See vgpu.md, "Overhead". */
    _Atomic uint64_t credit;
    uint64_t credit_max;
};

/* Discover devices once the application has initialised the driver (libvgpu never calls
 * cuInit). Idempotent; cheap once done. */
void vgpu_devices_init(void);
bool vgpu_devices_ready(void);
/* The device an NVML view is about, by UUID (NVML index for CUDA_VISIBLE_DEVICES ordinals):
 * the process's own device when it uses CUDA, else one built from the limits and the claim's
 * region without touching CUDA. */
struct vgpu_device *vgpu_device_for_view(const char *uuid, int nvml_index);
/* Device for a CUdevice / for the current context / by UUID; NULL if unknown or untracked. */
struct vgpu_device *vgpu_device_of(CUdevice dev);
struct vgpu_device *vgpu_device_current(void);
/* The same, also giving the current context (NULL when none): one driver query serves the
 * device lookup and the allocation's record. */
struct vgpu_device *vgpu_device_current_ctx(void **ctx, uint32_t *ctx_id);
/* Same, but always asks the driver (NULL without a current context). */
struct vgpu_device *vgpu_device_current_strict(void);
/* The one device this process sees (every context is on it), NULL when it sees several. */
struct vgpu_device *vgpu_device_only(void);
struct vgpu_device *vgpu_device_by_uuid(const char *uuid);
int vgpu_device_index(const struct vgpu_device *d);
struct vgpu_device *vgpu_device_at(int index);
/* True when some device has a compute cap (fast check for the launch path). */
extern atomic_bool vgpu_any_compute_cap;
/* True when some device is tracked (memory cap or region). */
extern atomic_bool vgpu_any_tracked;

/* The one memory view (cuMemGetInfo, cuDeviceTotalMem, NVML): total = min(limit, physical),
 * used = the claim's usage (clamped to total), free = min(total - used, what the device really
 * has free). phys_total/phys_free: what the driver just reported (0 total: the discovered one). */
struct vgpu_mem_view {
    uint64_t total, used, free;
};
void vgpu_memory_view(const struct vgpu_device *d, uint64_t phys_total, uint64_t phys_free,
                      struct vgpu_mem_view *v);

/* Charge/uncharge with sweep-and-retry at the limit. 0 or -ENOMEM. */
int vgpu_charge(struct vgpu_device *d, uint64_t size);
void vgpu_uncharge(struct vgpu_device *d, uint64_t size);

/* ---- contexts (hooks-ctx.c) ---- */
/* The calling thread's current context (NULL when none; *dev its device, may be NULL). The first
 * time a context is seen (created out of sight, e.g. the runtime's primary context) its state
 * is created and its fixed overhead charged. Cheap when already seen. */
void *vgpu_ctx_current(struct vgpu_device **dev, uint32_t *ctx_id);
/* The identity of the context behind handle ctx as libvgpu knows it now (0: not known). A
 * handle the driver hands out again after a destruction gets a new identity, so what the
 * destroyed context owned is never confused with what the new one allocates. */
uint32_t vgpu_ctx_id(const void *ctx);
/* The device of context ctx (any context, current or not; first sight charges its overhead).
 * NULL when the driver cannot tell (destroyed or invalid handle). */
struct vgpu_device *vgpu_ctx_device(void *ctx);
/* Contexts this process knows (for tests and logs). */
size_t vgpu_ctx_count(void);
void vgpu_ctx_atfork_child(void);
/* Remember which processes the driver lists on d before this process has a context there (to
 * recognise this process's entry where the driver lists it under another pid namespace's pid). */
void vgpu_ctx_baseline(const struct vgpu_device *d);

/* ---- memory pools (pools.c) ---- */
/* Re-read RESERVED_MEM_CURRENT of every pool this process charged and adjust the charges. */
void vgpu_pools_sync(void);
/* Before an allocation of size bytes from pool: how much must be reserved in the region (what
 * the pool would have to grow by: the part its free blocks cannot serve, rounded up to the pool
 * granularity). Allocations from one pool are serialised from vgpu_pool_plan() to
 * vgpu_pool_settle()/vgpu_pool_cancel() (the reservation is exact, not raced by other threads). */
uint64_t vgpu_pool_plan(void *pool, struct vgpu_device *d, uint64_t size, uint64_t *claimed);
/* After the driver allocated: the reservation becomes part of the pool's charge, which is
 * brought to what the pool reserves; -ENOMEM if growth beyond the reservation does not fit (the
 * allocation still counts as outstanding until vgpu_pool_freed()). */
int vgpu_pool_settle(void *pool, struct vgpu_device *d, uint64_t reserved, uint64_t claimed);
/* The driver refused: end the plan (the caller gives the reservation back). */
void vgpu_pool_cancel(void *pool, uint64_t claimed);
/* An allocation from pool was freed: re-read what the pool reserves. */
void vgpu_pool_freed(void *pool, struct vgpu_device *d);
/* cuMemPoolDestroy succeeded. A real driver keeps a destroyed pool's memory until its last
 * outstanding allocation is freed: the pool's charge stays until then (and the next
 * synchronisation after it). */
void vgpu_pool_destroyed(void *pool);
void *vgpu_pool_of_device(CUdevice dev);
/* cuMemPoolCreate made pool on device d (its location). */
void vgpu_pool_created(void *pool, struct vgpu_device *d);
/* The device a pool allocates on: its location (recorded at cuMemPoolCreate), or the device whose
 * default/current pool it is; NULL when unknown. */
struct vgpu_device *vgpu_pool_device(void *pool);
extern atomic_bool vgpu_any_pool;
/* After fork() in the child: every pool lock free, no pool known. */
void vgpu_pools_atfork_child(void);

/* ---- graph memory (graphs.c) ---- */
/* A memory-allocation node of `bytes` on vgpu device `dev` was added to graph. */
int vgpu_graph_add_alloc(const void *graph, int dev, uint64_t bytes);
/* exec was instantiated from graph: it inherits the graph's allocation bytes. Returns the vgpu
 * device index of the graph's allocations, -1 if none. */
int vgpu_graph_instantiated(const void *graph, const void *exec);
void vgpu_graph_forget(const void *graph_or_exec);
struct vgpu_graph_launch {
    int dev; /* -1: nothing reserved, nothing to settle */
    uint64_t reserved;
};
/* Before a graph launch: reserve what its allocation nodes may add to the device's graph
 * memory (-ENOMEM: refuse the launch). Serialised with the launch's end per device. */
int vgpu_graph_launch_begin(const void *exec, struct vgpu_graph_launch *gl);
/* After the launch (whatever its result): charge = what the graph memory reserves. */
void vgpu_graph_launch_end(struct vgpu_graph_launch *gl);
/* Re-read a device's graph memory (after cuDeviceGraphMemTrim / instantiation). */
void vgpu_graph_mem_sync(int dev_index);
extern atomic_bool vgpu_any_graph_mem;
/* After fork() in the child: every graph lock free, no graph known. */
void vgpu_graphs_atfork_child(void);
/* After fork() in the child (hooks-cuda.c): the VMM lock free. */
void vgpu_vmm_atfork_child(void);
/* The vgpu device behind an NVML handle, found by its UUID (hooks-nvml.c); NULL if unknown. */
struct vgpu_device *vgpu_nvml_view_device(nvmlDevice_t h);
/* After fork() in the child (hooks-nvml.c): the UUID cache lock free. */
void vgpu_nvml_atfork_child(void);

/* ---- limiter (limiter.c) ---- */
/* Before a launch on the current context: wait for budget, charge the estimate. Fills a token for
 * vgpu_limiter_after (details and the test interface: limiter.h). */
struct vgpu_launch {
    struct gs_region_device *rd; /* NULL: not limited */
    uint64_t key;                /* estimate key: (function, grid, block, device) */
    CUstream stream;
    int32_t rec;        /* measurement record index, -1 when this launch is not measured */
    int32_t dev;        /* vgpu device index */
    int64_t precharged; /* GPU time charged up front (ns) */
    uint64_t rec_ns;    /* measured launches: host time the start event was recorded */
};
void vgpu_limiter_before(struct vgpu_launch *l, uint64_t key, CUstream stream);
void vgpu_limiter_after(struct vgpu_launch *l, CUresult launched);

/* ---- utilities ---- */
uint64_t vgpu_now_ns(void);
uint64_t vgpu_proc_start_time(int pid);
uint64_t vgpu_self_pidns(void);

#endif /* GS_VGPU_VGPU_INTERNAL_H */
