/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Depth-first search with backtracking over the devices visible on a node, the way
 * k8s.io/dynamic-resource-allocation/structured allocates: requests in claim order, for each
 * required device the pools in (driver, pool) order, slices by name, devices in slice order;
 * firstAvailable tries subrequests in order and keeps the first that leads to a full solution.
 * first-fit stops at the first complete solution; scoring policies keep searching, within
 * limits, and keep the best-scoring solution.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

#define DEFAULT_MAX_SOLUTIONS 64
#define DEFAULT_MAX_STEPS     100000UL
#define DEFAULT_STEP_LIMIT    10000000UL
/* allocate_one(): no solution because the claim's results would exceed ALLOC_MAX_RESULTS
 * whatever devices are picked before (kube-scheduler's errAllocationResultMaxSizeExceeded):
 * the callers unwind to the nearest firstAvailable instead of trying other devices. */
#define EXCEEDED 2

struct cand {
    struct alloc_device *dev;
    const struct alloc_pool *pool;
    unsigned allocating;       /* results of this claim on the device */
    struct alloc_qty *pending; /* n_cap: amounts this claim takes so far (non-admin) */
};

struct req_data {
    size_t claim;                   /* index in search->claims */
    const struct alloc_request *rq; /* request or subrequest */
    const struct alloc_request *parent;
    const struct alloc_class *cls;
    size_t num_devices;
    size_t n_all;
    size_t *all;   /* candidate indexes for allocationMode All */
    int8_t *match; /* per candidate: -1 unknown, 0, 1 */
};

struct req_entry {
    size_t n_rd;
    struct req_data *rd;
    int selected;
};

struct cur {
    size_t cand;
    bool counted; /* took counters (partitionable device) */
    struct req_data *rd;
    struct alloc_qty *consumed; /* n_cap of the device */
};

struct search {
    struct alloc_state *st;
    const struct alloc_claim_spec *const *claims; /* a pod's claims, searched together */
    size_t n_claims;
    const char *node;
    enum alloc_policy policy;
    bool trial; /* results are not committed (no share IDs) */
    size_t n_cand;
    struct cand *cands;
    const struct alloc_node_pools *np;
    struct alloc_pool_counters *pc; /* per pool of np, NULL when no device consumes counters */
    size_t n_req;                   /* requests of every claim, in claim order */
    struct req_entry *reqs;
    struct alloc_constraint_state *cons;
    size_t *con_off;   /* claim i's constraints: cons[con_off[i] .. con_off[i + 1]) */
    size_t *claim_res; /* results per claim so far (32 at most each) */
    size_t max_cap;
    size_t max_res;         /* ALLOC_MAX_RESULTS * n_claims */
    struct alloc_qty *qbuf; /* (max_res + n_cand) * max_cap */
    size_t n_res;
    struct cur *res; /* max_res */
    /* scoring */
    bool have_best;
    int *best_sub; /* n_req */
    double best_score;
    size_t best_n;
    struct cur *best;         /* max_res */
    struct alloc_qty *best_q; /* max_res * max_cap */
    unsigned solutions, max_solutions;
    unsigned long steps, max_steps;
    unsigned long total_steps, step_limit;
    struct gs_error *err;
};

static bool in_use(const struct search *s, const struct cand *c, bool admin)
{
    if (admin)
        return false;
    const struct alloc_usage *u = c->dev->usage;
    if (c->dev->shareable)
        return u->exclusive > 0;
    (void)s;
    return u->exclusive > 0 || u->shared > 0 || c->allocating > 0;
}

static int selectable(struct search *s, struct req_data *rd, size_t ci)
{
    if (rd->match[ci] >= 0)
        return rd->match[ci];
    struct alloc_device *d = s->cands[ci].dev;
    int r = 1;
    if (rd->cls) {
        r = alloc_class_matches(s->st, rd->cls, d, s->err);
        if (r <= 0)
            goto out;
    }
    size_t failed = 0;
    r = alloc_selectors_match(s->st, rd->rq->sel, rd->rq->n_sel, d, &failed, s->err);
    if (r < 0) {
        const struct alloc_claim_spec *cl = s->claims[rd->claim];
        if (strncmp(s->err->msg, "CEL compile error", 17) == 0)
            gs_error_prefix(s->err, "claim %s/%s: selector #%zu: ", cl->ns, cl->name, failed);
        else
            gs_error_prefix(s->err, "claim %s/%s: selector #%zu on device %s/%s/%s: ", cl->ns,
                            cl->name, failed, d->slice->driver, d->slice->pool, d->name);
        return r;
    }
    if (r == 0)
        goto out;
    if (d->slice->per_device) {
        bool m = false;
        int e = alloc_node_matches(s->st, s->node, d->node_name, d->all_nodes, d->node_selector, &m,
                                   s->err);
        if (e < 0)
            return e;
        r = m;
    }
out:
    if (r >= 0)
        rd->match[ci] = (int8_t)r;
    return r;
}

static void sub_names(const struct req_data *rd, const char **req, const char **sub)
{
    if (rd->parent) {
        *req = rd->parent->name;
        *sub = rd->rq->name;
    } else {
        *req = rd->rq->name;
        *sub = NULL;
    }
}

/* 1 allocated (pushed onto s->res), 0 not usable, <0 error. */
/* Does claim `claim` already hold candidate `ci` in this search? */
static bool allocating_for_claim(const struct search *s, size_t ci, size_t claim)
{
    for (size_t i = 0; i < s->n_res; i++)
        if (s->res[i].cand == ci && s->res[i].rd->claim == claim)
            return true;
    return false;
}

static int allocate_device(struct search *s, struct req_data *rd, size_t ci, bool must)
{
    struct cand *c = &s->cands[ci];
    const struct alloc_request *rq = rd->rq;
    const struct alloc_claim_spec *cl = s->claims[rd->claim];
    if (in_use(s, c, rq->admin))
        return 0;
    /* allocateDevice: an admin request may not take a non-shareable device its own claim is
     * already getting; a shareable one it may. */
    if (rq->admin && !c->dev->shareable && c->allocating > 0 &&
        allocating_for_claim(s, ci, rd->claim))
        return 0;
    struct cur *cur = &s->res[s->n_res];
    cur->consumed = s->qbuf + s->n_res * s->max_cap;
    struct alloc_cap_check chk;
    int r = alloc_capacity_fits(rq, c->dev, c->pending, cur->consumed, &chk, s->err);
    if (r < 0) {
        gs_error_prefix(s->err, "claim %s/%s, request %s: ", cl->ns, cl->name, rq->name);
        return r;
    }
    if (chk.verdict != ALLOC_CAP_OK)
        return 0;
    if (!alloc_taints_tolerated(c->dev, rq->tolerations, NULL))
        return 0;
    /* Counters: a shareable device that is in use already took its counters. */
    struct alloc_pool_counters *pc = s->pc ? &s->pc[c->pool - s->np->pools] : NULL;
    bool counted = false;
    if (pc && c->dev->n_consumes &&
        !(c->dev->shareable && (c->dev->usage->shared > 0 || c->allocating > 0))) {
        if (!alloc_counters_take(pc, c->dev, NULL, 0))
            return 0;
        counted = true;
    }
    const char *req, *sub;
    sub_names(rd, &req, &sub);
    size_t c0 = s->con_off[rd->claim], c1 = s->con_off[rd->claim + 1];
    for (size_t i = c0; i < c1; i++)
        if (!alloc_constraint_add(&s->cons[i], req, sub, c->dev)) {
            for (size_t e = c0; e < i; e++)
                alloc_constraint_remove(&s->cons[e], req, sub, c->dev);
            if (counted)
                alloc_counters_give(pc, c->dev);
            if (must)
                return gs_error_set(s->err, -EINVAL,
                                    "claim %s/%s, request %s: cannot add device %s because a claim "
                                    "constraint would not be satisfied",
                                    cl->ns, cl->name, rq->name, c->dev->name);
            return 0;
        }
    cur->cand = ci;
    cur->counted = counted;
    cur->rd = rd;
    c->allocating++;
    if (!rq->admin)
        for (size_t i = 0; i < c->dev->n_cap; i++)
            c->pending[i].n += cur->consumed[i].n;
    s->n_res++;
    s->claim_res[rd->claim]++;
    return 1;
}

static void deallocate(struct search *s)
{
    struct cur *cur = &s->res[--s->n_res];
    struct cand *c = &s->cands[cur->cand];
    const char *req, *sub;
    sub_names(cur->rd, &req, &sub);
    s->claim_res[cur->rd->claim]--;
    for (size_t i = s->con_off[cur->rd->claim]; i < s->con_off[cur->rd->claim + 1]; i++)
        alloc_constraint_remove(&s->cons[i], req, sub, c->dev);
    if (cur->counted)
        alloc_counters_give(&s->pc[c->pool - s->np->pools], c->dev);
    c->allocating--;
    if (!cur->rd->rq->admin)
        for (size_t i = 0; i < c->dev->n_cap; i++)
            c->pending[i].n -= cur->consumed[i].n;
}

/* Complete solution reached: 1 to stop searching, 0 to look for more. */
static int solution(struct search *s)
{
    if (s->policy == ALLOC_POLICY_FIRST_FIT)
        return 1;
    /* Each claim's devices are scored; a pod's claims add up to one score. */
    struct alloc_pick picks[ALLOC_MAX_RESULTS];
    double score = 0;
    for (size_t c = 0; c < s->n_claims; c++) {
        size_t k = 0;
        for (size_t i = 0; i < s->n_res && k < ALLOC_MAX_RESULTS; i++)
            if (s->res[i].rd->claim == c) {
                picks[k].dev = s->cands[s->res[i].cand].dev;
                picks[k].pending = s->cands[s->res[i].cand].pending;
                k++;
            }
        score += alloc_policy_score(s->policy, picks, k);
    }
    int better = !s->have_best;
    if (!better) {
        /* Earlier firstAvailable subrequests stay preferred whatever the score. */
        int c = 0;
        for (size_t i = 0; i < s->n_req; i++)
            if (s->reqs[i].selected != s->best_sub[i]) {
                c = s->reqs[i].selected < s->best_sub[i] ? -1 : 1;
                break;
            }
        better = c < 0 || (c == 0 && score > s->best_score);
    }
    if (better) {
        s->have_best = true;
        s->best_score = score;
        for (size_t i = 0; i < s->n_req; i++)
            s->best_sub[i] = s->reqs[i].selected;
        s->best_n = s->n_res;
        for (size_t i = 0; i < s->n_res; i++) {
            s->best[i] = s->res[i];
            s->best[i].consumed = s->best_q + i * s->max_cap;
            memcpy(s->best[i].consumed, s->res[i].consumed, s->max_cap * sizeof(struct alloc_qty));
        }
    }
    return ++s->solutions >= s->max_solutions;
}

/* Device `di` of request `ri` (subrequest `si`). `start`: the next device of the same request is
 * looked for after the previous one only (no permutations; as upstream, one request does not take
 * the same shareable device twice). */
static int allocate_one(struct search *s, size_t ri, size_t si, size_t di, bool in_sub,
                        size_t start)
{
    if (++s->total_steps > s->step_limit) {
        if (s->have_best)
            return 1; /* a scoring policy keeps the best solution found so far */
        const struct alloc_claim_spec *cl = s->claims[0];
        return gs_error_set(s->err, ALLOC_SEARCH_LIMIT,
                            "claim %s/%s: search stopped after %lu steps without an answer", cl->ns,
                            cl->name, s->step_limit);
    }
    if (s->have_best && ++s->steps > s->max_steps)
        return 1;
    if (ri >= s->n_req)
        return solution(s);
    struct req_entry *re = &s->reqs[ri];
    if (!in_sub && re->rd[0].parent) {
        /* allocateOne: a subrequest that ran into the results limit is skipped; when all did,
         * the limit is reported further up. */
        bool all_exceeded = true;
        for (size_t k = 0; k < re->n_rd; k++) {
            re->selected = (int)k;
            int r = allocate_one(s, ri, k, 0, true, 0);
            if (r == EXCEEDED)
                continue;
            all_exceeded = false;
            if (r != 0)
                return r;
        }
        return all_exceeded ? EXCEEDED : 0;
    }
    struct req_data *rd = &re->rd[in_sub ? si : 0];
    if (rd->rq->mode == ALLOC_MODE_ALL && rd->n_all == 0)
        return 0;
    if (di >= rd->num_devices)
        return allocate_one(s, ri + 1, 0, 0, false, 0);
    if (s->claim_res[rd->claim] + rd->num_devices - di > ALLOC_MAX_RESULTS)
        return EXCEEDED;
    if (rd->rq->mode == ALLOC_MODE_ALL) {
        int r = allocate_device(s, rd, rd->all[di], true);
        if (r <= 0)
            return r;
        r = allocate_one(s, ri, si, di + 1, in_sub, 0);
        if (r != 1)
            deallocate(s);
        return r;
    }
    for (size_t ci = start; ci < s->n_cand; ci++) {
        struct cand *c = &s->cands[ci];
        /* No devices from incomplete or invalid pools; other pools may still serve. */
        if (c->pool->incomplete || c->pool->invalid)
            continue;
        /* Admin access does not conflict with other claims of the pod, only with this claim
         * (allocateOne: allocatingDeviceForClaim for adminAccess, deviceInUse otherwise). */
        if (rd->rq->admin
                ? !c->dev->shareable && c->allocating > 0 && allocating_for_claim(s, ci, rd->claim)
                : in_use(s, c, false))
            continue;
        int r = selectable(s, rd, ci);
        if (r < 0)
            return r;
        if (!r)
            continue;
        r = allocate_device(s, rd, ci, false);
        if (r < 0)
            return r;
        if (!r)
            continue;
        r = allocate_one(s, ri, si, di + 1, in_sub, ci + 1);
        if (r == EXCEEDED) {
            /* No other device changes the count: unwind (upstream's aggressive backtrack). */
            deallocate(s);
            return r;
        }
        if (r != 0) {
            /* Stop. A scoring policy restores its best solution afterwards. */
            return r;
        }
        deallocate(s);
    }
    return 0;
}

static void search_fini(struct search *s)
{
    for (size_t i = 0; s->cons && s->con_off && i < s->con_off[s->n_claims]; i++)
        free(s->cons[i].vals);
    for (size_t i = 0; s->pc && i < s->np->n; i++)
        alloc_counters_fini(&s->pc[i]);
    alloc_scratch_reset(s->st); /* everything else came from the scratch */
}

static int setup_request(struct search *s, const struct alloc_request *rq,
                         const struct alloc_request *parent, const struct alloc_node_pools *np,
                         struct req_data *rd)
{
    const struct alloc_claim_spec *cl = s->claims[rd->claim];
    rd->rq = rq;
    rd->parent = parent;
    rd->cls = alloc_map_get(&s->st->classes, rq->class_name);
    if (!rd->cls)
        return gs_error_set(s->err, -ENOENT,
                            "claim %s/%s, request %s: could not retrieve device class %s", cl->ns,
                            cl->name, rq->name, rq->class_name);
    rd->match = alloc_scratch_get(s->st, s->n_cand + 1);
    if (!rd->match)
        return -ENOMEM;
    memset(rd->match, -1, s->n_cand + 1);
    if (rq->mode == ALLOC_MODE_EXACT) {
        rd->num_devices = (size_t)rq->count;
        return 0;
    }
    for (size_t i = 0; i < np->n; i++) {
        if (np->pools[i].incomplete)
            return gs_error_set(s->err, ALLOC_UNSCHEDULABLE,
                                "claim %s/%s, request %s: asks for all devices, but resource pool "
                                "%s/%s is currently being updated",
                                cl->ns, cl->name, rq->name, np->pools[i].driver, np->pools[i].pool);
        if (np->pools[i].invalid)
            return gs_error_set(s->err, -EINVAL,
                                "claim %s/%s, request %s: asks for all devices, but resource pool "
                                "%s/%s is currently invalid",
                                cl->ns, cl->name, rq->name, np->pools[i].driver, np->pools[i].pool);
    }
    rd->all = alloc_scratch_get(s->st, (s->n_cand + 1) * sizeof(size_t));
    if (!rd->all)
        return -ENOMEM;
    struct alloc_qty *consumed = NULL;
    if (rq->n_capreq) {
        consumed = alloc_scratch_get(s->st, (s->max_cap + 1) * sizeof(*consumed));
        if (!consumed)
            return -ENOMEM;
    }
    for (size_t ci = 0; ci < s->n_cand; ci++) {
        int r = selectable(s, rd, ci);
        if (r < 0)
            return r;
        if (!r)
            continue;
        if (consumed) {
            /* validateDeviceRequest (allocator_experimental.go), mode All: a device that
             * lacks a requested capacity, is too small or has too little left is left out
             * (CmpRequestOverCapacity), the others are allocated. */
            struct alloc_cap_check chk;
            r = alloc_capacity_fits(rq, s->cands[ci].dev, s->cands[ci].pending, consumed, &chk,
                                    s->err);
            if (r < 0) {
                gs_error_prefix(s->err, "claim %s/%s, request %s: ", cl->ns, cl->name, rq->name);
                return r;
            }
            if (chk.verdict != ALLOC_CAP_OK)
                continue;
        }
        rd->all[rd->n_all++] = ci;
    }
    rd->num_devices = rd->n_all;
    return 0;
}

/* Results and status.allocation of claim `c` from the solution `res` (n entries). */
static int build_results(struct search *s, size_t c, const struct cur *all, size_t n_all,
                         struct alloc_result **out, size_t *n_out, json_t **allocation)
{
    const struct alloc_claim_spec *cl = s->claims[c];
    struct cur res[ALLOC_MAX_RESULTS];
    size_t n = 0;
    for (size_t i = 0; i < n_all && n < ALLOC_MAX_RESULTS; i++)
        if (all[i].rd->claim == c)
            res[n++] = all[i];
    struct alloc_result *r = calloc(n + 1, sizeof(*r));
    struct alloc_chosen ch[ALLOC_MAX_RESULTS];
    const struct alloc_class *sel_class[ALLOC_MAX_REQUESTS];
    int selected[ALLOC_MAX_REQUESTS];
    if (!r)
        return -ENOMEM;
    int e = -ENOMEM;
    /* This claim's requests are reqs[first .. first + cl->n_req). */
    size_t first = 0;
    while (first < s->n_req && s->reqs[first].rd[0].claim != c)
        first++;
    for (size_t i = 0; i < cl->n_req; i++) {
        selected[i] = s->reqs[first + i].rd[0].parent ? 0 : -1;
        sel_class[i] = s->reqs[first + i].rd[0].cls;
    }
    for (size_t i = 0; i < n; i++) {
        const struct alloc_device *d = s->cands[res[i].cand].dev;
        const struct req_data *rd = res[i].rd;
        struct alloc_result *x = &r[i];
        if (rd->parent) {
            size_t ri = 0;
            while (ri < cl->n_req && s->reqs[first + ri].rd[0].parent != rd->parent)
                ri++;
            if (ri < cl->n_req) {
                selected[ri] = (int)(rd - s->reqs[first + ri].rd);
                sel_class[ri] = rd->cls;
            }
            if (asprintf(&x->request, "%s/%s", rd->parent->name, rd->rq->name) < 0)
                x->request = NULL;
        } else
            x->request = strdup(rd->rq->name);
        x->driver = strdup(d->slice->driver);
        x->pool = strdup(d->slice->pool);
        x->device = strdup(d->name);
        x->admin = rd->rq->admin;
        if (!x->request || !x->driver || !x->pool || !x->device)
            goto fail;
        if (d->shareable) {
            /* A trial is never committed: its shares need no identity. */
            x->share_id = s->trial ? NULL : malloc(37);
            x->consumed_name = calloc(d->n_cap + 1, sizeof(char *));
            x->consumed_fq = calloc(d->n_cap + 1, sizeof(char *));
            x->consumed = calloc(d->n_cap + 1, sizeof(*x->consumed));
            if ((!x->share_id && !s->trial) || !x->consumed_name || !x->consumed_fq || !x->consumed)
                goto fail;
            if (x->share_id)
                alloc_new_share_id(x->share_id);
            for (size_t k = 0; k < d->n_cap; k++) {
                x->consumed_name[k] = strdup(d->cap[k].name);
                x->consumed_fq[k] = strdup(d->cap[k].fq);
                x->n_consumed++;
                if (!x->consumed_name[k] || !x->consumed_fq[k])
                    goto fail;
                x->consumed[k] = res[i].consumed[k];
            }
        }
        ch[i].dev = d;
        ch[i].res = x;
    }
    *allocation = alloc_allocation_json(cl, s->node, sel_class, selected, ch, n, s->trial, s->err);
    if (!*allocation) {
        e = s->err && s->err->code ? s->err->code : -ENOMEM;
        goto fail;
    }
    *out = r;
    *n_out = n;
    return 0;
fail:
    for (size_t i = 0; i < n; i++)
        alloc_result_fini(&r[i]);
    free(r);
    return e;
}

static int build_all(struct search *s, const struct cur *all, size_t n_all,
                     struct alloc_result **res, size_t *n, json_t **allocation)
{
    for (size_t c = 0; c < s->n_claims; c++) {
        int r = build_results(s, c, all, n_all, &res[c], &n[c], &allocation[c]);
        if (r < 0) {
            for (size_t k = 0; k < c; k++) {
                for (size_t i = 0; i < n[k]; i++)
                    alloc_result_fini(&res[k][i]);
                free(res[k]);
                res[k] = NULL;
                json_decref(allocation[k]);
                allocation[k] = NULL;
            }
            return r;
        }
    }
    return 0;
}

static bool device_blocked(const struct alloc_device *d)
{
    const struct alloc_usage *u = d->usage;
    return d->shareable ? u->exclusive > 0 : (u->exclusive || u->shared);
}

#define FOR_USABLE_DEVICES(np, d)                                                                  \
    for (size_t pi_ = 0; pi_ < (np)->n; pi_++)                                                     \
        if (!(np)->pools[pi_].invalid && !(np)->pools[pi_].incomplete)                             \
            for (size_t si_ = 0; si_ < (np)->pools[pi_].n_slices; si_++)                           \
                for (size_t di_ = 0; di_ < (np)->pools[pi_].slices[si_]->n_dev; di_++)             \
                    if (((d) = &(np)->pools[pi_].slices[si_]->dev[di_]), true)

/* The node's free-capacity summary, rebuilt when a device's usage changed since it was built
 * (a few loads per device instead of a capacity check per device and request). */
static const struct alloc_node_pools *node_summary(struct alloc_state *st,
                                                   const struct alloc_node_pools *cnp)
{
    struct alloc_node_pools *np = (struct alloc_node_pools *)cnp; /* the summary is a cache */
    const struct alloc_device *d;
    if (np->sum_built) {
        bool fresh = true;
        if (np->sum_clock != st->usage_clock)
            FOR_USABLE_DEVICES(np, d)
            {
                if (d->usage->changed > np->sum_clock) {
                    fresh = false;
                    break;
                }
            }
        if (fresh)
            return np;
    }
    np->sum_built = true;
    np->sum_clock = st->usage_clock;
    np->sum_one_layout = true;
    np->sum_any = false;
    np->sum_dev = NULL;
    memset(np->sum_free, 0, sizeof(np->sum_free));
    FOR_USABLE_DEVICES(np, d)
    {
        if (!d->layout || (np->sum_dev && d->layout != np->sum_dev->layout)) {
            np->sum_one_layout = false;
            continue;
        }
        np->sum_dev = d;
        if (device_blocked(d))
            continue;
        np->sum_any = true;
        for (size_t i = 0; i < d->n_cap; i++) {
            const struct alloc_qty *used = alloc_capacity_used(d, i);
            __int128 f = d->cap[i].value.n - (used ? used->n : 0);
            if (f > np->sum_free[i])
                np->sum_free[i] = f;
        }
    }
    return np;
}

/* Can some device on the node hold `rq` on its own? A necessary condition only: it looks at
 * usage and requested amounts, never at selectors, so it cannot reject what the search would
 * accept. The node's summary answers for a full node in O(requested capacities). */
static bool request_may_fit(struct alloc_state *st, const struct alloc_request *rq,
                            const struct alloc_node_pools *np)
{
    if (rq->n_sub) {
        for (size_t k = 0; k < rq->n_sub; k++)
            if (request_may_fit(st, &rq->sub[k], np))
                return true;
        return false;
    }
    if (rq->admin || rq->n_capreq == 0 || rq->mode != ALLOC_MODE_EXACT)
        return true;
    np = node_summary(st, np);
    if (np->sum_one_layout) {
        if (!np->sum_any)
            return false;
        const int8_t *map = alloc_capreq_map(rq, np->sum_dev);
        if (map) {
            for (size_t j = 0; j < rq->n_capreq; j++)
                if (rq->capreq[j].q.n > np->sum_free[map[j]])
                    return false;
        }
    }
    const struct alloc_device *d;
    FOR_USABLE_DEVICES(np, d)
    {
        if (!device_blocked(d) && alloc_capacity_may_fit(rq, d))
            return true;
    }
    return false;
}

/* Unknown classes are reported by the full search, never short-cut. */
static bool classes_known(struct alloc_state *st, const struct alloc_claim_spec *claim)
{
    for (size_t i = 0; i < claim->n_req; i++) {
        const struct alloc_request *rq = &claim->req[i];
        for (size_t k = 0; k < (rq->n_sub ? rq->n_sub : 1); k++)
            if (!alloc_map_get(&st->classes, rq->n_sub ? rq->sub[k].class_name : rq->class_name))
                return false;
    }
    return true;
}

int alloc_search(struct alloc_state *st, const struct alloc_claim_spec *const *claims,
                 size_t n_claims, const struct alloc_options *opt, struct alloc_result **res,
                 size_t *n, json_t **allocation, struct gs_error *err)
{
    struct search s = {
        .st = st,
        .claims = claims,
        .n_claims = n_claims,
        .node = opt->node,
        .policy = opt->policy,
        .trial = opt->trial,
        .err = err,
        .max_solutions = opt->max_solutions ? opt->max_solutions : DEFAULT_MAX_SOLUTIONS,
        .max_steps = opt->max_steps ? opt->max_steps : DEFAULT_MAX_STEPS,
        .step_limit = opt->step_limit ? opt->step_limit : DEFAULT_STEP_LIMIT,
        .max_res = ALLOC_MAX_RESULTS * n_claims,
    };
    const struct alloc_node_pools *np = alloc_pools_for_node(st, opt->node, err);
    if (!np)
        return err && err->code ? err->code : -ENOMEM;
    for (size_t c = 0; c < n_claims; c++)
        if (classes_known(st, claims[c]))
            for (size_t i = 0; i < claims[c]->n_req; i++)
                if (!request_may_fit(st, &claims[c]->req[i], np))
                    return ALLOC_UNSCHEDULABLE;
    int r = -ENOMEM;
    for (size_t i = 0; i < np->n; i++)
        for (size_t k = 0; k < np->pools[i].n_slices; k++)
            s.n_cand += np->pools[i].slices[k]->n_dev;
    s.cands = alloc_scratch_get(st, (s.n_cand + 1) * sizeof(*s.cands));
    if (!s.cands)
        goto out;
    size_t ci = 0;
    bool counters = false;
    s.np = np;
    for (size_t i = 0; i < np->n; i++)
        for (size_t k = 0; k < np->pools[i].n_slices; k++) {
            struct alloc_slice *sl = np->pools[i].slices[k];
            for (size_t d = 0; d < sl->n_dev; d++) {
                s.cands[ci].dev = &sl->dev[d];
                s.cands[ci].pool = &np->pools[i];
                if (sl->dev[d].n_cap > s.max_cap)
                    s.max_cap = sl->dev[d].n_cap;
                counters |= sl->dev[d].n_consumes > 0;
                ci++;
            }
        }
    if (counters) {
        s.pc = alloc_scratch_get(st, (np->n + 1) * sizeof(*s.pc));
        if (!s.pc)
            goto out;
        for (size_t i = 0; i < np->n; i++)
            if (alloc_counters_init(st, &np->pools[i], &s.pc[i]) < 0)
                goto out;
    }
    size_t mc = s.max_cap ? s.max_cap : 1;
    /* The results' part of qbuf is written before it is read; the candidates' part (pending
     * amounts) starts at zero. */
    s.qbuf = alloc_scratch_get_raw(st, (s.max_res + s.n_cand) * mc * sizeof(struct alloc_qty));
    if (s.qbuf)
        memset(s.qbuf + s.max_res * mc, 0, s.n_cand * mc * sizeof(struct alloc_qty));
    s.res = alloc_scratch_get(st, (s.max_res + 1) * sizeof(*s.res));
    s.claim_res = alloc_scratch_get(st, (n_claims + 1) * sizeof(size_t));
    s.con_off = alloc_scratch_get(st, (n_claims + 1) * sizeof(size_t));
    if (!s.qbuf || !s.res || !s.claim_res || !s.con_off)
        goto out;
    for (size_t i = 0; i < s.n_cand; i++)
        s.cands[i].pending = s.qbuf + (s.max_res + i) * mc;
    size_t n_con = 0;
    for (size_t c = 0; c < n_claims; c++) {
        s.con_off[c] = n_con;
        n_con += claims[c]->n_con;
        s.n_req += claims[c]->n_req;
    }
    s.con_off[n_claims] = n_con;
    s.cons = alloc_scratch_get(st, (n_con + 1) * sizeof(*s.cons));
    s.reqs = alloc_scratch_get(st, (s.n_req + 1) * sizeof(*s.reqs));
    if (!s.cons || !s.reqs)
        goto out;
    if (s.policy != ALLOC_POLICY_FIRST_FIT) {
        s.best_q = alloc_scratch_get(st, s.max_res * mc * sizeof(struct alloc_qty));
        s.best = alloc_scratch_get(st, (s.max_res + 1) * sizeof(*s.best));
        s.best_sub = alloc_scratch_get(st, (s.n_req + 1) * sizeof(int));
        if (!s.best_q || !s.best || !s.best_sub)
            goto out;
    }
    size_t ri = 0;
    for (size_t c = 0; c < n_claims; c++) {
        const struct alloc_claim_spec *claim = claims[c];
        size_t min_devices = 0;
        for (size_t i = 0; i < claim->n_con; i++)
            s.cons[s.con_off[c] + i].c = &claim->con[i];
        for (size_t i = 0; i < claim->n_req; i++, ri++) {
            const struct alloc_request *rq = &claim->req[i];
            struct req_entry *re = &s.reqs[ri];
            size_t cnt = rq->n_sub ? rq->n_sub : 1;
            re->rd = alloc_scratch_get(st, cnt * sizeof(*re->rd));
            if (!re->rd)
                goto out;
            re->n_rd = cnt;
            re->selected = -1;
            size_t least = SIZE_MAX;
            for (size_t k = 0; k < cnt; k++) {
                re->rd[k].claim = c;
                r = setup_request(&s, rq->n_sub ? &rq->sub[k] : rq, rq->n_sub ? rq : NULL, np,
                                  &re->rd[k]);
                if (r < 0)
                    goto out;
                least = GS_MIN(least, re->rd[k].num_devices);
            }
            min_devices += least;
        }
        /* Allocate(): the smallest number of devices the claim can get must fit one result. */
        if (min_devices > ALLOC_MAX_RESULTS) {
            r = gs_error_set(err, -EINVAL,
                             "claim %s/%s: number of requested devices %zu exceeds the claim "
                             "limit of %d",
                             claim->ns, claim->name, min_devices, ALLOC_MAX_RESULTS);
            goto out;
        }
    }
    r = allocate_one(&s, 0, 0, 0, false, 0);
    if (r < 0)
        goto out;
    if (s.policy != ALLOC_POLICY_FIRST_FIT && s.have_best) {
        for (size_t i = 0; i < s.n_req; i++)
            s.reqs[i].selected = s.best_sub[i];
        r = build_all(&s, s.best, s.best_n, res, n, allocation);
    } else if (r == 1)
        r = build_all(&s, s.res, s.n_res, res, n, allocation);
    else
        r = ALLOC_UNSCHEDULABLE;
out:
    if (r == -ENOMEM && err && !err->code)
        gs_error_set(err, -ENOMEM, "out of memory");
    search_fini(&s);
    return r;
}
