/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster's GPU inventory in legacy mode (see docs/internals/legacy.md): HAMi's node
 * annotations become ResourceSlices of our device model (src/gpu/slice.c, the same devices the
 * DRA kubelet plugin publishes), pods already placed by HAMi's annotations become allocated
 * claims, and our allocator decides. Not locked: the extender serialises its use.
 */
#ifndef GS_EXTENDER_INVENTORY_H
#define GS_EXTENDER_INVENTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc/alloc.h"
#include "base/error.h"
#include "hami/hami.h"

#define EXT_MAX_SIZES 8

/* What placed pods hold on one device, counted as HAMi's DeviceUsage (one task per container
 * entry on the device). */
struct ext_dev_usage {
    int32_t used; /* tasks */
    int64_t usedmem, usedcores;
};

struct ext_node {
    char *name;
    size_t n;                     /* devices (usable ones are in the allocator) */
    struct hami_node_device *dev; /* n entries */
    struct ext_dev_usage *use;    /* n entries */
    char problem[256];            /* non-empty: the node cannot take GPU pods, and why */
    int64_t mem_total, mem_used;  /* MiB over healthy devices; used by placed pods */
};

struct ext_inventory {
    struct alloc_state *st;
    const char *driver;
    size_t n_nodes;
    struct ext_node *nodes;
    size_t *by_name; /* node indexes sorted by name (then index): ext_inventory_node's bsearch */
    int64_t sizes[EXT_MAX_SIZES]; /* distinct device memory sizes, bytes (gpumem-percentage) */
    size_t n_sizes;
    size_t n_placed; /* pods counted from their annotations */
};

/* Device name in our model of the i-th device of the node annotation: "hami-gpu-<i>" (by
 * position: 7-field colon entries all say index 0). */
void ext_device_name(size_t i, char *buf, size_t len);
/* Is the device in the allocator: healthy, with memory, and tasks below its count (HAMi's
 * CardTimeSlicingExhausted, Fit in pkg/device/nvidia/device.go)? */
bool ext_device_usable(const struct ext_node *n, size_t i);
/* Device attribute (int) holding the tasks placed pods run on the device (the `mutex` policy
 * selects devices where it is 0). */
#define EXT_ATTR_TASKS "hamiTasks"

/*
 * Build from Node objects and Pod objects (arrays; pods on any node). `skip_ns`/`skip_name`
 * (may be NULL) name the pod being scheduled: its own annotations are not counted. A node whose
 * annotation does not decode is kept with `problem` set (every pod fails there, saying why).
 */
int ext_inventory_build(const json_t *nodes, const json_t *pods, const char *driver,
                        const char *skip_ns, const char *skip_name, struct ext_inventory **out,
                        struct gs_error *err);
void ext_inventory_free(struct ext_inventory *inv);
/* Does the pod ask for any of HAMi's resources (nvidia.com/gpu, gpumem, gpumem-percentage,
 * gpucores in a container's or init container's limits or requests)? A pod asking none books
 * nothing, whatever its annotations say. */
bool ext_pod_requests_gpu(const json_t *pod);
const struct ext_node *ext_inventory_node(const struct ext_inventory *inv, const char *name);
/* The device of `node` with this UUID, or NULL. */
const struct hami_node_device *ext_node_device_by_uuid(const struct ext_node *n, const char *uuid);
/* Position of the device named `name` ("hami-gpu-<i>") or -1. */
long ext_node_device_by_name(const struct ext_node *n, const char *name);

#endif /* GS_EXTENDER_INVENTORY_H */
