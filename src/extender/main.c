/* SPDX-License-Identifier: Apache-2.0 */
/* gpuslice-extender: options, wiring, signals (see docs/internals/legacy.md). */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "base/daemon.h"
#include "base/fs.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "base/log.h"
#include "base/macros.h"
#include "extender/server.h"
#include "extender/service.h"
#include "net/listen.h"
#include "net/tls.h"

struct ext_options {
    char *listen;
    char *probe_listen;
    char *tls_cert_file;
    char *tls_key_file;
    char *token_file;
    char *kubeconfig;
    int policy;
    int node_policy;
    int64_t kube_qps;
    int64_t max_connections, max_connections_per_client, probe_max_connections;
    int64_t idle_timeout_ns, header_timeout_ns;
    int log_level;
};

#define OFF(f) offsetof(struct ext_options, f)
static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
/* enum alloc_policy order */
static const char *const gpu_policies[] = {"first-fit", "binpack", "spread", "topology", NULL};
/* enum ext_node_policy order */
static const char *const node_policies[] = {"binpack", "spread", NULL};

static const struct gs_option options[] = {
    {.name = "listen",
     .env = "GPUSLICE_EXTENDER_LISTEN",
     .type = GS_OPT_STRING,
     .def = "127.0.0.1:8888",
     .metavar = "[HOST]:PORT",
     .offset = OFF(listen),
     .help = "address of the verbs kube-scheduler's extender client calls (it runs beside "
             "kube-scheduler: loopback; any other address needs --tls-cert-file, --tls-key-file "
             "and --token-file)"},
    {.name = "probe-listen",
     .env = "GPUSLICE_EXTENDER_PROBE_LISTEN",
     .type = GS_OPT_STRING,
     .metavar = "[HOST]:PORT",
     .offset = OFF(probe_listen),
     .help = "second plain-HTTP address answering only GET /healthz and /metrics (kubelet "
             "probes, Prometheus); empty = none"},
    {.name = "tls-cert-file",
     .env = "GPUSLICE_EXTENDER_TLS_CERT_FILE",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(tls_cert_file),
     .help = "PEM certificate chain: serve the verbs over HTTPS (re-read when it changes)"},
    {.name = "tls-key-file",
     .env = "GPUSLICE_EXTENDER_TLS_KEY_FILE",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(tls_key_file),
     .help = "PEM private key of --tls-cert-file"},
    {.name = "token-file",
     .env = "GPUSLICE_EXTENDER_TOKEN_FILE",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(token_file),
     .help = "file holding the bearer token every verb and /metrics then require "
             "(Authorization: Bearer <token>)"},
    {.name = "kubeconfig",
     .env = "KUBECONFIG",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(kubeconfig),
     .help = "kubeconfig file; unset = in-cluster service account"},
    {.name = "policy",
     .env = "GPUSLICE_EXTENDER_POLICY",
     .type = GS_OPT_ENUM,
     .choices = gpu_policies,
     .def = "spread",
     .offset = OFF(policy),
     .help = "GPU placement on a node (HAMi's gpu-scheduler-policy default; the pod annotation "
             "hami.io/gpu-scheduler-policy wins)"},
    {.name = "node-policy",
     .env = "GPUSLICE_EXTENDER_NODE_POLICY",
     .type = GS_OPT_ENUM,
     .choices = node_policies,
     .def = "binpack",
     .offset = OFF(node_policy),
     .help = "node choice among those that fit (HAMi's node-scheduler-policy default; the pod "
             "annotation hami.io/node-scheduler-policy wins)"},
    {.name = "kube-api-qps",
     .env = "GPUSLICE_KUBE_QPS",
     .type = GS_OPT_INT,
     .def = "50",
     .min = "1",
     .max = "10000",
     .offset = OFF(kube_qps),
     .help = "API server requests per second (burst twice that)"},
    {.name = "max-connections",
     .env = "GPUSLICE_EXTENDER_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "32",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections),
     .help = "concurrent connections of --listen (one thread each); when full, a new client "
             "evicts a connection that has not sent a request yet"},
    {.name = "max-connections-per-client",
     .env = "GPUSLICE_EXTENDER_MAX_CONNECTIONS_PER_CLIENT",
     .type = GS_OPT_INT,
     .def = "8",
     .min = "1",
     .max = "4096",
     .offset = OFF(max_connections_per_client),
     .help = "concurrent connections of --listen from one client address"},
    {.name = "idle-timeout",
     .env = "GPUSLICE_EXTENDER_IDLE_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "30s",
     .min = "1s",
     .max = "10m",
     .offset = OFF(idle_timeout_ns),
     .help = "close a connection that sends nothing for this long (whole seconds)"},
    {.name = "header-timeout",
     .env = "GPUSLICE_EXTENDER_HEADER_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "100ms",
     .max = "10m",
     .offset = OFF(header_timeout_ns),
     .help = "a connection must send a whole request head (TLS handshake included) this soon "
             "after its accept or its previous request, or it is closed (slow clients)"},
    {.name = "probe-max-connections",
     .env = "GPUSLICE_EXTENDER_PROBE_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "64",
     .min = "1",
     .max = "1024",
     .offset = OFF(probe_max_connections),
     .help = "concurrent connections of --probe-listen (its own budget: at most 16 from one "
             "client, a request head within 2s)"},
    {.name = "log-level",
     .env = "GPUSLICE_LOG_LEVEL",
     .type = GS_OPT_ENUM,
     .choices = log_levels,
     .def = "info",
     .offset = OFF(log_level),
     .help = "lowest level logged"},
};

static const struct gs_config_spec spec = {
    .program = "gpuslice-extender",
    .summary = "kube-scheduler extender for HAMi-style GPU sharing (legacy mode) on the gpuslice "
               "allocator",
    .options = options,
    .n_options = GS_ARRAY_SIZE(options),
    .config_env = "GPUSLICE_EXTENDER_CONFIG",
};

/* The bearer token: the file's first line, at most 4 KiB, not empty. */
static int read_token(const char *path, char **out, struct gs_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int r = gs_read_file(path, 4096, &buf, &len, err);
    if (r < 0)
        return r;
    size_t n = strcspn(buf, "\r\n");
    buf[n] = '\0';
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (n < 16) {
        free(buf);
        return gs_error_set(err, -EINVAL, "%s: the token is %zu characters, at least 16 wanted",
                            path, n);
    }
    *out = buf;
    return 0;
}

int main(int argc, char **argv)
{
    struct ext_options o = {0};
    struct gs_error err = {0};
    int first = argc;
    gs_log_set_component("extender");
    int pr = gs_config_parse(&spec, &o, argc, argv, stdout, &first, &err);
    if (pr == 0 && first < argc) {
        snprintf(err.msg, sizeof(err.msg), "unexpected argument \"%.64s\" (see --help)",
                 argv[first]);
        pr = -EINVAL;
    }
    if (pr != 0) {
        gs_config_free(&spec, &o);
        if (pr == GS_CONFIG_EXIT)
            return 0;
        fprintf(stderr, "gpuslice-extender: %s\n", err.msg);
        return 2;
    }
    gs_log_set_level((enum gs_log_level)(o.log_level + 1));
    struct sockaddr_storage addr;
    if (gs_listen_parse("--listen", o.listen, &addr, &err) < 0) {
        fprintf(stderr, "gpuslice-extender: %s\n", err.msg);
        gs_config_free(&spec, &o);
        return 2;
    }
    struct ext_server_config sv = {
        .addr = addr,
        .budget = {.max_connections = (unsigned)o.max_connections,
                   .max_per_client = (unsigned)o.max_connections_per_client,
                   .header_timeout_ms = (unsigned)(o.header_timeout_ns / 1000000),
                   .idle_timeout_s = (unsigned)(o.idle_timeout_ns / 1000000000)},
        .probe_max_connections = (unsigned)o.probe_max_connections,
    };
    if (o.probe_listen && o.probe_listen[0] &&
        gs_listen_parse("--probe-listen", o.probe_listen, &sv.probe, &err) < 0) {
        fprintf(stderr, "gpuslice-extender: %s\n", err.msg);
        gs_config_free(&spec, &o);
        return 2;
    }
    _cleanup_free_ char *token = NULL;
    if (o.token_file && o.token_file[0] && read_token(o.token_file, &token, &err) < 0) {
        fprintf(stderr, "gpuslice-extender: --token-file: %s\n", err.msg);
        gs_config_free(&spec, &o);
        return 2;
    }
    bool tls = o.tls_cert_file && o.tls_cert_file[0];
    if (tls != (o.tls_key_file && o.tls_key_file[0])) {
        fprintf(stderr, "gpuslice-extender: --tls-cert-file and --tls-key-file go together\n");
        gs_config_free(&spec, &o);
        return 2;
    }
    if (ext_server_check_exposure(&addr, "--listen", tls, token != NULL, &err) < 0) {
        fprintf(stderr, "gpuslice-extender: %s\n", err.msg);
        gs_config_free(&spec, &o);
        return 2;
    }
    /* Connection threads must not each grow an arena of their own (as the other daemons). */
    mallopt(M_ARENA_MAX, 2);
    sigset_t sigs;
    gs_daemon_block_signals(&sigs, 0);

    int rc = 1;
    struct gs_kube_config kc = {0};
    struct gs_k8s_client *k8s = NULL;
    struct ext_service *svc = NULL;
    struct gs_k8s_recorder *events = NULL;
    struct ext_server *srv = NULL;
    if (tls && !(sv.tls = gs_tls_new(o.tls_cert_file, o.tls_key_file, 1000, NULL, NULL, &err))) {
        fprintf(stderr, "gpuslice-extender: %s\n", err.msg);
        goto out;
    }
    if (gs_kube_config_load(o.kubeconfig, &kc, &err) < 0) {
        fprintf(stderr, "gpuslice-extender: cannot load the API server configuration: %s\n",
                err.msg);
        goto out;
    }
    struct gs_k8s_options ko = {.qps = (double)o.kube_qps, .burst = (unsigned)(2 * o.kube_qps)};
    if (!(k8s = gs_k8s_client_new_with(&kc, &ko, &err))) {
        fprintf(stderr, "gpuslice-extender: %s\n", err.msg);
        goto out;
    }
    char host[128] = "";
    (void)gethostname(host, sizeof(host) - 1);
    events = gs_k8s_recorder_new(
        k8s, &(struct gs_k8s_recorder_options){.component = "gpuslice-extender", .instance = host});
    struct ext_service_config sc = {.k8s = k8s,
                                    .events = events,
                                    .gpu_policy = (enum alloc_policy)o.policy,
                                    .node_policy = (enum ext_node_policy)o.node_policy};
    sv.svc = svc = ext_service_new(&sc);
    sv.token = token;
    if (!svc || !(srv = ext_server_start(&sv, &err))) {
        fprintf(stderr, "gpuslice-extender: %s: %s\n", o.listen, err.msg);
        goto out;
    }
    char q[300];
    gs_log(GS_LOG_INFO, "serving",
           "listen=%s port=%u probe_port=%u tls=%s token=%s api=%s policy=%s node_policy=%s",
           gs_log_quote(q, sizeof(q), o.listen), ext_server_port(srv), ext_server_probe_port(srv),
           tls ? "true" : "false", token ? "true" : "false", gs_k8s_client_server(k8s),
           gpu_policies[o.policy], node_policies[o.node_policy]);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0)
        ;
    gs_log(GS_LOG_INFO, "stopping", "signal=%d", sig);
    rc = 0;
out:
    ext_server_stop(srv);
    ext_service_free(svc);
    gs_k8s_recorder_free(events);
    gs_tls_free(sv.tls);
    gs_k8s_client_free(k8s);
    gs_kube_config_fini(&kc);
    gs_config_free(&spec, &o);
    return rc;
}
