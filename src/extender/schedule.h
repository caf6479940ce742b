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
#include "extender/hami.h"
#include "extender/inventory.h"

#define EXT_MAX_CONTAINERS 64

enum ext_node_policy {
    EXT_NODE_BINPACK = 0, /* HAMi's default: the most used node that fits */
    EXT_NODE_SPREAD,      /* the least used node */
};

struct ext_pod_request {
    const char *ns, *name;
    size_t n_containers;               /* spec.containers */
    size_t n_claims;                   /* containers with GPU resources */
    size_t ctr_of[EXT_MAX_CONTAINERS]; /* claim i -> container index */
    struct alloc_claim_spec *spec[EXT_MAX_CONTAINERS];
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
    char message[512];             /* "<reason>: <allocator's detail>" */
    double score;                  /* used memory fraction of the node after placement */
    int64_t mem_added;             /* MiB the pod takes on the node */
    struct hami_ctr_devices *ctrs; /* n_containers entries when fits (owned) */
};

/* Try the pod on one node; the inventory is left unchanged. Returns 0 (see fit->fits) or a
 * negative code for an error that is not about this node. */
int ext_try_node(struct ext_inventory *inv, const struct ext_pod_request *req, const char *node,
                 bool commit, struct ext_fit *fit, struct gs_error *err);
void ext_fit_fini(struct ext_fit *fit);

int ext_node_policy_parse(const char *s, enum ext_node_policy *out, struct gs_error *err);

#endif /* GS_EXTENDER_SCHEDULE_H */
