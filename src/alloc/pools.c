/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pools as kube-scheduler gathers them for one node: slices that match the node (nodeName,
 * allNodes, nodeSelector, or any device with perDeviceNodeSelection), grouped by (driver, pool);
 * the highest generation wins, a pool is incomplete when fewer slices than resourceSliceCount
 * are seen, invalid when a device name repeats. Pools are sorted by (driver, pool), slices by
 * name; devices keep slice order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

/* ---- node selectors ------------------------------------------------------------------------ */

static bool in_values(const json_t *values, const char *v)
{
    size_t i;
    const json_t *x;
    json_array_foreach(values, i, x)
    {
        if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
            return true;
    }
    return false;
}

static int parse_i64(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -EINVAL;
    *out = v;
    return 0;
}

static int requirement_matches(const json_t *req, const json_t *labels, const char *node,
                               bool field, bool *out, struct gs_error *err)
{
    const json_t *k = json_object_get(req, "key"), *op = json_object_get(req, "operator");
    const json_t *values = json_object_get(req, "values");
    if (!json_is_string(k) || !json_is_string(op))
        return gs_error_set(err, -EINVAL, "node selector requirement needs key and operator");
    if (values && !json_is_array(values))
        return gs_error_set(err, -EINVAL, "node selector requirement %s: values must be an array",
                            json_string_value(k));
    const char *key = json_string_value(k), *o = json_string_value(op);
    const char *val = NULL;
    if (field) {
        if (strcmp(key, "metadata.name") != 0)
            return gs_error_set(err, -EINVAL,
                                "node selector field \"%s\" is not supported "
                                "(only metadata.name)",
                                key);
        if (strcmp(o, "In") != 0 && strcmp(o, "NotIn") != 0)
            return gs_error_set(err, -EINVAL,
                                "node selector field operator \"%s\" is not In or "
                                "NotIn",
                                o);
        val = node;
    } else {
        const json_t *l = labels ? json_object_get(labels, key) : NULL;
        val = json_is_string(l) ? json_string_value(l) : NULL;
    }
    if (strcmp(o, "In") == 0)
        *out = val && values && in_values(values, val);
    else if (strcmp(o, "NotIn") == 0)
        *out = !val || !values || !in_values(values, val);
    else if (strcmp(o, "Exists") == 0)
        *out = val != NULL;
    else if (strcmp(o, "DoesNotExist") == 0)
        *out = val == NULL;
    else if (strcmp(o, "Gt") == 0 || strcmp(o, "Lt") == 0) {
        long long a, b;
        const json_t *v0 =
            values && json_array_size(values) == 1 ? json_array_get(values, 0) : NULL;
        if (!json_is_string(v0) || parse_i64(json_string_value(v0), &b) < 0)
            return gs_error_set(err, -EINVAL, "node selector %s %s: needs one integer value", key,
                                o);
        if (!val || parse_i64(val, &a) < 0)
            *out = false;
        else
            *out = o[0] == 'G' ? a > b : a < b;
    } else
        return gs_error_set(err, -EINVAL, "node selector operator \"%s\" is not valid", o);
    return 0;
}

static int selector_matches(const json_t *sel, const json_t *labels, const char *node, bool *out,
                            struct gs_error *err)
{
    *out = false;
    const json_t *terms = json_object_get(sel, "nodeSelectorTerms");
    if (!json_is_array(terms))
        return 0;
    size_t i;
    const json_t *t;
    json_array_foreach(terms, i, t)
    {
        const json_t *me = json_object_get(t, "matchExpressions"),
                     *mf = json_object_get(t, "matchFields");
        size_t nme = json_is_array(me) ? json_array_size(me) : 0,
               nmf = json_is_array(mf) ? json_array_size(mf) : 0;
        if (nme + nmf == 0)
            continue; /* an empty term matches nothing */
        bool all = true;
        for (size_t j = 0; j < nme + nmf && all; j++) {
            bool m = false;
            int r =
                requirement_matches(j < nme ? json_array_get(me, j) : json_array_get(mf, j - nme),
                                    labels, node, j >= nme, &m, err);
            if (r < 0)
                return r;
            all = m;
        }
        if (all) {
            *out = true;
            return 0;
        }
    }
    return 0;
}

int alloc_node_matches(const struct alloc_state *st, const char *node, const char *node_name,
                       bool all_nodes, const json_t *selector, bool *out, struct gs_error *err)
{
    if (node_name && *node_name) {
        *out = node && strcmp(node, node_name) == 0;
        return 0;
    }
    if (all_nodes) {
        *out = true;
        return 0;
    }
    if (selector) {
        const struct alloc_node *n = node ? alloc_map_get(&st->nodes, node) : NULL;
        return selector_matches(selector, n ? n->labels : NULL, node, out, err);
    }
    *out = false;
    return 0;
}

/* ---- gathering --------------------------------------------------------------------------------
 */

void alloc_node_pools_free(void *p)
{
    struct alloc_node_pools *np = p;
    if (!np)
        return;
    for (size_t i = 0; i < np->n; i++)
        free(np->pools[i].slices);
    free(np->pools);
    free(np);
}

static int cmp_pool(const void *a, const void *b)
{
    const struct alloc_pool *x = a, *y = b;
    int c = strcmp(x->driver, y->driver);
    return c ? c : strcmp(x->pool, y->pool);
}

static int cmp_slice(const void *a, const void *b)
{
    const struct alloc_slice *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int add_slice(struct alloc_node_pools *np, struct alloc_slice *s)
{
    struct alloc_pool *p = NULL;
    for (size_t i = 0; i < np->n; i++)
        if (strcmp(np->pools[i].driver, s->driver) == 0 && strcmp(np->pools[i].pool, s->pool) == 0)
            p = &np->pools[i];
    if (!p) {
        struct alloc_pool *nps = realloc(np->pools, (np->n + 1) * sizeof(*nps));
        if (!nps)
            return -ENOMEM;
        np->pools = nps;
        p = &np->pools[np->n++];
        memset(p, 0, sizeof(*p));
        p->driver = s->driver;
        p->pool = s->pool;
    } else {
        int64_t gen = p->slices[0]->generation;
        if (s->generation < gen)
            return 0; /* outdated */
        if (s->generation > gen)
            p->n_slices = 0; /* newer generation replaces all older slices */
    }
    struct alloc_slice **ns = realloc(p->slices, (p->n_slices + 1) * sizeof(struct alloc_slice *));
    if (!ns)
        return -ENOMEM;
    p->slices = ns;
    p->slices[p->n_slices++] = s;
    return 0;
}

static void slice_list_free(void *p)
{
    struct alloc_slice_list *l = p;
    if (l)
        free(l->v);
    free(l);
}

void alloc_slice_index_free(struct alloc_state *st)
{
    alloc_map_fini(&st->by_node, slice_list_free);
    alloc_map_fini(&st->by_pool, slice_list_free);
    free(st->unbound);
    st->unbound = NULL;
    st->n_unbound = st->cap_unbound = 0;
}

static int slice_list_push(struct alloc_slice ***v, size_t *n, size_t *cap, struct alloc_slice *s)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct alloc_slice **nv = realloc(*v, nc * sizeof(struct alloc_slice *));
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = s;
    return 0;
}

/* nodeName -> slices, plus every slice not bound by nodeName (allNodes, nodeSelector,
 * perDeviceNodeSelection): gathering for one node then looks at its own slices only. */
static int build_index(struct alloc_state *st)
{
    if (st->index_generation == st->slices_generation)
        return 0;
    alloc_slice_index_free(st);
    for (size_t i = 0; i < st->slices.cap; i++) {
        struct alloc_slice *s = st->slices.e[i].key ? st->slices.e[i].value : NULL;
        if (!s)
            continue;
        char *pk = NULL;
        if (asprintf(&pk, "%s\x1f%s", s->driver, s->pool) < 0)
            return -ENOMEM;
        struct alloc_slice_list *pl = alloc_map_get(&st->by_pool, pk);
        if (!pl) {
            pl = calloc(1, sizeof(*pl));
            if (!pl || alloc_map_put(&st->by_pool, pk, pl, NULL) < 0) {
                free(pl);
                free(pk);
                return -ENOMEM;
            }
        }
        free(pk);
        if (slice_list_push(&pl->v, &pl->n, &pl->cap, s) < 0)
            return -ENOMEM;
        if (!s->per_device && s->node_name && *s->node_name) {
            struct alloc_slice_list *l = alloc_map_get(&st->by_node, s->node_name);
            if (!l) {
                l = calloc(1, sizeof(*l));
                if (!l || alloc_map_put(&st->by_node, s->node_name, l, NULL) < 0) {
                    free(l);
                    return -ENOMEM;
                }
            }
            if (slice_list_push(&l->v, &l->n, &l->cap, s) < 0)
                return -ENOMEM;
        } else if (slice_list_push(&st->unbound, &st->n_unbound, &st->cap_unbound, s) < 0)
            return -ENOMEM;
    }
    st->index_generation = st->slices_generation;
    return 0;
}

const struct alloc_slice_list *alloc_pool_slices(struct alloc_state *st, const char *driver,
                                                 const char *pool)
{
    char *pk = NULL;
    if (build_index(st) < 0 || asprintf(&pk, "%s\x1f%s", driver, pool) < 0)
        return NULL;
    const struct alloc_slice_list *l = alloc_map_get(&st->by_pool, pk);
    free(pk);
    return l;
}

static int consider(struct alloc_state *st, struct alloc_node_pools *np, const char *node,
                    struct alloc_slice *s, struct gs_error *err)
{
    bool match = false;
    int r = 0;
    if (s->per_device) {
        for (size_t d = 0; d < s->n_dev && !match && r == 0; d++)
            r = alloc_node_matches(st, node, s->dev[d].node_name, s->dev[d].all_nodes,
                                   s->dev[d].node_selector, &match, err);
    } else
        r = alloc_node_matches(st, node, s->node_name, s->all_nodes, s->node_selector, &match, err);
    if (r < 0) {
        gs_error_prefix(err, "ResourceSlice %s: ", s->name);
        return r;
    }
    if (match && add_slice(np, s) < 0)
        return gs_error_set(err, -ENOMEM, "out of memory");
    return 0;
}

/* Counter sets and their consumption, checked over every slice of the pool's generation, also
 * those for other nodes, as kube-scheduler's buildPool() does (getAndValidateCounterSets,
 * validateDeviceCounterConsumption in structured/internal/experimental/pools_experimental.go):
 * a counter set named twice, or a device consuming from a set or a counter the pool does not
 * have, makes the whole pool invalid. */
static void check_counters(struct alloc_state *st, struct alloc_pool *p)
{
    const struct alloc_slice_list *all = alloc_pool_slices(st, p->driver, p->pool);
    int64_t gen = p->slices[0]->generation;
    if (!all)
        return;
    for (size_t a = 0; a < all->n; a++) {
        const struct alloc_slice *sa = all->v[a];
        if (sa->generation != gen)
            continue;
        for (size_t i = 0; i < sa->n_csets; i++)
            for (size_t b = a; b < all->n; b++) {
                const struct alloc_slice *sb = all->v[b];
                if (sb->generation != gen)
                    continue;
                for (size_t j = (b == a ? i + 1 : 0); j < sb->n_csets; j++)
                    if (strcmp(sa->csets[i].name, sb->csets[j].name) == 0) {
                        p->invalid = true;
                        snprintf(p->invalid_reason, sizeof(p->invalid_reason),
                                 "duplicate counter set name %.100s", sa->csets[i].name);
                        return;
                    }
            }
    }
    for (size_t a = 0; a < all->n; a++) {
        const struct alloc_slice *sa = all->v[a];
        if (sa->generation != gen)
            continue;
        for (size_t d = 0; d < sa->n_dev; d++) {
            const struct alloc_device *dev = &sa->dev[d];
            for (size_t k = 0; k < dev->n_consumes; k++) {
                const struct alloc_counter_set *want = &dev->consumes[k];
                const struct alloc_counter_set *set = NULL;
                for (size_t b = 0; b < all->n && !set; b++) {
                    if (all->v[b]->generation != gen)
                        continue;
                    for (size_t j = 0; j < all->v[b]->n_csets && !set; j++)
                        if (strcmp(all->v[b]->csets[j].name, want->name) == 0)
                            set = &all->v[b]->csets[j];
                }
                if (!set) {
                    p->invalid = true;
                    snprintf(p->invalid_reason, sizeof(p->invalid_reason),
                             "counter set %.60s not found (device %.60s)", want->name, dev->name);
                    return;
                }
                for (size_t c = 0; c < want->n; c++) {
                    bool found = false;
                    for (size_t j = 0; j < set->n && !found; j++)
                        found = strcmp(set->c[j].name, want->c[c].name) == 0;
                    if (!found) {
                        p->invalid = true;
                        snprintf(p->invalid_reason, sizeof(p->invalid_reason),
                                 "counter %.50s not found in counter set %.50s (device %.40s)",
                                 want->c[c].name, set->name, dev->name);
                        return;
                    }
                }
            }
        }
    }
}

const struct alloc_node_pools *alloc_pools_for_node(struct alloc_state *st, const char *node,
                                                    struct gs_error *err)
{
    struct alloc_node_pools *np = alloc_map_get(&st->node_pools, node);
    if (np && np->generation == st->slices_generation)
        return np;
    np = calloc(1, sizeof(*np));
    if (!np) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    np->generation = st->slices_generation;
    if (build_index(st) < 0) {
        alloc_node_pools_free(np);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    const struct alloc_slice_list *own = alloc_map_get(&st->by_node, node);
    for (size_t i = 0; own && i < own->n; i++)
        if (consider(st, np, node, own->v[i], err) < 0) {
            alloc_node_pools_free(np);
            return NULL;
        }
    for (size_t i = 0; i < st->n_unbound; i++)
        if (consider(st, np, node, st->unbound[i], err) < 0) {
            alloc_node_pools_free(np);
            return NULL;
        }
    /* Completeness counts every slice of the pool, also those for other nodes; a pool whose
     * driver already publishes a newer generation elsewhere is obsolete and ignored. */
    size_t kept = 0;
    for (size_t i = 0; i < np->n; i++) {
        struct alloc_pool *p = &np->pools[i];
        if (!p->slices || !p->n_slices) { /* cannot happen: a pool starts with a slice */
            free(p->slices);
            continue;
        }
        int64_t gen = p->slices[0]->generation, count = (int64_t)p->n_slices;
        bool obsolete = false;
        if (count != p->slices[0]->slice_count) {
            const struct alloc_slice_list *all = NULL;
            char *pk = NULL;
            if (asprintf(&pk, "%s\x1f%s", p->driver, p->pool) >= 0) {
                all = alloc_map_get(&st->by_pool, pk);
                free(pk);
            }
            count = 0;
            for (size_t k = 0; all && k < all->n && !obsolete; k++) {
                if (all->v[k]->generation > gen)
                    obsolete = true;
                else if (all->v[k]->generation == gen)
                    count++;
            }
        }
        if (obsolete) {
            free(p->slices);
            continue;
        }
        p->incomplete = count != p->slices[0]->slice_count;
        np->pools[kept++] = *p;
    }
    np->n = kept;
    if (np->n)
        qsort(np->pools, np->n, sizeof(*np->pools), cmp_pool);
    for (size_t i = 0; i < np->n; i++) {
        struct alloc_pool *p = &np->pools[i];
        qsort(p->slices, p->n_slices, sizeof(struct alloc_slice *), cmp_slice);
        /* Invalid: a device name appears twice in the pool. */
        for (size_t a = 0; a < p->n_slices && !p->invalid; a++)
            for (size_t da = 0; da < p->slices[a]->n_dev && !p->invalid; da++)
                for (size_t b = a; b < p->n_slices && !p->invalid; b++)
                    for (size_t db = (b == a ? da + 1 : 0); db < p->slices[b]->n_dev; db++)
                        if (strcmp(p->slices[a]->dev[da].name, p->slices[b]->dev[db].name) == 0) {
                            p->invalid = true;
                            snprintf(p->invalid_reason, sizeof(p->invalid_reason),
                                     "duplicate device name %.100s", p->slices[a]->dev[da].name);
                            break;
                        }
        if (!p->invalid && !p->incomplete)
            check_counters(st, p);
    }
    void *old = NULL;
    if (alloc_map_put(&st->node_pools, node, np, &old) < 0) {
        alloc_node_pools_free(np);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    alloc_node_pools_free(old);
    return np;
}
