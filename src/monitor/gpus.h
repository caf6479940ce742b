/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's GPUs as the monitor reports them: the published device model (gpu/discovery.h:
 * "hami-gpu-<minor>", UUID, product, memory) discovered once, plus live NVML samples (memory used,
 * utilisation) taken by the refresher. A sample that fails leaves that value unknown (absent from
 * /metrics), never the previous one.
 */
#ifndef GS_MONITOR_GPUS_H
#define GS_MONITOR_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gpu/discovery.h"
#include "gpu/nvml.h"

#define MON_MAX_GPUS 64

struct mon_gpu {
    unsigned index; /* NVML index */
    unsigned minor;
    char name[64];          /* "hami-gpu-<minor>" (the DRA device name) */
    char uuid[GPU_STR_MAX]; /* "GPU-..." */
    char product[GPU_STR_MAX];
    char brand[32];
    char type[GPU_STR_MAX + 8]; /* HAMi's device_type: "NVIDIA-<product>" */
    uint64_t memory_total;      /* bytes, as NVML reports */
    uint64_t memory_published;  /* bytes, as the ResourceSlice publishes (whole MiB) */
    bool has_memory_used;
    uint64_t memory_used; /* bytes */
    bool has_utilization;
    unsigned utilization; /* percent 0..100 */
};

struct mon_gpus {
    bool discovered;
    size_t n;
    struct mon_gpu gpu[MON_MAX_GPUS];
};

/* Discover the GPUs (once; retried by the caller while it fails). */
int mon_gpus_discover(struct mon_gpus *g, struct gs_error *err);

/* Take live samples of every discovered GPU through `nv` (opened by the caller with
 * GPU_NVML_USE_USAGE). Returns the number of values that could not be read. */
unsigned mon_gpus_sample(struct mon_gpus *g, struct gpu_nvml *nv);

/* The GPU with this UUID, or NULL. */
const struct mon_gpu *mon_gpus_find(const struct mon_gpus *g, const char *uuid);

#endif /* GS_MONITOR_GPUS_H */
