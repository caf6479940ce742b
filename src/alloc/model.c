/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoding of resource.k8s.io/v1 objects (ResourceSlice, DeviceClass, ResourceClaim) from
 * jansson into the allocator's model. Every error names the object and the JSON path of the
 * field, e.g. "ResourceSlice s1: spec.devices[2].capacity.memory.value: \"x\" is not a quantity".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

#define MAX_DEVICES_PER_SLICE 1024
#define MAX_DEVICE_CAPS       64
#define MAX_VALID_VALUES      64
#define MAX_NAME_LEN          1024

struct dctx {
    const char *kind;
    const char *name;
    struct gs_error *err;
};

GS_PRINTF(4, 5)
static int fail(const struct dctx *c, const char *path, int code, const char *fmt, ...)
{
    char msg[GS_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gs_error_set(c->err, code, "%s %s: %s: %s", c->kind, c->name ? c->name : "(unnamed)",
                        path, msg);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* Optional typed members: return 0 (absent leaves *out), or a negative error. */
static int get_obj(const struct dctx *c, const json_t *o, const char *key, const char *path,
                   const json_t **out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return fail(c, path, -EINVAL, "must be an object, not %s", type_name(v));
    *out = v;
    return 0;
}

static int get_arr(const struct dctx *c, const json_t *o, const char *key, const char *path,
                   const json_t **out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return fail(c, path, -EINVAL, "must be an array, not %s", type_name(v));
    *out = v;
    return 0;
}

static int get_str(const struct dctx *c, const json_t *o, const char *key, const char *path,
                   bool required, char **out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fail(c, path, -EINVAL, "required field is missing");
        return 0;
    }
    if (!json_is_string(v))
        return fail(c, path, -EINVAL, "must be a string, not %s", type_name(v));
    if (json_string_length(v) > MAX_NAME_LEN)
        return fail(c, path, -EINVAL, "longer than %d bytes", MAX_NAME_LEN);
    if (required && json_string_length(v) == 0)
        return fail(c, path, -EINVAL, "must not be empty");
    char *s = strdup(json_string_value(v));
    if (!s)
        return -ENOMEM;
    free(*out);
    *out = s;
    return 0;
}

static int get_bool(const struct dctx *c, const json_t *o, const char *key, const char *path,
                    bool *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return fail(c, path, -EINVAL, "must be a boolean, not %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

static int get_int(const struct dctx *c, const json_t *o, const char *key, const char *path,
                   bool required, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fail(c, path, -EINVAL, "required field is missing");
        return 0;
    }
    if (!json_is_integer(v))
        return fail(c, path, -EINVAL, "must be an integer, not %s", type_name(v));
    *out = json_integer_value(v);
    return 0;
}

static int get_qty(const struct dctx *c, const json_t *v, const char *path, struct alloc_qty *out)
{
    char buf[32];
    const char *s;
    if (json_is_string(v))
        s = json_string_value(v);
    else if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        s = buf;
    } else
        return fail(c, path, -EINVAL, "must be a quantity string, not %s", type_name(v));
    struct gs_error qe = {0};
    int r = alloc_qty_parse(s, out, &qe);
    if (r < 0)
        return fail(c, path, r, "\"%.64s\" is not a quantity (%s)", s, qe.msg);
    return 0;
}

/* v1 validation: a ResourceSlice node selector has exactly one term. */
static int check_node_selector(const struct dctx *c, const char *path, const json_t *ns)
{
    if (!ns)
        return 0;
    const json_t *terms = json_object_get(ns, "nodeSelectorTerms");
    if (!json_is_array(terms) || json_array_size(terms) != 1)
        return fail(c, path, -EINVAL, "must have exactly one node selector term");
    return 0;
}

static json_t *ref(const json_t *v)
{
    return v ? json_deep_copy(v) : NULL;
}

char *alloc_fq_name(const char *name, const char *driver)
{
    if (strchr(name, '/'))
        return strdup(name);
    char *s = NULL;
    if (asprintf(&s, "%s/%s", driver, name) < 0)
        return NULL;
    return s;
}

/* ---- ResourceSlice ------------------------------------------------------------------------- */

static void capacity_fini(struct alloc_capacity *c)
{
    free(c->name);
    free(c->fq);
    free(c->valid);
}

static void counter_sets_free(struct alloc_counter_set *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        for (size_t k = 0; k < v[i].n; k++)
            free(v[i].c[k].name);
        free(v[i].c);
    }
    free(v);
}

#define MAX_COUNTER_SETS 64
#define MAX_COUNTERS     64

/* sharedCounters [{name, counters: {c: {value}}}] or consumesCounters [{counterSet, ...}]. */
static int decode_counter_sets(const struct dctx *c, const json_t *arr, const char *path,
                               const char *name_key, struct alloc_counter_set **out, size_t *n)
{
    char p[320];
    int r;
    size_t cnt = json_array_size(arr);
    if (cnt > MAX_COUNTER_SETS)
        return fail(c, path, -EINVAL, "%zu entries, more than %d", cnt, MAX_COUNTER_SETS);
    *out = calloc(cnt + 1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *e = json_array_get(arr, i), *counters = NULL;
        struct alloc_counter_set *cs = &(*out)[(*n)++];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if (!json_is_object(e))
            return fail(c, p, -EINVAL, "must be an object, not %s", type_name(e));
        snprintf(p, sizeof(p), "%s[%zu].%s", path, i, name_key);
        if ((r = get_str(c, e, name_key, p, true, &cs->name)) < 0)
            return r;
        snprintf(p, sizeof(p), "%s[%zu].counters", path, i);
        if ((r = get_obj(c, e, "counters", p, &counters)) < 0)
            return r;
        if (!counters)
            return fail(c, p, -EINVAL, "required field is missing");
        if (json_object_size(counters) > MAX_COUNTERS)
            return fail(c, p, -EINVAL, "more than %d counters", MAX_COUNTERS);
        cs->c = calloc(json_object_size(counters) + 1, sizeof(*cs->c));
        if (!cs->c)
            return -ENOMEM;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)counters, k, v)
        {
            struct alloc_counter *ct = &cs->c[cs->n++];
            if (!(ct->name = strdup(k)))
                return -ENOMEM;
            snprintf(p, sizeof(p), "%s[%zu].counters.%.64s.value", path, i, k);
            const json_t *val = json_is_object(v) ? json_object_get(v, "value") : NULL;
            if (!val)
                return fail(c, p, -EINVAL, "required field is missing");
            if ((r = get_qty(c, val, p, &ct->q)) < 0)
                return r;
            if (ct->q.n < 0)
                return fail(c, p, -EINVAL, "must not be negative");
        }
    }
    return 0;
}

static void device_fini(struct alloc_device *d)
{
    counter_sets_free(d->consumes, d->n_consumes);
    free(d->name);
    json_decref(d->attributes);
    json_decref(d->capacity_json);
    for (size_t i = 0; i < d->n_cap; i++)
        capacity_fini(&d->cap[i]);
    free(d->cap);
    free(d->node_name);
    json_decref(d->node_selector);
    json_decref(d->taints);
    json_decref(d->binding_conditions);
    json_decref(d->binding_failure_conditions);
    free(d->key);
}

void alloc_slice_free(struct alloc_slice *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_dev; i++)
        device_fini(&s->dev[i]);
    free(s->dev);
    free(s->name);
    free(s->driver);
    free(s->pool);
    free(s->node_name);
    json_decref(s->node_selector);
    counter_sets_free(s->csets, s->n_csets);
    free(s);
}

static int decode_capacity(const struct dctx *c, const char *path, const char *name,
                           const json_t *v, const char *driver, struct alloc_capacity *cap)
{
    char p[320];
    cap->name = strdup(name);
    cap->fq = alloc_fq_name(name, driver);
    if (!cap->name || !cap->fq)
        return -ENOMEM;
    if (!json_is_object(v))
        return fail(c, path, -EINVAL, "must be an object, not %s", type_name(v));
    const json_t *val = json_object_get(v, "value");
    snprintf(p, sizeof(p), "%s.value", path);
    if (!val)
        return fail(c, p, -EINVAL, "required field is missing");
    int r = get_qty(c, val, p, &cap->value);
    if (r < 0)
        return r;
    if (cap->value.n < 0)
        return fail(c, p, -EINVAL, "must not be negative");
    const json_t *pol = NULL;
    snprintf(p, sizeof(p), "%s.requestPolicy", path);
    if ((r = get_obj(c, v, "requestPolicy", p, &pol)) < 0)
        return r;
    if (!pol)
        return 0;
    cap->has_policy = true;
    const json_t *d = json_object_get(pol, "default");
    if (d && !json_is_null(d)) {
        snprintf(p, sizeof(p), "%s.requestPolicy.default", path);
        if ((r = get_qty(c, d, p, &cap->def)) < 0)
            return r;
        cap->has_default = true;
    }
    const json_t *rng = NULL;
    snprintf(p, sizeof(p), "%s.requestPolicy.validRange", path);
    if ((r = get_obj(c, pol, "validRange", p, &rng)) < 0)
        return r;
    if (rng) {
        static const char *const keys[] = {"min", "max", "step"};
        struct alloc_qty *dst[] = {&cap->min, &cap->max, &cap->step};
        bool *has[] = {&cap->has_min, &cap->has_max, &cap->has_step};
        cap->has_range = true;
        for (size_t i = 0; i < 3; i++) {
            const json_t *q = json_object_get(rng, keys[i]);
            if (!q || json_is_null(q))
                continue;
            snprintf(p, sizeof(p), "%s.requestPolicy.validRange.%s", path, keys[i]);
            if ((r = get_qty(c, q, p, dst[i])) < 0)
                return r;
            *has[i] = true;
        }
        if (cap->has_step && cap->step.n <= 0) {
            snprintf(p, sizeof(p), "%s.requestPolicy.validRange.step", path);
            return fail(c, p, -EINVAL, "must be positive");
        }
    }
    const json_t *vv = NULL;
    snprintf(p, sizeof(p), "%s.requestPolicy.validValues", path);
    if ((r = get_arr(c, pol, "validValues", p, &vv)) < 0)
        return r;
    if (vv && json_array_size(vv) > 0) {
        if (json_array_size(vv) > MAX_VALID_VALUES)
            return fail(c, p, -EINVAL, "more than %d entries", MAX_VALID_VALUES);
        cap->valid = calloc(json_array_size(vv), sizeof(*cap->valid));
        if (!cap->valid)
            return -ENOMEM;
        for (size_t i = 0; i < json_array_size(vv); i++) {
            snprintf(p, sizeof(p), "%s.requestPolicy.validValues[%zu]", path, i);
            if ((r = get_qty(c, json_array_get(vv, i), p, &cap->valid[i])) < 0)
                return r;
            cap->n_valid++;
        }
    }
    return 0;
}

static int decode_device(const struct dctx *c, size_t idx, const json_t *v, struct alloc_slice *s,
                         struct alloc_device *d)
{
    char p[256];
    int r;
    snprintf(p, sizeof(p), "spec.devices[%zu]", idx);
    if (!json_is_object(v))
        return fail(c, p, -EINVAL, "must be an object, not %s", type_name(v));
    d->slice = s;
    snprintf(p, sizeof(p), "spec.devices[%zu].name", idx);
    if ((r = get_str(c, v, "name", p, true, &d->name)) < 0)
        return r;
    if (asprintf(&d->key, "%s\x1f%s\x1f%s", s->driver, s->pool, d->name) < 0) {
        d->key = NULL;
        return -ENOMEM;
    }
    const json_t *attrs = NULL, *cap = NULL, *arr = NULL;
    snprintf(p, sizeof(p), "spec.devices[%zu].attributes", idx);
    if ((r = get_obj(c, v, "attributes", p, &attrs)) < 0)
        return r;
    if (attrs) {
        const char *k;
        const json_t *a;
        json_object_foreach((json_t *)attrs, k, a)
        {
            if (!json_is_object(a) || json_object_size(a) != 1) {
                snprintf(p, sizeof(p), "spec.devices[%zu].attributes.%.100s", idx, k);
                return fail(c, p, -EINVAL,
                            "must be an object with exactly one of int, bool, string, version");
            }
        }
        d->attributes = ref(attrs);
    }
    snprintf(p, sizeof(p), "spec.devices[%zu].capacity", idx);
    if ((r = get_obj(c, v, "capacity", p, &cap)) < 0)
        return r;
    if (cap) {
        if (json_object_size(cap) > MAX_DEVICE_CAPS)
            return fail(c, p, -EINVAL, "more than %d capacities", MAX_DEVICE_CAPS);
        d->cap = calloc(json_object_size(cap) + 1, sizeof(*d->cap));
        if (!d->cap)
            return -ENOMEM;
        const char *k;
        const json_t *cv;
        json_object_foreach((json_t *)cap, k, cv)
        {
            snprintf(p, sizeof(p), "spec.devices[%zu].capacity.%.100s", idx, k);
            struct alloc_capacity *dc = &d->cap[d->n_cap++];
            if ((r = decode_capacity(c, p, k, cv, s->driver, dc)) < 0)
                return r;
            /* "x" and "<driver>/x" name one capacity: the qualified spelling wins. */
            for (size_t j = 0; j + 1 < d->n_cap; j++)
                if (strcmp(d->cap[j].fq, dc->fq) == 0) {
                    bool new_qualified = strchr(dc->name, '/') != NULL;
                    if (new_qualified) {
                        capacity_fini(&d->cap[j]);
                        d->cap[j] = *dc;
                    } else
                        capacity_fini(dc);
                    memset(&d->cap[--d->n_cap], 0, sizeof(*dc));
                    break;
                }
        }
        d->capacity_json = ref(cap);
    }
    snprintf(p, sizeof(p), "spec.devices[%zu].allowMultipleAllocations", idx);
    if ((r = get_bool(c, v, "allowMultipleAllocations", p, &d->shareable)) < 0)
        return r;
    snprintf(p, sizeof(p), "spec.devices[%zu].bindsToNode", idx);
    if ((r = get_bool(c, v, "bindsToNode", p, &d->binds_to_node)) < 0)
        return r;
    snprintf(p, sizeof(p), "spec.devices[%zu].nodeName", idx);
    if ((r = get_str(c, v, "nodeName", p, false, &d->node_name)) < 0)
        return r;
    snprintf(p, sizeof(p), "spec.devices[%zu].allNodes", idx);
    if ((r = get_bool(c, v, "allNodes", p, &d->all_nodes)) < 0)
        return r;
    const json_t *ns = NULL;
    snprintf(p, sizeof(p), "spec.devices[%zu].nodeSelector", idx);
    if ((r = get_obj(c, v, "nodeSelector", p, &ns)) < 0 || (r = check_node_selector(c, p, ns)) < 0)
        return r;
    d->node_selector = ref(ns);
    const json_t *cc = NULL;
    snprintf(p, sizeof(p), "spec.devices[%zu].consumesCounters", idx);
    if ((r = get_arr(c, v, "consumesCounters", p, &cc)) < 0)
        return r;
    if (cc && json_array_size(cc) &&
        (r = decode_counter_sets(c, cc, p, "counterSet", &d->consumes, &d->n_consumes)) < 0)
        return r;
    static const char *const arrays[] = {"taints", "bindingConditions", "bindingFailureConditions"};
    json_t **dst[] = {&d->taints, &d->binding_conditions, &d->binding_failure_conditions};
    for (size_t i = 0; i < 3; i++) {
        arr = NULL;
        snprintf(p, sizeof(p), "spec.devices[%zu].%s", idx, arrays[i]);
        if ((r = get_arr(c, v, arrays[i], p, &arr)) < 0)
            return r;
        if (arr && json_array_size(arr) > 0)
            *dst[i] = ref(arr);
    }
    return 0;
}

int alloc_decode_slice(const json_t *obj, struct alloc_slice **out, struct gs_error *err)
{
    struct dctx c = {.kind = "ResourceSlice", .err = err};
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *nm = meta ? json_object_get(meta, "name") : NULL;
    c.name = json_is_string(nm) ? json_string_value(nm) : NULL;
    struct alloc_slice *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int r;
    const json_t *spec = NULL, *pool = NULL, *devs = NULL, *ns = NULL;
    if (!json_is_object(obj)) {
        r = gs_error_set(err, -EINVAL, "ResourceSlice: not an object");
        goto out;
    }
    if (!meta || !json_is_object(meta)) {
        r = fail(&c, "metadata", -EINVAL, "required field is missing");
        goto out;
    }
    if ((r = get_str(&c, meta, "name", "metadata.name", true, &s->name)) < 0)
        goto out;
    if ((r = get_obj(&c, obj, "spec", "spec", &spec)) < 0)
        goto out;
    if (!spec) {
        r = fail(&c, "spec", -EINVAL, "required field is missing");
        goto out;
    }
    if ((r = get_str(&c, spec, "driver", "spec.driver", true, &s->driver)) < 0)
        goto out;
    if ((r = get_obj(&c, spec, "pool", "spec.pool", &pool)) < 0)
        goto out;
    if (!pool) {
        r = fail(&c, "spec.pool", -EINVAL, "required field is missing");
        goto out;
    }
    if ((r = get_str(&c, pool, "name", "spec.pool.name", true, &s->pool)) < 0 ||
        (r = get_int(&c, pool, "generation", "spec.pool.generation", false, &s->generation)) < 0 ||
        (r = get_int(&c, pool, "resourceSliceCount", "spec.pool.resourceSliceCount", true,
                     &s->slice_count)) < 0)
        goto out;
    if (s->slice_count <= 0) {
        r = fail(&c, "spec.pool.resourceSliceCount", -EINVAL, "%lld must be positive",
                 (long long)s->slice_count);
        goto out;
    }
    if ((r = get_str(&c, spec, "nodeName", "spec.nodeName", false, &s->node_name)) < 0 ||
        (r = get_bool(&c, spec, "allNodes", "spec.allNodes", &s->all_nodes)) < 0 ||
        (r = get_obj(&c, spec, "nodeSelector", "spec.nodeSelector", &ns)) < 0 ||
        (r = get_bool(&c, spec, "perDeviceNodeSelection", "spec.perDeviceNodeSelection",
                      &s->per_device)) < 0)
        goto out;
    if ((r = check_node_selector(&c, "spec.nodeSelector", ns)) < 0)
        goto out;
    s->node_selector = ref(ns);
    int set = (s->node_name && *s->node_name) + s->all_nodes + (ns != NULL) + s->per_device;
    if (set != 1) {
        r = fail(&c, "spec", -EINVAL,
                 "exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be "
                 "set (%d are)",
                 set);
        goto out;
    }
    const json_t *shared = NULL;
    if ((r = get_arr(&c, spec, "sharedCounters", "spec.sharedCounters", &shared)) < 0)
        goto out;
    if (shared && json_array_size(shared) &&
        (r = decode_counter_sets(&c, shared, "spec.sharedCounters", "name", &s->csets,
                                 &s->n_csets)) < 0)
        goto out;
    if ((r = get_arr(&c, spec, "devices", "spec.devices", &devs)) < 0)
        goto out;
    if (devs) {
        size_t n = json_array_size(devs);
        if (n > MAX_DEVICES_PER_SLICE) {
            r = fail(&c, "spec.devices", -EINVAL, "%zu devices, more than %d", n,
                     MAX_DEVICES_PER_SLICE);
            goto out;
        }
        s->dev = calloc(n + 1, sizeof(*s->dev));
        if (!s->dev) {
            r = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            s->n_dev++;
            if ((r = decode_device(&c, i, json_array_get(devs, i), s, &s->dev[i])) < 0)
                goto out;
        }
    }
    *out = s;
    return 0;
out:
    alloc_slice_free(s);
    return r;
}

/* ---- DeviceClass --------------------------------------------------------------------------- */

static void selectors_free(struct alloc_selector *sel, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(sel[i].expr);
    free(sel);
}

static int decode_selectors(const struct dctx *c, const json_t *o, const char *path,
                            struct alloc_selector **out, size_t *n)
{
    const json_t *arr = NULL;
    char p[320];
    snprintf(p, sizeof(p), "%s.selectors", path);
    int r = get_arr(c, o, "selectors", p, &arr);
    if (r < 0 || !arr)
        return r;
    size_t cnt = json_array_size(arr);
    if (cnt > ALLOC_MAX_SELECTORS)
        return fail(c, p, -EINVAL, "%zu selectors, more than %d", cnt, ALLOC_MAX_SELECTORS);
    *out = calloc(cnt + 1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *sv = json_array_get(arr, i), *cel = NULL;
        snprintf(p, sizeof(p), "%s.selectors[%zu]", path, i);
        if (!json_is_object(sv))
            return fail(c, p, -EINVAL, "must be an object, not %s", type_name(sv));
        snprintf(p, sizeof(p), "%s.selectors[%zu].cel", path, i);
        if ((r = get_obj(c, sv, "cel", p, &cel)) < 0)
            return r;
        if (!cel)
            return fail(c, p, -EINVAL, "required field is missing");
        snprintf(p, sizeof(p), "%s.selectors[%zu].cel.expression", path, i);
        (*n)++;
        if ((r = get_str(c, cel, "expression", p, true, &(*out)[i].expr)) < 0)
            return r;
    }
    return 0;
}

void alloc_class_free(struct alloc_class *cl)
{
    if (!cl)
        return;
    free(cl->name);
    selectors_free(cl->sel, cl->n_sel);
    json_decref(cl->config);
    free(cl);
}

int alloc_decode_class(const json_t *obj, struct alloc_class **out, struct gs_error *err)
{
    struct dctx c = {.kind = "DeviceClass", .err = err};
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *nm = meta ? json_object_get(meta, "name") : NULL;
    c.name = json_is_string(nm) ? json_string_value(nm) : NULL;
    struct alloc_class *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return -ENOMEM;
    int r;
    const json_t *spec = NULL, *cfg = NULL;
    if (!meta || !json_is_object(meta)) {
        r = fail(&c, "metadata", -EINVAL, "required field is missing");
        goto out;
    }
    if ((r = get_str(&c, meta, "name", "metadata.name", true, &cl->name)) < 0 ||
        (r = get_obj(&c, obj, "spec", "spec", &spec)) < 0)
        goto out;
    if (spec) {
        if ((r = decode_selectors(&c, spec, "spec", &cl->sel, &cl->n_sel)) < 0 ||
            (r = get_arr(&c, spec, "config", "spec.config", &cfg)) < 0)
            goto out;
        if (cfg && json_array_size(cfg) > 0)
            cl->config = ref(cfg);
    }
    *out = cl;
    return 0;
out:
    alloc_class_free(cl);
    return r;
}

/* ---- ResourceClaim ------------------------------------------------------------------------- */

static void request_fini(struct alloc_request *rq)
{
    free(rq->name);
    free(rq->class_name);
    selectors_free(rq->sel, rq->n_sel);
    for (size_t i = 0; i < rq->n_capreq; i++)
        free(rq->capreq[i].name);
    free(rq->capreq);
    json_decref(rq->tolerations);
    for (size_t i = 0; i < rq->n_sub; i++)
        request_fini(&rq->sub[i]);
    free(rq->sub);
}

void alloc_claim_spec_free(struct alloc_claim_spec *cl)
{
    if (!cl)
        return;
    free(cl->ns);
    free(cl->name);
    free(cl->uid);
    for (size_t i = 0; i < cl->n_req; i++)
        request_fini(&cl->req[i]);
    free(cl->req);
    for (size_t i = 0; i < cl->n_con; i++) {
        free(cl->con[i].attribute);
        for (size_t j = 0; j < cl->con[i].n_req; j++)
            free(cl->con[i].requests[j]);
        free(cl->con[i].requests);
    }
    free(cl->con);
    json_decref(cl->config);
    free(cl);
}

/* The fields an `exactly` request and a firstAvailable subrequest share. */
static int decode_device_request(const struct dctx *c, const json_t *o, const char *path,
                                 bool allow_admin, struct alloc_request *rq)
{
    /* Numbers requests for the devices' capacity-request caches: unique in the process, so a
     * request freed and another decoded at its address never share an entry. */
    static _Atomic uint64_t next_serial = 1;
    char p[320];
    int r;
    rq->serial = next_serial++;
    snprintf(p, sizeof(p), "%s.deviceClassName", path);
    if ((r = get_str(c, o, "deviceClassName", p, true, &rq->class_name)) < 0)
        return r;
    if ((r = decode_selectors(c, o, path, &rq->sel, &rq->n_sel)) < 0)
        return r;
    char *mode = NULL;
    snprintf(p, sizeof(p), "%s.allocationMode", path);
    if ((r = get_str(c, o, "allocationMode", p, false, &mode)) < 0)
        return r;
    rq->mode = ALLOC_MODE_EXACT;
    rq->count = 1;
    if (mode && strcmp(mode, "All") == 0)
        rq->mode = ALLOC_MODE_ALL;
    else if (mode && *mode && strcmp(mode, "ExactCount") != 0) {
        r = fail(c, p, -EINVAL, "\"%.64s\" is not ExactCount or All", mode);
        free(mode);
        return r;
    }
    free(mode);
    snprintf(p, sizeof(p), "%s.count", path);
    if ((r = get_int(c, o, "count", p, false, &rq->count)) < 0)
        return r;
    /* A request's count is capped at the results limit here; a firstAvailable subrequest may
     * ask for more: kube-scheduler skips it for the next one (allocateOne,
     * errAllocationResultMaxSizeExceeded) and refuses the claim only when its smallest
     * alternatives together exceed the limit (Allocate, minDevicesPerClaim). */
    int64_t max_count = allow_admin ? ALLOC_MAX_RESULTS : INT32_MAX;
    if (rq->mode == ALLOC_MODE_EXACT && (rq->count < 1 || rq->count > max_count))
        return fail(c, p, -EINVAL, "%lld is not between 1 and %lld", (long long)rq->count,
                    (long long)max_count);
    if (allow_admin) {
        snprintf(p, sizeof(p), "%s.adminAccess", path);
        if ((r = get_bool(c, o, "adminAccess", p, &rq->admin)) < 0)
            return r;
    }
    const json_t *tol = NULL, *cap = NULL, *reqs = NULL;
    snprintf(p, sizeof(p), "%s.tolerations", path);
    if ((r = get_arr(c, o, "tolerations", p, &tol)) < 0)
        return r;
    if (tol && json_array_size(tol))
        rq->tolerations = ref(tol);
    snprintf(p, sizeof(p), "%s.capacity", path);
    if ((r = get_obj(c, o, "capacity", p, &cap)) < 0)
        return r;
    if (cap) {
        snprintf(p, sizeof(p), "%s.capacity.requests", path);
        if ((r = get_obj(c, cap, "requests", p, &reqs)) < 0)
            return r;
    }
    if (reqs) {
        if (json_object_size(reqs) > MAX_DEVICE_CAPS)
            return fail(c, p, -EINVAL, "more than %d entries", MAX_DEVICE_CAPS);
        rq->capreq = calloc(json_object_size(reqs) + 1, sizeof(*rq->capreq));
        if (!rq->capreq)
            return -ENOMEM;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)reqs, k, v)
        {
            snprintf(p, sizeof(p), "%s.capacity.requests.%.100s", path, k);
            struct alloc_cap_request *cr = &rq->capreq[rq->n_capreq++];
            cr->name = strdup(k);
            if (!cr->name)
                return -ENOMEM;
            if ((r = get_qty(c, v, p, &cr->q)) < 0)
                return r;
            if (cr->q.n < 0)
                return fail(c, p, -EINVAL, "must not be negative");
        }
    }
    return 0;
}

static int decode_request(const struct dctx *c, size_t idx, const json_t *o,
                          struct alloc_request *rq)
{
    char p[256];
    int r;
    snprintf(p, sizeof(p), "spec.devices.requests[%zu]", idx);
    if (!json_is_object(o))
        return fail(c, p, -EINVAL, "must be an object, not %s", type_name(o));
    snprintf(p, sizeof(p), "spec.devices.requests[%zu].name", idx);
    if ((r = get_str(c, o, "name", p, true, &rq->name)) < 0)
        return r;
    const json_t *ex = NULL, *fa = NULL;
    snprintf(p, sizeof(p), "spec.devices.requests[%zu].exactly", idx);
    if ((r = get_obj(c, o, "exactly", p, &ex)) < 0)
        return r;
    snprintf(p, sizeof(p), "spec.devices.requests[%zu].firstAvailable", idx);
    if ((r = get_arr(c, o, "firstAvailable", p, &fa)) < 0)
        return r;
    if ((ex != NULL) == (fa != NULL && json_array_size(fa) > 0)) {
        snprintf(p, sizeof(p), "spec.devices.requests[%zu]", idx);
        return fail(c, p, -EINVAL, "exactly one of exactly, firstAvailable must be set");
    }
    if (ex) {
        snprintf(p, sizeof(p), "spec.devices.requests[%zu].exactly", idx);
        return decode_device_request(c, ex, p, true, rq);
    }
    size_t n = json_array_size(fa);
    if (n > ALLOC_MAX_SUBREQUESTS)
        return fail(c, p, -EINVAL, "%zu subrequests, more than %d", n, ALLOC_MAX_SUBREQUESTS);
    rq->sub = calloc(n, sizeof(*rq->sub));
    if (!rq->sub)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *so = json_array_get(fa, i);
        struct alloc_request *sub = &rq->sub[rq->n_sub++];
        snprintf(p, sizeof(p), "spec.devices.requests[%zu].firstAvailable[%zu]", idx, i);
        if (!json_is_object(so))
            return fail(c, p, -EINVAL, "must be an object, not %s", type_name(so));
        char np[300];
        snprintf(np, sizeof(np), "%s.name", p);
        if ((r = get_str(c, so, "name", np, true, &sub->name)) < 0)
            return r;
        if ((r = decode_device_request(c, so, p, false, sub)) < 0)
            return r;
    }
    return 0;
}

int alloc_decode_claim(const json_t *obj, struct alloc_claim_spec **out, struct gs_error *err)
{
    struct dctx c = {.kind = "ResourceClaim", .err = err};
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *nm = meta ? json_object_get(meta, "name") : NULL;
    c.name = json_is_string(nm) ? json_string_value(nm) : NULL;
    struct alloc_claim_spec *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return -ENOMEM;
    int r;
    const json_t *spec = NULL, *devs = NULL, *reqs = NULL, *cons = NULL, *cfg = NULL;
    if (!meta || !json_is_object(meta)) {
        r = fail(&c, "metadata", -EINVAL, "required field is missing");
        goto out;
    }
    if ((r = get_str(&c, meta, "name", "metadata.name", true, &cl->name)) < 0 ||
        (r = get_str(&c, meta, "namespace", "metadata.namespace", false, &cl->ns)) < 0 ||
        (r = get_str(&c, meta, "uid", "metadata.uid", false, &cl->uid)) < 0)
        goto out;
    if (!cl->ns && !(cl->ns = strdup("default"))) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = get_obj(&c, obj, "spec", "spec", &spec)) < 0)
        goto out;
    if (spec && (r = get_obj(&c, spec, "devices", "spec.devices", &devs)) < 0)
        goto out;
    if (devs && ((r = get_arr(&c, devs, "requests", "spec.devices.requests", &reqs)) < 0 ||
                 (r = get_arr(&c, devs, "constraints", "spec.devices.constraints", &cons)) < 0 ||
                 (r = get_arr(&c, devs, "config", "spec.devices.config", &cfg)) < 0))
        goto out;
    if (reqs) {
        size_t n = json_array_size(reqs);
        if (n > ALLOC_MAX_REQUESTS) {
            r = fail(&c, "spec.devices.requests", -EINVAL, "%zu requests, more than %d", n,
                     ALLOC_MAX_REQUESTS);
            goto out;
        }
        cl->req = calloc(n + 1, sizeof(*cl->req));
        if (!cl->req) {
            r = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            cl->n_req++;
            if ((r = decode_request(&c, i, json_array_get(reqs, i), &cl->req[i])) < 0)
                goto out;
            for (size_t j = 0; j < i; j++)
                if (cl->req[j].name && cl->req[i].name &&
                    strcmp(cl->req[j].name, cl->req[i].name) == 0) {
                    char p[64];
                    snprintf(p, sizeof(p), "spec.devices.requests[%zu].name", i);
                    r = fail(&c, p, -EINVAL, "duplicate request name \"%.64s\"", cl->req[i].name);
                    goto out;
                }
        }
    }
    if (cons) {
        size_t n = json_array_size(cons);
        if (n > ALLOC_MAX_CONSTRAINTS) {
            r = fail(&c, "spec.devices.constraints", -EINVAL, "%zu constraints, more than %d", n,
                     ALLOC_MAX_CONSTRAINTS);
            goto out;
        }
        cl->con = calloc(n + 1, sizeof(*cl->con));
        if (!cl->con) {
            r = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            const json_t *co = json_array_get(cons, i), *rn = NULL;
            struct alloc_constraint *k = &cl->con[cl->n_con++];
            char p[128];
            snprintf(p, sizeof(p), "spec.devices.constraints[%zu]", i);
            if (!json_is_object(co)) {
                r = fail(&c, p, -EINVAL, "must be an object");
                goto out;
            }
            char *ma = NULL, *da = NULL;
            snprintf(p, sizeof(p), "spec.devices.constraints[%zu].matchAttribute", i);
            if ((r = get_str(&c, co, "matchAttribute", p, false, &ma)) < 0)
                goto out;
            snprintf(p, sizeof(p), "spec.devices.constraints[%zu].distinctAttribute", i);
            if ((r = get_str(&c, co, "distinctAttribute", p, false, &da)) < 0) {
                free(ma);
                goto out;
            }
            if ((ma != NULL) == (da != NULL)) {
                free(ma);
                free(da);
                snprintf(p, sizeof(p), "spec.devices.constraints[%zu]", i);
                r = fail(&c, p, -EINVAL,
                         "exactly one of matchAttribute, distinctAttribute must be set");
                goto out;
            }
            k->kind = ma ? ALLOC_CONSTRAINT_MATCH : ALLOC_CONSTRAINT_DISTINCT;
            k->attribute = ma ? ma : da;
            if (!strchr(k->attribute, '/')) {
                r = fail(&c, p, -EINVAL, "\"%.64s\" is not a fully qualified name (domain/name)",
                         k->attribute);
                goto out;
            }
            snprintf(p, sizeof(p), "spec.devices.constraints[%zu].requests", i);
            if ((r = get_arr(&c, co, "requests", p, &rn)) < 0)
                goto out;
            if (rn) {
                k->requests = calloc(json_array_size(rn) + 1, sizeof(char *));
                if (!k->requests) {
                    r = -ENOMEM;
                    goto out;
                }
                for (size_t j = 0; j < json_array_size(rn); j++) {
                    const json_t *s = json_array_get(rn, j);
                    if (!json_is_string(s)) {
                        snprintf(p, sizeof(p), "spec.devices.constraints[%zu].requests[%zu]", i, j);
                        r = fail(&c, p, -EINVAL, "must be a string");
                        goto out;
                    }
                    if (!(k->requests[k->n_req++] = strdup(json_string_value(s)))) {
                        r = -ENOMEM;
                        goto out;
                    }
                }
            }
        }
    }
    if (cfg && json_array_size(cfg) > 0)
        cl->config = ref(cfg);
    *out = cl;
    return 0;
out:
    alloc_claim_spec_free(cl);
    return r;
}

/* ---- results of allocated claims ------------------------------------------------------------ */

void alloc_result_fini(struct alloc_result *r)
{
    free(r->request);
    free(r->driver);
    free(r->pool);
    free(r->device);
    free(r->share_id);
    for (size_t i = 0; i < r->n_consumed; i++) {
        free(r->consumed_name[i]);
        free(r->consumed_fq[i]);
    }
    free(r->consumed_name);
    free(r->consumed_fq);
    free(r->consumed);
    memset(r, 0, sizeof(*r));
}

int alloc_decode_results(const json_t *claim, struct alloc_result **out, size_t *n,
                         struct gs_error *err)
{
    struct dctx c = {.kind = "ResourceClaim", .err = err};
    const json_t *meta = json_object_get(claim, "metadata");
    const json_t *nm = meta ? json_object_get(meta, "name") : NULL;
    c.name = json_is_string(nm) ? json_string_value(nm) : NULL;
    const json_t *st = json_object_get(claim, "status");
    const json_t *al = st ? json_object_get(st, "allocation") : NULL;
    if (!al || json_is_null(al))
        return 1;
    const json_t *devs = NULL, *res = NULL;
    int r;
    if (!json_is_object(al))
        return fail(&c, "status.allocation", -EINVAL, "must be an object");
    if ((r = get_obj(&c, al, "devices", "status.allocation.devices", &devs)) < 0)
        return r;
    if (devs && (r = get_arr(&c, devs, "results", "status.allocation.devices.results", &res)) < 0)
        return r;
    size_t cnt = res ? json_array_size(res) : 0;
    if (cnt > ALLOC_MAX_RESULTS)
        return fail(&c, "status.allocation.devices.results", -EINVAL, "more than %d results",
                    ALLOC_MAX_RESULTS);
    struct alloc_result *a = calloc(cnt + 1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    size_t done = 0;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *o = json_array_get(res, i), *cc = NULL;
        struct alloc_result *x = &a[done++];
        char p[128];
        snprintf(p, sizeof(p), "status.allocation.devices.results[%zu]", i);
        if (!json_is_object(o)) {
            r = fail(&c, p, -EINVAL, "must be an object");
            goto out;
        }
        static const char *const keys[] = {"request", "driver", "pool", "device"};
        char **dst[] = {&x->request, &x->driver, &x->pool, &x->device};
        for (size_t k = 0; k < 4; k++) {
            snprintf(p, sizeof(p), "status.allocation.devices.results[%zu].%s", i, keys[k]);
            if ((r = get_str(&c, o, keys[k], p, true, dst[k])) < 0)
                goto out;
        }
        snprintf(p, sizeof(p), "status.allocation.devices.results[%zu].shareID", i);
        if ((r = get_str(&c, o, "shareID", p, false, &x->share_id)) < 0)
            goto out;
        snprintf(p, sizeof(p), "status.allocation.devices.results[%zu].adminAccess", i);
        if ((r = get_bool(&c, o, "adminAccess", p, &x->admin)) < 0)
            goto out;
        snprintf(p, sizeof(p), "status.allocation.devices.results[%zu].consumedCapacity", i);
        if ((r = get_obj(&c, o, "consumedCapacity", p, &cc)) < 0)
            goto out;
        if (cc) {
            size_t m = json_object_size(cc);
            if (m > MAX_DEVICE_CAPS) {
                r = fail(&c, p, -EINVAL, "more than %d entries", MAX_DEVICE_CAPS);
                goto out;
            }
            x->consumed_name = calloc(m + 1, sizeof(char *));
            x->consumed_fq = calloc(m + 1, sizeof(char *));
            x->consumed = calloc(m + 1, sizeof(*x->consumed));
            if (!x->consumed_name || !x->consumed_fq || !x->consumed) {
                r = -ENOMEM;
                goto out;
            }
            const char *k;
            const json_t *v;
            json_object_foreach((json_t *)cc, k, v)
            {
                size_t j = x->n_consumed++;
                x->consumed_name[j] = strdup(k);
                x->consumed_fq[j] = alloc_fq_name(k, x->driver);
                if (!x->consumed_name[j] || !x->consumed_fq[j]) {
                    r = -ENOMEM;
                    goto out;
                }
                snprintf(p, sizeof(p),
                         "status.allocation.devices.results[%zu].consumedCapacity.%.64s", i, k);
                if ((r = get_qty(&c, v, p, &x->consumed[j])) < 0)
                    goto out;
            }
        }
    }
    *out = a;
    *n = done;
    return 0;
out:
    for (size_t i = 0; i < done; i++)
        alloc_result_fini(&a[i]);
    free(a);
    return r;
}
