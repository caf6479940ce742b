/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device eligibility by selectors (DeviceClass first, then the request's own, CEL through
 * src/cel) and by device taints against the request's tolerations.
 */
#include <errno.h>
#include <string.h>

#include "alloc/alloc-internal.h"
#include "cel/cel.h"

static int eval(struct alloc_state *st, const char *expr, const struct alloc_device *d, bool *out,
                struct gs_error *err)
{
    const struct cel_program *p = cel_cache_get(st->cel, expr, err);
    if (!p) {
        gs_error_prefix(err, "CEL compile error: ");
        return err && err->code ? err->code : -EINVAL;
    }
    struct cel_device dev = {
        .driver = d->slice->driver,
        .attributes = d->attributes,
        .capacity = d->capacity_json,
        .allow_multiple_allocations = d->shareable,
    };
    int r = cel_eval_device(p, &dev, out, err);
    if (r < 0)
        gs_error_prefix(err, "CEL runtime error: ");
    return r;
}

int alloc_selectors_match(struct alloc_state *st, const struct alloc_selector *sel, size_t n,
                          const struct alloc_device *d, size_t *failed, struct gs_error *err)
{
    for (size_t i = 0; i < n; i++) {
        bool m = false;
        int r = eval(st, sel[i].expr, d, &m, err);
        if (r < 0) {
            if (failed)
                *failed = i;
            return r;
        }
        if (!m) {
            if (failed)
                *failed = i;
            return 0;
        }
    }
    return 1;
}

int alloc_class_matches(struct alloc_state *st, const struct alloc_class *cls,
                        struct alloc_device *d, struct gs_error *err)
{
    size_t slot = cls->serial & 1;
    if (d->class_serial[slot] == cls->serial)
        return d->class_match[slot];
    size_t failed = 0;
    int r = alloc_selectors_match(st, cls->sel, cls->n_sel, d, &failed, err);
    if (r < 0) {
        if (err && strncmp(err->msg, "CEL compile error", 17) == 0)
            gs_error_prefix(err, "class %s: selector #%zu: ", cls->name, failed);
        else
            gs_error_prefix(err, "class %s: selector #%zu on device %s/%s/%s: ", cls->name, failed,
                            d->slice->driver, d->slice->pool, d->name);
        return r;
    }
    d->class_serial[slot] = cls->serial;
    d->class_match[slot] = (int8_t)r;
    return r;
}

static const char *str(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

static bool tolerates(const json_t *tol, const json_t *taint)
{
    const char *te = str(tol, "effect"), *tk = str(tol, "key"), *op = str(tol, "operator");
    if (*te && strcmp(te, str(taint, "effect")) != 0)
        return false;
    if (*tk && strcmp(tk, str(taint, "key")) != 0)
        return false;
    if (strcmp(op, "Exists") == 0)
        return true;
    if (*op && strcmp(op, "Equal") != 0)
        return false;
    return strcmp(str(tol, "value"), str(taint, "value")) == 0;
}

bool alloc_taints_tolerated(const struct alloc_device *d, const json_t *tolerations,
                            const char **taint_key)
{
    size_t i, j;
    const json_t *t, *tol;
    if (!d->taints)
        return true;
    json_array_foreach(d->taints, i, t)
    {
        /* Only the known effects prevent allocation; others (including None) do not. */
        const char *effect = str(t, "effect");
        if (strcmp(effect, "NoSchedule") != 0 && strcmp(effect, "NoExecute") != 0)
            continue;
        bool ok = false;
        if (tolerations) {
            json_array_foreach(tolerations, j, tol)
            {
                if (tolerates(tol, t)) {
                    ok = true;
                    break;
                }
            }
        }
        if (!ok) {
            if (taint_key)
                *taint_key = str(t, "key");
            return false;
        }
    }
    return true;
}
