/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's gRPC services, decoded with protobuf-c and mapped onto the driver:
 *   /pluginregistration.Registration/{GetInfo,NotifyRegistrationStatus}   (registration socket)
 *   /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/{NodePrepareResources,NodeUnprepareResources}
 *   /k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/{...}                  (dra.sock)
 * Every claim of a request gets an entry in the response (keyed by UID); per-claim failures go in
 * its `error`. A request that protobuf cannot decode is answered INVALID_ARGUMENT.
 */
#ifndef GS_PLUGIN_DRA_SERVICE_H
#define GS_PLUGIN_DRA_SERVICE_H

#include <stddef.h>

#include "plugin/driver.h"
#include "plugin/grpc-server.h"

#define DRA_MAX_CLAIMS_PER_CALL 1024

struct registration_info {
    const char *driver_name;
    const char *endpoint; /* <plugin-dir>/dra.sock */
    struct metrics *metrics;
};

extern const struct rpc_method registration_methods[];
extern const size_t registration_n_methods;
extern const struct rpc_method dra_methods[];
extern const size_t dra_n_methods;

#endif /* GS_PLUGIN_DRA_SERVICE_H */
