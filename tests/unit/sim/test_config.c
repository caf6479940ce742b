/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim device model: presets, JSON and YAML configs, and the messages for bad input. */
#include <string.h>

#include "sim/sim-config.h"
#include "tap.h"

static struct sim_config cfg;

static int parse(const char *text, struct gs_error *err)
{
    gs_error_clear(err);
    return sim_config_parse(text, strlen(text), "test.cfg", &cfg, err);
}

static void test_presets(void)
{
    struct gs_error err = {0};
    is_int(sim_config_preset("t4", &cfg, &err), 0, "preset t4");
    is_int(cfg.ndev, 1, "one device");
    is_str(cfg.dev[0].name, "Tesla T4", "name Tesla T4");
    is_uint(cfg.dev[0].total_mem, 16106127360ull, "15Gi = 16106127360 bytes");
    is_int(cfg.dev[0].sm_count, 40, "40 SMs");
    ok(cfg.dev[0].cc_major == 7 && cfg.dev[0].cc_minor == 5, "CC 7.5");
    is_uint(cfg.dev[0].arch, 6, "Turing");
    is_int(cfg.dev[0].max_threads_per_sm, 1024, "1024 threads/SM");
    ok(cfg.dev[0].pcie_gbps == 12 && cfg.dev[0].mem_gbps == 320, "T4 bandwidths 12 / 320 GB/s");
    is_uint(cfg.ctx_overhead, 0, "no context overhead by default");
    char uuid[SIM_UUID_MAX];
    strcpy(uuid, cfg.dev[0].uuid);
    is_int((int)strlen(uuid), 40, "UUID has 40 characters");
    sim_config_preset("t4", &cfg, &err);
    is_str(cfg.dev[0].uuid, uuid, "UUIDs are deterministic");
    char bus[32];
    sim_pci_bus_id(&cfg.dev[0], bus, sizeof(bus));
    is_str(bus, "00000000:00:04.0", "PCI bus id");

    is_int(sim_config_preset("h200x2", &cfg, &err), 0, "preset h200x2");
    is_int(cfg.ndev, 2, "two devices");
    is_str(cfg.dev[1].name, "NVIDIA H200", "NVIDIA H200");
    is_uint(cfg.dev[1].total_mem, 143771ull << 20, "143771 MiB");
    ok(cfg.dev[0].nlinks == 18 && cfg.dev[0].link_peer[17] == 1, "18 NVLinks to the peer");
    ok(strcmp(cfg.dev[0].uuid, cfg.dev[1].uuid) != 0, "distinct UUIDs");

    is_int(sim_config_preset("a100x8", &cfg, &err), 0, "preset a100x8");
    is_int(cfg.ndev, 8, "eight devices");
    ok(cfg.dev[5].numa_node == 1 && cfg.dev[5].pcie_switch == 2, "GPU 5: NUMA 1, switch 2");
    is_int(cfg.dev[0].nlinks, 12, "12 links");

    is_int(sim_config_preset("v100x3", &cfg, &err), -EINVAL, "unknown preset");
    like_str(err.msg, "GPUSIM_PRESET: unknown preset \"v100x3\"", "message names the preset");
    like_str(err.msg, "a100x8", "and lists the known ones");
}

static void test_json(void)
{
    struct gs_error err;
    is_int(parse("{\"preset\": \"t4\", \"context_overhead\": \"256Mi\", \"cuda_version\": 12040}",
                 &err),
           0, "preset plus overrides");
    is_uint(cfg.ctx_overhead, 256ull << 20, "context_overhead 256Mi");
    is_int(cfg.cuda_version, 12040, "cuda_version");
    is_str(cfg.dev[0].name, "Tesla T4", "preset devices kept");

    is_int(parse("{\"devices\": [{\"name\": \"Tesla T4\", \"memory\": \"15360MiB\", "
                 "\"compute_capability\": \"7.5\", \"pci_bus_id\": \"0000:3b:00.0\", "
                 "\"uuid\": \"GPU-12345678-1234-1234-1234-123456789abc\", \"minor\": 3}, "
                 "{\"name\": \"B\", \"memory\": 1073741824, \"architecture\": \"hopper\", "
                 "\"memory_bandwidth_gbps\": 1000, \"pcie_bandwidth_gbps\": 64, "
                 "\"nvlink\": [0, 0, -1]}]}",
                 &err),
           0, "two devices");
    is_uint(cfg.dev[0].total_mem, 16106127360ull, "15360MiB accepted");
    is_uint(cfg.dev[0].pci_bus, 0x3b, "bus 0x3b");
    is_str(cfg.dev[0].uuid, "GPU-12345678-1234-1234-1234-123456789abc", "UUID kept");
    is_uint(cfg.dev[0].minor, 3, "minor 3");
    ok(cfg.dev[1].cc_major == 9 && cfg.dev[1].sm_count == 132, "hopper defaults (9.0, 132 SMs)");
    ok(cfg.dev[1].nlinks == 3 && cfg.dev[1].link_peer[1] == 0 && cfg.dev[1].link_peer[2] == -1,
       "nvlink list");
    ok(strncmp(cfg.dev[1].uuid, "GPU-", 4) == 0, "missing UUID derived");
    ok(cfg.dev[1].mem_gbps == 1000 && cfg.dev[1].pcie_gbps == 64, "bandwidths from the config");
    like_str(cfg.key, "cfg-", "state key from the config hash");

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"devices\": [{\"name\": \"x\", \"memory\": \"15Q\"}]}",
         "test.cfg: devices[0].memory: \"15Q\" is not a quantity of bytes"},
        {"{\"devices\": [{\"name\": \"x\"}]}", "test.cfg: devices[0].memory: missing"},
        {"{\"devices\": [{\"memory\": 1}]}", "test.cfg: devices[0].name: missing"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"sm_count\": 0}]}",
         "devices[0].sm_count: 0 is outside [1, 1024]"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"nmae\": 1}]}",
         "devices[0].nmae: unknown field"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"uuid\": \"GPU-1\"}]}",
         "devices[0].uuid: \"GPU-1\" is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"nvlink\": [0]}]}",
         "devices[0].nvlink[0]: a device cannot link to itself"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"nvlink\": [5]}]}",
         "devices[0].nvlink[0]: 5 is outside [-1, 0]"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"compute_capability\": \"7\"}]}",
         "devices[0].compute_capability: \"7\" is not MAJOR.MINOR"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"architecture\": \"kepler\"}]}",
         "devices[0].architecture: \"kepler\" is not one of"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"minor\": 0}, "
         "{\"name\": \"y\", \"memory\": 1, \"minor\": 0}]}",
         "devices[1].minor: 0 is also devices[0]'s"},
        {"{\"devices\": []}", "devices: 0 devices, expected 1 to 16"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"pci_bus_id\": \"0000:3b\"}]}",
         "devices[0].pci_bus_id: \"0000:3b\" is not DOMAIN:BUS:DEVICE.FUNCTION (hex)"},
        {"{\"devices\": [{\"name\": \"x\", \"memory\": 1, \"pci_bus_id\": \"0:100:0.0\"}]}",
         "devices[0].pci_bus_id: \"0:100:0.0\" is not"},
        {"{}", "devices: missing (or give a preset)"},
        {"{\"preset\": \"t4\", \"typo\": 1}", "typo: unknown field"},
        {"{\"devices\": [", "test.cfg: line 1"},
        {"[1, 2]", "top level: expected an object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int r = parse(bad[i].text, &err);
        ok(r < 0, "refused: %s", bad[i].text);
        like_str(err.msg, bad[i].msg, "message %zu", i);
    }
}

static void test_yaml(void)
{
    struct gs_error err;
    is_int(
        parse(
            "# comment\ndriver_version: '550.54.15'\ndevices:\n"
            "  - name: NVIDIA L4\n    memory: 23034Mi\n    compute_capability: \"8.9\"\n"
            "    pci_device_id: 0x27B8\n  - {name: V100, memory: 16Gi, compute_capability: 7.0}\n",
            &err),
        0, "YAML config");
    is_str(cfg.driver_version, "550.54.15", "driver version");
    is_int(cfg.ndev, 2, "two devices");
    is_uint(cfg.dev[0].total_mem, 23034ull << 20, "23034Mi");
    ok(cfg.dev[0].cc_major == 8 && cfg.dev[0].cc_minor == 9, "8.9 (Ada)");
    is_uint(cfg.dev[0].pci_device_id, 0x27B8, "hex PCI device id");
    ok(cfg.dev[1].cc_major == 7 && cfg.dev[1].cc_minor == 0, "unquoted 7.0 read as 7.0");
    is_uint(cfg.dev[1].arch, 5, "7.0 is Volta");
    is_int(parse("preset: t4\n", &err), 0, "YAML preset");
    is_int(parse("devices:\n  - &a {name: x, memory: 1}\n  - *a\n", &err), -EINVAL,
           "aliases refused");
    like_str(err.msg, "aliases are not supported", "alias message");
    is_int(parse("devices: [\n", &err), -EINVAL, "broken YAML");
    like_str(err.msg, "test.cfg: line", "names the file and line");
    is_int(parse("a: 1\na: 2\n", &err), -EINVAL, "duplicate key");
    like_str(err.msg, "duplicate key \"a\"", "duplicate key message");
    is_int(sim_config_parse("x\0y", 3, "nul", &cfg, &err), -EINVAL, "NUL byte refused");
    /* Without an error struct a failure is still reported (gs_error_prefix() once returned 0). */
    is_int(sim_config_parse("devices: [\n", 11, "t", &cfg, NULL), -EINVAL, "broken YAML, NULL err");
    is_int(sim_config_parse("{\"bogus\": 1}", 12, "t", &cfg, NULL), -EINVAL,
           "unknown field, NULL err");
}

/* GPUSIM_CUDA_VERSION: a CUDA 13.0 driver on request, presets stay 12.8. */
static void test_cuda_version(void)
{
    struct sim_config c;
    struct gs_error err = {0};
    unsetenv("GPUSIM_CONFIG");
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CUDA_VERSION");
    is_int(sim_config_from_env(&c, &err), 0, "t4 from the environment");
    ok(c.cuda_version == 12080 && strcmp(c.driver_version, "570.124.06") == 0,
       "presets report CUDA 12.8, driver 570 (%d, %s)", c.cuda_version, c.driver_version);
    static const struct {
        const char *v;
        int want;
    } good[] = {{"13.0", 13000}, {"13000", 13000}, {"12.4", 12040}, {"9.2", 9020}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("GPUSIM_CUDA_VERSION", good[i].v, 1);
        is_int(sim_config_from_env(&c, &err), 0, "GPUSIM_CUDA_VERSION=%s", good[i].v);
        is_int(c.cuda_version, good[i].want, "is %d", good[i].want);
    }
    setenv("GPUSIM_CUDA_VERSION", "13.0", 1);
    sim_config_from_env(&c, &err);
    is_str(c.driver_version, "580.65.06", "a 13.x driver is branch 580");
    static const char *const bad[] = {"13", "13.x", "13.10", "-13000", "100000", "8.0", "abc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GPUSIM_CUDA_VERSION", bad[i], 1);
        is_int(sim_config_from_env(&c, &err), -EINVAL, "GPUSIM_CUDA_VERSION=%s refused", bad[i]);
        like_str(err.msg, "GPUSIM_CUDA_VERSION", "the message names the variable");
    }
    unsetenv("GPUSIM_CUDA_VERSION");
}

int main(void)
{
    tap_plan_auto();
    test_presets();
    test_json();
    test_yaml();
    test_cuda_version();
    return tap_done();
}
