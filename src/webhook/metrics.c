/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text rendering of the webhook's counters. */
#include "webhook/metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "base/version.h"

static const char *const route_names[WH_ROUTE_COUNT] = {"/mutate", "/healthz", "/readyz",
                                                        "/metrics", "other"};
static const char *const outcome_names[WH_OUTCOME_COUNT] = {"mutated", "passed", "denied",
                                                            "rejected"};
/* The last slot counts every other status (500 above all). */
static const unsigned status_codes[7] = {200, 400, 404, 405, 413, 415, 500};
static const uint64_t bucket_us[WH_LATENCY_BUCKETS] = {250,   500,   1000,   2000,   5000,
                                                       10000, 50000, 100000, 500000, 1000000};

void wh_metrics_request(struct wh_metrics *m, enum wh_route route, unsigned status)
{
    size_t k = GS_ARRAY_SIZE(status_codes) - 1;
    for (size_t i = 0; i < GS_ARRAY_SIZE(status_codes); i++)
        if (status_codes[i] == status)
            k = i;
    atomic_fetch_add_explicit(&m->requests[route][k], 1, memory_order_relaxed);
}

void wh_metrics_outcome(struct wh_metrics *m, enum wh_outcome o)
{
    atomic_fetch_add_explicit(&m->outcomes[o], 1, memory_order_relaxed);
}

void wh_metrics_latency(struct wh_metrics *m, uint64_t us)
{
    size_t b = 0;
    while (b < WH_LATENCY_BUCKETS && us > bucket_us[b])
        b++;
    atomic_fetch_add_explicit(&m->latency_bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_sum_us, us, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_count, 1, memory_order_relaxed);
}

struct buf {
    char *p;
    size_t len, cap;
    int failed;
};

static void put(struct buf *b, const char *fmt, ...) GS_PRINTF(2, 3);
static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2 && !b->failed; tries++) {
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->failed = 1;
            return;
        }
        b->p = np, b->cap = cap;
    }
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

char *wh_metrics_render(struct wh_metrics *m, const struct wh_metrics_extra *extra, size_t *len)
{
    struct buf b = {.p = malloc(4096), .cap = 4096};
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
    char build_info[384];
    gs_version_metric(build_info, sizeof(build_info));
    put(&b, "%s", build_info);
    put(&b, "# HELP gpuslice_webhook_http_requests_total HTTP requests by path and status.\n"
            "# TYPE gpuslice_webhook_http_requests_total counter\n");
    for (size_t r = 0; r < WH_ROUTE_COUNT; r++)
        for (size_t k = 0; k < GS_ARRAY_SIZE(status_codes); k++) {
            uint64_t v = LOAD(m->requests[r][k]);
            if (v)
                put(&b,
                    "gpuslice_webhook_http_requests_total{path=\"%s\",code=\"%u\"} %" PRIu64 "\n",
                    route_names[r], status_codes[k], v);
        }
    put(&b, "# HELP gpuslice_webhook_admissions_total AdmissionReviews by outcome.\n"
            "# TYPE gpuslice_webhook_admissions_total counter\n");
    for (size_t o = 0; o < WH_OUTCOME_COUNT; o++)
        put(&b, "gpuslice_webhook_admissions_total{outcome=\"%s\"} %" PRIu64 "\n", outcome_names[o],
            LOAD(m->outcomes[o]));
    put(&b,
        "# HELP gpuslice_webhook_denials_total AdmissionReviews answered allowed=false.\n"
        "# TYPE gpuslice_webhook_denials_total counter\n"
        "gpuslice_webhook_denials_total %" PRIu64 "\n",
        LOAD(m->outcomes[WH_OUTCOME_DENIED]));
    put(&b, "# HELP gpuslice_webhook_mutate_duration_seconds Time to answer /mutate.\n"
            "# TYPE gpuslice_webhook_mutate_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t i = 0; i < WH_LATENCY_BUCKETS; i++) {
        cum += LOAD(m->latency_bucket[i]);
        put(&b, "gpuslice_webhook_mutate_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
            (double)bucket_us[i] / 1e6, cum);
    }
    cum += LOAD(m->latency_bucket[WH_LATENCY_BUCKETS]);
    put(&b, "gpuslice_webhook_mutate_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
    put(&b, "gpuslice_webhook_mutate_duration_seconds_sum %.6f\n",
        (double)LOAD(m->latency_sum_us) / 1e6);
    put(&b, "gpuslice_webhook_mutate_duration_seconds_count %" PRIu64 "\n", LOAD(m->latency_count));
    put(&b,
        "# HELP gpuslice_webhook_tls_reloads_total Certificate/key pairs (re)loaded.\n"
        "# TYPE gpuslice_webhook_tls_reloads_total counter\n"
        "gpuslice_webhook_tls_reloads_total %" PRIu64 "\n"
        "# HELP gpuslice_webhook_tls_reload_errors_total Changed files that failed to load.\n"
        "# TYPE gpuslice_webhook_tls_reload_errors_total counter\n"
        "gpuslice_webhook_tls_reload_errors_total %" PRIu64 "\n",
        LOAD(m->tls_reloads), LOAD(m->tls_reload_errors));
    put(&b,
        "# HELP gpuslice_webhook_admission_deadline_exceeded_total Admissions denied because "
        "their deadline passed.\n"
        "# TYPE gpuslice_webhook_admission_deadline_exceeded_total counter\n"
        "gpuslice_webhook_admission_deadline_exceeded_total %" PRIu64 "\n"
        "# HELP gpuslice_webhook_connections_open Open connections of the HTTPS listener.\n"
        "# TYPE gpuslice_webhook_connections_open gauge\n"
        "gpuslice_webhook_connections_open %" PRId64 "\n"
        "# HELP gpuslice_webhook_connections_total Connections accepted by the HTTPS listener.\n"
        "# TYPE gpuslice_webhook_connections_total counter\n"
        "gpuslice_webhook_connections_total %" PRIu64 "\n",
        LOAD(m->deadline_exceeded), LOAD(m->connections_open), LOAD(m->connections_total));
    if (extra)
        put(&b,
            "# HELP gpuslice_webhook_templates_total ResourceClaimTemplates ensured, by result.\n"
            "# TYPE gpuslice_webhook_templates_total counter\n"
            "gpuslice_webhook_templates_total{result=\"created\"} %" PRIu64 "\n"
            "gpuslice_webhook_templates_total{result=\"existing\"} %" PRIu64 "\n"
            "gpuslice_webhook_templates_total{result=\"cached\"} %" PRIu64 "\n"
            "# HELP gpuslice_webhook_api_errors_total Failed API server calls.\n"
            "# TYPE gpuslice_webhook_api_errors_total counter\n"
            "gpuslice_webhook_api_errors_total %" PRIu64 "\n",
            extra->templates_created, extra->templates_existing, extra->template_cache_hits,
            extra->api_errors);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.p;
}
