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

#include "common/error.h"
#include "webhook/metrics.h"
#include "webhook/shape.h"
#include "webhook/translate.h"

struct wh_admit_ctx {
    const struct wh_names *names;
    const struct wh_cluster_ops *ops; /* may be NULL: no cluster facts */
    /* Make sure a ResourceClaimTemplate exists (never called for dryRun requests). */
    int (*ensure_template)(void *user, const json_t *tpl, struct gs_error *err);
    void *ensure_user;
    struct wh_metrics *metrics; /* may be NULL */
};

struct wh_admit_reply {
    unsigned status; /* HTTP status: 200, 400 or 413 */
    char *body;      /* malloc'd, NUL-terminated */
    size_t len;
    const char *content_type; /* application/json or text/plain */
    enum wh_outcome outcome;
};

/* Never fails: out-of-memory becomes a 500 reply with a static body copy. */
void wh_admit(const struct wh_admit_ctx *ctx, const char *body, size_t len,
              struct wh_admit_reply *out);
void wh_admit_reply_fini(struct wh_admit_reply *r);

#endif /* GS_WEBHOOK_ADMIT_H */
