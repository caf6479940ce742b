/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's DRA health stream (see dra-health.h). */
#include "plugin/dra-health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "dra_health_v1alpha1.pb-c.h"
#include "gpu/health.h"
#include "plugin/driver.h"

#define MESSAGE_MAX 1024 /* the API's limit on DeviceHealth.message */

/* One complete list from a snapshot; 0 or -EPIPE/-ENOMEM. */
static int send_list(struct rpc_stream *st, const char *pool, const struct gpu_health_dev *h,
                     size_t n)
{
    V1alpha1__DeviceHealth *dh = calloc(n + 1, sizeof(*dh));
    V1alpha1__DeviceHealth **dhp = calloc(n + 1, sizeof(V1alpha1__DeviceHealth *));
    V1alpha1__DeviceIdentifier *id = calloc(n + 1, sizeof(*id));
    char(*msg)[MESSAGE_MAX] = calloc(n + 1, sizeof(*msg));
    int r = -ENOMEM;
    if (dh && dhp && id && msg) {
        int64_t now = (int64_t)time(NULL);
        for (size_t i = 0; i < n; i++) {
            v1alpha1__device_identifier__init(&id[i]);
            id[i].pool_name = (char *)pool;
            id[i].device_name = (char *)h[i].name;
            v1alpha1__device_health__init(&dh[i]);
            dh[i].device = &id[i];
            dh[i].health = !h[i].healthy      ? V1ALPHA1__HEALTH_STATUS__UNHEALTHY
                           : h[i].unmonitored ? V1ALPHA1__HEALTH_STATUS__UNKNOWN
                                              : V1ALPHA1__HEALTH_STATUS__HEALTHY;
            dh[i].last_updated_time = now;
            if (!h[i].healthy)
                snprintf(msg[i], sizeof(msg[i]), "%s", h[i].reason);
            else if (h[i].unmonitored)
                snprintf(msg[i], sizeof(msg[i]), "NVML events cannot be registered for %s",
                         h[i].name);
            dh[i].message = msg[i];
            dhp[i] = &dh[i];
        }
        V1alpha1__NodeWatchResourcesResponse resp = V1ALPHA1__NODE_WATCH_RESOURCES_RESPONSE__INIT;
        resp.n_devices = n;
        resp.devices = dhp;
        size_t len = protobuf_c_message_get_packed_size(&resp.base);
        uint8_t *buf = malloc(len ? len : 1);
        if (buf) {
            protobuf_c_message_pack(&resp.base, buf);
            r = rpc_stream_send(st, buf, len);
            free(buf);
        }
    }
    free(dh);
    free(dhp);
    free(id);
    free(msg);
    return r;
}

void dra_health_watch(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req, size_t len,
                      struct rpc_stream *st, struct rpc_reply *reply)
{
    struct driver *d = user;
    V1alpha1__NodeWatchResourcesRequest *in =
        v1alpha1__node_watch_resources_request__unpack(NULL, len, req);
    if (!in) {
        reply->status = RPC_INVALID_ARGUMENT;
        snprintf(reply->details, sizeof(reply->details),
                 "NodeWatchResourcesRequest does not decode");
        return;
    }
    v1alpha1__node_watch_resources_request__free_unpacked(in, NULL);
    if (!d->health) {
        reply->status = RPC_UNIMPLEMENTED;
        snprintf(reply->details, sizeof(reply->details), "GPU health is not watched");
        return;
    }
    struct gpu_health_dev *h = calloc(GPU_MAX_DEVICES, sizeof(*h));
    if (!h) {
        reply->status = RPC_INTERNAL;
        snprintf(reply->details, sizeof(reply->details), "out of memory");
        return;
    }
    gs_info("kubelet watches device health", "stream=%s", "NodeWatchResources");
    size_t n = 0;
    uint64_t gen = gpu_health_snapshot(d->health, h, GPU_MAX_DEVICES, &n);
    uint64_t last_send = 0;
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec;
        if (send_list(st, d->cfg.node_name, h, n) < 0)
            break;
        last_send = now;
        uint64_t g = gen;
        while (g == gen && !gs_http_cancel_is_triggered(ctx->cancel)) {
            g = gpu_health_wait_change(d->health, gen, 500);
            clock_gettime(CLOCK_MONOTONIC, &ts);
            if ((uint64_t)ts.tv_sec - last_send >= DRA_HEALTH_REFRESH_S)
                break;
        }
        if (gs_http_cancel_is_triggered(ctx->cancel))
            break;
        gen = gpu_health_snapshot(d->health, h, GPU_MAX_DEVICES, &n);
    }
    free(h);
    gs_info("device health stream ended", "stream=%s", "NodeWatchResources");
}
