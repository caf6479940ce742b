/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small gRPC server on the gRPC C core (grpc/grpc.h), listening on one unix socket: unary
 * methods, and server-streaming ones (rpc_method.stream + rpc_stream_send) for the DRA health
 * stream.
 *
 *   static const struct rpc_method methods[] = {
 *       { "/pluginregistration.Registration/GetInfo", get_info },
 *   };
 *   struct rpc_server *s = rpc_server_new("/run/x.sock", methods, 1, user, &opts, &err);
 *   ...
 *   rpc_server_free(s);   // stops, drains in-flight calls, removes the socket file
 *
 * A handler gets the request bytes and returns the encoded response (malloc'd) and a status. The
 * core answers messages over `max_recv_bytes` with RESOURCE_EXHAUSTED by itself; requests without a
 * message get INVALID_ARGUMENT; unknown methods UNIMPLEMENTED.
 *
 * Handlers never run on the `threads` completion-queue workers: each call's handler runs on its
 * own thread (at most RPC_MAX_HANDLERS at once; beyond that UNAVAILABLE), so a handler stuck on
 * the network cannot keep other calls from being answered. Handlers must be thread-safe, and
 * should end by ctx->deadline_ms (the client's gRPC deadline) and when ctx->cancel fires (the
 * server is shutting down): rpc_server_free() waits for every running handler.
 */
#ifndef GS_PLUGIN_GRPC_SERVER_H
#define GS_PLUGIN_GRPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "kube/http.h"

/* gRPC status codes we answer with (values fixed by the gRPC protocol). */
enum rpc_status {
    RPC_OK = 0,
    RPC_INVALID_ARGUMENT = 3,
    RPC_RESOURCE_EXHAUSTED = 8,
    RPC_FAILED_PRECONDITION = 9,
    RPC_UNIMPLEMENTED = 12,
    RPC_INTERNAL = 13,
    RPC_UNAVAILABLE = 14,
};

#define RPC_DETAILS_MAX 256

struct rpc_reply {
    uint8_t *data; /* malloc'd encoded response message (status OK only; streams: none) */
    size_t len;
    int status; /* enum rpc_status */
    char details[RPC_DETAILS_MAX];
};

/* What a handler knows about its call besides the request. */
struct rpc_call_ctx {
    uint64_t deadline_ms;          /* CLOCK_MONOTONIC ms when the client gives up; 0 = none */
    struct gs_http_cancel *cancel; /* triggered when the client cancels the call (or its deadline
                                    * passes, or the connection breaks) and at server shutdown */
};

/* Most handlers running at once per server. */
#define RPC_MAX_HANDLERS 64u

typedef void (*rpc_handler_fn)(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req,
                               size_t req_len, struct rpc_reply *reply);

/* A server-streaming method: the handler sends messages with rpc_stream_send() for as long as
 * it likes and returns when ctx->cancel fires (client gone, server stopping) or it is done; the
 * call then ends with reply->status (no final message). It holds a handler slot meanwhile. */
struct rpc_stream;
typedef void (*rpc_stream_fn)(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req,
                              size_t req_len, struct rpc_stream *st, struct rpc_reply *reply);
/* Send one message and wait until the transport took it: 0, or -EPIPE (client gone, call
 * cancelled). */
int rpc_stream_send(struct rpc_stream *st, const uint8_t *data, size_t len);

struct rpc_method {
    const char *path; /* "/package.Service/Method" */
    rpc_handler_fn handler;
    rpc_stream_fn stream; /* instead of handler, for a server-streaming method */
};

struct rpc_server_options {
    unsigned threads;      /* worker threads; 0 = 1 */
    size_t max_recv_bytes; /* largest request message; 0 = 4 MiB */
};

struct rpc_server;

/* Bind `socket_path` (a stale socket file there is removed first: the caller holds the state
 * directory lock, so it cannot belong to a live instance), start the workers. */
struct rpc_server *rpc_server_new(const char *socket_path, const struct rpc_method *methods,
                                  size_t n_methods, void *user,
                                  const struct rpc_server_options *opts, struct gs_error *err);
/* Stop accepting, cancel what is in flight, wait for running handlers, join the workers, and
 * remove the socket only if it is still the one this server created (same inode). NULL is a
 * no-op. */
void rpc_server_free(struct rpc_server *s);

/* Call once per process before the first server, and once at the end. */
void rpc_global_init(void);
void rpc_global_fini(void);

#endif /* GS_PLUGIN_GRPC_SERVER_H */
