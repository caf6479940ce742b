/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceSlices of this node: built from the inventory (pure), kept in sync with the API
 * server by a publisher thread, with a watcher thread that notices slices deleted or changed by
 * others (kubelet wipes a node's slices when it restarts) and triggers a re-sync.
 *
 * Slices are named "<node>-<driver>-<i>", hold at most GPU_SLICE_MAX_DEVICES devices each; the pool
 * (name = node name) generation increases whenever the published content changes, and every slice
 * carries resourceSliceCount. If the API server drops the consumable-capacity fields
 * (allowMultipleAllocations, capacity requestPolicy) the feature gate DRAConsumableCapacity is
 * off: one error line says so, the metric gpuslice_plugin_consumable_capacity_gate_off is 1, and
 * the comparison ignores those fields so the publisher does not fight the server.
 */
#ifndef GS_PLUGIN_SLICES_H
#define GS_PLUGIN_SLICES_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kube/k8s.h"
#include "gpu/discovery.h"
#include "gpu/health.h"
#include "gpu/slice.h"
#include "plugin/driver.h"
#include "plugin/metrics.h"

struct publisher_config {
    const char *driver;
    const char *node;
    const char *sysfs_root;
    unsigned discovery_interval_s;      /* re-discover GPUs; 0 = only at start */
    unsigned resync_interval_s;         /* full compare with the API even without events */
    unsigned reconcile_interval_s;      /* driver_reconcile_api; 0 = never */
    struct gpu_health_table *health;    /* taints from here (NULL = none); kick on change */
    struct gpu_health_watcher *watcher; /* suspended around each re-discovery (may be NULL) */
};

struct publisher;

struct publisher *publisher_start(const struct publisher_config *cfg, struct gs_k8s_client *k8s,
                                  struct driver *drv, struct metrics *m,
                                  const struct gpu_inventory *initial, struct gs_error *err);
/* Wake the publisher for a sync now. */
void publisher_kick(struct publisher *p);
void publisher_stop(struct publisher *p);

#endif /* GS_PLUGIN_SLICES_H */
