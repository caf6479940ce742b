/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTPS server (libmicrohttpd + GnuTLS): /mutate, /healthz, /readyz, /metrics.
 *
 * Thread per connection (MHD_USE_THREAD_PER_CONNECTION): an admission that waits on the API
 * server (template creation) never delays another connection. Bodies are collected up to
 * WH_REVIEW_MAX_BYTES; a larger Content-Length is answered 413 before the body is read, a
 * chunked body that grows past it is answered 413 when it ends. TLS only (1.2+); a plain HTTP
 * request fails the handshake and the connection is closed.
 */
#ifndef GS_WEBHOOK_SERVER_H
#define GS_WEBHOOK_SERVER_H

#include <stdint.h>
#include <sys/socket.h>

#include "common/error.h"
#include "webhook/admit.h"
#include "webhook/metrics.h"
#include "webhook/tls.h"

struct wh_server_config {
    const char *listen;            /* "[host]:port"; empty host = all IPv4 addresses */
    unsigned connection_limit;     /* 0 = 1024 */
    unsigned connection_timeout_s; /* idle keep-alive; 0 = 60 */
    const struct wh_admit_ctx *admit;
    struct wh_metrics *metrics;
    struct wh_tls *tls;
    /* Extra counters for /metrics (may be NULL). */
    void (*extra_metrics)(void *user, struct wh_metrics_extra *out);
    void *extra_user;
};

struct wh_server;

/* Parse "host:port" / ":port" / "[v6]:port" into a socket address. */
int wh_parse_listen(const char *listen, struct sockaddr_storage *out, struct gs_error *err);

struct wh_server *wh_server_start(const struct wh_server_config *cfg, struct gs_error *err);
/* Keep serving, but answer /readyz with 500 so endpoints drop this replica before it stops. */
void wh_server_drain(struct wh_server *s);
void wh_server_stop(struct wh_server *s);

#endif /* GS_WEBHOOK_SERVER_H */
