/* SPDX-License-Identifier: Apache-2.0 */
/* Legacy values -> claim spec: validation messages, exact JSON, template names. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/shape.h"
#include "webhook/template.h"

static struct wh_names names;

static int read_res(const char *json, struct wh_legacy *l, struct gs_error *err)
{
    json_t *res = json_loads(json, 0, NULL);
    int r = wh_legacy_read(res, &names, "container \"c\"", l, err);
    json_decref(res);
    return r;
}

static char *spec_text(const struct wh_legacy *l, const int64_t *sizes, size_t n,
                       enum wh_topology topo)
{
    json_t *spec = NULL;
    struct gs_error err = {0};
    if (wh_claim_spec_build(l, &names, NULL, topo, sizes, n, "c", &spec, &err) < 0)
        return strdup(err.msg);
    char *t = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(spec);
    return t;
}

int main(void)
{
    tap_plan_auto();
    wh_names_default(&names);
    struct wh_legacy l;
    struct gs_error err = {0};

    is_int(read_res("{\"limits\": {\"nvidia.com/gpumem\": 1024, \"nvidia.com/gpucores\": \"1k\"}}",
                    &l, &err),
           -EINVAL, "cores 1k = 1000: out of range");
    is_str(err.msg,
           "container \"c\": nvidia.com/gpucores: \"1k\" is outside 0-100 (percent of a "
           "GPU's compute)",
           "message names container, resource and value");
    is_int(read_res("{\"limits\": {\"nvidia.com/gpumem\": \"1e3\"}}", &l, &err), 0, "1e3 MiB");
    ok(l.has_mem && l.mem_mib == 1000 && l.count == 1 && !l.has_count,
       "gpumem 1e3 = 1000, count 1");
    is_int(read_res("{\"limits\": {\"nvidia.com/gpumem\": \"10Gi\"}}", &l, &err), -EINVAL,
           "gpumem with a unit");
    is_str(err.msg,
           "container \"c\": nvidia.com/gpumem: \"10Gi\" has a unit; the value is a "
           "number of MiB (e.g. 10240 for 10 GiB)",
           "the hint names the unit mistake");
    is_int(read_res("{\"limits\": {\"nvidia.com/gpu\": 1.5}}", &l, &err), -EINVAL, "JSON real");
    is_str(err.msg, "container \"c\": nvidia.com/gpu: 1.5 is not an integer", "real named");
    is_int(read_res("{\"limits\": {\"nvidia.com/gpu\": {}}}", &l, &err), -EINVAL, "object");
    is_str(err.msg, "container \"c\": nvidia.com/gpu: (a JSON object) is not a quantity",
           "object named");
    is_int(read_res("{\"limits\": {\"nvidia.com/gpucores\": 100}, \"requests\": "
                    "{\"nvidia.com/gpucores\": 101}}",
                    &l, &err),
           0, "limits win");
    is_int(l.cores, 100, "cores from limits");
    is_int(read_res("{\"limits\": {\"cpu\": \"1\"}}", &l, &err), 0, "no legacy");
    ok(!wh_legacy_any(&l), "nothing legacy");
    is_int(read_res("{\"limits\": {\"nvidia.com/gpumem\": \"8796093022208\"}}", &l, &err), -EINVAL,
           "2^43 MiB overflows bytes");
    like_str(err.msg, "is too large", "too large named");

    struct wh_legacy seed = {.has_count = true,
                             .count = 1,
                             .has_mem = true,
                             .mem_mib = 10240,
                             .has_cores = true,
                             .cores = 50};
    char *t = spec_text(&seed, NULL, 0, WH_TOPOLOGY_NONE);
    is_str(t,
           "{\"devices\":{\"requests\":[{\"exactly\":{\"allocationMode\":\"ExactCount\","
           "\"capacity\":{\"requests\":{\"cores\":\"50\",\"memory\":\"10Gi\"}},\"count\":1,"
           "\"deviceClassName\":\"hami-core-gpu.project-hami.io\"},\"name\":\"gpu\"}]}}",
           "seed mapping, exact JSON");
    json_t *spec = json_loads(t, 0, NULL);
    char name[WH_TEMPLATE_NAME_MAX], name2[WH_TEMPLATE_NAME_MAX];
    is_int(wh_template_name(spec, name, sizeof(name)), 0, "template name");
    is_int(strlen(name), 29, "gpuslice- + 20 hex");
    ok(strncmp(name, "gpuslice-", 9) == 0 && strspn(name + 9, "0123456789abcdef") == 20,
       "name is prefix + lowercase hex: %s", name);
    seed.cores = 51;
    json_t *spec2 = NULL;
    wh_claim_spec_build(&seed, &names, NULL, WH_TOPOLOGY_NONE, NULL, 0, "c", &spec2, &err);
    wh_template_name(spec2, name2, sizeof(name2));
    ok(strcmp(name, name2) != 0, "another shape, another name");
    is_int(wh_template_name(spec, name2, 10), -ENOSPC, "small buffer: -ENOSPC");
    json_t *tpl = wh_template_object(name, "ns1", spec);
    is_str(json_string_value(json_object_get(json_object_get(tpl, "metadata"), "namespace")), "ns1",
           "template namespace");
    ok(json_equal(json_object_get(json_object_get(tpl, "spec"), "spec"), spec),
       "template spec.spec is the claim spec");
    json_decref(tpl);
    json_decref(spec);
    json_decref(spec2);
    free(t);

    struct wh_legacy pct = {.count = 1, .has_pct = true, .pct = 1};
    int64_t sizes[] = {50LL << 20, (10LL << 20) + 1, 10LL << 20};
    t = spec_text(&pct, sizes, 3, WH_TOPOLOGY_NONE);
    like_str(t, "\"memory\":\"1Mi\"", "1%% of 10Mi rounds down but stays at least 1Mi");
    like_str(t, "\"name\":\"gpu-10mi\"", "first 10Mi size");
    like_str(t, "\"name\":\"gpu-10mi-1\"", "a size differing below 1 MiB gets its own name");
    like_str(t, "\"name\":\"gpu-50mi\"", "50Mi size");
    free(t);
    t = spec_text(&pct, sizes, 0, WH_TOPOLOGY_NONE);
    is_str(t,
           "c: nvidia.com/gpumem-percentage: no ResourceSlice of driver "
           "hami-core-gpu.project-hami.io publishes a GPU memory size, so a percentage of GPU "
           "memory cannot be translated",
           "no sizes: the reason");
    free(t);
    int64_t five[] = {1LL << 30, 2LL << 30, 3LL << 30, 4LL << 30, 5LL << 30};
    pct.count = 2;
    t = spec_text(&pct, five, 5, WH_TOPOLOGY_NVLINK_PREFERRED);
    like_str(t, "10 alternatives would exceed the 8 firstAvailable subrequests",
             "preferred doubles the alternatives: over 8 refused");
    free(t);
    struct wh_legacy two = {.count = 2, .has_count = true};
    t = spec_text(&two, NULL, 0, WH_TOPOLOGY_NVLINK);
    like_str(t,
             "\"constraints\":[{\"matchAttribute\":\"hami-core-gpu.project-hami.io/nvlinkDomain\","
             "\"requests\":[\"gpu\"]}]",
             "nvlink: matchAttribute on the request");
    free(t);
    two.count = 1;
    t = spec_text(&two, NULL, 0, WH_TOPOLOGY_NVLINK);
    ok(strstr(t, "constraints") == NULL, "one GPU: no topology constraint");
    free(t);
    ok(wh_is_legacy_name(&names, "nvidia.com/gpucores") && !wh_is_legacy_name(&names, "cpu"),
       "legacy names recognised");
    return tap_done();
}
