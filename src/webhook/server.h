/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTPS server (libmicrohttpd + GnuTLS): /mutate, /healthz, /readyz, /metrics.
 *
 * Both listeners are the server layer's (net/server.h): a thread per connection, poll() (a
 * descriptor past 1,024 is served), an admission that waits on the API server never delays
 * another connection. The HTTPS listener's budget is connection_limit in all, per_client_limit
 * from one address (the API server opens one connection per admission in flight), a request
 * head within header_timeout_ms of the accept (TLS handshake included) and idle_timeout_s of
 * silence; with the budget full, a new client evicts a connection that has not sent a request.
 * Bodies are collected up to WH_REVIEW_MAX_BYTES; a larger Content-Length is answered 413
 * before the body is read, a chunked body that grows past it is answered 413 when it ends; a
 * Content-Type other than application/json is answered 415. TLS only (1.2+); a plain HTTP
 * request fails the handshake and the connection is closed.
 *
 * Probes: with health_listen set, a second, plain-HTTP listener serves /healthz, /readyz and
 * /metrics with the server layer's probe budget (gs_net_probe_budget: health_connection_limit
 * in all, 4 per address, a request head within 2 s; a client at its budget, e.g. kubelet
 * sharing its address with a hostNetwork pod, evicts its own oldest connection that has not
 * sent a request), so neither the HTTPS listener's clients nor slow clients keep a probe out.
 */
#ifndef GS_WEBHOOK_SERVER_H
#define GS_WEBHOOK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"
#include "webhook/admit.h"
#include "webhook/metrics.h"
#include "net/tls.h"

struct wh_server_config {
    const char *listen;               /* "[host]:port"; empty host = all IPv4 addresses */
    const char *health_listen;        /* plain HTTP probes; NULL or "" = none */
    unsigned connection_limit;        /* 0 = 1024 */
    unsigned per_client_limit;        /* connections from one client address; 0 = 64 */
    unsigned idle_timeout_s;          /* 0 = 10 */
    unsigned header_timeout_ms;       /* 0 = the server layer's default */
    unsigned health_connection_limit; /* 0 = GS_NET_PROBE_MAX_CONNECTIONS */
    uint64_t admission_timeout_ms;    /* deadline of one /mutate from its arrival; 0 = none */
    bool tls13_only;                  /* --tls-min-version 1.3 */
    const struct wh_admit_ctx *admit;
    struct wh_metrics *metrics;
    struct gs_tls *tls;
    /* Extra counters for /metrics (may be NULL). */
    void (*extra_metrics)(void *user, struct wh_metrics_extra *out);
    void *extra_user;
};

struct wh_server;

struct wh_server *wh_server_start(const struct wh_server_config *cfg, struct gs_error *err);
/* Keep serving, but answer /readyz with 500 so endpoints drop this replica before it stops. */
void wh_server_drain(struct wh_server *s);
void wh_server_stop(struct wh_server *s);

#endif /* GS_WEBHOOK_SERVER_H */
