/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU health: the one watcher every daemon uses (the kubelet plugin, the device plugin, the
 * monitor, `gpuslice ls/run`), its policy, and the one in-memory table it fills. Health flows one
 * way: device backend (gpu/device.h; NVML events for NVIDIA) -> gpu_health_apply() -> the table
 * -> the readers (ResourceSlice taints, the kubelet's DRA health stream, ListAndWatch, the HAMi
 * node annotation, the monitor's gauge).
 *
 * Policy (docs/internals/gpu.md "Health"), after NVIDIA's DRA driver
 * (k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/device_health.go, xidsToSkip and
 * healthEventToTaint):
 *   - an XID in the ignore list is dropped (counted nowhere but the log);
 *   - an XID in the non-fatal list (default 13,31,43,45,68,109: application errors, NVIDIA's
 *     list) is recorded as the last XID with an informational taint (effect None) and leaves the
 *     GPU healthy;
 *   - any other XID, and a double-bit ECC error, makes the GPU unhealthy until an operator clears
 *     it (sticky: the hardware does not say when it is fixed);
 *   - XID 79 ("fallen off the bus") and NVML_ERROR_GPU_IS_LOST make the GPU lost: unhealthy until
 *     the GPU answers NVML again, then healthy with no restart (the recovery rule).
 *
 * Threads: the table has its own mutex; gpu_health_snapshot() copies it out under the lock, and
 * gpu_health_wait_change() sleeps until the generation moves. The watcher thread is the only
 * writer besides gpu_health_clear().
 */
#ifndef GS_GPU_HEALTH_H
#define GS_GPU_HEALTH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gpu/discovery.h"

/* XIDs are small numbers (NVIDIA's catalogue ends below 200); policy lists cover 0..1023 like
 * gpusim-smi inject-xid. Larger XIDs are fatal and never in a list. */
#define GPU_XID_LIST_MAX    1024
#define GPU_XID_FALLEN_OFF  79 /* "GPU has fallen off the bus" */
#define GPU_HEALTH_NONFATAL "13,31,43,45,68,109"

struct gpu_health_policy {
    bool enabled;
    uint8_t nonfatal[GPU_XID_LIST_MAX / 8];
    uint8_t ignore[GPU_XID_LIST_MAX / 8];
};

/* Fill *p from two comma-separated XID lists ("" = empty; NULL = the default: GPU_HEALTH_NONFATAL
 * for `nonfatal`, none for `ignore`). -EINVAL naming the list and the item on a bad number
 * ("health-nonfatal-xids: \"4x\" is not an XID (0..1023)"). */
int gpu_health_policy_init(struct gpu_health_policy *p, bool enabled, const char *nonfatal,
                           const char *ignore, struct gs_error *err);
bool gpu_health_xid_nonfatal(const struct gpu_health_policy *p, uint64_t xid);
bool gpu_health_xid_ignored(const struct gpu_health_policy *p, uint64_t xid);

/* What a device backend reports. `dev` is the index into the inventory the watcher was given. */
enum gpu_health_event_kind {
    GPU_HEALTH_EV_XID,         /* `xid` delivered (NVML XidCriticalError) */
    GPU_HEALTH_EV_ECC_DBE,     /* double-bit ECC error */
    GPU_HEALTH_EV_LOST,        /* the GPU does not answer (NVML_ERROR_GPU_IS_LOST) */
    GPU_HEALTH_EV_ANSWERS,     /* the GPU answers NVML (a probe; recovers a lost GPU) */
    GPU_HEALTH_EV_CLEAR,       /* an operator cleared the GPU's sticky fault */
    GPU_HEALTH_EV_UNMONITORED, /* events cannot be registered (informational) */
};

struct gpu_health_event {
    enum gpu_health_event_kind kind;
    size_t dev;
    uint64_t xid;
};

/* One GPU's health as the readers see it. */
struct gpu_health_dev {
    char name[64];          /* "hami-gpu-<minor>" */
    char uuid[GPU_STR_MAX]; /* "GPU-..." */
    unsigned minor;
    bool healthy;        /* !lost && !fatal */
    bool lost;           /* GPU_IS_LOST / XID 79, until it answers again */
    bool fatal;          /* a fatal XID or ECC DBE, until cleared */
    bool unmonitored;    /* the backend could not watch it */
    bool has_xid;        /* last_xid is meaningful */
    bool last_xid_fatal; /* by the policy */
    uint64_t last_xid;   /* the last XID not ignored (0 with has_xid false) */
    uint64_t fatal_xid;  /* the XID that made `fatal` (0 = ECC DBE) */
    uint64_t xid_count;  /* XIDs not ignored, since start */
    int64_t since_s;     /* unix seconds of the last change of `healthy` (or start) */
    int64_t xid_time_s;  /* unix seconds of last_xid */
    char reason[160];    /* why unhealthy, for Events and errors; "" when healthy */
};

struct gpu_health_table {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t gen; /* moves at every change */
    bool stop;
    struct gpu_health_policy policy;
    size_t n;
    struct gpu_health_dev dev[GPU_MAX_DEVICES];
};

/* A table of the inventory's GPUs, all healthy, since `now_s`. */
void gpu_health_table_init(struct gpu_health_table *t, const struct gpu_inventory *inv,
                           const struct gpu_health_policy *policy, int64_t now_s);
void gpu_health_table_fini(struct gpu_health_table *t);

/*
 * Apply one event under the policy (pure state change, takes the lock). Returns 1 when what a
 * reader sees changed (generation moved, waiters woken), 0 when not, -EINVAL for a device index
 * out of range (the event is dropped). Never fails otherwise: every input is survivable.
 */
int gpu_health_apply(struct gpu_health_table *t, const struct gpu_health_event *ev, int64_t now_s);

/* Operator's clear of GPU `name_or_uuid` ("hami-gpu-1", "GPU-...", or "all"): the number of GPUs
 * whose state changed, -ENOENT if none matches. */
int gpu_health_clear(struct gpu_health_table *t, const char *name_or_uuid, int64_t now_s);

/* Copy the table (lock held inside); returns the generation of the copy. */
uint64_t gpu_health_snapshot(struct gpu_health_table *t, struct gpu_health_dev *out, size_t max,
                             size_t *n);
/* The health of the GPU named `name` (false with *out untouched when unknown). */
bool gpu_health_get(struct gpu_health_table *t, const char *name, struct gpu_health_dev *out);
/* Sleep until the generation differs from `seen`, the table stops, or `timeout_ms` passes;
 * returns the current generation. */
uint64_t gpu_health_wait_change(struct gpu_health_table *t, uint64_t seen, uint64_t timeout_ms);
/* Wake every waiter for good (shutdown). */
void gpu_health_table_stop(struct gpu_health_table *t);

/*
 * The watcher: a thread that opens the device backend's health source for the table's GPUs,
 * applies what it reports, probes lost GPUs, and takes operator clears from `clear_dir`:
 * touching a file named after a GPU -- "hami-gpu-1", its UUID, or "all" -- clears it (every
 * daemon's watcher sees it; the file stays). `on_change` (may be NULL) is called from the watcher
 * thread after each change.
 */
struct gpu_health_watcher_config {
    const char *backend;   /* gpu/device.h registration name; NULL = "nvidia" */
    const char *clear_dir; /* NULL or "" = no operator clears by file */
    unsigned poll_ms;      /* longest wait for an event; probes run this often (0 = 500) */
    void (*on_change)(void *user);
    void *user;
};

struct gpu_health_watcher;

/* Start watching (a table whose policy is disabled starts nothing and returns a valid handle).
 * When the backend cannot watch, every GPU is marked unmonitored and the thread keeps probing.
 * NULL with err only for out-of-memory/thread creation. */
struct gpu_health_watcher *gpu_health_watcher_start(struct gpu_health_table *t,
                                                    const struct gpu_inventory *inv,
                                                    const struct gpu_health_watcher_config *cfg,
                                                    struct gs_error *err);
void gpu_health_watcher_stop(struct gpu_health_watcher *w);
/* Around a re-discovery in the same process: NVML enumerates GPUs at its first nvmlInit, and the
 * watcher holds it initialised, so `suspend` closes the watcher's source (waits up to one poll),
 * and `resume` opens it again (events are registered anew; an XID delivered in between is missed,
 * a loss is seen by the next probe). NULL or a watcher without a thread: no-op. */
void gpu_health_watcher_suspend(struct gpu_health_watcher *w);
void gpu_health_watcher_resume(struct gpu_health_watcher *w);

/* For standalone tools (`gpuslice ls/run`), which run no watcher: the NVML indexes of the GPUs
 * that are lost right now (discovery leaves them out), at most `max`; how many. XIDs are seen
 * only by a running watcher (the monitor, the plugins). */
size_t gpu_health_lost_now(unsigned *index, size_t max);

/*
 * The table as a file, for readers in other processes that run no watcher (`gpuslice ls/run` on
 * a standalone machine read what the monitor watches): JSON {"pid", "generation", "devices":
 * [{"name", "uuid", "healthy", "lost", "fatal", "fatalXid", "lastXid", "reason", "since"}]},
 * replaced atomically. gpu_health_load_file() fills `out` (at most `max`) and returns how many,
 * 0 when the file is absent, unreadable, or its writer (pid) is gone (a stale file says nothing).
 */
#define GPU_HEALTH_FILE     "health.json"
#define GPU_HEALTH_FILE_MAX (1u << 20)
int gpu_health_save_file(struct gpu_health_table *t, const char *path, struct gs_error *err);
size_t gpu_health_load_file(const char *path, struct gpu_health_dev *out, size_t max);

#endif /* GS_GPU_HEALTH_H */
