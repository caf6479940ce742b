/* SPDX-License-Identifier: Apache-2.0 */
/* What the allocator's files share among themselves (see docs/internals/alloc.md). */
#ifndef GS_ALLOC_ALLOC_INTERNAL_H
#define GS_ALLOC_ALLOC_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc/alloc.h"
#include "base/error.h"
#include "config/quantity.h"

struct cel_cache;

/* ---- quantities (capacity.c) ---------------------------------------------------------------
 * Exact values in nano-units held in 128 bits (Kubernetes keeps nano precision), plus the
 * format the value was written in, which decides how it is printed. */
struct alloc_qty {
    __int128 n; /* value * 10^9 */
    int64_t v;  /* Value(): whole units rounded up, saturated; set by parse/from_int and kept by
                   copies (sums in usage and pending only maintain n) */
    enum gs_quantity_format fmt;
};

#define ALLOC_NANO ((__int128)1000000000)
/* Devices cache the capacity-request mapping of requests and devices up to this many entries. */
#define ALLOC_CAPREQ_CACHE 8

int alloc_qty_parse(const char *s, struct alloc_qty *out, struct gs_error *err);
/* Canonical Kubernetes string (Quantity.String()). */
void alloc_qty_format(const struct alloc_qty *q, char *buf, size_t len);
/* Kubernetes Value(): integer units rounded up (cached in q->v). Saturates at INT64 bounds. */
int64_t alloc_qty_value(const struct alloc_qty *q);
struct alloc_qty alloc_qty_from_int(int64_t v, enum gs_quantity_format fmt);

/* ---- model (model.c) ------------------------------------------------------------------------ */
struct alloc_capacity {
    char *name; /* as published */
    char *fq;   /* fully qualified: "<driver>/<name>" when published without domain */
    struct alloc_qty value;
    bool has_policy;
    bool has_default;
    struct alloc_qty def;
    bool has_range;
    bool has_min, has_max, has_step;
    struct alloc_qty min, max, step;
    size_t n_valid;
    struct alloc_qty *valid;
    /* Cache owned by the state the device is in: position + 1 of this capacity in the device's
     * usage record (0: not among its first usage_seen entries; entries are only appended). */
    size_t usage_pos;
    size_t usage_seen;
};

struct alloc_slice;
struct alloc_usage;

/* Partitionable devices (KEP-4815): a slice's sharedCounters, a device's consumesCounters. */
struct alloc_counter {
    char *name;
    struct alloc_qty q;
};

struct alloc_counter_set {
    char *name; /* counter set name (for consumesCounters: the set consumed from) */
    size_t n;
    struct alloc_counter *c;
};

struct alloc_device {
    char *name;
    struct alloc_slice *slice;
    json_t *attributes; /* object or NULL (own reference) */
    json_t *capacity_json;
    size_t n_cap;
    struct alloc_capacity *cap;
    bool shareable; /* allowMultipleAllocations */
    /* perDeviceNodeSelection */
    char *node_name;
    bool all_nodes;
    json_t *node_selector;
    json_t *taints; /* array or NULL */
    size_t n_consumes;
    struct alloc_counter_set *consumes; /* consumesCounters */
    json_t *binding_conditions;         /* array or NULL */
    json_t *binding_failure_conditions; /* array or NULL */
    bool binds_to_node;                 /* bindsToNode: the allocation pins the node */
    char *key;                          /* driver \x1f pool \x1f device */
    struct alloc_usage *usage;          /* in-use record in the state, never NULL once added */
    /* class selector cache (class serial -> result) */
    uint64_t class_serial[2];
    int8_t class_match[2];
    struct alloc_cap_layout *layout; /* the state's, NULL before it is added or when too wide */
};

/* Devices with the same driver and the same capacities in the same order share one layout (in
 * the state): a request's capacity names are resolved once per layout, not once per device.
 * capreq_cap[j] = device capacity of request capacity j; cap_capreq[i] the inverse (-1), for
 * the request with serial capreq_serial (0: none yet). */
struct alloc_cap_layout {
    uint64_t capreq_serial;
    int8_t capreq_cap[ALLOC_CAPREQ_CACHE];
    int8_t cap_capreq[ALLOC_CAPREQ_CACHE];
};

struct alloc_slice {
    char *name;
    char *driver;
    char *pool;
    int64_t generation;
    int64_t slice_count;
    char *node_name;
    bool all_nodes;
    json_t *node_selector;
    bool per_device;
    size_t n_csets;
    struct alloc_counter_set *csets; /* sharedCounters */
    size_t n_dev;
    struct alloc_device *dev;
};

struct alloc_selector {
    char *expr;
};

struct alloc_class {
    char *name;
    uint64_t serial;
    size_t n_sel;
    struct alloc_selector *sel;
    json_t *config; /* spec.config array or NULL */
};

struct alloc_cap_request {
    char *name;
    struct alloc_qty q;
};

enum alloc_mode { ALLOC_MODE_EXACT = 0, ALLOC_MODE_ALL };

struct alloc_request {
    uint64_t serial; /* unique in the process (decoders number requests); 0: not cached */
    char *name;
    char *class_name;
    enum alloc_mode mode;
    int64_t count;
    bool admin;
    size_t n_sel;
    struct alloc_selector *sel;
    size_t n_capreq;
    struct alloc_cap_request *capreq;
    json_t *tolerations; /* array or NULL */
    /* firstAvailable: subrequests (then the fields above are unused, except name) */
    size_t n_sub;
    struct alloc_request *sub;
};

enum alloc_constraint_kind { ALLOC_CONSTRAINT_MATCH, ALLOC_CONSTRAINT_DISTINCT };

struct alloc_constraint {
    enum alloc_constraint_kind kind;
    char *attribute;
    size_t n_req;
    char **requests;
};

struct alloc_claim_spec {
    char *ns;
    char *name;
    char *uid;
    size_t n_req;
    struct alloc_request *req;
    size_t n_con;
    struct alloc_constraint *con;
    json_t *config; /* spec.devices.config or NULL */
};

/* One device of an allocation result (also what an allocated claim holds in the state). */
struct alloc_result {
    char *request; /* "req" or "req/sub" */
    char *driver, *pool, *device;
    char *share_id; /* NULL for exclusive */
    bool admin;
    size_t n_consumed;
    char **consumed_name; /* as in status (device's spelling) */
    char **consumed_fq;
    struct alloc_qty *consumed;
};

void alloc_slice_free(struct alloc_slice *s);
void alloc_class_free(struct alloc_class *c);
void alloc_claim_spec_free(struct alloc_claim_spec *c);
void alloc_result_fini(struct alloc_result *r);

int alloc_decode_slice(const json_t *obj, struct alloc_slice **out, struct gs_error *err);
int alloc_decode_class(const json_t *obj, struct alloc_class **out, struct gs_error *err);
int alloc_decode_claim(const json_t *obj, struct alloc_claim_spec **out, struct gs_error *err);
/* status.allocation.devices.results of an allocated claim; 1 if it has no allocation. */
int alloc_decode_results(const json_t *claim, struct alloc_result **out, size_t *n,
                         struct gs_error *err);
/* Fully-qualified form of a capacity/attribute name for `driver`; malloc'd. */
char *alloc_fq_name(const char *name, const char *driver);

/* ---- string map (map.c) --------------------------------------------------------------------- */
struct alloc_map_entry {
    char *key;
    void *value;
};

struct alloc_map {
    size_t cap, len;
    struct alloc_map_entry *e;
};

void *alloc_map_get(const struct alloc_map *m, const char *key);
/* Insert or replace; the map keeps a copy of the key. Returns the previous value or NULL. */
int alloc_map_put(struct alloc_map *m, const char *key, void *value, void **old);
void *alloc_map_remove(struct alloc_map *m, const char *key);
void alloc_map_fini(struct alloc_map *m, void (*free_value)(void *));

/* ---- state (state.c) ------------------------------------------------------------------------ */
struct alloc_usage_cap {
    char *fq;
    struct alloc_qty q;
};

struct alloc_usage {
    uint64_t changed;   /* the state's usage clock when this record last changed */
    unsigned exclusive; /* allocations without shareID (not counting adminAccess) */
    unsigned shared;    /* allocations with shareID */
    size_t n;
    struct alloc_usage_cap *cap; /* sum of consumedCapacity of shared allocations */
};

struct alloc_allocated_claim {
    char *key; /* namespace/name */
    size_t n;
    struct alloc_result *res;
};

struct alloc_node {
    char *name;
    json_t *labels; /* object */
};

struct alloc_pool {
    const char *driver;
    const char *pool;
    bool incomplete;
    bool invalid;
    char invalid_reason[160];
    size_t n_slices;
    struct alloc_slice **slices;
};

struct alloc_slice_list {
    size_t n, cap;
    struct alloc_slice **v;
};

struct alloc_node_pools {
    uint64_t generation;
    size_t n;
    struct alloc_pool *pools;
    /* Free-capacity summary for the search's pre-check (search.c): when every usable device of
     * the usable pools shares one layout, the most any of them has free per capacity. Valid while
     * no device's usage changed after usage clock sum_clock. */
    bool sum_built;
    uint64_t sum_clock;
    bool sum_one_layout;
    bool sum_any; /* some device is not blocked by an allocation */
    const struct alloc_device *sum_dev;
    __int128 sum_free[ALLOC_CAPREQ_CACHE];
};

struct alloc_state {
    struct alloc_map slices;     /* name -> struct alloc_slice */
    struct alloc_map classes;    /* name -> struct alloc_class */
    struct alloc_map nodes;      /* name -> struct alloc_node */
    struct alloc_map usage;      /* device key -> struct alloc_usage */
    struct alloc_map layouts;    /* driver \x1e fq \x1f fq ... -> struct alloc_cap_layout */
    struct alloc_map claims;     /* ns/name -> struct alloc_allocated_claim */
    uint64_t usage_clock;        /* ticks on every change of a usage record */
    struct alloc_map node_pools; /* node -> struct alloc_node_pools (cache) */
    uint64_t slices_generation;  /* bumps when slices or nodes change */
    /* Index for gathering: nodeName -> struct alloc_slice_list, and the slices that are not
     * bound to one node by name. Rebuilt when slices_generation moves. */
    uint64_t index_generation;
    struct alloc_map by_node;
    size_t n_unbound, cap_unbound;
    struct alloc_slice **unbound;
    struct alloc_map by_pool; /* driver \x1f pool -> struct alloc_slice_list (every slice) */
    uint64_t next_class_serial;
    struct cel_cache *cel;
    /* Scratch memory for one search (reset after each): avoids a dozen malloc/free pairs per
     * (claim, node) attempt. */
    struct alloc_scratch *scratch;
};

/* Zeroed memory valid until alloc_scratch_reset(); NULL when out of memory. */
void *alloc_scratch_get(struct alloc_state *st, size_t size);
/* The same, not zeroed (for buffers written before they are read). */
void *alloc_scratch_get_raw(struct alloc_state *st, size_t size);
void alloc_scratch_reset(struct alloc_state *st);
void alloc_scratch_free(struct alloc_state *st);

struct alloc_usage *alloc_state_usage(struct alloc_state *st, const char *key);
void alloc_usage_add(struct alloc_usage *u, const struct alloc_result *r, int sign);
const struct alloc_qty *alloc_usage_get(const struct alloc_usage *u, const char *fq);
int alloc_state_commit(struct alloc_state *st, const char *ns, const char *name,
                       struct alloc_result *res, size_t n);
/* Take claim ns/name's allocation out of the in-use set (NULL if none) / put it back. */
struct alloc_allocated_claim *alloc_state_take_claim(struct alloc_state *st, const char *ns,
                                                     const char *name);
void alloc_state_restore_claim(struct alloc_state *st, struct alloc_allocated_claim *c);
void alloc_allocated_claim_free(struct alloc_allocated_claim *c);

/* ---- pools (pools.c) ------------------------------------------------------------------------ */
/* Pools visible from `node`, sorted by (driver, pool); slices sorted by name. Cached. */
const struct alloc_node_pools *alloc_pools_for_node(struct alloc_state *st, const char *node,
                                                    struct gs_error *err);
void alloc_node_pools_free(void *p);
void alloc_slice_index_free(struct alloc_state *st);
/* Every slice of a pool, whatever node it targets (for counter sets). NULL when none. */
const struct alloc_slice_list *alloc_pool_slices(struct alloc_state *st, const char *driver,
                                                 const char *pool);
/* Kubernetes nodeMatches(): nodeName, allNodes, or a v1.NodeSelector against node labels. */
int alloc_node_matches(const struct alloc_state *st, const char *node, const char *node_name,
                       bool all_nodes, const json_t *selector, bool *out, struct gs_error *err);

/* ---- capacity (capacity.c) ------------------------------------------------------------------ */
enum alloc_cap_verdict {
    ALLOC_CAP_OK = 0,
    ALLOC_CAP_MISSING,      /* request names a capacity the device lacks */
    ALLOC_CAP_POLICY,       /* violates requestPolicy (above max, off step, not a valid value) */
    ALLOC_CAP_INSUFFICIENT, /* sum would exceed the device's value */
};

struct alloc_cap_check {
    enum alloc_cap_verdict verdict;
    size_t cap_index; /* which capacity failed */
    struct alloc_qty need, free_;
    char detail[160];
};

/* Consumed amount of capacity `c` for a request value (NULL: not requested). -ERANGE when not
 * representable, -EINVAL for a negative result (both abort allocation as upstream). */
int alloc_consumed(const struct alloc_qty *requested, const struct alloc_capacity *c,
                   struct alloc_qty *out, struct gs_error *err);
/* Match request `r`'s capacity requests to device capacities: idx[i] = request index for
 * capacity i or -1. Returns 0, 1 when a requested capacity is missing (name in *missing), or
 * -EINVAL when the request names one capacity twice. */
int alloc_capreq_resolve(const struct alloc_request *r, const struct alloc_device *d, int *idx,
                         const char **missing, struct gs_error *err);
/* Full check: consumed amounts (out, n_cap entries) and verdict against in-use plus `pending`
 * (amounts already taken in this search, n_cap entries or NULL). Negative on abort. */
int alloc_capacity_check(const struct alloc_request *r, const struct alloc_device *d,
                         const struct alloc_qty *pending, struct alloc_qty *consumed,
                         struct alloc_cap_check *chk, struct gs_error *err);
/* The same without the message in chk->detail (the search only needs the verdict). */
int alloc_capacity_fits(const struct alloc_request *r, const struct alloc_device *d,
                        const struct alloc_qty *pending, struct alloc_qty *consumed,
                        struct alloc_cap_check *chk, struct gs_error *err);

/* Necessary condition, cheap: every capacity `r` requests exists on `d` and what `d` has free
 * is at least the requested amount (consumption never goes below the request). */
bool alloc_capacity_may_fit(const struct alloc_request *r, const struct alloc_device *d);
/* Device capacity of each of r's capacity requests (map[j]), from the layout's cache; NULL
 * when not cacheable (no layout, no serial, too many) or a capacity is missing or named twice. */
const int8_t *alloc_capreq_map(const struct alloc_request *r, const struct alloc_device *d);
/* What device capacity `i` has in use (sum of shared allocations), through the device's cache
 * (the caches in a device are the state's: mutable even through a const device). */
const struct alloc_qty *alloc_capacity_used(const struct alloc_device *d, size_t i);

/* ---- counters (counters.c) ------------------------------------------------------------------ */
struct alloc_counter_avail {
    const char *set, *name;
    __int128 avail;   /* counter set value minus what allocated devices consume */
    __int128 pending; /* taken by devices chosen in this search */
    enum gs_quantity_format fmt;
};

struct alloc_pool_counters {
    size_t n;
    struct alloc_counter_avail *e;
};

int alloc_counters_init(struct alloc_state *st, const struct alloc_pool *pool,
                        struct alloc_pool_counters *pc);
void alloc_counters_fini(struct alloc_pool_counters *pc);
/* Take what `d` consumes; false (and nothing taken, `detail` says why) if a counter would be
 * exceeded. */
bool alloc_counters_take(struct alloc_pool_counters *pc, const struct alloc_device *d, char *detail,
                         size_t len);
void alloc_counters_give(struct alloc_pool_counters *pc, const struct alloc_device *d);

/* ---- constraints (constraints.c) ------------------------------------------------------------ */
struct alloc_constraint_state {
    const struct alloc_constraint *c;
    size_t n; /* devices in the set */
    size_t cap;
    const json_t **vals; /* match: vals[0] is the value; distinct: every value */
};

/* Returns true when added (or the constraint does not apply to the request). */
bool alloc_constraint_add(struct alloc_constraint_state *cs, const char *req, const char *sub,
                          const struct alloc_device *d);
void alloc_constraint_remove(struct alloc_constraint_state *cs, const char *req, const char *sub,
                             const struct alloc_device *d);
const json_t *alloc_lookup_attribute(const struct alloc_device *d, const char *fqname);
bool alloc_attr_equal(const json_t *a, const json_t *b);

/* ---- explanations (explain.c) --------------------------------------------------------------- */
struct alloc_device_reason {
    char *device; /* driver/pool/device */
    const char *driver_name;
    const char *reason;
    const char *hami;
    char message[200];
};

struct alloc_request_reason {
    char *request;
    const char *reason;
    char message[240];
    size_t n_dev, cap_dev;
    struct alloc_device_reason *dev;
};

struct alloc_explanation {
    char *claim;
    char *node;
    bool allocated;
    const char *reason;
    char message[GS_ERROR_MSG_MAX];
    size_t n_req, cap_req;
    struct alloc_request_reason *req;
};

struct alloc_explanation *alloc_explanation_new(const char *claim, const char *node);
struct alloc_request_reason *alloc_explanation_add_request(struct alloc_explanation *e,
                                                           const char *request);
struct alloc_device_reason *alloc_explanation_add_device(struct alloc_request_reason *r,
                                                         const struct alloc_device *d);

/* ---- search (search.c), policies (policy.c), explanations (explain.c) --------------------- */
/* One device of a complete solution, for scoring: the device and the total amounts this
 * claim takes from it (n_cap entries). */
struct alloc_pick {
    const struct alloc_device *dev;
    const struct alloc_qty *pending;
};

/* Score of a complete solution under `policy`; higher is better. */
double alloc_policy_score(enum alloc_policy policy, const struct alloc_pick *picks, size_t n);

/* Search for an allocation of all `claims` together on opt->node. 0: res[i] and n[i] hold claim
 * i's results (owned by the caller) and allocation[i] its status.allocation JSON;
 * ALLOC_UNSCHEDULABLE; or a negative error. */
int alloc_search(struct alloc_state *st, const struct alloc_claim_spec *const *claims,
                 size_t n_claims, const struct alloc_options *opt, struct alloc_result **res,
                 size_t *n, json_t **allocation, struct gs_error *err);

/* Explain, per request and per device, why a claim does (not) fit on `node`. `outcome` is what
 * the search returned (0, ALLOC_UNSCHEDULABLE, or an error). */
int alloc_explain_claim(struct alloc_state *st, const struct alloc_claim_spec *claim,
                        const char *node, int outcome, struct alloc_explanation *e);

/* ---- output (output.c) ---------------------------------------------------------------------- */
struct alloc_chosen {
    const struct alloc_device *dev;
    const struct alloc_result *res;
};

/* status.allocation for `claim`: results, config (class configs of the selected requests, then
 * the claim's), nodeSelector. sel_class[i]: class of request i (its selected subrequest).
 * results_only (a trial): devices.results alone, no config and no nodeSelector. */
json_t *alloc_allocation_json(const struct alloc_claim_spec *claim, const char *node,
                              const struct alloc_class *const *sel_class, const int *selected_sub,
                              const struct alloc_chosen *ch, size_t n, bool results_only,
                              struct gs_error *err);
/* Random RFC 4122 version 4 UUID, lower case. */
void alloc_new_share_id(char out[37]);

/* Selector evaluation shared by search and explain: 1 match, 0 no match, <0 CEL error. */
int alloc_class_matches(struct alloc_state *st, const struct alloc_class *cls,
                        struct alloc_device *d, struct gs_error *err);
int alloc_selectors_match(struct alloc_state *st, const struct alloc_selector *sel, size_t n,
                          const struct alloc_device *d, size_t *failed, struct gs_error *err);
bool alloc_taints_tolerated(const struct alloc_device *d, const json_t *tolerations,
                            const char **taint_key);

#endif /* GS_ALLOC_ALLOC_INTERNAL_H */
