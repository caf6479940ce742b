/* SPDX-License-Identifier: Apache-2.0 */
/* The option table: defaults, environment, flags, bounds and messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "webhook/options.h"

static int parse(struct wh_options *o, struct gs_error *err, int argc, char **argv)
{
    return wh_options_parse(o, argc, argv, err);
}

int main(void)
{
    tap_plan_auto();
    struct wh_options o;
    struct gs_error err = {0};
    unsetenv("KUBECONFIG");
    unsetenv("GS_LOG_LEVEL");
    char *a0[] = {"wh"};
    is_int(parse(&o, &err, 1, a0), 0, "defaults");
    is_str(o.listen, ":8443", "--listen default :8443");
    is_str(o.device_class, "hami-core-gpu.project-hami.io", "device class default");
    is_str(o.resource_name, "nvidia.com/gpu", "resource name default");
    is_str(o.resource_mem, "nvidia.com/gpumem", "resource mem default");
    is_str(o.resource_mem_percentage, "nvidia.com/gpumem-percentage", "percentage default");
    is_str(o.resource_cores, "nvidia.com/gpucores", "cores default");
    is_str(o.kubeconfig, "", "kubeconfig default: in-cluster");
    is_int(o.cert_check_interval_ms, 1000, "cert check default");

    setenv("GS_WEBHOOK_RESOURCE_CORES", "example.com/cores", 1);
    setenv("GS_WEBHOOK_LISTEN", ":9443", 1);
    char *a1[] = {"wh", "--listen", "127.0.0.1:1", "--resource-mem=x.io/mem", "--help"};
    is_int(parse(&o, &err, 5, a1), 0, "env and flags");
    is_str(o.resource_cores, "example.com/cores", "environment applies");
    is_str(o.listen, "127.0.0.1:1", "flag beats environment");
    is_str(o.resource_mem, "x.io/mem", "--name=value form");
    ok(o.help, "--help is a bool flag");
    unsetenv("GS_WEBHOOK_RESOURCE_CORES");
    unsetenv("GS_WEBHOOK_LISTEN");

    char *a2[] = {"wh", "--max-connections", "0"};
    is_int(parse(&o, &err, 3, a2), -EINVAL, "bounds");
    is_str(err.msg, "option --max-connections: 0 is outside 1-65536", "bounds message");
    char *a3[] = {"wh", "--bogus"};
    is_int(parse(&o, &err, 2, a3), -EINVAL, "unknown option");
    is_str(err.msg, "unknown option \"--bogus\" (see --help)", "unknown named");
    char *a4[] = {"wh", "--kube-qps", "ten"};
    is_int(parse(&o, &err, 3, a4), -EINVAL, "not an integer");
    is_str(err.msg, "option --kube-qps: \"ten\" is not an integer", "integer message");
    setenv("GS_WEBHOOK_API_TIMEOUT_MS", "5", 1);
    is_int(parse(&o, &err, 1, a0), -EINVAL, "environment checked too");
    is_str(err.msg, "GS_WEBHOOK_API_TIMEOUT_MS --api-timeout-ms: 5 is outside 100-60000",
           "environment variable named");
    unsetenv("GS_WEBHOOK_API_TIMEOUT_MS");
    char *a5[] = {"wh", "--resource-name", ""};
    is_int(parse(&o, &err, 3, a5), -EINVAL, "empty resource name");
    char *a6[] = {"wh", "positional"};
    is_int(parse(&o, &err, 2, a6), -EINVAL, "positional refused");
    return tap_done();
}
