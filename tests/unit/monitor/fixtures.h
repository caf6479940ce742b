/* SPDX-License-Identifier: Apache-2.0 */
/* Shared-region files for the monitor's tests, written the way libvgpu lays them out. */
#ifndef GS_TESTS_MONITOR_FIXTURES_H
#define GS_TESTS_MONITOR_FIXTURES_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuslice/shared_region.h"

struct fx_device {
    const char *uuid;
    uint64_t used, limit, oom, throttled_ns, busy_ns, gpu_busy_ns, last_kernel_ns, launches;
    uint32_t cores;
};

/* Write a READY region of `version` with the devices; magic/size as given (0 = correct). */
static inline int fx_write_region(const char *path, uint32_t version, uint64_t magic, uint32_t size,
                                  uint32_t init_state, const struct fx_device *d, size_t n)
{
    struct gs_region *r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    r->magic = magic ? magic : GS_REGION_MAGIC;
    r->version = version;
    r->size = size ? size : (uint32_t)sizeof(*r);
    atomic_store(&r->init_state, init_state);
    atomic_store(&r->n_devices, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        snprintf(r->devices[i].uuid, sizeof(r->devices[i].uuid), "%s", d[i].uuid);
        atomic_store(&r->devices[i].used, d[i].used);
        atomic_store(&r->devices[i].memory_limit, d[i].limit);
        atomic_store(&r->devices[i].cores, d[i].cores);
        atomic_store(&r->devices[i].oom_count, d[i].oom);
        atomic_store(&r->devices[i].throttled_ns, d[i].throttled_ns);
        atomic_store(&r->devices[i].busy_ns, d[i].busy_ns);
        atomic_store(&r->devices[i].launches, d[i].launches);
        atomic_store(&r->devices[i].gpu_busy_ns, d[i].gpu_busy_ns);
        atomic_store(&r->devices[i].last_kernel_ns, d[i].last_kernel_ns);
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ssize_t w = fd >= 0 ? write(fd, r, sizeof(*r)) : -1;
    if (fd >= 0)
        close(fd);
    free(r);
    if (w != (ssize_t)sizeof(struct gs_region))
        return -1;
    return rename(tmp, path);
}

/* Update one device's `used` in place (as libvgpu would, through the mapping). */
static inline int fx_set_used(const char *path, unsigned dev, uint64_t used)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    off_t off =
        (off_t)(offsetof(struct gs_region, devices) + dev * sizeof(struct gs_region_device) +
                offsetof(struct gs_region_device, used));
    ssize_t w = pwrite(fd, &used, sizeof(used), off);
    close(fd);
    return w == (ssize_t)sizeof(used) ? 0 : -1;
}

#endif /* GS_TESTS_MONITOR_FIXTURES_H */
