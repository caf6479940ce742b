/* SPDX-License-Identifier: Apache-2.0 */
/* gpuslice-device-plugin: options, wiring, signals (see docs/internals/legacy.md). */
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuslice/hami.h"
#include "config/config.h"
#include "base/daemon.h"
#include "base/fs.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/version.h"
#include "deviceplugin/dp-grpc.h"
#include "deviceplugin/plugin.h"
#include "gpu/discovery.h"
#include "gpu/health-options.h"
#include "net/httpd.h"
#include "net/listen.h"
#include "net/server.h"

struct dp_options {
    char *node_name;
    char *kubeconfig;
    char *plugin_dir;
    char *resource;
    int64_t split_count;
    char *host_dir;
    char *vgpu_lib;
    char *state_dir;
    char *sysfs_root;
    int64_t healthcheck_port;
    char *metrics_addr;
    int64_t max_connections, max_connections_per_client, idle_timeout_ns, header_timeout_ns;
    int64_t publish_interval;
    int64_t gc_interval;
    char *mem_scaling, *core_scaling, *cuda_log_level;
    bool disable_core_limit;
    bool health;
    char *health_nonfatal_xids, *health_ignore_xids, *health_clear_dir;
    int log_level;
};

#define OFF(f) offsetof(struct dp_options, f)
static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};

static const struct gs_option options[] = {
    {.name = "node-name",
     .env = "NODE_NAME",
     .type = GS_OPT_STRING,
     .offset = OFF(node_name),
     .help = "this node's name (required)"},
    {.name = "kubeconfig",
     .env = "KUBECONFIG",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(kubeconfig),
     .help = "kubeconfig file; unset = in-cluster service account"},
    {.name = "device-plugin-dir",
     .env = "GPUSLICE_DEVICE_PLUGIN_DIR",
     .type = GS_OPT_STRING,
     .def = "/var/lib/kubelet/device-plugins",
     .metavar = "DIR",
     .offset = OFF(plugin_dir),
     .help = "kubelet's device plugin directory (kubelet.sock and our socket)"},
    {.name = "resource-name",
     .env = "GPUSLICE_RESOURCE_NAME",
     .type = GS_OPT_STRING,
     .def = HAMI_RES_GPU,
     .offset = OFF(resource),
     .help = "extended resource advertised"},
    {.name = "device-split-count",
     .env = "GPUSLICE_DEVICE_SPLIT_COUNT",
     .type = GS_OPT_INT,
     .def = "10",
     .min = "1",
     .max = "100",
     .offset = OFF(split_count),
     .help = "devices advertised per GPU (HAMi deviceSplitCount)"},
    {.name = "host-dir",
     .env = "GPUSLICE_HOST_DIR",
     .type = GS_OPT_STRING,
     .def = "/usr/local/vgpu",
     .metavar = "DIR",
     .offset = OFF(host_dir),
     .help = "host folder holding libvgpu.so and ld.so.preload, mounted into containers"},
    {.name = "vgpu-lib",
     .env = "GPUSLICE_VGPU_LIB",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(vgpu_lib),
     .help = "libvgpu.so to install into --host-dir at start (with ld.so.preload naming it); "
             "unset = --host-dir is filled by someone else"},
    {.name = "state-dir",
     .env = "GPUSLICE_DEVICE_PLUGIN_STATE_DIR",
     .type = GS_OPT_STRING,
     .def = "/var/lib/gpuslice/legacy",
     .metavar = "DIR",
     .offset = OFF(state_dir),
     .help = "host folder for per-container limits files and shared caches"},
    {.name = "sysfs-root",
     .env = "GPUSLICE_SYSFS_ROOT",
     .type = GS_OPT_STRING,
     .def = "/sys",
     .metavar = "DIR",
     .offset = OFF(sysfs_root),
     .help = "sysfs for PCI topology"},
    {.name = "healthcheck-port",
     .env = "GPUSLICE_HEALTHCHECK_PORT",
     .type = GS_OPT_INT,
     .def = "0",
     .min = "0",
     .max = "65535",
     .offset = OFF(healthcheck_port),
     .help = "plain-HTTP /healthz port (0 = none)"},
    {.name = "metrics-addr",
     .env = "GPUSLICE_METRICS_ADDR",
     .type = GS_OPT_STRING,
     .def = "",
     .metavar = "[HOST]:PORT",
     .offset = OFF(metrics_addr),
     .help = "/metrics and /healthz listener (empty = none)"},
    {.name = "max-connections",
     .env = "GPUSLICE_DEVICE_PLUGIN_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "32",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections),
     .help = "concurrent connections of --metrics-addr (--healthcheck-port has the server "
             "layer's probe budget)"},
    {.name = "max-connections-per-client",
     .env = "GPUSLICE_DEVICE_PLUGIN_MAX_CONNECTIONS_PER_CLIENT",
     .type = GS_OPT_INT,
     .def = "8",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections_per_client),
     .help = "concurrent connections of --metrics-addr from one client address"},
    {.name = "idle-timeout",
     .env = "GPUSLICE_DEVICE_PLUGIN_IDLE_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "1s",
     .max = "10m",
     .offset = OFF(idle_timeout_ns),
     .help = "close a connection of --metrics-addr that sends nothing for this long"},
    {.name = "header-timeout",
     .env = "GPUSLICE_DEVICE_PLUGIN_HEADER_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "100ms",
     .max = "10m",
     .offset = OFF(header_timeout_ns),
     .help = "a connection of --metrics-addr must send a whole request head this soon after "
             "its accept or its previous request, or it is closed (slow clients)"},
    {.name = "publish-interval",
     .env = "GPUSLICE_PUBLISH_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "30s",
     .min = "1s",
     .offset = OFF(publish_interval),
     .help = "how often the node annotation and handshake are written"},
    {.name = "gc-interval",
     .env = "GPUSLICE_DEVICE_PLUGIN_GC_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "60s",
     .min = "1s",
     .offset = OFF(gc_interval),
     .help = "how often the per-container state folders of pods gone from the node are "
             "removed"},
    {.name = "device-memory-scaling",
     .env = "GPUSLICE_DEVICE_MEMORY_SCALING",
     .type = GS_OPT_STRING,
     .def = "1",
     .offset = OFF(mem_scaling),
     .help = "HAMi deviceMemoryScaling: published devmem = memory x this; above 1, containers get "
             "CUDA_OVERSUBSCRIBE=true"},
    {.name = "device-core-scaling",
     .env = "GPUSLICE_DEVICE_CORE_SCALING",
     .type = GS_OPT_STRING,
     .def = "1",
     .offset = OFF(core_scaling),
     .help = "HAMi deviceCoreScaling: published devcore = 100 x this"},
    {.name = "libcuda-log-level",
     .env = "GPUSLICE_LIBCUDA_LOG_LEVEL",
     .type = GS_OPT_STRING,
     .def = "",
     .offset = OFF(cuda_log_level),
     .help = "LIBCUDA_LOG_LEVEL given to containers (HAMi libCudaLogLevel; empty = not set)"},
    {.name = "disable-core-limit",
     .env = "GPUSLICE_DISABLE_CORE_LIMIT",
     .type = GS_OPT_BOOL,
     .def = "false",
     .offset = OFF(disable_core_limit),
     .help = "give containers GPU_CORE_UTILIZATION_POLICY=disable (HAMi disableCoreLimit)"},
    GPU_HEALTH_OPTIONS(OFF(health), OFF(health_nonfatal_xids), OFF(health_ignore_xids),
                       OFF(health_clear_dir)),
    {.name = "log-level",
     .env = "GPUSLICE_LOG_LEVEL",
     .type = GS_OPT_ENUM,
     .choices = log_levels,
     .def = "info",
     .offset = OFF(log_level),
     .help = "lowest level logged"},
};

static const struct gs_config_spec spec = {
    .program = "gpuslice-device-plugin",
    .summary = "kubelet device plugin for HAMi-style GPU sharing (legacy mode)",
    .options = options,
    .n_options = GS_ARRAY_SIZE(options),
    .config_env = "GPUSLICE_DEVICE_PLUGIN_CONFIG",
};

#define VGPU_LIB_MAX (256u * 1024u * 1024u)

/* libvgpu.so and ld.so.preload into --host-dir, as the DRA kubelet plugin installs them. */
static int parse_scaling(const char *flag, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !(v > 0) || v > 1000) {
        fprintf(stderr, "gpuslice-device-plugin: %s \"%s\": expected a number > 0\n", flag,
                s ? s : "");
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static int install_host_files(const struct dp_options *o, struct gs_error *err)
{
    char path[4096];
    int r = gs_mkdir_p(o->host_dir, 0755, err);
    if (r < 0 || !o->vgpu_lib || !*o->vgpu_lib)
        return r;
    char *data = NULL;
    size_t len = 0;
    if ((r = gs_read_file(o->vgpu_lib, VGPU_LIB_MAX, &data, &len, err)) < 0)
        return gs_error_prefix(err, "--vgpu-lib: "), r;
    snprintf(path, sizeof(path), "%s/libvgpu.so", o->host_dir);
    r = gs_write_file_atomic_ex(path, data, len, 0755, GS_FS_DURABLE, err);
    free(data);
    if (r < 0)
        return r;
    static const char preload[] = DP_CONTAINER_VGPU "/libvgpu.so\n";
    snprintf(path, sizeof(path), "%s/ld.so.preload", o->host_dir);
    return gs_write_file_atomic_ex(path, preload, strlen(preload), 0644, GS_FS_DURABLE, err);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    struct dp_plugin *p = cls;
    if (!*con_cls) {
        *con_cls = p;
        return MHD_YES;
    }
    *upload_data_size = 0;
    char *body = NULL;
    int n;
    unsigned status = 200;
    if (strcmp(url, "/healthz") == 0) {
        n = asprintf(&body, "ok\n");
    } else if (strcmp(url, "/metrics") == 0 && p) {
        struct dp_stats st;
        dp_plugin_stats(p, &st);
        char build[512];
        gs_version_metric(build, sizeof(build));
        n = asprintf(&body,
                     "%s"
                     "# TYPE gpuslice_device_plugin_allocate_total counter\n"
                     "gpuslice_device_plugin_allocate_total %" PRIu64 "\n"
                     "# TYPE gpuslice_device_plugin_allocate_errors_total counter\n"
                     "gpuslice_device_plugin_allocate_errors_total %" PRIu64 "\n"
                     "# TYPE gpuslice_device_plugin_registrations_total counter\n"
                     "gpuslice_device_plugin_registrations_total %" PRIu64 "\n",
                     build, st.allocate, st.allocate_errors, st.registrations);
    } else {
        status = 404;
        n = asprintf(&body, "not found\n");
    }
    if (n < 0)
        return MHD_NO;
    return gs_httpd_reply(c, status, "text/plain; version=0.0.4", body, (size_t)n, true);
}

static struct gs_net_server *http_start(const char *what, const struct sockaddr_storage *addr,
                                        struct dp_plugin *p, struct gs_net_budget budget,
                                        struct gs_error *err)
{
    struct gs_net_server_config c = {
        .what = what, .addr = *addr, .handler = handle, .handler_cls = p, .budget = budget};
    return gs_net_server_start(&c, err);
}

int main(int argc, char **argv)
{
    struct dp_options o = {0};
    struct gs_error err = {0};
    int first = argc;
    gs_log_set_component("device-plugin");
    int pr = gs_config_parse(&spec, &o, argc, argv, stdout, &first, &err);
    if (pr == 0 && first < argc) {
        snprintf(err.msg, sizeof(err.msg), "unexpected argument \"%.64s\"", argv[first]);
        pr = -EINVAL;
    }
    if (pr == 0 && (!o.node_name || !*o.node_name)) {
        snprintf(err.msg, sizeof(err.msg), "--node-name (NODE_NAME) is required");
        pr = -EINVAL;
    }
    if (pr != 0) {
        gs_config_free(&spec, &o);
        if (pr == GS_CONFIG_EXIT)
            return 0;
        fprintf(stderr, "gpuslice-device-plugin: %s\n", err.msg);
        return 2;
    }
    gs_log_set_level((enum gs_log_level)(o.log_level + 1));
    sigset_t sigs;
    gs_daemon_block_signals(&sigs, 0);

    int rc = 1;
    struct gs_kube_config kc = {0};
    struct gs_k8s_client *k8s = NULL;
    struct gs_k8s_recorder *events = NULL;
    struct dp_plugin *p = NULL;
    struct gs_net_server *metrics = NULL, *health = NULL;
    struct gpu_inventory *inv = calloc(1, sizeof(*inv));
    struct gpu_health_table *htable = calloc(1, sizeof(*htable));
    struct gpu_health_watcher *watcher = NULL;
    bool htable_ok = false;
    dp_grpc_init();
    if (!inv || !htable)
        goto out;
    if (install_host_files(&o, &err) < 0) {
        fprintf(stderr, "gpuslice-device-plugin: %s\n", err.msg);
        goto out;
    }
    if (gpu_discover(o.sysfs_root, inv, &err) < 0) {
        fprintf(stderr, "gpuslice-device-plugin: GPU discovery: %s\n", err.msg);
        goto out;
    }
    if (gs_kube_config_load(o.kubeconfig, &kc, &err) < 0 || !(k8s = gs_k8s_client_new(&kc, &err))) {
        fprintf(stderr, "gpuslice-device-plugin: API server: %s\n", err.msg);
        goto out;
    }
    struct gpu_health_policy policy;
    if (gpu_health_policy_init(&policy, o.health, o.health_nonfatal_xids, o.health_ignore_xids,
                               &err) < 0) {
        fprintf(stderr, "gpuslice-device-plugin: %s\n", err.msg);
        goto out;
    }
    gpu_health_table_init(htable, inv, &policy, (int64_t)time(NULL));
    htable_ok = true;
    struct gpu_health_watcher_config wc = {.clear_dir = o.health_clear_dir};
    if (!(watcher = gpu_health_watcher_start(htable, inv, &wc, &err))) {
        fprintf(stderr, "gpuslice-device-plugin: GPU health: %s\n", err.msg);
        goto out;
    }
    double mem_scaling = 1, core_scaling = 1;
    if (parse_scaling("--device-memory-scaling", o.mem_scaling, &mem_scaling) < 0 ||
        parse_scaling("--device-core-scaling", o.core_scaling, &core_scaling) < 0)
        goto out;
    events = gs_k8s_recorder_new(
        k8s, &(struct gs_k8s_recorder_options){.component = "gpuslice-device-plugin",
                                               .instance = o.node_name});
    struct dp_config cfg = {.node_name = o.node_name,
                            .mem_scaling = mem_scaling,
                            .core_scaling = core_scaling,
                            .cuda_log_level = o.cuda_log_level,
                            .disable_core_limit = o.disable_core_limit,
                            .plugin_dir = o.plugin_dir,
                            .resource = o.resource,
                            .split_count = (unsigned)o.split_count,
                            .host_dir = o.host_dir,
                            .state_dir = o.state_dir,
                            .k8s = k8s,
                            .events = events,
                            .inv = inv,
                            .health = htable};
    if (!(p = dp_plugin_new(&cfg, &err)))
        goto out;
    if (o.metrics_addr && *o.metrics_addr) {
        struct sockaddr_storage a;
        if (gs_listen_parse("--metrics-addr", o.metrics_addr, &a, &err) < 0 ||
            !(metrics =
                  http_start("--metrics-addr", &a, p,
                             (struct gs_net_budget){
                                 .max_connections = (unsigned)o.max_connections,
                                 .max_per_client = (unsigned)o.max_connections_per_client,
                                 .header_timeout_ms = (unsigned)(o.header_timeout_ns / 1000000),
                                 .idle_timeout_s = (unsigned)(o.idle_timeout_ns / 1000000000)},
                             &err))) {
            fprintf(stderr, "gpuslice-device-plugin: %s\n",
                    err.msg[0] ? err.msg : "--metrics-addr: cannot listen");
            goto out;
        }
    }
    if (o.healthcheck_port > 0) {
        char hp[32];
        snprintf(hp, sizeof(hp), ":%" PRId64, o.healthcheck_port);
        struct sockaddr_storage a;
        if (gs_listen_parse("--healthcheck-port", hp, &a, &err) < 0 ||
            !(health = http_start("--healthcheck-port", &a, NULL, gs_net_probe_budget(0), &err))) {
            fprintf(stderr, "gpuslice-device-plugin: %s\n", err.msg);
            goto out;
        }
    }
    gs_log(GS_LOG_INFO, "starting", "node=%s gpus=%zu split=%" PRId64 " dir=%s", o.node_name,
           inv->n, o.split_count, o.plugin_dir);
    uint64_t next_publish = 0, next_gc = 0, health_gen = 0;
    for (;;) {
        struct gs_error e = {0};
        char q[400];
        uint64_t now = (uint64_t)time(NULL);
        uint64_t hg = gpu_health_wait_change(htable, health_gen, 0);
        if (now >= next_publish || hg != health_gen) { /* a health change is published at once */
            health_gen = hg;
            if (dp_plugin_publish(p, &e) < 0)
                gs_log(GS_LOG_WARN, "node annotation not written", "error=%s",
                       gs_log_quote(q, sizeof(q), e.msg));
            next_publish = now + (uint64_t)(o.publish_interval / 1000000000LL);
        }
        e = (struct gs_error){0};
        if (now >= next_gc) {
            if (dp_plugin_gc(p, &e) < 0)
                gs_log(GS_LOG_WARN, "state folders not cleaned", "error=%s",
                       gs_log_quote(q, sizeof(q), e.msg));
            next_gc = now + (uint64_t)(o.gc_interval / 1000000000LL);
            e = (struct gs_error){0};
        }
        if (dp_plugin_tick(p, &e) < 0)
            gs_log(GS_LOG_WARN, "registration failed", "error=%s",
                   gs_log_quote(q, sizeof(q), e.msg));
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 300 * 1000000L};
        int sig = sigtimedwait(&sigs, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            gs_log(GS_LOG_INFO, "stopping", "signal=%d", sig);
            break;
        }
    }
    rc = 0;
out:
    gs_net_server_stop(metrics);
    gs_net_server_stop(health);
    dp_plugin_free(p);
    gpu_health_watcher_stop(watcher);
    if (htable_ok) {
        gpu_health_table_stop(htable);
        gpu_health_table_fini(htable);
    }
    free(htable);
    gs_k8s_recorder_free(events);
    gs_k8s_client_free(k8s);
    gs_kube_config_fini(&kc);
    free(inv);
    dp_grpc_fini();
    gs_config_free(&spec, &o);
    return rc;
}
