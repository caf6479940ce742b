/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Explanations: for each request (and subrequest) of a claim, each device visible on the node
 * gets the first reason it cannot serve the request on its own, with stable reason codes and
 * HAMi's names where one exists. See docs/internals/alloc.md for the list.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

struct alloc_explanation *alloc_explanation_new(const char *claim, const char *node)
{
    struct alloc_explanation *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->claim = strdup(claim ? claim : "");
    e->node = strdup(node ? node : "");
    e->reason = "Unschedulable";
    if (!e->claim || !e->node) {
        alloc_explanation_free(e);
        return NULL;
    }
    return e;
}

void alloc_explanation_free(struct alloc_explanation *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n_req; i++) {
        for (size_t k = 0; k < e->req[i].n_dev; k++)
            free(e->req[i].dev[k].device);
        free(e->req[i].dev);
        free(e->req[i].request);
    }
    free(e->req);
    free(e->claim);
    free(e->node);
    free(e);
}

struct alloc_request_reason *alloc_explanation_add_request(struct alloc_explanation *e,
                                                           const char *request)
{
    if (e->n_req == e->cap_req) {
        size_t nc = e->cap_req ? e->cap_req * 2 : 4;
        struct alloc_request_reason *n = realloc(e->req, nc * sizeof(*n));
        if (!n)
            return NULL;
        e->req = n;
        e->cap_req = nc;
    }
    struct alloc_request_reason *r = &e->req[e->n_req];
    memset(r, 0, sizeof(*r));
    r->request = strdup(request);
    if (!r->request)
        return NULL;
    r->reason = "Fits";
    e->n_req++;
    return r;
}

struct alloc_device_reason *alloc_explanation_add_device(struct alloc_request_reason *r,
                                                         const struct alloc_device *d)
{
    if (r->n_dev == r->cap_dev) {
        size_t nc = r->cap_dev ? r->cap_dev * 2 : 8;
        struct alloc_device_reason *n = realloc(r->dev, nc * sizeof(*n));
        if (!n)
            return NULL;
        r->dev = n;
        r->cap_dev = nc;
    }
    struct alloc_device_reason *x = &r->dev[r->n_dev];
    memset(x, 0, sizeof(*x));
    if (asprintf(&x->device, "%s/%s/%s", d->slice->driver, d->slice->pool, d->name) < 0)
        return NULL;
    x->reason = "Fits";
    r->n_dev++;
    return x;
}

const char *alloc_explanation_reason(const struct alloc_explanation *e)
{
    return e ? e->reason : "";
}

/* Which allocated claim holds device `d` (for the message), or NULL. */
static const char *holder(const struct alloc_state *st, const struct alloc_device *d)
{
    for (size_t i = 0; i < st->claims.cap; i++) {
        const struct alloc_allocated_claim *c = st->claims.e[i].key ? st->claims.e[i].value : NULL;
        if (!c)
            continue;
        for (size_t k = 0; k < c->n; k++)
            if (!c->res[k].admin && strcmp(c->res[k].device, d->name) == 0 &&
                strcmp(c->res[k].pool, d->slice->pool) == 0 &&
                strcmp(c->res[k].driver, d->slice->driver) == 0)
                return c->key;
    }
    return NULL;
}

static const char *hami_for_selector(const char *expr)
{
    return strstr(expr, "uuid") || strstr(expr, "UUID") ? "CardUuidMismatch" : "CardTypeMismatch";
}

static const char *hami_for_capacity(const char *name)
{
    if (strstr(name, "mem"))
        return "CardInsufficientMemory";
    if (strstr(name, "core"))
        return "CardInsufficientCore";
    return NULL;
}

/* 1 when the device could serve the request on its own. */
static int diagnose(struct alloc_state *st, const struct alloc_claim_spec *claim, const char *node,
                    const struct alloc_request *rq, const struct alloc_class *cls,
                    const struct alloc_pool *pool, struct alloc_device *d,
                    struct alloc_device_reason *x)
{
    struct gs_error err = {0};
    size_t failed = 0;
    int r;
    if (pool->invalid) {
        x->reason = "PoolInvalid";
        snprintf(x->message, sizeof(x->message), "pool %s is invalid: %s", pool->pool,
                 pool->invalid_reason);
        return 0;
    }
    if (pool->incomplete && rq->mode == ALLOC_MODE_EXACT) {
        x->reason = "PoolIncomplete";
        snprintf(x->message, sizeof(x->message),
                 "pool %s is incomplete (%zu of %lld slices seen): not used until complete",
                 pool->pool, pool->n_slices, (long long)pool->slices[0]->slice_count);
        return 0;
    }
    if (!rq->admin) {
        const struct alloc_usage *u = d->usage;
        if (d->shareable && u->exclusive) {
            const char *h = holder(st, d);
            x->reason = "DeviceExclusive";
            snprintf(x->message, sizeof(x->message), "held exclusively by claim %s",
                     h ? h : "(unknown)");
            return 0;
        }
        if (!d->shareable && (u->exclusive || u->shared)) {
            const char *h = holder(st, d);
            x->reason = "DeviceInUse";
            snprintf(x->message, sizeof(x->message),
                     "allocated to claim %s and allowMultipleAllocations is not set",
                     h ? h : "(unknown)");
            return 0;
        }
    }
    r = alloc_selectors_match(st, cls->sel, cls->n_sel, d, &failed, &err);
    if (r <= 0) {
        x->reason = r < 0 ? "CelError" : "SelectorMismatch";
        if (r < 0)
            snprintf(x->message, sizeof(x->message), "class %s selector #%zu: %s", cls->name,
                     failed, err.msg);
        else {
            x->hami = hami_for_selector(cls->sel[failed].expr);
            snprintf(x->message, sizeof(x->message), "class %s selector #%zu is false: %.120s",
                     cls->name, failed, cls->sel[failed].expr);
        }
        return 0;
    }
    r = alloc_selectors_match(st, rq->sel, rq->n_sel, d, &failed, &err);
    if (r <= 0) {
        x->reason = r < 0 ? "CelError" : "SelectorMismatch";
        if (r < 0)
            snprintf(x->message, sizeof(x->message), "request selector #%zu: %s", failed, err.msg);
        else {
            x->hami = hami_for_selector(rq->sel[failed].expr);
            snprintf(x->message, sizeof(x->message), "request selector #%zu is false: %.120s",
                     failed, rq->sel[failed].expr);
        }
        return 0;
    }
    if (d->slice->per_device) {
        bool m = false;
        if (alloc_node_matches(st, node, d->node_name, d->all_nodes, d->node_selector, &m, &err) <
                0 ||
            !m) {
            x->reason = "NodeMismatch";
            snprintf(x->message, sizeof(x->message), "device is not available on node %s%s%s", node,
                     err.code ? ": " : "", err.msg);
            return 0;
        }
    }
    const char *taint = NULL;
    if (!alloc_taints_tolerated(d, rq->tolerations, &taint)) {
        x->reason = "DeviceTainted";
        snprintf(x->message, sizeof(x->message), "taint %s is not tolerated", taint ? taint : "");
        return 0;
    }
    struct alloc_qty consumed[64];
    struct alloc_cap_check chk;
    if (d->n_cap > GS_ARRAY_SIZE(consumed))
        return 0;
    r = alloc_capacity_check(rq, d, NULL, consumed, &chk, &err);
    if (r < 0) {
        x->reason = "InvalidRequest";
        snprintf(x->message, sizeof(x->message), "%s", err.msg);
        return 0;
    }
    switch (chk.verdict) {
    case ALLOC_CAP_MISSING:
        x->reason = "CapacityMissing";
        break;
    case ALLOC_CAP_POLICY:
        x->reason = "CapacityPolicy";
        break;
    case ALLOC_CAP_INSUFFICIENT:
        x->reason = "InsufficientCapacity";
        x->hami = hami_for_capacity(d->cap[chk.cap_index].name);
        break;
    case ALLOC_CAP_OK:
        if (d->n_consumes && !(d->shareable && d->usage->shared > 0)) {
            struct alloc_pool_counters pc;
            bool fits = true;
            if (alloc_counters_init(st, pool, &pc) == 0) {
                fits = alloc_counters_take(&pc, d, x->message, sizeof(x->message));
                alloc_counters_fini(&pc);
            }
            if (!fits) {
                x->reason = "InsufficientCounters";
                return 0;
            }
        }
        x->reason = "Fits";
        return 1;
    }
    snprintf(x->message, sizeof(x->message), "%s", chk.detail);
    (void)claim;
    return 0;
}

static void explain_request(struct alloc_state *st, const struct alloc_claim_spec *claim,
                            const char *node, const struct alloc_node_pools *np,
                            const struct alloc_request *rq, const char *label, int outcome,
                            struct alloc_explanation *e)
{
    struct alloc_request_reason *rr = alloc_explanation_add_request(e, label);
    if (!rr)
        return;
    const struct alloc_class *cls = alloc_map_get(&st->classes, rq->class_name);
    if (!cls) {
        rr->reason = "ClassNotFound";
        snprintf(rr->message, sizeof(rr->message), "device class %s not found", rq->class_name);
        return;
    }
    size_t total = 0, usable = 0, selectable = 0;
    const struct alloc_pool *incomplete = NULL;
    for (size_t i = 0; i < np->n; i++) {
        const struct alloc_pool *p = &np->pools[i];
        if (p->incomplete && !incomplete)
            incomplete = p;
        for (size_t s = 0; s < p->n_slices; s++)
            for (size_t k = 0; k < p->slices[s]->n_dev; k++) {
                struct alloc_device *d = &p->slices[s]->dev[k];
                struct alloc_device_reason *x = alloc_explanation_add_device(rr, d);
                if (!x)
                    return;
                total++;
                int fits = diagnose(st, claim, node, rq, cls, p, d, x);
                usable += fits;
                /* All with capacity requests leaves out devices without room for them
                 * (validateDeviceRequest: CmpRequestOverCapacity), so they are not needed. */
                bool cap_left_out = rq->mode == ALLOC_MODE_ALL && rq->n_capreq &&
                                    (strcmp(x->reason, "CapacityMissing") == 0 ||
                                     strcmp(x->reason, "CapacityPolicy") == 0 ||
                                     strcmp(x->reason, "InsufficientCapacity") == 0);
                if (fits || (strcmp(x->reason, "SelectorMismatch") != 0 &&
                             strcmp(x->reason, "NodeMismatch") != 0 && !cap_left_out))
                    selectable++;
            }
    }
    if (total == 0) {
        rr->reason = "NoDevices";
        snprintf(rr->message, sizeof(rr->message), "no ResourceSlice publishes devices for node %s",
                 node);
        return;
    }
    size_t need = rq->mode == ALLOC_MODE_EXACT ? (size_t)rq->count : selectable;
    if (rq->mode == ALLOC_MODE_ALL && incomplete) {
        rr->reason = "PoolIncomplete";
        snprintf(rr->message, sizeof(rr->message),
                 "asks for all devices, but pool %s/%s is incomplete (%zu of %lld slices seen)",
                 incomplete->driver, incomplete->pool, incomplete->n_slices,
                 (long long)incomplete->slices[0]->slice_count);
        return;
    }
    if (outcome == 0) {
        rr->reason = "Allocated";
        snprintf(rr->message, sizeof(rr->message), "%zu of %zu devices usable", usable, total);
        return;
    }
    if (need == 0) {
        rr->reason = "InsufficientDevices";
        snprintf(rr->message, sizeof(rr->message), "asks for all devices, but none of %zu matches",
                 total);
        return;
    }
    if (usable < need) {
        rr->reason = incomplete ? "PoolIncomplete" : "InsufficientDevices";
        int n = snprintf(rr->message, sizeof(rr->message), "need %zu device%s, %zu of %zu usable",
                         need, need == 1 ? "" : "s", usable, total);
        if (incomplete && n > 0 && (size_t)n < sizeof(rr->message))
            snprintf(rr->message + n, sizeof(rr->message) - (size_t)n,
                     "; pool %s/%s is incomplete (%zu of %lld slices seen)", incomplete->driver,
                     incomplete->pool, incomplete->n_slices,
                     (long long)incomplete->slices[0]->slice_count);
        return;
    }
    if (outcome != ALLOC_UNSCHEDULABLE) {
        /* The search stopped with an error (see the claim's message), not for lack of devices. */
        rr->reason = e->reason;
        snprintf(rr->message, sizeof(rr->message),
                 "%zu of %zu devices usable on their own; "
                 "allocation stopped: %s",
                 usable, total, e->message);
        return;
    }
    /* Devices the claim needs at least (firstAvailable: its smallest alternative). */
    size_t total_need = 0;
    for (size_t i = 0; i < claim->n_req; i++) {
        const struct alloc_request *q = &claim->req[i];
        size_t least = SIZE_MAX;
        for (size_t k = 0; k < (q->n_sub ? q->n_sub : 1); k++) {
            const struct alloc_request *x = q->n_sub ? &q->sub[k] : q;
            size_t c = x->mode == ALLOC_MODE_EXACT ? (size_t)x->count : 0;
            least = GS_MIN(least, c);
        }
        total_need += least;
    }
    if (rq->mode == ALLOC_MODE_ALL)
        total_need += need;
    if (total_need > ALLOC_MAX_RESULTS) {
        rr->reason = "TooManyDevices";
        snprintf(rr->message, sizeof(rr->message),
                 "the claim needs %zu devices, more than %d in one allocation", total_need,
                 ALLOC_MAX_RESULTS);
        return;
    }
    if (claim->n_con) {
        rr->reason = "ConstraintMismatch";
        int n = snprintf(rr->message, sizeof(rr->message),
                         "%zu of %zu devices usable on their own, but no combination meets", usable,
                         total);
        for (size_t i = 0; i < claim->n_con && n > 0 && (size_t)n < sizeof(rr->message); i++)
            n +=
                snprintf(rr->message + n, sizeof(rr->message) - (size_t)n, "%s %s %s", i ? "," : "",
                         claim->con[i].kind == ALLOC_CONSTRAINT_MATCH ? "matchAttribute"
                                                                      : "distinctAttribute",
                         claim->con[i].attribute);
        return;
    }
    rr->reason = "RequestsConflict";
    snprintf(rr->message, sizeof(rr->message),
             "%zu of %zu devices usable on their own, but not together with the other requests "
             "allocated with it (this claim's or its pod's)",
             usable, total);
}

int alloc_explain_claim(struct alloc_state *st, const struct alloc_claim_spec *claim,
                        const char *node, int outcome, struct alloc_explanation *e)
{
    struct gs_error err = {0};
    const struct alloc_node_pools *np = alloc_pools_for_node(st, node, &err);
    if (!np)
        return err.code ? err.code : -ENOMEM;
    for (size_t i = 0; i < claim->n_req; i++) {
        const struct alloc_request *rq = &claim->req[i];
        if (!rq->n_sub) {
            explain_request(st, claim, node, np, rq, rq->name, outcome, e);
            continue;
        }
        for (size_t k = 0; k < rq->n_sub; k++) {
            char label[600];
            snprintf(label, sizeof(label), "%s/%s", rq->name, rq->sub[k].name);
            explain_request(st, claim, node, np, &rq->sub[k], label, outcome, e);
        }
    }
    return 0;
}

void alloc_explanation_print(const struct alloc_explanation *e, FILE *out)
{
    if (!e)
        return;
    fprintf(out, "claim %s on node %s: %s%s%s\n", e->claim, e->node, e->reason,
            e->message[0] ? ": " : "", e->message);
    for (size_t i = 0; i < e->n_req; i++) {
        const struct alloc_request_reason *r = &e->req[i];
        fprintf(out, "  request %s: %s%s%s\n", r->request, r->reason, r->message[0] ? ": " : "",
                r->message);
        for (size_t k = 0; k < r->n_dev; k++) {
            const struct alloc_device_reason *d = &r->dev[k];
            fprintf(out, "    %s: %s%s%s", d->device, d->reason, d->message[0] ? " " : "",
                    d->message);
            if (d->hami)
                fprintf(out, " [%s]", d->hami);
            fputc('\n', out);
        }
    }
}

json_t *alloc_explanation_json(const struct alloc_explanation *e)
{
    if (!e)
        return NULL;
    json_t *reqs = json_array();
    for (size_t i = 0; i < e->n_req; i++) {
        const struct alloc_request_reason *r = &e->req[i];
        json_t *devs = json_array();
        for (size_t k = 0; k < r->n_dev; k++) {
            const struct alloc_device_reason *d = &r->dev[k];
            json_t *o = json_pack("{s:s,s:s,s:s}", "device", d->device, "reason", d->reason,
                                  "message", d->message);
            if (o && d->hami)
                json_object_set_new(o, "hamiReason", json_string(d->hami));
            json_array_append_new(devs, o);
        }
        json_array_append_new(reqs, json_pack("{s:s,s:s,s:s,s:o}", "request", r->request, "reason",
                                              r->reason, "message", r->message, "devices", devs));
    }
    return json_pack("{s:s,s:s,s:b,s:s,s:s,s:o}", "claim", e->claim, "node", e->node, "allocated",
                     e->allocated, "reason", e->reason, "message", e->message, "requests", reqs);
}
