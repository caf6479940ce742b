/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contract with HAMi: HAMi-core's shared region, version 1.2, as libvgpu keeps it at
 * CUDA_DEVICE_MEMORY_SHARED_CACHE (environment mode) so that HAMi's vGPU monitor reads our usage
 * and we obey what it writes back. Our own declaration of the layout of HAMi-core's
 * `shared_region_t` (Project-HAMi/HAMi-core src/multiprocess/multiprocess_memory_limit.h,
 * MAJOR_VERSION 1, MINOR_VERSION 2) and of what HAMi's monitor maps (Project-HAMi/HAMi
 * pkg/monitor/nvidia/v1/spec.go, sharedRegionT); x86_64/aarch64 LP64, little endian. The offsets
 * are the contract (static_asserts below); the field names are ours.
 *
 * Who writes what (docs/internals/vgpu.md, "HAMi-core's region"):
 *   libvgpu (each process): the header at initialisation (under lockf of the file, as HAMi-core's
 *     try_create_shrreg), uuids/limit/sm_limit per CUDA ordinal, its process slot (pid, status,
 *     used[dev].total and .data_size = its charged device memory), last_kernel_time (seconds,
 *     CLOCK_REALTIME, like HAMi-core's pre_launch_kernel), recent_kernel = 2 at a capped launch
 *     (HAMi-core's rate_limiter), priority from CUDA_TASK_PRIORITY at initialisation.
 *   HAMi's vGPU monitor (cmd/vGPUmonitor/feedback.go, Observe): hostpid of each slot,
 *     recent_kernel (decrements it every round; -1 = blocked by a higher priority),
 *     utilization_switch (1 = the cap applies, 0 = it does not), and sm_limit/limit (rarely).
 *   libvgpu reads back only utilization_switch and recent_kernel (never a limit or the priority:
 *   those come from its own configuration).
 */
#ifndef GS_GPUSLICE_HAMI_REGION_H
#define GS_GPUSLICE_HAMI_REGION_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define GS_HAMI_REGION_MAGIC       19920718 /* MULTIPROCESS_SHARED_REGION_MAGIC_FLAG */
#define GS_HAMI_REGION_MAJOR       1
#define GS_HAMI_REGION_MINOR       2
#define GS_HAMI_REGION_MAX_DEVICES 16   /* CUDA_DEVICE_MAX_COUNT */
#define GS_HAMI_REGION_MAX_PROCS   1024 /* SHARED_REGION_MAX_PROCESS_NUM */
#define GS_HAMI_REGION_UUID_LEN    96
#define GS_HAMI_REGION_PATH_ENV    "CUDA_DEVICE_MEMORY_SHARED_CACHE"

/* recent_kernel: > 0 recently launched (the monitor decrements it), < 0 blocked. */
#define GS_HAMI_RECENT_KERNEL_LAUNCHED 2

struct gs_hami_device_memory {
    _Atomic uint64_t context_size;
    _Atomic uint64_t module_size;
    _Atomic uint64_t data_size; /* HAMi's monitor: bufferSize */
    _Atomic uint64_t offset;
    _Atomic uint64_t total;
    uint64_t unused[3];
};

struct gs_hami_device_util {
    _Atomic uint64_t dec_util;
    _Atomic uint64_t enc_util;
    _Atomic uint64_t sm_util;
    uint64_t unused[3];
};

struct gs_hami_proc_slot {
    _Atomic int32_t pid;
    _Atomic int32_t hostpid; /* written by HAMi's monitor (setHostPid) */
    struct gs_hami_device_memory used[GS_HAMI_REGION_MAX_DEVICES];
    _Atomic uint64_t monitorused[GS_HAMI_REGION_MAX_DEVICES];
    struct gs_hami_device_util device_util[GS_HAMI_REGION_MAX_DEVICES];
    _Atomic int32_t status;
    uint32_t pad0;
    _Atomic uint64_t seqlock; /* HAMi-core HEAD; unused[0] in HAMi's Go spec */
    uint64_t unused[2];
};

struct gs_hami_region {
    _Atomic int32_t initialized_flag; /* GS_HAMI_REGION_MAGIC once initialised */
    uint32_t major_version;
    uint32_t minor_version;
    _Atomic int32_t sm_init_flag;
    _Atomic uint64_t owner_pid;
    uint8_t sem[32]; /* HAMi-core's sem_t for slot add/remove (not used by libvgpu) */
    uint64_t device_num;
    char uuids[GS_HAMI_REGION_MAX_DEVICES][GS_HAMI_REGION_UUID_LEN];
    uint64_t limit[GS_HAMI_REGION_MAX_DEVICES];    /* bytes */
    uint64_t sm_limit[GS_HAMI_REGION_MAX_DEVICES]; /* percent */
    struct gs_hami_proc_slot procs[GS_HAMI_REGION_MAX_PROCS];
    _Atomic int32_t proc_num; /* slots in use are a prefix: procs[0 .. proc_num) */
    _Atomic int32_t utilization_switch;
    _Atomic int32_t recent_kernel;
    int32_t priority;
    _Atomic uint64_t last_kernel_time; /* seconds since the epoch */
    uint8_t sem_postinit[32];
};

static_assert(sizeof(struct gs_hami_proc_slot) == 1960, "HAMi shrreg_proc_slot_t size");
static_assert(offsetof(struct gs_hami_proc_slot, used) == 8, "slot.used");
static_assert(offsetof(struct gs_hami_proc_slot, monitorused) == 1032, "slot.monitorused");
static_assert(offsetof(struct gs_hami_proc_slot, device_util) == 1160, "slot.device_util");
static_assert(offsetof(struct gs_hami_proc_slot, status) == 1928, "slot.status");
static_assert(offsetof(struct gs_hami_region, major_version) == 4, "major_version");
static_assert(offsetof(struct gs_hami_region, owner_pid) == 16, "owner_pid");
static_assert(offsetof(struct gs_hami_region, sem) == 24, "sem");
static_assert(offsetof(struct gs_hami_region, device_num) == 56, "device_num");
static_assert(offsetof(struct gs_hami_region, uuids) == 64, "uuids");
static_assert(offsetof(struct gs_hami_region, limit) == 1600, "limit");
static_assert(offsetof(struct gs_hami_region, sm_limit) == 1728, "sm_limit");
static_assert(offsetof(struct gs_hami_region, procs) == 1856, "procs");
static_assert(offsetof(struct gs_hami_region, proc_num) == 2008896, "proc_num");
static_assert(offsetof(struct gs_hami_region, utilization_switch) == 2008900, "utilization_switch");
static_assert(offsetof(struct gs_hami_region, recent_kernel) == 2008904, "recent_kernel");
static_assert(offsetof(struct gs_hami_region, priority) == 2008908, "priority");
static_assert(offsetof(struct gs_hami_region, last_kernel_time) == 2008912, "last_kernel_time");
static_assert(sizeof(struct gs_hami_region) == 2008952, "HAMi shared_region_t size");

#endif /* GS_GPUSLICE_HAMI_REGION_H */
