/* SPDX-License-Identifier: Apache-2.0 */
/* Placement policies: first-fit (kube-scheduler), binpack, spread, topology. */
#include "helpers.h"

#define CLASS                                                                                      \
    "kind: DeviceClass\nmetadata: {name: gpu}\n"                                                   \
    "spec: {selectors: [{cel: {expression: 'device.driver == \"gpu.example.com\"'}}]}\n---\n"

#define CLAIM_HEAD(name)                                                                           \
    "kind: ResourceClaim\nmetadata: {name: " name ", namespace: ns}\nspec:\n  devices:\n"

#define USED(name, dev, cores)                                                                     \
    "---\nkind: ResourceClaim\nmetadata: {name: " name ", namespace: ns}\n"                        \
    "status: {allocation: {devices: {results: [{request: r, driver: gpu.example.com, pool: p,"     \
    " device: " dev                                                                                \
    ", shareID: 11111111-2222-4333-8444-555555555555, consumedCapacity: {cores: '" cores           \
    "'}}]}}}\n"

static const char *shares = CLASS
    "kind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - {name: d0, allowMultipleAllocations: true, capacity: {cores: {value: '100'}}}\n"
    "  - {name: d1, allowMultipleAllocations: true, capacity: {cores: {value: '100'}}}\n"
    "  - {name: d2, allowMultipleAllocations: true, capacity: {cores: {value: '100'}}}\n" USED(
        "u0", "d0", "10") USED("u1", "d1", "70");

#define TWENTY                                                                                     \
    CLAIM_HEAD("twenty")                                                                           \
    "    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n        "         \
    "capacity: {requests: {cores: 20}}\n"

static void pick(enum alloc_policy p, const char *want, const char *what)
{
    struct alloc_state *st = state_from(shares);
    struct outcome o;
    is_int(claim_on(st, TWENTY, "n1", p, &o), 0, "%s: allocated", alloc_policy_name(p));
    is_str(res_str(o.allocation, 0, "device"), want, "%s", what);
    is_str(consumed(o.allocation, 0, "cores"), "20", "%s: consumes 20 cores", alloc_policy_name(p));
    outcome_fini(&o);
    alloc_state_free(st);
}

static const char *topo = CLASS
    "kind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1}\n"
    "  devices:\n"
    "  - {name: g0, attributes: {nvlinkDomain: {int: 0}, resource.kubernetes.io/pcieRoot: {string: "
    "pci0}}}\n"
    "  - {name: g1, attributes: {nvlinkDomain: {int: 1}, resource.kubernetes.io/pcieRoot: {string: "
    "pci0}}}\n"
    "  - {name: g2, attributes: {nvlinkDomain: {int: 0}, resource.kubernetes.io/pcieRoot: {string: "
    "pci1}}}\n"
    "  - {name: g3, attributes: {nvlinkDomain: {int: 1}, resource.kubernetes.io/pcieRoot: {string: "
    "pci1}}}\n"
    "  - {name: h0, attributes: {resource.kubernetes.io/pcieRoot: {string: pci7}}}\n"
    "  - {name: h1, attributes: {resource.kubernetes.io/pcieRoot: {string: pci8}}}\n"
    "  - {name: h2, attributes: {resource.kubernetes.io/pcieRoot: {string: pci7}}}\n";

#define TWO(sel)                                                                                   \
    CLAIM_HEAD("two")                                                                              \
    "    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n        count: "  \
    "2\n" sel

static void test_topology(void)
{
    struct alloc_state *st = state_from(topo);
    struct outcome o;
    is_int(claim_on(st, TWO(""), "n1", ALLOC_POLICY_FIRST_FIT, &o), 0, "first-fit pair");
    is_str(res_str(o.allocation, 0, "device"), "g0", "first-fit: g0");
    is_str(res_str(o.allocation, 1, "device"), "g1", "first-fit: g1 (another NVLink domain)");
    outcome_fini(&o);
    alloc_state_free(st);
    st = state_from(topo);
    is_int(claim_on(st, TWO(""), "n1", ALLOC_POLICY_TOPOLOGY, &o), 0, "topology pair");
    is_str(res_str(o.allocation, 0, "device"), "g0", "topology: g0");
    is_str(res_str(o.allocation, 1, "device"), "g2", "topology: g2 shares NVLink domain 0");
    outcome_fini(&o);
    alloc_state_free(st);
    st = state_from(topo);
    is_int(claim_on(st,
                    TWO("        selectors: [{cel: {expression: '!(\"nvlinkDomain\" in "
                        "device.attributes[\"gpu.example.com\"])'}}]\n"),
                    "n1", ALLOC_POLICY_TOPOLOGY, &o),
           0, "topology without NVLink");
    is_str(res_str(o.allocation, 0, "device"), "h0", "h0");
    is_str(res_str(o.allocation, 1, "device"), "h2", "h2 shares PCIe root pci7");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_first_available_kept(void)
{
    /* Binpack would prefer d1 for the 'small' subrequest, but 'big' comes first and fits d2. */
    struct alloc_state *st = state_from(shares);
    struct outcome o;
    is_int(claim_on(st,
                    CLAIM_HEAD("fa") "    requests:\n    - name: r\n      firstAvailable:\n"
                                     "      - {name: big, deviceClassName: gpu, capacity: "
                                     "{requests: {cores: 95}}}\n"
                                     "      - {name: small, deviceClassName: gpu, capacity: "
                                     "{requests: {cores: 20}}}\n",
                    "n1", ALLOC_POLICY_BINPACK, &o),
           0, "binpack with firstAvailable");
    is_str(res_str(o.allocation, 0, "request"), "r/big", "the earlier subrequest stays preferred");
    is_str(res_str(o.allocation, 0, "device"), "d2", "on the only device with 95 cores free");
    outcome_fini(&o);
    alloc_state_free(st);
}

static void test_parse(void)
{
    enum alloc_policy p;
    struct gs_error err = {0};
    is_int(alloc_policy_parse("binpack", &p, &err), 0, "binpack parses");
    is_int(p, ALLOC_POLICY_BINPACK, "to ALLOC_POLICY_BINPACK");
    is_int(alloc_policy_parse("best", &p, &err), -EINVAL, "unknown policy refused");
    is_str(err.msg, "policy: \"best\" is not one of first-fit, binpack, spread, topology",
           "message lists the policies");
    is_str(alloc_policy_name(ALLOC_POLICY_TOPOLOGY), "topology", "names round-trip");
}

int main(void)
{
    tap_plan_auto();
    pick(ALLOC_POLICY_FIRST_FIT, "d0",
         "first-fit takes the first device that fits (kube-scheduler)");
    pick(ALLOC_POLICY_BINPACK, "d1", "binpack takes the fullest device (70 used)");
    pick(ALLOC_POLICY_SPREAD, "d2", "spread takes the idle device");
    test_topology();
    test_first_available_kept();
    test_parse();
    return tap_done();
}
