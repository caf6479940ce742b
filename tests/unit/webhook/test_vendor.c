/* SPDX-License-Identifier: Apache-2.0 */
/* The vendor table (webhook/vendor.h): HAMi-DRA's device config, its defaults, its refusals. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/vendor.h"

static int build(const char *json, const char *csv, struct wh_vendors *t, struct gs_error *err)
{
    json_t *cfg = json ? json_loads(json, 0, NULL) : NULL;
    int r = wh_vendors_build(cfg, csv, t, err);
    json_decref(cfg);
    return r;
}

static const struct wh_vendor *find(const struct wh_vendors *t, const char *suffix)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].suffix, suffix) == 0)
            return &t->v[i];
    return NULL;
}

int main(void)
{
    static struct wh_vendors t;
    struct gs_error err = {0};

    is_int(build(NULL, NULL, &t, &err), 0, "no file, no list: ok");
    ok(t.nvidia && t.n == 0, "no file, no list: NVIDIA only");

    /* HAMi-DRA TestDRADeviceHygonDefaults: hcunum, dra.hygon.com, request hcu. */
    is_int(build("{}", "hygon", &t, &err), 0, "hygon from defaults");
    const struct wh_vendor *h = find(&t, "hygon");
    ok(!t.nvidia && h && strcmp(h->count, "hygon.com/hcunum") == 0 &&
           strcmp(h->device_class, "dra.hygon.com") == 0 && strcmp(h->request, "hcu") == 0 &&
           h->reference_cu == 0,
       "hygon defaults as HAMi-DRA's (nvidia not listed: not translated)");

    /* HAMi-DRA DefaultAscendVNPUs: seven chips, per-chip UUID annotations. */
    is_int(build("{\"vendors\":[\"ascend\",\"nvidia\"]}", NULL, &t, &err), 0, "ascend defaults");
    const struct wh_vendor *a = find(&t, "ascend310p");
    ok(t.nvidia && t.n == 7 && a && strcmp(a->count, "huawei.com/Ascend310P") == 0 &&
           strcmp(a->mem, "huawei.com/Ascend310P-memory") == 0 &&
           strcmp(a->use_uuid, "hami.io/use-Ascend310P-uuid") == 0 &&
           strcmp(a->device_class, "hami-vnpu-core.project-hami.io") == 0,
       "ascend: HAMi-DRA's seven chips (310P: huawei.com/Ascend310P, hami.io/use-Ascend310P-uuid)");

    is_int(build("{\"hygon\":{\"referenceComputeUnits\":120,\"requestName\":\"dcu\"}}", "hygon", &t,
                 &err),
           0, "hygon overrides");
    ok(t.v[0].reference_cu == 120 && strcmp(t.v[0].request, "dcu") == 0, "file values win");

    is_int(build("{\"vendor\":\"nvidia\"}", NULL, &t, &err), -EINVAL, "removed field vendor");
    like_str(err.msg, "field vendor was removed", "message names the field");
    is_int(build("{}", "nvidia,amd", &t, &err), -EINVAL, "unknown vendor");
    like_str(err.msg, "\"amd\" is not supported", "message names the vendor");
    is_int(build("{}", "hygon,hygon", &t, &err), -EINVAL, "vendor twice");
    like_str(err.msg, "listed twice", "message says so");
    is_int(build("{\"hygon\":{\"resourceCountName\":7}}", "hygon", &t, &err), -EINVAL,
           "wrong type");
    like_str(err.msg, "hygon.resourceCountName is a number", "message names field and type");
    is_int(build("{\"hygon\":{\"resourceCoreName\":\"huawei.com/Ascend310P\"}}", "hygon,ascend", &t,
                 &err),
           -EINVAL, "one resource name for two vendors");
    like_str(err.msg, "configured by both", "HAMi-DRA's DRADevices refusal");
    is_int(build("{\"hygon\":{\"referenceComputeUnits\":-1}}", "hygon", &t, &err), -EINVAL,
           "negative reference compute units");

    /* HAMi-DRA ConvertCores: 60% of 120 -> 72, 1% -> 2; no reference -> an error. */
    is_int(build("{\"hygon\":{\"referenceComputeUnits\":120}}", "hygon", &t, &err), 0, "hygon");
    json_t *spec = NULL;
    is_int(wh_vendor_claim_spec(&t.v[0], 1, true, 2000, true, 60, NULL, "container \"c\"", &spec,
                                &err),
           0, "hygon claim spec");
    json_t *caps = json_object_get(
        json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(spec, "devices"), "requests"), 0),
                "exactly"),
            "capacity"),
        "requests");
    is_str(json_string_value(json_object_get(caps, "cores")), "72", "60%% of 120 units: 72");
    is_str(json_string_value(json_object_get(caps, "memory")), "2000Mi", "2000 MiB");
    json_decref(spec);
    t.v[0].reference_cu = 0;
    is_int(
        wh_vendor_claim_spec(&t.v[0], 1, false, 0, true, 50, NULL, "container \"c\"", &spec, &err),
        -ENOTSUP, "no reference compute units: refused");
    like_str(err.msg, "referenceComputeUnits is not configured", "message names the setting");

    /* HAMi-DRA draDevicesFromAscend, legacy single chip: no devices list, resourceCountName set;
     * memory and core names default to "<count>-memory"/"-core"; the section's UUID annotations
     * apply to it. */
    is_int(build("{\"ascend\":{\"resourceCountName\":\"huawei.com/Ascend910B3\","
                 "\"useUUIDAnnotation\":\"example.com/use-npu\"}}",
                 "ascend", &t, &err),
           0, "ascend legacy single chip");
    a = find(&t, "ascend910b3");
    ok(t.n == 1 && a && strcmp(a->count, "huawei.com/Ascend910B3") == 0 &&
           strcmp(a->mem, "huawei.com/Ascend910B3-memory") == 0 &&
           strcmp(a->cores, "huawei.com/Ascend910B3-core") == 0 &&
           strcmp(a->use_uuid, "example.com/use-npu") == 0 &&
           strcmp(a->nouse_uuid, "hami.io/no-use-Ascend910B3-uuid") == 0,
       "legacy single chip: one entry, derived names, the section's UUID annotation");
    is_int(build("{\"ascend\":{\"resourceCountName\":\"example.com/npu\","
                 "\"resourceMemoryName\":\"example.com/npu-mem\"}}",
                 "ascend", &t, &err),
           0, "ascend legacy chip outside huawei.com");
    a = find(&t, "ascend310p");
    ok(t.n == 1 && a && strcmp(a->count, "example.com/npu") == 0 &&
           strcmp(a->mem, "example.com/npu-mem") == 0 &&
           strcmp(a->use_uuid, "hami.io/use-Ascend310P-uuid") == 0,
       "legacy chip without the huawei.com/ prefix: common word Ascend310P");

    /* devices: an entry without resourceName is skipped; the section's UUID annotations do not
     * apply (per-chip hami.io/use-<word>-uuid); none left: an error naming the indexes. */
    is_int(build("{\"ascend\":{\"useUUIDAnnotation\":\"example.com/use-npu\",\"devices\":["
                 "{\"commonWord\":\"Ascend310P\"},"
                 "{\"chipName\":\"910B3\",\"resourceName\":\"huawei.com/Ascend910B3\"}]}}",
                 "ascend", &t, &err),
           0, "ascend devices with an entry lacking resourceName");
    a = find(&t, "ascend910b3");
    ok(t.n == 1 && a && strcmp(a->use_uuid, "hami.io/use-Ascend910B3-uuid") == 0 &&
           a->mem[0] == '\0',
       "the entry without resourceName skipped; the other keeps its per-chip UUID annotation");
    is_int(build("{\"ascend\":{\"devices\":[{\"commonWord\":\"A\"},{\"chipName\":\"B\"}]}}",
                 "ascend", &t, &err),
           -EINVAL, "ascend devices all without resourceName");
    like_str(err.msg, "empty resourceName at indexes [0 1]", "message names the indexes");
    return tap_done();
}
