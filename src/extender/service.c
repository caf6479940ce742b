/* SPDX-License-Identifier: Apache-2.0 */
/* filter / prioritize / bind (see service.h). */
#include "extender/service.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/clock.h"
#include "config/json.h"
#include "base/log.h"
#include "base/macros.h"
#include "extender/assign.h"
#include "hami/hami.h"
#include "extender/inventory.h"
#include "webhook/shape.h"

struct ext_service {
    struct ext_service_config cfg;
    pthread_mutex_t lock;
    struct ext_stats stats;
    /* The inventory of the last filter/prioritize and the digest of what it was built from: the
     * next call with the same nodes and placed pods reuses it instead of decoding again. */
    struct ext_inventory *cached;
    uint64_t cached_key[2];
};

struct ext_service *ext_service_new(const struct ext_service_config *cfg)
{
    struct ext_service *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cfg = *cfg;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void ext_service_free(struct ext_service *s)
{
    if (!s)
        return;
    ext_inventory_free(s->cached);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void ext_service_stats(struct ext_service *s, struct ext_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    pthread_mutex_unlock(&s->lock);
}

/* Go's encoding/json matches keys case-insensitively: so do we ("pod", "Pod"). */
static const json_t *get_ci(const json_t *o, const char *key)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v) if (strcasecmp(k, key) == 0) return v;
    return NULL;
}

static int list_all(struct ext_service *s, const struct gs_k8s_resource *res, json_t **items,
                    struct gs_error *err)
{
    json_t *list = NULL;
    struct gs_k8s_list_options lo = {.page_size = 500};
    int r = gs_k8s_list(s->cfg.k8s, res, NULL, &lo, &list, NULL, err);
    if (r < 0)
        return r;
    *items = json_incref(json_object_get(list, "items"));
    json_decref(list);
    if (!*items)
        *items = json_array();
    return 0;
}

/* Candidate nodes: full objects from the args, or the named ones from the API. */
static int candidates(struct ext_service *s, const json_t *args, json_t **nodes, bool *by_name,
                      struct gs_error *err)
{
    const json_t *nl = get_ci(args, "nodes");
    const json_t *names = get_ci(args, "nodenames");
    if (json_is_object(nl)) {
        const json_t *items = get_ci(nl, "items");
        *nodes = json_is_array(items) ? json_incref((json_t *)items) : json_array();
        *by_name = false;
        return 0;
    }
    if (!json_is_array(names))
        return gs_error_set(err, -EINVAL, "ExtenderArgs: neither nodes nor nodenames is given");
    *by_name = true;
    _cleanup_(gs_json_decrefp) json_t *all = NULL;
    int r = list_all(s, &gs_k8s_nodes, &all, err);
    if (r < 0)
        return r;
    json_t *out = json_array();
    size_t i, k;
    const json_t *n, *node;
    json_array_foreach(names, i, n)
    {
        const char *want = json_string_value(n);
        bool found = false;
        json_array_foreach(all, k, node)
        {
            const char *nm =
                json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
            if (want && nm && strcmp(want, nm) == 0) {
                json_array_append(out, (json_t *)node);
                found = true;
                break;
            }
        }
        if (!found && want) /* unknown to the API: still answered (as unregistered) */
            json_array_append_new(out, json_pack("{s:{s:s}}", "metadata", "name", want));
    }
    *nodes = out;
    return 0;
}

static const char *node_name(const json_t *node)
{
    return json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
}

/* Two FNV-1a 64 digests (different offsets) of everything the inventory is built from. */
static void digest_str(uint64_t h[2], const char *v)
{
    for (const unsigned char *c = (const unsigned char *)(v ? v : "\x01"); *c; c++) {
        h[0] = (h[0] ^ *c) * 0x100000001b3ULL;
        h[1] = (h[1] ^ *c) * 0x100000001b3ULL;
    }
    h[0] = (h[0] ^ 0xff) * 0x100000001b3ULL; /* separator */
    h[1] = (h[1] ^ 0xfe) * 0x100000001b3ULL;
}

static const char *ann(const json_t *o, const char *k)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), k));
}

/* Digest of the nodes (name, annotations the inventory reads, placement records) and of the pods
 * that ask for our resources (namespace, name, uid, node, phase, placement annotations), the pod
 * being scheduled excluded exactly as ext_inventory_build excludes it. */
static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void inventory_key(const json_t *nodes, const json_t *pods, const char *skip_ns,
                          const char *skip_name, uint64_t key[2])
{
    key[0] = 0xcbf29ce484222325ULL, key[1] = 0x84222325cbf29ce4ULL;
    size_t i, n_uids = 0, cap = 0;
    _cleanup_free_ const char **uids = NULL; /* pod UIDs that have a record */
    bool every = false;
    const json_t *o;
    json_array_foreach(nodes, i, o)
    {
        digest_str(key, node_name(o));
        digest_str(key, ann(o, HAMI_ANN_NODE_REGISTER));
        digest_str(key, ann(o, HAMI_ANN_NODE_HANDSHAKE));
        const char *k;
        const json_t *v;
        json_object_foreach(json_object_get(json_object_get(o, "metadata"), "annotations"), k, v)
        {
            if (strncmp(k, EXT_ASSIGN_PREFIX, strlen(EXT_ASSIGN_PREFIX)) != 0)
                continue;
            digest_str(key, k); /* placement records */
            digest_str(key, json_string_value(v));
            if (n_uids == cap) {
                size_t nc = cap ? 2 * cap : 16;
                const char **nu = realloc(uids, nc * sizeof(*nu));
                if (!nu) { /* digest every pod asking GPUs instead */
                    every = true;
                    continue;
                }
                uids = nu, cap = nc;
            }
            uids[n_uids++] = k + strlen(EXT_ASSIGN_PREFIX);
        }
    }
    if (n_uids > 1)
        qsort(uids, n_uids, sizeof(*uids), str_cmp);
    json_array_foreach(pods, i, o)
    {
        /* What may book (ext_inventory_build): a pod asking our resources that is bound, says
         * where it was placed, or has a record. */
        if (!ext_pod_requests_gpu(o))
            continue;
        const char *on = ann(o, HAMI_ANN_NODE);
        const json_t *md = json_object_get(o, "metadata");
        const char *uid = json_string_value(json_object_get(md, "uid"));
        const char *bound =
            json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName"));
        if (!every && !on && !(bound && *bound) &&
            !(uid && n_uids && bsearch(&uid, uids, n_uids, sizeof(*uids), str_cmp)))
            continue;
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *nm = json_string_value(json_object_get(md, "name"));
        if (ns && nm && skip_ns && skip_name && strcmp(ns, skip_ns) == 0 &&
            strcmp(nm, skip_name) == 0)
            continue;
        digest_str(key, ns);
        digest_str(key, nm);
        digest_str(key, uid);
        digest_str(key, bound);
        digest_str(key, on);
        digest_str(key, json_string_value(json_object_get(json_object_get(o, "status"), "phase")));
        digest_str(key, ann(o, HAMI_ANN_ALLOCATED));
        digest_str(key, ann(o, HAMI_ANN_TO_ALLOCATE));
        digest_str(key, ann(o, HAMI_ANN_BIND_PHASE));
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): uids is _cleanup_ (layers.md Lint) */
}

/* Run the pod over the candidate nodes; best = index of the node the policies pick (-1 none). */
struct pass {
    json_t *nodes;
    json_t *pods; /* every pod, as listed for this pass */
    struct ext_inventory *inv;
    bool inv_cached; /* inv is s->cached: not freed with the pass */
    struct ext_pod_request req;
    bool has_req;
    struct ext_fit *fits;
    size_t n;
    long best;
};

static void pass_fini(struct pass *p)
{
    for (size_t i = 0; p->fits && i < p->n; i++)
        ext_fit_fini(&p->fits[i]);
    free(p->fits);
    if (p->has_req)
        ext_pod_request_fini(&p->req);
    if (!p->inv_cached)
        ext_inventory_free(p->inv);
    json_decref(p->nodes);
    json_decref(p->pods);
}

/* Whether the inventory of this call may stay cached for the next. Node names (kube-scheduler's
 * nodeCacheCapable, as deployed): yes, it is what the next filter needs. Full Node objects in the
 * body: only for small lists — an inventory of 10,000 Nodes is about 330 MiB and would stay. */
static bool cacheable(const json_t *nodes, bool by_name)
{
    return by_name || json_array_size(nodes) <= EXT_CACHE_MAX_FULL_NODES;
}

static int run_pass(struct ext_service *s, const json_t *pod, json_t *nodes, bool use_cache,
                    bool filter, struct pass *p, struct gs_error *err)
{
    *p = (struct pass){.nodes = nodes, .best = -1};
    const json_t *md = json_object_get(pod, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    int r = list_all(s, &gs_k8s_pods, &p->pods, err);
    if (r < 0)
        return r;
    const json_t *pods = p->pods;
    uint64_t key[2];
    inventory_key(nodes, pods, ns ? ns : "default", name, key);
    if (use_cache && s->cached && memcmp(key, s->cached_key, sizeof(key)) == 0) {
        p->inv = s->cached, p->inv_cached = true;
        s->stats.inventory_hits++;
    } else {
        if ((r = ext_inventory_build(nodes, pods, WH_DEFAULT_DRIVER, ns ? ns : "default", name,
                                     &p->inv, err)) < 0)
            return r;
        if (use_cache) {
            ext_inventory_free(s->cached);
            s->cached = p->inv, p->inv_cached = true;
            memcpy(s->cached_key, key, sizeof(key));
        }
    }
    if ((r = ext_pod_request_init(&p->req, pod, p->inv, s->cfg.gpu_policy, s->cfg.node_policy,
                                  err)) < 0)
        return r;
    p->has_req = true;
    p->n = json_array_size(nodes);
    p->fits = calloc(p->n ? p->n : 1, sizeof(*p->fits));
    if (!p->fits)
        return gs_error_set(err, -ENOMEM, "out of memory");
    if (p->req.n_claims == 0)
        return 0;
    if (filter) {
        _cleanup_free_ const char **names = calloc(p->n ? p->n : 1, sizeof(*names));
        if (!names)
            return gs_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n; i++)
            names[i] = node_name(json_array_get(nodes, i));
        return ext_filter_nodes(p->inv, &p->req, names, p->n, p->fits, &p->best, err);
    }
    for (size_t i = 0; i < p->n; i++) {
        const char *nn = node_name(json_array_get(nodes, i));
        if (!nn)
            continue;
        if ((r = ext_try_node(p->inv, &p->req, nn, false, &p->fits[i], err)) < 0)
            return r;
        if (!p->fits[i].fits)
            continue;
        if (p->best < 0 ||
            (p->req.node_policy == EXT_NODE_BINPACK ? p->fits[i].score > p->fits[p->best].score
                                                    : p->fits[i].score < p->fits[p->best].score))
            p->best = (long)i;
    }
    return 0;
}

/* HAMi's scheduler reasons (pkg/scheduler/event.go: EventReasonFilteringFailed,
 * EventReasonBindingFailed), Warning Events on the Pod as recordScheduleFilterResultEvent and
 * recordScheduleBindingResultEvent write them. */
#define EXT_EVENT_FILTERING_FAILED "FilteringFailed"
#define EXT_EVENT_BINDING_FAILED   "BindingFailed"

static void pod_event(struct ext_service *s, const json_t *pod, const char *const *ids,
                      const char *reason, const char *msg)
{
    if (!s->cfg.events)
        return;
    const json_t *md = pod ? json_object_get(pod, "metadata") : NULL;
    struct gs_k8s_object_ref ref = {
        .api_version = "v1",
        .kind = "Pod",
        .ns = ids ? ids[0] : json_string_value(json_object_get(md, "namespace")),
        .name = ids ? ids[1] : json_string_value(json_object_get(md, "name")),
        .uid = ids ? ids[2] : json_string_value(json_object_get(md, "uid")),
    };
    gs_k8s_record(s->cfg.events, &ref, true, reason, "%s", msg);
}

/* "no node fits: N nodes: node-a: why; node-b: why" (as many as fit in buf). */
static void failed_summary(json_t *failed, size_t n, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "no node fits the GPU request: %zu node(s)", n);
    const char *node;
    json_t *why;
    json_object_foreach(failed, node, why)
    {
        if (o >= len)
            break;
        const char *w = json_string_value(why);
        o += (size_t)snprintf(buf + o, len - o, "; %s: %s", node, w ? w : "");
    }
}

static json_t *filter_error(const char *msg)
{
    return json_pack("{s:s}", "error", msg);
}

json_t *ext_filter(struct ext_service *s, const json_t *args, struct gs_error *err)
{
    const json_t *pod = get_ci(args, "pod");
    if (!json_is_object(args) || !json_is_object(pod)) {
        gs_error_set(err, -EINVAL, "ExtenderArgs: pod is missing or not an object");
        return NULL;
    }
    uint64_t t0 = gs_now_ns();
    pthread_mutex_lock(&s->lock);
    s->stats.filter++;
    json_t *nodes = NULL;
    bool by_name = true;
    struct gs_error e = {0};
    struct pass p = {0};
    json_t *out = NULL;
    int r = candidates(s, args, &nodes, &by_name, &e);
    if (r == 0)
        r = run_pass(s, pod, nodes, cacheable(nodes, by_name), true, &p, &e);
    else
        json_decref(nodes);
    char refused[600] = ""; /* a FilteringFailed Event, written after the lock */
    if (r < 0) {
        s->stats.filter_errors++;
        out = filter_error(e.msg);
        snprintf(refused, sizeof(refused), "%s", e.msg);
        goto done;
    }
    json_t *ok = json_array(), *failed = json_object();
    for (size_t i = 0; i < p.n; i++) {
        const json_t *node = json_array_get(p.nodes, i);
        const char *nn = node_name(node);
        if (!nn)
            continue;
        if (p.req.n_claims == 0 || (long)i == p.best)
            json_array_append(ok, by_name ? json_string(nn) : (json_t *)node);
        else if (!p.fits[i].fits && p.fits[i].message[0])
            /* (nodes HAMi's rules accept but were not tried are left out, as fitting nodes
             * other than the chosen one are) */
            json_object_set_new(failed, nn, json_string(p.fits[i].message));
    }
    if (by_name) {
        /* json_array_append above took a new string reference for names: drop the extra one */
        size_t i;
        json_t *v;
        json_array_foreach(ok, i, v) json_decref(v);
        out = json_pack("{s:o,s:o}", "nodenames", ok, "failedNodes", failed);
    } else {
        out = json_pack("{s:{s:o},s:o}", "nodes", "items", ok, "failedNodes", failed);
    }
    if (p.req.n_claims > 0 && p.best < 0)
        failed_summary(failed, p.n, refused, sizeof(refused));
    if (p.req.n_claims > 0) {
        char q[160];
        gs_log(GS_LOG_INFO, "filter", "pod=%s/%s nodes=%zu fit=%s failed=%zu", p.req.ns, p.req.name,
               p.n,
               gs_log_quote(q, sizeof(q),
                            p.best >= 0 ? node_name(json_array_get(p.nodes, (size_t)p.best)) : ""),
               json_object_size(failed));
    }
done:
    pass_fini(&p);
    s->stats.filter_ns_sum += gs_now_ns() - t0;
    pthread_mutex_unlock(&s->lock);
    if (refused[0])
        pod_event(s, pod, NULL, EXT_EVENT_FILTERING_FAILED, refused);
    return out;
}

json_t *ext_prioritize(struct ext_service *s, const json_t *args, struct gs_error *err)
{
    const json_t *pod = get_ci(args, "pod");
    if (!json_is_object(args) || !json_is_object(pod)) {
        gs_error_set(err, -EINVAL, "ExtenderArgs: pod is missing or not an object");
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    s->stats.prioritize++;
    json_t *nodes = NULL;
    bool by_name;
    struct gs_error e = {0};
    struct pass p = {0};
    json_t *out = json_array();
    int r = candidates(s, args, &nodes, &by_name, &e);
    if (r == 0)
        r = run_pass(s, pod, nodes, cacheable(nodes, by_name), false, &p, &e);
    else
        json_decref(nodes);
    for (size_t i = 0; r == 0 && i < p.n; i++) {
        const char *nn = node_name(json_array_get(p.nodes, i));
        if (!nn)
            continue;
        /* kube-scheduler's extender scores are 0..10 (MaxExtenderPriority). */
        double sc = p.fits[i].fits ? (p.req.node_policy == EXT_NODE_BINPACK ? p.fits[i].score
                                                                            : 1.0 - p.fits[i].score)
                                   : 0.0;
        json_array_append_new(
            out, json_pack("{s:s,s:I}", "host", nn, "score", (json_int_t)(sc * 10.0 + 0.5)));
    }
    pass_fini(&p);
    pthread_mutex_unlock(&s->lock);
    return out;
}

static int patch_annotations(struct ext_service *s, const struct gs_k8s_resource *res,
                             const char *ns, const char *name, json_t *ann, const char *rv,
                             struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *patch =
        json_pack("{s:{s:O}}", "metadata", "annotations", ann);
    if (rv)
        json_object_set_new(json_object_get(patch, "metadata"), "resourceVersion", json_string(rv));
    return gs_k8s_patch(s->cfg.k8s, res, ns, name, NULL, GS_K8S_PATCH_MERGE, patch, 0, NULL, err);
}

/* HAMi's node lock (LockNode, pkg/util/nodelock/nodelock.go v2.10.0): the annotation, set with
 * the node's resourceVersion as precondition. A lock is taken over when it is older than
 * HAMI_NODELOCK_EXPIRE (5 minutes) or its owner pod is gone (dangling); a lock this pod holds
 * is ours already. */
static int lock_node(struct ext_service *s, const char *node, const char *ns, const char *pod,
                     json_t **node_obj, struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *n = NULL;
    int r = gs_k8s_get(s->cfg.k8s, &gs_k8s_nodes, NULL, node, &n, err);
    if (r < 0)
        return r;
    const json_t *md = json_object_get(n, "metadata");
    const char *held =
        json_string_value(json_object_get(json_object_get(md, "annotations"), HAMI_ANN_NODE_LOCK));
    int64_t now = (int64_t)time(NULL);
    if (held) {
        struct hami_lock lk;
        if (hami_lock_parse(held, &lk, err) < 0) {
            s->stats.lock_conflicts++;
            return gs_error_prefix(err, "node %s: ", node);
        }
        bool take = false;
        if (lk.unix_s > now + EXT_LOCK_MAX_SKEW_S) {
            take = true; /* dated in the future (beyond clock skew): not a live bind's */
        } else if (now - lk.unix_s > hami_lock_expiry_s()) {
            take = true; /* expired */
        } else if (strcmp(lk.ns, ns) == 0 && strcmp(lk.pod, pod) == 0) {
            *node_obj = TAKE_PTR(n); /* held by this pod already */
            return 0;
        } else if (lk.ns[0] && lk.pod[0]) {
            _cleanup_(gs_json_decrefp) json_t *owner = NULL;
            struct gs_error e2 = {0};
            int g = gs_k8s_get(s->cfg.k8s, &gs_k8s_pods, lk.ns, lk.pod, &owner, &e2);
            if (g == -ENOENT)
                take = true; /* dangling: the owner pod is gone */
            else if (g < 0)
                return gs_error_set(err, g, "node %s: lock owner %s/%s: %s", node, lk.ns, lk.pod,
                                    e2.msg);
        }
        if (!take) {
            s->stats.lock_conflicts++;
            return gs_error_set(err, -EBUSY, "node %s is locked (%s=\"%.128s\")", node,
                                HAMI_ANN_NODE_LOCK, held);
        }
        gs_log(GS_LOG_INFO, "node lock taken over", "node=%s lock=\"%.128s\"", node, held);
    }
    char value[600];
    hami_lock_value(value, sizeof(value), now, ns, pod);
    _cleanup_(gs_json_decrefp) json_t *ann = json_pack("{s:s}", HAMI_ANN_NODE_LOCK, value);
    r = patch_annotations(s, &gs_k8s_nodes, NULL, node, ann,
                          json_string_value(json_object_get(md, "resourceVersion")), err);
    if (r < 0) {
        if (r == -EBUSY)
            s->stats.lock_conflicts++;
        return gs_error_prefix(err, "lock node %s: ", node);
    }
    *node_obj = TAKE_PTR(n);
    return 0;
}

/* Release the node lock; `record` (may be NULL) names a placement record to drop with it,
 * `stale` (may be NULL) the stale records to drop (their keys set to null). */
static void unlock_node(struct ext_service *s, const char *node, const char *record, json_t *stale)
{
    struct gs_error e = {0};
    _cleanup_(gs_json_decrefp) json_t *ann = json_pack("{s:n}", HAMI_ANN_NODE_LOCK);
    if (ann && stale)
        json_object_update(ann, stale);
    if (record)
        json_object_set_new(ann, record, json_null());
    if (patch_annotations(s, &gs_k8s_nodes, NULL, node, ann, NULL, &e) < 0) {
        char q[300];
        gs_log(GS_LOG_WARN, "node unlock failed", "node=%s error=%s", node,
               gs_log_quote(q, sizeof(q), e.msg));
    }
}

/* The placement records on the node that no longer stand (ext_assign_stale: pod gone, finished,
 * bound elsewhere, a bind that never completed), each logged with its reason, as nulls of a
 * merge patch into `stale`; `mine` (this pod's record, rewritten by this bind) is left alone.
 * Returns the bytes (keys + values) they take. */
static size_t stale_records(const json_t *node_obj, const json_t *pods, const char *node,
                            const char *mine, int64_t now, json_t *stale)
{
    size_t bytes = 0;
    const char *k;
    const json_t *v;
    json_object_foreach(json_object_get(json_object_get(node_obj, "metadata"), "annotations"), k, v)
    {
        char why[400];
        if (strcmp(k, mine) == 0 || !ext_assign_stale(k, json_string_value(v), pods, node, now,
                                                      hami_lock_expiry_s(), why, sizeof(why)))
            continue;
        json_object_set_new(stale, k, json_null());
        bytes += strlen(k) + (json_is_string(v) ? strlen(json_string_value(v)) : 0);
        char q[450];
        gs_log(GS_LOG_INFO, "stale placement record removed", "node=%s record=%s reason=%s", node,
               k, gs_log_quote(q, sizeof(q), why));
    }
    return bytes;
}

/* Is there room on the Node for this record? Records may take EXT_ASSIGN_BUDGET bytes, and the
 * Node's annotations (1 KiB kept for the node lock and the handshake) stay under Kubernetes'
 * 256 KiB limit; `freed` are the bytes of the stale records this bind removes. */
static int check_room(const json_t *node_obj, const char *node, const char *record, const char *val,
                      size_t freed, struct gs_error *err)
{
    size_t recs, all;
    ext_assign_sizes(node_obj, record, &recs, &all);
    size_t mine = strlen(record) + strlen(val);
    recs = (recs > freed ? recs - freed : 0) + mine;
    all = (all > freed ? all - freed : 0) + mine + 1024;
    if (recs > EXT_ASSIGN_BUDGET || all > EXT_NODE_ANNOTATIONS_MAX)
        return gs_error_set(err, -ENOSPC,
                            "node %s: placement records (%s*) would take %zu bytes (budget %d) "
                            "and the Node's annotations %zu bytes (Kubernetes' limit %d): pods "
                            "placed there must start or go first",
                            node, EXT_ASSIGN_PREFIX, recs, EXT_ASSIGN_BUDGET, all,
                            EXT_NODE_ANNOTATIONS_MAX);
    return 0;
}

/* Only pods of ours are bound: a real, unbound, live pod outside kube-system with the UID
 * kube-scheduler gave, that requests our resources (checked after the pass). */
static int check_pod(const json_t *pod, const char *ns, const char *name, const char *uid,
                     struct gs_error *err)
{
    const json_t *md = json_object_get(pod, "metadata");
    const char *puid = json_string_value(json_object_get(md, "uid"));
    if (!puid || strcmp(uid, puid) != 0)
        return gs_error_set(err, -ESTALE, "pod %s/%s has uid %s, not %s", ns, name,
                            puid ? puid : "(none)", uid);
    if (json_object_get(md, "deletionTimestamp"))
        return gs_error_set(err, -ESTALE, "pod %s/%s is being deleted", ns, name);
    const char *bound =
        json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (bound && *bound)
        return gs_error_set(err, -EEXIST, "pod %s/%s is already bound to %s", ns, name, bound);
    return 0;
}

static int bind_locked(struct ext_service *s, const char *ns, const char *name, const char *uid,
                       const char *node, struct gs_error *err)
{
    char record[128];
    int r = ext_assign_key(record, sizeof(record), uid, err);
    if (r < 0)
        return gs_error_prefix(err, "podUID: ");
    if (strcmp(ns, "kube-system") == 0)
        return gs_error_set(
            err, -EPERM, "pod %s/%s: pods of kube-system are not bound by this extender", ns, name);
    _cleanup_(gs_json_decrefp) json_t *pod = NULL;
    if ((r = gs_k8s_get(s->cfg.k8s, &gs_k8s_pods, ns, name, &pod, err)) < 0)
        return r;
    if ((r = check_pod(pod, ns, name, uid, err)) < 0)
        return r;
    json_t *node_obj = NULL;
    if ((r = lock_node(s, node, ns, name, &node_obj, err)) < 0)
        return r;
    struct pass p = {0};
    json_t *nodes = json_pack("[o]", node_obj);
    r = run_pass(s, pod, nodes, false, false, &p, err);
    if (r == 0 && p.req.n_claims == 0)
        r = gs_error_set(err, -EPERM,
                         "pod %s/%s requests no nvidia.com/gpu: not bound by this extender", ns,
                         name);
    if (r == 0 && p.best != 0)
        r = gs_error_set(err, -ENOSPC, "pod %s/%s does not fit on %s: %s", ns, name, node,
                         p.fits[0].message);
    _cleanup_free_ char *enc = NULL;
    bool recorded = false;
    int64_t now = (int64_t)time(NULL);
    /* Stale records on the node go with this bind's patches (collected whatever the outcome). */
    _cleanup_(gs_json_decrefp) json_t *stale = json_object();
    size_t freed = stale && p.pods ? stale_records(node_obj, p.pods, node, record, now, stale) : 0;
    if (r == 0 && !(enc = hami_pod_devices_encode(p.fits[0].ctrs, p.req.n_containers)))
        r = gs_error_set(err, -ENOMEM, "out of memory");
    if (r == 0) {
        /* The record the device plugin trusts, on the Node, before the pod is bound. */
        _cleanup_free_ char *val = ext_assign_encode(ns, name, now, enc, 0);
        _cleanup_(gs_json_decrefp) json_t *ann = val ? json_pack("{s:s}", record, val) : NULL;
        if (ann && stale)
            json_object_update(ann, stale);
        if (!ann)
            r = gs_error_set(err, -ENOMEM, "out of memory");
        else if ((r = check_room(node_obj, node, record, val, freed, err)) == 0)
            r = patch_annotations(s, &gs_k8s_nodes, NULL, node, ann, NULL, err);
        recorded = r == 0;
        if (r < 0)
            gs_error_prefix(err, "record the placement on node %s: ", node);
    }
    if (r == 0) {
        /* HAMi's annotations travel in the Binding: the API server sets them on the pod in the
         * same update as spec.nodeName (k8s.io/kubernetes pkg/registry/core/pod/storage
         * BindingREST.Create -> setPodNodeAndMetadata), so a refused binding leaves the pod as
         * it was. */
        char now_s[32], path[512];
        snprintf(now_s, sizeof(now_s), "%lld", (long long)now);
        _cleanup_(gs_json_decrefp) json_t *binding = json_pack(
            "{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s,s:s,s:s}},s:{s:s,s:s,s:s}}", "apiVersion",
            "v1", "kind", "Binding", "metadata", "name", name, "namespace", ns, "uid", uid,
            "annotations", HAMI_ANN_TO_ALLOCATE, enc, HAMI_ANN_ALLOCATED, enc, HAMI_ANN_NODE, node,
            HAMI_ANN_TIME, now_s, HAMI_ANN_BIND_PHASE, HAMI_BIND_ALLOCATING, HAMI_ANN_BIND_TIME,
            now_s, "target", "apiVersion", "v1", "kind", "Node", "name", node);
        /* HAMi's PatchPodAnnotations also labels the pod with its node (HAMi's monitor selects
         * pods by the label). The Binding carries it; an API server that copies only a
         * Binding's annotations gets it by a patch once the binding is accepted (below). */
        if (binding)
            json_object_set_new(json_object_get(binding, "metadata"), "labels",
                                json_pack("{s:s}", HAMI_LABEL_NODE, node));
        if (!binding)
            r = gs_error_set(err, -ENOMEM, "out of memory");
        else if ((r = gs_k8s_path(path, sizeof(path), &gs_k8s_pods, ns, name, "binding", err)) == 0)
            r = gs_k8s_request(s->cfg.k8s, "POST", path, binding, NULL, NULL, NULL, err);
        if (r == 0) {
            struct gs_error e2 = {0};
            _cleanup_(gs_json_decrefp) json_t *lp =
                json_pack("{s:{s:{s:s}}}", "metadata", "labels", HAMI_LABEL_NODE, node);
            if (!lp || gs_k8s_patch(s->cfg.k8s, &gs_k8s_pods, ns, name, NULL, GS_K8S_PATCH_MERGE,
                                    lp, 0, NULL, &e2) < 0) {
                char q[300];
                gs_log(GS_LOG_WARN, "pod label failed", "pod=%s/%s label=%s error=%s", ns, name,
                       HAMI_LABEL_NODE, gs_log_quote(q, sizeof(q), lp ? e2.msg : "out of memory"));
            }
        }
        if (r == 0) {
            char q[512];
            gs_log(GS_LOG_INFO, "devices assigned", "pod=%s/%s node=%s devices=%s", ns, name, node,
                   gs_log_quote(q, sizeof(q), enc));
        }
    }
    unlock_node(s, node, r < 0 && recorded ? record : NULL, stale);
    pass_fini(&p);
    return r;
}

json_t *ext_bind(struct ext_service *s, const json_t *args, struct gs_error *err)
{
    const char *name = json_string_value(get_ci(args, "podName"));
    const char *ns = json_string_value(get_ci(args, "podNamespace"));
    const char *uid = json_string_value(get_ci(args, "podUID"));
    const char *node = json_string_value(get_ci(args, "node"));
    if (!uid)
        uid = "";
    if (!name || !ns || !node) {
        gs_error_set(err, -EINVAL,
                     "ExtenderBindingArgs: podName, podNamespace and node are "
                     "required");
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    s->stats.bind++;
    struct gs_error e = {0};
    int r = bind_locked(s, ns, name, uid, node, &e);
    if (r < 0)
        s->stats.bind_errors++;
    pthread_mutex_unlock(&s->lock);
    char q[300];
    if (r < 0) {
        gs_log(GS_LOG_WARN, "bind failed", "pod=%s/%s node=%s error=%s", ns, name, node,
               gs_log_quote(q, sizeof(q), e.msg));
        const char *const ids[] = {ns, name, uid};
        char msg[400];
        snprintf(msg, sizeof(msg), "binding to node %s failed: %s", node, e.msg);
        pod_event(s, NULL, ids, EXT_EVENT_BINDING_FAILED, msg);
        return json_pack("{s:s}", "error", e.msg);
    }
    gs_log(GS_LOG_INFO, "bound", "pod=%s/%s node=%s", ns, name, node);
    return json_object();
}
