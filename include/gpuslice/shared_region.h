/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contract: the per-claim shared region.
 *
 * A file (path from the claim's limits file `region` line, else CUDA_DEVICE_MEMORY_SHARED_CACHE,
 * else GS_REGION_PATH_DEFAULT) mmap'd MAP_SHARED by every process of every container using the
 * claim. Writer: libvgpu.so (src/vgpu/region.c) in each of those processes. Read-only readers: the
 * monitor and `gpuslice ls`/`top` (open O_RDONLY, mmap PROT_READ, check magic/version/size, read
 * the atomics with acquire loads; never take the lock).
 *
 * Layout rules: fixed size, native endianness (x86_64/aarch64 LP64), no pointers. A reader checks
 * `magic`, `version` and `size` before trusting anything; a region whose header does not match is
 * refused (libvgpu then refuses every allocation on the devices of that region: fail closed).
 *
 * Initialisation: under an exclusive flock(2) of the file, the first process sizes it
 * (ftruncate to sizeof(struct gs_region)), fills the header and the lock and stores `init_state`
 * 2 (GS_REGION_READY); the kernel drops the flock if it dies half-way, and the next process to
 * get it initialises again (nobody can have accounted into a region that was never READY). A
 * region found READY is never initialised again. A process that cannot get the flock within
 * GS_REGION_INIT_TIMEOUT_MS (a stalled initialiser) refuses allocations rather than re-initialise
 * under it.
 *
 * Accounting (all under `lock`, a process-shared ROBUST mutex; owner death is recovered with
 * EOWNERDEAD: the survivor recomputes every device's `used` from the process slots):
 *   devices[d].used            = sum over live process slots p of procs[p].used[d]
 *   reservation                = check used + size <= limit, then add to both, under the lock,
 *                                before the driver allocates; rolled back if the driver fails
 *   release                    = after the driver freed, subtract from both
 * Readers may see `used` lag the driver by one in-flight call, never exceed the limit.
 *
 * Process slots: a slot is free when `pid` is 0. `pid` + `start_time` (field 22 of
 * /proc/<pid>/stat, clock ticks after boot) + `pidns` (inode of /proc/self/ns/pid) identify a
 * process; a slot whose process is gone (or whose pid was reused: start time differs) is swept by
 * any process of the same pid namespace: its usage is subtracted and the slot freed. Sweeps run on
 * the out-of-memory path and at most every GS_REGION_SWEEP_INTERVAL_MS. A sweeper reclaims a slot
 * only if, under the lock, it still holds the exact (pid, start_time, pidns) judged dead (a slot
 * may have been freed and re-claimed meanwhile, even by a process with the same start tick), and
 * only once the driver no longer lists the dead pid (its memory is freed: until then the charge
 * stays, so nothing can be admitted into memory the driver still holds).
 *
 * Limiter (compute share, per device, shared by the claim's processes): a token bucket of GPU time.
 *   budget_ns starts at 0 when the device slot is created, grows by (now - refill_ns) * cores /
 * 100, capped at GS_REGION_BURST_NS * cores/100, shrinks by the measured/estimated GPU time of each
 * launch; launches wait while it is <= 0. busy_ns is the net GPU time charged to the bucket
 * (estimates corrected by measurements; it can step down when a correction refunds), launches
 * counts launches.
 *
 * For monitors (version 2; written with relaxed atomics, never under a lock; each launching thread
 * adds its sums of launches, busy_ns and gpu_busy_ns every millisecond (measured on the coarse
 * monotonic clock, so up to one kernel tick, 1-4 ms, later) and when it
 * exits, so they can lag by up to 1 ms per thread):
 *   gpu_busy_ns     busy GPU time of the claim's kernels on this device, nanoseconds, cumulative
 *                   and monotonic (never decreases): a launch the limiter measured with events
 *                   adds its measured time when the measurement completes; any other launch adds
 *                   its kernel's current estimate at launch. Utilisation over an interval is
 *                   delta(gpu_busy_ns) / delta(wall ns).
 *   last_kernel_ns  wall time (CLOCK_REALTIME, nanoseconds since the Unix epoch) of the most
 *                   recent kernel/graph launch on this device by any process of the claim; each
 *                   process refreshes it at most once per millisecond (coarse clock), so it lags
 *                   by up to one kernel tick (1-4 ms).
 *                   0 = no launch seen yet.
 *   Both are maintained only while the device has a compute cap (cores 1..99): an uncapped launch
 *   does no bookkeeping at all; readers then report them as unknown (absent), not as 0.
 *
 * Compute QoS (version 3; docs/internals/vgpu.md "Compute QoS"; written by libvgpu with relaxed
 * atomics, never under a lock):
 *   pending_ns      CLOCK_MONOTONIC nanoseconds (system-wide, the same in every container) of the
 *                   last moment a process of the claim had a launch pending on this device:
 *                   refreshed at most once per millisecond per process while it launches, waits
 *                   for budget or is held. Co-tenants of the GPU read it (read-only mapping) to
 *                   tell whether this claim has work pending (within GS_REGION_PENDING_WINDOW_NS).
 *   qos             what the claim's processes apply, for monitors: bits 0-7 the policy
 *                   (enum gs_compute_policy, 0 = not published yet), bits 8-15 the priority + 1
 *                   (0 = not published), bits 16-23 the state (GS_REGION_QOS_STATE_*). Never read
 *                   back by libvgpu to decide anything (the policy and priority come from the
 *                   read-only limits file or the environment).
 *   held_ns         cumulative time launches waited while a higher-priority tenant had work
 *                   pending (or HAMi's vGPU monitor blocked them), nanoseconds.
 * Versions: version 3 = version 2 plus qos (in version 2's reserved0), pending_ns and held_ns
 * (in version 2's reserved[2]); size and every other offset are unchanged.
 * Versions: version 2 = version 1 plus gpu_busy_ns and last_kernel_ns in what version 1 left
 * reserved (zero); size and every other offset are unchanged. Writers (libvgpu) accept only
 * GS_REGION_VERSION. Readers accept GS_REGION_VERSION_MIN_READ..GS_REGION_VERSION and treat the
 * version-2 fields of a version-1 region as unknown; any other version is refused with a message
 * naming it.
 */
#ifndef GS_GPUSLICE_SHARED_REGION_H
#define GS_GPUSLICE_SHARED_REGION_H

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuslice/limits.h"

#define GS_REGION_MAGIC            0x4E4F494745525347ULL /* "GSREGION" little-endian */
#define GS_REGION_VERSION          3
#define GS_REGION_VERSION_MIN_READ 1 /* oldest layout a reader may interpret (see above) */

#define GS_REGION_PATH_DEFAULT "/tmp/gpuslice-region"
#define GS_REGION_MAX_DEVICES  GS_LIMITS_MAX_DEVICES
#define GS_REGION_MAX_PROCS    1024
#define GS_REGION_UUID_MAX     GS_LIMITS_UUID_MAX

#define GS_REGION_INIT_TIMEOUT_MS   2000
#define GS_REGION_SWEEP_INTERVAL_MS 1000
#define GS_REGION_BURST_NS          100000000LL /* 100 ms of full-device time */
#define GS_REGION_PENDING_WINDOW_NS 20000000ULL /* pending_ns this recent: work pending */

/* The `qos` word (version 3). */
#define GS_REGION_QOS_POLICY(q)   ((q)&0xffu)
#define GS_REGION_QOS_PRIORITY(q) ((int)(((q) >> 8) & 0xffu) - 1) /* -1 = not published */
#define GS_REGION_QOS_STATE(q)    (((q) >> 16) & 0xffu)
#define GS_REGION_QOS(pol, prio, st)                                                               \
    ((uint32_t)(pol) | (uint32_t)((prio) + 1) << 8 | (uint32_t)(st) << 16)
#define GS_REGION_QOS_STATE_FREE    0 /* no cap applies now (alone, or policy disabled) */
#define GS_REGION_QOS_STATE_CAPPED  1 /* the cap applies (hard, or contention) */
#define GS_REGION_QOS_STATE_HELD    2 /* a higher-priority tenant has work pending */
#define GS_REGION_QOS_STATE_BLOCKED 3 /* HAMi's vGPU monitor blocks launches (recent_kernel) */

enum gs_region_init_state {
    GS_REGION_UNINIT = 0,
    GS_REGION_INITIALISING = 1,
    GS_REGION_READY = 2,
};

/* One GPU used by the claim, keyed by UUID. A slot is free while uuid[0] == '\0'; it is filled
 * once (under the lock) and never moved, so readers may cache the index. */
struct gs_region_device {
    char uuid[GS_REGION_UUID_MAX];   /* "GPU-..." */
    _Atomic uint64_t used;           /* bytes charged by all live processes */
    _Atomic uint64_t memory_limit;   /* bytes, last limit a process applied; 0 = no cap */
    _Atomic uint32_t cores;          /* percent, last cap a process applied; 0/100 = no cap */
    _Atomic uint32_t qos;            /* v3: GS_REGION_QOS_* (policy, priority, state; see above) */
    _Atomic int64_t budget_ns;       /* limiter: GPU time the claim may still use */
    _Atomic uint64_t refill_ns;      /* limiter: CLOCK_MONOTONIC of the last refill */
    _Atomic uint64_t busy_ns;        /* net GPU time charged to the bucket (see above) */
    _Atomic uint64_t launches;       /* kernel/graph launches seen */
    _Atomic uint64_t throttled_ns;   /* time launches spent waiting for budget */
    _Atomic uint64_t oom_count;      /* allocations refused at the limit */
    _Atomic uint64_t gpu_busy_ns;    /* v2: busy GPU time, ns, cumulative, monotonic (see above) */
    _Atomic uint64_t last_kernel_ns; /* v2: CLOCK_REALTIME ns of the last launch; 0 = none */
    _Atomic uint64_t pending_ns;     /* v3: CLOCK_MONOTONIC ns the claim last had work pending */
    _Atomic uint64_t held_ns;        /* v3: time launches spent held by a higher priority, ns */
};

/* One process using the claim. */
struct gs_region_proc {
    _Atomic int32_t pid; /* 0 = free slot */
    uint32_t reserved0;
    _Atomic uint64_t start_time;                  /* /proc/<pid>/stat field 22 */
    _Atomic uint64_t pidns;                       /* inode of /proc/<pid>/ns/pid, 0 if unknown */
    _Atomic uint64_t used[GS_REGION_MAX_DEVICES]; /* bytes, index = device slot */
};

struct gs_region {
    uint64_t magic;                /* GS_REGION_MAGIC */
    uint32_t version;              /* GS_REGION_VERSION */
    uint32_t size;                 /* sizeof(struct gs_region) */
    _Atomic uint32_t init_state;   /* enum gs_region_init_state */
    _Atomic uint32_t n_devices;    /* device slots in use (prefix of devices[]) */
    _Atomic uint32_t n_procs_hint; /* highest proc slot index ever used + 1 */
    uint32_t reserved0;
    _Atomic uint64_t sweep_ns;   /* CLOCK_MONOTONIC of the last sweep */
    _Atomic uint64_t generation; /* bumped on every slot claim/release (for monitors) */
    uint64_t reserved1[2];
    pthread_mutex_t lock; /* PTHREAD_PROCESS_SHARED | PTHREAD_MUTEX_ROBUST */
    uint8_t reserved2[64 - sizeof(pthread_mutex_t) % 64];
    struct gs_region_device devices[GS_REGION_MAX_DEVICES];
    struct gs_region_proc procs[GS_REGION_MAX_PROCS];
};

/* The layout is a contract: any change bumps GS_REGION_VERSION. */
static_assert(sizeof(pthread_mutex_t) == 40, "glibc LP64 pthread_mutex_t");
static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic int32_t) == 4, "atomics unboxed");
static_assert(sizeof(struct gs_region_device) == 200, "gs_region_device size");
static_assert(offsetof(struct gs_region_device, used) == 96, "gs_region_device.used");
static_assert(offsetof(struct gs_region_device, budget_ns) == 120, "gs_region_device.budget_ns");
static_assert(offsetof(struct gs_region_device, gpu_busy_ns) == 168,
              "gs_region_device.gpu_busy_ns");
static_assert(offsetof(struct gs_region_device, last_kernel_ns) == 176,
              "gs_region_device.last_kernel_ns");
static_assert(offsetof(struct gs_region_device, qos) == 116, "gs_region_device.qos");
static_assert(offsetof(struct gs_region_device, pending_ns) == 184, "gs_region_device.pending_ns");
static_assert(offsetof(struct gs_region_device, held_ns) == 192, "gs_region_device.held_ns");
static_assert(sizeof(struct gs_region_proc) == 24 + 8 * GS_REGION_MAX_DEVICES, "proc slot size");
static_assert(offsetof(struct gs_region_proc, used) == 24, "gs_region_proc.used");
static_assert(offsetof(struct gs_region, lock) == 64, "gs_region.lock");
static_assert(offsetof(struct gs_region, devices) == 128, "gs_region.devices");
static_assert(offsetof(struct gs_region, procs) == 128 + 200 * GS_REGION_MAX_DEVICES,
              "gs_region.procs");
static_assert(sizeof(struct gs_region) ==
                  128 + 200 * GS_REGION_MAX_DEVICES +
                      (24 + 8 * GS_REGION_MAX_DEVICES) * GS_REGION_MAX_PROCS,
              "gs_region size");

#endif /* GS_GPUSLICE_SHARED_REGION_H */
