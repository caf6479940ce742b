/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Claim constraints: matchAttribute (all devices of the named requests share one value) and
 * distinctAttribute (all values differ). A constraint without requests applies to every
 * request; naming "req" covers all its subrequests, "req/sub" one subrequest.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

const json_t *alloc_lookup_attribute(const struct alloc_device *d, const char *fqname)
{
    if (!d->attributes)
        return NULL;
    const json_t *a = json_object_get(d->attributes, fqname);
    if (a)
        return a;
    const char *slash = strchr(fqname, '/');
    if (!slash)
        return NULL;
    size_t dl = strlen(d->slice->driver);
    if ((size_t)(slash - fqname) != dl || strncmp(fqname, d->slice->driver, dl) != 0)
        return NULL;
    return json_object_get(d->attributes, slash + 1);
}

/* Attribute values are {"string": ...}, {"int": ...}, {"bool": ...}, {"version": ...} (or list
 * forms). Equal when of the same type with the same value. */
bool alloc_attr_equal(const json_t *a, const json_t *b)
{
    static const char *const types[] = {"string",  "int",  "bool",  "version",
                                        "strings", "ints", "bools", "versions"};
    for (size_t i = 0; i < GS_ARRAY_SIZE(types); i++) {
        const json_t *x = json_object_get(a, types[i]);
        if (!x)
            continue;
        const json_t *y = json_object_get(b, types[i]);
        return y && json_equal((json_t *)x, (json_t *)y);
    }
    return false; /* unknown value type cannot match */
}

static bool applies(const struct alloc_constraint *c, const char *req, const char *sub)
{
    if (c->n_req == 0)
        return true;
    size_t rl = strlen(req);
    for (size_t i = 0; i < c->n_req; i++) {
        const char *n = c->requests[i];
        if (strcmp(n, req) == 0)
            return true;
        if (sub && strncmp(n, req, rl) == 0 && n[rl] == '/' && strcmp(n + rl + 1, sub) == 0)
            return true;
    }
    return false;
}

static bool push(struct alloc_constraint_state *cs, const json_t *v)
{
    if (cs->n == cs->cap) {
        size_t nc = cs->cap ? cs->cap * 2 : 8;
        const json_t **nv = realloc(cs->vals, nc * sizeof(const json_t *));
        if (!nv)
            return false;
        cs->vals = nv;
        cs->cap = nc;
    }
    cs->vals[cs->n++] = v;
    return true;
}

bool alloc_constraint_add(struct alloc_constraint_state *cs, const char *req, const char *sub,
                          const struct alloc_device *d)
{
    const struct alloc_constraint *c = cs->c;
    if (!applies(c, req, sub))
        return true;
    const json_t *v = alloc_lookup_attribute(d, c->attribute);
    if (!v)
        return false;
    if (c->kind == ALLOC_CONSTRAINT_MATCH) {
        if (cs->n > 0 && !alloc_attr_equal(v, cs->vals[0]))
            return false;
    } else {
        for (size_t i = 0; i < cs->n; i++)
            if (alloc_attr_equal(v, cs->vals[i]))
                return false;
    }
    return push(cs, v);
}

void alloc_constraint_remove(struct alloc_constraint_state *cs, const char *req, const char *sub,
                             const struct alloc_device *d)
{
    (void)d;
    if (!applies(cs->c, req, sub))
        return;
    if (cs->n)
        cs->n--;
}
