/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AdmissionReview (admission.k8s.io/v1) decode and encode. The decoder is the parser of
 * untrusted input (fuzzed by tests/fuzz/webhook): every field is type-checked and a failure is a
 * message naming the field, never a crash.
 */
#ifndef GS_WEBHOOK_REVIEW_H
#define GS_WEBHOOK_REVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define WH_REVIEW_API_VERSION "admission.k8s.io/v1"
#define WH_REVIEW_MAX_BYTES   (3u * 1024u * 1024u) /* larger bodies are refused with 413 */

struct wh_review {
    json_t *root;            /* owned; the fields below borrow from it */
    const char *uid;         /* request.uid */
    const char *operation;   /* CREATE, UPDATE, DELETE, CONNECT */
    const char *group;       /* request.kind.group ("" for core) */
    const char *kind;        /* request.kind.kind */
    const char *resource;    /* request.resource.resource ("" if absent) */
    const char *subresource; /* request.subResource ("" if absent) */
    const char *namespace;   /* request.namespace ("" if absent) */
    bool dry_run;            /* request.dryRun */
    const json_t *object;    /* request.object, NULL if absent or null */
};

/* Parse (config/json.h: bounded, duplicate keys and NUL refused) and check. -EINVAL with a
 * message ("AdmissionReview: invalid JSON at line 1, column 3: ...", "AdmissionReview:
 * request.uid is missing or empty"), -E2BIG over WH_REVIEW_MAX_BYTES. */
int wh_review_decode(const char *body, size_t len, struct wh_review *out, struct gs_error *err);
void wh_review_fini(struct wh_review *r);

/* Is this the creation of a Pod (not a subresource)? */
bool wh_review_is_pod_create(const struct wh_review *r);

struct wh_review_answer {
    bool allowed;
    const json_t *patch;    /* JSON Patch array, NULL = none */
    const json_t *warnings; /* array of strings, NULL or empty = none */
    int code;               /* status.code when denied */
    const char *reason;     /* status.reason when denied */
    const char *message;    /* status.message when denied */
};

/* The AdmissionReview response text (malloc'd, NUL-terminated) or NULL on ENOMEM. */
char *wh_review_encode(const char *uid, const struct wh_review_answer *a, size_t *len);

/* Standard base64 with padding into a new NUL-terminated string (NULL on ENOMEM/overflow). */
char *wh_base64_encode(const unsigned char *data, size_t len);

#endif /* GS_WEBHOOK_REVIEW_H */
