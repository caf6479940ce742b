/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet plugin's side of GPU health (docs/internals/plugin.md "Device health"): the one
 * watcher of gpu/health.h fills the table; a reporter thread follows the table's generation and
 * kicks the ResourceSlice publisher (taints, gpu/slice.h) and posts a Warning Event on the Node
 * when a GPU turns unhealthy (Normal when it is healthy again). The kubelet's DRA health stream
 * (dra_health_methods) reads the same table. Claims already prepared on a tainted device are not
 * touched here: NoExecute taints (an admin's DeviceTaintRule) are Kubernetes' to act on.
 */
#ifndef GS_PLUGIN_HEALTH_H
#define GS_PLUGIN_HEALTH_H

#include <stdbool.h>

#include "gpu/health.h"
#include "kube/k8s.h"
#include "plugin/slices.h"

struct plugin_health_config {
    const char *node;
    const char *driver;
    bool enabled;
    const char *nonfatal_xids;
    const char *ignore_xids;
    const char *clear_dir;
};

struct plugin_health;

/* Build the table for `inv` and start watching. NULL with err on a bad XID list. */
struct plugin_health *plugin_health_start(const struct plugin_health_config *cfg,
                                          const struct gpu_inventory *inv,
                                          struct gs_k8s_client *k8s, struct gs_error *err);
/* The table (for the publisher and the health stream). */
struct gpu_health_table *plugin_health_table(struct plugin_health *h);
/* The watcher (for gpu_health_watcher_suspend around re-discovery). */
struct gpu_health_watcher *plugin_health_watcher(struct plugin_health *h);
/* From now on, kick `pub` at every change (NULL = stop kicking). */
void plugin_health_set_publisher(struct plugin_health *h, struct publisher *pub);
/* The pool name (the node) the health stream reports devices in. */
const char *plugin_health_pool(const struct plugin_health *h);
void plugin_health_stop(struct plugin_health *h);

#endif /* GS_PLUGIN_HEALTH_H */
