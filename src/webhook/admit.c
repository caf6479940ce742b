/* SPDX-License-Identifier: Apache-2.0 */
/* /mutate: decode -> translate -> ensure templates -> encode. One log line per admission. */
#include "webhook/admit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/macros.h"
#include "webhook/review.h"

static void text_reply(struct wh_admit_reply *out, unsigned status, const char *msg)
{
    size_t n = strlen(msg);
    out->status = status;
    out->content_type = "text/plain; charset=utf-8";
    out->body = malloc(n + 2);
    if (out->body) {
        memcpy(out->body, msg, n);
        out->body[n] = '\n';
        out->body[n + 1] = '\0';
        out->len = n + 1;
    }
}

void wh_admit_reply_fini(struct wh_admit_reply *r)
{
    if (r) {
        free(r->body);
        r->body = NULL;
    }
}

static const char *pod_name(const struct wh_review *rv)
{
    const json_t *meta = json_object_get(rv->object, "metadata");
    const char *n = json_string_value(json_object_get(meta, "name"));
    if (n && *n)
        return n;
    n = json_string_value(json_object_get(meta, "generateName"));
    return n ? n : "";
}

static void log_admission(const struct wh_review *rv, const char *result, const char *detail)
{
    /* Every value from the request is quoted: a newline in a pod name must not forge a line. */
    if (gs_log_get_level() < GS_LOG_INFO)
        return; /* quoting costs more than the rest of a small admission's logging */
    char pod[600], q1[160], q2[700], q3[600];
    snprintf(pod, sizeof(pod), "%s/%s", rv->namespace, pod_name(rv));
    gs_info("admission", "uid=%s pod=%s result=%s detail=%s", gs_log_quote(q1, sizeof(q1), rv->uid),
            gs_log_quote(q2, sizeof(q2), pod), result, gs_log_quote(q3, sizeof(q3), detail));
}

static void deny(struct wh_review_answer *ans, int r, const char *msg)
{
    ans->allowed = false;
    ans->message = msg;
    if (r == -EINVAL) {
        ans->code = 422;
        ans->reason = "Invalid";
    } else if (r == -EPERM) { /* what HAMi's webhook denies: admission.Denied, 403 */
        ans->code = 403;
        ans->reason = "Forbidden";
    } else if (r == -ETIMEDOUT) {
        ans->code = 504;
        ans->reason = "Timeout";
    } else {
        ans->code = 500;
        ans->reason = "InternalError";
    }
}

void wh_admit_by(const struct wh_admit_ctx *ctx, const char *body, size_t len, uint64_t deadline_ms,
                 struct wh_admit_reply *out)
{
    struct wh_review rv;
    struct gs_error err = {0};
    struct wh_translation tr = {0};
    struct wh_review_answer ans = {.allowed = true};
    char msg[GS_ERROR_MSG_MAX + 128];

    *out = (struct wh_admit_reply){0};
    int r = wh_review_decode(body, len, &rv, &err);
    if (r < 0) {
        text_reply(out, r == -E2BIG ? 413 : 400, err.msg);
        out->outcome = WH_OUTCOME_REJECTED;
        goto done;
    }
    out->outcome = WH_OUTCOME_PASSED;
    if (wh_review_is_pod_create(&rv)) {
        const char *ns = rv.namespace[0]
                             ? rv.namespace
                             : json_string_value(json_object_get(
                                   json_object_get(rv.object, "metadata"), "namespace"));
        struct wh_cluster_ops ops = {0};
        if (ctx->ops) {
            ops = *ctx->ops;
            ops.deadline_ms = deadline_ms;
        }
        if (!ns || !ns[0])
            r = gs_error_set(&err, -EINVAL,
                             "AdmissionReview: request.namespace and the pod's "
                             "metadata.namespace are both empty");
        else if (ctx->mode == WH_MODE_LEGACY && ctx->legacy)
            r = wh_legacy_route(ctx->legacy, ctx->names, rv.object, &tr, &err);
        else
            r = wh_translate_pod(ctx->names, ctx->ops ? &ops : NULL, ns, rv.object, &tr, &err);
        if (r == 0 && tr.patch && !rv.dry_run && ctx->ensure_templates &&
            json_array_size(tr.templates))
            r = ctx->ensure_templates(ctx->ensure_user, tr.templates, deadline_ms, &err);
        if (r == -ETIMEDOUT) {
            snprintf(msg, sizeof(msg),
                     "admission deadline of %.3gs exceeded (--admission-timeout): %s; the API "
                     "server is slow, the pod was not admitted; creating it again will retry",
                     (double)ctx->timeout_ms / 1000.0, err.msg);
            if (ctx->metrics)
                atomic_fetch_add_explicit(&ctx->metrics->deadline_exceeded, 1,
                                          memory_order_relaxed);
            deny(&ans, r, msg);
            out->outcome = WH_OUTCOME_DENIED;
            log_admission(&rv, "denied", msg);
        } else if (r < 0) {
            deny(&ans, r, err.msg);
            out->outcome = WH_OUTCOME_DENIED;
            log_admission(&rv, "denied", err.msg);
        } else if (tr.patch) {
            ans.patch = tr.patch;
            out->outcome = WH_OUTCOME_MUTATED;
            if (ctx->mode == WH_MODE_LEGACY && ctx->legacy)
                snprintf(msg, sizeof(msg), "legacy route, %zu patch operation(s)%s",
                         json_array_size(tr.patch), rv.dry_run ? ", dry run" : "");
            else
                snprintf(msg, sizeof(msg), "%zu claim template(s)%s", json_array_size(tr.templates),
                         rv.dry_run ? ", dry run" : "");
            log_admission(&rv, "mutated", msg);
        }
        ans.warnings = tr.warnings;
    }
    out->body = wh_review_encode(rv.uid, &ans, &out->len);
    out->status = 200;
    out->content_type = "application/json";
    if (!out->body)
        text_reply(out, 500, "out of memory");
    wh_translation_fini(&tr);
    wh_review_fini(&rv);
done:
    if (ctx->metrics)
        wh_metrics_outcome(ctx->metrics, out->outcome);
}

void wh_admit(const struct wh_admit_ctx *ctx, const char *body, size_t len,
              struct wh_admit_reply *out)
{
    wh_admit_by(ctx, body, len, ctx->timeout_ms ? gs_now_ms() + ctx->timeout_ms : 0, out);
}
