/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-claim configuration through DRA: the opaque parameters of our driver in a ResourceClaim's
 * `status.allocation.devices.config[]` (copied there by the scheduler from the claim's
 * spec.devices.config and its DeviceClass's config, `source` FromClass / FromClaim). Our own
 * versioned object (schema: deploy/schemas/gpusliceconfig.v1alpha1.json):
 *
 *   {"apiVersion": "gpuslice.io/v1alpha1", "kind": "GpuSliceConfig",
 *    "computePolicy": "hard" | "work-conserving" | "disabled",
 *    "priority": 0 | 1,            (HAMi's CUDA_TASK_PRIORITY: 0 high, 1 low)
 *    "logLevel": 0..4}             (libvgpu's LIBCUDA_LOG_LEVEL)
 *
 * and, only in a DeviceClass's config (source FromClass, the admin's), ceilings over the claim's
 * own entries: "allowedComputePolicies": [...] and "highestPriority": 0 | 1 (a FromClaim entry
 * asking a policy not allowed or a smaller priority number, or setting a ceiling, fails the
 * claim naming the field and both values; docs/internals/plugin.md "The admin over the tenant").
 *
 * Every field but apiVersion and kind is optional. Class configs apply first, claim configs
 * after (a later entry overrides an earlier one, field by field); an entry naming `requests`
 * applies only when one of our results is for one of them. Unknown fields, another apiVersion or
 * kind and bad values fail the claim with a message naming the entry, the field and the value.
 */
#ifndef GS_GPU_CLAIM_CONFIG_H
#define GS_GPU_CLAIM_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"

#define CLAIM_CONFIG_API_VERSION "gpuslice.io/v1alpha1"
#define CLAIM_CONFIG_KIND        "GpuSliceConfig"

struct claim_plan;

/* The claim's QoS (limits file v2); -1 / GS_POLICY_UNSET when not configured. */
struct claim_qos {
    int32_t policy; /* enum gs_compute_policy (include/gpuslice/limits.h), 0 = unset */
    int32_t priority;
    int32_t log_level;
};

void claim_qos_init(struct claim_qos *q);

/* Validate one parameters object (where: "config[2].opaque.parameters") into *q (fields it sets
 * override). 0 or -EINVAL with err naming claim, where, field and value. */
int claim_qos_parse_params(const json_t *params, const char *cname, const char *where,
                           struct claim_qos *q, struct gs_error *err);

/* Apply every config entry of `driver` in claim's status.allocation.devices.config to p->qos
 * (requests filtered against p->results). */
int claim_qos_from_claim(const json_t *claim, const char *driver, const char *cname,
                         struct claim_plan *p, struct gs_error *err);

#endif /* GS_GPU_CLAIM_CONFIG_H */
