/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's view of the node: the claims whose usage it reports and the GPUs.
 *
 * Claims come from two sources, re-listed by the refresher thread every --refresh-interval:
 *   plugin      <state-dir>/checkpoint.json of the kubelet plugin (PrepareCompleted entries: the
 *               claim's namespace/name/UID and per-device limits), re-parsed only when the file
 *               changes; region <host-dir>/claims/<uid>/region/region.
 *   standalone  the rows of `gpuslice run`'s ledger (<standalone-state-dir>/ledger.db, opened
 *               read-only) whose owner process is still alive; devices and limits from the
 *               slice's limits file, region <slice-dir>/region.
 * Pods and containers of a plugin claim are resolved through the API server (the claim's
 * status.reservedFor, then each pod's containers that reference the claim), again every
 * --resync-interval; without Kubernetes the claim has one consumer with empty labels.
 *
 * Threads and locks: one mutex guards everything here. The refresher takes it only to swap in
 * what it prepared outside (files parsed, API answers, NVML samples) and to read the regions
 * (lock-free atomics; a few microseconds per claim). A scrape holds it while it reads the regions
 * and builds its samples, and renders the text after releasing it.
 *
 * Bad or dead data is skipped, counted (mon_cause) and logged once per cause and object until it
 * clears: never a crash, never a stale value (a region that cannot be read has no usage samples).
 */
#ifndef GS_MONITOR_CATALOG_H
#define GS_MONITOR_CATALOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gpu/claim.h"
#include "monitor/audit.h"
#include "monitor/gpus.h"
#include "monitor/ident.h"
#include "monitor/region.h"

#define MON_NAME_MAX 256
#define MON_UID_MAX  64

enum mon_source { MON_SOURCE_PLUGIN, MON_SOURCE_STANDALONE };
const char *mon_source_name(enum mon_source s); /* "plugin", "standalone" */

/* Why something was skipped (label `cause` of gpuslice_monitor_skipped_total). */
enum mon_cause {
    MON_CAUSE_REGION_MISSING,
    MON_CAUSE_REGION_UNREADABLE,
    MON_CAUSE_REGION_TRUNCATED,
    MON_CAUSE_REGION_BAD_MAGIC,
    MON_CAUSE_REGION_BAD_VERSION,
    MON_CAUSE_REGION_BAD_SIZE,
    MON_CAUSE_REGION_UNINITIALISED,
    MON_CAUSE_CHECKPOINT_UNREADABLE,
    MON_CAUSE_LEDGER_UNREADABLE,
    MON_CAUSE_LIMITS_UNREADABLE,
    MON_CAUSE_OWNER_GONE,
    MON_CAUSE_CLAIM_GONE,
    MON_CAUSE_POD_GONE,
    MON_CAUSE_API_ERROR,
    MON_CAUSE_NVML_ERROR,
    MON_CAUSE_FORGED_SLOT, /* a region's process slot names a process outside the claim */
    MON_CAUSE_N,
};
const char *mon_cause_name(enum mon_cause c);

/* A container using a claim. Empty strings where unknown (no Kubernetes, standalone). */
struct mon_consumer {
    char ns[MON_NAME_MAX];
    char pod[MON_NAME_MAX];
    char container[MON_NAME_MAX];
    /* What the API server wrote: the pod's metadata.uid, the container's ID from
     * status.containerStatuses (the runtime's, as in the container's cgroup; "" until the kubelet
     * reported it). The auditor ties a process to the claim through these (ident.h). */
    char pod_uid[MON_POD_UID_MAX];
    char container_id[MON_CONTAINER_ID_MAX];
};

struct mon_claim_device {
    char uuid[GPU_STR_MAX];
    uint64_t memory_limit; /* bytes granted; 0 = the whole device */
    uint32_t cores;        /* percent granted; 0 = no compute cap (the whole device) */
    /* Utilisation over the last refresh interval, from the region's gpu_busy_ns (v2, capped). */
    bool has_util;
    double util; /* 0..1 */
    bool prev_valid;
    uint64_t prev_mono_ns, prev_busy_ns;
};

enum mon_resolution {
    MON_RESOLVE_LOCAL,   /* no API: one consumer with empty labels */
    MON_RESOLVE_PENDING, /* not resolved yet (or the API failed before the first answer) */
    MON_RESOLVE_DONE,    /* consumers from the API */
};

struct mon_claim {
    enum mon_source source;
    char uid[MON_UID_MAX];
    char ns[MON_NAME_MAX];   /* claim namespace; "" for standalone slices */
    char name[MON_NAME_MAX]; /* claim name; the slice name for standalone */
    struct mon_region region;
    enum mon_region_status region_status; /* of the last refresher read */
    size_t n_devices;
    struct mon_claim_device dev[CLAIM_MAX_DEVICES];
    enum mon_resolution resolution;
    size_t n_consumers;
    struct mon_consumer *consumers;
    uint64_t resolved_mono_ns;
    uint32_t logged;    /* bit per mon_cause already logged for this claim */
    bool seen;          /* mark of the refresher's mark-and-sweep */
    bool devices_known; /* plugin: from the plan; standalone: once its limits file was read */
    /* standalone: the slice's cgroup as `gpuslice run` recorded it (<slice dir>/holders.json;
     * "" = none, the auditor cannot prove a process is the slice's) */
    bool cgroup_read;
    char cgroup[MON_CGROUP_MAX];
};

struct gs_k8s_client;

struct mon_catalog_config {
    const char *node;
    const char *host_dir;
    const char *plugin_state_dir;     /* NULL: no plugin source */
    const char *standalone_state_dir; /* NULL: no standalone source */
    struct gs_k8s_client *k8s;        /* NULL: no Kubernetes (borrowed) */
    uint64_t refresh_ns;
    uint64_t resync_ns;
    bool sample_gpus;        /* open NVML and sample the devices */
    bool audit_kill;         /* the auditor kills processes over their claim's limit */
    const char *proc_root;   /* the auditor's /proc (NULL = "/proc") */
    const char *cgroup_root; /* cgroup v2 mount point (NULL/"" = found in /proc/self/mountinfo) */
};

struct mon_catalog {
    pthread_mutex_t lock;
    struct mon_catalog_config cfg;
    struct mon_claim **claims;
    size_t n_claims, cap_claims;
    struct mon_gpus gpus; /* discovered devices and their latest samples */
    bool nvml_ok;         /* the last sample succeeded */
    _Atomic uint64_t skipped[MON_CAUSE_N];
    struct mon_audit audit; /* the auditor's last round (audit.h) */
    atomic_bool ready;      /* one refresh completed */
    /* refresher-private */
    struct refresher_state *rs;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop;
};

/* Set up (no I/O); mon_catalog_refresh() or mon_catalog_start() fill it. */
int mon_catalog_init(struct mon_catalog *c, const struct mon_catalog_config *cfg,
                     struct gs_error *err);
void mon_catalog_fini(struct mon_catalog *c);

/* One refresh, synchronously (the thread calls it every refresh_ns; tests and the bench call it
 * directly). */
void mon_catalog_refresh(struct mon_catalog *c);

int mon_catalog_start(struct mon_catalog *c, struct gs_error *err);
void mon_catalog_stop(struct mon_catalog *c);

/* Count a skipped object and log the first occurrence for `logged` (a claim's bit set, or a
 * global one when NULL). */
void mon_catalog_skip(struct mon_catalog *c, enum mon_cause cause, uint32_t *logged,
                      const char *what, const char *detail);

/* The standalone mode's default state dir (as `gpuslice run` computes it, without creating it):
 * $GPUSLICE_STATE_DIR, /var/lib/gpuslice as root, $XDG_STATE_HOME/gpuslice, or
 * ~/.local/state/gpuslice. */
void mon_standalone_default_dir(char *buf, size_t len);

#endif /* GS_MONITOR_CATALOG_H */
