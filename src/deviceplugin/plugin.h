/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice-device-plugin: the kubelet device plugin (API v1beta1) of legacy mode
 * (docs/internals/legacy.md). Advertises every GPU as `split_count` devices of `resource`
 * ("<uuid>-<j>"), and in Allocate hands a container the GPUs the extender chose for it: the
 * oldest placement the extender recorded on this Node (extender/assign.h; pod annotations, which
 * the pod's owner can write, are not trusted), its next container, with libvgpu's environment,
 * mounts and a limits file in our format. Publishes hami.io/node-nvidia-register.
 */
#ifndef GS_DEVICEPLUGIN_PLUGIN_H
#define GS_DEVICEPLUGIN_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "kube/event.h"
#include "kube/k8s.h"
#include "gpu/discovery.h"
#include "gpu/health.h"

#define DP_API_VERSION     "v1beta1"
#define DP_KUBELET_SOCKET  "kubelet.sock"
#define DP_SOCKET_NAME     "gpuslice-nvidia.sock"
#define DP_CONTAINER_VGPU  "/usr/local/vgpu"
#define DP_CONTAINER_CACHE "/usr/local/vgpu/containers"
/* Each container's shared region folder (the limits file's `region` line points into it). */
#define DP_CONTAINER_REGION_DIR "/var/run/gpuslice/legacy"

struct dp_config {
    const char *node_name;
    const char *plugin_dir;     /* kubelet's device plugin directory */
    const char *resource;       /* "nvidia.com/gpu" */
    unsigned split_count;       /* devices advertised per GPU */
    const char *host_dir;       /* host folder with libvgpu.so and ld.so.preload */
    const char *state_dir;      /* host folder for limits files and shared caches */
    double mem_scaling;         /* HAMi deviceMemoryScaling (1 = none) */
    double core_scaling;        /* HAMi deviceCoreScaling */
    const char *cuda_log_level; /* LIBCUDA_LOG_LEVEL for containers ("" / NULL = unset) */
    bool disable_core_limit;    /* GPU_CORE_UTILIZATION_POLICY=disable */
    struct gs_k8s_client *k8s;
    struct gs_k8s_recorder *events; /* NULL = no Events (AllocationFailed on the Pod) */
    const struct gpu_inventory *inv;
    /* GPU health (gpu/health.h; NULL = every GPU healthy): ListAndWatch sends a GPU's devices
     * "Unhealthy" while it is, again at every change; the node annotation's `health` follows. */
    struct gpu_health_table *health;
};

struct dp_stats {
    uint64_t allocate, allocate_errors, registrations, list_and_watch;
};

struct dp_plugin;

struct dp_plugin *dp_plugin_new(const struct dp_config *cfg, struct gs_error *err);
void dp_plugin_free(struct dp_plugin *p);
/* Serve the plugin socket (again, when it was removed) and register with kubelet. Called
 * periodically: does nothing while the kubelet socket and ours are the ones registered. */
int dp_plugin_tick(struct dp_plugin *p, struct gs_error *err);
/* Patch the Node with hami.io/node-nvidia-register and the handshake. */
int dp_plugin_publish(struct dp_plugin *p, struct gs_error *err);
/* Remove <state-dir>/{limits,containers,regions}/<uid>-<container> of pods no longer bound to
 * this node, and the Node's placement records that no longer stand (ext_assign_stale, logged).
 * Returns how many were removed, or -errno when the pods cannot be listed. */
int dp_plugin_gc(struct dp_plugin *p, struct gs_error *err);
void dp_plugin_stats(struct dp_plugin *p, struct dp_stats *out);

#endif /* GS_DEVICEPLUGIN_PLUGIN_H */
