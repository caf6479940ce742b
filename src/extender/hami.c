/* SPDX-License-Identifier: Apache-2.0 */
/* HAMi's annotation encodings (see hami.h and docs/internals/legacy.md). */
#include "extender/hami.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/json.h"
#include "base/macros.h"

static int parse_i64(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

static int decode_json(const char *s, struct hami_node_device *out, size_t max,
                       struct gs_error *err)
{
    json_error_t je;
    _cleanup_(gs_json_decrefp) json_t *arr = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_array(arr))
        return gs_error_set(err, -EINVAL, "%s: not a JSON array (%s)", HAMI_ANN_NODE_REGISTER,
                            arr ? "other JSON value" : je.text);
    if (json_array_size(arr) > max)
        return gs_error_set(err, -EINVAL, "%s: %zu devices, at most %zu", HAMI_ANN_NODE_REGISTER,
                            json_array_size(arr), max);
    size_t i;
    json_t *d;
    json_array_foreach(arr, i, d)
    {
        struct hami_node_device *o = &out[i];
        *o = (struct hami_node_device){.health = true, .devcore = 100, .count = 10};
        const char *id = json_string_value(json_object_get(d, "id"));
        const char *type = json_string_value(json_object_get(d, "type"));
        const char *mode = json_string_value(json_object_get(d, "mode"));
        const json_t *mem = json_object_get(d, "devmem");
        if (!id || !*id || copy_field(o->id, sizeof(o->id), id, strlen(id)) < 0)
            return gs_error_set(err, -EINVAL, "%s[%zu].id: missing or too long",
                                HAMI_ANN_NODE_REGISTER, i);
        if (!json_is_integer(mem) || json_integer_value(mem) <= 0)
            return gs_error_set(err, -EINVAL, "%s[%zu].devmem: missing or not a positive integer",
                                HAMI_ANN_NODE_REGISTER, i);
        o->devmem = json_integer_value(mem);
        if (type && copy_field(o->type, sizeof(o->type), type, strlen(type)) < 0)
            return gs_error_set(err, -EINVAL, "%s[%zu].type: too long", HAMI_ANN_NODE_REGISTER, i);
        snprintf(o->mode, sizeof(o->mode), "%s", mode ? mode : "hami-core");
        static const struct {
            const char *key;
            int64_t lo, hi;
        } ints[] = {
            {"index", 0, 1023}, {"count", 0, 1024}, {"devcore", 0, 100}, {"numa", -1, 1023}};
        for (size_t k = 0; k < GS_ARRAY_SIZE(ints); k++) {
            const json_t *v = json_object_get(d, ints[k].key);
            if (!v)
                continue;
            if (!json_is_integer(v) || json_integer_value(v) < ints[k].lo ||
                json_integer_value(v) > ints[k].hi)
                return gs_error_set(err, -EINVAL,
                                    "%s[%zu].%s: not an integer in %" PRId64 "..%" PRId64,
                                    HAMI_ANN_NODE_REGISTER, i, ints[k].key, ints[k].lo, ints[k].hi);
            int val = (int)json_integer_value(v);
            if (k == 0)
                o->index = val;
            else if (k == 1)
                o->count = val;
            else if (k == 2)
                o->devcore = val;
            else
                o->numa = val;
        }
        const json_t *h = json_object_get(d, "health");
        if (h && !json_is_boolean(h))
            return gs_error_set(err, -EINVAL, "%s[%zu].health: not a boolean",
                                HAMI_ANN_NODE_REGISTER, i);
        o->health = !h || json_is_true(h);
    }
    return (int)json_array_size(arr);
}

/* "id,count,devmem,devcore,type,numa,health[,mode,index]:" repeated. */
static int decode_colon(const char *s, struct hami_node_device *out, size_t max,
                        struct gs_error *err)
{
    size_t n = 0;
    for (const char *e = s; *e;) {
        const char *end = strchr(e, ':');
        size_t len = end ? (size_t)(end - e) : strlen(e);
        if (len == 0 || !memchr(e, ',', len)) {
            e += len + (end ? 1 : 0);
            continue;
        }
        if (n == max)
            return gs_error_set(err, -EINVAL, "%s: more than %zu devices", HAMI_ANN_NODE_REGISTER,
                                max);
        const char *f[9];
        size_t fl[9], nf = 0;
        for (const char *p = e; p <= e + len && nf < 10;) {
            const char *c = memchr(p, ',', (size_t)(e + len - p));
            size_t l = c ? (size_t)(c - p) : (size_t)(e + len - p);
            if (nf == 9)
                return gs_error_set(err, -EINVAL, "%s: device %zu has more than 9 fields",
                                    HAMI_ANN_NODE_REGISTER, n);
            f[nf] = p, fl[nf] = l, nf++;
            if (!c)
                break;
            p = c + 1;
        }
        if (nf != 7 && nf != 9)
            return gs_error_set(err, -EINVAL, "%s: device %zu has %zu fields, expected 7 or 9",
                                HAMI_ANN_NODE_REGISTER, n, nf);
        struct hami_node_device *o = &out[n];
        *o = (struct hami_node_device){0};
        int64_t count, mem, core, numa, idx = 0;
        if (copy_field(o->id, sizeof(o->id), f[0], fl[0]) < 0 || fl[0] == 0)
            return gs_error_set(err, -EINVAL, "%s: device %zu: id empty or too long",
                                HAMI_ANN_NODE_REGISTER, n);
        if (parse_i64(f[1], fl[1], 0, 1024, &count) < 0 ||
            parse_i64(f[2], fl[2], 1, INT32_MAX, &mem) < 0 ||
            parse_i64(f[3], fl[3], 0, 100, &core) < 0 ||
            parse_i64(f[5], fl[5], -1, 1023, &numa) < 0 ||
            (nf == 9 && parse_i64(f[8], fl[8], 0, 1023, &idx) < 0))
            return gs_error_set(err, -EINVAL,
                                "%s: device %zu (%s): count, devmem, devcore, numa or index is "
                                "not a number in range",
                                HAMI_ANN_NODE_REGISTER, n, o->id);
        if (copy_field(o->type, sizeof(o->type), f[4], fl[4]) < 0)
            return gs_error_set(err, -EINVAL, "%s: device %zu: type too long",
                                HAMI_ANN_NODE_REGISTER, n);
        if (fl[6] == 4 && strncmp(f[6], "true", 4) == 0)
            o->health = true;
        else if (fl[6] == 5 && strncmp(f[6], "false", 5) == 0)
            o->health = false;
        else
            return gs_error_set(err, -EINVAL, "%s: device %zu: health is not true or false",
                                HAMI_ANN_NODE_REGISTER, n);
        if (nf == 9 && copy_field(o->mode, sizeof(o->mode), f[7], fl[7]) < 0)
            return gs_error_set(err, -EINVAL, "%s: device %zu: mode too long",
                                HAMI_ANN_NODE_REGISTER, n);
        if (!o->mode[0])
            snprintf(o->mode, sizeof(o->mode), "hami-core");
        o->count = (int)count, o->devmem = mem, o->devcore = (int)core, o->numa = (int)numa;
        o->index = nf == 9 ? (int)idx : (int)n;
        n++;
        e += len + (end ? 1 : 0);
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
    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    return *p == '[' ? decode_json(p, out, max, err) : decode_colon(p, out, max, err);
}

char *hami_node_devices_encode(const struct hami_node_device *devs, size_t n)
{
    _cleanup_(gs_json_decrefp) json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct hami_node_device *d = &devs[i];
        json_t *o = json_pack("{s:s,s:i,s:i,s:I,s:i,s:s,s:i,s:s,s:b}", "id", d->id, "index",
                              d->index, "count", d->count, "devmem", (json_int_t)d->devmem,
                              "devcore", d->devcore, "type", d->type, "numa", d->numa, "mode",
                              d->mode[0] ? d->mode : "hami-core", "health", d->health);
        if (!o || json_array_append_new(arr, o) < 0)
            return NULL;
    }
    return json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

static int decode_ctr(const char *s, size_t len, size_t ci, struct hami_ctr_devices *out,
                      struct gs_error *err)
{
    out->n = 0;
    for (const char *e = s; e < s + len;) {
        const char *end = memchr(e, ':', (size_t)(s + len - e));
        size_t l = end ? (size_t)(end - e) : (size_t)(s + len - e);
        if (l && memchr(e, ',', l)) {
            if (out->n == HAMI_MAX_CTR_DEVICES)
                return gs_error_set(err, -EINVAL, "container %zu: more than %d devices", ci,
                                    HAMI_MAX_CTR_DEVICES);
            const char *f[4];
            size_t fl[4], nf = 0;
            for (const char *p = e;;) {
                const char *c = memchr(p, ',', (size_t)(e + l - p));
                if (nf == 4)
                    return gs_error_set(err, -EINVAL,
                                        "container %zu device %zu: more than 4 fields", ci, out->n);
                f[nf] = p, fl[nf] = c ? (size_t)(c - p) : (size_t)(e + l - p), nf++;
                if (!c)
                    break;
                p = c + 1;
            }
            struct hami_ctr_device *d = &out->dev[out->n];
            if (nf != 4 || fl[0] == 0 || copy_field(d->uuid, sizeof(d->uuid), f[0], fl[0]) < 0 ||
                copy_field(d->type, sizeof(d->type), f[1], fl[1]) < 0 ||
                parse_i64(f[2], fl[2], 0, INT32_MAX, &d->usedmem) < 0 ||
                parse_i64(f[3], fl[3], 0, 100, &d->usedcores) < 0)
                return gs_error_set(err, -EINVAL,
                                    "container %zu device %zu: expected "
                                    "\"<uuid>,<type>,<MiB>,<cores>\", got \"%.*s\"",
                                    ci, out->n, (int)GS_MIN(l, (size_t)96), e);
            out->n++;
        }
        e += l + (end ? 1 : 0);
    }
    return 0;
}

int hami_pod_devices_decode(const char *s, struct hami_ctr_devices *out, size_t max_ctrs,
                            struct gs_error *err)
{
    size_t n = 0, len = strlen(s);
    if (len > HAMI_ANN_MAX)
        return gs_error_set(err, -EINVAL, "annotation longer than %d bytes", HAMI_ANN_MAX);
    for (const char *e = s; *e;) {
        const char *end = strchr(e, ';');
        size_t l = end ? (size_t)(end - e) : strlen(e);
        if (!end && l == 0)
            break;
        if (n == max_ctrs)
            return gs_error_set(err, -EINVAL, "more than %zu container entries", max_ctrs);
        int r = decode_ctr(e, l, n, &out[n], err);
        if (r < 0)
            return r;
        n++;
        e += l + (end ? 1 : 0);
    }
    return (int)n;
}

char *hami_pod_devices_encode(const struct hami_ctr_devices *ctrs, size_t n)
{
    size_t cap = 1, len = 0;
    for (size_t i = 0; i < n; i++)
        cap += 1 + ctrs[i].n * (HAMI_ID_MAX + 32 + 2 * 24 + 4);
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < ctrs[i].n; k++) {
            const struct hami_ctr_device *d = &ctrs[i].dev[k];
            len += (size_t)snprintf(buf + len, cap - len, "%s,%s,%" PRId64 ",%" PRId64 ":", d->uuid,
                                    d->type, d->usedmem, d->usedcores);
        }
        len += (size_t)snprintf(buf + len, cap - len, ";");
    }
    return buf;
}

void hami_lock_value(char *buf, size_t len, int64_t unix_s, const char *ns, const char *pod)
{
    struct tm tm;
    time_t t = (time_t)unix_s;
    gmtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(buf, len, "%s,%s,%s", ts, ns, pod);
}

int hami_lock_time(const char *value, int64_t *unix_s)
{
    struct tm tm = {0};
    const char *end = value ? strptime(value, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!end)
        return -EINVAL;
    /* Fractional seconds and a zone suffix: we only write Z; others are read as UTC. */
    *unix_s = (int64_t)timegm(&tm);
    return 0;
}
