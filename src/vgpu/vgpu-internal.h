/* SPDX-License-Identifier: Apache-2.0 */
/* What the parts of libvgpu share with each other (see docs/internals/vgpu.md). */
#ifndef GS_VGPU_VGPU_INTERNAL_H
#define GS_VGPU_VGPU_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cuda_abi.h"
#include "common/macros.h"
#include "common/nvml_abi.h"
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
};

/* Parse env + limits directory once. */
void vgpu_config_load(void);
/* Effective limits for a CUDA ordinal with the given UUID ("GPU-..."; ordinal -1 if unknown). */
void vgpu_config_for(int ordinal, const char *uuid, struct vgpu_device_config *out);
/* True when at least one limits file was found (the directory is authoritative). */
bool vgpu_config_authoritative(void);
/* "8000m" -> 8000 MiB; returns 0 or -EINVAL. Exposed for unit tests through the test hook. */
int vgpu_parse_size(const char *s, uint64_t *out);
/* GPU_CORE_UTILIZATION_POLICY=disable (only honoured when no limits file is present). */
bool vgpu_config_compute_disabled(void);

/* ---- shared region (region.c) ---- */
struct vgpu_region;
/* Map (create if needed) the region at path; NULL on failure (logged). Same path => same map. */
struct vgpu_region *vgpu_region_open(const char *path);
/* Device slot for uuid in the region (created on first use), -1 if the table is full. */
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
void vgpu_region_set_driver_check(vgpu_driver_holds_fn fn);
/* Forget the mappings after fork() in the child (the child registers its own slot). */
void vgpu_region_atfork_child(void);

/* ---- allocation table (alloc-table.c): per-process, keyed by pointer/handle ---- */
enum vgpu_alloc_kind {
    VGPU_KIND_DPTR = 1,   /* cuMemAlloc*, managed, pitch, async: freed by cuMemFree*/
    VGPU_KIND_VMM = 2,    /* cuMemCreate handle */
    VGPU_KIND_ARRAY = 3,  /* CUarray */
    VGPU_KIND_MIPMAP = 4, /* CUmipmappedArray */
};

struct vgpu_alloc {
    uint64_t key;
    uint64_t size; /* bytes charged (0 for pool allocations: the pool is charged) */
    void *pool;    /* CUmemoryPool for stream-ordered allocations, else NULL */
    int32_t dev;   /* vgpu device index */
    uint32_t kind;
};

/* 0 = inserted, 1 = replaced an entry with the same key (copied to *replaced), -1 = no memory. */
int vgpu_table_insert(const struct vgpu_alloc *a, struct vgpu_alloc *replaced);
/* Remove and return the entry; false if not tracked. */
bool vgpu_table_remove(uint64_t key, uint32_t kind, struct vgpu_alloc *out);
bool vgpu_table_lookup(uint64_t key, uint32_t kind, struct vgpu_alloc *out);
size_t vgpu_table_count(void);
void vgpu_table_reset(void);

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
};

/* Discover devices (after cuInit). Idempotent. */
void vgpu_devices_init(void);
/* Device for a CUdevice / for the current context / by UUID; NULL if unknown or untracked. */
struct vgpu_device *vgpu_device_of(CUdevice dev);
struct vgpu_device *vgpu_device_current(void);
/* Same, but always asks the driver (NULL without a current context). */
struct vgpu_device *vgpu_device_current_strict(void);
struct vgpu_device *vgpu_device_by_uuid(const char *uuid);
int vgpu_device_index(const struct vgpu_device *d);
struct vgpu_device *vgpu_device_at(int index);
/* True when some device has a compute cap (fast check for the launch path). */
extern atomic_bool vgpu_any_compute_cap;
/* True when some device is tracked (memory cap or region). */
extern atomic_bool vgpu_any_tracked;

/* The one memory view: total = min(limit, physical), used = claim usage, free = total - used. */
struct vgpu_mem_view {
    uint64_t total, used, free;
};
void vgpu_memory_view(const struct vgpu_device *d, struct vgpu_mem_view *v);

/* Charge/uncharge with sweep-and-retry at the limit. 0 or -ENOMEM. */
int vgpu_charge(struct vgpu_device *d, uint64_t size);
void vgpu_uncharge(struct vgpu_device *d, uint64_t size);

/* ---- memory pools (pools.c) ---- */
/* Re-read RESERVED_MEM_CURRENT of every pool this process charged and adjust the charges. */
void vgpu_pools_sync(void);
/* After an allocation from pool for which `precharged` bytes were charged beforehand: bring the
 * pool's charge to what it reserves; -ENOMEM if the growth does not fit. */
int vgpu_pool_after_alloc(void *pool, struct vgpu_device *d, uint64_t precharged);
/* Bytes the pool can still hand out without growing (reserved - used), for the pre-check. */
uint64_t vgpu_pool_headroom(void *pool);
void vgpu_pool_forget(void *pool);
void *vgpu_pool_of_device(CUdevice dev);
extern atomic_bool vgpu_any_pool;

/* ---- limiter (limiter.c) ---- */
/* Before a launch on the current context: wait for budget. Returns a token for after_launch. */
struct vgpu_launch {
    struct vgpu_device *dev;
    uint64_t key;
    CUstream stream;
    CUevent start, end;
    int64_t precharged;
};
void vgpu_limiter_before(struct vgpu_launch *l, uint64_t key, CUstream stream);
void vgpu_limiter_after(struct vgpu_launch *l, CUresult launched);

/* ---- utilities ---- */
uint64_t vgpu_now_ns(void);
uint64_t vgpu_proc_start_time(int pid);
uint64_t vgpu_self_pidns(void);

#endif /* GS_VGPU_VGPU_INTERNAL_H */
