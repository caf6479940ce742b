/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reader and writer of the per-claim limits file (format: include/gpuslice/limits.h).
 * No dependency beyond libc and base/error: libvgpu compiles this file in.
 */
#ifndef GS_COMMON_LIMITS_H
#define GS_COMMON_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gpuslice/limits.h"

struct gs_limits_device {
    char uuid[GS_LIMITS_UUID_MAX]; /* "GPU-..." */
    uint64_t memory_limit;         /* bytes; 0 = no memory cap */
    uint32_t cores;                /* percent 0..100; 0 or 100 = no compute cap */
};

struct gs_limits {
    uint32_t version;                     /* GS_LIMITS_FORMAT_VERSION */
    char claim[GS_LIMITS_CLAIM_MAX];      /* claim UID or name */
    char region_path[GS_LIMITS_PATH_MAX]; /* "" = none given */
    size_t n_devices;
    struct gs_limits_device devices[GS_LIMITS_MAX_DEVICES];
    /* Set only by a failed parse/read: the file could not be attributed to specific devices, so
     * the safe reading (GS_LIMITS_MEMORY_REFUSE / GS_LIMITS_CORES_REFUSE) applies to every GPU. */
    bool all_devices;
};

/* Zero *l and set the version. */
void gs_limits_init(struct gs_limits *l);

/* Append a device; -EINVAL (bad UUID/cores), -EEXIST (duplicate), -ENOSPC (too many). */
int gs_limits_add_device(struct gs_limits *l, const char *uuid, uint64_t memory_limit,
                         uint32_t cores, struct gs_error *err);

/* Find a device by UUID (exact match) or NULL. */
const struct gs_limits_device *gs_limits_find(const struct gs_limits *l, const char *uuid);

/* Check that *l can be written and read back unchanged. */
int gs_limits_validate(const struct gs_limits *l, struct gs_error *err);

/* Serialise into buf (NUL-terminated). Returns the length, or -EINVAL / -ENOSPC. */
int gs_limits_format(const struct gs_limits *l, char *buf, size_t len, struct gs_error *err);

/*
 * Write atomically: temporary file in the same directory, fsync, mode 0444, rename over `path`,
 * fsync of the directory. Readers see the old file or the new one, never a mix.
 */
int gs_limits_write(const char *path, const struct gs_limits *l, struct gs_error *err);

/*
 * Parse `len` bytes of `text` (need not be NUL-terminated). Returns 0, or a negative code with
 * err naming the line, the field and the value; on failure *out holds the safe reading (see
 * include/gpuslice/limits.h), never an unlimited one.
 */
int gs_limits_parse(const char *text, size_t len, struct gs_limits *out, struct gs_error *err);

/* Read and parse a file (at most GS_LIMITS_FILE_MAX bytes). On failure *out holds the safe
 * reading; a file that cannot be read at all reads as all_devices. */
int gs_limits_read(const char *path, struct gs_limits *out, struct gs_error *err);

/* The limits directory: $GPUSLICE_LIMITS_DIR when set and non-empty, else the default. */
const char *gs_limits_dir(void);

/* "<dir>/<claim>.limits" into buf; -EINVAL for a claim that is not a valid file name,
 * -ENAMETOOLONG if it does not fit. */
int gs_limits_path(char *buf, size_t len, const char *dir, const char *claim, struct gs_error *err);

/* True if `name` (a directory entry) is a limits file libvgpu reads. */
bool gs_limits_is_limits_file(const char *name);

#endif /* GS_COMMON_LIMITS_H */
