/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim cross-process state: one mmap'd file (GPUSIM_STATE) shared by every process that uses
 * the same simulated machine. It holds, per device, the memory in use and the kernel timeline,
 * and a table of process slots (pid + start time, memory per device, contexts per device).
 *
 * Locking: one robust, process-shared mutex in the file (sim_lock/sim_unlock). A process that
 * dies holding it (SIGKILL) hands it to the next locker with EOWNERDEAD; that locker recomputes
 * the derived counters and sweeps dead slots before marking it consistent.
 *
 * Liveness of a slot: the owner holds an open-file-description lock on byte SIM_LOCK_BASE+slot
 * of the file for its whole life; the kernel drops it when the process dies (SIGKILL included),
 * whatever its pid namespace. A slot is dead when that lock is free, or (full sweeps, same pid
 * namespace) when /proc/<pid>/stat is gone or its start time (field 22) differs.
 *
 * Layout (version 3), all little-endian host structs, see static_asserts in sim-state.c:
 *   struct sim_shared { header; mutex; procs[SIM_MAX_PROCS]; dev[SIM_MAX_DEVICES] }.
 */
#ifndef GS_SIM_SIM_STATE_H
#define GS_SIM_SIM_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "sim/sim-config.h"

#define SIM_STATE_MAGIC   0x3154535f4d495347ull /* "GSIM_ST1" */
#define SIM_STATE_VERSION 3u
#define SIM_MAX_PROCS     256
#define SIM_RING          65536 /* busy intervals kept per device */
#define SIM_COMM_MAX      128
#define SIM_LOCK_BASE     (1ll << 40) /* byte-lock offsets of the slots */

struct sim_interval {
    uint64_t start_ns; /* CLOCK_MONOTONIC */
    uint64_t end_ns;
    uint32_t pid;
    uint32_t slot;
};

enum sim_proc_state {
    SIM_PROC_FREE = 0,
    SIM_PROC_LIVE = 1,
};

struct sim_proc {
    uint32_t state; /* enum sim_proc_state */
    uint32_t pid;
    uint64_t start_time; /* /proc/<pid>/stat field 22, clock ticks since boot */
    uint64_t pidns;      /* inode of /proc/<pid>/ns/pid */
    uint64_t mem[SIM_MAX_DEVICES];
    uint32_t ctx[SIM_MAX_DEVICES];
    char comm[SIM_COMM_MAX]; /* executable path, for NVML's process name */
};

struct sim_dev_state {
    uint64_t total_mem;
    uint64_t used_mem;   /* == sum of live procs' mem[dev] */
    uint64_t tail_ns;    /* the device is busy until then (end of the last enqueued kernel) */
    uint64_t ring_count; /* intervals ever appended; ring[i % SIM_RING] */
    uint64_t peak_mem;   /* high-water mark of used_mem since the state was created (tests judge
                          * an interposer's transient overshoot from it) */
    uint64_t reserved[3];
    struct sim_interval ring[SIM_RING];
};

struct sim_shared {
    uint64_t magic;
    uint32_t version;
    uint32_t ndev;
    uint64_t file_size;
    uint64_t config_hash;
    uint64_t last_sweep_ns;
    uint64_t live[SIM_MAX_PROCS / 64]; /* bit i set <=> procs[i].state == SIM_PROC_LIVE */
    uint64_t reserved[7];
    union {
        pthread_mutex_t lock;
        char lock_pad[64];
    };
    struct sim_proc procs[SIM_MAX_PROCS];
    struct sim_dev_state dev[SIM_MAX_DEVICES];
};

/* Process-local view of the state. */
struct sim_state {
    struct sim_shared *sh;
    int fd;
    int slot; /* our slot, -1 when not registered */
    uint32_t pid;
    uint64_t pidns;
    int ndev;
    char path[PATH_MAX];
};

uint64_t sim_now_ns(void); /* CLOCK_MONOTONIC */

/* GPUSIM_STATE, else $XDG_RUNTIME_DIR/gpusim-<key>.state, else /tmp/gpusim-<uid>-<key>.state */
int sim_state_path(const struct sim_config *cfg, char *buf, size_t len, struct gs_error *err);

/* Open (creating or re-initialising when no process uses it) the state file for cfg. */
int sim_state_open(const struct sim_config *cfg, struct sim_state **out, struct gs_error *err);
/* Unmap and close; unregisters our slot first if we have one. NULL is a no-op. */
void sim_state_close(struct sim_state *st);
/* After fork(): forget the parent's slot and mapping without touching the shared state. */
void sim_state_forget(struct sim_state *st);

void sim_lock(struct sim_state *st);
void sim_unlock(struct sim_state *st);

/* Register this process (takes a slot). 0, or -EAGAIN when every slot is live. */
int sim_proc_register(struct sim_state *st, struct gs_error *err);

/* Reclaim slots of dead processes (lock held). Returns how many were reclaimed. A quick sweep
 * tests each live slot's byte lock (one fcntl each); a full one also re-reads the start time
 * of processes in our pid namespace. */
int sim_sweep_locked(struct sim_state *st, bool full);
/* Take the lock, sweep, release. */
int sim_sweep(struct sim_state *st);

/* Charge `bytes` of device memory to our slot: 0, or -ENOMEM when the device is full (after a
 * sweep of dead processes). Uncharge saturates at 0. */
int sim_mem_charge(struct sim_state *st, int dev, uint64_t bytes);
void sim_mem_uncharge(struct sim_state *st, int dev, uint64_t bytes);
/* Contexts of our process on dev (NVML lists a process on a device that has one). */
void sim_ctx_add(struct sim_state *st, int dev, int delta);

/* Memory view of a device (sweeps first). */
void sim_mem_info(struct sim_state *st, int dev, uint64_t *used, uint64_t *total);

/*
 * Enqueue `cost_ns` of work from our process on dev (lock held): it starts at
 * max(now, device tail, not_before) and the device is busy until the returned end time.
 */
uint64_t sim_enqueue_locked(struct sim_state *st, int dev, uint64_t now, uint64_t not_before,
                            uint64_t cost_ns);

/* Busy time of the device in [a, b) (lock held). *complete=false when the ring no longer holds
 * the start of the window. */
uint64_t sim_busy_total_locked(struct sim_state *st, int dev, uint64_t a, uint64_t b,
                               bool *complete);

struct sim_pid_busy {
    uint32_t pid;
    uint32_t slot;
    uint64_t busy_ns;
};
/* Busy time per pid in [a, b) (lock held); fills at most max entries, returns the count. */
int sim_busy_by_pid_locked(struct sim_state *st, int dev, uint64_t a, uint64_t b,
                           struct sim_pid_busy *out, int max, bool *complete);

/* Processes with a context or memory on dev (sweeps first). */
struct sim_proc_info {
    uint32_t pid;
    uint64_t mem;
    char comm[SIM_COMM_MAX];
};
int sim_procs_on_device(struct sim_state *st, int dev, struct sim_proc_info *out, int max);

/* Start time (field 22 of /proc/<pid>/stat): 0 or -errno. */

#endif /* GS_SIM_SIM_STATE_H */
