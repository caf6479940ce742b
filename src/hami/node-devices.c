/* SPDX-License-Identifier: Apache-2.0 */
/* "hami.io/node-nvidia-register": HAMi's two encodings of a node's GPUs (see hami.h). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/json.h"
#include "base/macros.h"
#include "hami/hami-internal.h"
#include "hami/hami.h"

static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* encoding/json matches keys case-insensitively when no exact match exists. */
static json_t *get_ci(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v)
        return v;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)o, k, x)
    {
        if (strcasecmp(k, key) == 0)
            return x;
    }
    return NULL;
}

/* One integer field as encoding/json fills a Go integer: absent or null leave the zero value;
 * anything but an integer in the Go type's range is an error. */
static int json_int_field(const json_t *d, const char *key, int64_t lo, int64_t hi, int64_t *out,
                          size_t i, struct gs_error *err)
{
    const json_t *v = get_ci(d, key);
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return gs_error_set(err, -EINVAL, "%s[%zu].%s: not an integer in %" PRId64 "..%" PRId64,
                            HAMI_ANN_NODE_REGISTER, i, key, lo, hi);
    *out = json_integer_value(v);
    return 0;
}

static int json_str_field(const json_t *d, const char *key, char *dst, size_t cap, size_t i,
                          struct gs_error *err)
{
    const json_t *v = get_ci(d, key);
    dst[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || copy_field(dst, cap, json_string_value(v), json_string_length(v)) < 0)
        return gs_error_set(err, -EINVAL, "%s[%zu].%s: not a string of at most %zu bytes",
                            HAMI_ANN_NODE_REGISTER, i, key, cap - 1);
    return 0;
}

/* UnMarshalNodeDevices (v2.10.0 pkg/device/devices.go; v2.6.0 pkg/util/util.go): json.Unmarshal
 * into []*DeviceInfo whose fields are all `omitempty` — absent means Go's zero value, so an
 * absent "health" is false (unhealthy), absent "count"/"mode" are 0/"". */
static int decode_json(const char *s, struct hami_node_device *out, size_t max,
                       struct gs_error *err)
{
    json_error_t je;
    _cleanup_(gs_json_decrefp) json_t *arr = json_loads(s, 0, &je);
    if (!json_is_array(arr))
        return gs_error_set(err, -EINVAL, "%s: not a JSON array (%s)", HAMI_ANN_NODE_REGISTER,
                            arr ? "other JSON value" : je.text);
    if (json_array_size(arr) > max)
        return gs_error_set(err, -EINVAL, "%s: %zu devices, at most %zu", HAMI_ANN_NODE_REGISTER,
                            json_array_size(arr), max);
    if (json_array_size(arr) == 0)
        return gs_error_set(err, -EINVAL, "%s: no device (empty list)", HAMI_ANN_NODE_REGISTER);
    size_t i;
    json_t *d;
    json_array_foreach(arr, i, d)
    {
        struct hami_node_device *o = &out[i];
        *o = (struct hami_node_device){0};
        if (!json_is_object(d))
            return gs_error_set(err, -EINVAL, "%s[%zu]: not an object", HAMI_ANN_NODE_REGISTER, i);
        int64_t index, count, devmem, devcore, numa;
        int r;
        if ((r = json_str_field(d, "id", o->id, sizeof(o->id), i, err)) < 0 ||
            (r = json_str_field(d, "type", o->type, sizeof(o->type), i, err)) < 0 ||
            (r = json_str_field(d, "mode", o->mode, sizeof(o->mode), i, err)) < 0 ||
            (r = json_int_field(d, "index", 0, UINT32_MAX, &index, i, err)) < 0 ||
            (r = json_int_field(d, "count", INT32_MIN, INT32_MAX, &count, i, err)) < 0 ||
            (r = json_int_field(d, "devmem", INT32_MIN, INT32_MAX, &devmem, i, err)) < 0 ||
            (r = json_int_field(d, "devcore", INT32_MIN, INT32_MAX, &devcore, i, err)) < 0 ||
            (r = json_int_field(d, "numa", INT64_MIN, INT64_MAX, &numa, i, err)) < 0)
            return r;
        if (!o->id[0])
            return gs_error_set(err, -EINVAL, "%s[%zu].id: missing", HAMI_ANN_NODE_REGISTER, i);
        const json_t *h = get_ci(d, "health");
        if (h && !json_is_null(h) && !json_is_boolean(h))
            return gs_error_set(err, -EINVAL, "%s[%zu].health: not a boolean",
                                HAMI_ANN_NODE_REGISTER, i);
        o->health = json_is_true(h); /* NULL (absent) is not true */
        o->index = (uint32_t)index, o->count = (int32_t)count, o->devmem = (int32_t)devmem;
        o->devcore = (int32_t)devcore, o->numa = numa;
    }
    return (int)json_array_size(arr);
}

/* DecodeNodeDevices (v2.10.0 pkg/device/devices.go; v2.6.0 pkg/util/util.go): split on ':',
 * skip empty segments, each segment "id,count,devmem,devcore,type,numa,health" (7 fields: index
 * 0, mode hami-core) or "…,health,index,mode" (9 fields); count/devmem/devcore by
 * strconv.ParseInt(…, 10, 32), numa/index by strconv.Atoi (index >= 0), health by
 * strconv.ParseBool. v2.10 rejects what does not parse (v2.6 read it as zero): so do we,
 * naming the field. */
static int decode_colon(const char *s, struct hami_node_device *out, size_t max,
                        struct gs_error *err)
{
    if (!strchr(s, ':'))
        return gs_error_set(err, -EINVAL, "%s: no ':' device separator in \"%.64s\"",
                            HAMI_ANN_NODE_REGISTER, s);
    size_t n = 0;
    for (const char *e = s; *e;) {
        const char *end = strchr(e, ':');
        size_t len = end ? (size_t)(end - e) : strlen(e);
        const char *seg = e;
        e += len + (end ? 1 : 0);
        if (len == 0)
            continue;
        if (!memchr(seg, ',', len))
            return gs_error_set(err, -EINVAL, "%s: segment \"%.*s\" has no fields",
                                HAMI_ANN_NODE_REGISTER, (int)GS_MIN(len, (size_t)64), seg);
        if (n == max)
            return gs_error_set(err, -EINVAL, "%s: more than %zu devices", HAMI_ANN_NODE_REGISTER,
                                max);
        const char *f[10];
        size_t fl[10], nf = 0;
        for (const char *p = seg;;) {
            const char *c = memchr(p, ',', (size_t)(seg + len - p));
            if (nf == 10)
                break;
            f[nf] = p, fl[nf] = c ? (size_t)(c - p) : (size_t)(seg + len - p), nf++;
            if (!c)
                break;
            p = c + 1;
        }
        if (nf != 7 && nf != 9)
            return gs_error_set(err, -EINVAL, "%s: device %zu has %s%zu fields, expected 7 or 9",
                                HAMI_ANN_NODE_REGISTER, n, nf == 10 ? "more than " : "",
                                nf == 10 ? (size_t)9 : nf);
        struct hami_node_device *o = &out[n];
        *o = (struct hami_node_device){0};
        if (copy_field(o->id, sizeof(o->id), f[0], fl[0]) < 0)
            return gs_error_set(err, -EINVAL, "%s: device %zu: id too long", HAMI_ANN_NODE_REGISTER,
                                n);
        static const char *const names[] = {"id",   "count",  "devmem", "devcore", "type",
                                            "numa", "health", "index",  "mode"};
        int64_t v[9] = {0};
        for (size_t k = 1; k < nf; k++) {
            int r = 0;
            if (k == 1 || k == 2 || k == 3)
                r = hami_parse_int(f[k], fl[k], INT32_MIN, INT32_MAX, &v[k]);
            else if (k == 5)
                r = hami_parse_int(f[k], fl[k], INT64_MIN, INT64_MAX, &v[k]);
            else if (k == 7)
                r = hami_parse_int(f[k], fl[k], 0, UINT32_MAX, &v[k]);
            else if (k == 6)
                r = hami_parse_bool(f[k], fl[k], &o->health);
            if (r < 0)
                return gs_error_set(err, -EINVAL, "%s: device %zu (%s): %s \"%.*s\" is not %s",
                                    HAMI_ANN_NODE_REGISTER, n, o->id, names[k],
                                    (int)GS_MIN(fl[k], (size_t)32), f[k],
                                    k == 6   ? "a Go boolean"
                                    : k == 7 ? "an integer >= 0"
                                             : "an integer in range");
        }
        if (copy_field(o->type, sizeof(o->type), f[4], fl[4]) < 0)
            return gs_error_set(err, -EINVAL, "%s: device %zu: type too long",
                                HAMI_ANN_NODE_REGISTER, n);
        if (nf == 9) {
            if (copy_field(o->mode, sizeof(o->mode), f[8], fl[8]) < 0)
                return gs_error_set(err, -EINVAL, "%s: device %zu: mode too long",
                                    HAMI_ANN_NODE_REGISTER, n);
        } else {
            snprintf(o->mode, sizeof(o->mode), "%s", HAMI_MODE_HAMI_CORE);
        }
        o->count = (int32_t)v[1], o->devmem = (int32_t)v[2], o->devcore = (int32_t)v[3];
        o->numa = v[5], o->index = (uint32_t)v[7];
        n++;
    }
    if (n == 0)
        return gs_error_set(err, -EINVAL, "%s: no device in \"%.64s\"", HAMI_ANN_NODE_REGISTER, s);
    return (int)n;
}

int hami_node_devices_decode(const char *s, struct hami_node_device *out, size_t max,
                             struct gs_error *err)
{
    if (!s)
        return gs_error_set(err, -EINVAL, "%s: missing", HAMI_ANN_NODE_REGISTER);
    if (strlen(s) > HAMI_ANN_MAX)
        return gs_error_set(err, -EINVAL, "%s: longer than %d bytes", HAMI_ANN_NODE_REGISTER,
                            HAMI_ANN_MAX);
    const char *p = s;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return *p == '[' ? decode_json(p, out, max, err) : decode_colon(s, out, max, err);
}

/* MarshalNodeDevices (v2.10.0 pkg/device/devices.go): json.Marshal of DeviceInfo, fields in
 * declaration order (id, index, count, devmem, devcore, type, numa, mode, health), each omitted
 * when it holds its zero value. */
char *hami_node_devices_encode(const struct hami_node_device *devs, size_t n)
{
    _cleanup_(gs_json_decrefp) json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct hami_node_device *d = &devs[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) < 0)
            return NULL;
        int r = 0;
        if (d->id[0])
            r |= json_object_set_new(o, "id", json_string(d->id));
        if (d->index)
            r |= json_object_set_new(o, "index", json_integer(d->index));
        if (d->count)
            r |= json_object_set_new(o, "count", json_integer(d->count));
        if (d->devmem)
            r |= json_object_set_new(o, "devmem", json_integer(d->devmem));
        if (d->devcore)
            r |= json_object_set_new(o, "devcore", json_integer(d->devcore));
        if (d->type[0])
            r |= json_object_set_new(o, "type", json_string(d->type));
        if (d->numa)
            r |= json_object_set_new(o, "numa", json_integer(d->numa));
        if (d->mode[0])
            r |= json_object_set_new(o, "mode", json_string(d->mode));
        if (d->health)
            r |= json_object_set_new(o, "health", json_true());
        if (r)
            return NULL;
    }
    return json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

/* EncodeNodeDevices (v2.6.0 pkg/util/util.go, v2.10.0 pkg/device/devices.go). */
char *hami_node_devices_encode_colon(const struct hami_node_device *devs, size_t n)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += strlen(devs[i].id) + strlen(devs[i].type) + strlen(devs[i].mode) + 8 * 22;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const struct hami_node_device *d = &devs[i];
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s,%" PRId32 ",%" PRId32 ",%" PRId32 ",%s,%" PRId64 ",%s,%" PRIu32 ",%s:", d->id,
            d->count, d->devmem, d->devcore, d->type, d->numa, d->health ? "true" : "false",
            d->index, d->mode);
    }
    return buf;
}

/* register.go (pkg/device-plugin/nvidiadevice/nvinternal/plugin): the model is prefixed with
 * "NVIDIA-" only when it does not start with "NVIDIA". */
void hami_device_type(const char *model, char *buf, size_t len)
{
    if (strncmp(model, "NVIDIA", 6) == 0)
        snprintf(buf, len, "%s", model);
    else
        snprintf(buf, len, "%s%s", HAMI_TYPE_PREFIX, model);
}

const char *hami_type_product(const char *type)
{
    size_t pl = strlen(HAMI_TYPE_PREFIX);
    return strncmp(type, HAMI_TYPE_PREFIX, pl) == 0 ? type + pl : type;
}
