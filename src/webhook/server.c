/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd HTTPS server: routing, bounded bodies, health, readiness and metrics. */
#include "webhook/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/macros.h"
#include "net/listen.h"
#include "net/server.h"
#include "webhook/review.h"

struct wh_server {
    struct wh_server_config cfg;
    struct gs_net_server *daemon; /* HTTPS: /mutate and everything else */
    struct gs_net_server *health; /* plain HTTP probes; NULL when not configured */
    atomic_bool draining;
};

struct req_state {
    enum wh_route route;
    bool health; /* arrived on the probe listener */
    uint64_t start_us;
    char *body;
    size_t len, cap;
    bool too_big;
    bool responded;
};

static enum wh_route route_of(const char *url)
{
    if (strcmp(url, "/mutate") == 0)
        return WH_ROUTE_MUTATE;
    if (strcmp(url, "/healthz") == 0)
        return WH_ROUTE_HEALTHZ;
    if (strcmp(url, "/readyz") == 0)
        return WH_ROUTE_READYZ;
    if (strcmp(url, "/metrics") == 0)
        return WH_ROUTE_METRICS;
    return WH_ROUTE_OTHER;
}

/* Queue `body` (malloc'd and handed over, or a static string when `owned` is false). */
static enum MHD_Result reply(struct wh_server *s, struct MHD_Connection *c, struct req_state *st,
                             unsigned status, const char *content_type, char *body, size_t len,
                             bool owned)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    st->responded = true;
    wh_metrics_request(s->cfg.metrics, st->route, status);
    return r;
}

static enum MHD_Result reply_text(struct wh_server *s, struct MHD_Connection *c,
                                  struct req_state *st, unsigned status, const char *text)
{
    return reply(s, c, st, status, "text/plain; charset=utf-8", (char *)text, strlen(text), false);
}

#define TOO_BIG_TEXT "request body exceeds 3145728 bytes (3 MiB)\n"

/* "application/json", optionally with parameters ("; charset=utf-8"), case-insensitive. */
static bool is_json_media_type(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return false;
    ct += sizeof(want) - 1;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* First call for a POST /mutate: refuse from the headers alone (413, 415). MHD_YES = go on. */
static enum MHD_Result check_mutate_headers(struct wh_server *s, struct MHD_Connection *c,
                                            struct req_state *st)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > WH_REVIEW_MAX_BYTES) {
        wh_metrics_outcome(s->cfg.metrics, WH_OUTCOME_REJECTED);
        return reply_text(s, c, st, 413, TOO_BIG_TEXT);
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!is_json_media_type(ct)) {
        char msg[200];
        if (ct)
            snprintf(msg, sizeof(msg),
                     "Content-Type \"%.100s\" is not supported: /mutate accepts application/json\n",
                     ct);
        else
            snprintf(msg, sizeof(msg),
                     "Content-Type is missing: /mutate accepts application/json\n");
        wh_metrics_outcome(s->cfg.metrics, WH_OUTCOME_REJECTED);
        char *body = strdup(msg);
        if (!body)
            return MHD_NO;
        return reply(s, c, st, 415, "text/plain; charset=utf-8", body, strlen(body), true);
    }
    return MHD_YES;
}

static enum MHD_Result handle_mutate(struct wh_server *s, struct MHD_Connection *c,
                                     struct req_state *st, const char *method)
{
    if (strcmp(method, "POST") != 0)
        return reply_text(s, c, st, 405, "/mutate accepts POST only\n");
    if (st->too_big) {
        wh_metrics_outcome(s->cfg.metrics, WH_OUTCOME_REJECTED);
        return reply_text(s, c, st, 413, TOO_BIG_TEXT);
    }
    /* The idle timeout must not close the connection while the admission waits on the API
     * server (that wait has its own deadline); it starts again once the answer is queued. */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    uint64_t deadline_ms =
        s->cfg.admission_timeout_ms ? st->start_us / 1000u + s->cfg.admission_timeout_ms : 0;
    struct wh_admit_reply ar;
    wh_admit_by(s->cfg.admit, st->body ? st->body : "", st->len, deadline_ms, &ar);
    enum MHD_Result r;
    if (ar.body)
        r = reply(s, c, st, ar.status, ar.content_type, TAKE_PTR(ar.body), ar.len, true);
    else
        r = reply_text(s, c, st, 500, "out of memory\n");
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, s->cfg.idle_timeout_s);
    wh_metrics_latency(s->cfg.metrics, gs_now_us() - st->start_us);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls, bool health)
{
    struct wh_server *s = cls;
    struct req_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof(*st));
        if (!st)
            return MHD_NO;
        st->route = route_of(url);
        st->health = health;
        st->start_us = gs_now_us();
        *con_cls = st;
        if (health && st->route == WH_ROUTE_MUTATE)
            st->route = WH_ROUTE_OTHER; /* the probe listener serves probes and metrics only */
        if (st->route == WH_ROUTE_MUTATE && strcmp(method, "POST") == 0)
            return check_mutate_headers(s, c, st);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (st->responded || st->too_big || st->route != WH_ROUTE_MUTATE)
            return MHD_YES;
        if (n > WH_REVIEW_MAX_BYTES - st->len) {
            st->too_big = true;
            free(st->body);
            st->body = NULL;
            st->len = st->cap = 0;
            return MHD_YES;
        }
        if (st->len + n > st->cap) {
            size_t cap = GS_MAX(st->cap * 2, st->len + n);
            cap = GS_MIN(cap, (size_t)WH_REVIEW_MAX_BYTES);
            char *nb = realloc(st->body, cap);
            if (!nb)
                return MHD_NO;
            st->body = nb, st->cap = cap;
        }
        memcpy(st->body + st->len, upload_data, n);
        st->len += n;
        return MHD_YES;
    }
    if (st->responded)
        return MHD_YES;

    bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    switch (st->route) {
    case WH_ROUTE_MUTATE:
        return handle_mutate(s, c, st, method);
    case WH_ROUTE_HEALTHZ:
        if (!is_get)
            return reply_text(s, c, st, 405, "GET only\n");
        return reply_text(s, c, st, 200, "ok\n");
    case WH_ROUTE_READYZ:
        if (!is_get)
            return reply_text(s, c, st, 405, "GET only\n");
        if (atomic_load(&s->draining))
            return reply_text(s, c, st, 500, "shutting down\n");
        return reply_text(s, c, st, 200, "ok\n");
    case WH_ROUTE_METRICS: {
        if (!is_get)
            return reply_text(s, c, st, 405, "GET only\n");
        struct wh_metrics_extra extra = {0};
        if (s->cfg.extra_metrics)
            s->cfg.extra_metrics(s->cfg.extra_user, &extra);
        size_t len;
        char *text = wh_metrics_render(s->cfg.metrics, s->cfg.extra_metrics ? &extra : NULL, &len);
        if (!text)
            return reply_text(s, c, st, 500, "out of memory\n");
        return reply(s, c, st, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, true);
    }
    default:
        return reply_text(s, c, st, 404, "not found\n");
    }
}

static enum MHD_Result handle_main(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    return handle(cls, c, url, method, version, upload_data, upload_data_size, con_cls, false);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct req_state *st = *con_cls;
    if (st) {
        free(st->body);
        free(st);
        *con_cls = NULL;
    }
}

/* Open connections of the HTTPS listener (a gauge on /metrics). */
static void connection_event(void *cls, bool opened)
{
    struct wh_server *s = cls;
    if (opened) {
        atomic_fetch_add_explicit(&s->cfg.metrics->connections_open, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->cfg.metrics->connections_total, 1, memory_order_relaxed);
    } else {
        atomic_fetch_sub_explicit(&s->cfg.metrics->connections_open, 1, memory_order_relaxed);
    }
}

static enum MHD_Result handle_health(void *cls, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    return handle(cls, c, url, method, version, upload_data, upload_data_size, con_cls, true);
}

struct wh_server *wh_server_start(const struct wh_server_config *cfg, struct gs_error *err)
{
    struct gs_net_server_config main = {.what = "--listen"}, health = {.what = "--health-listen"};
    if (gs_listen_parse("--listen", cfg->listen, &main.addr, err) < 0)
        return NULL;
    bool with_health = cfg->health_listen && cfg->health_listen[0];
    if (with_health &&
        gs_listen_parse("--health-listen", cfg->health_listen, &health.addr, err) < 0)
        return NULL;
    struct wh_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    if (!s->cfg.connection_limit)
        s->cfg.connection_limit = 1024;
    if (!s->cfg.per_client_limit)
        s->cfg.per_client_limit = 64;
    if (!s->cfg.idle_timeout_s)
        s->cfg.idle_timeout_s = 10;
    main.handler = handle_main, main.handler_cls = s;
    main.completed = completed, main.completed_cls = s;
    main.on_connection = connection_event, main.on_connection_cls = s;
    main.tls_cert = gs_tls_retrieve;
    main.tls_priorities = s->cfg.tls13_only ? GS_TLS_PRIORITIES_13 : GS_TLS_PRIORITIES;
    main.budget = (struct gs_net_budget){.max_connections = s->cfg.connection_limit,
                                         .max_per_client = s->cfg.per_client_limit,
                                         .header_timeout_ms = s->cfg.header_timeout_ms,
                                         .idle_timeout_s = s->cfg.idle_timeout_s};
    if (!(s->daemon = gs_net_server_start(&main, err))) {
        free(s);
        return NULL;
    }
    if (with_health) {
        health.handler = handle_health, health.handler_cls = s;
        health.completed = completed, health.completed_cls = s;
        health.budget = gs_net_probe_budget(s->cfg.health_connection_limit);
        if (!(s->health = gs_net_server_start(&health, err))) {
            gs_net_server_stop(s->daemon);
            free(s);
            return NULL;
        }
    }
    return s;
}

void wh_server_drain(struct wh_server *s)
{
    if (s)
        atomic_store(&s->draining, true);
}

void wh_server_stop(struct wh_server *s)
{
    if (!s)
        return;
    atomic_store(&s->draining, true);
    gs_net_server_stop(s->health);
    gs_net_server_stop(s->daemon);
    free(s);
}
