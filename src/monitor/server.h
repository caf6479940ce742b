/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's routes on the server layer (net/server.h): GET/HEAD /metrics, /healthz,
 * /readyz. Plain HTTP by default; HTTPS when a certificate is given (net/tls.h: the pair is
 * re-read when the files change). --max-connections, --max-connections-per-client,
 * --header-timeout and --idle-timeout are the listener's budget: with it full, a new client
 * evicts an idle connection of the client holding the most, so ten clients' idle connections
 * never keep Prometheus out. --probe-listen adds a second plain listener with its own budget
 * (--probe-max-connections) that answers only /healthz and /readyz.
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
    unsigned per_client_limit;       /* 0 = 8 */
    unsigned idle_timeout_s;         /* 0 = 10 */
    unsigned header_timeout_ms;      /* 0 = the server layer's default (net/server.h) */
    const char *probe_listen;        /* NULL or "" = none */
    unsigned probe_connection_limit; /* 0 = GS_NET_PROBE_MAX_CONNECTIONS */
    struct gs_tls *tls;              /* NULL: plain HTTP */
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
