/* SPDX-License-Identifier: Apache-2.0 */
/* The lab scenario (LAB.md, seed 000): one shared T4 sliced by consumable capacity. */
#include "helpers.h"

static const char *lab =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: DeviceClass\n"
    "metadata: {name: hami-core-gpu.project-hami.io}\n"
    "spec:\n"
    "  selectors:\n"
    "  - cel: {expression: 'device.driver == \"hami-core-gpu.project-hami.io\"'}\n"
    "---\n"
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceSlice\n"
    "metadata: {name: lab-slice}\n"
    "spec:\n"
    "  driver: hami-core-gpu.project-hami.io\n"
    "  nodeName: lab-node\n"
    "  pool: {name: hami-workshop, generation: 1, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - name: hami-gpu-0\n"
    "    allowMultipleAllocations: true\n"
    "    attributes:\n"
    "      productName: {string: Tesla T4}\n"
    "      uuid: {string: GPU-0a1b2c3d}\n"
    "    capacity:\n"
    "      cores:\n"
    "        value: '100'\n"
    "        requestPolicy: {default: '100', validRange: {min: '0', max: '100', step: '1'}}\n"
    "      memory:\n"
    "        value: 15Gi\n"
    "        requestPolicy: {default: 15Gi, validRange: {min: 1Mi, max: 15Gi, step: 1Mi}}\n";

#define CLAIM_30_4                                                                                 \
    "apiVersion: resource.k8s.io/v1\n"                                                             \
    "kind: ResourceClaim\n"                                                                        \
    "metadata: {name: %s, namespace: test-dra}\n"                                                  \
    "spec:\n"                                                                                      \
    "  devices:\n"                                                                                 \
    "    requests:\n"                                                                              \
    "    - name: single-gpu\n"                                                                     \
    "      exactly:\n"                                                                             \
    "        deviceClassName: hami-core-gpu.project-hami.io\n"                                     \
    "        allocationMode: ExactCount\n"                                                         \
    "        count: 1\n"                                                                           \
    "        capacity: {requests: {cores: %s, memory: %s}}\n"

static const char *claim_plain =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaim\n"
    "metadata: {name: whole, namespace: test-dra}\n"
    "spec:\n"
    "  devices:\n"
    "    requests:\n"
    "    - name: gpu\n"
    "      exactly: {deviceClassName: hami-core-gpu.project-hami.io}\n";

static int claim_cm(struct alloc_state *st, const char *name, const char *cores, const char *mem,
                    struct outcome *o)
{
    char y[1024];
    snprintf(y, sizeof(y), CLAIM_30_4, name, cores, mem);
    return claim_on(st, y, "lab-node", ALLOC_POLICY_FIRST_FIT, o);
}

int main(void)
{
    tap_plan_auto();
    struct alloc_state *st = state_from(lab);
    struct outcome a, b, c, d;
    char share_a[64] = "";

    is_int(claim_cm(st, "single-gpu-0", "30", "4Gi", &a), 0, "30 cores / 4Gi is allocated");
    is_uint(res_count(a.allocation), 1, "one result");
    is_str(res_str(a.allocation, 0, "request"), "single-gpu", "result names the request");
    is_str(res_str(a.allocation, 0, "driver"), "hami-core-gpu.project-hami.io", "driver");
    is_str(res_str(a.allocation, 0, "pool"), "hami-workshop", "pool");
    is_str(res_str(a.allocation, 0, "device"), "hami-gpu-0", "device");
    is_str(consumed(a.allocation, 0, "cores"), "30", "consumedCapacity cores: \"30\"");
    is_str(consumed(a.allocation, 0, "memory"), "4Gi", "consumedCapacity memory: \"4Gi\"");
    ok(is_uuid(res_str(a.allocation, 0, "shareID")), "shareID is a UUID: %s",
       res_str(a.allocation, 0, "shareID"));
    snprintf(share_a, sizeof(share_a), "%s", res_str(a.allocation, 0, "shareID"));
    const json_t *nsel = json_object_get(a.allocation, "nodeSelector");
    char *ns = json_dumps(nsel, JSON_COMPACT);
    is_str(ns,
           "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
           "\"In\",\"values\":[\"lab-node\"]}]}]}",
           "nodeSelector pins the node of the slice");
    free(ns);
    ok(json_object_get(json_object_get(a.allocation, "devices"), "config") == NULL,
       "no config when neither class nor claim has one");

    is_int(claim_cm(st, "pod-tpl-1-single-gpu", "30", "4Gi", &b), 0,
           "a second identical claim is allocated");
    is_str(res_str(b.allocation, 0, "device"), "hami-gpu-0", "on the same device");
    ok(is_uuid(res_str(b.allocation, 0, "shareID")), "with a UUID shareID");
    ok(strcmp(res_str(b.allocation, 0, "shareID"), share_a) != 0, "different from the first one");
    is_str(consumed(b.allocation, 0, "cores"), "30", "consumes 30 cores too");

    is_int(claim_cm(st, "too-big", "80", "4Gi", &c), ALLOC_UNSCHEDULABLE,
           "80 cores do not fit beside 2 x 30");
    like_str(c.why, "InsufficientCapacity cores: need 80, free 40",
             "explanation names cores: need 80, free 40");
    like_str(c.why, "[CardInsufficientCore]", "with HAMi's name");
    like_str(c.why, "request single-gpu: InsufficientDevices: need 1 device, 0 of 1 usable",
             "request-level summary");
    is_str(json_string_value(json_object_get(c.why_json, "reason")), "Unschedulable",
           "claim reason Unschedulable");

    struct outcome m;
    is_int(claim_cm(st, "too-much-memory", "10", "10Gi", &m), ALLOC_UNSCHEDULABLE,
           "10Gi do not fit beside 2 x 4Gi");
    like_str(m.why, "InsufficientCapacity memory: need 10Gi, free 7Gi [CardInsufficientMemory]",
             "memory shortage maps to CardInsufficientMemory");
    outcome_fini(&m);
    is_int(claim_cm(st, "above-max", "10", "20Gi", &m), ALLOC_UNSCHEDULABLE, "20Gi is above max");
    like_str(m.why, "CapacityPolicy memory: 20Gi above max 15Gi", "policy violation explained");
    outcome_fini(&m);

    is_int(claim_on(st, claim_plain, "lab-node", ALLOC_POLICY_FIRST_FIT, &d), ALLOC_UNSCHEDULABLE,
           "a claim without capacity requests takes the defaults and does not fit");
    like_str(d.why, "InsufficientCapacity cores: need 100, free 40", "defaults: 100 cores needed");

    is_int(alloc_state_release_claim(st, "test-dra", "single-gpu-0"), 0, "release the first claim");
    is_int(alloc_state_release_claim(st, "test-dra", "single-gpu-0"), -ENOENT, "release is once");
    outcome_fini(&c);
    is_int(claim_cm(st, "now-fits", "70", "4Gi", &c), 0, "70 cores fit once 30 are released");
    is_int(alloc_state_release_claim(st, "test-dra", "pod-tpl-1-single-gpu"), 0,
           "release the second");
    is_int(alloc_state_release_claim(st, "test-dra", "now-fits"), 0, "release the third");
    outcome_fini(&d);
    is_int(claim_on(st, claim_plain, "lab-node", ALLOC_POLICY_FIRST_FIT, &d), 0,
           "on an idle device the defaults fit");
    is_str(consumed(d.allocation, 0, "cores"), "100", "and consume every core");
    is_str(consumed(d.allocation, 0, "memory"), "15Gi", "and all memory");
    is_uint(alloc_state_claim_count(st), 1, "the state holds one allocated claim");

    struct outcome e;
    is_int(claim_on(st, claim_plain, "other-node", ALLOC_POLICY_FIRST_FIT, &e), ALLOC_UNSCHEDULABLE,
           "the slice is bound to lab-node");
    like_str(e.why, "NoDevices: no ResourceSlice publishes devices for node other-node",
             "other nodes see no devices");
    outcome_fini(&e);

    outcome_fini(&a);
    outcome_fini(&b);
    outcome_fini(&c);
    outcome_fini(&d);
    alloc_state_free(st);
    return tap_done();
}
