/* SPDX-License-Identifier: Apache-2.0 */
/* The option table of gpuslice-monitor. */
#include "monitor/options.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "config/config.h"
#include "gpu/health-options.h"
#include "base/macros.h"

#define OFF(f) offsetof(struct mon_options, f)

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};

static const struct gs_option options[] = {
    {.name = "listen",
     .env = "GPUSLICE_MONITOR_LISTEN",
     .type = GS_OPT_STRING,
     .def = ":" MON_DEFAULT_LISTEN,
     .metavar = "[HOST]:PORT",
     .offset = OFF(listen),
     .help = "address of /metrics, /healthz, /readyz (empty host = all IPv4 addresses)"},
    {.name = "node-name",
     .env = "NODE_NAME",
     .type = GS_OPT_STRING,
     .offset = OFF(node_name),
     .help = "this node's name (the `node` label); unset = the host name"},
    {.name = "kubeconfig",
     .env = "KUBECONFIG",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(kubeconfig),
     .help = "kubeconfig (http:// or https:// server); unset: in-cluster when it is, else no "
             "Kubernetes (pod labels stay empty)"},
    {.name = "kubernetes",
     .env = "GPUSLICE_MONITOR_KUBERNETES",
     .type = GS_OPT_BOOL,
     .def = "true",
     .offset = OFF(kubernetes),
     .help = "resolve pods and containers through the API server when one is configured; "
             "--no-kubernetes: never (claims keep empty pod labels)"},
    {.name = "driver-name",
     .env = "GPUSLICE_DRIVER_NAME",
     .type = GS_OPT_STRING,
     .def = MON_DEFAULT_DRIVER,
     .offset = OFF(driver_name),
     .help = "DRA driver name (it names the default --state-dir)"},
    {.name = "host-dir",
     .env = "GPUSLICE_HOST_DIR",
     .type = GS_OPT_STRING,
     .def = "/usr/local/vgpu",
     .metavar = "DIR",
     .offset = OFF(host_dir),
     .help = "the kubelet plugin's host dir: claims/<uid>/region/region are the claims' shared "
             "regions"},
    {.name = "driver-root",
     .env = "NVIDIA_DRIVER_ROOT",
     .type = GS_OPT_STRING,
     .def = "/",
     .metavar = "DIR",
     .offset = OFF(driver_root),
     .help = "where the NVIDIA driver's libraries are (libnvidia-ml.so.1 is looked up under it "
             "first): / = the host's or the NVIDIA runtime's, /run/nvidia/driver under the GPU "
             "Operator"},
    {.name = "state-dir",
     .env = "GPUSLICE_PLUGIN_STATE_DIR",
     .type = GS_OPT_STRING,
     .metavar = "DIR",
     .offset = OFF(state_dir),
     .help = "the kubelet plugin's state dir (checkpoint.json); unset = "
             "/var/lib/kubelet/plugins/<driver>"},
    {.name = "standalone-state-dir",
     .env = "GPUSLICE_STATE_DIR",
     .type = GS_OPT_STRING,
     .metavar = "DIR",
     .offset = OFF(standalone_state_dir),
     .help = "state dir of `gpuslice run` (ledger.db); unset = the standalone mode's default "
             "(/var/lib/gpuslice as root, else ~/.local/state/gpuslice)"},
    {.name = "audit-kill",
     .env = "GPUSLICE_MONITOR_AUDIT_KILL",
     .type = GS_OPT_BOOL,
     .def = "false",
     .offset = OFF(audit_kill),
     .help = "the auditor kills (SIGKILL) a process that holds more physical GPU memory than its "
             "claim's limit (HAMi's ACTIVE_OOM_KILLER); off: it only reports"},
    {.name = "proc-root",
     .env = "GPUSLICE_MONITOR_PROC_ROOT",
     .type = GS_OPT_STRING,
     .def = "/proc",
     .metavar = "DIR",
     .offset = OFF(proc_root),
     .help = "where the auditor reads each GPU process's cgroup, NSpid and pid namespace "
             "(<DIR>/<pid>/cgroup, status, ns/pid): the host's /proc (the monitor runs with "
             "hostPID)"},
    {.name = "cgroup-root",
     .env = "GPUSLICE_MONITOR_CGROUP_ROOT",
     .type = GS_OPT_STRING,
     .metavar = "DIR",
     .offset = OFF(cgroup_root),
     .help = "mount point of the cgroup v2 hierarchy under which `gpuslice run` records a "
             "slice's cgroup (the standalone auditor's identity of a slice's processes); unset = "
             "the cgroup2 mount of /proc/self/mountinfo, else /sys/fs/cgroup"},
    {.name = "legacy-metrics",
     .env = "GPUSLICE_MONITOR_LEGACY_METRICS",
     .type = GS_OPT_BOOL,
     .offset = OFF(legacy_metrics),
     .help = "also export HAMi's older metric names with their historic labels"},
    {.name = "tls-cert-file",
     .env = "GPUSLICE_MONITOR_TLS_CERT_FILE",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(tls_cert_file),
     .help = "serve HTTPS with this PEM certificate chain (re-read when it changes); unset = "
             "plain HTTP"},
    {.name = "tls-key-file",
     .env = "GPUSLICE_MONITOR_TLS_KEY_FILE",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(tls_key_file),
     .help = "PEM private key of --tls-cert-file"},
    {.name = "cert-check-interval",
     .type = GS_OPT_DURATION,
     .def = "1s",
     .min = "10ms",
     .max = "1h",
     .offset = OFF(cert_check_interval_ns),
     .help = "how often (at most) the certificate files are checked for changes"},
    {.name = "refresh-interval",
     .env = "GPUSLICE_MONITOR_REFRESH_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "1s",
     .min = "50ms",
     .max = "1m",
     .offset = OFF(refresh_interval_ns),
     .help = "how often claims are re-listed, GPUs sampled and utilisation windows closed"},
    {.name = "resync-interval",
     .env = "GPUSLICE_MONITOR_RESYNC_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "30s",
     .min = "100ms",
     .max = "1h",
     .offset = OFF(resync_interval_ns),
     .help = "how often a claim's pods and containers are resolved again through the API"},
    {.name = "api-timeout",
     .env = "GPUSLICE_MONITOR_API_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "3s",
     .min = "100ms",
     .max = "1m",
     .offset = OFF(api_timeout_ns),
     .help = "timeout of one API server request"},
    {.name = "max-connections",
     .type = GS_OPT_INT,
     .def = "64",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections),
     .help = "concurrent HTTP connections"},
    {.name = "max-connections-per-client",
     .env = "GPUSLICE_MONITOR_MAX_CONNECTIONS_PER_CLIENT",
     .type = GS_OPT_INT,
     .def = "8",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections_per_client),
     .help = "concurrent HTTP connections from one client address"},
    {.name = "idle-timeout",
     .env = "GPUSLICE_MONITOR_IDLE_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "1s",
     .max = "10m",
     .offset = OFF(idle_timeout_ns),
     .help = "a connection without a request this long is closed"},
    {.name = "header-timeout",
     .env = "GPUSLICE_MONITOR_HEADER_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "100ms",
     .max = "10m",
     .offset = OFF(header_timeout_ns),
     .help = "a connection must send a whole request head (TLS handshake included) this soon "
             "after its accept or its previous request, or it is closed (slow clients)"},
    {.name = "probe-max-connections",
     .env = "GPUSLICE_MONITOR_PROBE_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "64",
     .min = "1",
     .max = "1024",
     .offset = OFF(probe_max_connections),
     .help = "concurrent connections of --probe-listen (its own budget: at most 16 from one "
             "client, a request head within 2s)"},
    {.name = "probe-listen",
     .env = "GPUSLICE_MONITOR_PROBE_LISTEN",
     .type = GS_OPT_STRING,
     .metavar = "[HOST]:PORT",
     .offset = OFF(probe_listen),
     .help = "second plain-HTTP address answering only /healthz and /readyz, with its own "
             "connection budget (kubelet probes); empty = none"},
    {.name = "list-metrics",
     .type = GS_OPT_BOOL,
     .offset = OFF(list_metrics),
     .help = "print the name of every metric the monitor can export (as queried) and exit"},
    GPU_HEALTH_OPTIONS(OFF(health), OFF(health_nonfatal_xids), OFF(health_ignore_xids),
                       OFF(health_clear_dir)),
    {.name = "log-level",
     .env = "GPUSLICE_LOG_LEVEL",
     .type = GS_OPT_ENUM,
     .choices = log_levels,
     .def = "info",
     .offset = OFF(log_level),
     .help = "log verbosity"},
};

static const struct gs_config_spec spec = {
    .program = "gpuslice-monitor",
    .summary = "Per-node GPU monitor: device usage (NVML), the live usage and allocation of every "
               "claim the kubelet plugin prepared and of every `gpuslice run` slice, with HAMi's "
               "metric names. Serves /metrics (Prometheus text 0.0.4 or OpenMetrics), /healthz, "
               "/readyz.",
    .options = options,
    .n_options = GS_ARRAY_SIZE(options),
    .config_env = "GPUSLICE_MONITOR_CONFIG",
};

int mon_options_parse(struct mon_options *o, int argc, char *const *argv, FILE *out,
                      struct gs_error *err)
{
    int first = argc;
    memset(o, 0, sizeof(*o));
    int r = gs_config_parse(&spec, o, argc, argv, out, &first, err);
    if (r != 0)
        return r;
    if (first < argc)
        return gs_error_set(err, -EINVAL, "unexpected argument \"%.64s\" (see --help)",
                            argv[first]);
    const struct {
        const char *flag, *value;
    } names[] = {{"--listen", o->listen},
                 {"--driver-name", o->driver_name},
                 {"--host-dir", o->host_dir},
                 {"--proc-root", o->proc_root}};
    for (size_t i = 0; i < GS_ARRAY_SIZE(names); i++)
        if (!names[i].value || !names[i].value[0])
            return gs_error_set(err, -EINVAL, "%s: must not be empty", names[i].flag);
    bool cert = o->tls_cert_file && o->tls_cert_file[0],
         key = o->tls_key_file && o->tls_key_file[0];
    if (cert != key)
        return gs_error_set(err, -EINVAL, "%s is set but %s is not: HTTPS needs both",
                            cert ? "--tls-cert-file" : "--tls-key-file",
                            cert ? "--tls-key-file" : "--tls-cert-file");
    return 0;
}

void mon_options_free(struct mon_options *o)
{
    gs_config_free(&spec, o);
}
