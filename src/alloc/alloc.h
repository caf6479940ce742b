/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA allocator: Kubernetes' structured-parameters allocation (resource.k8s.io/v1, as
 * kube-scheduler 1.36 does it) plus explanations and placement policies.
 * See docs/internals/alloc.md.
 *
 *   struct alloc_state *st = alloc_state_new();
 *   alloc_state_add_object(st, slice_json, &err);     // ResourceSlice, DeviceClass, Node, or an
 *   alloc_state_add_object(st, class_json, &err);     // already-allocated ResourceClaim
 *   struct alloc_options opt = {.node = "node-1", .policy = ALLOC_POLICY_FIRST_FIT};
 *   json_t *allocation = NULL;
 *   struct alloc_explanation *why = NULL;
 *   int r = alloc_claim(st, claim_json, &opt, &allocation, &why, &err);
 *   // r == 0: `allocation` is the claim's status.allocation, already committed to the state;
 *   // r == ALLOC_UNSCHEDULABLE: no allocation on this node, `why` says why per request/device;
 *   // r < 0 otherwise: bad input or an error that stops allocation (err names field and value).
 *   alloc_explanation_print(why, stdout);
 *
 * Inputs are jansson objects exactly as the API server serves them (camelCase fields). Objects
 * are decoded on add; the state keeps its own copies (callers keep ownership of theirs).
 *
 * Threads: a state is not locked; use one state per thread or lock around every call.
 */
#ifndef GS_ALLOC_ALLOC_H
#define GS_ALLOC_ALLOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

/* Limits as resource.k8s.io/v1 validation and the scheduler enforce them. */
#define ALLOC_MAX_REQUESTS    32 /* requests per claim */
#define ALLOC_MAX_SUBREQUESTS 8  /* firstAvailable entries per request */
#define ALLOC_MAX_RESULTS     32 /* devices per allocation */
#define ALLOC_MAX_CONSTRAINTS 32 /* constraints per claim */
#define ALLOC_MAX_SELECTORS   32 /* selectors per request or class */

/* alloc_claim(): the claim does not fit on the node (not an error in the input). */
#define ALLOC_UNSCHEDULABLE (-ENOSPC)
/* alloc_claim(): the search hit opt->step_limit before finding an answer. */
#define ALLOC_SEARCH_LIMIT (-ETIME)

enum alloc_policy {
    ALLOC_POLICY_FIRST_FIT = 0, /* first solution of the depth-first search: kube-scheduler */
    ALLOC_POLICY_BINPACK,       /* fill devices that are already used most */
    ALLOC_POLICY_SPREAD,        /* prefer the least used devices */
    ALLOC_POLICY_TOPOLOGY,      /* multi-device: same nvlinkDomain, then same PCIe root */
};

/* "first-fit", "binpack", "spread", "topology". Returns 0 or -EINVAL (message names the value). */
int alloc_policy_parse(const char *s, enum alloc_policy *out, struct gs_error *err);
const char *alloc_policy_name(enum alloc_policy p);

struct alloc_options {
    const char *node;         /* node name; required */
    enum alloc_policy policy; /* default first-fit */
    bool explain;             /* build an explanation even when the claim fits */
    unsigned max_solutions;   /* scoring policies: complete solutions compared (0 = 64) */
    unsigned long max_steps;  /* scoring policies: search steps after the first solution
                                 (0 = 100000) */
    unsigned long step_limit; /* any policy: the search gives up after this many steps, as
                                 kube-scheduler's filter times out (0 = 10,000,000) */
    bool trial;               /* find the allocation, do not commit it: the state is left as
                                 it was and the allocation has no shareID (a filter's try) */
};

struct alloc_state;

struct alloc_state *alloc_state_new(void);
void alloc_state_free(struct alloc_state *st);

/* Decode and add one object by its `kind`: ResourceSlice, DeviceClass, Node (labels for node
 * selectors) or ResourceClaim (its status.allocation joins the in-use state; a claim without
 * allocation is ignored and returns 1). A DeviceClass or Node with the name of an earlier one
 * replaces it; ResourceSlices are kept by name (a later one with the same name replaces it).
 * Bad input: -EINVAL with err naming the object and the field, e.g.
 *   "ResourceSlice node-1-gpus: spec.devices[0].capacity.memory.value: \"15Qi\" is not a quantity"
 */
int alloc_state_add_object(struct alloc_state *st, const json_t *obj, struct gs_error *err);
int alloc_state_add_slice(struct alloc_state *st, const json_t *slice, struct gs_error *err);
int alloc_state_add_class(struct alloc_state *st, const json_t *cls, struct gs_error *err);
int alloc_state_add_node(struct alloc_state *st, const json_t *node, struct gs_error *err);
int alloc_state_add_allocated_claim(struct alloc_state *st, const json_t *claim,
                                    struct gs_error *err);
/* Forget the allocation of claim "namespace/name" (its devices and capacity become free).
 * Returns 0, or -ENOENT if no such allocated claim is known. */
int alloc_state_release_claim(struct alloc_state *st, const char *ns, const char *name);
/* Number of allocated claims the state knows. */
size_t alloc_state_claim_count(const struct alloc_state *st);

/*
 * Explanation of one alloc_claim() call: per request, per device, with stable reason codes.
 *  claim:   Allocated, Unschedulable, CelError, ClassNotFound, PoolInvalid, PoolIncomplete,
 *           SearchLimit,
 *           ConstraintMismatch, InvalidClaim, Error
 *  request: Allocated, InsufficientDevices ("need 1 device, 0 of 3 usable"), NoDevices,
 *           ClassNotFound, PoolIncomplete, ConstraintMismatch, TooManyDevices,
 *           RequestsConflict (each device fits alone, not together with the other requests)
 *  device:  Fits, PoolInvalid, PoolIncomplete, DeviceInUse, DeviceExclusive, SelectorMismatch,
 *           CelError, NodeMismatch, DeviceTainted, InsufficientCounters, CapacityMissing,
 *           CapacityPolicy ("memory: 20Gi above max 15Gi"),
 *           InsufficientCapacity ("cores: need 80, free 40"), InvalidRequest
 *  HAMi's names where one exists (device reasons): CardInsufficientCore / CardInsufficientMemory
 *  (InsufficientCapacity of cores / memory), CardUuidMismatch / CardTypeMismatch
 *  (SelectorMismatch on a selector that reads a uuid / any other).
 */
struct alloc_explanation;

/*
 * Allocate `claim` (a ResourceClaim object; its status is ignored) on opt->node.
 *  - 0: *allocation = the status.allocation object (new reference); the allocation is committed
 *    into the state's in-use set under the claim's namespace/name.
 *  - ALLOC_UNSCHEDULABLE: no solution; *explanation (if asked for) says why.
 *  - other negative code: invalid claim/class (e.g. unknown DeviceClass), a CEL error, or a
 *    policy that aborts allocation as kube-scheduler does; err names it and *explanation (if
 *    asked for) carries the reason too.
 * `allocation` and `explanation` may be NULL when the caller does not want them. An explanation
 * is produced on failure, or on success when opt->explain is set. A claim the state already
 * holds is allocated afresh (its own devices count as free; on failure its old allocation
 * stays).
 */
int alloc_claim(struct alloc_state *st, const json_t *claim, const struct alloc_options *opt,
                json_t **allocation, struct alloc_explanation **explanation, struct gs_error *err);

/*
 * A claim decoded once and tried on many nodes (as a scheduler does): alloc_claim() is
 * alloc_claim_spec_new() + alloc_claim_spec_allocate() + alloc_claim_spec_release().
 * The decoded claim does not refer to the JSON object it came from.
 */
struct alloc_claim_spec;
struct alloc_claim_spec *alloc_claim_spec_new(const json_t *claim, struct gs_error *err);
void alloc_claim_spec_release(struct alloc_claim_spec *claim);
int alloc_claim_spec_allocate(struct alloc_state *st, const struct alloc_claim_spec *claim,
                              const struct alloc_options *opt, json_t **allocation,
                              struct alloc_explanation **explanation, struct gs_error *err);

/*
 * A pod's claims, allocated together on one node as kube-scheduler does (one search over all
 * their requests; a device taken by one claim is not free for another unless shareable).
 * All or nothing: on 0 every claim is committed and allocations[i] is claim i's
 * status.allocation; otherwise nothing changes. explanations[i] as for alloc_claim().
 * `allocations` and `explanations` (arrays of n) may be NULL.
 */
int alloc_claims_allocate(struct alloc_state *st, const struct alloc_claim_spec *const *claims,
                          size_t n, const struct alloc_options *opt, json_t **allocations,
                          struct alloc_explanation **explanations, struct gs_error *err);

void alloc_explanation_free(struct alloc_explanation *e);
/* Text, one line per request and per device:
 *   claim test-dra/big on node n1: Unschedulable
 *     request gpu: InsufficientDevices: need 1 device, 0 of 1 usable
 *       hami-core-gpu.project-hami.io/hami-workshop/hami-gpu-0: InsufficientCapacity cores:
 *         need 80, free 40 [CardInsufficientCore]
 */
void alloc_explanation_print(const struct alloc_explanation *e, FILE *out);
/* {"claim", "node", "allocated", "reason", "message", "requests": [{"request", "reason",
 *  "message", "devices": [{"device": "driver/pool/device", "reason", "message",
 *  "hamiReason" (when HAMi has a name for it)}]}]} */
json_t *alloc_explanation_json(const struct alloc_explanation *e);
/* Outcome reason of the whole claim ("Allocated", "Unschedulable", "CelError", ...). */
const char *alloc_explanation_reason(const struct alloc_explanation *e);

#endif /* GS_ALLOC_ALLOC_H */
