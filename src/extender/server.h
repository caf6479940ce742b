/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The extender's HTTP server (libmicrohttpd): POST /filter, /prioritize, /bind; GET /healthz,
 * /metrics. A second, optional listener (`probe`) answers only GET /healthz and /metrics, so that
 * the verbs can stay on loopback beside kube-scheduler while probes and Prometheus reach the pod
 * network.
 *
 * Hostile clients (docs/internals/legacy.md "The extender's listener"):
 *  - a listener on an address other than loopback must have TLS and a bearer token
 *    (ext_server_check_exposure refuses the configuration otherwise); with a token every verb
 *    and /metrics want "Authorization: Bearer <token>" (401 otherwise; /healthz stays open);
 *  - the listeners are the server layer's (net/server.h): --max-connections in all,
 *    --max-connections-per-client from one address, a request head within --header-timeout,
 *    silence at most --idle-timeout; the probe listener has a budget of its own
 *    (--probe-max-connections);
 *  - a body over EXT_MAX_BODY gets 413 (at the headers when Content-Length says so), and so
 *    does one of more than EXT_MAX_JSON_VALUES values (its tree would be many times its size);
 *  - bodies being received hold at most EXT_BODY_BUDGET bytes together: a request that would
 *    pass it gets 503 (kube-scheduler retries), and one body at a time is decoded into JSON.
 * A body that is not the JSON expected gets 400 with the reason.
 */
#ifndef GS_EXTENDER_SERVER_H
#define GS_EXTENDER_SERVER_H

#include <stdbool.h>
#include <sys/socket.h>

#include "base/error.h"
#include "extender/service.h"
#include "net/server.h"

/* ExtenderArgs with 5,000 full Node objects stay under this. */
#define EXT_MAX_BODY    (64u * 1024u * 1024u)
#define EXT_BODY_BUDGET (2u * EXT_MAX_BODY)
/* JSON values one body may hold (10,000 full Nodes are about 1.5 million). */
#define EXT_MAX_JSON_VALUES 4000000u

struct ext_server;
struct gs_tls;

struct ext_server_config {
    struct ext_service *svc;
    struct sockaddr_storage addr;   /* the verbs */
    struct sockaddr_storage probe;  /* /healthz and /metrics only; ss_family 0 = none */
    struct gs_tls *tls;             /* NULL = plain HTTP (loopback only) */
    const char *token;              /* NULL or "" = none (loopback only) */
    struct gs_net_budget budget;    /* of `addr` (the option table's numbers) */
    unsigned probe_max_connections; /* of `probe`; 0 = GS_NET_PROBE_MAX_CONNECTIONS */
};

/* 0 when `addr` may serve the verbs with this TLS/token setting: loopback always, any other
 * address only with both. -EPERM with a message naming `what` (the option) otherwise. */
int ext_server_check_exposure(const struct sockaddr_storage *addr, const char *what, bool tls,
                              bool token, struct gs_error *err);
bool ext_addr_is_loopback(const struct sockaddr_storage *addr);

struct ext_server *ext_server_start(const struct ext_server_config *cfg, struct gs_error *err);
unsigned ext_server_port(const struct ext_server *s);
unsigned ext_server_probe_port(const struct ext_server *s);
void ext_server_stop(struct ext_server *s);

#endif /* GS_EXTENDER_SERVER_H */
