/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "The same slice both ways": claims made from the webhook's templates are allocated by our DRA
 * allocator (src/alloc, kube-scheduler semantics) on the lab's devices exactly as the seed
 * article says: gpu 1 + gpumem 10240 + gpucores 50 consumes cores 50 and memory 10Gi of a T4,
 * two such pods share it, a third does not fit; percentages, type selectors and NVLink topology
 * land where they should.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "tap.h"
#include "webhook/translate.h"

#define D "hami-core-gpu.project-hami.io"

static struct wh_names names;

static json_t *gpu(const char *name, const char *product, const char *mem, int nvlink)
{
    return json_pack("{s:s,s:b,s:{s:{s:s},s:{s:s},s:{s:i}},s:{s:{s:s,s:{s:s,s:{s:s,s:s,s:s}}},"
                     "s:{s:s,s:{s:s,s:{s:s,s:s,s:s}}}}}",
                     "name", name, "allowMultipleAllocations", 1, "attributes", "productName",
                     "string", product, "uuid", "string", name, "nvlinkDomain", "int", nvlink,
                     "capacity", "cores", "value", "100", "requestPolicy", "default", "100",
                     "validRange", "min", "0", "max", "100", "step", "1", "memory", "value", mem,
                     "requestPolicy", "default", mem, "validRange", "min", "1Mi", "max", mem,
                     "step", "1Mi");
}

static json_t *slice(const char *node, json_t *devices)
{
    return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", node,
                     "spec", "driver", D, "nodeName", node, "pool", "name", node, "generation", 1,
                     "resourceSliceCount", 1, "devices", devices);
}

static struct alloc_state *cluster(void)
{
    struct alloc_state *st = alloc_state_new();
    struct gs_error err = {0};
    json_t *cls = json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "apiVersion",
                            "resource.k8s.io/v1", "kind", "DeviceClass", "metadata", "name", D,
                            "spec", "selectors", "cel", "expression", "device.driver == \"" D "\"");
    json_t *s1 = slice("t4-node", json_pack("[o]", gpu("hami-gpu-0", "Tesla T4", "15Gi", 0)));
    json_t *s2 =
        slice("a100-node", json_pack("[o,o,o,o]", gpu("a100-0", "NVIDIA A100-SXM4-80GB", "80Gi", 0),
                                     gpu("a100-1", "NVIDIA A100-SXM4-80GB", "80Gi", 1),
                                     gpu("a100-2", "NVIDIA A100-SXM4-80GB", "80Gi", 1),
                                     gpu("a100-3", "NVIDIA A100-SXM4-80GB", "80Gi", 0)));
    if (alloc_state_add_object(st, cls, &err) < 0 || alloc_state_add_object(st, s1, &err) < 0 ||
        alloc_state_add_object(st, s2, &err) < 0)
        diag("cluster: %s", err.msg);
    json_decref(cls);
    json_decref(s1);
    json_decref(s2);
    return st;
}

static int64_t g_sizes[8];
static size_t g_n_sizes;

static int memory_sizes(void *user, uint64_t deadline_ms, int64_t *sizes, size_t max, size_t *n,
                        struct gs_error *err)
{
    for (size_t i = 0; i < g_n_sizes && i < max; i++)
        sizes[i] = g_sizes[i];
    *n = g_n_sizes;
    return 0;
}

/* The ResourceClaim kube-controller-manager would make from the pod's first template. */
static json_t *claim_for(const char *pod_json, const char *claim_name)
{
    struct wh_translation tr;
    struct gs_error err = {0};
    struct wh_cluster_ops ops = {.memory_sizes = memory_sizes};
    json_t *pod = json_loads(pod_json, 0, NULL);
    int r = wh_translate_pod(&names, &ops, "team-a", pod, &tr, &err);
    json_decref(pod);
    json_t *claim = NULL;
    if (r == 0 && json_array_size(tr.templates))
        claim = json_pack(
            "{s:s,s:s,s:{s:s,s:s,s:s},s:O}", "apiVersion", "resource.k8s.io/v1", "kind",
            "ResourceClaim", "metadata", "name", claim_name, "namespace", "team-a", "uid",
            claim_name, "spec",
            json_object_get(json_object_get(json_array_get(tr.templates, 0), "spec"), "spec"));
    else
        diag("translate: %s", err.msg);
    wh_translation_fini(&tr);
    return claim;
}

/* Allocate on `node`; returns the allocation results array as compact JSON, or "UNSCHEDULABLE". */
static char *place(struct alloc_state *st, json_t *claim, const char *node)
{
    struct alloc_options opt = {.node = node};
    json_t *allocation = NULL;
    struct gs_error err = {0};
    if (!claim)
        return strdup("(no claim)");
    struct alloc_explanation *why = NULL;
    int r = alloc_claim(st, claim, &opt, &allocation, &why, &err);
    if (r == ALLOC_UNSCHEDULABLE && getenv("WH_TEST_EXPLAIN"))
        alloc_explanation_print(why, stdout);
    alloc_explanation_free(why);
    if (r == ALLOC_UNSCHEDULABLE)
        return strdup("UNSCHEDULABLE");
    if (r < 0) {
        char buf[400];
        snprintf(buf, sizeof(buf), "error: %s", err.msg);
        return strdup(buf);
    }
    json_t *results = json_object_get(json_object_get(allocation, "devices"), "results");
    size_t i;
    json_t *res;
    json_array_foreach(results, i, res) json_object_del(res, "shareID");
    char *text = json_dumps(results, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(allocation);
    return text;
}

#define POD(limits, ann)                                                                           \
    "{\"metadata\":{\"annotations\":{" ann "}},\"spec\":{\"containers\":[{\"name\":\"main\","      \
    "\"resources\":{\"limits\":{" limits "}}}]}}"

int main(void)
{
    tap_plan_auto();
    wh_names_default(&names);
    struct alloc_state *st = cluster();
    g_sizes[0] = 15LL << 30, g_sizes[1] = 80LL << 30, g_n_sizes = 2;

    /* The seed article's slice, then the lab's 30 cores / 4Gi pods on the same 15Gi T4. */
    json_t *c = claim_for(POD("\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"10240\","
                              "\"nvidia.com/gpucores\":\"50\"",
                              ""),
                          "seed");
    char *p = place(st, c, "t4-node");
    is_str(p,
           "[{\"consumedCapacity\":{\"cores\":\"50\",\"memory\":\"10Gi\"},\"device\":"
           "\"hami-gpu-0\",\"driver\":\"" D "\",\"pool\":\"t4-node\",\"request\":\"gpu\"}]",
           "gpu 1 + gpumem 10240 + gpucores 50: cores 50 and memory 10Gi of the T4");
    free(p);
    json_decref(c);
    const char *lab = POD("\"nvidia.com/gpumem\":\"4096\",\"nvidia.com/gpucores\":\"30\"", "");
    c = claim_for(lab, "lab-1");
    p = place(st, c, "t4-node");
    ok(p && strstr(p, "\"cores\":\"30\",\"memory\":\"4Gi\"") && strstr(p, "hami-gpu-0"),
       "a 30 cores / 4Gi pod shares the same T4 (%s)", p);
    free(p);
    json_decref(c);
    c = claim_for(lab, "lab-2");
    p = place(st, c, "t4-node");
    is_str(p, "UNSCHEDULABLE",
           "another 4Gi does not fit (14Gi of 15Gi used): pending, not "
           "over-committed");
    free(p);
    json_decref(c);

    /* gpumem alone requests no cores (HAMi-DRA): the driver's default, the whole compute. */
    json_t *m0 = claim_for(POD("\"nvidia.com/gpumem\":\"40000\"", ""), "mem-0");
    char *t0 = json_dumps(m0, JSON_COMPACT);
    ok(t0 && !strstr(t0, "\"cores\"") && strstr(t0, "\"memory\""),
       "gpumem without gpucores: no cores request (%s)", t0);
    free(t0);
    json_decref(m0);
    /* gpucores 0 (legacy HAMi's default): memory-only pods share one GPU. */
    const char *mem_only = POD("\"nvidia.com/gpumem\":\"40000\",\"nvidia.com/gpucores\":\"0\"", "");
    json_t *m1 = claim_for(mem_only, "mem-1"), *m2 = claim_for(mem_only, "mem-2");
    char *p1 = place(st, m1, "a100-node"), *p2 = place(st, m2, "a100-node");
    ok(p1 && p2 && strstr(p1, "\"device\":\"a100-0\"") && strstr(p2, "\"device\":\"a100-0\"") &&
           strstr(p2, "\"cores\":\"0\""),
       "two gpumem pods with gpucores 0 share one A100, compute unlimited (%s | %s)", p1, p2);
    free(p1);
    free(p2);
    json_decref(m1);
    json_decref(m2);

    json_t *whole = claim_for(POD("\"nvidia.com/gpu\":\"1\"", ""), "whole");
    p = place(st, whole, "a100-node");
    is_str(p,
           "[{\"consumedCapacity\":{\"cores\":\"100\",\"memory\":\"80Gi\"},\"device\":"
           "\"a100-1\",\"driver\":\"" D "\",\"pool\":\"a100-node\",\"request\":\"gpu\"}]",
           "nvidia.com/gpu alone: the driver's defaults, a whole GPU");
    free(p);
    json_decref(whole);

    const char *half = POD("\"nvidia.com/gpumem-percentage\":\"50\"", "");
    c = claim_for(half, "half-t4");
    p = place(st, c, "t4-node");
    is_str(p, "UNSCHEDULABLE", "50%% of the T4 (7680Mi): only 1Gi left");
    free(p);
    json_decref(c);
    c = claim_for(half, "half-a100");
    p = place(st, c, "a100-node");
    ok(p && strstr(p, "\"request\":\"gpu/gpu-81920mi\"") && strstr(p, "\"memory\":\"40Gi\""),
       "50%% on the A100 node: the 80Gi alternative, 40Gi (%s)", p);
    free(p);
    json_decref(c);

    c = claim_for(POD("\"nvidia.com/gpumem\":\"1024\"", "\"nvidia.com/use-gputype\":\"a100\""),
                  "typed");
    p = place(st, c, "t4-node");
    is_str(p, "UNSCHEDULABLE", "use-gputype a100 never lands on the T4");
    free(p);
    json_decref(c);

    c = claim_for(POD("\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpumem\":\"1024\"",
                      "\"gpuslice.io/topology\":\"nvlink\""),
                  "nvlink-pair");
    p = place(st, c, "a100-node");
    bool same = p && ((strstr(p, "a100-0") && strstr(p, "a100-3")) ||
                      (strstr(p, "a100-1") && strstr(p, "a100-2")));
    ok(same, "topology nvlink: both GPUs from one nvlinkDomain (%s)", p);
    free(p);
    json_decref(c);
    alloc_state_free(st);
    return tap_done();
}
