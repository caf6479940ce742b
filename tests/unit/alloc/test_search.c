/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-scheduler semantics, rule by rule: pools (generation, incomplete, invalid, order, node
 * matching), requests (ExactCount, All, firstAvailable, selectors, adminAccess), constraints,
 * exclusive vs shared devices, limits, output (config, nodeSelector).
 */
#include "helpers.h"

#define CLASS                                                                                      \
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\n"                   \
    "spec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n"         \
    "  config:\n  - opaque: {driver: gpu.example.com, parameters: {mode: class}}\n---\n"

#define CLAIM_HEAD(name)                                                                           \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: " name                  \
    ", namespace: ns}\nspec:\n  devices:\n"

/* Two-slice pool "a" (generation 2) on node n1 plus an older generation and a pool "b". */
static const char *pools_fixture = CLASS "kind: ResourceSlice\nmetadata: {name: s-b}\n"
                                         "spec: {driver: gpu.example.com, nodeName: n1, pool: "
                                         "{name: b, generation: 1, resourceSliceCount: 1},"
                                         " devices: [{name: b0}]}\n---\n"
                                         "kind: ResourceSlice\nmetadata: {name: s-a-2}\n"
                                         "spec: {driver: gpu.example.com, nodeName: n1, pool: "
                                         "{name: a, generation: 2, resourceSliceCount: 2},"
                                         " devices: [{name: a2}]}\n---\n"
                                         "kind: ResourceSlice\nmetadata: {name: s-a-1}\n"
                                         "spec: {driver: gpu.example.com, nodeName: n1, pool: "
                                         "{name: a, generation: 2, resourceSliceCount: 2},"
                                         " devices: [{name: a1}, {name: a1b}]}\n---\n"
                                         "kind: ResourceSlice\nmetadata: {name: s-a-old}\n"
                                         "spec: {driver: gpu.example.com, nodeName: n1, pool: "
                                         "{name: a, generation: 1, resourceSliceCount: 1},"
                                         " devices: [{name: a-old}]}\n";

static const char *claim_count4 = CLAIM_HEAD(
    "c4") "    requests:\n    - name: gpus\n      exactly: {deviceClassName: gpu, count: 4}\n";
static const char *claim_count4b = CLAIM_HEAD(
    "c4b") "    requests:\n    - name: gpus\n      exactly: {deviceClassName: gpu, count: 4}\n";

static void test_pool_order(void)
{
    struct alloc_state *st = state_from(pools_fixture);
    struct outcome o;
    is_int(claim_on(st, claim_count4, "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "4 devices on n1");
    is_uint(res_count(o.allocation), 4, "four results");
    is_str(res_str(o.allocation, 0, "device"), "a1", "pool a first, slice s-a-1 before s-a-2");
    is_str(res_str(o.allocation, 1, "device"), "a1b", "devices in slice order");
    is_str(res_str(o.allocation, 2, "device"), "a2", "then slice s-a-2");
    is_str(res_str(o.allocation, 3, "device"), "b0", "then pool b");
    outcome_fini(&o);
    is_int(claim_on(st, claim_count4b, "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "the older generation's device a-old is not used");
    ok(strstr(o.why, "a-old") == NULL, "a-old is not even a candidate");
    outcome_fini(&o);
    alloc_state_free(st);
}

#define ONE_REQ(n)                                                                                 \
    CLAIM_HEAD(n) "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n"

static void test_incomplete_invalid(void)
{
    const char *fx = CLASS
        "kind: ResourceSlice\nmetadata: {name: s1}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 2},"
        " devices: [{name: d0}]}\n---\n"
        "kind: ResourceSlice\nmetadata: {name: other}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: q, resourceSliceCount: 1},"
        " devices: [{name: q0}]}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    is_int(claim_on(st, ONE_REQ("one"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "an incomplete pool is skipped, a complete one serves");
    is_str(res_str(o.allocation, 0, "device"), "q0", "q0 from the complete pool q, not d0");
    outcome_fini(&o);
    is_int(claim_on(st, ONE_REQ("two"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "nothing but the incomplete pool is left");
    like_str(o.why,
             "gpu.example.com/p/d0: PoolIncomplete pool p is incomplete (1 of 2 slices seen)",
             "the device says its pool is incomplete");
    like_str(o.why, "request r: PoolIncomplete: need 1 device, 0 of 2 usable",
             "request-level reason");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("all") "    requests:\n    - name: r\n      exactly: "
                                      "{deviceClassName: gpu, allocationMode: All}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           ALLOC_UNSCHEDULABLE, "allocationMode All waits for an incomplete pool");
    like_str(o.err,
             "asks for all devices, but resource pool gpu.example.com/p is currently being updated",
             "error says the pool is being updated");
    like_str(o.why, "PoolIncomplete", "explanation reason PoolIncomplete");
    outcome_fini(&o);
    alloc_state_free(st);

    const char *inv = CLASS
        "kind: ResourceSlice\nmetadata: {name: s1}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 2},"
        " devices: [{name: d0}]}\n---\n"
        "kind: ResourceSlice\nmetadata: {name: s2}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 2},"
        " devices: [{name: d0}]}\n";
    st = state_from(inv);
    is_int(claim_on(st, ONE_REQ("one"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "a pool with a duplicate device name is invalid: never allocated from");
    like_str(o.why, "PoolInvalid pool p is invalid: duplicate device name d0",
             "explanation names the duplicate");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("all") "    requests:\n    - name: r\n      exactly: "
                                      "{deviceClassName: gpu, allocationMode: All}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           -EINVAL, "allocationMode All with an invalid pool is an error");
    like_str(o.err,
             "asks for all devices, but resource pool gpu.example.com/p is currently invalid",
             "error says the pool is invalid");
    is_str(json_string_value(json_object_get(o.why_json, "reason")), "PoolInvalid",
           "claim reason PoolInvalid");
    outcome_fini(&o);
    alloc_state_free(st);

    const char *bind = CLASS
        "kind: ResourceSlice\nmetadata: {name: net}\n"
        "spec: {driver: gpu.example.com, allNodes: true, pool: {name: p, resourceSliceCount: 1},"
        " devices: [{name: b0, bindsToNode: true, bindingConditions: [ready],"
        " bindingFailureConditions: [failed]}]}\n";
    st = state_from(bind);
    is_int(claim_on(st, ONE_REQ("one"), "n7", ALLOC_POLICY_FIRST_FIT, &o), 0, "bindsToNode device");
    char *ns = json_dumps(json_object_get(o.allocation, "nodeSelector"), JSON_COMPACT);
    is_str(ns,
           "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
           "\"In\",\"values\":[\"n7\"]}]}]}",
           "bindsToNode pins the allocation to the node it was made for");
    free(ns);
    const json_t *r0 =
        json_array_get(json_object_get(json_object_get(o.allocation, "devices"), "results"), 0);
    char *bc = json_dumps(json_object_get(r0, "bindingConditions"), JSON_COMPACT);
    is_str(bc, "[\"ready\"]", "bindingConditions copied into the result");
    free(bc);
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_node_matching(void)
{
    const char *fx = CLASS
        "kind: Node\nmetadata: {name: n1, labels: {zone: z1, gpus: '8'}}\n---\n"
        "kind: Node\nmetadata: {name: n2, labels: {zone: z2}}\n---\n"
        "kind: ResourceSlice\nmetadata: {name: by-selector}\n"
        "spec:\n  driver: gpu.example.com\n  pool: {name: sel, resourceSliceCount: 1}\n"
        "  nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, "
        "values: [z1]},"
        " {key: gpus, operator: Gt, values: ['4']}]}]}\n"
        "  devices: [{name: sel0}]\n---\n"
        "kind: ResourceSlice\nmetadata: {name: everywhere}\n"
        "spec: {driver: gpu.example.com, allNodes: true, pool: {name: zall, resourceSliceCount: 1},"
        " devices: [{name: all0}]}\n---\n"
        "kind: ResourceSlice\nmetadata: {name: per-device}\n"
        "spec: {driver: gpu.example.com, perDeviceNodeSelection: true, pool: {name: pd, "
        "resourceSliceCount: 1},"
        " devices: [{name: pd-n2, nodeName: n2}, {name: pd-n3, nodeName: n3}]}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    const char *one =
        CLAIM_HEAD("one") "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n";
    is_int(claim_on(st, one, "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "n1 matches the node selector");
    is_str(res_str(o.allocation, 0, "device"), "sel0", "pool 'sel' sorts before 'zall'");
    char *ns = json_dumps(json_object_get(o.allocation, "nodeSelector"), JSON_COMPACT);
    is_str(ns,
           "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
           "\"values\":[\"z1\"]},{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"4\"]}]}]}",
           "the slice's node selector becomes the allocation's");
    free(ns);
    outcome_fini(&o);
    is_int(claim_on(st, one, "n2", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "n2 does not match the selector");
    is_str(res_str(o.allocation, 0, "device"), "pd-n2", "per-device node selection: pd-n2 on n2");
    ns = json_dumps(json_object_get(o.allocation, "nodeSelector"), JSON_COMPACT);
    is_str(ns,
           "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
           "\"In\",\"values\":[\"n2\"]}]}]}",
           "a per-device nodeName pins the node");
    free(ns);
    outcome_fini(&o);
    is_int(claim_on(st, one, "n4", ALLOC_POLICY_FIRST_FIT, &o), 0, "allNodes serves any node");
    is_str(res_str(o.allocation, 0, "device"), "all0", "the allNodes device");
    ok(json_object_get(o.allocation, "nodeSelector") == NULL, "allNodes: no nodeSelector");
    outcome_fini(&o);
    is_int(claim_on(st, one, "n3", ALLOC_POLICY_FIRST_FIT, &o), 0, "n3: per-device pd-n3 first");
    is_str(res_str(o.allocation, 0, "device"), "pd-n3", "pool 'pd' before 'zall'");
    outcome_fini(&o);
    alloc_state_free(st);
}

static const char *eight = CLASS
    "kind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - {name: g0, attributes: {model: {string: T4}, nvlinkDomain: {int: 0}, "
    "resource.kubernetes.io/pcieRoot: {string: pci0}}}\n"
    "  - {name: g1, attributes: {model: {string: A100}, nvlinkDomain: {int: 1}, "
    "resource.kubernetes.io/pcieRoot: {string: pci0}}}\n"
    "  - {name: g2, attributes: {model: {string: T4}, nvlinkDomain: {int: 2}, "
    "resource.kubernetes.io/pcieRoot: {string: pci1}}}\n"
    "  - {name: g3, attributes: {model: {string: A100}, nvlinkDomain: {int: 1}, "
    "resource.kubernetes.io/pcieRoot: {string: pci1}}}\n";

static void test_requests(void)
{
    struct alloc_state *st = state_from(eight);
    struct outcome o;
    is_int(
        claim_on(
            st,
            CLAIM_HEAD(
                "all") "    requests:\n    - name: r\n      exactly:\n        deviceClassName: "
                       "gpu\n        allocationMode: All\n        selectors: [{cel: {expression: "
                       "'device.attributes[\"gpu.example.com\"].model == \"T4\"'}}]\n",
            "n1", ALLOC_POLICY_FIRST_FIT, &o),
        0, "All: every matching device");
    is_uint(res_count(o.allocation), 2, "both T4s");
    is_str(res_str(o.allocation, 1, "device"), "g2", "second T4 is g2");
    ok(json_object_get(json_object_get(o.allocation, "devices"), "config") != NULL,
       "class config copied");
    char *cfg = json_dumps(json_object_get(json_object_get(o.allocation, "devices"), "config"),
                           JSON_COMPACT);
    is_str(cfg,
           "[{\"source\":\"FromClass\",\"requests\":[\"r\"],\"opaque\":{\"driver\":"
           "\"gpu.example.com\",\"parameters\":{\"mode\":\"class\"}}}]",
           "config entry FromClass, naming the request that used the class");
    free(cfg);
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("more") "    requests:\n    - name: r\n      exactly: "
                                       "{deviceClassName: gpu, count: 2}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "count 2 beside the All claim");
    is_str(res_str(o.allocation, 0, "device"), "g1", "g0 is taken: g1");
    is_str(res_str(o.allocation, 1, "device"), "g3", "g2 is taken: g3");
    ok(strcmp(res_str(o.allocation, 0, "shareID"), "") == 0, "exclusive devices have no shareID");
    outcome_fini(&o);
    is_int(claim_on(
               st,
               CLAIM_HEAD(
                   "none") "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n",
               "n1", ALLOC_POLICY_FIRST_FIT, &o),
           ALLOC_UNSCHEDULABLE, "all four exclusive devices are in use");
    like_str(o.why, "gpu.example.com/p/g0: DeviceInUse allocated to claim ns/all",
             "DeviceInUse names the holder");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("admin") "    requests:\n    - name: r\n      exactly: "
                                        "{deviceClassName: gpu, adminAccess: true}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "adminAccess ignores devices in use");
    is_str(res_str(o.allocation, 0, "device"), "g0", "admin gets g0");
    const json_t *r0 =
        json_array_get(json_object_get(json_object_get(o.allocation, "devices"), "results"), 0);
    ok(json_is_true(json_object_get(r0, "adminAccess")), "result has adminAccess: true");
    outcome_fini(&o);
    alloc_state_free(st);

    st = state_from(eight);
    const char *fa = CLAIM_HEAD(
        "fa") "    requests:\n    - name: gpu\n      firstAvailable:\n"
              "      - {name: four-a100, deviceClassName: gpu, count: 4, selectors: [{cel: "
              "{expression: 'device.attributes[\"gpu.example.com\"].model == \"A100\"'}}]}\n"
              "      - {name: two-a100, deviceClassName: gpu, count: 2, selectors: [{cel: "
              "{expression: 'device.attributes[\"gpu.example.com\"].model == \"A100\"'}}]}\n"
              "      - {name: any, deviceClassName: gpu}\n"
              "    config:\n    - requests: [gpu/two-a100]\n      opaque: {driver: "
              "gpu.example.com, parameters: {mode: pair}}\n"
              "    - requests: [gpu/any]\n      opaque: {driver: gpu.example.com, parameters: "
              "{mode: any}}\n";
    is_int(claim_on(st, fa, "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "firstAvailable");
    is_uint(res_count(o.allocation), 2, "the first subrequest that fits: two A100");
    is_str(res_str(o.allocation, 0, "request"), "gpu/two-a100", "result request is req/subreq");
    is_str(res_str(o.allocation, 0, "device"), "g1", "g1");
    is_str(res_str(o.allocation, 1, "device"), "g3", "g3");
    cfg = json_dumps(json_object_get(json_object_get(o.allocation, "devices"), "config"),
                     JSON_COMPACT);
    like_str(cfg,
             "{\"source\":\"FromClaim\",\"requests\":[\"gpu/"
             "two-a100\"],\"opaque\":{\"driver\":\"gpu.example.com\",\"parameters\":{\"mode\":"
             "\"pair\"}}}",
             "claim config of the selected subrequest");
    ok(cfg && !strstr(cfg, "\"any\""), "not the config of an unselected subrequest");
    free(cfg);
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_constraints(void)
{
    struct alloc_state *st = state_from(eight);
    struct outcome o;
    is_int(claim_on(
               st,
               CLAIM_HEAD(
                   "match") "    requests:\n    - name: a\n      exactly: {deviceClassName: gpu}\n"
                            "    - name: b\n      exactly: {deviceClassName: gpu}\n"
                            "    constraints:\n    - {matchAttribute: gpu.example.com/model}\n",
               "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "matchAttribute over two requests");
    is_str(res_str(o.allocation, 0, "device"), "g0", "a: g0 (T4)");
    is_str(res_str(o.allocation, 1, "device"), "g2", "b: backtracks past g1 (A100) to g2 (T4)");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("distinct") "    requests:\n    - name: a\n      exactly: "
                                           "{deviceClassName: gpu, count: 2}\n"
                                           "    constraints:\n    - {distinctAttribute: "
                                           "resource.kubernetes.io/pcieRoot, requests: [a]}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "distinctAttribute on what is left: g1 (pci0) and g3 (pci1)");
    is_str(res_str(o.allocation, 0, "device"), "g1", "g1");
    is_str(res_str(o.allocation, 1, "device"), "g3", "g3");
    outcome_fini(&o);
    alloc_state_free(st);

    st = state_from(eight);
    is_int(claim_on(st,
                    CLAIM_HEAD("distinct") "    requests:\n    - name: a\n      exactly: "
                                           "{deviceClassName: gpu, count: 2}\n"
                                           "    constraints:\n    - {distinctAttribute: "
                                           "resource.kubernetes.io/pcieRoot, requests: [a]}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "distinctAttribute: two PCIe roots");
    is_str(res_str(o.allocation, 0, "device"), "g0", "g0 on pci0");
    is_str(res_str(o.allocation, 1, "device"), "g2", "g2 on pci1 (g1 shares pci0)");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("nomatch") "    requests:\n    - name: a\n      exactly: "
                                          "{deviceClassName: gpu, count: 2}\n"
                                          "    constraints:\n    - {matchAttribute: "
                                          "gpu.example.com/nvlinkDomain}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "matchAttribute nvlinkDomain: g1 and g3 share domain 1");
    is_str(res_str(o.allocation, 0, "device"), "g1", "g1");
    is_str(res_str(o.allocation, 1, "device"), "g3", "g3");
    outcome_fini(&o);
    is_int(
        claim_on(st,
                 CLAIM_HEAD(
                     "missing") "    requests:\n    - name: a\n      exactly: {deviceClassName: "
                                "gpu, count: 1}\n"
                                "    - name: b\n      exactly: {deviceClassName: gpu, count: 1}\n"
                                "    constraints:\n    - {matchAttribute: gpu.example.com/model}\n",
                 "n1", ALLOC_POLICY_FIRST_FIT, &o),
        ALLOC_UNSCHEDULABLE, "nothing left with a common model");
    outcome_fini(&o);
    alloc_state_free(st);
}

static const char *shared = CLASS
    "kind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - name: sh0\n    allowMultipleAllocations: true\n"
    "    capacity: {cores: {value: '100'}, memory: {value: 16Gi}}\n"
    "  - name: ex1\n    capacity: {cores: {value: '100'}}\n"
    "---\n"
    "kind: ResourceClaim\nmetadata: {name: old-exclusive, namespace: ns}\n"
    "status:\n  allocation:\n    devices:\n      results:\n"
    "      - {request: r, driver: gpu.example.com, pool: p, device: sh0}\n";

static void test_exclusive_shared(void)
{
    struct alloc_state *st = state_from(shared);
    struct outcome o;
#define SMALL(n)                                                                                   \
    CLAIM_HEAD(n)                                                                                  \
    "    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n        "         \
    "capacity: {requests: {cores: 10}}\n"
    is_int(claim_on(st, SMALL("small1"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "allocated");
    is_str(res_str(o.allocation, 0, "device"), "ex1",
           "a shareable device held exclusively (no shareID) cannot be shared");
    ok(strcmp(res_str(o.allocation, 0, "shareID"), "") == 0, "ex1 is exclusive: no shareID");
    ok(json_object_get(
           json_array_get(json_object_get(json_object_get(o.allocation, "devices"), "results"), 0),
           "consumedCapacity") == NULL,
       "exclusive: no consumedCapacity");
    outcome_fini(&o);
    is_int(claim_on(st, SMALL("small2"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "nothing left");
    like_str(o.why, "sh0: DeviceExclusive held exclusively by claim ns/old-exclusive",
             "DeviceExclusive");
    like_str(o.why, "ex1: DeviceInUse allocated to claim ns/small1", "DeviceInUse");
    outcome_fini(&o);
    is_int(alloc_state_release_claim(st, "ns", "old-exclusive"), 0, "release the exclusive holder");
    is_int(claim_on(st, SMALL("small3"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "now shareable");
    is_str(res_str(o.allocation, 0, "device"), "sh0", "on sh0");
    is_str(consumed(o.allocation, 0, "cores"), "10", "cores 10");
    is_str(consumed(o.allocation, 0, "memory"), "16Gi",
           "memory: unrequested, no policy: the whole value");
    outcome_fini(&o);
    is_int(claim_on(st, SMALL("small4"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "memory is all taken by the first share");
    like_str(o.why, "InsufficientCapacity memory: need 16Gi, free 0", "explained");
    outcome_fini(&o);
    is_int(alloc_state_release_claim(st, "ns", "small3"), 0, "release");
    /* One request does not take the same shareable device twice (the search moves on after
     * the device it picked, as upstream); two requests of one claim may share it. */
    is_int(claim_on(st,
                    CLAIM_HEAD("two") "    requests:\n    - name: r\n      exactly:\n        "
                                      "deviceClassName: gpu\n        count: 2\n"
                                      "        capacity: {requests: {cores: 40, memory: 8Gi}}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           ALLOC_UNSCHEDULABLE, "count 2 cannot be two shares of sh0");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("pair") "    requests:\n    - name: a\n      exactly:\n        "
                                       "deviceClassName: gpu\n"
                                       "        capacity: {requests: {cores: 40, memory: 8Gi}}\n"
                                       "    - name: b\n      exactly:\n        "
                                       "deviceClassName: gpu\n"
                                       "        capacity: {requests: {cores: 40, memory: 8Gi}}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "two requests on one shareable device");
    is_str(res_str(o.allocation, 0, "device"), "sh0", "a: share on sh0");
    is_str(res_str(o.allocation, 1, "device"), "sh0", "b: share on sh0 too");
    ok(strcmp(res_str(o.allocation, 0, "shareID"), res_str(o.allocation, 1, "shareID")) != 0,
       "each share has its own shareID");
    is_str(consumed(o.allocation, 1, "cores"), "40", "b consumes its own 40 cores");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_shared_blocks_exclusive(void)
{
    /* The device was shared (allocations with shareID) and is now published without
     * allowMultipleAllocations: an exclusive allocation must wait for the shares to go. */
    const char *fx = CLASS
        "kind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 1},"
        " devices: [{name: d0, capacity: {cores: {value: '100'}}}]}\n---\n"
        "kind: ResourceClaim\nmetadata: {name: share, namespace: ns}\n"
        "status: {allocation: {devices: {results: [{request: r, driver: gpu.example.com, pool: p,"
        " device: d0, shareID: 11111111-2222-4333-8444-555555555555, consumedCapacity: {cores: "
        "'10'}}]}}}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    is_int(claim_on(st, ONE_REQ("excl"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "a shared allocation blocks an exclusive one");
    like_str(o.why, "d0: DeviceInUse allocated to claim ns/share", "explained as DeviceInUse");
    outcome_fini(&o);
    is_int(alloc_state_release_claim(st, "ns", "share"), 0, "the share goes");
    is_int(claim_on(st, ONE_REQ("excl"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "then the exclusive allocation fits");
    ok(strcmp(res_str(o.allocation, 0, "shareID"), "") == 0, "without shareID");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_step_limit(void)
{
    struct alloc_state *st = state_from(eight);
    json_t *c = obj_from(CLAIM_HEAD("big") "    requests:\n    - name: r\n      exactly: "
                                           "{deviceClassName: gpu, count: 3}\n    constraints:\n"
                                           "    - {matchAttribute: gpu.example.com/model}\n");
    struct alloc_options opt = {.node = "n1", .step_limit = 5};
    struct alloc_explanation *why = NULL;
    json_t *al = NULL;
    struct gs_error err = {0};
    is_int(alloc_claim(st, c, &opt, &al, &why, &err), ALLOC_SEARCH_LIMIT,
           "a search over its step limit gives up (as kube-scheduler's filter times out)");
    is_str(err.msg, "claim ns/big: search stopped after 5 steps without an answer", "message");
    is_str(alloc_explanation_reason(why), "SearchLimit", "reason SearchLimit");
    alloc_explanation_free(why);
    opt.step_limit = 0;
    is_int(alloc_claim(st, c, &opt, &al, NULL, &err), ALLOC_UNSCHEDULABLE,
           "with the default limit the search finishes: no three devices share a model");
    json_decref(c);
    alloc_state_free(st);
}

static void test_errors_and_limits(void)
{
    struct alloc_state *st = state_from(eight);
    struct outcome o;
    is_int(
        claim_on(
            st,
            CLAIM_HEAD(
                "noclass") "    requests:\n    - name: r\n      exactly: {deviceClassName: nope}\n",
            "n1", ALLOC_POLICY_FIRST_FIT, &o),
        -ENOENT, "unknown DeviceClass");
    like_str(o.err, "could not retrieve device class nope", "error names the class");
    like_str(o.why, "request r: ClassNotFound: device class nope not found", "ClassNotFound");
    outcome_fini(&o);
    is_int(claim_on(
               st,
               CLAIM_HEAD("celerr") "    requests:\n    - name: r\n      exactly:\n        "
                                    "deviceClassName: gpu\n"
                                    "        selectors: [{cel: {expression: "
                                    "'device.attributes[\"gpu.example.com\"].nosuch == \"x\"'}}]\n",
               "n1", ALLOC_POLICY_FIRST_FIT, &o),
           -EINVAL, "a CEL runtime error stops allocation (an error, not unschedulable)");
    like_str(o.err,
             "claim ns/celerr: selector #0 on device gpu.example.com/p/g0: CEL runtime error: no "
             "such key",
             "error names claim and selector");
    is_str(json_string_value(json_object_get(o.why_json, "reason")), "CelError",
           "claim reason CelError");
    like_str(o.why, "CelError", "device reason CelError");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("toomany") "    requests:\n    - name: r\n      exactly: "
                                          "{deviceClassName: gpu, count: 33}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           -EINVAL, "count above 32 is refused");
    like_str(
        o.err,
        "ResourceClaim toomany: spec.devices.requests[0].exactly.count: 33 is not between 1 and 32",
        "error names object, field and value");
    outcome_fini(&o);
    char big[8192];
    int n = snprintf(big, sizeof(big), CLAIM_HEAD("reqs") "    requests:\n");
    for (int i = 0; i < 33; i++)
        n += snprintf(big + n, sizeof(big) - (size_t)n,
                      "    - name: r%d\n      exactly: {deviceClassName: gpu}\n", i);
    is_int(claim_on(st, big, "n1", ALLOC_POLICY_FIRST_FIT, &o), -EINVAL, "33 requests are refused");
    like_str(o.err, "33 requests, more than 32", "error says the limit");
    outcome_fini(&o);
    is_int(
        claim_on(st,
                 CLAIM_HEAD(
                     "badq") "    requests:\n    - name: r\n      exactly:\n        "
                             "deviceClassName: gpu\n        capacity: {requests: {memory: 4Qi}}\n",
                 "n1", ALLOC_POLICY_FIRST_FIT, &o),
        -EINVAL, "bad quantity in a claim");
    like_str(o.err,
             "ResourceClaim badq: spec.devices.requests[0].exactly.capacity.requests.memory: "
             "\"4Qi\" is not a quantity",
             "error names the field and value");
    outcome_fini(&o);
    alloc_state_free(st);

    /* 32 devices per claim at most: 16 + 17 on a 40-device node. */
    char fx[16384];
    n = snprintf(fx, sizeof(fx),
                 CLASS
                 "kind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: gpu.example.com\n  "
                 "nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n  devices:\n");
    for (int i = 0; i < 40; i++)
        n += snprintf(fx + n, sizeof(fx) - (size_t)n, "  - {name: d%d}\n", i);
    st = state_from(fx);
    is_int(claim_on(st,
                    CLAIM_HEAD(
                        "a32") "    requests:\n    - name: a\n      exactly: {deviceClassName: "
                               "gpu, count: 16}\n"
                               "    - name: b\n      exactly: {deviceClassName: gpu, count: 16}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "32 devices in one claim are allowed");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD(
                        "a33") "    requests:\n    - name: a\n      exactly: {deviceClassName: "
                               "gpu, count: 1}\n"
                               "    - name: b\n      exactly: {deviceClassName: gpu, count: 32}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           -EINVAL, "33 devices in one claim are an error (kube-scheduler's Allocate)");
    like_str(o.err, "claim ns/a33: number of requested devices 33 exceeds the claim limit of 32",
             "the message gives the count and the limit");
    like_str(o.why, "InvalidClaim", "explained as InvalidClaim");
    outcome_fini(&o);
    alloc_state_free(st);

    /* Taints. */
    st = state_from(
        CLASS
        "kind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 1},"
        " devices: [{name: t0, taints: [{key: maintenance, value: 'yes', effect: "
        "NoSchedule}]}]}\n");
    is_int(
        claim_on(
            st,
            CLAIM_HEAD("t") "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n",
            "n1", ALLOC_POLICY_FIRST_FIT, &o),
        ALLOC_UNSCHEDULABLE, "a tainted device needs a toleration");
    like_str(o.why, "DeviceTainted taint maintenance is not tolerated", "DeviceTainted");
    outcome_fini(&o);
    is_int(
        claim_on(
            st,
            CLAIM_HEAD(
                "t") "    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n"
                     "        tolerations: [{key: maintenance, operator: Exists}]\n",
            "n1", ALLOC_POLICY_FIRST_FIT, &o),
        0, "tolerated");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_bad_objects(void)
{
    struct alloc_state *st = alloc_state_new();
    struct gs_error err = {0};
    json_t *o =
        obj_from("kind: ResourceSlice\nmetadata: {name: bad}\n"
                 "spec: {driver: d, nodeName: node-x, pool: {name: p, resourceSliceCount: 1},"
                 " devices: [{name: x, capacity: {memory: {value: 15Qi}}}]}\n");
    is_int(alloc_state_add_object(st, o, &err), -EINVAL, "bad capacity value refused");
    like_str(err.msg,
             "ResourceSlice bad: spec.devices[0].capacity.memory.value: \"15Qi\" is not a quantity",
             "message names object, field and value");
    json_decref(o);
    o = obj_from("kind: ResourceSlice\nmetadata: {name: two}\n"
                 "spec: {driver: d, nodeName: node-x, allNodes: true, pool: {name: p, "
                 "resourceSliceCount: 1}}\n");
    is_int(alloc_state_add_object(st, o, &err), -EINVAL, "two node selections refused");
    like_str(err.msg,
             "ResourceSlice two: spec: exactly one of nodeName, nodeSelector, allNodes, "
             "perDeviceNodeSelection",
             "message names the rule");
    json_decref(o);
    o = obj_from("kind: ResourceSlice\nmetadata: {name: terms}\n"
                 "spec: {driver: d, pool: {name: p, resourceSliceCount: 1}, nodeSelector: "
                 "{nodeSelectorTerms:"
                 " [{matchFields: [{key: metadata.name, operator: In, values: [a]}]},"
                 " {matchFields: [{key: metadata.name, operator: In, values: [b]}]}]}}\n");
    is_int(alloc_state_add_object(st, o, &err), -EINVAL,
           "two node selector terms refused (v1 validation)");
    is_str(err.msg,
           "ResourceSlice terms: spec.nodeSelector: must have exactly one node selector term",
           "message names the field");
    json_decref(o);
    o = obj_from("kind: Pod\nmetadata: {name: p}\n");
    is_int(alloc_state_add_object(st, o, &err), -EINVAL, "unknown kind refused");
    json_decref(o);
    alloc_state_free(st);
}

static void test_selector_operators(void)
{
    const char *fx =
        CLASS "kind: Node\nmetadata: {name: n1, labels: {zone: z1}}\n---\n"
              "kind: ResourceSlice\nmetadata: {name: notin}\n"
              "spec: {driver: gpu.example.com, pool: {name: a-notin, "
              "resourceSliceCount: 1}, devices: [{name: notin0}],"
              " nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: zone, "
              "operator: NotIn, values: [z1]}]}]}}\n---\n"
              "kind: ResourceSlice\nmetadata: {name: dne}\n"
              "spec: {driver: gpu.example.com, pool: {name: b-dne, "
              "resourceSliceCount: 1}, devices: [{name: dne0}],"
              " nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: zone, "
              "operator: DoesNotExist}]}]}}\n---\n"
              "kind: ResourceSlice\nmetadata: {name: field}\n"
              "spec: {driver: gpu.example.com, pool: {name: c-field, "
              "resourceSliceCount: 1}, devices: [{name: field0}],"
              " nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: "
              "metadata.name, operator: In, values: [n9]}]}]}}\n"
              "---\nkind: ResourceSlice\nmetadata: {name: exists}\n"
              "spec: {driver: gpu.example.com, pool: {name: d-exists, resourceSliceCount: 1},"
              " devices: [{name: exists0}], nodeSelector: {nodeSelectorTerms: [{matchExpressions:"
              " [{key: zone, operator: Exists}]}]}}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
#define ONE(n) CLAIM_HEAD(n) "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n"
    is_int(claim_on(st, ONE("o1"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "n1: NotIn and DoesNotExist exclude it");
    is_str(res_str(o.allocation, 0, "device"), "exists0", "zone Exists matches n1");
    outcome_fini(&o);
    is_int(claim_on(st, ONE("o2"), "n9", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "n9 (no Node object, no labels)");
    is_str(res_str(o.allocation, 0, "device"), "notin0", "NotIn matches a node without the label");
    outcome_fini(&o);
    is_int(claim_on(st, ONE("o3"), "n9", ALLOC_POLICY_FIRST_FIT, &o), 0, "n9 again");
    is_str(res_str(o.allocation, 0, "device"), "dne0", "DoesNotExist matches it too");
    outcome_fini(&o);
    is_int(claim_on(st, ONE("o4"), "n9", ALLOC_POLICY_FIRST_FIT, &o), 0, "n9 a third time");
    is_str(res_str(o.allocation, 0, "device"), "field0", "matchFields metadata.name In [n9]");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_state_and_spec(void)
{
    struct alloc_state *st = state_from(eight);
    struct gs_error err = {0};
    /* A slice with the same name replaces the earlier one. */
    json_t *o = obj_from(
        "kind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 1},"
        " devices: [{name: only}]}\n");
    is_int(alloc_state_add_object(st, o, &err), 0, "replace slice s");
    json_decref(o);
    struct outcome r;
    is_int(claim_on(st,
                    CLAIM_HEAD("x") "    requests:\n    - name: r\n      exactly: "
                                    "{deviceClassName: gpu, count: 2}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &r),
           ALLOC_UNSCHEDULABLE, "the replaced slice has one device left");
    outcome_fini(&r);
    json_t *bad = obj_from(
        CLAIM_HEAD("dup") "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n"
                          "    - name: r\n      exactly: {deviceClassName: gpu}\n");
    ok(alloc_claim_spec_new(bad, &err) == NULL, "duplicate request names refused");
    is_str(err.msg,
           "ResourceClaim dup: spec.devices.requests[1].name: duplicate request name \"r\"",
           "message names the field");
    json_decref(bad);
    bad = obj_from(
        CLAIM_HEAD("both") "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n"
                           "      firstAvailable: [{name: a, deviceClassName: gpu}]\n");
    ok(alloc_claim_spec_new(bad, &err) == NULL, "exactly and firstAvailable together refused");
    like_str(err.msg,
             "spec.devices.requests[0]: exactly one of exactly, firstAvailable must be set",
             "message");
    json_decref(bad);
    json_t *good = obj_from(
        CLAIM_HEAD("good") "    requests:\n    - name: r\n      exactly: {deviceClassName: gpu}\n");
    struct alloc_claim_spec *spec = alloc_claim_spec_new(good, &err);
    json_decref(good);
    ok(spec != NULL, "a decoded claim outlives its JSON");
    struct alloc_options opt = {.node = "n1"};
    json_t *al = NULL;
    is_int(alloc_claim_spec_allocate(st, spec, &opt, &al, NULL, &err), 0,
           "allocated from the spec");
    is_str(res_str(al, 0, "device"), "only", "on the only device");
    json_decref(al);
    is_int(alloc_claim_spec_allocate(st, spec, &opt, &al, NULL, &err), 0,
           "allocating the same claim again replaces its earlier allocation");
    is_uint(alloc_state_claim_count(st), 1, "still one claim in the state");
    json_decref(al);
    opt.node = NULL;
    is_int(alloc_claim_spec_allocate(st, spec, &opt, &al, NULL, &err), -EINVAL,
           "a node is required");
    alloc_claim_spec_release(spec);

    is_int(alloc_state_release_claim(st, "ns", "good"), 0, "release");
    /* A class whose selector does not compile stops allocation with CelError. */
    o = obj_from("kind: DeviceClass\nmetadata: {name: broken}\nspec: {selectors: [{cel: "
                 "{expression: 'device.driver =='}}]}\n");
    is_int(alloc_state_add_object(st, o, &err), 0, "class added (compiled lazily, as upstream)");
    json_decref(o);
    is_int(claim_on(
               st,
               CLAIM_HEAD(
                   "cc") "    requests:\n    - name: r\n      exactly: {deviceClassName: broken}\n",
               "n1", ALLOC_POLICY_FIRST_FIT, &r),
           -EINVAL, "CEL compile error is an error");
    like_str(r.err,
             "class broken: selector #0: CEL compile error: ", "error names class and selector");
    is_str(json_string_value(json_object_get(r.why_json, "reason")), "CelError", "reason CelError");
    outcome_fini(&r);
    alloc_state_free(st);
}

static void test_pool_across_nodes(void)
{
    /* Pool "wide" has one slice per node: complete although n1 sees only its own slice. Pool
     * "moving" has a newer generation published for another node: obsolete, ignored. */
    const char *fx = CLASS "kind: ResourceSlice\nmetadata: {name: wide-n1}\n"
                           "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: wide, "
                           "generation: 1, resourceSliceCount: 2},"
                           " devices: [{name: w1}]}\n---\n"
                           "kind: ResourceSlice\nmetadata: {name: wide-n2}\n"
                           "spec: {driver: gpu.example.com, nodeName: n2, pool: {name: wide, "
                           "generation: 1, resourceSliceCount: 2},"
                           " devices: [{name: w2}]}\n---\n"
                           "kind: ResourceSlice\nmetadata: {name: moving-old}\n"
                           "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: a-moving, "
                           "generation: 1, resourceSliceCount: 2},"
                           " devices: [{name: m-old}]}\n---\n"
                           "kind: ResourceSlice\nmetadata: {name: moving-new}\n"
                           "spec: {driver: gpu.example.com, nodeName: n2, pool: {name: a-moving, "
                           "generation: 2, resourceSliceCount: 2},"
                           " devices: [{name: m-new}]}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    is_int(claim_on(st, ONE_REQ("w"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "a pool spread over nodes is complete");
    is_str(res_str(o.allocation, 0, "device"), "w1", "w1 (a-moving's old generation is ignored)");
    outcome_fini(&o);
    is_int(claim_on(st, ONE_REQ("x"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "nothing else on n1");
    ok(strstr(o.why, "m-old") == NULL, "the obsolete pool is not even a candidate");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_pod_claims_together(void)
{
    /* Sequentially, "any" takes d0 and "feature" finds nothing; searched together, "any"
     * backtracks to d1 and "feature" gets d0 - as kube-scheduler does for a pod's claims. */
    const char *fx = CLASS
        "kind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 1},"
        " devices: [{name: d0, attributes: {x: {bool: true}}}, {name: d1}]}\n";
    struct alloc_state *st = state_from(fx);
    json_t *a = obj_from(ONE_REQ("any"));
    json_t *b = obj_from(CLAIM_HEAD(
        "feature") "    requests:\n    - name: r\n      exactly:\n"
                   "        deviceClassName: gpu\n        selectors: "
                   "[{cel: {expression: '\"x\" in device.attributes[\"gpu.example.com\"]'}}]\n");
    struct gs_error err = {0};
    struct alloc_claim_spec *specs[2] = {alloc_claim_spec_new(a, &err),
                                         alloc_claim_spec_new(b, &err)};
    json_t *al[2] = {NULL, NULL};
    struct alloc_explanation *why[2] = {NULL, NULL};
    struct alloc_options opt = {.node = "n1"};
    is_int(alloc_claims_allocate(st, (const struct alloc_claim_spec *const *)specs, 2, &opt, al,
                                 why, &err),
           0, "a pod's two claims fit together");
    is_str(res_str(al[0], 0, "device"), "d1", "the first claim backtracks to d1");
    is_str(res_str(al[1], 0, "device"), "d0", "the second gets d0, the only one with x");
    is_uint(alloc_state_claim_count(st), 2, "both committed");
    json_decref(al[0]);
    json_decref(al[1]);
    /* All or nothing: a third claim with the second again cannot fit; nothing is committed. */
    json_t *c = obj_from(ONE_REQ("third"));
    struct alloc_claim_spec *more[2] = {alloc_claim_spec_new(c, &err), specs[1]};
    is_int(alloc_state_release_claim(st, "ns", "any"), 0, "free d1");
    is_int(alloc_claims_allocate(st, (const struct alloc_claim_spec *const *)more, 2, &opt, al, why,
                                 &err),
           0, "re-allocating 'feature' together with 'third'");
    is_str(res_str(al[0], 0, "device"), "d1", "third: d1");
    is_str(res_str(al[1], 0, "device"), "d0", "feature keeps d0 (its own old allocation is free)");
    json_decref(al[0]);
    json_decref(al[1]);
    json_t *d = obj_from(ONE_REQ("fourth"));
    struct alloc_claim_spec *none[2] = {alloc_claim_spec_new(d, &err), specs[0]};
    is_int(alloc_claims_allocate(st, (const struct alloc_claim_spec *const *)none, 2, &opt, al, why,
                                 &err),
           ALLOC_UNSCHEDULABLE, "no room for two more claims");
    like_str(err.msg, "claims ns/fourth and 1 more: cannot allocate them together on node n1",
             "message names the group");
    ok(why[0] && why[1], "each claim is explained");
    is_uint(alloc_state_claim_count(st), 2, "nothing committed");
    alloc_explanation_free(why[0]);
    alloc_explanation_free(why[1]);
    alloc_claim_spec_release(none[0]);
    alloc_claim_spec_release(more[0]);
    alloc_claim_spec_release(specs[0]);
    alloc_claim_spec_release(specs[1]);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    alloc_state_free(st);
}

static void test_empty_claim(void)
{
    struct alloc_state *st = state_from(eight);
    struct outcome o;
    is_int(claim_on(st, CLAIM_HEAD("empty") "    requests: []\n", "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "a claim without requests is allocated (nothing to allocate)");
    char *js = json_dumps(o.allocation, JSON_COMPACT);
    is_str(js, "{\"devices\":{}}", "its allocation has no results and no node selector");
    free(js);
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_counters(void)
{
    /* A MIG-like GPU: the counter set lives in its own slice of the pool. */
    const char *fx = CLASS
        "kind: ResourceSlice\nmetadata: {name: counters}\n"
        "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: 2},"
        " sharedCounters: [{name: gpu-0, counters: {memory: {value: 40Gi}, slices: {value: "
        "'7'}}}]}\n"
        "---\nkind: ResourceSlice\nmetadata: {name: devices}\n"
        "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: "
        "2}\n"
        "  devices:\n"
        "  - {name: full, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}, "
        "slices: {value: '7'}}}]}\n"
        "  - {name: mig-3g, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: "
        "20Gi}, slices: {value: '3'}}}]}\n"
        "  - {name: mig-4g, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: "
        "20Gi}, slices: {value: '4'}}}]}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    is_int(claim_on(st, ONE_REQ("a"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "the full GPU");
    is_str(res_str(o.allocation, 0, "device"), "full", "first device: full");
    outcome_fini(&o);
    is_int(claim_on(st, ONE_REQ("b"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "no partition fits beside the full GPU");
    like_str(o.why, "gpu.example.com/p/mig-3g: InsufficientCounters gpu-0/", "counters explained");
    like_str(o.why, "need 20Gi, free 0", "need and free");
    outcome_fini(&o);
    is_int(alloc_state_release_claim(st, "ns", "a"), 0, "release the full GPU");
    is_int(claim_on(st,
                    CLAIM_HEAD("two") "    requests:\n    - name: r\n      exactly: "
                                      "{deviceClassName: gpu, count: 2}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "two partitions in one claim");
    is_str(res_str(o.allocation, 0, "device"), "mig-3g", "full would leave no room: mig-3g");
    is_str(res_str(o.allocation, 1, "device"), "mig-4g", "and mig-4g (3 + 4 slices = 7)");
    outcome_fini(&o);
    alloc_state_free(st);
}

/* Two shareable GPUs of 100 cores. */
static const char *two_shared = CLASS
    "kind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - name: g0\n    allowMultipleAllocations: true\n    capacity: {cores: {value: '100'}}\n"
    "  - name: g1\n    allowMultipleAllocations: true\n    capacity: {cores: {value: '100'}}\n";

#define CORES(n, c)                                                                                \
    CLAIM_HEAD(n)                                                                                  \
    "    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n        "         \
    "capacity: {requests: {cores: " c "}}\n"

static int trial_on(struct alloc_state *st, const char *claim_yaml, json_t **allocation)
{
    json_t *claim = obj_from(claim_yaml);
    struct alloc_options opt = {.node = "n1", .trial = true};
    int r = alloc_claim(st, claim, &opt, allocation, NULL, NULL);
    json_decref(claim);
    return r;
}

/* Trials leave the state alone; the per-node free-capacity summary follows every commit and
 * release (a stale summary would refuse the 40-core claim or accept a 60-core one). */
static void test_trial_and_summary(void)
{
    struct alloc_state *st = state_from(two_shared);
    struct outcome o;
    json_t *a = NULL;
    is_int(trial_on(st, CORES("t1", "60"), &a), 0, "trial: fits");
    is_str(res_str(a, 0, "device"), "g0", "trial: on g0");
    is_str(consumed(a, 0, "cores"), "60", "trial: consumedCapacity");
    is_str(res_str(a, 0, "shareID"), "", "trial: no shareID");
    json_decref(a);
    is_int((int)alloc_state_claim_count(st), 0, "trial: nothing committed");
    is_int(trial_on(st, CORES("t1", "60"), &a), 0, "trial again: still g0");
    is_str(res_str(a, 0, "device"), "g0", "the first trial took nothing");
    json_decref(a);
    is_int(claim_on(st, CORES("c0", "60"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "60 on g0");
    outcome_fini(&o);
    is_int(claim_on(st, CORES("c1", "60"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "60 on g1");
    is_str(res_str(o.allocation, 0, "device"), "g1", "g1");
    outcome_fini(&o);
    is_int(trial_on(st, CORES("t2", "60"), &a), ALLOC_UNSCHEDULABLE, "no GPU has 60 free");
    is_int(claim_on(st, CORES("c2", "60"), "n1", ALLOC_POLICY_FIRST_FIT, &o), ALLOC_UNSCHEDULABLE,
           "pre-checked away");
    like_str(o.why, "InsufficientCapacity cores: need 60, free 40", "still explained per device");
    outcome_fini(&o);
    is_int(trial_on(st, CORES("t3", "40"), &a), 0, "40 still fits");
    is_str(res_str(a, 0, "device"), "g0", "on g0");
    json_decref(a);
    is_int(alloc_state_release_claim(st, "ns", "c1"), 0, "release g1's share");
    is_int(trial_on(st, CORES("t4", "60"), &a), 0, "60 fits again after the release");
    is_str(res_str(a, 0, "device"), "g1", "on g1");
    json_decref(a);
    is_int(claim_on(st, CORES("c0", "100"), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0,
           "re-allocating c0 counts its own share as free");
    is_str(res_str(o.allocation, 0, "device"), "g0", "100 cores on g0");
    outcome_fini(&o);
    alloc_state_free(st);
}

int main(void)
{
    tap_plan_auto();
    test_pool_order();
    test_incomplete_invalid();
    test_node_matching();
    test_requests();
    test_constraints();
    test_exclusive_shared();
    test_errors_and_limits();
    test_bad_objects();
    test_selector_operators();
    test_state_and_spec();
    test_counters();
    test_pool_across_nodes();
    test_pod_claims_together();
    test_empty_claim();
    test_shared_blocks_exclusive();
    test_step_limit();
    test_trial_and_summary();
    return tap_done();
}
