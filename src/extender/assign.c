/* SPDX-License-Identifier: Apache-2.0 */
/* The Node's placement records (see assign.h). */
#include "extender/assign.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "base/macros.h"
#include "hami/hami.h"

bool ext_uid_valid(const char *uid)
{
    if (!uid || strlen(uid) != EXT_UID_LEN)
        return false;
    for (size_t i = 0; i < EXT_UID_LEN; i++) {
        char c = uid[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

int ext_assign_key(char *buf, size_t len, const char *uid, struct gs_error *err)
{
    if (!ext_uid_valid(uid))
        return gs_error_set(err, -EINVAL, "pod uid \"%.64s\" is not a Kubernetes UID",
                            uid ? uid : "");
    snprintf(buf, len, "%s%s", EXT_ASSIGN_PREFIX, uid);
    return 0;
}

char *ext_assign_encode(const char *ns, const char *name, int64_t time, const char *devices,
                        unsigned next)
{
    char pod[512];
    snprintf(pod, sizeof(pod), "%s/%s", ns, name);
    _cleanup_(gs_json_decrefp) json_t *o =
        json_pack("{s:s,s:I,s:s,s:I}", "pod", pod, "time", (json_int_t)time, "devices", devices,
                  "next", (json_int_t)next);
    return o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

void ext_assignment_fini(struct ext_assignment *a)
{
    free(a->devices);
    a->devices = NULL;
}

int ext_assign_decode(const char *key, const char *value, struct ext_assignment *out,
                      struct gs_error *err)
{
    *out = (struct ext_assignment){0};
    size_t pl = strlen(EXT_ASSIGN_PREFIX);
    if (!key || strncmp(key, EXT_ASSIGN_PREFIX, pl) != 0)
        return -ENOENT;
    if (!ext_uid_valid(key + pl))
        return gs_error_set(err, -EINVAL, "%.80s: not a pod UID after %s", key, EXT_ASSIGN_PREFIX);
    snprintf(out->uid, sizeof(out->uid), "%s", key + pl);
    if (!value || strlen(value) > HAMI_ANN_MAX)
        return gs_error_set(err, -EINVAL, "%s: no value or over %d bytes", key, HAMI_ANN_MAX);
    json_error_t je;
    _cleanup_(gs_json_decrefp) json_t *o = json_loads(value, JSON_REJECT_DUPLICATES, &je);
    const char *pod = json_string_value(json_object_get(o, "pod"));
    const char *dev = json_string_value(json_object_get(o, "devices"));
    json_t *t = json_object_get(o, "time"), *n = json_object_get(o, "next");
    if (!json_is_object(o))
        return gs_error_set(err, -EINVAL, "%s: not a JSON object", key);
    const char *slash = pod ? strchr(pod, '/') : NULL;
    if (!slash || slash == pod || !slash[1] || (size_t)(slash - pod) >= sizeof(out->ns) ||
        strlen(slash + 1) >= sizeof(out->name))
        return gs_error_set(err, -EINVAL, "%s: field pod \"%.80s\" is not <namespace>/<name>", key,
                            pod ? pod : "");
    if (!dev)
        return gs_error_set(err, -EINVAL, "%s: field devices is missing", key);
    if (!json_is_integer(t) || json_integer_value(t) < 0)
        return gs_error_set(err, -EINVAL, "%s: field time is not a unix time", key);
    if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 1024)
        return gs_error_set(err, -EINVAL, "%s: field next is not a container index", key);
    snprintf(out->ns, sizeof(out->ns), "%.*s", (int)(slash - pod), pod);
    snprintf(out->name, sizeof(out->name), "%s", slash + 1);
    out->time = json_integer_value(t);
    out->next = (unsigned)json_integer_value(n);
    if (!(out->devices = strdup(dev)))
        return gs_error_set(err, -ENOMEM, "out of memory");
    return 0;
}

static const char *pod_str(const json_t *pod, const char *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(pod, obj), key));
}

bool ext_assign_stale(const char *key, const char *value, const json_t *pods, const char *node,
                      int64_t now, int64_t unbound_max_s, char *why, size_t why_len)
{
    struct ext_assignment a;
    struct gs_error e = {0};
    int r = ext_assign_decode(key, value, &a, &e);
    if (r == -ENOENT) {
        ext_assignment_fini(&a);
        return false; /* not a record */
    }
    if (r < 0) {
        snprintf(why, why_len, "does not decode: %s", e.msg);
        ext_assignment_fini(&a);
        return true;
    }
    const json_t *pod = NULL;
    size_t i;
    const json_t *o;
    json_array_foreach(pods, i, o)
    {
        const char *uid = pod_str(o, "metadata", "uid");
        if (uid && strcmp(uid, a.uid) == 0) {
            pod = o;
            break;
        }
    }
    const char *ns = pod ? pod_str(pod, "metadata", "namespace") : NULL;
    const char *name = pod ? pod_str(pod, "metadata", "name") : NULL;
    const char *bound = pod ? pod_str(pod, "spec", "nodeName") : NULL;
    const char *phase = pod ? pod_str(pod, "status", "phase") : NULL;
    bool stale = true;
    if (!pod)
        snprintf(why, why_len, "pod %s/%s (uid %s) is gone", a.ns, a.name, a.uid);
    else if (!ns || !name || strcmp(ns, a.ns) != 0 || strcmp(name, a.name) != 0)
        snprintf(why, why_len, "uid %s is pod %s/%s, not %s/%s", a.uid, ns ? ns : "",
                 name ? name : "", a.ns, a.name);
    else if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
        snprintf(why, why_len, "pod %s/%s has finished (%s)", a.ns, a.name, phase);
    else if (bound && *bound && strcmp(bound, node) != 0)
        snprintf(why, why_len, "pod %s/%s is bound to node %.64s", a.ns, a.name, bound);
    else if ((!bound || !*bound) && now - a.time > unbound_max_s)
        snprintf(why, why_len, "pod %s/%s is still not bound %lld s after the record", a.ns, a.name,
                 (long long)(now - a.time));
    else
        stale = false;
    ext_assignment_fini(&a);
    return stale;
}

void ext_assign_sizes(const json_t *node_obj, const char *skip, size_t *records, size_t *all)
{
    *records = *all = 0;
    const char *k;
    const json_t *v;
    size_t pl = strlen(EXT_ASSIGN_PREFIX);
    json_object_foreach(json_object_get(json_object_get(node_obj, "metadata"), "annotations"), k, v)
    {
        if (skip && strcmp(k, skip) == 0)
            continue;
        size_t n = strlen(k) + (json_is_string(v) ? strlen(json_string_value(v)) : 0);
        *all += n;
        if (strncmp(k, EXT_ASSIGN_PREFIX, pl) == 0)
            *records += n;
    }
}
