/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The published device model: how this node's GPUs appear in the API as ResourceSlices of the
 * DRA driver. Pure functions (no I/O). The kubelet plugin publishes exactly these objects; the
 * standalone CLI evaluates DeviceClass selectors and allocates against the same objects, so a
 * claim that fits under `gpuslice run` fits on a cluster node with the same GPUs.
 *
 * Slices are named "<node>-<driver>-<i>" and hold at most GPU_SLICE_MAX_DEVICES devices each;
 * the pool is named after the node; every slice carries the pool generation and
 * resourceSliceCount. Device "hami-gpu-<minor>": attributes type uuid minor productName brand
 * architecture cudaComputeCapability driverVersion cudaDriverVersion pcieBusID numaNode
 * nvlinkDomain resource.kubernetes.io/{pcieRoot,pciBusID}; capacities cores (100, 0..100 step 1)
 * and memory (total rounded down to 1Mi, 1Mi..total step 1Mi); allowMultipleAllocations true.
 */
#ifndef GS_GPU_SLICE_H
#define GS_GPU_SLICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/discovery.h"
#include "gpu/health.h"

#define GPU_SLICE_MAX_DEVICES 128

/* Number of slices for n devices (at least 1: an empty pool is published as one empty slice). */
size_t gpu_slice_count(size_t n_devices);

/* Slice `index` of the pool as a full resource.k8s.io/v1 ResourceSlice object (new reference). */
json_t *gpu_slice_build(const struct gpu_inventory *inv, const char *driver, const char *node,
                        int64_t generation, size_t index);

/* The device entry of one GPU (new reference). */
json_t *gpu_slice_device(const struct gpu_device *d, const char *driver);

/*
 * Device health as taints (KEP-5055; docs/internals/plugin.md "Device health"). Keys under the
 * driver's name, beside NVIDIA's gpu.nvidia.com/{xid,gpu-lost,unmonitored}:
 *   <driver>/gpu-lost     NoSchedule  the GPU does not answer (until it does)
 *   <driver>/xid=<XID>    NoSchedule  a fatal XID (until the operator clears it)
 *   <driver>/ecc-dbe      NoSchedule  a double-bit ECC error (until cleared)
 *   <driver>/xid=<XID>    None        the last non-fatal XID (informational)
 *   <driver>/unmonitored  None        events cannot be registered for the GPU
 * timeAdded is the time of the change (stable, so an unchanged state is not rewritten). A slice
 * with taints holds at most GPU_SLICE_MAX_TAINTED devices (the API's rule); a larger one is
 * published without them.
 */
#define GPU_TAINT_GPU_LOST           "gpu-lost"
#define GPU_TAINT_XID                "xid"
#define GPU_TAINT_ECC_DBE            "ecc-dbe"
#define GPU_TAINT_UNMONITORED        "unmonitored"
#define GPU_TAINT_EFFECT_NO_SCHEDULE "NoSchedule"
#define GPU_TAINT_EFFECT_NONE        "None"
#define GPU_SLICE_MAX_TAINTED        64
json_t *gpu_slice_health_taints(const struct gpu_health_dev *h, const char *driver);
/* Set devices[].taints of a built slice from the health of its GPUs (matched by name). */
void gpu_slice_apply_health(json_t *slice, const struct gpu_health_dev *h, size_t n,
                            const char *driver);

/* True if `returned` (what the server stored) lacks consumable-capacity fields `sent` had: the
 * DRAConsumableCapacity feature gate is off on the API server. */
bool gpu_slice_gate_dropped(const json_t *sent, const json_t *returned);

#endif /* GS_GPU_SLICE_H */
