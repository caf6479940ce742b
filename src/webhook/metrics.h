/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus counters of the webhook (text exposition format 0.0.4 on /metrics). Lock-free:
 * every counter is a relaxed atomic, so request threads never contend on a lock.
 */
#ifndef GS_WEBHOOK_METRICS_H
#define GS_WEBHOOK_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum wh_route {
    WH_ROUTE_MUTATE = 0,
    WH_ROUTE_HEALTHZ,
    WH_ROUTE_READYZ,
    WH_ROUTE_METRICS,
    WH_ROUTE_OTHER,
    WH_ROUTE_COUNT,
};

enum wh_outcome {
    WH_OUTCOME_MUTATED = 0, /* allowed with a patch */
    WH_OUTCOME_PASSED,      /* allowed unchanged */
    WH_OUTCOME_DENIED,      /* allowed: false */
    WH_OUTCOME_REJECTED,    /* not an AdmissionReview: HTTP 400/413 */
    WH_OUTCOME_COUNT,
};

/* Latency buckets of /mutate, upper bounds in microseconds (+Inf is implicit). */
#define WH_LATENCY_BUCKETS 10

struct wh_metrics {
    _Atomic uint64_t requests[WH_ROUTE_COUNT][7]; /* by status: 200 400 404 405 413 415 other */
    _Atomic uint64_t outcomes[WH_OUTCOME_COUNT];
    _Atomic uint64_t latency_bucket[WH_LATENCY_BUCKETS + 1];
    _Atomic uint64_t latency_sum_us;
    _Atomic uint64_t latency_count;
    _Atomic uint64_t deadline_exceeded; /* admissions denied at their deadline */
    _Atomic int64_t connections_open;   /* HTTPS listener, gauge */
    _Atomic uint64_t connections_total;
    _Atomic uint64_t tls_reloads;
    _Atomic uint64_t tls_reload_errors;
};

void wh_metrics_request(struct wh_metrics *m, enum wh_route route, unsigned status);
void wh_metrics_outcome(struct wh_metrics *m, enum wh_outcome o);
void wh_metrics_latency(struct wh_metrics *m, uint64_t us);

/* Extra counters rendered with the webhook's own (from the cluster layer). */
struct wh_metrics_extra {
    uint64_t templates_created, templates_existing, template_cache_hits, api_errors;
};

/* Render into a new string (NULL on ENOMEM). */
char *wh_metrics_render(struct wh_metrics *m, const struct wh_metrics_extra *extra, size_t *len);

#endif /* GS_WEBHOOK_METRICS_H */
