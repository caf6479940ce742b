/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu/claim.h"

#include <stdio.h>
#include <string.h>

#include "config/quantity.h"

bool claim_uid_valid(const char *s)
{
    size_t n = 0;
    if (!s || !*s)
        return false;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return false;
    }
    return n < CLAIM_UID_MAX;
}

static const char *jstr(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int copy_field(char *dst, size_t len, const char *val, const char *what, const char *cname,
                      struct gs_error *err)
{
    if (strlen(val) >= len)
        return gs_error_set(err, -EINVAL, "claim %s: %s is too long (%zu bytes, max %zu)", cname,
                            what, strlen(val), len - 1);
    memcpy(dst, val, strlen(val) + 1);
    return 0;
}

static const struct gpu_device *find_gpu(const struct gpu_inventory *inv, const char *name)
{
    for (size_t i = 0; i < inv->n; i++)
        if (strcmp(inv->dev[i].name, name) == 0)
            return &inv->dev[i];
    return NULL;
}

/* Parse consumedCapacity[key] as a non-negative integer; *present = false if absent. */
static int capacity_int(const json_t *cc, const char *key, const char *cname, size_t idx,
                        int64_t *out, bool *present, struct gs_error *err)
{
    *present = false;
    const json_t *v = json_object_get(cc, key);
    if (!v)
        return 0;
    char field[128];
    snprintf(field, sizeof(field), "status.allocation.devices.results[%zu].consumedCapacity.%s",
             idx, key);
    if (!json_is_string(v))
        return gs_error_set(err, -EINVAL, "claim %s: %s is not a quantity string", cname, field);
    struct gs_error qerr = {0};
    int64_t val;
    int qr = gs_quantity_parse_int64(json_string_value(v), &val, &qerr);
    if (qr == -ERANGE)
        return gs_error_set(err, -EINVAL,
                            "claim %s: %s: \"%.64s\" is too large (at most 8Ei minus one)", cname,
                            field, json_string_value(v));
    if (qr < 0)
        return gs_error_set(err, -EINVAL, "claim %s: %s: \"%.64s\" is not an integer quantity",
                            cname, field, json_string_value(v));
    if (val < 0)
        return gs_error_set(err, -EINVAL, "claim %s: %s: \"%.64s\" is negative", cname, field,
                            json_string_value(v));
    *out = val;
    *present = true;
    return 0;
}

static int cmp_dev_minor(const void *a, const void *b)
{
    const struct claim_device *x = a, *y = b;
    return x->minor < y->minor ? -1 : x->minor > y->minor;
}

int claim_plan_build(const json_t *claim, const char *ns, const char *name, const char *uid,
                     const char *driver, const char *pool, const struct gpu_inventory *inv,
                     struct claim_plan *out, struct gs_error *err)
{
    char cname[2 * CLAIM_NAME_MAX + 2];
    snprintf(cname, sizeof(cname), "%s/%s", ns, name);
    memset(out, 0, sizeof(*out));
    if (!claim_uid_valid(uid))
        return gs_error_set(err, -EINVAL, "claim %s: invalid UID \"%.80s\"", cname, uid);
    if (copy_field(out->ns, sizeof(out->ns), ns, "namespace", cname, err) < 0 ||
        copy_field(out->name, sizeof(out->name), name, "name", cname, err) < 0)
        return err ? err->code : -EINVAL;
    snprintf(out->uid, sizeof(out->uid), "%s", uid);

    if (!json_is_object(claim))
        return gs_error_set(err, -EINVAL, "claim %s: API response is not an object", cname);
    const json_t *meta = json_object_get(claim, "metadata");
    const char *api_uid = jstr(meta, "uid");
    if (!api_uid)
        return gs_error_set(err, -EINVAL, "claim %s: metadata.uid missing in API response", cname);
    if (strcmp(api_uid, uid) != 0)
        return gs_error_set(err, -ESTALE,
                            "claim %s: UID mismatch: kubelet asked for %s, API server has %.80s",
                            cname, uid, api_uid);
    const json_t *alloc = json_object_get(json_object_get(claim, "status"), "allocation");
    if (!json_is_object(alloc))
        return gs_error_set(err, -ENOENT, "claim %s: not allocated (status.allocation is missing)",
                            cname);
    const json_t *results = json_object_get(json_object_get(alloc, "devices"), "results");
    if (results && !json_is_array(results))
        return gs_error_set(err, -EINVAL,
                            "claim %s: status.allocation.devices.results is not a list", cname);

    size_t idx;
    const json_t *r;
    json_array_foreach(results, idx, r)
    {
        const char *drv = jstr(r, "driver");
        if (!drv || strcmp(drv, driver) != 0)
            continue;
        const char *req = jstr(r, "request"), *rpool = jstr(r, "pool"), *rdev = jstr(r, "device");
        if (!req || !rpool || !rdev)
            return gs_error_set(err, -EINVAL,
                                "claim %s: status.allocation.devices.results[%zu] lacks %s", cname,
                                idx,
                                !req     ? "request"
                                : !rpool ? "pool"
                                         : "device");
        if (strcmp(rpool, pool) != 0)
            return gs_error_set(err, -EINVAL,
                                "claim %s: results[%zu] is for pool \"%.64s\", this node is "
                                "pool \"%s\"",
                                cname, idx, rpool, pool);
        const struct gpu_device *gpu = find_gpu(inv, rdev);
        if (!gpu)
            return gs_error_set(err, -ENOENT,
                                "claim %s: results[%zu]: device \"%.64s\" does not exist on this "
                                "node",
                                cname, idx, rdev);
        if (out->n_results >= CLAIM_MAX_RESULTS)
            return gs_error_set(err, -E2BIG, "claim %s: more than %d results for %s", cname,
                                CLAIM_MAX_RESULTS, driver);
        struct claim_result *cr = &out->results[out->n_results];
        size_t base = strcspn(req, "/");
        if (base == 0 || base >= sizeof(cr->request))
            return gs_error_set(err, -EINVAL, "claim %s: results[%zu].request \"%.80s\" invalid",
                                cname, idx, req);
        memcpy(cr->request, req, base);
        cr->request[base] = '\0';
        if (copy_field(cr->pool, sizeof(cr->pool), rpool, "pool", cname, err) < 0 ||
            copy_field(cr->device, sizeof(cr->device), rdev, "device", cname, err) < 0)
            return err ? err->code : -EINVAL;
        const char *share = jstr(r, "shareID");
        if (share &&
            copy_field(cr->share_id, sizeof(cr->share_id), share, "shareID", cname, err) < 0)
            return err ? err->code : -EINVAL;

        /* Consumed capacity, summed per device. */
        const json_t *cc = json_object_get(r, "consumedCapacity");
        if (cc && !json_is_object(cc))
            return gs_error_set(err, -EINVAL,
                                "claim %s: results[%zu].consumedCapacity is not "
                                "an object",
                                cname, idx);
        int64_t mem = 0, cores = 0;
        bool has_mem = false, has_cores = false;
        if (capacity_int(cc, "memory", cname, idx, &mem, &has_mem, err) < 0 ||
            capacity_int(cc, "cores", cname, idx, &cores, &has_cores, err) < 0)
            return err ? err->code : -EINVAL;

        struct claim_device *cd = NULL;
        for (size_t i = 0; i < out->n_devices; i++)
            if (strcmp(out->devices[i].device, rdev) == 0)
                cd = &out->devices[i];
        bool fresh = false;
        if (!cd) {
            if (out->n_devices >= CLAIM_MAX_DEVICES)
                return gs_error_set(err, -E2BIG, "claim %s: more than %d devices", cname,
                                    CLAIM_MAX_DEVICES);
            cd = &out->devices[out->n_devices++];
            snprintf(cd->device, sizeof(cd->device), "%s", gpu->name);
            snprintf(cd->uuid, sizeof(cd->uuid), "%s", gpu->uuid);
            cd->minor = gpu->minor;
            fresh = true;
        }
        /* A result without consumedCapacity owns the whole device: no cap. Once any result of
         * the device is uncapped the device stays uncapped. */
        uint64_t total = gpu->memory_total / GPU_MIB * GPU_MIB;
        if (fresh) {
            cd->memory_limit = has_mem ? (uint64_t)mem : 0;
            cd->cores = has_cores ? (uint32_t)GS_MIN(cores, 100) : 0;
            if (has_mem && mem == 0)
                cd->memory_limit = 1; /* asked for no memory: nothing may be allocated */
        } else {
            cd->memory_limit = (!has_mem || cd->memory_limit == 0)
                                   ? 0
                                   : gs_sat_add_u64(cd->memory_limit, (uint64_t)mem);
            cd->cores = (!has_cores || cd->cores == 0)
                            ? 0
                            : (uint32_t)GS_MIN((int64_t)cd->cores + cores, 100);
        }
        if (total && cd->memory_limit > total)
            cd->memory_limit = total;
        out->n_results++;
    }
    if (out->n_results == 0)
        return gs_error_set(err, -ENOENT, "claim %s: no allocation result for driver %s", cname,
                            driver);
    qsort(out->devices, out->n_devices, sizeof(out->devices[0]), cmp_dev_minor);
    for (size_t i = 0; i < out->n_devices; i++)
        out->devices[i].env_index = (unsigned)i;
    return 0;
}

json_t *claim_plan_to_json(const struct claim_plan *p)
{
    json_t *results = json_array(), *devices = json_array();
    for (size_t i = 0; i < p->n_results; i++) {
        const struct claim_result *r = &p->results[i];
        json_array_append_new(results,
                              json_pack("{s:s, s:s, s:s, s:s}", "request", r->request, "pool",
                                        r->pool, "device", r->device, "shareID", r->share_id));
    }
    for (size_t i = 0; i < p->n_devices; i++) {
        const struct claim_device *d = &p->devices[i];
        json_array_append_new(
            devices,
            json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "device", d->device, "uuid", d->uuid,
                      "minor", (json_int_t)d->minor, "memoryLimit", (json_int_t)d->memory_limit,
                      "cores", (json_int_t)d->cores, "envIndex", (json_int_t)d->env_index));
    }
    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "namespace", p->ns, "name", p->name, "uid",
                     p->uid, "results", results, "devices", devices);
}

static int get_str(const json_t *o, const char *key, char *dst, size_t len, bool allow_empty,
                   struct gs_error *err)
{
    const char *v = jstr(o, key);
    if (!v || (!allow_empty && !*v) || strlen(v) >= len)
        return gs_error_set(err, -EINVAL, "checkpoint: field %s missing or invalid", key);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int get_uint(const json_t *o, const char *key, uint64_t max, uint64_t *out,
                    struct gs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
        return gs_error_set(err, -EINVAL, "checkpoint: field %s missing or out of range", key);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int claim_plan_from_json(const json_t *j, struct claim_plan *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(j))
        return gs_error_set(err, -EINVAL, "checkpoint: claim entry is not an object");
    if (get_str(j, "namespace", out->ns, sizeof(out->ns), true, err) < 0 ||
        get_str(j, "name", out->name, sizeof(out->name), true, err) < 0 ||
        get_str(j, "uid", out->uid, sizeof(out->uid), false, err) < 0)
        return -EINVAL;
    if (!claim_uid_valid(out->uid))
        return gs_error_set(err, -EINVAL, "checkpoint: invalid claim uid \"%s\"", out->uid);
    const json_t *results = json_object_get(j, "results"), *devices = json_object_get(j, "devices");
    if (!json_is_array(results) || !json_is_array(devices) ||
        json_array_size(results) > CLAIM_MAX_RESULTS ||
        json_array_size(devices) > CLAIM_MAX_DEVICES)
        return gs_error_set(err, -EINVAL, "checkpoint: claim %s: results/devices invalid",
                            out->uid);
    size_t i;
    const json_t *v;
    json_array_foreach(results, i, v)
    {
        struct claim_result *r = &out->results[i];
        if (get_str(v, "request", r->request, sizeof(r->request), false, err) < 0 ||
            get_str(v, "pool", r->pool, sizeof(r->pool), false, err) < 0 ||
            get_str(v, "device", r->device, sizeof(r->device), false, err) < 0 ||
            get_str(v, "shareID", r->share_id, sizeof(r->share_id), true, err) < 0)
            return -EINVAL;
        out->n_results++;
    }
    json_array_foreach(devices, i, v)
    {
        struct claim_device *d = &out->devices[i];
        uint64_t minor, mem, cores, idx;
        if (get_str(v, "device", d->device, sizeof(d->device), false, err) < 0 ||
            get_str(v, "uuid", d->uuid, sizeof(d->uuid), false, err) < 0 ||
            get_uint(v, "minor", UINT32_MAX, &minor, err) < 0 ||
            get_uint(v, "memoryLimit", INT64_MAX, &mem, err) < 0 ||
            get_uint(v, "cores", 100, &cores, err) < 0 ||
            get_uint(v, "envIndex", CLAIM_MAX_DEVICES, &idx, err) < 0)
            return -EINVAL;
        d->minor = (unsigned)minor;
        d->memory_limit = mem;
        d->cores = (uint32_t)cores;
        d->env_index = (unsigned)idx;
        out->n_devices++;
    }
    return 0;
}
