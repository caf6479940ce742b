/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One /mutate request: AdmissionReview in, AdmissionReview out (or an HTTP error for a body that
 * is not one). Ties decoding, translation and template creation together; knows nothing of HTTP
 * transport or TLS.
 */
#ifndef GS_WEBHOOK_ADMIT_H
#define GS_WEBHOOK_ADMIT_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "webhook/legacy.h"
#include "webhook/metrics.h"
#include "webhook/shape.h"
#include "webhook/translate.h"

struct wh_admit_ctx {
    enum wh_mode mode;                     /* DRA (default, 0) or legacy */
    const struct wh_legacy_config *legacy; /* for WH_MODE_LEGACY */
    const struct wh_names *names;
    const struct wh_cluster_ops *ops; /* may be NULL: no cluster facts */
    /* Make sure the ResourceClaimTemplates (a JSON array) exist, before deadline_ms (0 = no
     * deadline; -ETIMEDOUT when it passes). Never called for dryRun requests. */
    int (*ensure_templates)(void *user, const json_t *templates, uint64_t deadline_ms,
                            struct gs_error *err);
    void *ensure_user;
    /* Deadline of one admission from its arrival, for wh_admit (wh_admit_by is given its own);
     * 0 = none. Only printed in the denial; the server computes the deadline. */
    uint64_t timeout_ms;
    struct wh_metrics *metrics; /* may be NULL */
};

struct wh_admit_reply {
    unsigned status; /* HTTP status: 200, 400 or 413 */
    char *body;      /* malloc'd, NUL-terminated */
    size_t len;
    const char *content_type; /* application/json or text/plain */
    enum wh_outcome outcome;
};

/* Never fails: out-of-memory becomes a 500 reply with a static body copy. The admission is
 * answered by deadline_ms (gs_now_ms() clock; 0 = none): what is not known by then denies the
 * pod with status 504 and a message saying the deadline passed. */
void wh_admit_by(const struct wh_admit_ctx *ctx, const char *body, size_t len, uint64_t deadline_ms,
                 struct wh_admit_reply *out);
/* wh_admit_by with the deadline ctx->timeout_ms from now (none when 0). */
void wh_admit(const struct wh_admit_ctx *ctx, const char *body, size_t len,
              struct wh_admit_reply *out);
void wh_admit_reply_fini(struct wh_admit_reply *r);

#endif /* GS_WEBHOOK_ADMIT_H */
