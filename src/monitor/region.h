/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-only view of one claim's shared region (include/gpuslice/shared_region.h).
 *
 * The file is opened O_RDONLY | O_NOFOLLOW (a symlink is refused: the folder is writable by the
 * container), its header + device array mapped PROT_READ once and the descriptor closed (10,000
 * claims hold no descriptors); every read
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
    bool has_qos;            /* v3: qos word published (policy, priority, state) */
    uint32_t qos;            /* GS_REGION_QOS_* (include/gpuslice/shared_region.h) */
    uint64_t held_ns;        /* v3: time launches were held by a higher priority */
};

struct mon_region {
    char path[4096];
    const struct gs_region *map; /* the whole region (header, devices, process slots) */
    size_t map_len;
    dev_t dev;
    ino_t ino;
};

/* A process slot in use: who libvgpu (or whoever registered it) says runs in the claim. */
struct mon_region_proc {
    int32_t pid;         /* in the namespace `pidns` names */
    uint64_t start_time; /* /proc/<pid>/stat field 22; 0 = unknown */
    uint64_t pidns;      /* inode of /proc/<pid>/ns/pid; 0 = unknown */
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

/* The process slots in use of a mapped region (at most `max`), read under the SIGBUS guard; 0
 * when the region is not mapped or faults. */
uint32_t mon_region_procs(struct mon_region *r, struct mon_region_proc *out, uint32_t max);

#endif /* GS_MONITOR_REGION_H */
