/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-only view of one claim's shared region (include/gpuslice/shared_region.h).
 *
 * The file is opened O_RDONLY and its header + device array mapped PROT_READ once; every read
 * checks the magic, version and size fields and init_state, then copies the device fields with
 * acquire loads. A file truncated under the mapping (the containers mount it read-write) makes a
 * read fault: the read runs under a SIGBUS guard (mon_region_guard) and reports the region
 * truncated; the refresher's reads (recheck_path) also compare the file's size. The monitor never
 * takes the region's lock and never writes: libvgpu is never slowed or blocked by a reader.
 */
#ifndef GS_MONITOR_REGION_H
#define GS_MONITOR_REGION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "gpuslice/shared_region.h"

/* Why a region could not be read (one counter and one log line per cause). */
enum mon_region_status {
    MON_REGION_OK = 0,
    MON_REGION_MISSING,     /* no file (no process of the claim started yet) */
    MON_REGION_UNREADABLE,  /* open/fstat/mmap failed (permissions, ...) */
    MON_REGION_TRUNCATED,   /* smaller than sizeof(struct gs_region) */
    MON_REGION_BAD_MAGIC,   /* not a gpuslice region */
    MON_REGION_BAD_VERSION, /* a layout this monitor does not read */
    MON_REGION_BAD_SIZE,    /* header's size field disagrees */
    MON_REGION_UNINIT,      /* created, no process has initialised it yet */
    MON_REGION_N_STATUS,
};

/* The snake_case name of a status ("truncated"), used as a label value. */
const char *mon_region_status_name(enum mon_region_status s);

/* What one device slot of the region says, copied at one instant. */
struct mon_region_device {
    char uuid[GS_REGION_UUID_MAX];
    uint64_t used;         /* bytes charged by the claim's live processes */
    uint64_t memory_limit; /* bytes; 0 = no cap */
    uint32_t cores;        /* percent; 0/100 = no cap */
    uint64_t busy_ns;      /* net GPU time charged to the limiter's bucket */
    uint64_t launches;
    uint64_t throttled_ns;
    uint64_t oom_count;
    bool has_v2;             /* gpu_busy_ns / last_kernel_ns are meaningful (v2, capped device) */
    uint64_t gpu_busy_ns;    /* v2 */
    uint64_t last_kernel_ns; /* v2: CLOCK_REALTIME ns, 0 = none */
};

struct mon_region {
    char path[4096];
    int fd;
    const struct gs_region *map; /* header + devices only */
    size_t map_len;
    dev_t dev;
    ino_t ino;
};

void mon_region_init(struct mon_region *r, const char *path);
void mon_region_fini(struct mon_region *r);

/*
 * Read the region's devices into out[0..*n) (at most `max`). Opens and maps the file on first use;
 * with `recheck_path`, a path that now names another file (new inode) is mapped again (the
 * refresher asks; a scrape reads the mapping it has, after checking the file's size). Returns
 * MON_REGION_OK or the cause; err (may be NULL) gets a message naming the file.
 */
enum mon_region_status mon_region_read(struct mon_region *r, struct mon_region_device *out,
                                       uint32_t max, uint32_t *n, bool recheck_path,
                                       struct gs_error *err);

/* Install the process's SIGBUS guard (once; mon_catalog_init calls it). Without it a region
 * truncated under the mapping kills the process on the next read. */
void mon_region_guard(void);

/* Find a device by UUID in a read snapshot, or NULL. */
const struct mon_region_device *mon_region_find(const struct mon_region_device *devs, uint32_t n,
                                                const char *uuid);

#endif /* GS_MONITOR_REGION_H */
