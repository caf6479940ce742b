/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocator's state: slices, classes, nodes, and the in-use set built from allocated claims
 * (exclusive allocations, shared allocations and the sum of their consumed capacity per device).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"
#include "cel/cel.h"

static void usage_free(void *p)
{
    struct alloc_usage *u = p;
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++)
        free(u->cap[i].fq);
    free(u->cap);
    free(u);
}

static void node_free(void *p)
{
    struct alloc_node *n = p;
    if (!n)
        return;
    free(n->name);
    json_decref(n->labels);
    free(n);
}

static void claim_free(void *p)
{
    struct alloc_allocated_claim *c = p;
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        alloc_result_fini(&c->res[i]);
    free(c->res);
    free(c->key);
    free(c);
}

static void slice_free_v(void *p)
{
    alloc_slice_free(p);
}

static void class_free_v(void *p)
{
    alloc_class_free(p);
}

struct alloc_state *alloc_state_new(void)
{
    struct alloc_state *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->cel = cel_cache_new();
    if (!st->cel) {
        free(st);
        return NULL;
    }
    st->next_class_serial = 1;
    st->slices_generation = 1;
    return st;
}

void alloc_state_free(struct alloc_state *st)
{
    if (!st)
        return;
    alloc_map_fini(&st->node_pools, alloc_node_pools_free);
    alloc_slice_index_free(st);
    alloc_map_fini(&st->slices, slice_free_v);
    alloc_map_fini(&st->classes, class_free_v);
    alloc_map_fini(&st->nodes, node_free);
    alloc_map_fini(&st->claims, claim_free);
    alloc_map_fini(&st->usage, usage_free);
    alloc_map_fini(&st->layouts, free);
    cel_cache_free(st->cel);
    alloc_scratch_free(st);
    free(st);
}

struct alloc_usage *alloc_state_usage(struct alloc_state *st, const char *key)
{
    struct alloc_usage *u = alloc_map_get(&st->usage, key);
    if (u)
        return u;
    u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    if (alloc_map_put(&st->usage, key, u, NULL) < 0) {
        free(u);
        return NULL;
    }
    return u;
}

void alloc_usage_add(struct alloc_usage *u, const struct alloc_result *r, int sign)
{
    if (r->admin)
        return;
    if (!r->share_id) {
        if (sign > 0)
            u->exclusive++;
        else if (u->exclusive)
            u->exclusive--;
        return;
    }
    if (sign > 0)
        u->shared++;
    else if (u->shared)
        u->shared--;
    for (size_t i = 0; i < r->n_consumed; i++) {
        struct alloc_usage_cap *c = NULL;
        for (size_t j = 0; j < u->n; j++)
            if (strcmp(u->cap[j].fq, r->consumed_fq[i]) == 0)
                c = &u->cap[j];
        if (!c) {
            if (sign < 0)
                continue;
            struct alloc_usage_cap *nc = realloc(u->cap, (u->n + 1) * sizeof(*nc));
            if (!nc)
                continue;
            u->cap = nc;
            c = &u->cap[u->n];
            c->fq = strdup(r->consumed_fq[i]);
            if (!c->fq)
                continue;
            c->q = (struct alloc_qty){.n = 0, .fmt = r->consumed[i].fmt};
            u->n++;
        }
        if (sign > 0)
            c->q.n += r->consumed[i].n;
        else
            c->q.n = c->q.n > r->consumed[i].n ? c->q.n - r->consumed[i].n : 0;
    }
}

static int usage_key(const struct alloc_result *r, char **out)
{
    if (asprintf(out, "%s\x1f%s\x1f%s", r->driver, r->pool, r->device) < 0) {
        *out = NULL;
        return -ENOMEM;
    }
    return 0;
}

int alloc_state_commit(struct alloc_state *st, const char *ns, const char *name,
                       struct alloc_result *res, size_t n)
{
    struct alloc_allocated_claim *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (asprintf(&c->key, "%s/%s", ns, name) < 0) {
        free(c);
        return -ENOMEM;
    }
    /* Re-adding a claim replaces its earlier allocation. */
    alloc_state_release_claim(st, ns, name);
    for (size_t i = 0; i < n; i++) {
        char *key;
        if (usage_key(&res[i], &key) < 0)
            continue;
        struct alloc_usage *u = alloc_state_usage(st, key);
        free(key);
        if (u) {
            u->changed = ++st->usage_clock;
            alloc_usage_add(u, &res[i], +1);
        }
    }
    c->res = res;
    c->n = n;
    int r = alloc_map_put(&st->claims, c->key, c, NULL);
    if (r < 0) {
        c->res = NULL;
        c->n = 0;
        claim_free(c);
    }
    return r;
}

static void usage_apply(struct alloc_state *st, const struct alloc_allocated_claim *c, int sign)
{
    for (size_t i = 0; i < c->n; i++) {
        char *k;
        if (usage_key(&c->res[i], &k) < 0)
            continue;
        struct alloc_usage *u = sign > 0 ? alloc_state_usage(st, k) : alloc_map_get(&st->usage, k);
        free(k);
        if (u) {
            u->changed = ++st->usage_clock;
            alloc_usage_add(u, &c->res[i], sign);
        }
    }
}

struct alloc_allocated_claim *alloc_state_take_claim(struct alloc_state *st, const char *ns,
                                                     const char *name)
{
    char buf[512];
    char *key = buf;
    if (st->claims.len == 0)
        return NULL;
    size_t ln = strlen(ns), lm = strlen(name);
    if (ln + lm + 2 <= sizeof(buf)) { /* no snprintf: this runs for every node tried */
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): the '/' and the name follow */
        memcpy(buf, ns, ln);
        buf[ln] = '/';
        memcpy(buf + ln + 1, name, lm + 1);
    } else if (asprintf(&key, "%s/%s", ns, name) < 0)
        return NULL;
    struct alloc_allocated_claim *c = alloc_map_remove(&st->claims, key);
    if (key != buf)
        free(key);
    if (c)
        usage_apply(st, c, -1);
    return c;
}

void alloc_state_restore_claim(struct alloc_state *st, struct alloc_allocated_claim *c)
{
    if (!c)
        return;
    usage_apply(st, c, +1);
    if (alloc_map_put(&st->claims, c->key, c, NULL) < 0) {
        usage_apply(st, c, -1);
        claim_free(c);
    }
}

void alloc_allocated_claim_free(struct alloc_allocated_claim *c)
{
    claim_free(c);
}

int alloc_state_release_claim(struct alloc_state *st, const char *ns, const char *name)
{
    struct alloc_allocated_claim *c = alloc_state_take_claim(st, ns, name);
    if (!c)
        return -ENOENT;
    claim_free(c);
    return 0;
}

size_t alloc_state_claim_count(const struct alloc_state *st)
{
    return st->claims.len;
}

/* The device's capacity layout, shared with every device of the same driver and capacities. */
static int attach_layout(struct alloc_state *st, struct alloc_device *d)
{
    if (d->n_cap > ALLOC_CAPREQ_CACHE)
        return 0; /* resolved per device */
    size_t len = strlen(d->slice->driver) + 2;
    for (size_t i = 0; i < d->n_cap; i++)
        len += strlen(d->cap[i].fq) + 1;
    char *key = malloc(len);
    if (!key)
        return -ENOMEM;
    char *p = stpcpy(key, d->slice->driver);
    *p++ = '\x1e';
    *p = 0;
    for (size_t i = 0; i < d->n_cap; i++) {
        p = stpcpy(p, d->cap[i].fq);
        *p++ = '\x1f';
        *p = 0;
    }
    struct alloc_cap_layout *l = alloc_map_get(&st->layouts, key);
    if (!l) {
        l = calloc(1, sizeof(*l));
        if (!l || alloc_map_put(&st->layouts, key, l, NULL) < 0) {
            free(l);
            free(key);
            return -ENOMEM;
        }
    }
    free(key);
    d->layout = l;
    return 0;
}

int alloc_state_add_slice(struct alloc_state *st, const json_t *obj, struct gs_error *err)
{
    struct alloc_slice *s;
    int r = alloc_decode_slice(obj, &s, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < s->n_dev; i++) {
        s->dev[i].usage = alloc_state_usage(st, s->dev[i].key);
        if (!s->dev[i].usage || attach_layout(st, &s->dev[i]) < 0) {
            alloc_slice_free(s);
            return -ENOMEM;
        }
    }
    void *old = NULL;
    r = alloc_map_put(&st->slices, s->name, s, &old);
    if (r < 0) {
        alloc_slice_free(s);
        return r;
    }
    alloc_slice_free(old);
    st->slices_generation++;
    return 0;
}

int alloc_state_add_class(struct alloc_state *st, const json_t *obj, struct gs_error *err)
{
    struct alloc_class *c;
    int r = alloc_decode_class(obj, &c, err);
    if (r < 0)
        return r;
    c->serial = st->next_class_serial++;
    void *old = NULL;
    r = alloc_map_put(&st->classes, c->name, c, &old);
    if (r < 0) {
        alloc_class_free(c);
        return r;
    }
    alloc_class_free(old);
    return 0;
}

int alloc_state_add_node(struct alloc_state *st, const json_t *obj, struct gs_error *err)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *nm = meta ? json_object_get(meta, "name") : NULL;
    if (!json_is_string(nm) || !*json_string_value(nm))
        return gs_error_set(err, -EINVAL, "Node: metadata.name: required field is missing");
    const json_t *labels = json_object_get(meta, "labels");
    if (labels && !json_is_null(labels) && !json_is_object(labels))
        return gs_error_set(err, -EINVAL, "Node %s: metadata.labels: must be an object",
                            json_string_value(nm));
    const char *k;
    const json_t *v;
    if (json_is_object(labels)) {
        json_object_foreach((json_t *)labels, k, v)
        {
            if (!json_is_string(v))
                return gs_error_set(err, -EINVAL, "Node %s: metadata.labels.%s: must be a string",
                                    json_string_value(nm), k);
        }
    }
    struct alloc_node *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->name = strdup(json_string_value(nm));
    n->labels = json_is_object(labels) ? json_deep_copy(labels) : json_object();
    void *old = NULL;
    int r = -ENOMEM;
    if (!n->name || !n->labels || (r = alloc_map_put(&st->nodes, n->name, n, &old)) < 0) {
        node_free(n);
        return r;
    }
    node_free(old);
    st->slices_generation++;
    return 0;
}

int alloc_state_add_allocated_claim(struct alloc_state *st, const json_t *claim,
                                    struct gs_error *err)
{
    struct alloc_result *res = NULL;
    size_t n = 0;
    int r = alloc_decode_results(claim, &res, &n, err);
    if (r != 0)
        return r;
    const json_t *meta = json_object_get(claim, "metadata");
    const json_t *nm = meta ? json_object_get(meta, "name") : NULL;
    const json_t *ns = meta ? json_object_get(meta, "namespace") : NULL;
    if (!json_is_string(nm)) {
        for (size_t i = 0; i < n; i++)
            alloc_result_fini(&res[i]);
        free(res);
        return gs_error_set(err, -EINVAL,
                            "ResourceClaim: metadata.name: required field is missing");
    }
    r = alloc_state_commit(st, json_is_string(ns) ? json_string_value(ns) : "default",
                           json_string_value(nm), res, n);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            alloc_result_fini(&res[i]);
        free(res);
    }
    return r;
}

int alloc_state_add_object(struct alloc_state *st, const json_t *obj, struct gs_error *err)
{
    if (!json_is_object(obj))
        return gs_error_set(err, -EINVAL, "object: not a JSON object");
    const json_t *kind = json_object_get(obj, "kind");
    if (!json_is_string(kind))
        return gs_error_set(err, -EINVAL, "object: kind: required field is missing");
    const char *k = json_string_value(kind);
    if (strcmp(k, "ResourceSlice") == 0)
        return alloc_state_add_slice(st, obj, err);
    if (strcmp(k, "DeviceClass") == 0)
        return alloc_state_add_class(st, obj, err);
    if (strcmp(k, "Node") == 0)
        return alloc_state_add_node(st, obj, err);
    if (strcmp(k, "ResourceClaim") == 0)
        return alloc_state_add_allocated_claim(st, obj, err);
    return gs_error_set(err, -EINVAL,
                        "object: kind: \"%.64s\" is not ResourceSlice, DeviceClass, "
                        "Node or ResourceClaim",
                        k);
}
