/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/options.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "gpu/health-options.h"

#define DEFAULT_DRIVER "hami-core-gpu.project-hami.io"
#define OFF(f)         offsetof(struct plugin_options, f)

const char *const options_fault_points[] = {
    "none",
    "prepare-after-started",
    "prepare-after-claim-dir",
    "prepare-after-limits",
    "prepare-after-cdi",
    "prepare-after-completed",
    "unprepare-after-cdi",
    "unprepare-after-claim-dir",
    NULL,
};

static const char *const selections[] = {"volume-mounts", "device-nodes", "none", NULL};
static const char *const levels[] = {"error", "warn", "info", "debug", NULL};

static const struct gs_option table[] = {
    {.name = "node-name",
     .env = "NODE_NAME",
     .type = GS_OPT_STRING,
     .offset = OFF(node_name),
     .help = "Kubernetes node this plugin runs on (pool name of its ResourceSlices). Required."},
    {.name = "driver-name",
     .env = "GPUSLICE_DRIVER_NAME",
     .type = GS_OPT_STRING,
     .def = DEFAULT_DRIVER,
     .offset = OFF(driver_name),
     .help = "DRA driver name."},
    {.name = "kubeconfig",
     .env = "KUBECONFIG",
     .type = GS_OPT_STRING,
     .offset = OFF(kubeconfig),
     .help = "kubeconfig file; unset = in-cluster service account."},
    {.name = "registrar-dir",
     .env = "GPUSLICE_REGISTRAR_DIR",
     .type = GS_OPT_STRING,
     .def = "/var/lib/kubelet/plugins_registry",
     .offset = OFF(registrar_dir),
     .help = "kubelet's plugin registration directory (<driver>-reg.sock is created there)."},
    {.name = "plugin-dir",
     .env = "GPUSLICE_PLUGIN_DIR",
     .type = GS_OPT_STRING,
     .offset = OFF(plugin_dir),
     .help = "Directory of the DRA socket dra.sock; unset = /var/lib/kubelet/plugins/<driver>."},
    {.name = "cdi-root",
     .env = "GPUSLICE_CDI_ROOT",
     .type = GS_OPT_STRING,
     .def = "/var/run/cdi",
     .offset = OFF(cdi_root),
     .help = "Where CDI specs are written."},
    {.name = "state-dir",
     .env = "GPUSLICE_PLUGIN_STATE_DIR",
     .type = GS_OPT_STRING,
     .offset = OFF(state_dir),
     .help = "Directory of the checkpoint; unset = the plugin dir."},
    {.name = "host-dir",
     .env = "GPUSLICE_HOST_DIR",
     .type = GS_OPT_STRING,
     .def = "/usr/local/vgpu",
     .offset = OFF(host_dir),
     .help = "Host directory holding libvgpu.so, ld.so.preload and the per-claim directories."},
    {.name = "vgpu-lib",
     .env = "GPUSLICE_VGPU_LIB",
     .type = GS_OPT_STRING,
     .offset = OFF(vgpu_lib),
     .help = "If set, install this libvgpu.so into the host dir at start-up."},
    {.name = "sysfs-root",
     .env = "GPUSLICE_SYSFS_ROOT",
     .type = GS_OPT_STRING,
     .def = "/sys",
     .offset = OFF(sysfs_root),
     .help = "sysfs mount point (PCI topology)."},
    {.name = "driver-root",
     .env = "NVIDIA_DRIVER_ROOT",
     .type = GS_OPT_STRING,
     .def = "/",
     .offset = OFF(driver_root),
     .help = "Where the NVIDIA driver's libraries are (libnvidia-ml.so.1 is looked up under it "
             "first): / = the host's, /run/nvidia/driver under the GPU Operator."},
    {.name = "gpu-selection",
     .env = "GPUSLICE_GPU_SELECTION",
     .type = GS_OPT_ENUM,
     .choices = selections,
     .def = "volume-mounts",
     .offset = OFF(gpu_selection),
     .help =
         "How CDI specs select the GPU: NVIDIA runtime volume mounts, CDI device nodes, or not."},
    {.name = "healthcheck-port",
     .env = "GPUSLICE_HEALTHCHECK_PORT",
     .type = GS_OPT_INT,
     .def = "51515",
     .min = "0",
     .max = "65535",
     .offset = OFF(healthcheck_port),
     .help = "Port of /healthz and /readyz (all interfaces); 0 = off."},
    {.name = "metrics-addr",
     .env = "GPUSLICE_METRICS_ADDR",
     .type = GS_OPT_STRING,
     .def = ":51516",
     .offset = OFF(metrics_addr),
     .help = "host:port of /metrics (Prometheus); empty or port 0 = off."},
    {.name = "max-connections",
     .env = "GPUSLICE_PLUGIN_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "32",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections),
     .help = "Concurrent connections of --metrics-addr (--healthcheck-port has the server "
             "layer's probe budget)."},
    {.name = "max-connections-per-client",
     .env = "GPUSLICE_PLUGIN_MAX_CONNECTIONS_PER_CLIENT",
     .type = GS_OPT_INT,
     .def = "8",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections_per_client),
     .help = "Concurrent connections of --metrics-addr from one client address."},
    {.name = "idle-timeout",
     .env = "GPUSLICE_PLUGIN_IDLE_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "1s",
     .max = "10m",
     .offset = OFF(idle_timeout_ns),
     .help = "Close a connection of --metrics-addr that sends nothing for this long."},
    {.name = "header-timeout",
     .env = "GPUSLICE_PLUGIN_HEADER_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "100ms",
     .max = "10m",
     .offset = OFF(header_timeout_ns),
     .help = "A connection of --metrics-addr must send a whole request head this soon after its "
             "accept or its previous request, or it is closed."},
    {.name = "discovery-interval",
     .env = "GPUSLICE_DISCOVERY_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "30s",
     .min = "0",
     .max = "24h",
     .offset = OFF(discovery_interval_ns),
     .help = "Time between GPU re-discoveries; 0 = only at start."},
    {.name = "resync-interval",
     .env = "GPUSLICE_RESYNC_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "5m",
     .min = "0",
     .max = "24h",
     .offset = OFF(resync_interval_ns),
     .help =
         "Time between full ResourceSlice comparisons with the API server; 0 = only on events."},
    {.name = "reconcile-interval",
     .env = "GPUSLICE_RECONCILE_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "1m",
     .min = "0",
     .max = "24h",
     .offset = OFF(reconcile_interval_ns),
     .help = "Time between checks of prepared claims against the API; 0 = never."},
    {.name = "reconcile-grace",
     .env = "GPUSLICE_RECONCILE_GRACE",
     .type = GS_OPT_DURATION,
     .def = "5m",
     .min = "0",
     .max = "720h",
     .offset = OFF(reconcile_grace_ns),
     .help = "How long a prepared claim must be gone from the API before it is cleaned up."},
    {.name = "grpc-threads",
     .env = "GPUSLICE_GRPC_THREADS",
     .type = GS_OPT_INT,
     .def = "4",
     .min = "1",
     .max = "64",
     .offset = OFF(grpc_threads),
     .help = "Worker threads of the DRA gRPC service."},
    {.name = "max-grpc-message",
     .env = "GPUSLICE_MAX_GRPC_MESSAGE",
     .type = GS_OPT_INT,
     .def = "4194304",
     .min = "1024",
     .max = "67108864",
     .offset = OFF(max_grpc_message),
     .help = "Largest gRPC request accepted, in bytes."},
    {.name = "kube-qps",
     .env = "GPUSLICE_KUBE_QPS",
     .type = GS_OPT_INT,
     .def = "50",
     .min = "1",
     .max = "10000",
     .offset = OFF(kube_qps),
     .help = "Kubernetes API requests per second."},
    {.name = "kube-burst",
     .env = "GPUSLICE_KUBE_BURST",
     .type = GS_OPT_INT,
     .def = "100",
     .min = "1",
     .max = "10000",
     .offset = OFF(kube_burst),
     .help = "Kubernetes API burst."},
    GPU_HEALTH_OPTIONS(OFF(health), OFF(health_nonfatal_xids), OFF(health_ignore_xids),
                       OFF(health_clear_dir)),
    {.name = "log-level",
     .env = "GPUSLICE_LOG_LEVEL",
     .type = GS_OPT_ENUM,
     .choices = levels,
     .def = "info",
     .offset = OFF(log_level),
     .help = "Log level."},
    {.name = "fault-point",
     .env = "GPUSLICE_FAULT_POINT",
     .type = GS_OPT_ENUM,
     .choices = options_fault_points,
     .def = "none",
     .offset = OFF(fault_point),
     .help = "Testing only: SIGKILL the plugin when it reaches this step of prepare/unprepare."},
};

static const struct gs_config_spec spec = {
    .program = "gpuslice-kubelet-plugin",
    .summary = "The gpuslice DRA kubelet plugin: publishes GPUs as shareable devices and "
               "prepares claims.",
    .options = table,
    .n_options = GS_ARRAY_SIZE(table),
    .config_env = "GPUSLICE_PLUGIN_CONFIG",
};

int options_parse(int argc, char **argv, struct plugin_options *o, FILE *out, struct gs_error *err)
{
    int first = argc;
    int r = gs_config_parse(&spec, o, argc, argv, out, &first, err);
    if (r != 0)
        return r;
    if (first < argc)
        return gs_error_set(err, -EINVAL, "unexpected argument \"%.64s\"", argv[first]);
    if (!o->node_name || !*o->node_name)
        return gs_error_set(err, -EINVAL, "--node-name (or $NODE_NAME) is required");
    char buf[1024];
    if (!o->plugin_dir || !*o->plugin_dir) {
        snprintf(buf, sizeof(buf), "/var/lib/kubelet/plugins/%s", o->driver_name);
        if ((r = gs_config_set(&spec, o, "plugin-dir", buf, "default", err)) < 0)
            return r;
    }
    if (!o->state_dir || !*o->state_dir) {
        snprintf(buf, sizeof(buf), "%s", o->plugin_dir);
        if ((r = gs_config_set(&spec, o, "state-dir", buf, "default", err)) < 0)
            return r;
    }
    return 0;
}

void options_free(struct plugin_options *o)
{
    gs_config_free(&spec, o);
}
