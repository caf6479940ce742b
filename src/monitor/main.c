/* SPDX-License-Identifier: Apache-2.0 */
/* gpuslice-monitor: options, wiring, signals. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "base/daemon.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/version.h"
#include "gpu/health.h"
#include "gpu/nvml.h"
#include "monitor/catalog.h"
#include "monitor/collect.h"
#include "monitor/options.h"
#include "monitor/server.h"
#include "net/tls.h"

static int fail(const char *what, const struct gs_error *err)
{
    char q[600];
    gs_error_log(what, "error=%s", gs_log_quote(q, sizeof(q), err->msg));
    fprintf(stderr, "gpuslice-monitor: %s: %s\n", what, err->msg);
    return 1;
}

/* The API client, or NULL when no Kubernetes is configured (then pod labels stay empty). An
 * explicitly named kubeconfig that cannot be loaded is an error. */
static int make_client(const struct mon_options *o, struct gs_k8s_client **out,
                       struct gs_error *err)
{
    *out = NULL;
    if (!o->kubernetes) {
        gs_info("kubernetes disabled", "reason=%s", "--no-kubernetes");
        return 0;
    }
    bool explicit_cfg = o->kubeconfig && o->kubeconfig[0];
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (!explicit_cfg && !(host && *host)) {
        gs_info("no kubernetes configured", "detail=%s",
                "\"no --kubeconfig and not in a cluster: device and standalone metrics only, "
                "empty pod labels\"");
        return 0;
    }
    struct gs_kube_config kc = {0};
    int r = gs_kube_config_load(explicit_cfg ? o->kubeconfig : NULL, &kc, err);
    if (r < 0)
        return r;
    struct gs_k8s_options ko = {
        .qps = 20,
        .burst = 40,
        .max_attempts = 2,
        .backoff_max_ms = 500,
        .timeout_ms = (long)(o->api_timeout_ns / 1000000),
        .connect_timeout_ms = (long)(o->api_timeout_ns / 1000000),
        .user_agent = "gpuslice-monitor",
    };
    *out = gs_k8s_client_new_with(&kc, &ko, err);
    char q1[300], q2[300];
    if (*out)
        gs_info("api server", "server=%s source=%s", gs_log_quote(q1, sizeof(q1), kc.server),
                gs_log_quote(q2, sizeof(q2), kc.source ? kc.source : ""));
    gs_kube_config_fini(&kc);
    return *out ? 0 : (err->code ? err->code : -EINVAL);
}

/* The health table as <standalone-state-dir>/health.json for `gpuslice ls/run`, which run no
 * watcher (gpu/health.h gpu_health_save_file); written only where that folder exists. Runs on
 * the watcher thread at every change. */
struct health_export {
    struct gpu_health_table *table;
    char path[PATH_MAX];
};

static void export_health(void *user)
{
    struct health_export *x = user;
    struct gs_error err = {0};
    if (x->path[0] && gpu_health_save_file(x->table, x->path, &err) < 0)
        gs_warn("GPU health file not written", "path=%s error=%s", GS_LOGQ(x->path),
                GS_LOGQ(err.msg));
}

static int serve(const struct mon_options *o)
{
    struct gs_error err = {0};
    sigset_t sigs;
    gs_daemon_block_signals(&sigs, 0);

    char node[256], plugin_state[PATH_MAX], standalone_state[PATH_MAX];
    if (o->node_name && o->node_name[0])
        snprintf(node, sizeof(node), "%s", o->node_name);
    else if (gethostname(node, sizeof(node)) != 0)
        snprintf(node, sizeof(node), "unknown");
    node[sizeof(node) - 1] = '\0';
    if (o->state_dir && o->state_dir[0])
        snprintf(plugin_state, sizeof(plugin_state), "%s", o->state_dir);
    else
        snprintf(plugin_state, sizeof(plugin_state), "/var/lib/kubelet/plugins/%s", o->driver_name);
    if (o->standalone_state_dir && o->standalone_state_dir[0])
        snprintf(standalone_state, sizeof(standalone_state), "%s", o->standalone_state_dir);
    else
        mon_standalone_default_dir(standalone_state, sizeof(standalone_state));

    if (gpu_nvml_set_driver_root(o->driver_root, &err) < 0) {
        fail("bad --driver-root", &err);
        return 2;
    }
    struct gs_k8s_client *k8s = NULL;
    if (make_client(o, &k8s, &err) < 0)
        return fail("cannot configure the API client", &err);

    struct gs_tls *tls = NULL;
    if (o->tls_cert_file && o->tls_cert_file[0]) {
        tls = gs_tls_new(o->tls_cert_file, o->tls_key_file,
                         (uint64_t)(o->cert_check_interval_ns / 1000000), NULL, NULL, &err);
        if (!tls) {
            gs_k8s_client_free(k8s);
            return fail("cannot load the serving certificate", &err);
        }
    }

    /* GPU health: the one watcher (gpu/health.h), read by the scrape. */
    struct gpu_health_policy policy;
    if (gpu_health_policy_init(&policy, o->health, o->health_nonfatal_xids, o->health_ignore_xids,
                               &err) < 0) {
        gs_tls_free(tls);
        gs_k8s_client_free(k8s);
        return fail("bad health option", &err);
    }
    struct gpu_inventory *inv = calloc(1, sizeof(*inv));
    struct gpu_health_table *htable = calloc(1, sizeof(*htable));
    struct gpu_health_watcher *watcher = NULL;
    bool htable_ok = false;
    if (inv && htable && gpu_discover("/sys", inv, &err) == 0) {
        gpu_health_table_init(htable, inv, &policy, (int64_t)time(NULL));
        htable_ok = true;
        static struct health_export hx;
        hx.table = htable;
        struct stat st;
        if (stat(standalone_state, &st) == 0 && S_ISDIR(st.st_mode) &&
            strlen(standalone_state) + sizeof("/" GPU_HEALTH_FILE) <= sizeof(hx.path))
            snprintf(hx.path, sizeof(hx.path), "%s/" GPU_HEALTH_FILE, standalone_state);
        export_health(&hx);
        struct gpu_health_watcher_config wc = {
            .clear_dir = o->health_clear_dir, .on_change = export_health, .user = &hx};
        watcher = gpu_health_watcher_start(htable, inv, &wc, &err);
        if (!watcher)
            gs_warn("GPU health not watched", "error=%s", GS_LOGQ(err.msg));
    } else {
        gs_warn("GPU health not watched: no GPU inventory", "error=%s", GS_LOGQ(err.msg));
    }
    gs_error_clear(&err);

    struct mon_catalog cat;
    struct mon_catalog_config cc = {
        .node = node,
        .host_dir = o->host_dir,
        .plugin_state_dir = plugin_state,
        .standalone_state_dir = standalone_state,
        .k8s = k8s,
        .refresh_ns = (uint64_t)o->refresh_interval_ns,
        .resync_ns = (uint64_t)o->resync_interval_ns,
        .sample_gpus = true,
        .audit_kill = o->audit_kill,
        .proc_root = o->proc_root,
        .cgroup_root = o->cgroup_root,
    };
    int rc = 0;
    if (mon_catalog_init(&cat, &cc, &err) < 0) {
        rc = fail("cannot start", &err);
        goto out_health;
    }
    struct mon_server_config sc = {
        .listen = o->listen,
        .connection_limit = (unsigned)o->max_connections,
        .per_client_limit = (unsigned)o->max_connections_per_client,
        .idle_timeout_s = (unsigned)(o->idle_timeout_ns / 1000000000LL),
        .header_timeout_ms = (unsigned)(o->header_timeout_ns / 1000000LL),
        .probe_listen = o->probe_listen,
        .probe_connection_limit = (unsigned)o->probe_max_connections,
        .tls = tls,
        .catalog = &cat,
        .collect = {.node = node,
                    .version = gs_version(),
                    .legacy = o->legacy_metrics,
                    .health = htable_ok ? htable : NULL},
    };
    struct mon_server *server = mon_server_start(&sc, &err);
    if (!server) {
        rc = fail("cannot serve", &err);
        goto out;
    }
    if (mon_catalog_start(&cat, &err) < 0) {
        rc = fail("cannot start", &err);
        goto out;
    }
    char q1[300], q2[300], q3[300], q4[300];
    gs_info("serving",
            "listen=%s port=%u tls=%s node=%s plugin_state_dir=%s host_dir=%s "
            "standalone_state_dir=%s legacy_metrics=%s",
            gs_log_quote(q1, sizeof(q1), o->listen), mon_server_port(server),
            tls ? "true" : "false", gs_log_quote(q2, sizeof(q2), node),
            gs_log_quote(q3, sizeof(q3), plugin_state), o->host_dir,
            gs_log_quote(q4, sizeof(q4), standalone_state), o->legacy_metrics ? "true" : "false");

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0)
        ;
    gs_info("stopping", "signal=%d", sig);
    mon_server_drain(server);
out:
    mon_catalog_stop(&cat);
    mon_server_stop(server);
    mon_catalog_fini(&cat);
out_health:
    gpu_health_watcher_stop(watcher);
    if (htable_ok) {
        gpu_health_table_stop(htable);
        gpu_health_table_fini(htable);
    }
    free(htable);
    free(inv);
    gs_tls_free(tls);
    gs_k8s_client_free(k8s);
    return rc;
}

int main(int argc, char **argv)
{
    struct mon_options o;
    struct gs_error err = {0};
    gs_log_set_component("monitor");
    mallopt(M_ARENA_MAX, 2);
    mon_tune_malloc();
    int r = mon_options_parse(&o, argc, argv, stdout, &err);
    if (r != 0) {
        mon_options_free(&o);
        if (r == GS_CONFIG_EXIT)
            return 0;
        fprintf(stderr, "gpuslice-monitor: %s\n", err.msg);
        return 2;
    }
    if (o.list_metrics) {
        for (size_t i = 0; mon_exported_names[i]; i++)
            printf("%s\n", mon_exported_names[i]);
        mon_options_free(&o);
        return 0;
    }
    gs_log_set_level((enum gs_log_level)(o.log_level + 1));
    int rc = serve(&o);
    mon_options_free(&o);
    return rc;
}
