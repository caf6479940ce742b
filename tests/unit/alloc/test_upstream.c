/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cases where gpuslice's allocator had to be brought in line with kube-scheduler's
 * (k8s.io/dynamic-resource-allocation/structured/internal/experimental, issue 25 section 3):
 * result tolerations and class config per class, admin access across a pod's claims, counter
 * consumption validated over the whole pool, allocationMode All with capacity requests,
 * firstAvailable and the 32-results limit.
 */
#include "helpers.h"

#define CLASS                                                                                      \
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\n"                   \
    "spec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n"         \
    "  config:\n  - opaque: {driver: gpu.example.com, parameters: {mode: class}}\n---\n"

#define CLASS2                                                                                     \
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu2}\n"                  \
    "spec:\n  config:\n  - opaque: {driver: gpu.example.com, parameters: {mode: two}}\n---\n"

#define CLAIM_HEAD(name)                                                                           \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: " name                  \
    ", namespace: ns}\nspec:\n  devices:\n"

static const char *four = CLASS CLASS2
    "kind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n"
    "  devices:\n  - {name: g0}\n  - {name: g1}\n  - {name: g2}\n  - {name: g3}\n";

static char *dumps(const json_t *j)
{
    return j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : strdup("null");
}

/* Allocate(): every result carries its request's tolerations; each class's config is one entry
 * naming every request that used the class. */
static void test_tolerations_and_class_config(void)
{
    struct alloc_state *st = state_from(four);
    struct outcome o;
    is_int(claim_on(st,
                    CLAIM_HEAD("cfg") "    requests:\n"
                                      "    - name: a\n      exactly:\n        deviceClassName: "
                                      "gpu\n        tolerations: [{key: k, operator: Exists}]\n"
                                      "    - name: b\n      exactly: {deviceClassName: gpu}\n"
                                      "    - name: c\n      firstAvailable:\n"
                                      "      - name: x\n        deviceClassName: gpu\n"
                                      "        tolerations: [{key: other, operator: Exists}]\n"
                                      "    - name: d\n      exactly: {deviceClassName: gpu2}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "four requests, two classes");
    const json_t *res = json_object_get(json_object_get(o.allocation, "devices"), "results");
    char *t0 = dumps(json_object_get(json_array_get(res, 0), "tolerations"));
    is_str(t0, "[{\"key\":\"k\",\"operator\":\"Exists\"}]", "result a carries a's tolerations");
    free(t0);
    ok(json_object_get(json_array_get(res, 1), "tolerations") == NULL,
       "result b: no tolerations, none written");
    char *t2 = dumps(json_object_get(json_array_get(res, 2), "tolerations"));
    is_str(t2, "[{\"key\":\"other\",\"operator\":\"Exists\"}]",
           "result c/x carries the subrequest's tolerations");
    free(t2);
    char *cfg = dumps(json_object_get(json_object_get(o.allocation, "devices"), "config"));
    is_str(cfg,
           "[{\"opaque\":{\"driver\":\"gpu.example.com\",\"parameters\":{\"mode\":\"class\"}},"
           "\"requests\":[\"a\",\"b\",\"c/x\"],\"source\":\"FromClass\"},"
           "{\"opaque\":{\"driver\":\"gpu.example.com\",\"parameters\":{\"mode\":\"two\"}},"
           "\"requests\":[\"d\"],\"source\":\"FromClass\"}]",
           "one config entry per class, naming the requests that used it");
    free(cfg);
    outcome_fini(&o);
    alloc_state_free(st);
}

/* allocateOne: an admin-access request only avoids devices its own claim is getting; another
 * claim of the same pod holding the device is no conflict. */
static void test_admin_across_claims(void)
{
    const char *fx = CLASS "kind: ResourceSlice\nmetadata: {name: s}\n"
                           "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, "
                           "resourceSliceCount: 1}, devices: [{name: only}]}\n";
    struct alloc_state *st = state_from(fx);
    json_t *a = obj_from(CLAIM_HEAD("user") "    requests:\n    - name: r\n      exactly: "
                                            "{deviceClassName: gpu}\n");
    json_t *b = obj_from(CLAIM_HEAD("admin") "    requests:\n    - name: r\n      exactly: "
                                             "{deviceClassName: gpu, adminAccess: true}\n");
    struct gs_error err = {0};
    struct alloc_claim_spec *specs[2] = {alloc_claim_spec_new(a, &err),
                                         alloc_claim_spec_new(b, &err)};
    json_t *al[2] = {NULL, NULL};
    struct alloc_explanation *why[2] = {NULL, NULL};
    struct alloc_options opt = {.node = "n1"};
    is_int(alloc_claims_allocate(st, (const struct alloc_claim_spec *const *)specs, 2, &opt, al,
                                 why, &err),
           0, "a pod's normal claim and admin claim share the one device");
    is_str(res_str(al[0], 0, "device"), "only", "the normal claim gets it");
    is_str(res_str(al[1], 0, "device"), "only", "the admin claim gets it too");
    ok(json_is_true(json_object_get(
           json_array_get(json_object_get(json_object_get(al[1], "devices"), "results"), 0),
           "adminAccess")),
       "with adminAccess");
    json_decref(al[0]);
    json_decref(al[1]);
    alloc_explanation_free(why[0]);
    alloc_explanation_free(why[1]);
    /* One claim asking twice for the device, once with admin access: still a conflict. */
    struct outcome o;
    is_int(claim_on(st,
                    CLAIM_HEAD("self") "    requests:\n    - name: r\n      exactly: "
                                       "{deviceClassName: gpu, adminAccess: true}\n"
                                       "    - name: s\n      exactly: "
                                       "{deviceClassName: gpu, adminAccess: true}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           ALLOC_UNSCHEDULABLE, "an admin request does not take a device of its own claim twice");
    outcome_fini(&o);
    alloc_claim_spec_release(specs[0]);
    alloc_claim_spec_release(specs[1]);
    json_decref(a);
    json_decref(b);
    alloc_state_free(st);
}

/* buildPool / validateDeviceCounterConsumption: a slice for another node consuming from a
 * counter set the pool lacks makes the whole pool invalid. */
static void test_unknown_counter_set(void)
{
    const char *fx =
        CLASS "kind: ResourceSlice\nmetadata: {name: counters}\n"
              "spec: {driver: gpu.example.com, allNodes: true, pool: {name: p, "
              "resourceSliceCount: 3}, sharedCounters: [{name: gpu-0, counters: {memory: "
              "{value: 40Gi}}}]}\n"
              "---\nkind: ResourceSlice\nmetadata: {name: n1}\n"
              "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: p, resourceSliceCount: "
              "3}, devices: [{name: d1, consumesCounters: [{counterSet: gpu-0, counters: "
              "{memory: {value: 10Gi}}}]}]}\n"
              "---\nkind: ResourceSlice\nmetadata: {name: n2}\n"
              "spec: {driver: gpu.example.com, nodeName: n2, pool: {name: p, resourceSliceCount: "
              "3}, devices: [{name: d2, consumesCounters: [{counterSet: gpu-9, counters: "
              "{memory: {value: 10Gi}}}]}]}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    is_int(claim_on(st,
                    CLAIM_HEAD("one") "    requests:\n    - name: r\n      exactly: "
                                      "{deviceClassName: gpu}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           ALLOC_UNSCHEDULABLE, "d1 on n1 is not allocated: its pool is invalid");
    like_str(o.why, "PoolInvalid", "explained as PoolInvalid");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("all") "    requests:\n    - name: r\n      exactly: "
                                      "{deviceClassName: gpu, allocationMode: All}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           -EINVAL, "All with the invalid pool on the node is an error");
    like_str(o.err, "is currently invalid", "message says the pool is invalid");
    outcome_fini(&o);
    alloc_state_free(st);
}

/* validateDeviceRequest, mode All: with capacity requests, devices that lack the capacity, are
 * too small or have too little left are left out; the others are allocated. */
static void test_all_with_capacity(void)
{
    const char *fx =
        CLASS "kind: ResourceSlice\nmetadata: {name: s}\n"
              "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, "
              "resourceSliceCount: 1}\n  devices:\n"
              "  - name: big\n    attributes: {full: {bool: true}}\n    allowMultipleAllocations: "
              "true\n    capacity: {cores: {value: "
              "'100'}}\n"
              "  - name: small\n    allowMultipleAllocations: true\n    capacity: {cores: "
              "{value: '20'}}\n"
              "  - name: none\n    allowMultipleAllocations: true\n    capacity: {memory: "
              "{value: 1Gi}}\n"
              "  - name: used\n    attributes: {full: {bool: true}}\n    allowMultipleAllocations: "
              "true\n    capacity: {cores: {value: "
              "'100'}}\n"
              "  - name: big2\n    attributes: {full: {bool: true}}\n    allowMultipleAllocations: "
              "true\n    capacity: {cores: {value: "
              "'100'}}\n";
    struct alloc_state *st = state_from(fx);
    struct outcome o;
    /* 80 cores of "big" and of "used" in use first. */
    is_int(claim_on(st,
                    CLAIM_HEAD("fill") "    requests:\n    - name: r\n      exactly:\n"
                                       "        deviceClassName: gpu\n        selectors: [{cel: "
                                       "{expression: '\"full\" in device.attributes["
                                       "\"gpu.example.com\"]'}}]\n"
                                       "        count: 2\n        capacity: {requests: {cores: "
                                       "'80'}}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "80 cores on two 100-core devices");
    is_str(res_str(o.allocation, 1, "device"), "used", "the second is 'used'");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("all") "    requests:\n    - name: r\n      exactly:\n"
                                      "        deviceClassName: gpu\n        allocationMode: "
                                      "All\n        capacity: {requests: {cores: '30'}}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "All with 30 cores is allocated");
    is_uint(res_count(o.allocation), 1, "only one device has 30 cores free");
    is_str(res_str(o.allocation, 0, "device"), "big2",
           "big2 (big and used have 20, small 20, "
           "none has no cores)");
    is_str(consumed(o.allocation, 0, "cores"), "30", "consumes 30 cores");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("all2") "    requests:\n    - name: r\n      exactly:\n"
                                       "        deviceClassName: gpu\n        allocationMode: "
                                       "All\n        capacity: {requests: {cores: '90'}}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           ALLOC_UNSCHEDULABLE, "All with 90 cores: no device has room, nothing to allocate");
    like_str(o.why, "InsufficientDevices: asks for all devices, but none of 5 matches",
             "explained: none of the devices has room");
    outcome_fini(&o);
    alloc_state_free(st);
}

/* Many plain devices for the results-limit cases. */
static struct alloc_state *many(size_t n)
{
    char *fx = malloc(64 * n + 1024);
    int k = sprintf(fx, CLASS "kind: ResourceSlice\nmetadata: {name: s}\n"
                              "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: "
                              "p, resourceSliceCount: 1}\n  devices:\n");
    for (size_t i = 0; i < n; i++)
        k += sprintf(fx + k, "  - {name: d%02zu}\n", i);
    struct alloc_state *st = state_from(fx);
    free(fx);
    return st;
}

/* allocateOne with errAllocationResultMaxSizeExceeded: a subrequest needing more devices than
 * a result may hold is skipped; the limit unwinds the search to the nearest firstAvailable. */
static void test_first_available_limit(void)
{
    struct alloc_state *st = many(40);
    struct outcome o;
    is_int(claim_on(st,
                    CLAIM_HEAD("fa") "    requests:\n    - name: r\n      firstAvailable:\n"
                                     "      - {name: huge, deviceClassName: gpu, count: 40}\n"
                                     "      - {name: one, deviceClassName: gpu}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "a first choice of 40 devices is skipped, not refused");
    is_str(res_str(o.allocation, 0, "request"), "r/one", "the second choice is allocated");
    outcome_fini(&o);
    is_int(alloc_state_release_claim(st, "ns", "fa"), 0, "release");
    is_int(claim_on(st,
                    CLAIM_HEAD("two16") "    requests:\n"
                                        "    - name: a\n      firstAvailable:\n"
                                        "      - {name: big, deviceClassName: gpu, count: 17}\n"
                                        "      - {name: small, deviceClassName: gpu, count: 16}\n"
                                        "    - name: b\n      firstAvailable:\n"
                                        "      - {name: big, deviceClassName: gpu, count: 17}\n"
                                        "      - {name: small, deviceClassName: gpu, count: 16}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           0, "two requests of 16 through their second choices are found");
    is_uint(res_count(o.allocation), 32, "32 results");
    is_str(res_str(o.allocation, 0, "request"), "a/small", "a/small");
    is_str(res_str(o.allocation, 31, "request"), "b/small", "b/small");
    is_str(res_str(o.allocation, 31, "device"), "d31", "b's last device is d31");
    outcome_fini(&o);
    is_int(claim_on(st,
                    CLAIM_HEAD("over") "    requests:\n    - name: r\n      firstAvailable:\n"
                                       "      - {name: first, deviceClassName: gpu, count: 33}\n"
                                       "      - {name: second, deviceClassName: gpu, count: 34}\n",
                    "n1", ALLOC_POLICY_FIRST_FIT, &o),
           -EINVAL, "every choice above the limit: the claim is refused");
    like_str(o.err, "number of requested devices 33 exceeds the claim limit of 32",
             "with kube-scheduler's message");
    outcome_fini(&o);
    alloc_state_free(st);
}

int main(void)
{
    tap_plan_auto();
    test_tolerations_and_class_config();
    test_admin_across_claims();
    test_unknown_counter_set();
    test_all_with_capacity();
    test_first_available_limit();
    return tap_done();
}
