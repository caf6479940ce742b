/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoint, options table and sysfs PCI resolution (file helpers: tests/unit/common/test_fs). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/checkpoint.h"
#include "base/fs.h"
#include "plugin/options.h"
#include "plugin-fixtures.h"
#include "tap.h"

static char tmp[256];

static void test_checkpoint(void)
{
    struct checkpoint c;
    struct gs_error e = {0};
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/state", tmp);
    is_int(ckpt_load(&c, dir, "drv", &e), 0, "empty checkpoint loads");
    is_int(ckpt_count(&c), 0, "no claims");
    static struct claim_plan p, q;
    memset(&p, 0, sizeof(p));
    snprintf(p.uid, sizeof(p.uid), "uid-1");
    snprintf(p.ns, sizeof(p.ns), "ns");
    snprintf(p.name, sizeof(p.name), "c1");
    p.n_devices = 1;
    snprintf(p.devices[0].device, sizeof(p.devices[0].device), "hami-gpu-0");
    snprintf(p.devices[0].uuid, sizeof(p.devices[0].uuid), "GPU-1");
    p.devices[0].memory_limit = 1ull << 32;
    p.devices[0].cores = 30;
    ckpt_set(&c, &p, CKPT_PREPARE_STARTED);
    is_int(ckpt_save(&c, true, &e), 0, "save");
    ckpt_fini(&c);
    is_int(ckpt_load(&c, dir, "drv", &e), 0, "reload");
    is_int(ckpt_get(&c, "uid-1", &q), CKPT_PREPARE_STARTED, "state survives");
    is_uint(q.devices[0].memory_limit, 1ull << 32, "plan survives");
    ckpt_set(&c, &p, CKPT_PREPARE_COMPLETED);
    is_int(ckpt_get(&c, "uid-1", NULL), CKPT_PREPARE_COMPLETED, "state updated");
    is_int(ckpt_set_missing(&c, "uid-1", 100), 0, "missing since set");
    is_int(ckpt_set_missing(&c, "uid-1", 200), 100, "previous missing-since returned");
    ckpt_remove(&c, "uid-1");
    is_int(ckpt_get(&c, "uid-1", NULL), CKPT_NONE, "removed");
    ckpt_fini(&c);

    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, CKPT_FILE_NAME);
    gs_write_file_atomic_ex(path, "{\"version\":1,\"claims\":", 22, 0600, 0, &e);
    is_int(ckpt_load(&c, dir, "drv", &e), -EBADMSG, "truncated checkpoint is an error");
    like_str(e.msg, "not JSON", "corrupt message");
    ckpt_fini(&c);
    const char *bad =
        "{\"version\":1,\"claims\":{\"x\":{\"state\":\"PrepareCompleted\",\"plan\":{}}}}";
    gs_write_file_atomic_ex(path, bad, strlen(bad), 0600, 0, &e);
    is_int(ckpt_load(&c, dir, "drv", &e), 0, "checkpoint with a bad entry loads");
    is_int(ckpt_count(&c), 0, "bad entry dropped");
    ckpt_fini(&c);
}

static int parse(int argc, char **argv, struct plugin_options *o, struct gs_error *e)
{
    options_free(o);
    memset(o, 0, sizeof(*o));
    FILE *devnull = fopen("/dev/null", "w");
    int r = options_parse(argc, argv, o, devnull, e);
    fclose(devnull);
    return r;
}

static void test_options(void)
{
    static struct plugin_options o;
    struct gs_error e = {0};
    char *argv1[] = {"p",   "--node-name", "n1", "--healthcheck-port=0", "--resync-interval",
                     "90s", NULL};
    unsetenv("NODE_NAME");
    is_int(parse(6, argv1, &o, &e), 0, "parse (%s)", e.msg);
    is_str(o.driver_name, "hami-core-gpu.project-hami.io", "driver default");
    is_str(o.plugin_dir, "/var/lib/kubelet/plugins/hami-core-gpu.project-hami.io",
           "plugin dir computed");
    is_str(o.state_dir, o.plugin_dir, "state dir defaults to plugin dir");
    is_int(o.healthcheck_port, 0, "int option");
    is_int(o.resync_interval_ns, 90000000000LL, "duration option");
    is_int(o.fault_point, 0, "no fault point by default");
    char *argv2[] = {"p", "--node-name", "n", "--healthcheck-port", "70000", NULL};
    ok(parse(5, argv2, &o, &e) < 0, "out of range refused");
    like_str(e.msg, "--healthcheck-port", "range message names the flag");
    like_str(e.msg, "70000", "range message names the value");
    char *argv3[] = {"p", NULL};
    setenv("NODE_NAME", "from-env", 1);
    setenv("GPUSLICE_GPU_SELECTION", "sideways", 1);
    ok(parse(1, argv3, &o, &e) < 0, "bad enum from env refused");
    like_str(e.msg, "GPUSLICE_GPU_SELECTION", "env message names the variable");
    like_str(e.msg, "sideways", "env message names the value");
    unsetenv("GPUSLICE_GPU_SELECTION");
    is_int(parse(1, argv3, &o, &e), 0, "env node name");
    is_str(o.node_name, "from-env", "node name from env");
    char *argv4[] = {"p", "--fault-point", "nowhere", NULL};
    ok(parse(3, argv4, &o, &e) < 0, "unknown fault point refused");
    char *argv4b[] = {"p", "--fault-point", "prepare-after-cdi", NULL};
    is_int(parse(3, argv4b, &o, &e), 0, "known fault point accepted");
    is_str(options_fault_points[o.fault_point], "prepare-after-cdi", "fault point index");
    char *argv5[] = {"p", "--bogus", NULL};
    ok(parse(2, argv5, &o, &e) < 0, "unknown option refused");
    like_str(e.msg, "bogus", "unknown option named");
    unsetenv("NODE_NAME");
    char *argv6[] = {"p", NULL};
    ok(parse(1, argv6, &o, &e) < 0, "node name required");
    is_str(e.msg, "--node-name (or $NODE_NAME) is required", "required message");
    options_free(&o);
}

static void test_pci(void)
{
    char path[512], link[512];
    snprintf(path, sizeof(path), "%s/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", tmp);
    struct gs_error e = {0};
    gs_mkdir_p(path, 0755, &e);
    snprintf(link, sizeof(link), "%s/numa_node", path);
    gs_write_file_atomic_ex(link, "1\n", 2, 0644, 0, &e);
    snprintf(path, sizeof(path), "%s/sys/bus/pci/devices", tmp);
    gs_mkdir_p(path, 0755, &e);
    snprintf(link, sizeof(link), "%s/0000:3b:00.0", path);
    snprintf(path, sizeof(path), "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
    ok(symlink(path, link) == 0, "fake sysfs link");
    struct gpu_device d;
    fixture_gpu(&d, 0, "GPU-1", 1);
    snprintf(path, sizeof(path), "%s/sys", tmp);
    gpu_resolve_pci(path, &d);
    is_str(d.pci_bus_id, "0000:3b:00.0", "pciBusID from sysfs");
    is_str(d.pcie_root, "pci0000:3a", "pcieRoot from the device's sysfs path");
    is_int(d.numa_node, 1, "numa node from sysfs");
    fixture_gpu(&d, 1, "GPU-2", 1);
    gpu_resolve_pci(path, &d);
    is_str(d.pci_bus_id, "", "absent from sysfs: no pciBusID");
    is_str(d.pcie_root, "", "absent from sysfs: no pcieRoot");
}

int main(void)
{
    tap_plan_auto();
    snprintf(tmp, sizeof(tmp), "/tmp/gs-plugin-unit-XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    test_checkpoint();
    test_options();
    test_pci();
    struct gs_error e = {0};
    gs_rm_rf(tmp, &e);
    return tap_done();
}
