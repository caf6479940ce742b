/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contract: HAMi's names (Project-HAMi/HAMi, read at v2.6.0 and v2.10.0).
 *
 * Every gpuslice binary that speaks HAMi's protocol spells HAMi's names from here and nowhere
 * else: the scheduler extender and the device plugin (legacy mode), the webhook (legacy mode and
 * the DRA translation of HAMi resources), the kubelet plugin's CDI env, libvgpu (env names only:
 * it includes this header and links nothing new) and the monitor (metric names). The formats
 * of the values (node devices, pod devices, node lock, filter reasons) are encoded and decoded by
 * one codec, src/hami/hami.h, which cites the HAMi function each coder follows.
 *
 * Names only (string literals): no layout, so no version or size asserts.
 */
#ifndef GS_GPUSLICE_HAMI_H
#define GS_GPUSLICE_HAMI_H

/* ---- Node annotations (pkg/device/nvidia/device.go consts, pkg/util/nodelock) ---- */
#define HAMI_ANN_NODE_REGISTER   "hami.io/node-nvidia-register" /* RegisterAnnos */
#define HAMI_ANN_NODE_HANDSHAKE  "hami.io/node-handshake"       /* HandshakeAnnos */
#define HAMI_ANN_NODE_PAIR_SCORE "hami.io/node-nvidia-score"    /* RegisterGPUPairScore */
#define HAMI_ANN_NODE_LOCK       "hami.io/mutex.lock"           /* nodelock.NodeLockKey */
#define HAMI_ANN_DEVICE_CORDON   "hami.io/device-cordon"        /* DeviceCordonAnnotation */
/* Handshake values: "Reported_<time>", "Requesting_<time>", "Deleted_<time>". */
#define HAMI_HANDSHAKE_REPORTED   "Reported"
#define HAMI_HANDSHAKE_REQUESTING "Requesting"
#define HAMI_HANDSHAKE_DELETED    "Deleted"

/* ---- Pod annotations (pkg/util/types.go, device.InRequestDevices / SupportDevices) ---- */
#define HAMI_ANN_TO_ALLOCATE "hami.io/vgpu-devices-to-allocate"
#define HAMI_ANN_ALLOCATED   "hami.io/vgpu-devices-allocated"
#define HAMI_ANN_NODE        "hami.io/vgpu-node" /* AssignedNodeAnnotations */
#define HAMI_ANN_TIME        "hami.io/vgpu-time" /* AssignedTimeAnnotations */
#define HAMI_ANN_BIND_PHASE  "hami.io/bind-phase"
#define HAMI_ANN_BIND_TIME   "hami.io/bind-time"
#define HAMI_ANN_NODE_POLICY "hami.io/node-scheduler-policy"
#define HAMI_ANN_GPU_POLICY  "hami.io/gpu-scheduler-policy"
#define HAMI_BIND_ALLOCATING "allocating"
#define HAMI_BIND_SUCCESS    "success"
#define HAMI_BIND_FAILED     "failed"
/* Pod label (util.PatchPodAnnotations copies AssignedNodeAnnotations into the labels; HAMi's
 * vGPU monitor selects the node's pods by it). */
#define HAMI_LABEL_NODE "hami.io/vgpu-node"

/* User annotations on pods (pkg/device/nvidia/device.go). */
#define HAMI_ANN_USE_TYPE   "nvidia.com/use-gputype"
#define HAMI_ANN_NOUSE_TYPE "nvidia.com/nouse-gputype"
#define HAMI_ANN_USE_UUID   "nvidia.com/use-gpuuuid"
#define HAMI_ANN_NOUSE_UUID "nvidia.com/nouse-gpuuuid"
#define HAMI_ANN_NUMA_BIND  "nvidia.com/numa-bind" /* NumaBind; strconv.ParseBool */
#define HAMI_ANN_VGPU_MODE  "nvidia.com/vgpu-mode" /* AllocateMode */

/* Scheduler policy names (pkg/util/types.go SchedulerPolicyName); the annotation may be a comma
 * list (util.PolicyContains). */
#define HAMI_POLICY_BINPACK  "binpack"
#define HAMI_POLICY_SPREAD   "spread"
#define HAMI_POLICY_TOPOLOGY "topology-aware"
#define HAMI_POLICY_MUTEX    "mutex"
#define HAMI_POLICY_NUMA     "numa"

/* Device modes and the device type written into pod annotations. */
#define HAMI_MODE_HAMI_CORE "hami-core"
#define HAMI_MODE_MIG       "mig"
#define HAMI_MODE_MPS       "mps"
#define HAMI_DEVICE_TYPE    "NVIDIA"  /* NvidiaGPUDevice */
#define HAMI_TYPE_PREFIX    "NVIDIA-" /* register.go: prefixed unless the model starts "NVIDIA" */

/* ---- Extended resources (HAMi chart defaults, NvidiaConfig.Resource*Name) ---- */
#define HAMI_RES_GPU      "nvidia.com/gpu"
#define HAMI_RES_MEM      "nvidia.com/gpumem"
#define HAMI_RES_MEM_PCT  "nvidia.com/gpumem-percentage"
#define HAMI_RES_CORES    "nvidia.com/gpucores"
#define HAMI_RES_PRIORITY "nvidia.com/priority"

/* ---- Container env (device plugin Allocate, webhook, HAMi-core) ---- */
#define HAMI_ENV_VISIBLE_DEVICES       "NVIDIA_VISIBLE_DEVICES"
#define HAMI_ENV_MEMORY_LIMIT          "CUDA_DEVICE_MEMORY_LIMIT" /* and _<i> */
#define HAMI_ENV_SM_LIMIT              "CUDA_DEVICE_SM_LIMIT"     /* and _<i> */
#define HAMI_ENV_SHARED_CACHE          "CUDA_DEVICE_MEMORY_SHARED_CACHE"
#define HAMI_ENV_OVERSUBSCRIBE         "CUDA_OVERSUBSCRIBE"
#define HAMI_ENV_LOG_LEVEL             "LIBCUDA_LOG_LEVEL"
#define HAMI_ENV_CORE_POLICY           "GPU_CORE_UTILIZATION_POLICY" /* util.CoreLimitSwitch */
#define HAMI_ENV_TASK_PRIORITY         "CUDA_TASK_PRIORITY"          /* util.TaskPriority */
#define HAMI_ENV_DISABLE_CONTROL       "CUDA_DISABLE_CONTROL"
#define HAMI_ENV_NODELOCK_EXPIRE       "HAMI_NODELOCK_EXPIRE" /* nodelock.setupNodeLockTimeout */
#define HAMI_NODELOCK_EXPIRE_DEFAULT_S 300                    /* nodelock.NodeLockTimeout */
#define HAMI_VGPU_LOCK_DIR             "/tmp/vgpulock"        /* server.go Allocate mount */

/* ---- Filter reasons (pkg/device/common/common.go) ---- */
#define HAMI_REASON_CARD_TYPE_MISMATCH     "CardTypeMismatch"
#define HAMI_REASON_CARD_UUID_MISMATCH     "CardUuidMismatch"
#define HAMI_REASON_CARD_TIMESLICING       "CardTimeSlicingExhausted"
#define HAMI_REASON_CARD_COMPUTE_EXHAUSTED "CardComputeUnitsExhausted"
#define HAMI_REASON_CARD_INSUFFICIENT_MEM  "CardInsufficientMemory"
#define HAMI_REASON_CARD_INSUFFICIENT_CORE "CardInsufficientCore"
#define HAMI_REASON_CARD_NOT_HEALTH        "CardNotHealth"
#define HAMI_REASON_CARD_CORDONED          "CardCordoned"
#define HAMI_REASON_NUMA_NOT_FIT           "NumaNotFit"
#define HAMI_REASON_EXCLUSIVE_CONFLICT     "ExclusiveDeviceAllocateConflict"
#define HAMI_REASON_NODE_INSUFFICIENT      "NodeInsufficientDevice"
#define HAMI_REASON_ALLOCATED_INSUFFICIENT "AllocatedCardsInsufficientRequest"
#define HAMI_REASON_NODE_UNFIT_POD         "NodeUnfitPod"
/* Ours (HAMi has no name for a node without a usable register annotation). */
#define HAMI_REASON_NODE_UNREGISTERED "NodeUnregistered"

/* ---- vGPU monitor metric families (cmd/vGPUmonitor/metrics.go) ---- */
#define HAMI_METRIC_HOST_MEM         "hami_host_gpu_memory_used_bytes"
#define HAMI_METRIC_HOST_UTIL        "hami_host_gpu_utilization_ratio"
#define HAMI_METRIC_HOST_MEMCTL_UTIL "hami_host_gpu_memory_controller_utilization_ratio"
#define HAMI_METRIC_VGPU_USED        "hami_vgpu_memory_used_bytes"
#define HAMI_METRIC_VGPU_LIMIT       "hami_vgpu_memory_limit_bytes"
#define HAMI_METRIC_CTR_MEM          "hami_container_device_memory_bytes"
#define HAMI_METRIC_CTR_UTIL         "hami_container_device_utilization_ratio"
#define HAMI_METRIC_CTR_LAST_KERNEL  "hami_container_last_kernel_elapsed_seconds"
#define HAMI_METRIC_MIG_INFO         "hami_mig_device_info"
#define HAMI_METRIC_VGPU_MEM_CONTEXT "hami_vgpu_memory_context_bytes"
#define HAMI_METRIC_VGPU_MEM_MODULE  "hami_vgpu_memory_module_bytes"
#define HAMI_METRIC_VGPU_MEM_BUFFER  "hami_vgpu_memory_buffer_bytes"
#define HAMI_METRIC_BUILD_INFO       "hami_build_info"
/* The vGPU monitor's collector is registered with the constant label zone="vGPU". */
#define HAMI_METRIC_ZONE_LABEL "zone"
#define HAMI_METRIC_ZONE_VGPU  "vGPU"
/* --legacy-metrics names. */
#define HAMI_METRIC_L_HOST_MEM      "HostGPUMemoryUsage"
#define HAMI_METRIC_L_HOST_CORE     "HostCoreUtilization"
#define HAMI_METRIC_L_VGPU_USED     "vGPU_device_memory_usage_in_bytes"
#define HAMI_METRIC_L_VGPU_LIMIT    "vGPU_device_memory_limit_in_bytes"
#define HAMI_METRIC_L_CTR_MEM_DESC  "Device_memory_desc_of_container"
#define HAMI_METRIC_L_CTR_UTIL_DESC "Device_utilization_desc_of_container"
#define HAMI_METRIC_L_CTR_LAST      "Device_last_kernel_of_container"
#define HAMI_METRIC_L_MIG_INFO      "MigInfo"
/* Scheduler families (pkg/scheduler/metrics.go) the dashboards read. */
#define HAMI_METRIC_S_GPU_MEM_LIMIT     "hami_gpu_memory_limit_bytes"
#define HAMI_METRIC_S_GPU_MEM_ALLOC     "hami_gpu_memory_allocated_bytes"
#define HAMI_METRIC_S_GPU_SHARED        "hami_gpu_shared_count"
#define HAMI_METRIC_S_GPU_CORE_ALLOC    "hami_gpu_core_allocated_ratio"
#define HAMI_METRIC_S_NODE_MEM_ALLOC    "hami_node_gpu_memory_allocated_ratio"
#define HAMI_METRIC_S_L_NODE_OVERVIEW   "nodeGPUOverview"
#define HAMI_METRIC_S_L_VGPU_CORE_PCT   "vGPUCorePercentage"
#define HAMI_METRIC_S_L_VGPU_MEMORY_PCT "vGPUMemoryPercentage"

#endif /* GS_GPUSLICE_HAMI_H */
