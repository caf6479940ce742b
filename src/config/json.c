/* SPDX-License-Identifier: Apache-2.0 */
#include "config/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *gs_json_parse(const char *buf, size_t len, size_t max_len, struct gs_error *err)
{
    if (len > max_len) {
        gs_error_set(err, -E2BIG, "JSON document of %zu bytes exceeds the limit of %zu bytes", len,
                     max_len);
        return NULL;
    }
    if (!buf && len) {
        gs_error_set(err, -EINVAL, "JSON document: no buffer");
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(buf ? buf : "", len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        gs_error_set(err, -EINVAL, "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                     jerr.text);
        return NULL;
    }
    return v;
}

const char *gs_json_type_name(const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
    default:
        return "null";
    }
}

struct path_seg {
    bool is_index;
    size_t index;
    size_t key_start, key_len; /* key bytes within the path */
    size_t end;                /* path[0..end) is the path up to and including this segment */
};

/* Split `path` into segments; -EINVAL for a malformed path. */
static int parse_path(const char *path, size_t plen, struct path_seg *segs, size_t *nsegs,
                      struct gs_error *err)
{
    size_t i = 0, n = 0;
    while (i < plen) {
        struct path_seg *sg = &segs[n];
        *sg = (struct path_seg){0};
        if (path[i] == '[') {
            i++;
            if (path[i] == '"') {
                i++;
                sg->key_start = i;
                while (i < plen && path[i] != '"')
                    i++;
                if (i >= plen || path[i + 1] != ']')
                    goto malformed;
                sg->key_len = i - sg->key_start;
                i += 2;
            } else {
                if (path[i] < '0' || path[i] > '9')
                    goto malformed;
                while (path[i] >= '0' && path[i] <= '9') {
                    if (sg->index > (SIZE_MAX - 9) / 10)
                        goto malformed;
                    sg->index = sg->index * 10 + (size_t)(path[i++] - '0');
                }
                if (path[i] != ']')
                    goto malformed;
                i++;
                sg->is_index = true;
            }
        } else {
            if (i > 0) {
                if (path[i] != '.')
                    goto malformed;
                i++;
            }
            sg->key_start = i;
            while (i < plen && path[i] != '.' && path[i] != '[')
                i++;
            sg->key_len = i - sg->key_start;
            if (sg->key_len == 0)
                goto malformed;
        }
        sg->end = i;
        n++;
    }
    *nsegs = n;
    return 0;
malformed:
    return gs_error_set(err, -EINVAL, "malformed JSON path \"%s\"", path);
}

/*
 * Walk `path` from `root`. Returns 0 with *out set (possibly to a JSON null), -ENOENT when a
 * segment is missing or an intermediate value is null, -EINVAL for a malformed path or an
 * intermediate value of the wrong type. Messages name the path up to where the walk stopped.
 */
static int walk(json_t *root, const char *path, json_t **out, struct gs_error *err)
{
    size_t plen = strlen(path);
    if (plen >= GS_JSON_PATH_MAX)
        return gs_error_set(err, -EINVAL, "JSON path too long (%zu characters)", plen);
    struct path_seg segs[GS_JSON_PATH_MAX / 2 + 1];
    size_t nsegs = 0;
    int r = parse_path(path, plen, segs, &nsegs, err);
    if (r < 0)
        return r;
    if (!root)
        return gs_error_set(err, -ENOENT, "%s: missing (no document)", path);
    json_t *cur = root;
    size_t prev_end = 0;
    for (size_t k = 0; k < nsegs; k++) {
        const struct path_seg *sg = &segs[k];
        int wl = (int)sg->end, pl = (int)prev_end;
        const char *parent = k ? path : "(document)";
        if (k == 0)
            pl = (int)strlen(parent);
        if (json_is_null(cur))
            return gs_error_set(err, -ENOENT, "%.*s: missing", wl, path);
        if (sg->is_index) {
            if (!json_is_array(cur))
                return gs_error_set(err, -EINVAL, "%.*s: expected array, got %s", pl, parent,
                                    gs_json_type_name(cur));
            if (sg->index >= json_array_size(cur))
                return gs_error_set(err, -ENOENT, "%.*s: missing (array has %zu elements)", wl,
                                    path, json_array_size(cur));
            cur = json_array_get(cur, sg->index);
        } else {
            if (!json_is_object(cur))
                return gs_error_set(err, -EINVAL, "%.*s: expected object, got %s", pl, parent,
                                    gs_json_type_name(cur));
            cur = json_object_getn(cur, path + sg->key_start, sg->key_len);
            if (!cur)
                return gs_error_set(err, -ENOENT, "%.*s: missing", wl, path);
        }
        prev_end = sg->end;
    }
    *out = cur;
    return 0;
}

static int lookup_typed(json_t *root, const char *path, json_type want, const char *want_name,
                        json_t **out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = walk(root, path, &v, err);
    if (r < 0)
        return r;
    if (json_is_null(v))
        return gs_error_set(err, -ENOENT, "%s: missing (null)", path);
    bool match = json_typeof(v) == want || (want == JSON_TRUE && json_typeof(v) == JSON_FALSE) ||
                 (want == JSON_REAL && json_typeof(v) == JSON_INTEGER);
    if (!match)
        return gs_error_set(err, -EINVAL, "%s: expected %s, got %s", path, want_name,
                            gs_json_type_name(v));
    *out = v;
    return 0;
}

int gs_json_lookup(json_t *root, const char *path, json_t **out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = walk(root, path, &v, err);
    if (r < 0)
        return r;
    if (json_is_null(v))
        return gs_error_set(err, -ENOENT, "%s: missing (null)", path);
    *out = v;
    return 0;
}

int gs_json_get_string(json_t *root, const char *path, const char **out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = lookup_typed(root, path, JSON_STRING, "string", &v, err);
    if (r < 0)
        return r;
    *out = json_string_value(v);
    return 0;
}

/* Shortest text that reads back as the same double, in plain notation for 1e-6 <= |d| < 1e21
 * (as Go and JSON encoders write numbers). With `point`, integral values keep a ".0". */
static void shortest_real(double d, char *buf, size_t len, bool point)
{
    double a = fabs(d);
    if (a == 0 || (a >= 1e-6 && a < 1e21)) {
        for (int prec = 0; prec <= 30; prec++) {
            snprintf(buf, len, "%.*f", prec, d);
            if (strtod(buf, NULL) == d)
                break;
        }
    } else {
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, len, "%.*g", prec, d);
            if (strtod(buf, NULL) == d)
                break;
        }
    }
    if (point && !strpbrk(buf, ".eEni"))
        snprintf(buf + strlen(buf), len - strlen(buf), ".0");
}

int gs_json_get_int(json_t *root, const char *path, int64_t *out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = walk(root, path, &v, err);
    if (r < 0)
        return r;
    if (json_is_null(v))
        return gs_error_set(err, -ENOENT, "%s: missing (null)", path);
    if (json_is_real(v)) {
        char num[40];
        shortest_real(json_real_value(v), num, sizeof(num), true);
        return gs_error_set(err, -EINVAL, "%s: expected integer, got number %s", path, num);
    }
    if (!json_is_integer(v))
        return gs_error_set(err, -EINVAL, "%s: expected integer, got %s", path,
                            gs_json_type_name(v));
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int gs_json_get_int_range(json_t *root, const char *path, int64_t min, int64_t max, int64_t *out,
                          struct gs_error *err)
{
    int64_t v;
    int r = gs_json_get_int(root, path, &v, err);
    if (r < 0)
        return r;
    if (v < min)
        return gs_error_set(err, -ERANGE, "%s: %" PRId64 " is below the minimum %" PRId64, path, v,
                            min);
    if (v > max)
        return gs_error_set(err, -ERANGE, "%s: %" PRId64 " is above the maximum %" PRId64, path, v,
                            max);
    *out = v;
    return 0;
}

int gs_json_get_double(json_t *root, const char *path, double *out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = lookup_typed(root, path, JSON_REAL, "number", &v, err);
    if (r < 0)
        return r;
    *out = json_number_value(v);
    return 0;
}

int gs_json_get_bool(json_t *root, const char *path, bool *out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = lookup_typed(root, path, JSON_TRUE, "boolean", &v, err);
    if (r < 0)
        return r;
    *out = json_is_true(v);
    return 0;
}

int gs_json_get_object(json_t *root, const char *path, json_t **out, struct gs_error *err)
{
    return lookup_typed(root, path, JSON_OBJECT, "object", out, err);
}

int gs_json_get_array(json_t *root, const char *path, json_t **out, struct gs_error *err)
{
    return lookup_typed(root, path, JSON_ARRAY, "array", out, err);
}

int gs_json_quantity_value(const json_t *v, const char *what, struct gs_quantity *out,
                           struct gs_error *err)
{
    char text[64];
    const char *s;
    if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        s = text;
    } else if (json_is_real(v)) {
        /* Shortest text that reads back as the same double, as the number was written. */
        shortest_real(json_real_value(v), text, sizeof(text), false);
        s = text;
    } else {
        return gs_error_set(err, -EINVAL, "%s: expected quantity (string or number), got %s", what,
                            gs_json_type_name(v));
    }
    int r = gs_quantity_parse(s, out, err);
    if (r < 0)
        gs_error_prefix(err, "%s: ", what);
    return r;
}

int gs_json_get_quantity(json_t *root, const char *path, struct gs_quantity *out,
                         struct gs_error *err)
{
    json_t *v = NULL;
    int r = gs_json_lookup(root, path, &v, err);
    if (r < 0)
        return r;
    return gs_json_quantity_value(v, path, out, err);
}

/* Shared by the optional getters: 1 present (v set), 0 absent or null, <0 error. */
static int opt_lookup(json_t *root, const char *path, json_t **v, struct gs_error *err)
{
    struct gs_error tmp = {0};
    int r = walk(root, path, v, &tmp);
    if (r == -ENOENT)
        return 0;
    if (r < 0) {
        if (err)
            *err = tmp;
        return r;
    }
    return json_is_null(*v) ? 0 : 1;
}

int gs_json_opt_string(json_t *root, const char *path, const char *def, const char **out,
                       struct gs_error *err)
{
    json_t *v = NULL;
    int r = opt_lookup(root, path, &v, err);
    if (r <= 0) {
        if (r == 0)
            *out = def;
        return r;
    }
    if (!json_is_string(v))
        return gs_error_set(err, -EINVAL, "%s: expected string, got %s", path,
                            gs_json_type_name(v));
    *out = json_string_value(v);
    return 1;
}

int gs_json_opt_int(json_t *root, const char *path, int64_t def, int64_t *out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = opt_lookup(root, path, &v, err);
    if (r <= 0) {
        if (r == 0)
            *out = def;
        return r;
    }
    r = gs_json_get_int(root, path, out, err);
    return r < 0 ? r : 1;
}

int gs_json_opt_bool(json_t *root, const char *path, bool def, bool *out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = opt_lookup(root, path, &v, err);
    if (r <= 0) {
        if (r == 0)
            *out = def;
        return r;
    }
    if (!json_is_boolean(v))
        return gs_error_set(err, -EINVAL, "%s: expected boolean, got %s", path,
                            gs_json_type_name(v));
    *out = json_is_true(v);
    return 1;
}

int gs_json_opt_object(json_t *root, const char *path, json_t **out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = opt_lookup(root, path, &v, err);
    if (r <= 0) {
        if (r == 0)
            *out = NULL;
        return r;
    }
    if (!json_is_object(v))
        return gs_error_set(err, -EINVAL, "%s: expected object, got %s", path,
                            gs_json_type_name(v));
    *out = v;
    return 1;
}

int gs_json_opt_array(json_t *root, const char *path, json_t **out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = opt_lookup(root, path, &v, err);
    if (r <= 0) {
        if (r == 0)
            *out = NULL;
        return r;
    }
    if (!json_is_array(v))
        return gs_error_set(err, -EINVAL, "%s: expected array, got %s", path, gs_json_type_name(v));
    *out = v;
    return 1;
}

int gs_json_opt_quantity(json_t *root, const char *path, const struct gs_quantity *def,
                         struct gs_quantity *out, struct gs_error *err)
{
    json_t *v = NULL;
    int r = opt_lookup(root, path, &v, err);
    if (r <= 0) {
        if (r == 0) {
            if (def)
                *out = *def;
            else
                *out = (struct gs_quantity){0};
        }
        return r;
    }
    r = gs_json_quantity_value(v, path, out, err);
    return r < 0 ? r : 1;
}
