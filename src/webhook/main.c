/* SPDX-License-Identifier: Apache-2.0 */
/* gpuslice-webhook: options, wiring, signals. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/daemon.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "base/log.h"
#include "base/macros.h"
#include "webhook/admit.h"
#include "webhook/certgen-cmd.h"
#include "webhook/cluster.h"
#include "webhook/options.h"
#include "webhook/preview.h"
#include "webhook/server.h"
#include "net/listen.h"
#include "net/tls.h"
#include "webhook/vendor.h"

static int ensure_templates(void *user, const json_t *templates, uint64_t deadline_ms,
                            struct gs_error *err)
{
    return wh_cluster_ensure_templates(user, templates, deadline_ms, err);
}

static void extra_metrics(void *user, struct wh_metrics_extra *out)
{
    struct wh_cluster_stats st;
    wh_cluster_get_stats(user, &st);
    *out = (struct wh_metrics_extra){st.templates_created, st.templates_existing,
                                     st.template_cache_hits, st.api_errors};
}

static int fail(const char *what, const struct gs_error *err)
{
    char q[600];
    gs_error_log(what, "error=%s", gs_log_quote(q, sizeof(q), err->msg));
    fprintf(stderr, "gpuslice-webhook: %s: %s\n", what, err->msg);
    return 1;
}

static int create_owned(void *user, const json_t *templates, uint64_t deadline_ms,
                        struct gs_error *err)
{
    return wh_cluster_create_owned(user, templates, deadline_ms, err);
}

static int delete_owned(void *user, const char *ns, const json_t *names, const json_t *prefixes,
                        bool dry_run, uint64_t deadline_ms, json_t *warnings)
{
    return wh_cluster_delete_owned(user, ns, names, prefixes, dry_run, deadline_ms, warnings);
}

static int serve(const struct wh_options *opts)
{
    const struct wh_options o = *opts;
    struct gs_error err = {0};
    struct sockaddr_storage listen_addr;
    if (gs_listen_parse("--listen", o.listen, &listen_addr, &err) < 0) {
        fprintf(stderr, "gpuslice-webhook: %s\n", err.msg);
        return 2;
    }

    /* Signals are taken synchronously by sigwait() below; every thread inherits the mask. */
    sigset_t sigs;
    gs_daemon_block_signals(&sigs, 0);

    struct wh_names names;
    static struct wh_vendors vendors;
    if (wh_options_names(&o, &names, &vendors, &err) < 0)
        return fail("cannot read the device configuration", &err);
    struct wh_metrics metrics = {0};
    struct gs_kube_config kc = {0};
    if (gs_kube_config_load(o.kubeconfig, &kc, &err) < 0)
        return fail("cannot load the API server configuration", &err);
    struct gs_k8s_options ko = {
        .qps = (double)o.kube_qps,
        .burst = (unsigned)o.kube_burst,
        .max_attempts = 3,
        .backoff_max_ms = 1000,
        .timeout_ms = (long)(o.api_timeout_ns / 1000000),
        .connect_timeout_ms = (long)(o.api_timeout_ns / 1000000),
        .user_agent = "gpuslice-webhook",
    };
    struct gs_k8s_client *client = gs_k8s_client_new_with(&kc, &ko, &err);
    if (!client) {
        gs_kube_config_fini(&kc);
        return fail("cannot create the API client", &err);
    }
    char q1[300], q2[300], q3[300], q4[300];
    gs_info("api server", "server=%s source=%s", gs_log_quote(q1, sizeof(q1), kc.server),
            gs_log_quote(q2, sizeof(q2), kc.source ? kc.source : ""));
    gs_kube_config_fini(&kc);
    struct wh_cluster_config cc = {
        .driver = o.driver,
        .slice_ttl_ms = (uint64_t)(o.slice_cache_ttl_ns / 1000000),
        .class_ttl_ms = (uint64_t)(o.class_cache_ttl_ns / 1000000),
        .template_ttl_ms = (uint64_t)(o.template_cache_ttl_ns / 1000000),
    };
    struct wh_cluster *cluster = wh_cluster_new(client, &cc);
    if (!cluster) {
        err.code = -ENOMEM;
        snprintf(err.msg, sizeof(err.msg), "out of memory");
        return fail("cannot start", &err);
    }
    if (wh_cluster_check_mode(cluster, (enum wh_mode)o.mode, o.device_class, &err) < 0) {
        wh_cluster_free(cluster);
        return fail("refusing to start", &err);
    }
    struct gs_tls *tls =
        gs_tls_new(o.tls_cert_file, o.tls_key_file, (uint64_t)(o.cert_check_interval_ns / 1000000),
                   &metrics.tls_reloads, &metrics.tls_reload_errors, &err);
    if (!tls) {
        wh_cluster_free(cluster);
        return fail("cannot load the serving certificate", &err);
    }
    struct wh_cluster_ops ops;
    wh_cluster_ops(cluster, &ops);
    struct wh_legacy_config legacy = {
        .scheduler_name = o.scheduler_name,
        .default_gpu = o.default_gpu,
        .default_gpumem = o.default_gpumem,
        .default_gpucores = o.default_gpucores,
    };
    struct wh_admit_ctx admit = {
        .mode = (enum wh_mode)o.mode,
        .legacy = &legacy,
        .names = &names,
        .ops = &ops,
        .ensure_templates = ensure_templates,
        .ensure_user = cluster,
        .create_owned = create_owned,
        .delete_owned = delete_owned,
        .timeout_ms = (uint64_t)(o.admission_timeout_ns / 1000000),
        .metrics = &metrics,
    };
    struct wh_server_config sc = {
        .listen = o.listen,
        .health_listen = o.health_listen,
        .connection_limit = (unsigned)o.max_connections,
        .per_client_limit = (unsigned)o.max_connections_per_client,
        .idle_timeout_s = (unsigned)GS_MAX(o.idle_timeout_ns / 1000000000, 1),
        .header_timeout_ms = (unsigned)(o.header_timeout_ns / 1000000),
        .health_connection_limit = (unsigned)o.health_max_connections,
        .admission_timeout_ms = (uint64_t)(o.admission_timeout_ns / 1000000),
        .tls13_only = o.tls_min_version == 1,
        .admit = &admit,
        .metrics = &metrics,
        .tls = tls,
        .extra_metrics = extra_metrics,
        .extra_user = cluster,
    };
    struct wh_server *server = wh_server_start(&sc, &err);
    if (!server) {
        gs_tls_free(tls);
        wh_cluster_free(cluster);
        return fail("cannot serve", &err);
    }
    gs_info("serving",
            "mode=%s listen=%s health_listen=%s device_class=%s driver=%s max_connections=%lld "
            "max_connections_per_client=%lld idle_timeout_s=%lld admission_timeout_ms=%lld",
            o.mode == WH_MODE_LEGACY ? "legacy" : "dra", gs_log_quote(q1, sizeof(q1), o.listen),
            gs_log_quote(q2, sizeof(q2), o.health_listen),
            gs_log_quote(q3, sizeof(q3), o.device_class), gs_log_quote(q4, sizeof(q4), o.driver),
            (long long)o.max_connections, (long long)o.max_connections_per_client,
            (long long)GS_MAX(o.idle_timeout_ns / 1000000000, 1),
            (long long)(o.admission_timeout_ns / 1000000));

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0)
        ;
    /* Rolling updates: endpoints drop this replica while it still answers, so the API server
     * never meets a closed port (failurePolicy Fail would refuse pods). */
    wh_server_drain(server);
    gs_info("draining", "signal=%d delay_ms=%lld", sig, (long long)(o.shutdown_delay_ns / 1000000));
    struct timespec delay = {.tv_sec = (time_t)(o.shutdown_delay_ns / 1000000000),
                             .tv_nsec = (long)(o.shutdown_delay_ns % 1000000000)};
    if (o.shutdown_delay_ns > 0 && sigtimedwait(&sigs, NULL, &delay) > 0)
        gs_info("second signal, stopping now", "signal=%d", sig);
    gs_info("stopping", "signal=%d", sig);
    wh_server_stop(server);
    gs_tls_free(tls);
    wh_cluster_free(cluster);
    return 0;
}

static int translate(const struct wh_options *o, char *const *files, size_t n_files)
{
    struct wh_names names;
    static struct wh_vendors vendors;
    int64_t sizes[WH_MEM_SIZES_MAX];
    size_t n_sizes = 0;
    struct gs_error err = {0};
    if (wh_options_names(o, &names, &vendors, &err) < 0) {
        fprintf(stderr, "gpuslice-webhook: %s\n", err.msg);
        return 2;
    }
    if (o->memory_sizes &&
        wh_parse_memory_sizes(o->memory_sizes, sizes, GS_ARRAY_SIZE(sizes), &n_sizes, &err) < 0) {
        fprintf(stderr, "gpuslice-webhook: %s\n", err.msg);
        return 2;
    }
    struct wh_preview_config pc = {.names = &names,
                                   .sizes = n_sizes ? sizes : NULL,
                                   .n_sizes = n_sizes,
                                   .default_namespace = o->namespace};
    static char *const stdin_only[] = {"-"};
    int r =
        wh_preview(&pc, n_files ? files : stdin_only, n_files ? n_files : 1, stdout, stderr, &err);
    if (r < 0) {
        fprintf(stderr, "gpuslice-webhook: %s\n", err.msg);
        return 2;
    }
    return r;
}

int main(int argc, char **argv)
{
    struct wh_options o;
    struct gs_error err = {0};
    int first = argc;

    gs_log_set_component("webhook");
    /* One thread per connection: without a cap glibc gives each its own malloc arena, which
     * only grows RSS for a workload that allocates a few KiB per request. */
    mallopt(M_ARENA_MAX, 2);
    int pr = wh_options_parse(&o, argc, argv, stdout, &first, &err);
    bool certgen = pr == 0 && first < argc && strcmp(argv[first], "certgen") == 0;
    if (pr == 0 && first < argc && strcmp(argv[first], "translate") != 0 && !certgen) {
        snprintf(err.msg, sizeof(err.msg), "unexpected argument \"%.64s\" (see --help)",
                 argv[first]);
        pr = -EINVAL;
    }
    if (pr != 0) {
        wh_options_free(&o);
        if (pr == GS_CONFIG_EXIT)
            return 0;
        fprintf(stderr, "gpuslice-webhook: %s\n", err.msg);
        return 2;
    }
    if (first < argc) {
        /* translate [OPTIONS] FILE...: parse again without the word, so options may follow it. */
        _cleanup_free_ char **args = calloc((size_t)argc, sizeof(*args));
        if (!args) {
            wh_options_free(&o);
            return 2;
        }
        int n = 0;
        for (int i = 0; i < argc; i++)
            if (i != first)
                args[n++] = argv[i];
        wh_options_free(&o);
        int files = n;
        pr = wh_options_parse(&o, n, args, stdout, &files, &err);
        if (pr != 0) {
            wh_options_free(&o);
            if (pr == GS_CONFIG_EXIT)
                return 0;
            fprintf(stderr, "gpuslice-webhook: %s\n", err.msg);
            return 2;
        }
        int rc = !certgen    ? translate(&o, args + files, (size_t)(n - files))
                 : files < n ? (fprintf(stderr, "gpuslice-webhook: certgen takes no argument\n"), 2)
                             : (gs_log_set_level((enum gs_log_level)(o.log_level + 1)),
                                wh_certgen_command(&o));
        wh_options_free(&o);
        return rc;
    }
    gs_log_set_level((enum gs_log_level)(o.log_level + 1));
    int rc = serve(&o);
    wh_options_free(&o);
    return rc;
}
