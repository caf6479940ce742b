/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver's node-side state and its two operations, independent of the gRPC API version:
 * prepare and unprepare a batch of claims, and reconcile checkpoint, files and API.
 *
 * Locking: `lock` guards the inventory, the checkpoint and every file under the claim
 * directories and the CDI root. API calls are made without it (claims are fetched first, then
 * the files are written under the lock), so concurrent calls are safe and do not serialise on
 * the network.
 */
#ifndef GS_PLUGIN_DRIVER_H
#define GS_PLUGIN_DRIVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kube/event.h"
#include "kube/k8s.h"
#include "plugin/cdi.h"
#include "plugin/checkpoint.h"
#include "gpu/claim.h"
#include "gpu/discovery.h"
#include "gpu/health.h"
#include "plugin/metrics.h"

struct driver_config {
    const char *node_name;
    const char *driver_name;
    const char *state_dir;
    const char *sysfs_root;
    struct cdi_config cdi;
    int64_t reconcile_grace_s;      /* claims gone from the API are cleaned after this long */
    const char *fault_point;        /* "" or a fault point name: SIGKILL self when reached */
    struct gs_k8s_recorder *events; /* NULL = no Events (PrepareFailed on the claim) */
};

struct claim_ref {
    const char *ns;
    const char *name;
    const char *uid;
};

struct prepare_result {
    char error[CLAIM_ERROR_MAX]; /* "" = prepared */
    struct claim_plan *plan;     /* set when prepared; owned by the result */
};

struct driver {
    struct driver_config cfg;
    struct gs_k8s_client *k8s; /* borrowed */
    struct metrics *metrics;   /* borrowed, may be NULL */
    pthread_mutex_t lock;
    struct gpu_inventory *inv;
    struct checkpoint ckpt;
    struct gpu_health_table *health; /* borrowed; the DRA health stream reads it (NULL = none) */
};

/* Load the checkpoint (a corrupt one is moved aside to checkpoint.json.corrupt and the driver
 * starts empty: reconcile then removes the files nobody accounts for). */
int driver_init(struct driver *d, const struct driver_config *cfg, struct gs_k8s_client *k8s,
                struct metrics *m, struct gs_error *err);
void driver_fini(struct driver *d);

/* Replace the inventory (after discovery). */
void driver_set_inventory(struct driver *d, const struct gpu_inventory *inv);

/*
 * Prepare a batch. `deadline_ms` (CLOCK_MONOTONIC ms; 0 = none, then DRIVER_DEFAULT_TIMEOUT_MS
 * applies) is the caller's: every API request of the batch is bounded by it minus an answer margin
 * (a tenth of the time left, at most DRIVER_ANSWER_MARGIN_MS), so the answer -- successes for the
 * claims that could be fetched, an error naming the deadline for the others -- reaches the caller
 * before it gives up. `cancel` (may be NULL) aborts API requests (shutdown). Claims already
 * prepared are answered from the checkpoint without the API.
 */
#define DRIVER_DEFAULT_TIMEOUT_MS 40000u
#define DRIVER_ANSWER_MARGIN_MS   1000u
void driver_prepare(struct driver *d, size_t n, const struct claim_ref *refs, uint64_t deadline_ms,
                    struct gs_http_cancel *cancel, struct prepare_result *out);
void prepare_result_fini(struct prepare_result *r);
/* errors[i] is "" on success. */
void driver_unprepare(struct driver *d, size_t n, const struct claim_ref *refs,
                      char (*errors)[CLAIM_ERROR_MAX]);

/* Start-up: roll back PrepareStarted entries, re-create missing files of completed ones, remove
 * files no entry accounts for. Returns the number of things fixed. */
int driver_reconcile_local(struct driver *d);
/* Ask the API about every completed claim; clean those gone (deleted, another UID, or no longer
 * allocated to our driver in this node's pool) for longer than the grace period. Returns the
 * number cleaned. */
int driver_reconcile_api(struct driver *d, int64_t now_s);

/* SIGKILL the process if `point` is the configured fault point (crash tests). */
void driver_fault_point(const struct driver *d, const char *point);

#endif /* GS_PLUGIN_DRIVER_H */
