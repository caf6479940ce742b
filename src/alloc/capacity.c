/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Consumable capacity (KEP-5075) as kube-scheduler computes it: the amount a request consumes
 * from a device capacity (default when unrequested, whole value without a policy, rounding up
 * to min + k*step or to the smallest valid value), policy violations and the sum check.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc-internal.h"

static int64_t value_of(__int128 n)
{
    __int128 v = n / ALLOC_NANO;
    if (n % ALLOC_NANO > 0)
        v++;
    if (v > INT64_MAX)
        return INT64_MAX;
    if (v < INT64_MIN)
        return INT64_MIN;
    return (int64_t)v;
}

int alloc_qty_parse(const char *s, struct alloc_qty *out, struct gs_error *err)
{
    struct gs_quantity q;
    int r = gs_quantity_parse(s, &q, err);
    if (r < 0)
        return r;
    __int128 n = q.mant;
    int e = q.exp10 + 9;
    while (e > 0) {
        if (__builtin_mul_overflow(n, (__int128)10, &n))
            return gs_error_set(err, -ERANGE, "quantity \"%s\" is too large", s);
        e--;
    }
    while (e < 0) { /* cannot happen for exp10 >= -9; kept for safety (truncates) */
        n /= 10;
        e++;
    }
    out->n = n;
    out->v = value_of(n);
    out->fmt = q.format;
    return 0;
}

static void int128_str(__int128 v, char *buf, size_t len)
{
    char tmp[48];
    size_t i = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        tmp[i++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && i < sizeof(tmp) - 1);
    size_t o = 0;
    if (neg && o + 1 < len)
        buf[o++] = '-';
    while (i && o + 1 < len)
        buf[o++] = tmp[--i];
    buf[o] = 0;
}

void alloc_qty_format(const struct alloc_qty *q, char *buf, size_t len)
{
    __int128 n = q->n;
    int e = -9;
    while (n != 0 && n % 10 == 0 && e < 18) {
        n /= 10;
        e++;
    }
    if (n == 0)
        e = 0;
    if (n >= INT64_MIN && n <= INT64_MAX) {
        struct gs_quantity g = {.mant = (int64_t)n, .exp10 = e, .format = q->fmt};
        if (gs_quantity_format(&g, buf, len) == 0)
            return;
    }
    /* Too large for the common formatter: plain decimal units (still a valid quantity). */
    int128_str(q->n / ALLOC_NANO, buf, len);
}

int64_t alloc_qty_value(const struct alloc_qty *q)
{
    return q->v;
}

struct alloc_qty alloc_qty_from_int(int64_t v, enum gs_quantity_format fmt)
{
    return (struct alloc_qty){.n = (__int128)v * ALLOC_NANO, .v = v, .fmt = fmt};
}

static int cmpq(const struct alloc_qty *a, const struct alloc_qty *b)
{
    return a->n < b->n ? -1 : a->n > b->n;
}

static int round_up_range(const struct alloc_qty *req, const struct alloc_capacity *c,
                          struct alloc_qty *out, struct gs_error *err)
{
    struct alloc_qty min = c->has_min ? c->min : alloc_qty_from_int(0, GS_QUANTITY_DECIMAL_SI);
    if (cmpq(req, &min) < 0) {
        *out = min;
        return 0;
    }
    if (!c->has_step) {
        *out = *req;
        return 0;
    }
    if (req->n > (__int128)INT64_MAX * ALLOC_NANO)
        return gs_error_set(err, -ERANGE, "capacity %s: request exceeds MaxInt64", c->name);
    int64_t r = alloc_qty_value(req), step = alloc_qty_value(&c->step), m = alloc_qty_value(&min);
    if (step <= 0) {
        *out = *req;
        return 0;
    }
    int64_t added, n, val;
    if (__builtin_sub_overflow(r, m, &added))
        return gs_error_set(err, -ERANGE, "capacity %s: request not representable", c->name);
    n = added / step;
    if (added % step != 0)
        n++;
    if (__builtin_mul_overflow(step, n, &val) || __builtin_add_overflow(val, m, &val))
        return gs_error_set(err, -ERANGE,
                            "capacity %s: rounding the request up to the next step passes MaxInt64",
                            c->name);
    *out = alloc_qty_from_int(val, c->step.fmt);
    return 0;
}

int alloc_consumed(const struct alloc_qty *requested, const struct alloc_capacity *c,
                   struct alloc_qty *out, struct gs_error *err)
{
    int r = 0;
    if (!requested)
        *out = c->has_policy && c->has_default ? c->def : c->value;
    else if (!c->has_policy)
        *out = *requested;
    else if (c->has_range && c->has_min)
        r = round_up_range(requested, c, out, err);
    else if (c->n_valid > 0) {
        *out = *requested;
        for (size_t i = 0; i < c->n_valid; i++)
            if (cmpq(requested, &c->valid[i]) <= 0) {
                *out = c->valid[i];
                break;
            }
    } else
        *out = *requested;
    if (r < 0)
        return r;
    if (out->n < 0)
        return gs_error_set(err, -EINVAL, "capacity %s: capacity value is negative", c->name);
    return 0;
}

/* Returns true and a message when `q` violates the capacity's requestPolicy. */
static bool violates_policy(const struct alloc_qty *q, const struct alloc_capacity *c, char *detail,
                            size_t len, bool want)
{
    char a[GS_QUANTITY_STR_MAX], b[GS_QUANTITY_STR_MAX], s[GS_QUANTITY_STR_MAX];
    if (!c->has_policy)
        return false;
    if (c->has_default && cmpq(q, &c->def) == 0)
        return false;
    if (c->has_range) {
        if (c->has_max && cmpq(q, &c->max) > 0) {
            if (!want)
                return true;
            alloc_qty_format(q, a, sizeof(a));
            alloc_qty_format(&c->max, b, sizeof(b));
            snprintf(detail, len, "%s: %s above max %s", c->name, a, b);
            return true;
        }
        if (c->has_step) {
            int64_t step = alloc_qty_value(&c->step);
            int64_t m = c->has_min ? alloc_qty_value(&c->min) : 0;
            int64_t v = alloc_qty_value(q), d;
            if (step > 0 && (__builtin_sub_overflow(v, m, &d) || d % step != 0)) {
                if (!want)
                    return true;
                alloc_qty_format(q, a, sizeof(a));
                alloc_qty_format(c->has_min ? &c->min : q, b, sizeof(b));
                alloc_qty_format(&c->step, s, sizeof(s));
                snprintf(detail, len, "%s: %s is not min %s plus a multiple of step %s", c->name, a,
                         b, s);
                return true;
            }
        }
        return false;
    }
    if (c->n_valid > 0) {
        for (size_t i = 0; i < c->n_valid; i++)
            if (cmpq(q, &c->valid[i]) == 0)
                return false;
        if (!want)
            return true;
        alloc_qty_format(q, a, sizeof(a));
        snprintf(detail, len, "%s: %s is not one of the valid values", c->name, a);
        return true;
    }
    return false;
}

static bool fq_equal(const char *name, const char *driver, const char *fq)
{
    if (strchr(name, '/'))
        return strcmp(name, fq) == 0;
    size_t dl = strlen(driver);
    return strncmp(fq, driver, dl) == 0 && fq[dl] == '/' && strcmp(fq + dl + 1, name) == 0;
}

int alloc_capreq_resolve(const struct alloc_request *r, const struct alloc_device *d, int *idx,
                         const char **missing, struct gs_error *err)
{
    for (size_t i = 0; i < d->n_cap; i++)
        idx[i] = -1;
    for (size_t j = 0; j < r->n_capreq; j++) {
        size_t i;
        for (i = 0; i < d->n_cap; i++)
            if (fq_equal(r->capreq[j].name, d->slice->driver, d->cap[i].fq))
                break;
        if (i == d->n_cap) {
            if (missing)
                *missing = r->capreq[j].name;
            return 1;
        }
        if (idx[i] >= 0)
            return gs_error_set(err, -EINVAL,
                                "request %s: capacity %s requested twice (as %s and %s)", r->name,
                                d->cap[i].fq, r->capreq[idx[i]].name, r->capreq[j].name);
        idx[i] = (int)j;
    }
    return 0;
}

const struct alloc_qty *alloc_usage_get(const struct alloc_usage *u, const char *fq)
{
    for (size_t i = 0; i < u->n; i++)
        if (strcmp(u->cap[i].fq, fq) == 0)
            return &u->cap[i].q;
    return NULL;
}

#define ALLOC_MAX_DEVICE_CAPS 64

const int8_t *alloc_capreq_map(const struct alloc_request *r, const struct alloc_device *cd)
{
    struct alloc_cap_layout *l = cd->layout;
    if (!l || !r->serial || r->n_capreq > ALLOC_CAPREQ_CACHE)
        return NULL;
    if (l->capreq_serial == r->serial)
        return l->capreq_cap;
    int idx[ALLOC_CAPREQ_CACHE];
    if (alloc_capreq_resolve(r, cd, idx, NULL, NULL) != 0)
        return NULL; /* missing or named twice: the slow path says which */
    for (size_t j = 0; j < r->n_capreq; j++)
        l->capreq_cap[j] = -1;
    for (size_t i = 0; i < cd->n_cap; i++) {
        l->cap_capreq[i] = (int8_t)idx[i];
        if (idx[i] >= 0)
            l->capreq_cap[idx[i]] = (int8_t)i;
    }
    l->capreq_serial = r->serial;
    return l->capreq_cap;
}

const struct alloc_qty *alloc_capacity_used(const struct alloc_device *d, size_t i)
{
    struct alloc_capacity *c = &d->cap[i]; /* cap[] is not const: the cache is mutable state */
    const struct alloc_usage *u = d->usage;
    if (c->usage_pos)
        return &u->cap[c->usage_pos - 1].q;
    for (; c->usage_seen < u->n; c->usage_seen++)
        if (strcmp(u->cap[c->usage_seen].fq, c->fq) == 0) {
            c->usage_pos = ++c->usage_seen;
            return &u->cap[c->usage_pos - 1].q;
        }
    return NULL;
}

static int check(const struct alloc_request *r, const struct alloc_device *d,
                 const struct alloc_qty *pending, struct alloc_qty *consumed,
                 struct alloc_cap_check *chk, bool detail, struct gs_error *err)
{
    int idx_buf[ALLOC_MAX_DEVICE_CAPS];
    const int *idx = idx_buf;
    const char *missing = NULL;
    chk->verdict = ALLOC_CAP_OK;
    chk->detail[0] = 0;
    if (alloc_capreq_map(r, d)) {
        for (size_t i = 0; i < d->n_cap; i++)
            idx_buf[i] = (int)d->layout->cap_capreq[i]; /* signed: -1 = no request */
    } else {
        int rr = alloc_capreq_resolve(r, d, idx_buf, &missing, err);
        if (rr < 0)
            return rr;
        if (rr == 1) {
            chk->verdict = ALLOC_CAP_MISSING;
            if (detail)
                snprintf(chk->detail, sizeof(chk->detail), "%s: device has no such capacity",
                         missing);
            return 0;
        }
    }
    for (size_t i = 0; i < d->n_cap; i++) {
        int e = alloc_consumed(idx[i] >= 0 ? &r->capreq[idx[i]].q : NULL, &d->cap[i], &consumed[i],
                               err);
        if (e < 0)
            return e;
    }
    char scratch[sizeof(chk->detail)];
    for (size_t i = 0; i < d->n_cap; i++)
        if (violates_policy(&consumed[i], &d->cap[i], detail ? chk->detail : scratch,
                            sizeof(chk->detail), detail)) {
            chk->verdict = ALLOC_CAP_POLICY;
            chk->cap_index = i;
            return 0;
        }
    if (r->admin)
        return 0;
    for (size_t i = 0; i < d->n_cap; i++) {
        const struct alloc_capacity *c = &d->cap[i];
        const struct alloc_qty *used = alloc_capacity_used(d, i);
        __int128 taken = (used ? used->n : 0) + (pending ? pending[i].n : 0);
        if (taken + consumed[i].n > c->value.n) {
            chk->verdict = ALLOC_CAP_INSUFFICIENT;
            chk->cap_index = i;
            chk->need = consumed[i];
            chk->free_.n = c->value.n > taken ? c->value.n - taken : 0;
            chk->free_.fmt = c->value.fmt;
            if (detail) {
                char a[GS_QUANTITY_STR_MAX], b[GS_QUANTITY_STR_MAX];
                alloc_qty_format(&chk->need, a, sizeof(a));
                alloc_qty_format(&chk->free_, b, sizeof(b));
                snprintf(chk->detail, sizeof(chk->detail), "%s: need %s, free %s", c->name, a, b);
            }
            return 0;
        }
    }
    return 0;
}

int alloc_capacity_check(const struct alloc_request *r, const struct alloc_device *d,
                         const struct alloc_qty *pending, struct alloc_qty *consumed,
                         struct alloc_cap_check *chk, struct gs_error *err)
{
    return check(r, d, pending, consumed, chk, true, err);
}

int alloc_capacity_fits(const struct alloc_request *r, const struct alloc_device *d,
                        const struct alloc_qty *pending, struct alloc_qty *consumed,
                        struct alloc_cap_check *chk, struct gs_error *err)
{
    return check(r, d, pending, consumed, chk, false, err);
}

bool alloc_capacity_may_fit(const struct alloc_request *r, const struct alloc_device *d)
{
    const int8_t *map = alloc_capreq_map(r, d);
    for (size_t j = 0; j < r->n_capreq; j++) {
        size_t i;
        if (map)
            i = (size_t)map[j];
        else {
            for (i = 0; i < d->n_cap; i++)
                if (fq_equal(r->capreq[j].name, d->slice->driver, d->cap[i].fq))
                    break;
            if (i == d->n_cap)
                return false;
        }
        const struct alloc_qty *used = alloc_capacity_used(d, i);
        if ((used ? used->n : 0) + r->capreq[j].q.n > d->cap[i].value.n)
            return false;
    }
    return true;
}
