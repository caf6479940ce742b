/* SPDX-License-Identifier: Apache-2.0 */
/* The CDI spec of a claim and the ResourceSlices of a node, exactly as written. */
#include <string.h>

#include "plugin/cdi.h"
#include "plugin/slices.h"
#include "plugin-fixtures.h"
#include "tap.h"

#define DRV "hami-core-gpu.project-hami.io"

static const char *sget(json_t *root, const char *path)
{
    json_t *v = root;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, ".")) {
        if (json_is_array(v))
            v = json_array_get(v, (size_t)atoi(tok));
        else
            v = json_object_get(v, tok);
    }
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_string(v) &&
                                      strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

static json_t *find_mount(json_t *mounts, const char *container)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "containerPath")), container) == 0)
            return m;
    }
    return NULL;
}

static void test_cdi(void)
{
    static struct claim_plan p;
    memset(&p, 0, sizeof(p));
    snprintf(p.uid, sizeof(p.uid), "3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01");
    p.n_devices = 1;
    snprintf(p.devices[0].device, sizeof(p.devices[0].device), "hami-gpu-0");
    snprintf(p.devices[0].uuid, sizeof(p.devices[0].uuid), "GPU-1111");
    p.devices[0].memory_limit = 4ull << 30;
    p.devices[0].cores = 30;
    struct cdi_config c = {
        .driver = DRV, .cdi_root = "/var/run/cdi", .host_dir = "/usr/local/vgpu"};
    char buf[1024];
    cdi_device_id(&c, p.uid, "hami-gpu-0", buf, sizeof(buf));
    is_str(
        buf,
        "k8s.hami-core-gpu.project-hami.io/claim=3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01-hami-gpu-0",
        "CDI device id");
    cdi_spec_path(&c, p.uid, buf, sizeof(buf));
    is_str(buf,
           "/var/run/cdi/"
           "k8s.hami-core-gpu.project-hami.io-claim_3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01.json",
           "spec path");
    char uid[64];
    is_int(cdi_spec_uid_from_filename(&c, strrchr(buf, '/') + 1, uid, sizeof(uid)), 0,
           "spec file name parses back");
    is_str(uid, p.uid, "UID from file name");
    ok(cdi_spec_uid_from_filename(&c, "nvidia.json", uid, sizeof(uid)) < 0, "foreign spec ignored");

    json_t *s = cdi_spec_build(&c, &p);
    is_str(sget(s, "cdiVersion"), "0.5.0", "digit-first device name (UID 3f0c...) needs 0.5.0");
    is_str(sget(s, "kind"), "k8s.hami-core-gpu.project-hami.io/claim", "kind");
    is_str(sget(s, "devices.0.name"), "3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01-hami-gpu-0",
           "device name");
    json_t *env = json_object_get(
        json_object_get(json_array_get(json_object_get(s, "devices"), 0), "containerEdits"), "env");
    ok(has_string(env, "GPUSLICE_LIMITS_DIR=/etc/gpuslice/limits.d"), "limits dir env");
    ok(has_string(env, "CUDA_DEVICE_MEMORY_LIMIT_0=4096m"), "memory env in MiB");
    ok(has_string(env, "CUDA_DEVICE_SM_LIMIT_0=30"), "SM env");
    json_t *mounts = json_object_get(
        json_object_get(json_array_get(json_object_get(s, "devices"), 0), "containerEdits"),
        "mounts");
    json_t *m = find_mount(mounts, "/usr/local/vgpu/libvgpu.so");
    ok(m && strcmp(sget(m, "hostPath"), "/usr/local/vgpu/libvgpu.so") == 0 &&
           has_string(json_object_get(m, "options"), "ro"),
       "libvgpu mounted read-only");
    m = find_mount(mounts, "/etc/ld.so.preload");
    ok(m && strcmp(sget(m, "hostPath"), "/usr/local/vgpu/ld.so.preload") == 0 &&
           has_string(json_object_get(m, "options"), "ro"),
       "ld.so.preload mounted read-only");
    m = find_mount(mounts, "/etc/gpuslice/limits.d/3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01.limits");
    ok(m &&
           strcmp(sget(m, "hostPath"),
                  "/usr/local/vgpu/claims/3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01/"
                  "3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01.limits") == 0 &&
           has_string(json_object_get(m, "options"), "ro"),
       "limits file mounted read-only");
    m = find_mount(mounts, "/var/run/gpuslice/claims/3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01/region");
    ok(m && has_string(json_object_get(m, "options"), "rw") && sget(m, "hostPath") &&
           strstr(sget(m, "hostPath"),
                  "/claims/3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01/region/region"),
       "the region FILE mounted read-write (unlink/rename of a mount point fail)");
    ok(!find_mount(mounts, "/var/run/gpuslice/claims/3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01"),
       "not its directory (a process could replace the file in it)");
    m = find_mount(mounts, "/var/run/nvidia-container-devices/GPU-1111");
    ok(m && strcmp(sget(m, "hostPath"), "/dev/null") == 0, "GPU selected by volume mount");
    ok(!json_object_get(
           json_object_get(json_array_get(json_object_get(s, "devices"), 0), "containerEdits"),
           "deviceNodes"),
       "no device nodes in volume-mount mode");
    json_decref(s);

    /* UID starting with a letter -> 0.3.0; device-nodes mode; uncapped device has no limit env. */
    snprintf(p.uid, sizeof(p.uid), "cf0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01");
    p.devices[0].memory_limit = 0;
    p.devices[0].cores = 0;
    p.devices[0].minor = 3;
    c.selection = CDI_SELECT_DEVICE_NODES;
    s = cdi_spec_build(&c, &p);
    is_str(sget(s, "cdiVersion"), "0.3.0", "letter-first device name needs only 0.3.0");
    json_t *edits =
        json_object_get(json_array_get(json_object_get(s, "devices"), 0), "containerEdits");
    is_int(json_array_size(json_object_get(edits, "env")), 1, "uncapped: only the limits dir env");
    is_str(sget(edits, "deviceNodes.0.path"), "/dev/nvidia3", "device node of minor 3");
    is_str(sget(edits, "deviceNodes.1.path"), "/dev/nvidiactl", "control node");
    ok(!find_mount(json_object_get(edits, "mounts"), "/var/run/nvidia-container-devices/GPU-1111"),
       "no selection mount in device-node mode");
    json_decref(s);
}

static void test_slices(void)
{
    static struct gpu_inventory inv;
    fixture_t4(&inv);
    json_t *s = gpu_slice_build(&inv, DRV, "hami-workshop", 1, 0);
    is_str(sget(s, "metadata.name"), "hami-workshop-" DRV "-0", "slice name");
    is_str(sget(s, "spec.pool.name"), "hami-workshop", "pool = node name");
    is_str(sget(s, "spec.nodeName"), "hami-workshop", "nodeName");
    is_int(json_integer_value(json_object_get(json_object_get(json_object_get(s, "spec"), "pool"),
                                              "resourceSliceCount")),
           1, "resourceSliceCount 1");
    json_t *d = json_array_get(json_object_get(json_object_get(s, "spec"), "devices"), 0);
    is_str(sget(d, "name"), "hami-gpu-0", "device name");
    ok(json_is_true(json_object_get(d, "allowMultipleAllocations")), "allowMultipleAllocations");
    is_str(sget(d, "capacity.cores.value"), "100", "cores value");
    is_str(sget(d, "capacity.cores.requestPolicy.default"), "100", "cores default");
    is_str(sget(d, "capacity.cores.requestPolicy.validRange.min"), "0", "cores min");
    is_str(sget(d, "capacity.cores.requestPolicy.validRange.max"), "100", "cores max");
    is_str(sget(d, "capacity.cores.requestPolicy.validRange.step"), "1", "cores step");
    is_str(sget(d, "capacity.memory.value"), "15Gi", "memory rounded down to 1Mi: 15Gi");
    is_str(sget(d, "capacity.memory.requestPolicy.default"), "15Gi", "memory default");
    is_str(sget(d, "capacity.memory.requestPolicy.validRange.min"), "1Mi", "memory min");
    is_str(sget(d, "capacity.memory.requestPolicy.validRange.max"), "15Gi", "memory max");
    is_str(sget(d, "capacity.memory.requestPolicy.validRange.step"), "1Mi", "memory step");
    is_str(sget(d, "attributes.type.string"), "hami-gpu", "type attribute");
    is_str(sget(d, "attributes.productName.string"), "Tesla T4", "productName");
    is_str(sget(d, "attributes.cudaComputeCapability.version"), "7.5.0",
           "compute capability semver");
    is_str(sget(d, "attributes.architecture.string"), "Turing", "architecture");
    ok(!json_object_get(json_object_get(d, "attributes"), "resource.kubernetes.io/pcieRoot"),
       "pcieRoot absent when unresolvable");

    /* Gate-off detection: the server's copy lacks the gated fields. */
    json_t *ret = json_deep_copy(s);
    ok(!gpu_slice_gate_dropped(s, ret), "identical copy: gate on");
    json_t *rd = json_array_get(json_object_get(json_object_get(ret, "spec"), "devices"), 0);
    json_object_del(rd, "allowMultipleAllocations");
    ok(gpu_slice_gate_dropped(s, ret), "dropped allowMultipleAllocations detected");
    json_decref(ret);
    json_decref(s);

    /* 300 GPUs: 3 slices of 128, 128, 44. */
    static struct gpu_inventory big;
    memset(&big, 0, sizeof(big));
    for (unsigned i = 0; i < 256; i++) {
        char uuid[64];
        snprintf(uuid, sizeof(uuid), "GPU-%08u", i);
        fixture_gpu(&big.dev[i], i, uuid, 1ull << 30);
    }
    big.n = 256;
    is_int(gpu_slice_count(256), 2, "256 devices -> 2 slices");
    is_int(gpu_slice_count(300), 3, "300 devices -> 3 slices");
    is_int(gpu_slice_count(0), 1, "no device -> one empty slice");
    json_t *s1 = gpu_slice_build(&big, DRV, "n", 7, 1);
    json_t *devs = json_object_get(json_object_get(s1, "spec"), "devices");
    is_int(json_array_size(devs), 128, "second slice holds 128 devices");
    is_str(sget(devs, "0.name"), "hami-gpu-128", "second slice starts at device 128");
    is_int(json_integer_value(
               json_object_get(json_object_get(json_object_get(s1, "spec"), "pool"), "generation")),
           7, "generation as given");
    json_decref(s1);
}

static void test_semver(void)
{
    char out[64];
    is_int(gpu_semver("535.104.05", out, sizeof(out)), 0, "driver version parses");
    is_str(out, "535.104.5", "leading zero dropped");
    gpu_semver("550.54", out, sizeof(out));
    is_str(out, "550.54.0", "missing patch is 0");
    ok(gpu_semver("550.x", out, sizeof(out)) < 0, "non-numeric refused");
    ok(gpu_semver("", out, sizeof(out)) < 0, "empty refused");
    ok(gpu_semver("1.2.3.4", out, sizeof(out)) < 0, "four parts refused");
}

int main(void)
{
    tap_plan_auto();
    test_cdi();
    test_slices();
    test_semver();
    return tap_done();
}
