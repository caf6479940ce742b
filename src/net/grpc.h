/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gRPC side of the server layer (docs/internals/layers.md "The server layer"): the one
 * function that creates a gRPC server, used by the kubelet plugin (src/plugin/grpc-server.c) and
 * the device plugin (src/deviceplugin/dp-grpc.c). The numbers are channel arguments of gRPC C
 * core (grpc_types.h): concurrent streams per connection, idle connections closed, keepalive
 * pings, message sizes, and a resource quota bounding the memory of every connection together.
 *
 * Per-client budgets reduce to the peer here: both servers listen on a unix socket in a 0700
 * directory the kubelet owns (plugins_registry / device-plugins), so the only client that can
 * connect is root on the node, i.e. the kubelet. The budgets that matter are the ones per
 * connection (streams, message sizes) and in total (the memory quota), which these arguments
 * set; one kubelet opens one connection per plugin.
 *
 * Its own static library (libgsgrpcnet.a) so that the HTTP-only daemons do not link gRPC.
 */
#ifndef GS_NET_GRPC_H
#define GS_NET_GRPC_H

#include <grpc/grpc.h>
#include <stddef.h>

struct gs_net_grpc_budget {
    unsigned max_streams;          /* concurrent streams on one connection; 0 = 64 */
    unsigned idle_timeout_ms;      /* a connection without a stream is closed; 0 = 5 min */
    unsigned keepalive_ms;         /* ping an idle transport this often; 0 = 2 h (gRPC's own) */
    unsigned keepalive_timeout_ms; /* a ping unanswered this long closes it; 0 = 20 s */
    size_t max_recv_bytes;         /* one message in; 0 = 4 MiB */
    size_t max_send_bytes;         /* one message out; 0 = 16 MiB */
    size_t memory_bytes;           /* the server's quota; 0 = 64 MiB, at least 4 x max_recv */
};

/* grpc_server_create() with the budget's channel arguments; NULL if gRPC could not make one. */
grpc_server *gs_net_grpc_server_new(const struct gs_net_grpc_budget *b);

#endif /* GS_NET_GRPC_H */
