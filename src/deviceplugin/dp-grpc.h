/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC over unix sockets for the device plugin API (gRPC C core): a server whose calls each run
 * on their own thread, unary or server-streaming (ListAndWatch), and a unary client (kubelet's
 * Registration.Register). The DRA plugin's server (src/plugin/grpc-server.c) is unary-only; a
 * device plugin needs a stream that lives as long as the kubelet connection.
 *
 * Each call gets its own pluck completion queue: the call's thread starts a batch and plucks
 * its tag, so no shared dispatcher is involved. RECV_CLOSE_ON_SERVER is started first; its
 * completion tells a streaming handler that the client went away (dp_stream_wait).
 */
#ifndef GS_DEVICEPLUGIN_DP_GRPC_H
#define GS_DEVICEPLUGIN_DP_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

enum dp_status {
    DP_OK = 0,
    DP_INVALID_ARGUMENT = 3,
    DP_NOT_FOUND = 5,
    DP_FAILED_PRECONDITION = 9,
    DP_INTERNAL = 13,
    DP_UNAVAILABLE = 14,
};

struct dp_reply {
    uint8_t *data; /* malloc'd encoded response (DP_OK) */
    size_t len;
    int status;
    char details[256];
};

struct dp_stream;

typedef void (*dp_unary_fn)(void *user, const uint8_t *req, size_t len, struct dp_reply *reply);
/* Runs until it returns; the call then ends with OK. */
typedef void (*dp_stream_fn)(void *user, struct dp_stream *st);

struct dp_method {
    const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
    dp_unary_fn unary;
    dp_stream_fn stream;
};

/* Send one message on the stream: 0, or -EPIPE when the client is gone. */
int dp_stream_send(struct dp_stream *st, const uint8_t *data, size_t len);
/* Wait up to ms for the client to go away (or the server to stop): true if it has. */
bool dp_stream_closed(struct dp_stream *st, int ms);

struct dp_server;

/* Listen on `socket_path` (a stale socket there is removed first). */
struct dp_server *dp_server_new(const char *socket_path, const struct dp_method *methods, size_t n,
                                void *user, struct gs_error *err);
/* Stop: cancel every call, wait for the handlers, remove the socket. NULL is a no-op. */
void dp_server_free(struct dp_server *s);

/* One unary call to `socket_path`; *resp is malloc'd. -ECONNREFUSED when nobody listens,
 * -EIO with the status and details in err otherwise. */
int dp_grpc_call(const char *socket_path, const char *method, const uint8_t *req, size_t len,
                 uint8_t **resp, size_t *resp_len, int timeout_ms, struct gs_error *err);

void dp_grpc_init(void);
void dp_grpc_fini(void);

#endif /* GS_DEVICEPLUGIN_DP_GRPC_H */
