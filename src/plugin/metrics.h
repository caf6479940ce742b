/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus metrics of the plugin (lock-free counters) and the HTTP endpoints (libmicrohttpd):
 *   /metrics   text exposition format 0.0.4
 *   /healthz   200 "ok" while the gRPC servers run (liveness)
 *   /readyz    200 "ok" once registered with kubelet and the slices were published once
 */
#ifndef GS_PLUGIN_METRICS_H
#define GS_PLUGIN_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "net/server.h"

#define METRICS_BUCKETS 12

struct metrics {
    atomic_ullong prepare_total;  /* claims prepared successfully */
    atomic_ullong prepare_errors; /* claims whose prepare failed */
    atomic_ullong unprepare_total;
    atomic_ullong unprepare_errors;
    atomic_ullong latency_bucket[METRICS_BUCKETS]; /* per-claim prepare latency, cumulative */
    atomic_ullong latency_count;
    atomic_ullong latency_sum_ns;
    atomic_llong devices_published;
    atomic_llong slices_published;
    atomic_ullong slice_writes;
    atomic_ullong slice_errors;
    atomic_int gate_off; /* 1: API server dropped consumable-capacity fields */
    atomic_ullong reconcile_cleaned;
    atomic_llong claims_prepared; /* claims in the checkpoint */
    atomic_int registered;        /* kubelet accepted the registration */
    atomic_int serving;           /* gRPC servers up */
    atomic_int published_once;
};

void metrics_observe_prepare_ns(struct metrics *m, uint64_t ns);
/* Text exposition into a new string. */
char *metrics_render(struct metrics *m, const char *driver, const char *node);

struct metrics_http;
/* Listen on `addr` ("host:port", ":port" or "port"; port 0 = do not listen) through the server
 * layer with `budget` (the option table's), or NULL: the probe budget (the health port). */
struct metrics_http *metrics_http_start(struct metrics *m, const char *addr, const char *driver,
                                        const char *node, const struct gs_net_budget *budget,
                                        struct gs_error *err);
void metrics_http_stop(struct metrics_http *h);

#endif /* GS_PLUGIN_METRICS_H */
