/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compute QoS (qos.c): which cap a launch obeys now. Per device, from the claim's own policy and
 * priority (read-only limits file, or the environment at start-up) and what the co-tenants of
 * the GPU show: their priority and policy from their read-only limits files, their pending work
 * from their regions mapped read-only (`peers` directory, include/gpuslice/limits.h), or, in
 * HAMi's environment mode, what HAMi's vGPU monitor wrote into HAMi-core's region
 * (utilization_switch, recent_kernel; hami-region.c). Design: docs/internals/vgpu.md,
 * "Compute QoS".
 */
#ifndef GS_VGPU_QOS_H
#define GS_VGPU_QOS_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuslice/shared_region.h"

/* While held by a higher priority, a tenant still gets this share of GPU time (its starvation
 * bound), or its cap when that is lower. */
#define VGPU_QOS_HOLD_FLOOR 5U

/* One co-tenant of a GPU as the decision sees it. */
struct vgpu_qos_peer {
    int priority;   /* 0 high, 1 low: from its read-only limits file */
    uint32_t cores; /* its cap (0 = none): it publishes pending work only then */
    const struct gs_region_device *dev; /* its region's slot for the GPU, mapped read-only */
};

/* What a launch obeys now. */
struct vgpu_qos_verdict {
    uint32_t cores; /* the cap to enforce; 0 = none now (free) */
    uint32_t state; /* GS_REGION_QOS_STATE_* */
};

/* The decision itself (pure): own policy/priority/cap, the peers, now (CLOCK_MONOTONIC).
 * hami_switch: HAMi's utilization_switch for GS_POLICY_UNSET in environment mode (-1: none). */
struct vgpu_qos_verdict vgpu_qos_decide(int policy, int priority, uint32_t cores,
                                        const struct vgpu_qos_peer *peers, int n_peers,
                                        int hami_switch, uint64_t now);

/* Per-device configuration (set once per process and device, before its first launch). */
struct vgpu_qos_self {
    int policy;   /* enum gs_compute_policy; GS_POLICY_UNSET: HAMi's switch, else hard */
    int priority; /* 0 high, 1 low */
    const char *claim;
    const char *peers_dir; /* "" or NULL: no co-tenants visible */
    const char *uuid;
};
void vgpu_qos_configure(int dev, const struct vgpu_qos_self *self);
bool vgpu_qos_configured(int dev);

/* The verdict for a launch on device `dev` (own region slot rd, cap cores 1..99) at monotonic
 * time `now`: cached per device, re-decided at most every VGPU_QOS_DECIDE_NS, peers re-scanned
 * every VGPU_QOS_SCAN_NS. Also stamps rd->pending_ns and publishes rd->qos. */
struct vgpu_qos_verdict vgpu_qos_verdict(int dev, struct gs_region_device *rd, uint32_t cores,
                                         uint64_t now);
/* Waiting (budget, hold): keep pending_ns fresh. */
void vgpu_qos_pending(struct gs_region_device *rd, uint64_t now);
/* A launch of (estimated) `gpu_ns` was queued at `now`: the claim has work pending until the
 * queue it knows of drains (pending_ns may lie in the future by the queued work). */
void vgpu_qos_queued(int dev, struct gs_region_device *rd, uint64_t now, int64_t gpu_ns);

/* Tests: replace the peers of a device by a fixed list (NULL/0: scan the directory again). */
void vgpu_qos_set_peers(int dev, const struct vgpu_qos_peer *peers, int n);
/* Tests: forget all configuration and cached verdicts. */
void vgpu_qos_reset(void);

#define VGPU_QOS_DECIDE_NS    1000000ULL   /* a verdict is reused for 1 ms */
#define VGPU_QOS_QUEUE_MAX_NS 100000000ULL /* pending_ns at most 100 ms ahead of now */
#define VGPU_QOS_SCAN_NS      100000000ULL /* the peers directory is re-read every 100 ms */

#endif /* GS_VGPU_QOS_H */
