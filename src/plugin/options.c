/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/options.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DRIVER "hami-core-gpu.project-hami.io"

enum opt_type {
    OPT_STRING = 0,
    OPT_INT = 1,
    OPT_ENUM = 2,
};

struct opt {
    const char *name;  /* flag without "--" */
    const char *env;   /* environment variable */
    enum opt_type type;
    size_t offset;     /* in struct plugin_options */
    size_t size;       /* of a string field */
    const char *def;   /* default, as text ("" = empty / computed) */
    int64_t min, max;  /* OPT_INT bounds */
    const char *choices; /* OPT_ENUM: "a|b|c" */
    const char *help;
};

#define S(field) OPT_STRING, offsetof(struct plugin_options, field), sizeof(((struct plugin_options *)0)->field)
#define I(field) OPT_INT, offsetof(struct plugin_options, field), 0
#define E(field) OPT_ENUM, offsetof(struct plugin_options, field), sizeof(((struct plugin_options *)0)->field)

const char *const options_fault_points[] = {
    "prepare-after-started",   "prepare-after-claim-dir",  "prepare-after-limits",
    "prepare-after-cdi",       "prepare-after-completed",  "unprepare-after-cdi",
    "unprepare-after-claim-dir", NULL,
};

static const struct opt table[] = {
    {"node-name", "NODE_NAME", S(node_name), "", 0, 0, NULL,
     "Kubernetes node this plugin runs on (pool name of its ResourceSlices). Required."},
    {"driver-name", "GPUSLICE_DRIVER_NAME", S(driver_name), DEFAULT_DRIVER, 0, 0, NULL,
     "DRA driver name."},
    {"kubeconfig", "KUBECONFIG", S(kubeconfig), "", 0, 0, NULL,
     "kubeconfig file; empty = in-cluster service account."},
    {"registrar-dir", "GPUSLICE_REGISTRAR_DIR", S(registrar_dir), "/var/lib/kubelet/plugins_registry",
     0, 0, NULL, "kubelet's plugin registration directory (<driver>-reg.sock is created there)."},
    {"plugin-dir", "GPUSLICE_PLUGIN_DIR", S(plugin_dir), "", 0, 0, NULL,
     "Directory of the DRA socket dra.sock; empty = /var/lib/kubelet/plugins/<driver>."},
    {"cdi-root", "GPUSLICE_CDI_ROOT", S(cdi_root), "/var/run/cdi", 0, 0, NULL,
     "Where CDI specs are written."},
    {"state-dir", "GPUSLICE_STATE_DIR", S(state_dir), "", 0, 0, NULL,
     "Directory of the checkpoint; empty = the plugin dir."},
    {"host-dir", "GPUSLICE_HOST_DIR", S(host_dir), "/usr/local/vgpu", 0, 0, NULL,
     "Host directory holding libvgpu.so, ld.so.preload and the per-claim directories."},
    {"vgpu-lib", "GPUSLICE_VGPU_LIB", S(vgpu_lib), "", 0, 0, NULL,
     "If set, install this libvgpu.so into the host dir at start-up."},
    {"sysfs-root", "GPUSLICE_SYSFS_ROOT", S(sysfs_root), "/sys", 0, 0, NULL,
     "sysfs mount point (PCI topology)."},
    {"gpu-selection", "GPUSLICE_GPU_SELECTION", E(gpu_selection), "volume-mounts", 0, 0,
     "volume-mounts|device-nodes|none",
     "How the CDI spec selects the GPU: NVIDIA runtime volume mounts, CDI device nodes, or not."},
    {"healthcheck-port", "GPUSLICE_HEALTHCHECK_PORT", I(healthcheck_port), "51515", 0, 65535, NULL,
     "Port of /healthz and /readyz (all interfaces); 0 = off."},
    {"metrics-addr", "GPUSLICE_METRICS_ADDR", S(metrics_addr), ":51516", 0, 0, NULL,
     "host:port of /metrics (Prometheus); empty or port 0 = off."},
    {"discovery-interval", "GPUSLICE_DISCOVERY_INTERVAL", I(discovery_interval_s), "30", 0, 86400,
     NULL, "Seconds between GPU re-discoveries; 0 = only at start."},
    {"resync-interval", "GPUSLICE_RESYNC_INTERVAL", I(resync_interval_s), "300", 0, 86400, NULL,
     "Seconds between full ResourceSlice comparisons with the API server."},
    {"reconcile-interval", "GPUSLICE_RECONCILE_INTERVAL", I(reconcile_interval_s), "60", 0, 86400,
     NULL, "Seconds between checks of prepared claims against the API; 0 = never."},
    {"reconcile-grace", "GPUSLICE_RECONCILE_GRACE", I(reconcile_grace_s), "300", 0, 86400 * 30,
     NULL, "Seconds a prepared claim must be gone from the API before it is cleaned up."},
    {"grpc-threads", "GPUSLICE_GRPC_THREADS", I(grpc_threads), "4", 1, 64, NULL,
     "Worker threads of the DRA gRPC service."},
    {"max-grpc-message", "GPUSLICE_MAX_GRPC_MESSAGE", I(max_grpc_message), "4194304", 1024,
     67108864, NULL, "Largest gRPC request accepted, in bytes."},
    {"kube-qps", "GPUSLICE_KUBE_QPS", I(kube_qps), "50", 1, 10000, NULL,
     "Kubernetes API requests per second."},
    {"kube-burst", "GPUSLICE_KUBE_BURST", I(kube_burst), "100", 1, 10000, NULL,
     "Kubernetes API request burst."},
    {"log-level", "GPUSLICE_LOG_LEVEL", E(log_level), "info", 0, 0, "error|warn|info|debug",
     "Log level."},
    {"fault-point", "GPUSLICE_FAULT_POINT", S(fault_point), "", 0, 0, NULL,
     "Testing only: SIGKILL the plugin when it reaches this point of prepare/unprepare."},
};

static int set_value(const struct opt *t, struct plugin_options *o, const char *val,
                     const char *origin, struct gs_error *err)
{
    char *base = (char *)o + t->offset;
    if (t->type == OPT_INT) {
        char *end;
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (!*val || *end || errno || v < t->min || v > t->max)
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not an integer in %lld..%lld",
                                origin, val, (long long)t->min, (long long)t->max);
        *(int64_t *)base = v;
        return 0;
    }
    if (strlen(val) >= t->size)
        return gs_error_set(err, -EINVAL, "%s: value too long (%zu bytes, max %zu)", origin,
                            strlen(val), t->size - 1);
    if (t->type == OPT_ENUM) {
        bool found = false;
        const char *c = t->choices;
        while (*c) {
            size_t n = strcspn(c, "|");
            if (n == strlen(val) && strncmp(c, val, n) == 0)
                found = true;
            c += n;
            if (*c == '|')
                c++;
        }
        if (!found)
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not one of %s", origin, val,
                                t->choices);
    }
    if (strcmp(t->name, "fault-point") == 0 && *val) {
        bool found = false;
        for (size_t i = 0; options_fault_points[i]; i++)
            if (strcmp(options_fault_points[i], val) == 0)
                found = true;
        if (!found)
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not a known fault point", origin,
                                val);
    }
    memcpy(base, val, strlen(val) + 1);
    return 0;
}

static const struct opt *find(const char *name, size_t len)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++)
        if (strlen(table[i].name) == len && strncmp(table[i].name, name, len) == 0)
            return &table[i];
    return NULL;
}

int options_parse(int argc, char **argv, struct plugin_options *o, struct gs_error *err)
{
    memset(o, 0, sizeof(*o));
    char origin[128];
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        int r = set_value(&table[i], o, table[i].def, table[i].name, err);
        if (r < 0)
            return r;
        const char *env = getenv(table[i].env);
        if (env && *env) {
            snprintf(origin, sizeof(origin), "$%s", table[i].env);
            if ((r = set_value(&table[i], o, env, origin, err)) < 0)
                return r;
        }
    }
    int action = OPTIONS_RUN;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return OPTIONS_HELP;
        if (strcmp(a, "--print-config") == 0) {
            action = OPTIONS_PRINT_CONFIG;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return gs_error_set(err, -EINVAL, "unexpected argument \"%.64s\"", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *t = find(name, nlen);
        if (!t)
            return gs_error_set(err, -EINVAL, "unknown option --%.*s (see --help)",
                                (int)GS_MIN(nlen, 64), name);
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc)
                return gs_error_set(err, -EINVAL, "--%s needs a value", t->name);
            val = argv[++i];
        }
        snprintf(origin, sizeof(origin), "--%s", t->name);
        int r = set_value(t, o, val, origin, err);
        if (r < 0)
            return r;
    }
    /* Computed defaults. */
    if (!o->plugin_dir[0])
        snprintf(o->plugin_dir, sizeof(o->plugin_dir), "/var/lib/kubelet/plugins/%s",
                 o->driver_name);
    if (!o->state_dir[0])
        snprintf(o->state_dir, sizeof(o->state_dir), "%s", o->plugin_dir);
    if (action == OPTIONS_RUN && !o->node_name[0])
        return gs_error_set(err, -EINVAL, "--node-name (or $NODE_NAME) is required");
    return action;
}

void options_help(FILE *f, const char *prog)
{
    fprintf(f, "Usage: %s [options]\n\nThe gpuslice DRA kubelet plugin: publishes GPUs as "
               "shareable devices and prepares claims.\n\nOptions (flag, environment, default):\n",
            prog);
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        const struct opt *t = &table[i];
        fprintf(f, "  --%s%s  ($%s, default \"%s\")\n      %s\n", t->name,
                t->type == OPT_INT ? "=N" : t->type == OPT_ENUM ? "=CHOICE" : "=VALUE", t->env,
                t->def, t->help);
        if (t->type == OPT_ENUM)
            fprintf(f, "      choices: %s\n", t->choices);
        if (t->type == OPT_INT)
            fprintf(f, "      range: %lld..%lld\n", (long long)t->min, (long long)t->max);
    }
    fprintf(f, "  --print-config\n      Print the effective configuration and exit.\n"
               "  --help\n      This text.\n");
}

void options_print(FILE *f, const struct plugin_options *o)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        const struct opt *t = &table[i];
        const char *base = (const char *)o + t->offset;
        if (t->type == OPT_INT)
            fprintf(f, "%s=%lld\n", t->name, (long long)*(const int64_t *)base);
        else
            fprintf(f, "%s=%s\n", t->name, base);
    }
}
