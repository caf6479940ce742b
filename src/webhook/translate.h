/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Pod with legacy HAMi resources -> JSON Patch + the ResourceClaimTemplates it points at
 * (see docs/internals/webhook.md for the full mapping table).
 *
 * Per container and init container with legacy resources: one pod claim "gpu-<container>"
 * (spec.resourceClaims[].resourceClaimTemplateName = the template named by the hash of the claim
 * spec), `resources.claims: [{name}]` on the container, and the legacy names removed from its
 * limits and requests. The translation itself never talks to the API: what it needs from the
 * cluster comes through struct wh_cluster_ops.
 */
#ifndef GS_WEBHOOK_TRANSLATE_H
#define GS_WEBHOOK_TRANSLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "webhook/shape.h"

/* Distinct claim shapes (templates) one pod may need: bounds the API writes of one admission. */
#define WH_MAX_TEMPLATES_PER_POD 32
/* Upper bound on distinct memory sizes asked from the cluster (more is an error anyway). */
#define WH_MEM_SIZES_MAX 64

struct wh_cluster_ops {
    /* Every callback gets the admission's deadline (gs_now_ms() clock; 0 = none): an answer
     * that would come later is an error (-ETIMEDOUT), or for advisory facts a "no". */
    /* Distinct GPU memory sizes (bytes) in our driver's ResourceSlices: fills up to `max`,
     * *n = how many exist (may be > max). Negative code + message when they cannot be known. */
    int (*memory_sizes)(void *user, uint64_t deadline_ms, int64_t *sizes, size_t max, size_t *n,
                        struct gs_error *err);
    /* Does the pod claim entry (an element of spec.resourceClaims) request `device_class`?
     * 1 yes, 0 no, negative code + message when it cannot be told. */
    int (*pod_claim_uses_class)(void *user, uint64_t deadline_ms, const char *ns,
                                const json_t *pod_claim, const char *device_class,
                                struct gs_error *err);
    /* Name of a DeviceClass that maps `resource` through extendedResourceName into `buf`:
     * 1 found, 0 none (or unknown). */
    int (*extended_resource_class)(void *user, uint64_t deadline_ms, const char *resource,
                                   char *buf, size_t len);
    void *user;
    uint64_t deadline_ms; /* passed to every callback; wh_admit sets it per admission */
};

struct wh_translation {
    json_t *patch;     /* array of JSON Patch operations; NULL = the pod is left unchanged */
    json_t *templates; /* ResourceClaimTemplate objects to create, one per distinct name */
    json_t *warnings;  /* array of strings for AdmissionResponse.warnings */
};

void wh_translation_fini(struct wh_translation *t);

/*
 * Translate `pod` (the AdmissionReview's object) created in namespace `ns`. `ops` may be NULL
 * (no cluster: percentages are denied, existing claims count as foreign). Returns 0 (allowed;
 * out->patch may be NULL) or a negative code with a message (the pod is denied).
 */
int wh_translate_pod(const struct wh_names *names, const struct wh_cluster_ops *ops, const char *ns,
                     const json_t *pod, struct wh_translation *out, struct gs_error *err);

/* Is `s` a DNS-1123 label (1-63 of a-z, 0-9, '-', alphanumeric at both ends)? */
bool wh_is_dns_label(const char *s);

/* JSON Pointer escaping of one reference token ("~" -> "~0", "/" -> "~1"). -ENOSPC. */
int wh_json_pointer_escape(const char *token, char *buf, size_t len);

#endif /* GS_WEBHOOK_TRANSLATE_H */
