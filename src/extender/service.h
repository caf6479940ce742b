/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The extender's verbs over kube-scheduler's extender JSON (k8s.io/kube-scheduler/extender/v1;
 * see docs/internals/legacy.md):
 *   filter:     ExtenderArgs {"pod", "nodes" | "nodenames"} -> ExtenderFilterResult
 *               {"nodes" | "nodenames", "failedNodes", "error"}
 *   prioritize: ExtenderArgs -> HostPriorityList [{"host", "score"}]
 *   bind:       ExtenderBindingArgs {"podName", "podNamespace", "podUID", "node"}
 *               -> ExtenderBindingResult {"error"}
 * bind refuses pods that are not ours (docs/internals/legacy.md "Bind"): no or another UID,
 * kube-system, already bound or being deleted, no GPU resources; it records the placement on
 * the Node (extender/assign.h) and changes the pod only through the Binding.
 * One mutex serialises the verbs of one process; HAMi's node lock (hami.io/mutex.lock)
 * serialises binds across processes.
 */
#ifndef GS_EXTENDER_SERVICE_H
#define GS_EXTENDER_SERVICE_H

#include <jansson.h>
#include <stdint.h>

#include "alloc/alloc.h"
#include "base/error.h"
#include "kube/event.h"
#include "kube/k8s.h"
#include "extender/schedule.h"

/* A node lock older than this is taken over (HAMi: 5 minutes). */
#define EXT_LOCK_EXPIRY_S 300
/* Full Node lists (nodeCacheCapable false) up to this size keep their inventory cached. */
#define EXT_CACHE_MAX_FULL_NODES 1000

/* A lock dated more than this in the future is invalid (taken over at once). */
#define EXT_LOCK_MAX_SKEW_S 60

struct ext_stats {
    uint64_t filter, filter_errors, prioritize, bind, bind_errors, lock_conflicts;
    uint64_t filter_ns_sum;  /* time spent in filter */
    uint64_t inventory_hits; /* filter/prioritize calls that reused the decoded inventory */
};

struct ext_service;

struct ext_service_config {
    struct gs_k8s_client *k8s; /* borrowed */
    struct gs_k8s_recorder
        *events; /* borrowed; NULL = no Events (FilteringFailed, BindingFailed) */
    enum alloc_policy gpu_policy;
    enum ext_node_policy node_policy;
};

struct ext_service *ext_service_new(const struct ext_service_config *cfg);
void ext_service_free(struct ext_service *s);

/* Each returns the response object (new reference), or NULL with err set when the request is
 * not the JSON expected (HTTP 400). */
json_t *ext_filter(struct ext_service *s, const json_t *args, struct gs_error *err);
json_t *ext_prioritize(struct ext_service *s, const json_t *args, struct gs_error *err);
json_t *ext_bind(struct ext_service *s, const json_t *args, struct gs_error *err);
void ext_service_stats(struct ext_service *s, struct ext_stats *out);

#endif /* GS_EXTENDER_SERVICE_H */
