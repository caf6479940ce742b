/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/collect.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/macros.h"
#include "base/version.h"
#include "config/limits.h"
#include "gpuslice/hami.h"

enum fam {
    /* HAMi vGPU monitor: device and per-container usage */
    F_HOST_MEM,
    F_HOST_UTIL,
    F_VGPU_USED,
    F_VGPU_LIMIT,
    F_CTR_MEM,
    F_CTR_UTIL,
    F_CTR_LAST,
    F_HOST_MEMCTL,
    F_VGPU_CONTEXT,
    F_VGPU_MODULE,
    F_VGPU_BUFFER,
    F_MIG_INFO,
    F_HAMI_BUILD,
    /* HAMi scheduler (cmd/scheduler/metrics.go): allocation on this node's GPUs */
    F_S_MEM_LIMIT,
    F_S_CORE_LIMIT,
    F_S_MEM_ALLOC,
    F_S_SHARED,
    F_S_CORE_ALLOC,
    F_S_OVERVIEW,
    F_S_MEM_RATIO,
    /* HAMi-DRA monitor: allocation */
    F_DRA_CORE_LIMIT,
    F_DRA_MEM_LIMIT,
    F_DRA_CORE_ALLOC,
    F_DRA_MEM_ALLOC,
    F_DRA_VCORE,
    F_DRA_VMEM,
    /* ours */
    F_GPU_MEM_TOTAL,
    F_GPU_HEALTHY,
    F_GPU_LAST_XID,
    F_CLAIM_USED,
    F_CLAIM_LIMIT,
    F_CLAIM_CORES,
    F_CLAIM_OOM,
    F_CLAIM_THROTTLED,
    F_CLAIM_QOS,
    F_CLAIM_QOS_STATE,
    F_CLAIM_HELD,
    F_CLAIM_BUSY,
    F_CLAIM_LAUNCHES,
    F_CLAIM_LAST_KERNEL,
    F_REGION_HEALTHY,
    F_CLAIMS,
    F_SKIPPED,
    F_SCRAPE,
    F_BUILD,
    F_AUDIT_AVAILABLE,
    F_AUDIT_BREACH,
    F_AUDIT_BREACHES,
    F_AUDIT_KILLS,
    /* --legacy-metrics */
    F_L_HOST_MEM,
    F_L_HOST_CORE,
    F_L_VGPU_USED,
    F_L_VGPU_LIMIT,
    F_L_CORE_LIMIT,
    F_L_MEM_LIMIT,
    F_L_CORE_ALLOC,
    F_L_MEM_ALLOC,
    F_L_VCORE,
    F_L_VMEM,
    F_L_CTR_MEM_DESC,
    F_L_CTR_UTIL_DESC,
    F_L_CTR_LAST,
    F_L_MIG_INFO,
    F_L_S_OVERVIEW,
    F_L_S_MEM_PCT,
    F_L_S_SHARED,
    F_L_S_VCORE_PCT,
    F_L_S_VMEM_PCT,
    F_N,
    F_FIRST_LEGACY = F_L_HOST_MEM,
};

/* Names, HELP texts and labels as HAMi's (cmd/vGPUmonitor/metrics.go, cmd/scheduler/metrics.go,
 * pkg/metrics/metrics.go at v2.10.0; vGPUCorePercentage/vGPUMemoryPercentage as before HAMi
 * commit 59e4e9d0 removed them). The vGPU monitor's families carry zone="vGPU". */
static const struct mon_family_def defs[F_N] = {
    [F_HOST_MEM] = {HAMI_METRIC_HOST_MEM, MON_GAUGE, MON_MERGE_NONE,
                    "GPU device memory usage in bytes"},
    [F_HOST_UTIL] = {HAMI_METRIC_HOST_UTIL, MON_GAUGE, MON_MERGE_NONE,
                     "GPU core utilization ratio (0-100)"},
    [F_VGPU_USED] = {HAMI_METRIC_VGPU_USED, MON_GAUGE, MON_MERGE_SUM,
                     "vGPU device memory usage in bytes"},
    [F_VGPU_LIMIT] = {HAMI_METRIC_VGPU_LIMIT, MON_GAUGE, MON_MERGE_SUM,
                      "vGPU device memory limit in bytes"},
    [F_CTR_MEM] = {HAMI_METRIC_CTR_MEM, MON_GAUGE, MON_MERGE_SUM,
                   "Container device memory usage in bytes"},
    [F_CTR_UTIL] = {HAMI_METRIC_CTR_UTIL, MON_GAUGE, MON_MERGE_SUM,
                    "Container device SM utilization ratio"},
    [F_CTR_LAST] = {HAMI_METRIC_CTR_LAST_KERNEL, MON_GAUGE, MON_MERGE_MIN,
                    "Seconds since last kernel execution in container"},
    [F_HOST_MEMCTL] = {HAMI_METRIC_HOST_MEMCTL_UTIL, MON_GAUGE, MON_MERGE_NONE,
                       "GPU memory controller utilization ratio (0-100)"},
    [F_VGPU_CONTEXT] = {HAMI_METRIC_VGPU_MEM_CONTEXT, MON_GAUGE, MON_MERGE_SUM,
                        "Container device memory context size in bytes"},
    [F_VGPU_MODULE] = {HAMI_METRIC_VGPU_MEM_MODULE, MON_GAUGE, MON_MERGE_SUM,
                       "Container device memory module size in bytes"},
    [F_VGPU_BUFFER] = {HAMI_METRIC_VGPU_MEM_BUFFER, MON_GAUGE, MON_MERGE_SUM,
                       "Container device memory buffer size in bytes"},
    [F_MIG_INFO] = {HAMI_METRIC_MIG_INFO, MON_GAUGE, MON_MERGE_NONE,
                    "MIG runtime identity for a container allocation"},
    [F_HAMI_BUILD] = {HAMI_METRIC_BUILD_INFO, MON_GAUGE, MON_MERGE_NONE,
                      "hami build metadata exposed as labels with a constant value of 1."},
    [F_S_MEM_LIMIT] = {HAMI_METRIC_S_GPU_MEM_LIMIT, MON_GAUGE, MON_MERGE_NONE,
                       "Device memory limit for a certain GPU"},
    [F_S_CORE_LIMIT] = {"hami_gpu_core_limit_ratio", MON_GAUGE, MON_MERGE_NONE,
                        "Device core limit for a certain GPU"},
    [F_S_MEM_ALLOC] = {HAMI_METRIC_S_GPU_MEM_ALLOC, MON_GAUGE, MON_MERGE_NONE,
                       "Device memory allocated for a certain GPU"},
    [F_S_SHARED] = {HAMI_METRIC_S_GPU_SHARED, MON_GAUGE, MON_MERGE_NONE,
                    "Number of containers sharing this GPU"},
    [F_S_CORE_ALLOC] = {HAMI_METRIC_S_GPU_CORE_ALLOC, MON_GAUGE, MON_MERGE_NONE,
                        "Device core allocated for a certain GPU"},
    [F_S_OVERVIEW] = {"hami_node_gpu_overview", MON_GAUGE, MON_MERGE_NONE,
                      "GPU overview on a certain node"},
    [F_S_MEM_RATIO] = {HAMI_METRIC_S_NODE_MEM_ALLOC, MON_GAUGE, MON_MERGE_NONE,
                       "GPU Memory Allocated Percentage on a certain GPU"},
    [F_DRA_CORE_LIMIT] = {"hami_dra_gpu_core_limit_ratio", MON_GAUGE, MON_MERGE_NONE,
                          "Device core limit for a certain GPU"},
    [F_DRA_MEM_LIMIT] = {"hami_dra_gpu_memory_limit_bytes", MON_GAUGE, MON_MERGE_NONE,
                         "Device memory limit for a certain GPU"},
    [F_DRA_CORE_ALLOC] = {"hami_dra_gpu_core_allocated_ratio", MON_GAUGE, MON_MERGE_NONE,
                          "Device core allocated for a certain GPU"},
    [F_DRA_MEM_ALLOC] = {"hami_dra_gpu_memory_allocated_bytes", MON_GAUGE, MON_MERGE_NONE,
                         "Device memory allocated for a certain GPU"},
    [F_DRA_VCORE] = {"hami_dra_vgpu_core_allocated_ratio", MON_GAUGE, MON_MERGE_SUM,
                     "vGPU Device core allocated for a container"},
    [F_DRA_VMEM] = {"hami_dra_vgpu_memory_allocated_bytes", MON_GAUGE, MON_MERGE_SUM,
                    "vGPU Device memory allocated for a container"},
    [F_GPU_MEM_TOTAL] = {"gpuslice_gpu_memory_total_bytes", MON_GAUGE, MON_MERGE_NONE,
                         "Device memory of the GPU as NVML reports it"},
    /* HAMi exports no device health family (cmd/vGPUmonitor/metrics.go, cmd/scheduler/
     * metrics.go at 4707fb0): ours. */
    [F_GPU_HEALTHY] = {"gpuslice_gpu_healthy", MON_GAUGE, MON_MERGE_NONE,
                       "1 when the GPU is healthy (no fatal XID, ECC error or loss), else 0"},
    [F_GPU_LAST_XID] = {"gpuslice_gpu_last_xid", MON_GAUGE, MON_MERGE_NONE,
                        "The last XID the GPU reported (absent before the first one)"},
    [F_CLAIM_USED] = {"gpuslice_claim_memory_used_bytes", MON_GAUGE, MON_MERGE_NONE,
                      "Device memory the claim's processes hold, from its shared region"},
    [F_CLAIM_LIMIT] = {"gpuslice_claim_memory_limit_bytes", MON_GAUGE, MON_MERGE_NONE,
                       "Device memory granted to the claim"},
    [F_CLAIM_CORES] = {"gpuslice_claim_cores_limit_ratio", MON_GAUGE, MON_MERGE_NONE,
                       "Share of the device's compute granted to the claim (0-1)"},
    [F_CLAIM_OOM] = {"gpuslice_claim_oom_refusals", MON_COUNTER, MON_MERGE_NONE,
                     "Allocations libvgpu refused at the claim's memory limit"},
    [F_CLAIM_THROTTLED] = {"gpuslice_claim_throttled_seconds", MON_COUNTER, MON_MERGE_NONE,
                           "Time kernel launches waited for the claim's compute budget"},
    [F_CLAIM_QOS] = {"gpuslice_claim_compute_qos_info", MON_GAUGE, MON_MERGE_NONE,
                     "1, labelled with the compute policy and priority libvgpu applies to the "
                     "claim"},
    [F_CLAIM_QOS_STATE] = {"gpuslice_claim_compute_state", MON_GAUGE, MON_MERGE_NONE,
                           "What the claim's launches obey now: 0 free (no cap applies), 1 "
                           "capped, 2 held by a higher priority, 3 blocked by HAMi's monitor"},
    [F_CLAIM_HELD] = {"gpuslice_claim_held_seconds", MON_COUNTER, MON_MERGE_NONE,
                      "Time kernel launches waited while a higher-priority tenant had work "
                      "pending"},
    [F_CLAIM_BUSY] = {"gpuslice_claim_gpu_busy_seconds", MON_COUNTER, MON_MERGE_NONE,
                      "Busy GPU time of the claim's kernels (devices with a compute cap)"},
    [F_CLAIM_LAUNCHES] = {"gpuslice_claim_launches", MON_COUNTER, MON_MERGE_NONE,
                          "Kernel and graph launches by the claim's processes"},
    [F_CLAIM_LAST_KERNEL] = {"gpuslice_claim_last_kernel_timestamp_seconds", MON_GAUGE,
                             MON_MERGE_NONE,
                             "Unix time of the claim's last kernel launch (devices with a "
                             "compute cap)"},
    [F_REGION_HEALTHY] = {"gpuslice_claim_region_healthy", MON_GAUGE, MON_MERGE_NONE,
                          "1 when the claim's shared region was read, 0 when it was skipped"},
    [F_CLAIMS] = {"gpuslice_monitor_claims", MON_GAUGE, MON_MERGE_NONE,
                  "Claims and standalone slices the monitor reports, by source"},
    [F_AUDIT_AVAILABLE] = {"gpuslice_audit_available", MON_GAUGE, MON_MERGE_NONE,
                           "1 when NVML reported per-process memory on every GPU at the last "
                           "audit"},
    [F_AUDIT_BREACH] = {"gpuslice_audit_process_memory_bytes", MON_GAUGE, MON_MERGE_NONE,
                        "Physical device memory of a process over its claim's limit (NVML)"},
    [F_AUDIT_BREACHES] = {"gpuslice_audit_breaches", MON_COUNTER, MON_MERGE_NONE,
                          "Processes found over their claim's memory limit"},
    [F_AUDIT_KILLS] = {"gpuslice_audit_kills", MON_COUNTER, MON_MERGE_NONE,
                       "Processes killed for a breach (--audit-kill)"},
    [F_SKIPPED] = {"gpuslice_monitor_skipped", MON_COUNTER, MON_MERGE_NONE,
                   "Objects skipped because their data was bad, dead or unreachable, by cause"},
    [F_SCRAPE] = {"gpuslice_monitor_scrape_duration_seconds", MON_HISTOGRAM, MON_MERGE_NONE,
                  "Time to build and render one exposition (completed scrapes)"},
    [F_BUILD] = {"gpuslice_build", MON_INFO, MON_MERGE_NONE,
                 "Version of gpuslice-monitor and the newest shared-region layout it reads"},
    [F_L_HOST_MEM] = {HAMI_METRIC_L_HOST_MEM, MON_GAUGE, MON_MERGE_NONE, "GPU device memory usage"},
    [F_L_HOST_CORE] = {HAMI_METRIC_L_HOST_CORE, MON_GAUGE, MON_MERGE_NONE, "GPU core utilization"},
    [F_L_VGPU_USED] = {HAMI_METRIC_L_VGPU_USED, MON_GAUGE, MON_MERGE_SUM, "vGPU device usage"},
    [F_L_VGPU_LIMIT] = {HAMI_METRIC_L_VGPU_LIMIT, MON_GAUGE, MON_MERGE_SUM, "vGPU device limit"},
    [F_L_CORE_LIMIT] = {"GPUDeviceCoreLimit", MON_GAUGE, MON_MERGE_NONE,
                        "Device core limit for a certain GPU"},
    [F_L_MEM_LIMIT] = {"GPUDeviceMemoryLimit", MON_GAUGE, MON_MERGE_NONE,
                       "Device memory limit for a certain GPU"},
    [F_L_CORE_ALLOC] = {"GPUDeviceCoreAllocated", MON_GAUGE, MON_MERGE_NONE,
                        "Device core allocated for a certain GPU"},
    [F_L_MEM_ALLOC] = {"GPUDeviceMemoryAllocated", MON_GAUGE, MON_MERGE_NONE,
                       "Device memory allocated for a certain GPU"},
    [F_L_VCORE] = {"vGPUDeviceCoreAllocated", MON_GAUGE, MON_MERGE_SUM,
                   "vGPU core allocated from a container"},
    [F_L_VMEM] = {"vGPUDeviceMemoryAllocated", MON_GAUGE, MON_MERGE_SUM,
                  "vGPU memory allocated from a container"},
    [F_L_CTR_MEM_DESC] = {HAMI_METRIC_L_CTR_MEM_DESC, MON_GAUGE, MON_MERGE_SUM,
                          "Container device memory description"},
    [F_L_CTR_UTIL_DESC] = {HAMI_METRIC_L_CTR_UTIL_DESC, MON_GAUGE, MON_MERGE_SUM,
                           "Container device utilization description"},
    [F_L_CTR_LAST] = {HAMI_METRIC_L_CTR_LAST, MON_GAUGE, MON_MERGE_MIN,
                      "Container device last kernel description"},
    [F_L_MIG_INFO] = {HAMI_METRIC_L_MIG_INFO, MON_GAUGE, MON_MERGE_NONE,
                      "Mig device information for container"},
    [F_L_S_OVERVIEW] = {HAMI_METRIC_S_L_NODE_OVERVIEW, MON_GAUGE, MON_MERGE_NONE,
                        "GPU overview on a certain node"},
    [F_L_S_MEM_PCT] = {"nodeGPUMemoryPercentage", MON_GAUGE, MON_MERGE_NONE,
                       "GPU Memory Allocated Percentage on a certain GPU"},
    [F_L_S_SHARED] = {"GPUDeviceSharedNum", MON_GAUGE, MON_MERGE_NONE,
                      "Number of containers sharing this GPU"},
    [F_L_S_VCORE_PCT] = {HAMI_METRIC_S_L_VGPU_CORE_PCT, MON_GAUGE, MON_MERGE_SUM,
                         "vGPU core allocated from a container (This metric will be deprecated in "
                         "v2.8.0, use vGPUCoreAllocated instead.)"},
    [F_L_S_VMEM_PCT] = {HAMI_METRIC_S_L_VGPU_MEMORY_PCT, MON_GAUGE, MON_MERGE_SUM,
                        "vGPU memory percentage allocated from a container (This metric will be "
                        "deprecated in v2.8.0, use vGPUMemoryAllocated instead.)"},
};

const char *const mon_exported_names[] = {
    "hami_host_gpu_memory_used_bytes",
    "hami_host_gpu_utilization_ratio",
    "hami_vgpu_memory_used_bytes",
    "hami_vgpu_memory_limit_bytes",
    "hami_container_device_memory_bytes",
    "hami_container_device_utilization_ratio",
    "hami_container_last_kernel_elapsed_seconds",
    "hami_host_gpu_memory_controller_utilization_ratio",
    "hami_vgpu_memory_context_bytes",
    "hami_vgpu_memory_module_bytes",
    "hami_vgpu_memory_buffer_bytes",
    "hami_mig_device_info",
    "hami_build_info",
    "hami_gpu_memory_limit_bytes",
    "hami_gpu_core_limit_ratio",
    "hami_gpu_memory_allocated_bytes",
    "hami_gpu_shared_count",
    "hami_gpu_core_allocated_ratio",
    "hami_node_gpu_overview",
    "hami_node_gpu_memory_allocated_ratio",
    "hami_dra_gpu_core_limit_ratio",
    "hami_dra_gpu_memory_limit_bytes",
    "hami_dra_gpu_core_allocated_ratio",
    "hami_dra_gpu_memory_allocated_bytes",
    "hami_dra_vgpu_core_allocated_ratio",
    "hami_dra_vgpu_memory_allocated_bytes",
    "gpuslice_gpu_memory_total_bytes",
    "gpuslice_gpu_healthy",
    "gpuslice_gpu_last_xid",
    "gpuslice_claim_memory_used_bytes",
    "gpuslice_claim_memory_limit_bytes",
    "gpuslice_claim_cores_limit_ratio",
    "gpuslice_claim_oom_refusals_total",
    "gpuslice_claim_throttled_seconds_total",
    "gpuslice_claim_gpu_busy_seconds_total",
    "gpuslice_claim_compute_qos_info",
    "gpuslice_claim_compute_state",
    "gpuslice_claim_held_seconds_total",
    "gpuslice_claim_launches_total",
    "gpuslice_claim_last_kernel_timestamp_seconds",
    "gpuslice_claim_region_healthy",
    "gpuslice_monitor_claims",
    "gpuslice_audit_available",
    "gpuslice_audit_process_memory_bytes",
    "gpuslice_audit_breaches_total",
    "gpuslice_audit_kills_total",
    "gpuslice_monitor_skipped_total",
    "gpuslice_monitor_scrape_duration_seconds_bucket",
    "gpuslice_monitor_scrape_duration_seconds_count",
    "gpuslice_monitor_scrape_duration_seconds_sum",
    "gpuslice_build_info",
    "HostGPUMemoryUsage",
    "HostCoreUtilization",
    "vGPU_device_memory_usage_in_bytes",
    "vGPU_device_memory_limit_in_bytes",
    "GPUDeviceCoreLimit",
    "GPUDeviceMemoryLimit",
    "GPUDeviceCoreAllocated",
    "GPUDeviceMemoryAllocated",
    "vGPUDeviceCoreAllocated",
    "vGPUDeviceMemoryAllocated",
    "Device_memory_desc_of_container",
    "Device_utilization_desc_of_container",
    "Device_last_kernel_of_container",
    "MigInfo",
    "nodeGPUOverview",
    "nodeGPUMemoryPercentage",
    "GPUDeviceSharedNum",
    "vGPUCorePercentage",
    "vGPUMemoryPercentage",
    NULL,
};

static const double scrape_bounds[MON_SCRAPE_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                         0.025,  0.05,  0.1,    0.25,  1};

#define MIB (1024.0 * 1024.0)

#if defined(__x86_64__)
#define GS_ARCH "amd64"
#elif defined(__aarch64__)
#define GS_ARCH "arm64"
#else
#define GS_ARCH "unknown"
#endif

struct scrape {
    struct mon_expo *e;
    int id[F_N];
    const struct mon_collect_opts *o;
    const struct mon_gpus *gpus;
    /* per-GPU allocation sums (index into gpus) */
    double alloc_cores[MON_MAX_GPUS], alloc_mem[MON_MAX_GPUS];
    unsigned shared[MON_MAX_GPUS]; /* containers holding the GPU (HAMi's DeviceUsage.Used) */
};

/* The vGPU monitor's collector is registered under zone="vGPU" (NewClusterManager). */
static void zone(struct mon_labels *l)
{
    mon_labels_add(l, HAMI_METRIC_ZONE_LABEL, HAMI_METRIC_ZONE_VGPU);
}

static void add(struct scrape *s, enum fam f, const struct mon_labels *l, double v)
{
    if (s->id[f] >= 0)
        mon_expo_add(s->e, s->id[f], l, v);
}

static void host_labels(struct mon_labels *l, const struct scrape *s, const struct mon_gpu *g)
{
    mon_labels_init(l);
    mon_labels_add(l, "node", s->o->node);
    mon_labels_add_u(l, "device_index", g->index);
    mon_labels_add(l, "device_uuid", g->uuid);
    mon_labels_add(l, "device_type", g->type);
}

static void dra_labels(struct mon_labels *l, const struct scrape *s, const struct mon_gpu *g)
{
    mon_labels_init(l);
    mon_labels_add(l, "node", s->o->node);
    mon_labels_add(l, "device_uuid", g->uuid);
    mon_labels_add_u(l, "device_index", g->index);
    mon_labels_add(l, "device_name", g->name);
    mon_labels_add(l, "device_type", g->type);
}

static void legacy_dra_labels(struct mon_labels *l, const struct scrape *s, const struct mon_gpu *g)
{
    mon_labels_init(l);
    mon_labels_add(l, "nodeid", s->o->node);
    mon_labels_add(l, "deviceuuid", g->uuid);
    mon_labels_add_u(l, "deviceidx", g->index);
    mon_labels_add(l, "devicename", g->name);
    mon_labels_add(l, "devicebrand", g->brand);
    mon_labels_add(l, "deviceproductname", g->product);
}

static void claim_labels(struct mon_labels *l, const struct mon_claim *m)
{
    mon_labels_init(l);
    mon_labels_add(l, "source", mon_source_name(m->source));
    mon_labels_add(l, "namespace", m->ns);
    mon_labels_add(l, "claim", m->name);
    mon_labels_add(l, "claim_uid", m->uid);
}

/* HAMi's scheduler families for one GPU of this node, from the allocations the monitor knows
 * (claims in DRA mode; in legacy mode the device plugin's limits files): memory and cores
 * allocated, containers sharing it (collectNodeMetrics, cmd/scheduler/metrics.go). */
static void collect_scheduler(struct scrape *s, const struct mon_gpu *g, size_t i)
{
    struct mon_labels l;
    double limit = (double)g->memory_published;
    char mib[32];
    snprintf(mib, sizeof(mib), "%llu", (unsigned long long)(g->memory_published / (1024 * 1024)));
    mon_labels_init(&l);
    mon_labels_add(&l, "node", s->o->node);
    mon_labels_add(&l, "device_uuid", g->uuid);
    mon_labels_add_u(&l, "device_index", g->index);
    mon_labels_add(&l, "device_type", g->type);
    add(s, F_S_MEM_LIMIT, &l, limit);
    add(s, F_S_CORE_LIMIT, &l, 100);
    add(s, F_S_SHARED, &l, s->shared[i]);
    add(s, F_S_CORE_ALLOC, &l, s->alloc_cores[i]);
    if (limit > 0)
        add(s, F_S_MEM_RATIO, &l, s->alloc_mem[i] / limit);
    mon_labels_init(&l);
    mon_labels_add(&l, "node", s->o->node);
    mon_labels_add(&l, "device_uuid", g->uuid);
    mon_labels_add_u(&l, "device_index", g->index);
    mon_labels_add(&l, "device_cores", "100");
    mon_labels_add(&l, "device_type", g->type);
    add(s, F_S_MEM_ALLOC, &l, s->alloc_mem[i]);
    mon_labels_init(&l);
    mon_labels_add(&l, "node", s->o->node);
    mon_labels_add(&l, "device_uuid", g->uuid);
    mon_labels_add_u(&l, "device_index", g->index);
    mon_labels_add(&l, "device_cores", "100");
    mon_labels_add(&l, "device_memory_limit", mib);
    mon_labels_add(&l, "device_type", g->type);
    add(s, F_S_OVERVIEW, &l, s->alloc_mem[i]);
    if (!s->o->legacy)
        return;
    mon_labels_init(&l);
    mon_labels_add(&l, "nodeid", s->o->node);
    mon_labels_add(&l, "deviceuuid", g->uuid);
    mon_labels_add_u(&l, "deviceidx", g->index);
    mon_labels_add(&l, "devicecores", "100");
    mon_labels_add(&l, "devicememorylimit", mib);
    mon_labels_add(&l, "devicetype", g->type);
    add(s, F_L_S_OVERVIEW, &l, s->alloc_mem[i]);
    mon_labels_init(&l);
    mon_labels_add(&l, "nodeid", s->o->node);
    mon_labels_add(&l, "deviceuuid", g->uuid);
    mon_labels_add_u(&l, "deviceidx", g->index);
    if (limit > 0)
        add(s, F_L_S_MEM_PCT, &l, s->alloc_mem[i] / limit);
    mon_labels_add(&l, "devicetype", g->type);
    add(s, F_L_S_SHARED, &l, s->shared[i]);
}

static void collect_gpus(struct scrape *s)
{
    struct mon_labels l;
    for (size_t i = 0; i < s->gpus->n; i++) {
        const struct mon_gpu *g = &s->gpus->gpu[i];
        host_labels(&l, s, g);
        add(s, F_GPU_MEM_TOTAL, &l, (double)g->memory_total);
        struct gpu_health_dev hd;
        if (s->o->health && gpu_health_get(s->o->health, g->name, &hd)) {
            add(s, F_GPU_HEALTHY, &l, hd.healthy ? 1 : 0);
            if (hd.has_xid)
                add(s, F_GPU_LAST_XID, &l, (double)hd.last_xid);
        }
        zone(&l);
        if (g->has_memory_used)
            add(s, F_HOST_MEM, &l, (double)g->memory_used);
        if (g->has_utilization)
            add(s, F_HOST_UTIL, &l, g->utilization);
        if (g->has_mem_utilization) {
            mon_labels_init(&l);
            mon_labels_add_u(&l, "device_index", g->index);
            mon_labels_add(&l, "device_uuid", g->uuid);
            mon_labels_add(&l, "device_type", g->type);
            zone(&l);
            add(s, F_HOST_MEMCTL, &l, g->mem_utilization);
        }
        collect_scheduler(s, g, i);
        dra_labels(&l, s, g);
        add(s, F_DRA_CORE_LIMIT, &l, 1.0);
        add(s, F_DRA_MEM_LIMIT, &l, (double)g->memory_published);
        add(s, F_DRA_CORE_ALLOC, &l, s->alloc_cores[i] / 100.0);
        add(s, F_DRA_MEM_ALLOC, &l, s->alloc_mem[i]);
        if (s->o->legacy) {
            mon_labels_init(&l);
            mon_labels_add(&l, "nodeid", s->o->node);
            mon_labels_add_u(&l, "deviceidx", g->index);
            mon_labels_add(&l, "deviceuuid", g->uuid);
            mon_labels_add(&l, "devicetype", g->type);
            zone(&l);
            if (g->has_memory_used)
                add(s, F_L_HOST_MEM, &l, (double)g->memory_used);
            if (g->has_utilization)
                add(s, F_L_HOST_CORE, &l, g->utilization);
            legacy_dra_labels(&l, s, g);
            add(s, F_L_CORE_LIMIT, &l, 100);
            add(s, F_L_MEM_LIMIT, &l, floor((double)g->memory_published / MIB));
            add(s, F_L_CORE_ALLOC, &l, s->alloc_cores[i]);
            add(s, F_L_MEM_ALLOC, &l, floor(s->alloc_mem[i] / MIB));
        }
    }
}

/* Is consumer k the first of its pod in this claim (allocation is per pod)? */
static bool first_of_pod(const struct mon_claim *m, size_t k)
{
    for (size_t j = 0; j < k; j++)
        if (strcmp(m->consumers[j].ns, m->consumers[k].ns) == 0 &&
            strcmp(m->consumers[j].pod, m->consumers[k].pod) == 0)
            return false;
    return true;
}

static void collect_claim(struct scrape *s, struct mon_claim *m, uint64_t real_ns)
{
    struct mon_region_device devs[GS_REGION_MAX_DEVICES];
    uint32_t n = 0;
    enum mon_region_status rs =
        mon_region_read(&m->region, devs, GS_REGION_MAX_DEVICES, &n, false, NULL);
    /* The refresher also checked the file's size: a region it refused stays refused. */
    if (rs == MON_REGION_OK && m->region_status != MON_REGION_OK)
        rs = m->region_status;
    struct mon_labels base, l;
    claim_labels(&base, m);
    add(s, F_REGION_HEALTHY, &base, rs == MON_REGION_OK ? 1 : 0);
    for (size_t k = 0; k < m->n_devices; k++) {
        const struct mon_claim_device *d = &m->dev[k];
        const struct mon_region_device *rd =
            rs == MON_REGION_OK ? mon_region_find(devs, n, d->uuid) : NULL;
        const struct mon_gpu *g = mon_gpus_find(s->gpus, d->uuid);
        size_t gi = g ? (size_t)(g - s->gpus->gpu) : 0;
        double limit = d->memory_limit ? (double)d->memory_limit
                       : g             ? (double)g->memory_published
                                       : NAN;
        double cores = d->cores ? d->cores : 100;
        if (g) {
            s->alloc_cores[gi] += cores;
            s->alloc_mem[gi] += isnan(limit) ? 0 : limit;
            s->shared[gi] += m->n_consumers ? (unsigned)m->n_consumers : 1;
        }
        /* A region that exists but has not seen this device yet: nothing was allocated there. */
        double used = rs == MON_REGION_OK ? (rd ? (double)rd->used : 0) : NAN;
        double util = d->has_util && rs == MON_REGION_OK ? d->util * 100.0 : NAN;
        double last = NAN, last_ts = NAN;
        if (rd && rd->has_v2 && rd->last_kernel_ns) {
            last_ts = (double)rd->last_kernel_ns / 1e9;
            last = real_ns > rd->last_kernel_ns ? (double)(real_ns - rd->last_kernel_ns) / 1e9 : 0;
        }

        l = base; /* the claim's labels, escaped once */
        mon_labels_add_u(&l, "vdevice_index", k);
        mon_labels_add(&l, "device_uuid", d->uuid);
        add(s, F_CLAIM_USED, &l, used);
        add(s, F_CLAIM_LIMIT, &l, limit);
        add(s, F_CLAIM_CORES, &l, cores / 100.0);
        if (rd) {
            add(s, F_CLAIM_OOM, &l, (double)rd->oom_count);
            add(s, F_CLAIM_THROTTLED, &l, (double)rd->throttled_ns / 1e9);
            add(s, F_CLAIM_LAUNCHES, &l, (double)rd->launches);
            if (rd->has_v2)
                add(s, F_CLAIM_BUSY, &l, (double)rd->gpu_busy_ns / 1e9);
            if (rd->has_qos) {
                add(s, F_CLAIM_QOS_STATE, &l, (double)GS_REGION_QOS_STATE(rd->qos));
                add(s, F_CLAIM_HELD, &l, (double)rd->held_ns / 1e9);
                struct mon_labels ql = l;
                const char *pol = gs_compute_policy_name((int)GS_REGION_QOS_POLICY(rd->qos));
                mon_labels_add(&ql, "policy", pol ? pol : "unknown");
                mon_labels_add_u(&ql, "priority", (unsigned)GS_REGION_QOS_PRIORITY(rd->qos));
                add(s, F_CLAIM_QOS, &ql, 1);
            }
        }
        add(s, F_CLAIM_LAST_KERNEL, &l, last_ts);

        for (size_t c = 0; c < m->n_consumers; c++) {
            const struct mon_consumer *u = &m->consumers[c];
            mon_labels_init(&l);
            mon_labels_add(&l, "namespace", u->ns);
            mon_labels_add(&l, "pod", u->pod);
            mon_labels_add(&l, "container", u->container);
            mon_labels_add_u(&l, "vdevice_index", k);
            mon_labels_add(&l, "device_uuid", d->uuid);
            zone(&l);
            add(s, F_VGPU_USED, &l, used);
            add(s, F_VGPU_LIMIT, &l, limit);
            add(s, F_CTR_MEM, &l, used);
            add(s, F_CTR_UTIL, &l, util);
            add(s, F_CTR_LAST, &l, last);
            /* libvgpu's region counts one figure per device (no context/module split):
             * it is all buffer. */
            add(s, F_VGPU_CONTEXT, &l, isnan(used) ? NAN : 0);
            add(s, F_VGPU_MODULE, &l, isnan(used) ? NAN : 0);
            add(s, F_VGPU_BUFFER, &l, used);
            if (s->o->legacy) {
                mon_labels_init(&l);
                mon_labels_add(&l, "podnamespace", u->ns);
                mon_labels_add(&l, "podname", u->pod);
                mon_labels_add(&l, "ctrname", u->container);
                mon_labels_add_u(&l, "vdeviceid", k);
                mon_labels_add(&l, "deviceuuid", d->uuid);
                zone(&l);
                add(s, F_L_VGPU_USED, &l, used);
                add(s, F_L_VGPU_LIMIT, &l, limit);
                add(s, F_L_CTR_UTIL_DESC, &l, util);
                if (last >= 0)
                    add(s, F_L_CTR_LAST, &l, last);
                if (!isnan(used)) {
                    char data[32];
                    snprintf(data, sizeof(data), "%.0f", used);
                    mon_labels_add(&l, "context", "0");
                    mon_labels_add(&l, "module", "0");
                    mon_labels_add(&l, "data", data);
                    mon_labels_add(&l, "offset", "0");
                    add(s, F_L_CTR_MEM_DESC, &l, used);
                }
                /* The scheduler's deprecated per-container percentages. */
                mon_labels_init(&l);
                mon_labels_add(&l, "deprecated_version", "v2.8.0");
                mon_labels_add(&l, "podnamespace", u->ns);
                mon_labels_add(&l, "nodename", s->o->node);
                mon_labels_add(&l, "podname", u->pod);
                mon_labels_add_u(&l, "containeridx", c);
                mon_labels_add(&l, "deviceuuid", d->uuid);
                add(s, F_L_S_VCORE_PCT, &l, cores);
                if (g && g->memory_published && !isnan(limit))
                    add(s, F_L_S_VMEM_PCT, &l, limit / (double)g->memory_published);
            }
            if (!first_of_pod(m, c))
                continue;
            mon_labels_init(&l);
            mon_labels_add(&l, "node", s->o->node);
            mon_labels_add(&l, "device_uuid", d->uuid);
            mon_labels_add(&l, "namespace", u->ns);
            mon_labels_add(&l, "pod", u->pod);
            add(s, F_DRA_VCORE, &l, cores / 100.0);
            add(s, F_DRA_VMEM, &l, limit);
            if (s->o->legacy && g) {
                legacy_dra_labels(&l, s, g);
                mon_labels_add(&l, "podnamespace", u->ns);
                mon_labels_add(&l, "podname", u->pod);
                add(s, F_L_VCORE, &l, cores);
                add(s, F_L_VMEM, &l, floor(limit / MIB));
            }
        }
    }
}

static void collect_monitor(struct scrape *s, struct mon_catalog *c, size_t by_source[2],
                            const struct mon_scrape_stats *stats)
{
    struct mon_labels l;
    for (int src = 0; src < 2; src++) {
        mon_labels_init(&l);
        mon_labels_add(&l, "source", mon_source_name((enum mon_source)src));
        add(s, F_CLAIMS, &l, (double)by_source[src]);
    }
    pthread_mutex_lock(&c->lock);
    mon_labels_init(&l);
    add(s, F_AUDIT_AVAILABLE, &l, c->audit.available ? 1 : 0);
    add(s, F_AUDIT_BREACHES, &l, (double)c->audit.breaches_total);
    add(s, F_AUDIT_KILLS, &l, (double)c->audit.kills_total);
    for (size_t i = 0; i < c->audit.n; i++) {
        const struct mon_breach *b = &c->audit.b[i];
        mon_labels_init(&l);
        mon_labels_add(&l, "claim_namespace", b->claim_ns);
        mon_labels_add(&l, "claim", b->claim_name);
        mon_labels_add(&l, "claim_uid", b->claim_uid);
        mon_labels_add_u(&l, "pid", (unsigned)b->pid);
        mon_labels_add(&l, "device_uuid", b->uuid);
        add(s, F_AUDIT_BREACH, &l, (double)b->used);
    }
    pthread_mutex_unlock(&c->lock);
    for (int k = 0; k < MON_CAUSE_N; k++) {
        mon_labels_init(&l);
        mon_labels_add(&l, "cause", mon_cause_name((enum mon_cause)k));
        add(s, F_SKIPPED, &l, (double)atomic_load(&c->skipped[k]));
    }
    mon_labels_init(&l);
    if (stats) {
        /* Buckets first, then the count: a scrape finishing meanwhile can only make the count
         * larger, never leave a bucket above +Inf. */
        uint64_t cum[MON_SCRAPE_BUCKETS], acc = 0;
        for (int i = 0; i < MON_SCRAPE_BUCKETS; i++) {
            acc += atomic_load(&stats->bucket[i]);
            cum[i] = acc;
        }
        uint64_t count = atomic_load(&stats->count);
        mon_expo_add_histogram(s->e, s->id[F_SCRAPE], &l, scrape_bounds, cum, MON_SCRAPE_BUCKETS,
                               GS_MAX(count, acc), (double)atomic_load(&stats->sum_ns) / 1e9);
    }
    mon_labels_add(&l, "version", s->o->version);
    mon_labels_add(&l, "commit", gs_version_commit());
    mon_labels_add_u(&l, "region_version", GS_REGION_VERSION);
    add(s, F_BUILD, &l, 1);
    /* NewBuildInfoCollector (pkg/metrics/metrics.go): HAMi's labels, ours filled in. */
    mon_labels_init(&l);
    mon_labels_add(&l, "version", s->o->version);
    mon_labels_add(&l, "revision", gs_version_commit());
    mon_labels_add(&l, "build_date", "");
    mon_labels_add(&l, "go_version", "");
    mon_labels_add(&l, "compiler", "gcc");
    mon_labels_add(&l, "platform", "linux/" GS_ARCH);
    add(s, F_HAMI_BUILD, &l, 1);
}

static void observe(struct mon_scrape_stats *st, uint64_t ns)
{
    double sec = (double)ns / 1e9;
    for (int i = 0; i < MON_SCRAPE_BUCKETS; i++)
        if (sec <= scrape_bounds[i]) {
            atomic_fetch_add(&st->bucket[i], 1);
            break;
        }
    atomic_fetch_add(&st->count, 1);
    atomic_fetch_add(&st->sum_ns, ns);
}

int mon_collect(struct mon_catalog *c, const struct mon_collect_opts *o,
                struct mon_scrape_stats *stats, enum mon_format fmt, char **text, size_t *len)
{
    uint64_t t0 = gs_now_ns();
    struct scrape *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->o = o;
    s->e = mon_expo_new(MON_EXPO_MAX_BYTES);
    if (!s->e) {
        free(s);
        return -ENOMEM;
    }
    if (stats) /* the previous scrape's sizes, with room to grow: no copy while building */
        mon_expo_reserve(s->e, atomic_load(&stats->arena_hint) * 5 / 4,
                         atomic_load(&stats->text_hint) * 5 / 4);
    for (int f = 0; f < F_N; f++)
        s->id[f] = f >= F_FIRST_LEGACY && !o->legacy ? -1 : mon_expo_family(s->e, &defs[f]);

    uint64_t real = gs_realtime_ns();
    size_t by_source[2] = {0, 0};
    pthread_mutex_lock(&c->lock);
    s->gpus = &c->gpus;
    for (size_t i = 0; i < c->n_claims; i++) {
        collect_claim(s, c->claims[i], real);
        by_source[c->claims[i]->source == MON_SOURCE_STANDALONE]++;
    }
    collect_gpus(s); /* after the claims: the allocation sums are complete */
    pthread_mutex_unlock(&c->lock);
    s->gpus = NULL;
    collect_monitor(s, c, by_source, stats);

    int r = mon_expo_render(s->e, fmt, text, len);
    if (stats && r == 0) {
        atomic_store(&stats->arena_hint, mon_expo_arena_bytes(s->e));
        atomic_store(&stats->text_hint, *len + 1);
    }
    mon_expo_free(s->e);
    free(s);
    if (stats)
        observe(stats, gs_now_ns() - t0);
    return r;
}

void mon_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
}
