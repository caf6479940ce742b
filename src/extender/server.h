/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The extender's HTTP server (libmicrohttpd, plain HTTP as kube-scheduler's extender client
 * speaks by default): POST /filter, /prioritize, /bind; GET /healthz, /metrics.
 * Bodies over EXT_MAX_BODY get 413; a body that is not the JSON expected gets 400 with the
 * reason.
 */
#ifndef GS_EXTENDER_SERVER_H
#define GS_EXTENDER_SERVER_H

#include <sys/socket.h>

#include "base/error.h"
#include "extender/service.h"

/* ExtenderArgs with 5,000 full Node objects stay under this. */
#define EXT_MAX_BODY (64u * 1024u * 1024u)

struct ext_server;

struct ext_server *ext_server_start(struct ext_service *svc, const struct sockaddr_storage *addr,
                                    struct gs_error *err);
unsigned ext_server_port(const struct ext_server *s);
void ext_server_stop(struct ext_server *s);

#endif /* GS_EXTENDER_SERVER_H */
