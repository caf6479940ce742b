/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events an operator sees in `kubectl describe` (core/v1 Event, docs/internals/k8s-client.md
 * "Events"), written so that a flood of failures cannot flood the API server:
 *
 *   struct gs_k8s_recorder *rec = gs_k8s_recorder_new(k, &(struct gs_k8s_recorder_options){
 *       .component = "gpuslice-extender", .instance = hostname});
 *   struct gs_k8s_object_ref pod = {"v1", "Pod", "team-a", "trainer-0", uid};
 *   gs_k8s_record(rec, &pod, true, "FilteringFailed", "no node fits: %s", why);
 *
 * The shape follows client-go's recorder (k8s.io/client-go/tools/record/event.go, events_cache.go):
 * the first event of an object + reason is created (name "<object>.<hex>", count 1,
 * firstTimestamp = lastTimestamp); repeats within `repeat_interval_ms` are only counted; the first
 * repeat after it patches the same Event (count + the repeats, lastTimestamp, message), as
 * client-go's EventCorrelator does with its dedup cache; an Event gone (TTL) is created again. All
 * writes share a token bucket (`burst`, one token per `refill_ms`), like client-go's spam filter,
 * so distinct objects cannot flood either. Writes happen outside the lock, bounded by
 * `timeout_ms`; a failed write is logged, counted and never returned to the caller's path.
 */
#ifndef GS_KUBE_EVENT_H
#define GS_KUBE_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/macros.h"
#include "kube/k8s.h"

struct gs_k8s_object_ref {
    const char *api_version; /* "v1", "resource.k8s.io/v1" */
    const char *kind;        /* "Pod", "ResourceClaim", "Node" */
    const char *ns;          /* NULL or "" for a cluster-scoped object (Event in "default") */
    const char *name;
    const char *uid; /* may be NULL */
};

struct gs_k8s_recorder_options {
    const char *component; /* source.component, reportingComponent */
    const char *instance;  /* source.host, reportingInstance (node or pod name); may be NULL */
    uint64_t repeat_interval_ms; /* one write per object + reason per interval; 0 = 60000 */
    unsigned burst;              /* writes at once over all objects; 0 = 25 */
    uint64_t refill_ms;          /* one more write every; 0 = 10000 */
    unsigned max_keys;           /* object + reason pairs remembered (LRU); 0 = 1024 */
    uint64_t timeout_ms;         /* deadline of one write; 0 = 3000 */
};

struct gs_k8s_recorder_stats {
    uint64_t created;    /* Events created */
    uint64_t patched;    /* Events whose count was raised */
    uint64_t suppressed; /* calls folded into a later write or dropped by the bucket */
    uint64_t failed;     /* writes the API refused or did not answer */
};

struct gs_k8s_recorder;

/* `k` is borrowed and must outlive the recorder. NULL on ENOMEM. */
struct gs_k8s_recorder *gs_k8s_recorder_new(struct gs_k8s_client *k,
                                            const struct gs_k8s_recorder_options *opts);
void gs_k8s_recorder_free(struct gs_k8s_recorder *r);

/* 1 written, 0 suppressed (counted), a negative code when the write failed (logged). A NULL
 * recorder does nothing (0). `warning`: type Warning, else Normal. */
int gs_k8s_record(struct gs_k8s_recorder *r, const struct gs_k8s_object_ref *obj, bool warning,
                  const char *reason, const char *fmt, ...) GS_PRINTF(5, 6);

void gs_k8s_recorder_get_stats(struct gs_k8s_recorder *r, struct gs_k8s_recorder_stats *out);

#endif /* GS_KUBE_EVENT_H */
