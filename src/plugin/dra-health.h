/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's DRA health service (KEP-4680; k8s.io/kubelet/pkg/apis/dra-health/v1alpha1,
 * proto/dra_health_v1alpha1.proto) on dra.sock: /v1alpha1.DRAResourceHealth/NodeWatchResources
 * streams the complete list of this node's devices with their health from the driver's health
 * table (gpu/health.h), again at every change and at least every DRA_HEALTH_REFRESH_S seconds
 * (fresh last_updated_time, so the kubelet never times a device out to Unknown). The kubelet
 * shows it in pod.status.containerStatuses[].allocatedResourcesStatus.
 */
#ifndef GS_PLUGIN_DRA_HEALTH_H
#define GS_PLUGIN_DRA_HEALTH_H

#include "plugin/grpc-server.h"

#define DRA_HEALTH_METHOD    "/v1alpha1.DRAResourceHealth/NodeWatchResources"
#define DRA_HEALTH_REFRESH_S 10

/* The stream handler; `user` is the struct driver (its `health` table, NULL = no stream). */
void dra_health_watch(void *user, const struct rpc_call_ctx *ctx, const uint8_t *req, size_t len,
                      struct rpc_stream *st, struct rpc_reply *reply);

#endif /* GS_PLUGIN_DRA_HEALTH_H */
