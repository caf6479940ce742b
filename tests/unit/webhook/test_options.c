/* SPDX-License-Identifier: Apache-2.0 */
/* The option table: defaults, environment, flags, bounds, messages, --help/--print-config. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "webhook/options.h"

static char out_buf[16384];

static int first_arg;

static int parse(struct wh_options *o, struct gs_error *err, int argc, char **argv)
{
    FILE *out = fmemopen(out_buf, sizeof(out_buf), "w");
    int r = wh_options_parse(o, argc, argv, out, &first_arg, err);
    fclose(out);
    return r;
}

int main(void)
{
    tap_plan_auto();
    struct wh_options o;
    struct gs_error err = {0};
    unsetenv("GPUSLICE_LOG_LEVEL");
    unsetenv("GPUSLICE_WEBHOOK_CONFIG");
    char *a0[] = {"wh"};
    is_int(parse(&o, &err, 1, a0), 0, "defaults");
    is_str(o.listen, ":8443", "--listen default :8443");
    is_str(o.device_class, "hami-core-gpu.project-hami.io", "device class default");
    is_str(o.resource_name, "nvidia.com/gpu", "resource name default");
    is_str(o.resource_mem, "nvidia.com/gpumem", "resource mem default");
    is_str(o.resource_mem_percentage, "nvidia.com/gpumem-percentage", "percentage default");
    is_str(o.resource_cores, "nvidia.com/gpucores", "cores default");
    ok(o.kubeconfig == NULL, "kubeconfig default: unset ($KUBECONFIG, else in-cluster)");
    is_int(o.cert_check_interval_ns, 1000000000LL, "cert check default 1s");
    is_int(o.template_cache_ttl_ns, 300000000000LL, "template cache default 5m");
    is_int(o.log_level, 2, "log level default info");
    wh_options_free(&o);

    setenv("GPUSLICE_WEBHOOK_RESOURCE_CORES", "example.com/cores", 1);
    setenv("GPUSLICE_WEBHOOK_LISTEN", ":9443", 1);
    char *a1[] = {
        "wh",    "--listen",    "127.0.0.1:1", "--resource-mem=x.io/mem", "--slice-cache-ttl",
        "1m30s", "--log-level", "debug"};
    is_int(parse(&o, &err, 8, a1), 0, "env and flags");
    is_str(o.resource_cores, "example.com/cores", "environment applies");
    is_str(o.listen, "127.0.0.1:1", "flag beats environment");
    is_str(o.resource_mem, "x.io/mem", "--name=value form");
    is_int(o.slice_cache_ttl_ns, 90000000000LL, "durations in Go syntax");
    is_int(o.log_level, 3, "log level debug");
    wh_options_free(&o);
    unsetenv("GPUSLICE_WEBHOOK_RESOURCE_CORES");
    unsetenv("GPUSLICE_WEBHOOK_LISTEN");

    char *a2[] = {"wh", "--max-connections", "0"};
    is_int(parse(&o, &err, 3, a2), -ERANGE, "bounds");
    is_str(err.msg, "--max-connections: 0 is below the minimum 1", "bounds message");
    wh_options_free(&o);
    char *a3[] = {"wh", "--bogus"};
    is_int(parse(&o, &err, 2, a3), -EINVAL, "unknown option");
    like_str(err.msg, "--bogus", "unknown option named");
    wh_options_free(&o);
    setenv("GPUSLICE_WEBHOOK_API_TIMEOUT", "5ms", 1);
    ok(parse(&o, &err, 1, a0) < 0, "environment checked too");
    like_str(err.msg, "GPUSLICE_WEBHOOK_API_TIMEOUT", "environment variable named");
    wh_options_free(&o);
    unsetenv("GPUSLICE_WEBHOOK_API_TIMEOUT");
    char *a5[] = {"wh", "--resource-name", ""};
    is_int(parse(&o, &err, 3, a5), -EINVAL, "empty resource name");
    is_str(err.msg, "--resource-name: must not be empty", "empty named");
    wh_options_free(&o);
    char *a6[] = {"wh", "--namespace", "team-b", "translate", "a.yaml"};
    is_int(parse(&o, &err, 5, a6), 0, "translate with files");
    is_int(first_arg, 3, "first non-option argument found (translate)");
    is_str(o.namespace, "team-b", "--namespace for translate");
    wh_options_free(&o);
    char *a7[] = {"wh", "--help"};
    is_int(parse(&o, &err, 2, a7), GS_CONFIG_EXIT, "--help exits");
    like_str(out_buf, "--resource-mem-percentage", "help lists the options");
    like_str(out_buf, "GPUSLICE_WEBHOOK_RESOURCE_MEM", "help names the environment variables");
    wh_options_free(&o);
    char *a8[] = {"wh", "--print-config", "--device-class", "gpu.example.com"};
    is_int(parse(&o, &err, 4, a8), GS_CONFIG_EXIT, "--print-config exits");
    like_str(out_buf, "gpu.example.com", "effective configuration printed");
    wh_options_free(&o);
    return tap_done();
}
