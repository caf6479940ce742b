/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's HTTP server (libmicrohttpd, as the webhook): GET/HEAD /metrics, /healthz,
 * /readyz. Plain HTTP by default; HTTPS when a certificate is given (net/tls.h: the pair is
 * re-read when the files change). One thread per connection (poll(), so descriptors past
 * FD_SETSIZE work), bounded by --max-connections, at most --max-connections-per-client from one
 * address, each closed after --idle-timeout without a request. --probe-listen adds a second
 * plain listener with its own small budget that answers only /healthz and /readyz, so idle or
 * slow clients of /metrics never starve kubelet's probes.
 *
 *   /metrics  Prometheus text 0.0.4, or OpenMetrics 1.0.0 when Accept asks for it
 *   /healthz  200 "ok" while the process serves
 *   /readyz   200 "ok" once the first refresh completed, 503 before, while stopping, and while
 *             the last scrape failed (it is logged and answered 500: never a silent close)
 */
#ifndef GS_MONITOR_SERVER_H
#define GS_MONITOR_SERVER_H

#include "base/error.h"
#include "monitor/catalog.h"
#include "monitor/collect.h"

struct gs_tls;

struct mon_server_config {
    const char *listen; /* "[host]:port"; empty host = all IPv4 addresses */
    unsigned connection_limit;
    unsigned per_client_limit; /* 0 = 8 */
    unsigned idle_timeout_s;   /* 0 = 10 */
    const char *probe_listen;  /* NULL or "" = none */
    struct gs_tls *tls;        /* NULL: plain HTTP */
    struct mon_catalog *catalog;
    struct mon_collect_opts collect;
};

struct mon_server;

struct mon_server *mon_server_start(const struct mon_server_config *cfg, struct gs_error *err);
/* The port actually bound (for --listen :0). */
unsigned mon_server_port(const struct mon_server *s);
unsigned mon_server_probe_port(const struct mon_server *s);
/* /readyz fails from now on. */
void mon_server_drain(struct mon_server *s);
void mon_server_stop(struct mon_server *s);

#endif /* GS_MONITOR_SERVER_H */
