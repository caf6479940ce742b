/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the webhook reads from and writes to the API server, with small TTL caches so the
 * common admission (a shape seen before) makes no API call at all:
 *   - the distinct GPU memory sizes in our driver's ResourceSlices (for gpumem-percentage);
 *   - DeviceClasses with spec.extendedResourceName (for the admission warning);
 *   - ResourceClaimTemplates created (or found existing: 409) per namespace and name;
 *   - a pod's own claims (GET claim or template) to tell whether they use our device class.
 * Thread-safe: one mutex per cache. Every API call made for an admission runs in a thread of
 * its own (webhook/deadline.h) and is waited for only until the admission's deadline; the
 * slice and class lists are refreshed by one call at a time, concurrent misses wait for it.
 */
#ifndef GS_WEBHOOK_CLUSTER_H
#define GS_WEBHOOK_CLUSTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "kube/k8s.h"
#include "webhook/legacy.h"
#include "webhook/translate.h"

struct wh_cluster_config {
    const char *driver;       /* ResourceSlice spec.driver of our devices */
    uint64_t slice_ttl_ms;    /* memory-size cache; 0 = 30000 */
    uint64_t class_ttl_ms;    /* DeviceClass cache; 0 = 60000 */
    uint64_t template_ttl_ms; /* "template exists" cache; 0 = 300000 */
};

struct wh_cluster_stats {
    uint64_t templates_created;   /* 201 */
    uint64_t templates_existing;  /* 409 AlreadyExists */
    uint64_t template_cache_hits; /* no API call needed */
    uint64_t api_errors;
};

struct wh_cluster;

/* Takes ownership of `client`. NULL on ENOMEM (the client is freed then). */
struct wh_cluster *wh_cluster_new(struct gs_k8s_client *client,
                                  const struct wh_cluster_config *cfg);
void wh_cluster_free(struct wh_cluster *c);

/* The callbacks wh_translate_pod() uses, bound to this cluster. */
void wh_cluster_ops(struct wh_cluster *c, struct wh_cluster_ops *ops);

/* Make sure the ResourceClaimTemplate `tpl` exists in its metadata.namespace: create it, 409
 * AlreadyExists is success. Returns 0 or a negative code with a message naming the template. */
int wh_cluster_ensure_template(struct wh_cluster *c, const json_t *tpl, struct gs_error *err);
/* The same for every template of the array, at once: templates known to exist are skipped
 * (no API call, no thread), the others are created concurrently, one thread each. Returns 0,
 * the first failure, or -ETIMEDOUT when some creation has not answered by deadline_ms (it
 * finishes in the background and is remembered, so a retry of the pod finds it). */
int wh_cluster_ensure_templates(struct wh_cluster *c, const json_t *templates, uint64_t deadline_ms,
                                struct gs_error *err);

void wh_cluster_get_stats(struct wh_cluster *c, struct wh_cluster_stats *out);

/* Refuse to run against the other mode (the two must never share a cluster). Legacy: the
 * DeviceClass `device_class` or ResourceSlices of our driver exist. DRA: a Node carries
 * WH_HAMI_NODE_REGISTER (HAMi's or our device plugin publishes its GPUs there). Returns 0,
 * -EEXIST with a message naming what was found and what to do, or the API error. */
int wh_cluster_check_mode(struct wh_cluster *c, enum wh_mode mode, const char *device_class,
                          struct gs_error *err);

/* Distinct memory sizes (bytes) of `driver`'s devices in a ResourceSlice List object. Fills up
 * to `max` sizes and sets *n to the number found (may exceed max). Devices without a parseable
 * integer memory capacity are skipped. */
void wh_slice_memory_sizes(const json_t *list, const char *driver, int64_t *sizes, size_t max,
                           size_t *n);

/* Does a claim spec ({"devices": {"requests": [...]}}) request `device_class` anywhere? */
bool wh_claim_spec_uses_class(const json_t *claim_spec, const char *device_class);

#endif /* GS_WEBHOOK_CLUSTER_H */
