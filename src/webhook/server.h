/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTPS server (libmicrohttpd + GnuTLS): /mutate, /healthz, /readyz, /metrics.
 *
 * Thread per connection (MHD_USE_THREAD_PER_CONNECTION): an admission that waits on the API
 * server (template creation) never delays another connection. Connections are bounded in total
 * (connection_limit) and per client address (per_client_limit), and closed after idle_timeout_s
 * without traffic (TLS handshake, headers, body, or between requests; not while an admission
 * is being answered). Bodies are collected up to WH_REVIEW_MAX_BYTES; a larger Content-Length is
 * answered 413 before the body is read, a chunked body that grows past it is answered 413 when
 * it ends; a Content-Type other than application/json is answered 415. TLS only (1.2+); a plain
 * HTTP request fails the handshake and the connection is closed.
 *
 * Probes: with health_listen set, a second, plain-HTTP listener serves /healthz, /readyz and
 * /metrics from one poll() thread of its own (not libmicrohttpd), so clients that fill the HTTPS
 * listener's connections cannot make the kubelet's probes fail. Each probe connection has an
 * absolute deadline from its accept (WH_HEALTH_REQUEST_DEADLINE_MS, for the request and the
 * answer: slow clients that dribble bytes are cut), and with every slot taken a new connection
 * evicts the oldest, so slow clients, from any number of addresses, cannot keep a probe out.
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

/* The probe listener's own limits (probes are one short request each). */
#define WH_HEALTH_CONNECTION_LIMIT    64
#define WH_HEALTH_REQUEST_DEADLINE_MS 2000u
#define WH_HEALTH_REQUEST_MAX         4096

struct wh_server_config {
    const char *listen;            /* "[host]:port"; empty host = all IPv4 addresses */
    const char *health_listen;     /* plain HTTP probes; NULL or "" = none */
    unsigned connection_limit;     /* 0 = 1024 */
    unsigned per_client_limit;     /* connections from one client address; 0 = 64 */
    unsigned idle_timeout_s;       /* 0 = 10 */
    uint64_t admission_timeout_ms; /* deadline of one /mutate from its arrival; 0 = none */
    bool tls13_only;               /* --tls-min-version 1.3 */
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
