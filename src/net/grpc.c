/* SPDX-License-Identifier: Apache-2.0 */
/* The gRPC servers' channel arguments (grpc.h). */
#include "net/grpc.h"

#include <stdint.h>
#include <string.h>

static grpc_arg int_arg(const char *key, size_t v)
{
    grpc_arg a;
    memset(&a, 0, sizeof(a));
    a.type = GRPC_ARG_INTEGER;
    a.key = (char *)key;
    a.value.integer = v > INT32_MAX ? INT32_MAX : (int)v;
    return a;
}

grpc_server *gs_net_grpc_server_new(const struct gs_net_grpc_budget *b)
{
    struct gs_net_grpc_budget d = b ? *b : (struct gs_net_grpc_budget){0};
    grpc_resource_quota *quota = grpc_resource_quota_create("gpuslice");
    if (!quota)
        return NULL;
    size_t recv = d.max_recv_bytes ? d.max_recv_bytes : 4u << 20;
    size_t mem = d.memory_bytes ? d.memory_bytes : 64u << 20;
    if (!d.memory_bytes && recv <= SIZE_MAX / 4 && mem < 4 * recv)
        mem = 4 * recv; /* room for a few of the largest requests at once */
    grpc_resource_quota_resize(quota, mem);
    grpc_arg args[8];
    size_t n = 0;
    args[n++] = int_arg(GRPC_ARG_MAX_CONCURRENT_STREAMS, d.max_streams ? d.max_streams : 64);
    args[n++] = int_arg(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                        d.idle_timeout_ms ? d.idle_timeout_ms : 5u * 60u * 1000u);
    args[n++] = int_arg(GRPC_ARG_KEEPALIVE_TIME_MS,
                        d.keepalive_ms ? d.keepalive_ms : 2u * 60u * 60u * 1000u);
    args[n++] = int_arg(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                        d.keepalive_timeout_ms ? d.keepalive_timeout_ms : 20000u);
    args[n++] = int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, recv);
    args[n++] =
        int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, d.max_send_bytes ? d.max_send_bytes : 16u << 20);
    memset(&args[n], 0, sizeof(args[n]));
    args[n].type = GRPC_ARG_POINTER;
    args[n].key = (char *)GRPC_ARG_RESOURCE_QUOTA;
    args[n].value.pointer.p = quota;
    args[n].value.pointer.vtable = grpc_resource_quota_arg_vtable();
    n++;
    grpc_channel_args cargs = {.num_args = n, .args = args};
    grpc_server *s = grpc_server_create(&cargs, NULL);
    grpc_resource_quota_unref(quota); /* the server holds its own reference */
    return s;
}
