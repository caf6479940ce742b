/* SPDX-License-Identifier: Apache-2.0 */
/* `gpuslice-webhook certgen`: the options to a certgen run (certgen.h), one line of outcome. */
#include "webhook/certgen-cmd.h"

#include <stdio.h>

#include "base/log.h"
#include "kube/k8s.h"
#include "kube/kubeconfig.h"
#include "webhook/certgen.h"

static int fail(const struct gs_error *err)
{
    char q[600];
    gs_error_log("certgen failed", "error=%s", gs_log_quote(q, sizeof(q), err->msg));
    fprintf(stderr, "gpuslice-webhook certgen: %s\n", err->msg);
    return 1;
}

int wh_certgen_command(const struct wh_options *o)
{
    struct gs_error err = {0};
    struct gs_kube_config kc = {0};
    if (gs_kube_config_load(o->kubeconfig, &kc, &err) < 0)
        return fail(&err);
    struct gs_k8s_options ko = {
        .max_attempts = 5,
        .timeout_ms = (long)(o->api_timeout_ns / 1000000),
        .connect_timeout_ms = (long)(o->api_timeout_ns / 1000000),
        .user_agent = "gpuslice-webhook-certgen",
    };
    struct gs_k8s_client *client = gs_k8s_client_new_with(&kc, &ko, &err);
    gs_kube_config_fini(&kc);
    if (!client)
        return fail(&err);
    struct wh_certgen_config cfg = {
        .namespace = o->certgen_namespace && o->certgen_namespace[0]
                         ? o->certgen_namespace
                         : gs_k8s_client_namespace(client),
        .secret = o->certgen_secret,
        .service = o->certgen_service,
        .webhook_config = o->certgen_webhook_configuration,
        .renew_before_s = o->certgen_renew_before_ns / 1000000000,
        .cert_validity_s = o->certgen_cert_validity_ns / 1000000000,
        .ca_validity_s = o->certgen_ca_validity_ns / 1000000000,
    };
    struct wh_certgen_result res;
    int r = wh_certgen_run(client, &cfg, &res, &err);
    gs_k8s_client_free(client);
    if (r < 0)
        return fail(&err);
    char q1[200], q2[200];
    gs_info("certgen done", "secret=%s/%s action=%s why=%s webhooks=%u patched=%u", cfg.namespace,
            gs_log_quote(q1, sizeof(q1), cfg.secret), wh_certgen_action_name(res.action),
            gs_log_quote(q2, sizeof(q2), res.why), res.webhooks, res.patched);
    printf("secret %s/%s: %s%s%s%s; caBundle given to %u of %u webhooks of %s\n", cfg.namespace,
           cfg.secret, wh_certgen_action_name(res.action), res.why[0] ? " (" : "", res.why,
           res.why[0] ? ")" : "", res.patched, res.webhooks, cfg.webhook_config);
    return 0;
}
