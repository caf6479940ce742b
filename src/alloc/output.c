/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocation result in the shape of resource.k8s.io/v1 AllocationResult:
 *   {"devices": {"results": [...], "config": [...]}, "nodeSelector": {...}}
 * config and nodeSelector are built as kube-scheduler builds them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc-internal.h"

/* Random bytes from getrandom(), read 4 KiB at a time per thread (one syscall per 256 IDs). */
static size_t random_bytes(unsigned char *out, size_t len)
{
    static __thread unsigned char buf[4096];
    static __thread size_t have, pos;
    static __thread pid_t owner;
    size_t got = 0;
    if (owner != getpid()) { /* a forked child must not reuse its parent's bytes */
        owner = getpid();
        have = pos = 0;
    }
    while (got < len) {
        if (pos == have) {
            ssize_t r = getrandom(buf, sizeof(buf), 0);
            if (r <= 0)
                break;
            have = (size_t)r;
            pos = 0;
        }
        size_t take = GS_MIN(len - got, have - pos);
        memcpy(out + got, buf + pos, take);
        /* Never hand the same bytes out twice. */
        memset(buf + pos, 0, take);
        pos += take;
        got += take;
    }
    return got;
}

void alloc_new_share_id(char out[37])
{
    unsigned char b[16];
    size_t got = random_bytes(b, sizeof(b));
    if (got < sizeof(b)) { /* no entropy source: still unique per process and call */
        static unsigned long counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long x = (unsigned long long)ts.tv_nsec ^
                               ((unsigned long long)ts.tv_sec << 30) ^
                               (++counter * 0x9e3779b97f4a7c15ULL);
        for (size_t i = got; i < sizeof(b); i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (unsigned char)x;
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    /* 8-4-4-4-12 hex digits; by hand, as snprintf costs more than the rest of a result. */
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (size_t i = 0; i < sizeof(b); i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 0x0f];
    }
    *o = 0;
}

static bool contains_requirement(const json_t *list, const json_t *req)
{
    size_t i;
    const json_t *x;
    json_array_foreach(list, i, x)
    {
        if (json_equal((json_t *)x, (json_t *)req))
            return true;
    }
    return false;
}

static int add_requirements(const json_t *from, json_t *to)
{
    size_t i;
    const json_t *x;
    if (!json_is_array(from))
        return 0;
    json_array_foreach(from, i, x)
    {
        if (!contains_requirement(to, x) && json_array_append_new(to, json_deep_copy(x)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* NULL with err->code == 0: available everywhere (no nodeSelector). */
static json_t *node_selector(const char *node, const struct alloc_chosen *ch, size_t n,
                             struct gs_error *err)
{
    json_t *fields = json_array(), *exprs = json_array();
    json_t *out = NULL;
    if (!fields || !exprs)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const struct alloc_device *d = ch[i].dev;
        const struct alloc_slice *s = d->slice;
        const char *name = s->per_device ? d->node_name : s->node_name;
        const json_t *sel = s->per_device ? d->node_selector : s->node_selector;
        if ((name && *name) || d->binds_to_node) {
            /* Local to (or bound to) the node the claim is allocated for. */
            out = json_pack("{s:[{s:[{s:s,s:s,s:[s]}]}]}", "nodeSelectorTerms", "matchFields",
                            "key", "metadata.name", "operator", "In", "values", node);
            json_decref(fields);
            json_decref(exprs);
            return out;
        }
        if (!sel)
            continue;
        const json_t *terms = json_object_get(sel, "nodeSelectorTerms");
        size_t nt = json_is_array(terms) ? json_array_size(terms) : 0;
        if (nt == 0)
            continue;
        if (nt > 1) {
            gs_error_set(err, -EINVAL, "ResourceSlice %s: unsupported nodeSelector with %zu terms",
                         s->name, nt);
            goto fail;
        }
        const json_t *t = json_array_get(terms, 0);
        if (add_requirements(json_object_get(t, "matchFields"), fields) < 0 ||
            add_requirements(json_object_get(t, "matchExpressions"), exprs) < 0)
            goto fail;
    }
    if (json_array_size(fields) == 0 && json_array_size(exprs) == 0) {
        json_decref(fields);
        json_decref(exprs);
        return NULL;
    }
    json_t *term = json_object();
    if (!term)
        goto fail;
    if (json_array_size(exprs))
        json_object_set(term, "matchExpressions", exprs);
    if (json_array_size(fields))
        json_object_set(term, "matchFields", fields);
    json_decref(fields);
    json_decref(exprs);
    return json_pack("{s:[o]}", "nodeSelectorTerms", term);
fail:
    if (err && !err->code)
        gs_error_set(err, -ENOMEM, "out of memory");
    json_decref(fields);
    json_decref(exprs);
    return NULL;
}

static json_t *config_entry(const json_t *cfg, const char *source, const json_t *requests)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "source", json_string(source));
    if (requests && json_array_size(requests))
        json_object_set_new(o, "requests", json_deep_copy(requests));
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)cfg, k, v)
    {
        if (strcmp(k, "requests") != 0 && strcmp(k, "source") != 0)
            json_object_set_new(o, k, json_deep_copy(v));
    }
    return o;
}

static bool names_contain(const json_t *arr, const char *name)
{
    size_t i;
    const json_t *x;
    json_array_foreach(arr, i, x)
    {
        if (json_is_string(x) && strcmp(json_string_value(x), name) == 0)
            return true;
    }
    return false;
}

/* Name a request goes by in results and config: "req", or "req/sub" for the selected
 * firstAvailable subrequest (upstream requestData.requestName()). */
static void request_name(const struct alloc_claim_spec *claim, const int *selected_sub, size_t i,
                         char *buf, size_t len)
{
    const struct alloc_request *rq = &claim->req[i];
    if (selected_sub[i] >= 0 && (size_t)selected_sub[i] < rq->n_sub)
        snprintf(buf, len, "%s/%s", rq->name, rq->sub[selected_sub[i]].name);
    else
        snprintf(buf, len, "%s", rq->name);
}

/* As kube-scheduler's Allocate() ("Populate configs", structured/internal/experimental/
 * allocator_experimental.go): each class's configs are added once, at the first request that
 * used the class, with `requests` naming every request (or "req/sub") that used it; then the
 * claim's configs. */
static json_t *configs(const struct alloc_claim_spec *claim,
                       const struct alloc_class *const *sel_class, const int *selected_sub)
{
    json_t *out = json_array();
    if (!out)
        return NULL;
    size_t first[ALLOC_MAX_REQUESTS], count[ALLOC_MAX_REQUESTS];
    for (size_t i = 0; i < claim->n_req && i < ALLOC_MAX_REQUESTS; i++) {
        const struct alloc_class *c = sel_class[i];
        count[i] = 0;
        if (!c || !c->config)
            continue;
        char name[600];
        request_name(claim, selected_sub, i, name, sizeof(name));
        size_t prev = i;
        for (size_t p = 0; p < i; p++)
            if (sel_class[p] && strcmp(sel_class[p]->name, c->name) == 0 && count[p]) {
                prev = p;
                break;
            }
        if (prev != i) { /* the class's configs are there already: name this request too */
            for (size_t k = first[prev]; k < first[prev] + count[prev]; k++)
                json_array_append_new(json_object_get(json_array_get(out, k), "requests"),
                                      json_string(name));
            continue;
        }
        first[i] = json_array_size(out);
        size_t k;
        const json_t *cfg;
        json_array_foreach(c->config, k, cfg)
        {
            json_t *reqs = json_pack("[s]", name);
            json_array_append_new(out, config_entry(cfg, "FromClass", reqs));
            json_decref(reqs);
        }
        count[i] = json_array_size(out) - first[i];
    }
    size_t k;
    const json_t *cfg;
    if (claim->config) {
        json_array_foreach(claim->config, k, cfg)
        {
            const json_t *reqs = json_object_get(cfg, "requests");
            if (!json_is_array(reqs) || json_array_size(reqs) == 0) {
                json_array_append_new(out, config_entry(cfg, "FromClaim", NULL));
                continue;
            }
            for (size_t i = 0; i < claim->n_req; i++) {
                const struct alloc_request *rq = &claim->req[i];
                if (names_contain(reqs, rq->name)) {
                    json_array_append_new(out, config_entry(cfg, "FromClaim", reqs));
                    continue;
                }
                if (selected_sub[i] < 0 || (size_t)selected_sub[i] >= rq->n_sub)
                    continue;
                char full[600];
                snprintf(full, sizeof(full), "%s/%s", rq->name, rq->sub[selected_sub[i]].name);
                if (names_contain(reqs, full))
                    json_array_append_new(out, config_entry(cfg, "FromClaim", reqs));
            }
        }
    }
    return out;
}

/* The tolerations of the request (or subrequest) a result was allocated for: upstream puts
 * lookupRequest(claim).tolerations() into every result (allocator_experimental.go, Allocate). */
static const json_t *result_tolerations(const struct alloc_claim_spec *claim, const char *request)
{
    const char *slash = strchr(request, '/');
    size_t len = slash ? (size_t)(slash - request) : strlen(request);
    for (size_t i = 0; i < claim->n_req; i++) {
        const struct alloc_request *rq = &claim->req[i];
        if (strlen(rq->name) != len || strncmp(rq->name, request, len) != 0)
            continue;
        if (!slash)
            return rq->tolerations;
        for (size_t j = 0; j < rq->n_sub; j++)
            if (strcmp(rq->sub[j].name, slash + 1) == 0)
                return rq->sub[j].tolerations;
        return NULL;
    }
    return NULL;
}

json_t *alloc_allocation_json(const struct alloc_claim_spec *claim, const char *node,
                              const struct alloc_class *const *sel_class, const int *selected_sub,
                              const struct alloc_chosen *ch, size_t n, bool results_only,
                              struct gs_error *err)
{
    json_t *results = json_array();
    if (!results)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct alloc_result *r = ch[i].res;
        const struct alloc_device *d = ch[i].dev;
        /* Every string here is valid UTF-8 already (decoded from JSON or made by us): the
         * _nocheck setters skip jansson's validation, json_pack its format parsing. */
        json_t *o = json_object();
        if (!o)
            goto fail;
        json_object_set_new_nocheck(o, "request", json_string_nocheck(r->request));
        json_object_set_new_nocheck(o, "driver", json_string_nocheck(r->driver));
        json_object_set_new_nocheck(o, "pool", json_string_nocheck(r->pool));
        json_object_set_new_nocheck(o, "device", json_string_nocheck(r->device));
        if (r->admin)
            json_object_set_new_nocheck(o, "adminAccess", json_true());
        if (r->share_id)
            json_object_set_new_nocheck(o, "shareID", json_string_nocheck(r->share_id));
        if (r->n_consumed) {
            json_t *cc = json_object();
            for (size_t k = 0; k < r->n_consumed; k++) {
                char buf[GS_QUANTITY_STR_MAX];
                alloc_qty_format(&r->consumed[k], buf, sizeof(buf));
                json_object_set_new_nocheck(cc, r->consumed_name[k], json_string_nocheck(buf));
            }
            json_object_set_new_nocheck(o, "consumedCapacity", cc);
        }
        if (json_object_size(o) < 4) {
            json_decref(o);
            goto fail;
        }
        const json_t *tol = claim ? result_tolerations(claim, r->request) : NULL;
        if (json_is_array(tol) && json_array_size(tol))
            json_object_set_new_nocheck(o, "tolerations", json_deep_copy(tol));
        if (d->binding_conditions)
            json_object_set(o, "bindingConditions", d->binding_conditions);
        if (d->binding_failure_conditions)
            json_object_set(o, "bindingFailureConditions", d->binding_failure_conditions);
        json_array_append_new(results, o);
    }
    json_t *devices = json_object();
    if (json_array_size(results)) /* omitempty, as the API serves it */
        json_object_set_new(devices, "results", results);
    else
        json_decref(results);
    results = NULL;
    json_t *alloc = json_object();
    json_object_set_new_nocheck(alloc, "devices", devices);
    if (results_only)
        return alloc;
    json_t *cfg = configs(claim, sel_class, selected_sub);
    if (cfg && json_array_size(cfg))
        json_object_set_new(devices, "config", cfg);
    else
        json_decref(cfg);
    json_t *ns = node_selector(node, ch, n, err);
    if (!ns && err && err->code) {
        json_decref(alloc);
        return NULL;
    }
    if (ns)
        json_object_set_new(alloc, "nodeSelector", ns);
    return alloc;
fail:
    json_decref(results);
    gs_error_set(err, -ENOMEM, "out of memory");
    return NULL;
}
