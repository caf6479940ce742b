/* SPDX-License-Identifier: Apache-2.0 */
/* The vendor table: HAMi-DRA's device config file and defaults (pkg/config/dra_device.go). */
#include "webhook/vendor.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/macros.h"
#include "config/quantity.h"
#include "config/yaml.h"
#include "webhook/selector.h"
#include "webhook/shape.h"
#include "webhook/translate.h"

/* HAMi-DRA pkg/constants/constants.go and pkg/config/dra_device.go (draDeviceFromHygon). */
#define HYGON_DRIVER      "dra.hygon.com"
#define HYGON_TYPE        "hcu"
#define ASCEND_DRIVER     "ascend.project-hami.io"
#define ASCEND_CLASS      "hami-vnpu-core.project-hami.io"
#define ASCEND_TYPE       "HAMivNPUCore"
#define DEVICE_CONFIG_MAX (4u << 20)

/* HAMi-DRA DefaultAscendVNPUs: HAMi's chart vnpus.configs, commonWord -> chipName. */
static const struct {
    const char *word, *chip;
} ascend_chips[] = {
    {"Ascend910A", "910A"},       {"Ascend910B2", "910B2"}, {"Ascend910B3", "910B3"},
    {"Ascend910B4-1", "910B4-1"}, {"Ascend910B4", "910B4"}, {"Ascend310P", "310P3"},
    {"Ascend910C", "Ascend910"},
};

static void copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

/* section[key] when it is a non-empty string; NULL when absent or null; -EINVAL otherwise. */
static int get_str(const json_t *section, const char *where, const char *key, const char **out,
                   struct gs_error *err)
{
    const json_t *v = json_object_get(section, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return gs_error_set(err, -EINVAL, "device config: %s.%s is a %s, not a string", where, key,
                            json_is_object(v)  ? "mapping"
                            : json_is_array(v) ? "list"
                                               : "number");
    if (json_string_length(v) >= WH_VNAME_MAX)
        return gs_error_set(err, -EINVAL, "device config: %s.%s is longer than %d bytes", where,
                            key, WH_VNAME_MAX - 1);
    if (json_string_length(v) > 0)
        *out = json_string_value(v);
    return 0;
}

static int set_str(const json_t *section, const char *where, const char *key, char *dst, size_t len,
                   struct gs_error *err)
{
    const char *s;
    int r = get_str(section, where, key, &s, err);
    if (r == 0 && s)
        copy(dst, len, s);
    return r;
}

#define SET(sec, where, key, field) set_str(sec, where, key, field, sizeof(field), err)

static int nvidia_section(const json_t *sec, struct wh_nvidia_section *nv, struct gs_error *err)
{
    int r;
    nv->default_gpu = -1;
    if (!json_is_object(sec))
        return 0;
    if ((r = SET(sec, "nvidia", "resourceCountName", nv->count)) < 0 ||
        (r = SET(sec, "nvidia", "resourceMemoryName", nv->mem)) < 0 ||
        (r = SET(sec, "nvidia", "resourceMemoryPercentageName", nv->mem_pct)) < 0 ||
        (r = SET(sec, "nvidia", "resourceCoreName", nv->cores)) < 0 ||
        (r = SET(sec, "nvidia", "deviceClassName", nv->device_class)) < 0 ||
        (r = SET(sec, "nvidia", "draDriverName", nv->driver)) < 0 ||
        (r = SET(sec, "nvidia", "runtimeClassName", nv->runtime_class)) < 0)
        return r;
    const json_t *d = json_object_get(sec, "defaultGPUNum");
    if (d && !json_is_null(d)) {
        if (!json_is_integer(d) || json_integer_value(d) < 0 ||
            json_integer_value(d) > WH_MAX_DEVICES_PER_CLAIM)
            return gs_error_set(err, -EINVAL,
                                "device config: nvidia.defaultGPUNum must be an "
                                "integer from 0 to %d",
                                WH_MAX_DEVICES_PER_CLAIM);
        nv->default_gpu = json_integer_value(d);
    }
    return 0;
}

static int common_fields(const json_t *sec, const char *where, struct wh_vendor *v,
                         struct gs_error *err)
{
    int r;
    if ((r = SET(sec, where, "deviceClassName", v->device_class)) < 0 ||
        (r = SET(sec, where, "draDriverName", v->driver)) < 0 ||
        (r = SET(sec, where, "requestName", v->request)) < 0 ||
        (r = SET(sec, where, "useUUIDAnnotation", v->use_uuid)) < 0 ||
        (r = SET(sec, where, "noUseUUIDAnnotation", v->nouse_uuid)) < 0 ||
        (r = SET(sec, where, "useTypeAnnotation", v->use_type)) < 0 ||
        (r = SET(sec, where, "noUseTypeAnnotation", v->nouse_type)) < 0 ||
        (r = SET(sec, where, "runtimeClassName", v->runtime_class)) < 0)
        return r;
    if (v->request[0] && !wh_is_dns_label(v->request))
        return gs_error_set(err, -EINVAL,
                            "device config: %s.requestName \"%.64s\" is not a DNS-1123 label",
                            where, v->request);
    return 0;
}

static int hygon(const json_t *sec, struct wh_vendors *t, struct gs_error *err)
{
    struct wh_vendor *v = &t->v[t->n];
    *v = (struct wh_vendor){.cores_absolute = true};
    copy(v->vendor, sizeof(v->vendor), "hygon");
    copy(v->suffix, sizeof(v->suffix), "hygon");
    copy(v->count, sizeof(v->count), "hygon.com/hcunum");
    copy(v->mem, sizeof(v->mem), "hygon.com/hcumem");
    copy(v->cores, sizeof(v->cores), "hygon.com/hcucores");
    copy(v->device_class, sizeof(v->device_class), HYGON_DRIVER);
    copy(v->driver, sizeof(v->driver), HYGON_DRIVER);
    copy(v->request, sizeof(v->request), "hcu");
    copy(v->device_type, sizeof(v->device_type), HYGON_TYPE);
    copy(v->use_uuid, sizeof(v->use_uuid), "hygon.com/use-gpuuuid");
    copy(v->nouse_uuid, sizeof(v->nouse_uuid), "hygon.com/nouse-gpuuuid");
    copy(v->use_type, sizeof(v->use_type), "hygon.com/use-hcutype");
    copy(v->nouse_type, sizeof(v->nouse_type), "hygon.com/nouse-hcutype");
    int r = 0;
    if (json_is_object(sec)) {
        if ((r = SET(sec, "hygon", "resourceCountName", v->count)) < 0 ||
            (r = SET(sec, "hygon", "resourceMemoryName", v->mem)) < 0 ||
            (r = SET(sec, "hygon", "resourceCoreName", v->cores)) < 0 ||
            (r = common_fields(sec, "hygon", v, err)) < 0)
            return r;
        const json_t *cu = json_object_get(sec, "referenceComputeUnits");
        if (cu && !json_is_null(cu)) {
            if (!json_is_integer(cu) || json_integer_value(cu) < 0 ||
                json_integer_value(cu) > 1000000)
                return gs_error_set(err, -EINVAL,
                                    "device config: hygon.referenceComputeUnits must be an "
                                    "integer from 0 to 1000000 (compute units of the reference "
                                    "device)");
            v->reference_cu = json_integer_value(cu);
        }
    }
    t->n++;
    return 0;
}

/* One Ascend chip. `dev` is its ascend.devices entry (NULL: a built-in chip or the legacy single
 * chip, named by word/count/mem/cores). HAMi-DRA draDevicesFromAscend: the section's
 * useUUIDAnnotation/noUseUUIDAnnotation apply only to the legacy single chip; every other chip
 * keeps hami.io/use-<commonWord>-uuid. 1 = a devices entry without resourceName, skipped. */
static int ascend_one(const json_t *sec, const json_t *dev, const char *word, const char *count,
                      const char *mem, const char *cores, bool legacy, size_t index,
                      struct wh_vendors *t, struct gs_error *err)
{
    char where[64];
    snprintf(where, sizeof(where), "ascend.devices[%zu]", index);
    if (t->n >= WH_VENDORS_MAX)
        return gs_error_set(err, -EINVAL, "device config: more than %d device entries",
                            WH_VENDORS_MAX);
    struct wh_vendor *v = &t->v[t->n];
    *v = (struct wh_vendor){0};
    copy(v->vendor, sizeof(v->vendor), "ascend");
    copy(v->device_class, sizeof(v->device_class), ASCEND_CLASS);
    copy(v->driver, sizeof(v->driver), ASCEND_DRIVER);
    copy(v->request, sizeof(v->request), "npu");
    copy(v->device_type, sizeof(v->device_type), ASCEND_TYPE);
    copy(v->use_type, sizeof(v->use_type), "hami.io/use-nputype");
    copy(v->nouse_type, sizeof(v->nouse_type), "hami.io/no-use-nputype");
    const char *s;
    int r;
    if (dev) {
        if ((r = get_str(dev, where, "commonWord", &s, err)) < 0)
            return r;
        word = s;
        if ((r = SET(dev, where, "resourceName", v->count)) < 0 ||
            (r = SET(dev, where, "resourceMemoryName", v->mem)) < 0 ||
            (r = SET(dev, where, "resourceCoreName", v->cores)) < 0)
            return r;
        if (!v->count[0])
            return 1;
    } else {
        copy(v->count, sizeof(v->count), count);
        copy(v->mem, sizeof(v->mem), mem);
        copy(v->cores, sizeof(v->cores), cores);
    }
    if (!word || !word[0])
        word = strncmp(v->count, "huawei.com/", 11) == 0 ? v->count + 11 : v->count;
    /* HAMi's per-chip UUID annotations (hami.io/use-<commonWord>-uuid). */
    snprintf(v->use_uuid, sizeof(v->use_uuid), "hami.io/use-%s-uuid", word);
    snprintf(v->nouse_uuid, sizeof(v->nouse_uuid), "hami.io/no-use-%s-uuid", word);
    size_t i = 0;
    for (; word[i] && i + 1 < sizeof(v->suffix); i++)
        v->suffix[i] = (char)tolower((unsigned char)word[i]);
    v->suffix[i] = '\0';
    char use_uuid[WH_VNAME_MAX], nouse_uuid[WH_VNAME_MAX];
    memcpy(use_uuid, v->use_uuid, sizeof(use_uuid));
    memcpy(nouse_uuid, v->nouse_uuid, sizeof(nouse_uuid));
    if (json_is_object(sec) && (r = common_fields(sec, "ascend", v, err)) < 0)
        return r;
    if (!legacy) {
        memcpy(v->use_uuid, use_uuid, sizeof(use_uuid));
        memcpy(v->nouse_uuid, nouse_uuid, sizeof(nouse_uuid));
    }
    t->n++;
    return 0;
}

/* HAMi-DRA draDevicesFromAscend: the `devices` list (entries without resourceName skipped, an
 * error only when none is left); without one, the legacy single chip of resourceCountName (its
 * memory and core names defaulting to "<count>-memory"/"-core"); without that, the seven chips
 * of DefaultAscendVNPUs. */
static int ascend(const json_t *sec, struct wh_vendors *t, struct gs_error *err)
{
    const json_t *devs = json_object_get(sec, "devices");
    if (devs && !json_is_null(devs) && !json_is_array(devs))
        return gs_error_set(err, -EINVAL, "device config: ascend.devices is not a list");
    if (json_array_size(devs) > 0) {
        size_t i, added = 0;
        json_t *d;
        char skipped[96] = "";
        json_array_foreach((json_t *)devs, i, d)
        {
            if (!json_is_object(d))
                return gs_error_set(err, -EINVAL,
                                    "device config: ascend.devices[%zu] is not a "
                                    "mapping",
                                    i);
            int r = ascend_one(sec, d, NULL, NULL, NULL, NULL, false, i, t, err);
            if (r < 0)
                return r;
            if (r == 0) {
                added++;
            } else {
                size_t o = strlen(skipped);
                snprintf(skipped + o, sizeof(skipped) - o, "%s%zu", o ? " " : "", i);
            }
        }
        if (!added)
            return gs_error_set(err, -EINVAL,
                                "device config: no ascend devices configured: empty resourceName "
                                "at indexes [%s]",
                                skipped);
        return 0;
    }
    const char *count = NULL;
    int r = get_str(sec, "ascend", "resourceCountName", &count, err);
    if (r < 0)
        return r;
    if (count) {
        char word[WH_VNAME_MAX], mem[WH_VNAME_MAX], cores[WH_VNAME_MAX];
        const char *w = strncmp(count, "huawei.com/", 11) == 0 ? count + 11 : "";
        copy(word, sizeof(word), w[0] ? w : "Ascend310P");
        if ((size_t)snprintf(mem, sizeof(mem), "%s-memory", count) >= sizeof(mem) ||
            (size_t)snprintf(cores, sizeof(cores), "%s-core", count) >= sizeof(cores))
            return gs_error_set(err, -EINVAL,
                                "device config: ascend.resourceCountName is too long for its "
                                "-memory and -core names (at most %d bytes)",
                                WH_VNAME_MAX - 8);
        if ((r = SET(sec, "ascend", "resourceMemoryName", mem)) < 0 ||
            (r = SET(sec, "ascend", "resourceCoreName", cores)) < 0)
            return r;
        r = ascend_one(sec, NULL, word, count, mem, cores, true, 0, t, err);
        return r < 0 ? r : 0;
    }
    for (size_t i = 0; i < GS_ARRAY_SIZE(ascend_chips); i++) {
        char c[WH_VNAME_MAX], m[WH_VNAME_MAX], k[WH_VNAME_MAX];
        snprintf(c, sizeof(c), "huawei.com/%s", ascend_chips[i].word);
        snprintf(m, sizeof(m), "huawei.com/%s-memory", ascend_chips[i].word);
        snprintf(k, sizeof(k), "huawei.com/%s-core", ascend_chips[i].word);
        if ((r = ascend_one(sec, NULL, ascend_chips[i].word, c, m, k, false, i, t, err)) < 0)
            return r;
    }
    return 0;
}

static int add_vendor(const json_t *cfg, const char *name, size_t len, struct wh_vendors *t,
                      unsigned *seen, struct gs_error *err)
{
    static const char *const known[] = {"nvidia", "hygon", "ascend"};
    size_t k = 0;
    for (; k < GS_ARRAY_SIZE(known); k++)
        if (strlen(known[k]) == len && strncmp(known[k], name, len) == 0)
            break;
    if (k == GS_ARRAY_SIZE(known))
        return gs_error_set(err, -EINVAL,
                            "device vendor \"%.*s\" is not supported (nvidia, hygon, ascend)",
                            (int)(len > 64 ? 64 : len), name);
    if (*seen & (1u << k))
        return gs_error_set(err, -EINVAL, "device vendor \"%s\" is listed twice", known[k]);
    *seen |= 1u << k;
    if (k == 0) {
        t->nvidia = true;
        return 0;
    }
    return k == 1 ? hygon(json_object_get(cfg, "hygon"), t, err)
                  : ascend(json_object_get(cfg, "ascend"), t, err);
}

/* HAMi-DRA DRADevices: a resource name or claim suffix owned by two entries is an error. */
static int check_unique(const struct wh_vendors *t, struct gs_error *err)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct wh_vendor *a = &t->v[i];
        const char *names[3] = {a->count, a->mem, a->cores};
        for (size_t j = 0; j < t->n; j++) {
            const struct wh_vendor *b = &t->v[j];
            const char *other[3] = {b->count, b->mem, b->cores};
            for (size_t x = 0; x < 3; x++)
                for (size_t y = 0; y < 3; y++)
                    if (names[x][0] && (i != j || x != y) && strcmp(names[x], other[y]) == 0)
                        return gs_error_set(err, -EINVAL,
                                            "device config: resource name \"%s\" is configured "
                                            "by both %s and %s",
                                            names[x], a->vendor, b->vendor);
            if (i < j && strcmp(a->suffix, b->suffix) == 0)
                return gs_error_set(err, -EINVAL,
                                    "device config: claim name suffix \"%s\" is configured by "
                                    "both %s and %s",
                                    a->suffix, a->vendor, b->vendor);
        }
    }
    return 0;
}

int wh_vendors_build(const json_t *cfg, const char *vendors_csv, struct wh_vendors *out,
                     struct gs_error *err)
{
    *out = (struct wh_vendors){0};
    if (cfg && !json_is_object(cfg))
        return gs_error_set(err, -EINVAL, "device config: the document is not a mapping");
    if (json_object_get(cfg, "vendor"))
        return gs_error_set(err, -EINVAL,
                            "device config: field vendor was removed (HAMi-DRA); use vendors");
    int r = nvidia_section(json_object_get(cfg, "nvidia"), &out->nv, err);
    if (r < 0)
        return r;
    unsigned seen = 0;
    if (vendors_csv && vendors_csv[0]) {
        for (const char *p = vendors_csv; *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            while (len && isspace((unsigned char)*p))
                p++, len--;
            while (len && isspace((unsigned char)p[len - 1]))
                len--;
            if (len && (r = add_vendor(cfg, p, len, out, &seen, err)) < 0)
                return r;
            p = end ? end + 1 : p + strlen(p);
        }
    } else {
        const json_t *list = json_object_get(cfg, "vendors");
        if (list && !json_is_null(list) && !json_is_array(list))
            return gs_error_set(err, -EINVAL, "device config: vendors is not a list");
        size_t i;
        json_t *v;
        json_array_foreach((json_t *)list, i, v)
        {
            if (!json_is_string(v))
                return gs_error_set(err, -EINVAL, "device config: vendors[%zu] is not a string", i);
            if ((r = add_vendor(cfg, json_string_value(v), json_string_length(v), out, &seen,
                                err)) < 0)
                return r;
        }
    }
    if (!seen)
        out->nvidia = true; /* no list: the webhook's own (NVIDIA) translation */
    return check_unique(out, err);
}

int wh_vendors_load(const char *path, const char *vendors_csv, struct wh_vendors *out,
                    struct gs_error *err)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r = gs_read_file(path, DEVICE_CONFIG_MAX, &text, &len, err);
    if (r < 0)
        return gs_error_prefix(err, "--device-config-file %s: ", path), r;
    json_t *doc = NULL;
    if ((r = gs_yaml_load_one(text, len, &doc, err)) < 0)
        return gs_error_prefix(err, "--device-config-file %s: ", path), r;
    r = wh_vendors_build(doc, vendors_csv, out, err);
    json_decref(doc);
    if (r < 0)
        gs_error_prefix(err, "--device-config-file %s: ", path);
    return r;
}

bool wh_vendors_has_name(const struct wh_vendors *t, const char *key)
{
    for (size_t i = 0; t && i < t->n; i++) {
        const struct wh_vendor *v = &t->v[i];
        if (strcmp(key, v->count) == 0 || (v->mem[0] && strcmp(key, v->mem) == 0) ||
            (v->cores[0] && strcmp(key, v->cores) == 0))
            return true;
    }
    return false;
}

int wh_vendor_claim_spec(const struct wh_vendor *v, int64_t count, bool has_mem, int64_t mem_mib,
                         bool has_cores, int64_t cores, const json_t *selectors, const char *what,
                         json_t **out, struct gs_error *err)
{
    char q[GS_QUANTITY_STR_MAX], expr[WH_CEL_MAX_LEN + 1] = "";
    struct gs_quantity qty;
    if (has_cores && v->cores_absolute) {
        /* HAMi-DRA ConvertCores: a percentage of the reference device, rounded up, >= 1. */
        if (v->reference_cu <= 0)
            return gs_error_set(err, -ENOTSUP,
                                "%s: %s: %s.referenceComputeUnits is not configured (the "
                                "device config file), so a percentage cannot become compute "
                                "units",
                                what, v->cores, v->vendor);
        cores = (cores * v->reference_cu + 99) / 100;
        if (cores < 1)
            cores = 1;
    }
    /* HAMi-DRA TypeSelectorExpression for hygon and ascend: driver and device type. */
    snprintf(expr, sizeof(expr), "device.driver == ");
    int r = wh_cel_quote(expr, sizeof(expr), v->driver, strlen(v->driver));
    if (r == 0) {
        size_t o = strlen(expr);
        snprintf(expr + o, sizeof(expr) - o, " && device.attributes[");
        r = wh_cel_quote(expr, sizeof(expr), v->driver, strlen(v->driver));
    }
    if (r == 0) {
        size_t o = strlen(expr);
        snprintf(expr + o, sizeof(expr) - o, "].type == ");
        r = wh_cel_quote(expr, sizeof(expr), v->device_type, strlen(v->device_type));
    }
    if (r < 0)
        return gs_error_set(err, -EINVAL, "%s: %s: driver or type name cannot be quoted", what,
                            v->vendor);
    json_t *sels = json_pack("[{s:{s:s}}]", "cel", "expression", expr);
    json_array_extend(sels, (json_t *)selectors);
    json_t *req =
        json_pack("{s:s,s:s,s:I,s:o}", "deviceClassName", v->device_class, "allocationMode",
                  "ExactCount", "count", (json_int_t)count, "selectors", sels);
    if (has_mem || has_cores) {
        json_t *capreq = json_object();
        if (has_cores) {
            gs_quantity_from_int64(cores, GS_QUANTITY_DECIMAL_SI, &qty);
            if (gs_quantity_format(&qty, q, sizeof(q)) == 0)
                json_object_set_new(capreq, "cores", json_string(q));
        }
        if (has_mem) {
            gs_quantity_from_int64(mem_mib * WH_MIB, GS_QUANTITY_BINARY_SI, &qty);
            if (gs_quantity_format(&qty, q, sizeof(q)) == 0)
                json_object_set_new(capreq, "memory", json_string(q));
        }
        json_object_set_new(req, "capacity", json_pack("{s:o}", "requests", capreq));
    }
    *out =
        json_pack("{s:{s:[{s:s,s:o}]}}", "devices", "requests", "name", v->request, "exactly", req);
    return *out ? 0 : gs_error_set(err, -ENOMEM, "out of memory");
}
