/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Claim -> pods -> containers through the API server: the ResourceClaim's status.reservedFor
 * (entries of resource "pods"), then each pod's containers (init containers included) whose
 * resources.claims name one of the pod's spec.resourceClaims entries that stands for this claim
 * (resourceClaimName, or status.resourceClaimStatuses for claims made from a template).
 */
#ifndef GS_MONITOR_RESOLVE_H
#define GS_MONITOR_RESOLVE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "monitor/catalog.h"

struct mon_resolve_result {
    struct mon_consumer *consumers; /* malloc'd */
    size_t n_consumers;
    unsigned pods_gone; /* reservedFor entries whose pod is gone (404 or another UID) */
};

/*
 * 0: resolved (possibly with no consumer); -ENOENT: the claim is gone or has another UID (err says
 * which); any other negative code: the API failed (err names the request).
 */
int mon_resolve_claim(struct gs_k8s_client *k8s, const char *ns, const char *name, const char *uid,
                      struct mon_resolve_result *out, struct gs_error *err);
void mon_resolve_result_fini(struct mon_resolve_result *r);

/* The containers of `pod` that use claim `claim_name` (pure; for unit tests): appended to
 * *out (realloc'd). A pod whose containers name no claim entry gives one consumer with an empty
 * container. Returns the number appended or -ENOMEM. */
int mon_pod_consumers(const json_t *pod, const char *claim_name, struct mon_consumer **out,
                      size_t *n);

#endif /* GS_MONITOR_RESOLVE_H */
