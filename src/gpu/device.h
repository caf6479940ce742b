/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device backend: what a GPU vendor's node side gives every daemon, behind one small struct
 * of functions (in the spirit of libnvidia-container's driver interface) so callers never name
 * the vendor library. One registration table (device.c); one implementation today, NVIDIA
 * through NVML (gpu/nvidia/). A new vendor = one folder + one line in the table + its tests.
 *
 *     const struct gs_device_backend *b = gs_device_backend_find("nvidia");
 *     void *h = b->health_open(inv, &err);
 *     n = b->health_wait(h, 500, evs, 16);   // events (XID, ECC, lost) or probe results
 *     b->health_close(h);
 */
#ifndef GS_GPU_DEVICE_H
#define GS_GPU_DEVICE_H

#include <stddef.h>

#include "base/error.h"
#include "gpu/discovery.h"
#include "gpu/health.h"

struct gs_device_backend {
    const char *name;
    /* The node's GPUs (the published device model's input). */
    int (*discover)(const char *sysfs_root, struct gpu_inventory *out, struct gs_error *err);
    /* Open the health source for the inventory's GPUs: NULL with err when nothing can be
     * watched. Devices that cannot be watched are reported once as GPU_HEALTH_EV_UNMONITORED. */
    void *(*health_open)(const struct gpu_inventory *inv, struct gs_error *err);
    /* Wait up to timeout_ms; fill at most `max` events; returns how many (0 on timeout), never
     * fails: a source error becomes events (a lost GPU) or nothing. */
    size_t (*health_wait)(void *h, unsigned timeout_ms, struct gpu_health_event *out, size_t max);
    /* Probe every GPU once: LOST for those that do not answer, ANSWERS for those that do. */
    size_t (*health_probe)(void *h, struct gpu_health_event *out, size_t max);
    void (*health_close)(void *h);
    /* One look without a watcher (standalone tools): the indexes of the GPUs the vendor library
     * counts but cannot reach now (lost), at most `max`; how many. Discovery skips such GPUs, so
     * this is how a tool learns they exist. 0 when the library cannot be opened. */
    size_t (*lost_now)(unsigned *index, size_t max);
};

/* The backend registered under `name` (NULL = the default, "nvidia"); NULL when unknown. */
const struct gs_device_backend *gs_device_backend_find(const char *name);

#endif /* GS_GPU_DEVICE_H */
