/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One pod's GPU placement in legacy mode (see docs/internals/legacy.md): the pod's HAMi
 * resources (nvidia.com/gpu, gpumem, gpucores, gpumem-percentage) and annotations
 * (nvidia.com/use-gpuuuid, nouse-gpuuuid, use-gputype, nouse-gputype) are turned into the very
 * claims the webhook's DRA mode would create (src/webhook/shape.c, selector.c), then our
 * allocator places them on each candidate node. Failures carry HAMi's reason names.
 */
#ifndef GS_EXTENDER_SCHEDULE_H
#define GS_EXTENDER_SCHEDULE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "alloc/alloc.h"
#include "base/error.h"
#include "hami/hami.h"
#include "extender/inventory.h"

#define EXT_MAX_CONTAINERS 64

enum ext_node_policy {
    EXT_NODE_BINPACK = 0, /* HAMi's default: the most used node that fits */
    EXT_NODE_SPREAD,      /* the least used node */
};

/* One container's request in HAMi's terms (GenerateResourceRequests, pkg/device/nvidia). */
struct ext_hami_request {
    int32_t nums;     /* GPUs */
    int32_t memreq;   /* MiB, 0 when a percentage (or the whole card) is asked */
    int32_t mem_pct;  /* 101 = none (HAMi's sentinel), else 0..100 */
    int32_t coresreq; /* percent */
};

struct ext_pod_request {
    const char *ns, *name;
    size_t n_init;                     /* spec.initContainers: entries 0..n_init-1 */
    size_t n_containers;               /* init containers + spec.containers */
    size_t n_claims;                   /* containers with GPU resources */
    size_t ctr_of[EXT_MAX_CONTAINERS]; /* claim i -> container entry */
    struct alloc_claim_spec *spec[EXT_MAX_CONTAINERS];
    struct ext_hami_request hami[EXT_MAX_CONTAINERS]; /* per claim */
    const json_t *annotations;                        /* the pod's (borrowed) */
    bool mutex, numa; /* gpu policy lists mutex / numa, or nvidia.com/numa-bind */
    enum alloc_policy gpu_policy;
    enum ext_node_policy node_policy;
};

/* Read the pod. Returns 0 with n_claims == 0 for a pod without GPU resources, 0 with claims,
 * or -EINVAL with a message naming the container/annotation and value. `inv` gives the memory
 * sizes a gpumem-percentage needs. Defaults: `gpu_policy`, `node_policy`; the pod's
 * hami.io/gpu-scheduler-policy and hami.io/node-scheduler-policy annotations win. */
int ext_pod_request_init(struct ext_pod_request *req, const json_t *pod,
                         const struct ext_inventory *inv, enum alloc_policy gpu_policy,
                         enum ext_node_policy node_policy, struct gs_error *err);
void ext_pod_request_fini(struct ext_pod_request *req);

struct ext_fit {
    bool fits;
    char reason[48];               /* HAMi's name: CardInsufficientMemory, CardUuidMismatch, ... */
    char message[512];             /* HAMi's GenReason text: "1/4 CardInsufficientMemory, ..." */
    double score;                  /* used memory fraction of the node after placement */
    int64_t mem_added;             /* MiB the pod takes on the node */
    struct hami_ctr_devices *ctrs; /* n_containers entries when fits (owned) */
};

/* Try the pod on one node; the inventory is left unchanged. Returns 0 (see fit->fits) or a
 * negative code for an error that is not about this node. */
int ext_try_node(struct ext_inventory *inv, const struct ext_pod_request *req, const char *node,
                 bool commit, struct ext_fit *fit, struct gs_error *err);
void ext_fit_fini(struct ext_fit *fit);

/*
 * HAMi's per-card rules for the pod on one node (Fit in pkg/device/nvidia/device.go, v2.10.0, and
 * the NodeInsufficientDevice check of fitInDevices in pkg/scheduler/score.go): health, type and
 * uuid annotations, task count, mutex, memory, cores, exclusive use, compute exhausted, NUMA.
 * Returns true when every container finds its cards; else false with `fit->reason`/`message`
 * in HAMi's text. Sets `fit->score` to the node's used memory fraction after placement.
 */
bool ext_hami_check(const struct ext_node *node, const struct ext_pod_request *req,
                    struct ext_fit *fit);

/*
 * The filter over `n` nodes: HAMi's rules on every node, then our allocator on the nodes that
 * pass, best by node policy first, until one fits (HAMi's filter answers one node). fits[i] is
 * filled for every node (fits[i].fits only for the chosen one); *best is its index or -1.
 */
int ext_filter_nodes(struct ext_inventory *inv, const struct ext_pod_request *req,
                     const char *const *names, size_t n, struct ext_fit *fits, long *best,
                     struct gs_error *err);

int ext_node_policy_parse(const char *s, enum ext_node_policy *out, struct gs_error *err);

#endif /* GS_EXTENDER_SCHEDULE_H */
