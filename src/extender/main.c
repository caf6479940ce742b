/* SPDX-License-Identifier: Apache-2.0 */
/* gpuslice-extender: options, wiring, signals (see docs/internals/legacy.md). */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>

#include "config/config.h"
#include "base/daemon.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "base/log.h"
#include "base/macros.h"
#include "extender/server.h"
#include "extender/service.h"
#include "net/listen.h"

struct ext_options {
    char *listen;
    char *kubeconfig;
    int policy;
    int node_policy;
    int64_t kube_qps;
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
     .def = ":8888",
     .metavar = "[HOST]:PORT",
     .offset = OFF(listen),
     .help = "HTTP address kube-scheduler's extender client calls (empty host = all IPv4)"},
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
    sigset_t sigs;
    gs_daemon_block_signals(&sigs, 0);

    int rc = 1;
    struct gs_kube_config kc = {0};
    struct gs_k8s_client *k8s = NULL;
    struct ext_service *svc = NULL;
    struct ext_server *srv = NULL;
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
    struct ext_service_config sc = {.k8s = k8s,
                                    .gpu_policy = (enum alloc_policy)o.policy,
                                    .node_policy = (enum ext_node_policy)o.node_policy};
    if (!(svc = ext_service_new(&sc)) || !(srv = ext_server_start(svc, &addr, &err))) {
        fprintf(stderr, "gpuslice-extender: %s: %s\n", o.listen, err.msg);
        goto out;
    }
    char q[300];
    gs_log(GS_LOG_INFO, "serving", "listen=%s port=%u api=%s policy=%s node_policy=%s",
           gs_log_quote(q, sizeof(q), o.listen), ext_server_port(srv), gs_k8s_client_server(k8s),
           gpu_policies[o.policy], node_policies[o.node_policy]);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0)
        ;
    gs_log(GS_LOG_INFO, "stopping", "signal=%d", sig);
    rc = 0;
out:
    ext_server_stop(srv);
    ext_service_free(svc);
    gs_k8s_client_free(k8s);
    gs_kube_config_fini(&kc);
    gs_config_free(&spec, &o);
    return rc;
}
