/* SPDX-License-Identifier: Apache-2.0 */
/* claim_plan_build: what kubelet's claim turns into (limits per device, results, errors). */
#include <string.h>

#include "config/limits.h"
#include "gpu/claim.h"
#include "plugin-fixtures.h"
#include "tap.h"

#define DRV  "hami-core-gpu.project-hami.io"
#define NODE "hami-workshop"
#define UID  "3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01"

static struct gpu_inventory inv;

static int build(const char *results, const char *uid, struct claim_plan *p, struct gs_error *e)
{
    json_t *c = fixture_claim(UID, results);
    int r = claim_plan_build(c, "test-dra", "single-gpu-0", uid, DRV, NODE, &inv, p, e);
    json_decref(c);
    return r;
}

int main(void)
{
    tap_plan_auto();
    fixture_t4(&inv);
    fixture_gpu(&inv.dev[1], 1, "GPU-aaaaaaaa-2222-3333-4444-555555555555", 16ull << 30);
    inv.n = 2;
    static struct claim_plan p;
    struct gs_error e = {0};

    /* The lab's claim: 30 cores, 4Gi on hami-gpu-0. */
    int r = build("[{\"request\":\"single-gpu\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
                  "\"device\":\"hami-gpu-0\",\"shareID\":\"7c1f\","
                  "\"consumedCapacity\":{\"cores\":\"30\",\"memory\":\"4Gi\"}}]",
                  UID, &p, &e);
    is_int(r, 0, "lab claim builds (%s)", e.msg);
    is_int(p.n_results, 1, "one result");
    is_str(p.results[0].request, "single-gpu", "request name");
    is_str(p.results[0].share_id, "7c1f", "shareID kept");
    is_int(p.n_devices, 1, "one device");
    is_uint(p.devices[0].memory_limit, 4294967296ull, "memory limit 4Gi in bytes");
    is_int(p.devices[0].cores, 30, "cores 30");
    is_str(p.devices[0].uuid, "GPU-11111111-2222-3333-4444-555555555555", "UUID from inventory");
    is_int(p.devices[0].env_index, 0, "env index 0");

    /* Two requests on one device are summed; subrequest names reduced to the base name;
     * results of other drivers ignored; env index by minor. */
    r = build(
        "[{\"request\":\"b/small\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
        "\"device\":\"hami-gpu-1\",\"consumedCapacity\":{\"cores\":\"20\",\"memory\":\"1Gi\"}},"
        "{\"request\":\"a\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
        "\"device\":\"hami-gpu-0\",\"consumedCapacity\":{\"cores\":\"10\",\"memory\":\"512Mi\"}},"
        "{\"request\":\"c\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
        "\"device\":\"hami-gpu-1\",\"consumedCapacity\":{\"cores\":\"90\",\"memory\":\"2Gi\"}},"
        "{\"request\":\"net\",\"driver\":\"nic.example.com\",\"pool\":\"x\",\"device\":\"eth0\"}]",
        UID, &p, &e);
    is_int(r, 0, "multi-request claim builds (%s)", e.msg);
    is_int(p.n_results, 3, "three results of our driver");
    is_str(p.results[0].request, "b", "subrequest reduced to base request name");
    is_int(p.n_devices, 2, "two devices");
    is_str(p.devices[0].device, "hami-gpu-0", "devices sorted by minor");
    is_int(p.devices[0].env_index, 0, "hami-gpu-0 -> index 0");
    is_int(p.devices[1].env_index, 1, "hami-gpu-1 -> index 1");
    is_uint(p.devices[1].memory_limit, 3ull << 30, "1Gi + 2Gi summed");
    is_int(p.devices[1].cores, 100, "20 + 90 cores capped at 100");

    /* No consumedCapacity: the whole device, uncapped. */
    r = build("[{\"request\":\"r\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
              "\"device\":\"hami-gpu-0\"}]",
              UID, &p, &e);
    is_int(r, 0, "exclusive claim builds");
    is_uint(p.devices[0].memory_limit, 0, "no memory cap");
    is_int(p.devices[0].cores, 0, "no compute cap");

    /* Errors name the claim and the field. */
    r = build("[]", "ffffffff-0d4b-4d8e-9c1e-5b6a7f8e9d01", &p, &e);
    is_int(r, -ESTALE, "UID mismatch refused");
    like_str(
        e.msg,
        "UID mismatch: kubelet asked for ffffffff-0d4b-4d8e-9c1e-5b6a7f8e9d01, API server has " UID,
        "UID mismatch message");
    r = build(
        "[{\"request\":\"net\",\"driver\":\"nic.example.com\",\"pool\":\"x\",\"device\":\"e\"}]",
        UID, &p, &e);
    is_int(r, -ENOENT, "other drivers only");
    like_str(e.msg, "claim test-dra/single-gpu-0: no allocation result for driver " DRV,
             "other-drivers message");
    r = build("[{\"request\":\"r\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
              "\"device\":\"hami-gpu-7\"}]",
              UID, &p, &e);
    is_int(r, -ENOENT, "unknown device");
    like_str(e.msg, "device \"hami-gpu-7\" does not exist on this node", "unknown device message");
    r = build("[{\"request\":\"r\",\"driver\":\"" DRV "\",\"pool\":\"other-node\","
              "\"device\":\"hami-gpu-0\"}]",
              UID, &p, &e);
    is_int(r, -EINVAL, "other pool refused");
    like_str(e.msg, "pool \"other-node\"", "pool message");
    r = build("[{\"request\":\"r\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
              "\"device\":\"hami-gpu-0\",\"consumedCapacity\":{\"memory\":\"lots\"}}]",
              UID, &p, &e);
    is_int(r, -EINVAL, "bad quantity refused");
    like_str(e.msg, "results[0].consumedCapacity.memory: \"lots\" is not an integer quantity",
             "bad quantity message names the field and value");
    r = build("[{\"request\":\"r\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
              "\"device\":\"hami-gpu-0\",\"consumedCapacity\":{\"memory\":\"8Ei\"}}]",
              UID, &p, &e);
    is_int(r, -EINVAL, "8Ei refused");
    like_str(e.msg, "consumedCapacity.memory: \"8Ei\" is too large",
             "8Ei: too large, not 'not an integer'");
    r = build("{\"not\":\"a list\"}", UID, &p, &e);
    is_int(r, -EINVAL, "results not a list");

    json_error_t je;
    json_t *unalloc = json_loads("{\"metadata\":{\"uid\":\"" UID "\"},\"status\":{}}", 0, &je);
    r = claim_plan_build(unalloc, "test-dra", "c", UID, DRV, NODE, &inv, &p, &e);
    json_decref(unalloc);
    is_int(r, -ENOENT, "unallocated claim");
    like_str(e.msg, "claim test-dra/c: not allocated (status.allocation is missing)",
             "unallocated message");
    r = claim_plan_build(NULL, "test-dra", "c", "../../etc", DRV, NODE, &inv, &p, &e);
    is_int(r, -EINVAL, "path-like UID refused before anything else");

    /* Checkpoint round trip. */
    build("[{\"request\":\"single-gpu\",\"driver\":\"" DRV "\",\"pool\":\"" NODE "\","
          "\"device\":\"hami-gpu-0\",\"shareID\":\"s1\","
          "\"consumedCapacity\":{\"cores\":\"30\",\"memory\":\"4Gi\"}}]",
          UID, &p, &e);
    json_t *j = claim_plan_to_json(&p);
    static struct claim_plan back;
    is_int(claim_plan_from_json(j, &back, &e), 0, "plan JSON reads back");
    ok(memcmp(&p, &back, sizeof(p)) == 0, "plan JSON round trip is exact");
    json_object_set_new(json_array_get(json_object_get(j, "devices"), 0), "cores",
                        json_integer(101));
    ok(claim_plan_from_json(j, &back, &e) < 0, "cores 101 in a checkpoint refused");
    json_decref(j);

    /* Per-claim configuration (issue 24): our driver's opaque parameters. */
    const char *res = "[{\"request\":\"gpu\",\"driver\":\"" DRV "\",\"pool\":\"" NODE
                      "\",\"device\":\"hami-gpu-0\",\"consumedCapacity\":{\"cores\":\"30\"}}]";
    struct cfg_case {
        const char *config, *msg;
        int policy, priority, log_level;
    } cases[] = {
        {"[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolicy\":\"hard\",\"priority\":0,\"logLevel\":2}}}]",
         NULL, GS_POLICY_HARD, 0, 2},
        /* class first, claim overrides; another driver's entry and another request's ignored */
        {"[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolicy\":\"disabled\"}}},"
         "{\"source\":\"FromClass\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolicy\":\"hard\",\"priority\":1}}},"
         "{\"source\":\"FromClaim\",\"requests\":[\"other\"],\"opaque\":{\"driver\":\"" DRV
         "\",\"parameters\":{\"bogus\":1}}},"
         "{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"nic.example.com\","
         "\"parameters\":{\"x\":1}}}]",
         NULL, GS_POLICY_DISABLED, 1, -1},
        {"[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolcy\":\"hard\"}}}]",
         "claim test-dra/single-gpu-0: config[0].opaque.parameters: unknown field \"computePolcy\"",
         0, 0, 0},
        {"[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolicy\":\"soft\"}}}]",
         "claim test-dra/single-gpu-0: config[0].opaque.parameters.computePolicy: \"soft\" is "
         "not hard, work-conserving or disabled",
         0, 0, 0},
        {"[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"priority\":5}}}]",
         "claim test-dra/single-gpu-0: config[0].opaque.parameters.priority: out of range is "
         "not 0 (high) or 1 (low)",
         0, 0, 0},
        /* issue 31: the class's ceilings bound the claim's own entry */
        {"[{\"source\":\"FromClass\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"allowedComputePolicies\":[\"hard\"],\"highestPriority\":1}}},"
         "{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolicy\":\"work-conserving\"}}}]",
         "claim test-dra/single-gpu-0: config[1].opaque.parameters.computePolicy: "
         "\"work-conserving\" exceeds the DeviceClass ceiling allowedComputePolicies [hard] "
         "(config[0].opaque.parameters)",
         0, 0, 0},
        {"[{\"source\":\"FromClass\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"allowedComputePolicies\":[\"hard\"],\"highestPriority\":1}}},"
         "{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v1alpha1\",\"kind\":\"GpuSliceConfig\","
         "\"computePolicy\":\"hard\",\"priority\":1}}}]",
         NULL, GS_POLICY_HARD, 1, -1},
        {"[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRV "\",\"parameters\":"
         "{\"apiVersion\":\"gpuslice.io/v2\",\"kind\":\"GpuSliceConfig\"}}}]",
         "claim test-dra/single-gpu-0: config[0].opaque.parameters.apiVersion: \"gpuslice.io/v2\" "
         "is not gpuslice.io/v1alpha1",
         0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *c = fixture_claim(UID, res);
        json_error_t je2;
        json_object_set_new(
            json_object_get(json_object_get(json_object_get(c, "status"), "allocation"), "devices"),
            "config", json_loads(cases[i].config, 0, &je2));
        r = claim_plan_build(c, "test-dra", "single-gpu-0", UID, DRV, NODE, &inv, &p, &e);
        json_decref(c);
        if (cases[i].msg) {
            is_int(r, -EINVAL, "config case %zu fails the claim", i);
            like_str(e.msg, cases[i].msg, "config case %zu message", i);
        } else {
            is_int(r, 0, "config case %zu builds (%s)", i, e.msg);
            is_int(p.qos.policy, cases[i].policy, "config case %zu policy", i);
            is_int(p.qos.priority, cases[i].priority, "config case %zu priority", i);
            is_int(p.qos.log_level, cases[i].log_level, "config case %zu log level", i);
            j = claim_plan_to_json(&p);
            is_int(claim_plan_from_json(j, &back, &e), 0, "config case %zu checkpoint", i);
            ok(memcmp(&p, &back, sizeof(p)) == 0, "config case %zu checkpoint round trip", i);
            json_decref(j);
        }
    }
    return tap_done();
}
