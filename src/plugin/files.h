/* SPDX-License-Identifier: Apache-2.0 */
/* File helpers of the plugin's state: atomic replace, directory creation and removal. */
#ifndef GS_PLUGIN_FILES_H
#define GS_PLUGIN_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define FILES_DURABLE 0x1u /* fsync the file before and the directory after the rename */

/* Write `len` bytes to `path` atomically: "<dir>/.<name>.tmp.<pid>.<n>", chmod `mode`, rename
 * over `path`. Readers (and a process crash at any point) see the old content or the new, never
 * a mix. With FILES_DURABLE the new content also survives a power loss once this returns. */
int files_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                       struct gs_error *err);

/* mkdir -p with `mode` for the directories it creates. */
int files_mkdir_p(const char *path, mode_t mode, struct gs_error *err);

/* Remove `path` and everything below it (does not follow symlinks; at most 16 levels). Absent is
 * success. */
int files_remove_tree(const char *path, struct gs_error *err);

/* Read a whole file of at most `max` bytes into a new NUL-terminated buffer. -ENOENT, -E2BIG. */
int files_read(const char *path, size_t max, char **out, size_t *out_len, struct gs_error *err);

/* fsync a directory (after creating or removing entries in it). */
int files_sync_dir(const char *dir);

bool files_exists(const char *path);

#endif /* GS_PLUGIN_FILES_H */
