/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA `device` variable as lazy map views over a ResourceSlice device's JSON: nothing is
 * converted until a selector reads it. device.attributes[domain] / device.capacity[domain] are
 * views filtered by domain; names without a domain belong to the driver's domain. An unknown
 * domain gives an empty map (as Kubernetes); an unknown name inside a domain is "no such key".
 */
#include <string.h>

#include "cel/cel-internal.h"

#define DRA_NAME_MAX 512

static const struct cel_type t_string = {.kind = CEL_T_STRING};
static const struct cel_type t_bool = {.kind = CEL_T_BOOL};
static const struct cel_type t_quantity = {.kind = CEL_T_QUANTITY};
static const struct cel_type t_attr_domain = {
    .kind = CEL_T_MAP, .p1 = &t_string, .p2 = &cel_type_dyn};
static const struct cel_type t_attrs = {.kind = CEL_T_MAP, .p1 = &t_string, .p2 = &t_attr_domain};
static const struct cel_type t_cap_domain = {.kind = CEL_T_MAP, .p1 = &t_string, .p2 = &t_quantity};
static const struct cel_type t_caps = {.kind = CEL_T_MAP, .p1 = &t_string, .p2 = &t_cap_domain};

enum field { F_DRIVER, F_ATTRIBUTES, F_CAPACITY, F_ALLOW_MULTIPLE, F_COUNT };
const char *const cel_dra_device_fields[] = {"driver", "attributes", "capacity",
                                             "allowMultipleAllocations", NULL};

static int field_of(const char *name, size_t len)
{
    for (int i = 0; i < F_COUNT; i++)
        if (strlen(cel_dra_device_fields[i]) == len && !memcmp(cel_dra_device_fields[i], name, len))
            return i;
    return -1;
}

const struct cel_type *cel_dra_field_type(const char *name, size_t len)
{
    switch (field_of(name, len)) {
    case F_DRIVER:
        return &t_string;
    case F_ATTRIBUTES:
        return &t_attrs;
    case F_CAPACITY:
        return &t_caps;
    case F_ALLOW_MULTIPLE:
        return &t_bool;
    default:
        return NULL;
    }
}

static struct cel_value map_value(const struct cel_map *m)
{
    return (struct cel_value){.kind = CEL_K_MAP, .map = m};
}

static const char *driver_of(const struct cel_device *dev)
{
    return dev->driver ? dev->driver : "";
}

struct cel_value cel_dra_device_init(struct cel_map views[3], const struct cel_device *dev)
{
    static const uint8_t impls[3] = {CEL_MAP_DEVICE, CEL_MAP_ATTR_ROOT, CEL_MAP_CAP_ROOT};
    size_t dl = strlen(driver_of(dev));
    for (int i = 0; i < 3; i++) {
        memset(&views[i], 0, sizeof(views[i]));
        views[i].impl = impls[i];
        views[i].dev = dev;
        views[i].driver_len = (uint32_t)dl;
    }
    return map_value(&views[0]);
}

/* A domain view. The domain string (an AST literal, the device JSON or the evaluation arena)
 * outlives the evaluation, so it is borrowed, not copied. */
static struct cel_value domain_view(struct cel_eval *ev, const struct cel_map *root, uint8_t impl,
                                    const char *domain, size_t domain_len)
{
    struct cel_map *m = cel_arena_alloc(ev->arena, sizeof(*m));
    if (!m)
        return cel_oom(ev);
    memset(m, 0, sizeof(*m));
    m->impl = impl;
    m->dev = root->dev;
    m->driver_len = root->driver_len;
    m->domain = domain;
    m->domain_len = (uint32_t)domain_len;
    return map_value(m);
}

/* Convert one attribute ({"int": 1} / {"bool"} / {"string"} / {"version"}). */
static int attr_value(struct cel_eval *ev, const json_t *a, const char *name, struct cel_value *out)
{
    const json_t *v;
    if (json_is_object(a)) {
        if ((v = json_object_get(a, "string")) && json_is_string(v)) {
            *out = cel_str(json_string_value(v), json_string_length(v));
            return 0;
        }
        if ((v = json_object_get(a, "int")) && json_is_integer(v)) {
            *out = cel_int(json_integer_value(v));
            return 0;
        }
        if ((v = json_object_get(a, "bool")) && json_is_boolean(v)) {
            *out = cel_bool(json_is_true(v));
            return 0;
        }
        if ((v = json_object_get(a, "version")) && json_is_string(v)) {
            struct cel_semver *sv;
            int r = cel_semver_parse(ev->arena, json_string_value(v), json_string_length(v), &sv);
            if (r == -ENOMEM) {
                *out = cel_oom(ev);
                return r;
            }
            if (r < 0) {
                *out = cel_error(ev, NULL,
                                 "device attribute %s: version '%s' is not a semantic version",
                                 name, json_string_value(v));
                return r;
            }
            *out = (struct cel_value){.kind = CEL_K_SEMVER, .semver = sv};
            return 0;
        }
    }
    *out = cel_error(ev, NULL, "device attribute %s: no int, bool, string or version value", name);
    return -EINVAL;
}

static int cap_value(struct cel_eval *ev, const json_t *c, const char *name, struct cel_value *out)
{
    const json_t *v = json_is_object(c) ? json_object_get(c, "value") : NULL;
    struct gs_quantity q;
    struct gs_error err;
    char num[64];
    const char *text;
    size_t len;
    if (json_is_integer(v)) { /* YAML `value: 100` arrives as a number */
        gs_quantity_from_int64(json_integer_value(v), GS_QUANTITY_DECIMAL_SI, &q);
        *out = (struct cel_value){.kind = CEL_K_QUANTITY, .q = q};
        return 0;
    }
    if (json_is_real(v)) {
        snprintf(num, sizeof(num), "%.17g", json_real_value(v));
        text = num;
        len = strlen(num);
    } else if (json_is_string(v)) {
        text = json_string_value(v);
        len = json_string_length(v);
    } else {
        *out = cel_error(ev, NULL, "device capacity %s: missing value", name);
        return -EINVAL;
    }
    if (cel_quantity_parse(text, len, &q, &err) < 0) {
        *out = cel_error(ev, NULL, "device capacity %s: %s", name, err.msg);
        return -EINVAL;
    }
    *out = (struct cel_value){.kind = CEL_K_QUANTITY, .q = q};
    return 0;
}

/* Look a name up in a domain of attributes/capacity; 1 found, 0 not, <0 conversion error. */
static int domain_get(struct cel_eval *ev, const struct cel_map *m, const char *name, size_t len,
                      struct cel_value *out)
{
    const json_t *obj = m->impl == CEL_MAP_ATTR_DOMAIN ? m->dev->attributes : m->dev->capacity;
    if (!obj || !json_is_object(obj))
        return 0;
    const json_t *e = NULL;
    char key[DRA_NAME_MAX];
    if (m->domain_len == m->driver_len && !memcmp(m->domain, driver_of(m->dev), m->driver_len) &&
        len < sizeof(key) && !memchr(name, '/', len))
        e = json_object_getn(obj, name, len);
    if (!e) {
        size_t dl = m->domain_len;
        if (dl + 1 + len >= sizeof(key))
            return 0;
        memcpy(key, m->domain, dl);
        key[dl] = '/';
        memcpy(key + dl + 1, name, len);
        key[dl + 1 + len] = '\0';
        e = json_object_getn(obj, key, dl + 1 + len);
        if (!e)
            return 0;
    } else {
        if (len >= sizeof(key))
            return 0;
        memcpy(key, name, len);
        key[len] = '\0';
    }
    int r =
        m->impl == CEL_MAP_ATTR_DOMAIN ? attr_value(ev, e, key, out) : cap_value(ev, e, key, out);
    return r < 0 ? r : 1;
}

int cel_dra_map_get(struct cel_eval *ev, const struct cel_map *m, const struct cel_value *key,
                    struct cel_value *out)
{
    if (key->kind != CEL_K_STRING)
        return 0;
    switch (m->impl) {
    case CEL_MAP_DEVICE:
        switch (field_of(key->s, key->len)) {
        case F_DRIVER:
            *out = cel_str(driver_of(m->dev), strlen(driver_of(m->dev)));
            return 1;
        case F_ATTRIBUTES:
            *out = map_value(m + 1);
            return 1; /* see cel_dra_device_init */
        case F_CAPACITY:
            *out = map_value(m + 2);
            return 1;
        case F_ALLOW_MULTIPLE:
            *out = cel_bool(m->dev->allow_multiple_allocations);
            return 1;
        default:
            return 0;
        }
    case CEL_MAP_ATTR_ROOT:
    case CEL_MAP_CAP_ROOT:
        /* every domain exists: unknown ones are empty */
        *out = domain_view(ev, m,
                           m->impl == CEL_MAP_ATTR_ROOT ? CEL_MAP_ATTR_DOMAIN : CEL_MAP_CAP_DOMAIN,
                           key->s, key->len);
        return out->kind == CEL_K_ERROR ? -ENOMEM : 1;
    case CEL_MAP_ATTR_DOMAIN:
    case CEL_MAP_CAP_DOMAIN:
        return domain_get(ev, m, key->s, key->len, out);
    default:
        return 0;
    }
}

/* Split a qualified name into domain and name (unqualified: the driver's domain). */
static void split_name(const struct cel_device *dev, const char *key, const char **domain,
                       size_t *dlen, const char **name)
{
    const char *slash = strchr(key, '/');
    if (slash) {
        *domain = key;
        *dlen = (size_t)(slash - key);
        *name = slash + 1;
    } else {
        *domain = driver_of(dev);
        *dlen = strlen(*domain);
        *name = key;
    }
}

const struct cel_map *cel_dra_map_materialize(struct cel_eval *ev, const struct cel_map *m)
{
    const json_t *obj = NULL;
    size_t cap = F_COUNT;
    if (m->impl == CEL_MAP_ATTR_ROOT || m->impl == CEL_MAP_ATTR_DOMAIN)
        obj = m->dev->attributes;
    else if (m->impl == CEL_MAP_CAP_ROOT || m->impl == CEL_MAP_CAP_DOMAIN)
        obj = m->dev->capacity;
    if (json_is_object(obj))
        cap = json_object_size(obj) + 1;
    struct cel_map *g = cel_arena_alloc(ev->arena, sizeof(*g));
    struct cel_value *keys = cel_arena_alloc(ev->arena, sizeof(*keys) * cap);
    struct cel_value *vals = cel_arena_alloc(ev->arena, sizeof(*vals) * cap);
    if (!g || !keys || !vals)
        return NULL;
    memset(g, 0, sizeof(*g));
    g->keys = keys;
    g->vals = vals;
    if (m->impl == CEL_MAP_DEVICE) {
        for (int i = 0; i < F_COUNT; i++) {
            keys[g->n] = cel_str(cel_dra_device_fields[i], strlen(cel_dra_device_fields[i]));
            if (cel_dra_map_get(ev, m, &keys[g->n], &vals[g->n]) < 0)
                return NULL;
            g->n++;
        }
        return g;
    }
    if (!obj || !json_is_object(obj))
        return g;
    const char *key;
    const json_t *val;
    bool root = m->impl == CEL_MAP_ATTR_ROOT || m->impl == CEL_MAP_CAP_ROOT;
    json_object_foreach((json_t *)obj, key, val)
    {
        const char *domain, *name;
        size_t dlen;
        split_name(m->dev, key, &domain, &dlen, &name);
        if (root) {
            struct cel_value k = cel_str(domain, dlen);
            bool seen = false;
            for (size_t i = 0; i < g->n && !seen; i++)
                seen = cel_value_equal(&keys[i], &k);
            if (seen)
                continue;
            keys[g->n] = k;
            if (cel_dra_map_get(ev, m, &k, &vals[g->n]) < 0)
                return NULL;
            g->n++;
            continue;
        }
        if (m->domain_len != dlen || memcmp(m->domain, domain, dlen) != 0)
            continue;
        struct cel_value k = cel_str(name, strlen(name));
        bool seen = false;
        for (size_t i = 0; i < g->n && !seen; i++)
            seen = cel_value_equal(&keys[i], &k);
        if (seen)
            continue;
        int r = m->impl == CEL_MAP_ATTR_DOMAIN ? attr_value(ev, val, key, &vals[g->n])
                                               : cap_value(ev, val, key, &vals[g->n]);
        if (r < 0)
            continue; /* malformed entries are reported when read directly */
        keys[g->n++] = k;
    }
    return g;
}
