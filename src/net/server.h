/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one server layer (docs/internals/layers.md "The server layer"): every HTTP listener of
 * every daemon is started here, on libmicrohttpd, with the same defences. A daemon hands over
 * its routes (an MHD access handler) and the numbers from its option table; it never calls
 * MHD_start_daemon itself.
 *
 *  - One thread per connection, each waiting in poll() (MHD_USE_POLL), the listening thread too;
 *    or (event_loop: probe listeners) one epoll thread for all: never select(), so a descriptor
 *    past FD_SETSIZE (1,024) is served like any other. The
 *    process's soft RLIMIT_NOFILE is raised to its hard limit once, at the first start.
 *  - A global budget (max_connections) and a per-client one (max_per_client, one IPv4 address or
 *    one IPv6 address) counted in MHD's accept policy callback (MHD_OPTION_ACCEPT_POLICY_CALLBACK)
 *    and released in MHD_OPTION_NOTIFY_CONNECTION's CLOSED event. A client at its budget is
 *    refused (its socket closed at accept), or on a probe listener (evict_own) makes room among
 *    its own idle connections. With the global budget full, a new client evicts one
 *    connection that has not sent a whole request yet (TLS handshake, headers, or keep-alive
 *    between requests), taken from the client that holds the most connections, oldest first; a
 *    connection inside a request is never evicted. So idle connections from many addresses
 *    cannot keep a scrape or a caller out.
 *  - A header timeout (header_timeout_ms): from its accept, or from the end of its previous
 *    request, a connection must deliver a whole request head (TLS handshake included) within
 *    it, or it is shut down. libmicrohttpd 0.9.75's MHD_OPTION_CONNECTION_TIMEOUT is an
 *    inactivity timeout, re-armed by every byte received (connection.c, MHD_update_last_activity_
 *    in the receive path), so a client that dribbles one header byte every few seconds would
 *    hold its connection for ever: a watchdog thread of this layer enforces the absolute bound.
 *  - An idle timeout (idle_timeout_s, MHD_OPTION_CONNECTION_TIMEOUT): a connection silent this
 *    long is closed, inside a request too (a stalled body).
 *  - A probe listener is a second gs_net_server with its own budget (GS_NET_PROBE_*): attackers
 *    on the main port never starve /healthz, and floods of the probe port never reach the main
 *    port's budget.
 *
 * Eviction and the header timeout shut the socket down (shutdown(2)) from the watchdog or the
 * accept thread under the registry lock; the descriptor stays valid until MHD closes it, which
 * happens after the CLOSED notification that removes it from the registry (daemon.c,
 * MHD_cleanup_connections: notify_connection, then MHD_socket_close_chk_), so a recycled
 * descriptor is never shut down by mistake.
 */
#ifndef GS_NET_SERVER_H
#define GS_NET_SERVER_H

#include <gnutls/abstract.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

/* Defaults of a probe listener (kubelet probes, one short request each). */
#define GS_NET_PROBE_MAX_CONNECTIONS 64u
/* More than libmicrohttpd's epoll loop accepts in one round (daemon.c, MHD_epoll: 11), so a
 * probe accepted in one round is read in the next before its own address can evict it. */
#define GS_NET_PROBE_MAX_PER_CLIENT    16u
#define GS_NET_PROBE_HEADER_TIMEOUT_MS 2000u
#define GS_NET_PROBE_IDLE_TIMEOUT_S    5u

struct gs_net_budget {
    unsigned max_connections;   /* open connections in all; 0 = 64 */
    unsigned max_per_client;    /* from one client address; 0 = max_connections / 4, at least 1 */
    unsigned header_timeout_ms; /* a whole request head (TLS handshake included); 0 = 10 s */
    unsigned idle_timeout_s;    /* silence on an open connection; 0 = 10 */
    /* A client at max_per_client: false = refused at accept (main listeners: a client that
     * reconnects in a loop costs an accept and a close, never a thread); true = its own oldest
     * connection that has not sent a request is evicted (probe listeners: kubelet may share its
     * address with a hostNetwork attacker; its probe sends the request at once and is then
     * never evicted). */
    bool evict_own;
    /* true: one event-loop thread (MHD_USE_EPOLL) serves every connection, for handlers that
     * never block (probes, counters): a flood costs no thread per connection, and a probe's
     * request is read in the loop's next round. false: a thread per connection, each in poll()
     * (handlers that wait on the API server or on locks: the webhook, the extender's verbs, the
     * monitor's scrape). */
    bool event_loop;
};

struct gs_net_server_config {
    const char *what;             /* the option naming the address, for errors: "--listen" */
    struct sockaddr_storage addr; /* what to bind (port 0: the kernel's choice) */
    /* NULL: plain HTTP; else HTTPS with this certificate callback (net/tls.h's gs_tls_retrieve:
     * a pointer only, so that plain-HTTP daemons never link GnuTLS) and these priorities. */
    gnutls_certificate_retrieve_function2 *tls_cert;
    const char *tls_priorities;
    MHD_AccessHandlerCallback handler; /* the routes */
    void *handler_cls;
    MHD_RequestCompletedCallback completed; /* NULL or the daemon's per-request cleanup */
    void *completed_cls;
    void (*on_connection)(void *cls, bool opened); /* NULL or a gauge of open connections */
    void *on_connection_cls;
    struct gs_net_budget budget;
};

/* The listener's counters, for a daemon's /metrics and for tests. */
struct gs_net_stats {
    uint64_t accepted, refused_client, refused_full, evicted, header_timeouts;
    unsigned open;
};

struct gs_net_server;

/* Parse `listen` (net/listen.h) into cfg->addr first, or fill it yourself. NULL with a message
 * naming cfg->what on failure. */
struct gs_net_server *gs_net_server_start(const struct gs_net_server_config *cfg,
                                          struct gs_error *err);
/* Close the listener and every connection (waits for the handlers in progress). NULL: no-op. */
void gs_net_server_stop(struct gs_net_server *s);
/* The TCP port bound. */
unsigned gs_net_server_port(const struct gs_net_server *s);
void gs_net_server_stats(struct gs_net_server *s, struct gs_net_stats *out);

/* The same budget for a probe listener: the GS_NET_PROBE_* numbers, `max_connections` if not 0. */
struct gs_net_budget gs_net_probe_budget(unsigned max_connections);

#endif /* GS_NET_SERVER_H */
