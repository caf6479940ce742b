/* SPDX-License-Identifier: Apache-2.0 */
/* Legacy resources -> ResourceClaimSpec (the template named by its hash: template.c). */
#include "webhook/shape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "config/quantity.h"
#include "webhook/selector.h"

void wh_names_default(struct wh_names *n)
{
    n->device_class = WH_DEFAULT_DEVICE_CLASS;
    n->driver = WH_DEFAULT_DRIVER;
    n->gpu = WH_DEFAULT_RES_GPU;
    n->mem = WH_DEFAULT_RES_MEM;
    n->mem_pct = WH_DEFAULT_RES_MEM_PCT;
    n->cores = WH_DEFAULT_RES_CORES;
    n->type_match = WH_TYPE_MATCH_SUBSTRING;
    n->default_count = 1;
    n->vendors = NULL;
    n->runtime_class = NULL;
    n->cores_only_when_named = false;
}

bool wh_is_legacy_name(const struct wh_names *names, const char *key)
{
    return strcmp(key, names->gpu) == 0 || strcmp(key, names->mem) == 0 ||
           strcmp(key, names->mem_pct) == 0 || strcmp(key, names->cores) == 0;
}

bool wh_legacy_any(const struct wh_legacy *l)
{
    return l->has_count || l->has_mem || l->has_pct || l->has_cores;
}

/* The value of `name` in limits, else in requests; NULL if neither has it. */
static const json_t *legacy_value(const json_t *resources, const char *name)
{
    const json_t *v = json_object_get(json_object_get(resources, "limits"), name);
    return v ? v : json_object_get(json_object_get(resources, "requests"), name);
}

/* Value as text for messages: the string as written, or the JSON number. */
static void value_text(const json_t *v, char *buf, size_t len)
{
    if (json_is_string(v))
        snprintf(buf, len, "\"%.64s\"", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, len, "%g", json_real_value(v));
    else
        snprintf(buf, len, "(a JSON %s)",
                 json_is_object(v)  ? "object"
                 : json_is_array(v) ? "array"
                                    : "literal");
}

static int read_int(const json_t *resources, const char *name, const char *what, bool *has,
                    int64_t *out, char *text, size_t text_len, struct gs_error *err)
{
    const json_t *v = legacy_value(resources, name);
    *has = v != NULL;
    if (!v)
        return 0;
    value_text(v, text, text_len);
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v))
        return gs_error_set(err, -EINVAL, "%s: %s: %s is not an integer", what, name, text);
    if (!json_is_string(v))
        return gs_error_set(err, -EINVAL, "%s: %s: %s is not a quantity", what, name, text);
    struct gs_quantity q;
    struct gs_error qerr = {0};
    if (gs_quantity_parse(json_string_value(v), &q, &qerr) < 0)
        return gs_error_set(err, -EINVAL, "%s: %s: %s is not a quantity", what, name, text);
    int r = gs_quantity_to_int64_exact(&q, out);
    if (r == -EDOM)
        return gs_error_set(err, -EINVAL, "%s: %s: %s is not an integer", what, name, text);
    if (r < 0)
        return gs_error_set(err, -EINVAL, "%s: %s: %s is too large", what, name, text);
    return 0;
}

int wh_legacy_read(const json_t *resources, const struct wh_names *names, const char *what,
                   struct wh_legacy *out, struct gs_error *err)
{
    char count_t[96], mem_t[96], pct_t[96], cores_t[96];
    int r;
    *out = (struct wh_legacy){0};
    if (!json_is_object(resources))
        return 0;
    /* gpumem counts MiB: "10Gi" would mean 10737418240 MiB. Say so instead of asking for
     * petabytes (legacy HAMi leaves such a pod pending with CardInsufficientMemory). */
    const json_t *mem_v = legacy_value(resources, names->mem);
    const char *mem_s = json_string_value(mem_v);
    size_t mem_len = mem_s ? strlen(mem_s) : 0;
    if (mem_len && ((mem_s[mem_len - 1] >= 'a' && mem_s[mem_len - 1] <= 'z') ||
                    (mem_s[mem_len - 1] >= 'A' && mem_s[mem_len - 1] <= 'Z')))
        return gs_error_set(err, -EINVAL,
                            "%s: %s: \"%.64s\" has a unit; the value is a number of MiB (e.g. "
                            "10240 for 10 GiB)",
                            what, names->mem, mem_s);
    if ((r = read_int(resources, names->gpu, what, &out->has_count, &out->count, count_t,
                      sizeof(count_t), err)) < 0 ||
        (r = read_int(resources, names->mem, what, &out->has_mem, &out->mem_mib, mem_t,
                      sizeof(mem_t), err)) < 0 ||
        (r = read_int(resources, names->mem_pct, what, &out->has_pct, &out->pct, pct_t,
                      sizeof(pct_t), err)) < 0 ||
        (r = read_int(resources, names->cores, what, &out->has_cores, &out->cores, cores_t,
                      sizeof(cores_t), err)) < 0)
        return r;
    if (out->has_count && out->count <= 0)
        return gs_error_set(err, -EINVAL, "%s: %s: %s must be at least 1 GPU", what, names->gpu,
                            count_t);
    if (out->has_count && out->count > WH_MAX_DEVICES_PER_CLAIM)
        return gs_error_set(err, -EINVAL,
                            "%s: %s: %s is more than the %d devices one claim can be allocated",
                            what, names->gpu, count_t, WH_MAX_DEVICES_PER_CLAIM);
    if (out->has_cores && (out->cores < 0 || out->cores > 100))
        return gs_error_set(err, -EINVAL,
                            "%s: %s: %s is outside 0-100 (percent of a GPU's compute)", what,
                            names->cores, cores_t);
    if (out->has_mem && out->mem_mib <= 0)
        return gs_error_set(err, -EINVAL, "%s: %s: %s must be a positive number of MiB", what,
                            names->mem, mem_t);
    if (out->has_mem && out->mem_mib > INT64_MAX / WH_MIB)
        return gs_error_set(err, -EINVAL, "%s: %s: %s is too large", what, names->mem, mem_t);
    if (out->has_pct && (out->pct < 1 || out->pct > 100))
        return gs_error_set(err, -EINVAL, "%s: %s: %s is outside 1-100 (percent of a GPU's memory)",
                            what, names->mem_pct, pct_t);
    if (out->has_mem && out->has_pct)
        return gs_error_set(err, -EINVAL, "%s: %s: %s and %s: %s are both set; use one of them",
                            what, names->mem, mem_t, names->mem_pct, pct_t);
    if (!out->has_count && wh_legacy_any(out))
        out->count = 1;
    return 0;
}

static int quantity_text(int64_t v, enum gs_quantity_format fmt, char *buf, size_t len)
{
    struct gs_quantity q;
    gs_quantity_from_int64(v, fmt, &q);
    return gs_quantity_format(&q, buf, len);
}

/* deviceClassName, allocationMode, count, selectors, capacity (memory in bytes, 0 = none). */
static json_t *request_body(const struct wh_legacy *l, const struct wh_names *names,
                            const json_t *selectors, int64_t mem_bytes, const json_t *extra_sel)
{
    json_t *req = json_pack("{s:s,s:s,s:I}", "deviceClassName", names->device_class,
                            "allocationMode", "ExactCount", "count", (json_int_t)l->count);
    if (!req)
        return NULL;
    size_t n_sel = (selectors ? json_array_size(selectors) : 0) + (extra_sel ? 1 : 0);
    if (n_sel) {
        json_t *sels = json_array();
        if (extra_sel)
            json_array_append(sels, (json_t *)extra_sel);
        if (selectors)
            json_array_extend(sels, (json_t *)selectors);
        json_object_set_new(req, "selectors", sels);
    }
    if (l->has_cores || mem_bytes > 0) {
        json_t *cap = json_object();
        char buf[GS_QUANTITY_STR_MAX];
        /* Memory without gpucores: HAMi's default gpucores 0 (compute shared, no SM limit), or
         * with cores_only_when_named no cores request, as HAMi-DRA (handleContainer copies only
         * what the container names): the driver's requestPolicy default applies. */
        int64_t cores = l->has_cores ? l->cores : 0;
        if ((l->has_cores || !names->cores_only_when_named) &&
            quantity_text(cores, GS_QUANTITY_DECIMAL_SI, buf, sizeof(buf)) == 0)
            json_object_set_new(cap, "cores", json_string(buf));
        if (mem_bytes > 0 && quantity_text(mem_bytes, GS_QUANTITY_BINARY_SI, buf, sizeof(buf)) == 0)
            json_object_set_new(cap, "memory", json_string(buf));
        json_object_set_new(req, "capacity", json_pack("{s:o}", "requests", cap));
    }
    return req;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* floor(size * pct / 100) rounded down to whole MiB, at least 1 MiB. */
static int64_t percent_bytes(int64_t size, int64_t pct)
{
    __int128 v = (__int128)size * pct / 100;
    int64_t mib = (int64_t)(v / WH_MIB);
    return (mib < 1 ? 1 : mib) * (int64_t)WH_MIB;
}

static json_t *named(json_t *body, const char *name)
{
    if (body)
        json_object_set_new(body, "name", json_string(name));
    return body;
}

int wh_claim_spec_build(const struct wh_legacy *l, const struct wh_names *names,
                        const json_t *selectors, enum wh_topology topology, const int64_t *sizes,
                        size_t n_sizes, const char *what, json_t **out, struct gs_error *err)
{
    char match[300];
    snprintf(match, sizeof(match), "%s/nvlinkDomain", names->driver);
    if (l->count < 2)
        topology = WH_TOPOLOGY_NONE;
    json_t *spec = json_pack("{s:{s:[]}}", "devices", "requests");
    if (!spec)
        return gs_error_set(err, -ENOMEM, "out of memory");
    json_t *devices = json_object_get(spec, "devices");
    json_t *requests = json_object_get(devices, "requests");
    json_t *constraints = json_array();
    json_t *request = json_pack("{s:s}", "name", WH_REQUEST_NAME);
    int r = 0;

    if (!l->has_pct) {
        int64_t mem = l->has_mem ? l->mem_mib * WH_MIB : 0;
        if (topology == WH_TOPOLOGY_NVLINK_PREFERRED) {
            json_t *alts = json_array();
            json_array_append_new(alts,
                                  named(request_body(l, names, selectors, mem, NULL), "nvlink"));
            json_array_append_new(alts, named(request_body(l, names, selectors, mem, NULL), "any"));
            json_object_set_new(request, "firstAvailable", alts);
            json_array_append_new(constraints,
                                  json_pack("{s:[s],s:s}", "requests", WH_REQUEST_NAME "/nvlink",
                                            "matchAttribute", match));
        } else {
            json_object_set_new(request, "exactly", request_body(l, names, selectors, mem, NULL));
        }
    } else {
        if (n_sizes == 0) {
            r = gs_error_set(
                err, -EINVAL,
                "%s: %s: no ResourceSlice of driver %s publishes a GPU memory size, so "
                "a percentage of GPU memory cannot be translated",
                what, names->mem_pct, names->driver);
            goto out;
        }
        size_t n_alt = topology == WH_TOPOLOGY_NVLINK_PREFERRED ? 2 * n_sizes : n_sizes;
        if (n_alt > WH_MAX_SUBREQUESTS) {
            r = gs_error_set(err, -EINVAL,
                             "%s: %s: the cluster publishes %zu distinct GPU memory sizes; %zu "
                             "alternatives would exceed the %d firstAvailable subrequests a claim "
                             "may have",
                             what, names->mem_pct, n_sizes, n_alt, WH_MAX_SUBREQUESTS);
            goto out;
        }
        int64_t sorted[WH_MAX_SUBREQUESTS];
        memcpy(sorted, sizes, n_sizes * sizeof(*sorted));
        qsort(sorted, n_sizes, sizeof(*sorted), cmp_i64);
        json_t *alts = json_array();
        json_t *nvlink_names = json_array();
        for (int pass = topology == WH_TOPOLOGY_NVLINK_PREFERRED ? 0 : 1; pass < 2; pass++) {
            for (size_t i = 0; i < n_sizes; i++) {
                char name[64];
                int64_t mib = sorted[i] / WH_MIB;
                snprintf(name, sizeof(name), "%sgpu-%" PRId64 "mi", pass == 0 ? "nvlink-" : "",
                         mib);
                if (i > 0 && sorted[i - 1] / WH_MIB == mib) /* sizes differing below 1 MiB */
                    snprintf(name, sizeof(name), "%sgpu-%" PRId64 "mi-%zu",
                             pass == 0 ? "nvlink-" : "", mib, i);
                json_t *sel = json_array();
                r = wh_selector_memory_size(names->driver, sorted[i], sel, err);
                if (r == 0) {
                    json_t *body =
                        request_body(l, names, selectors, percent_bytes(sorted[i], l->pct),
                                     json_array_get(sel, 0));
                    json_array_append_new(alts, named(body, name));
                }
                json_decref(sel);
                if (r < 0)
                    break;
                if (pass == 0) {
                    char ref[80];
                    snprintf(ref, sizeof(ref), WH_REQUEST_NAME "/%s", name);
                    json_array_append_new(nvlink_names, json_string(ref));
                }
            }
        }
        json_object_set_new(request, "firstAvailable", alts);
        if (r == 0 && topology == WH_TOPOLOGY_NVLINK_PREFERRED)
            json_array_append_new(constraints, json_pack("{s:O,s:s}", "requests", nvlink_names,
                                                         "matchAttribute", match));
        json_decref(nvlink_names);
        if (r < 0)
            goto out;
    }
    if (topology == WH_TOPOLOGY_NVLINK)
        json_array_append_new(constraints, json_pack("{s:[s],s:s}", "requests", WH_REQUEST_NAME,
                                                     "matchAttribute", match));
    json_array_append_new(requests, request);
    request = NULL;
    if (json_array_size(constraints))
        json_object_set(devices, "constraints", constraints);
    *out = TAKE_PTR(spec);
out:
    json_decref(request);
    json_decref(constraints);
    json_decref(spec);
    return r;
}
