/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File helpers. Every function returns 0 or a negative errno code; where a message matters it
 * also fills `err` naming the path.
 */
#ifndef GS_COMMON_FS_H
#define GS_COMMON_FS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/error.h"

/* The temporary file of an atomic write of <dir>/<name> is <dir>/.<name>.tmp.XXXXXX (mkostemp). A
 * crash between its creation and the rename leaves it behind: owners of a directory remove them at
 * start-up with gs_remove_temps(). */
#define GS_FS_TMP_INFIX ".tmp."

/*
 * Replace `path` atomically with `len` bytes of `data`: a temporary file in the same directory
 * (".<name>.tmp.XXXXXX"), every byte written, fchmod(mode), fsync, rename over `path`, fsync of the
 * directory. Readers see the old content or the new one, never a mix; after a crash, one of the
 * two. On failure the temporary file is removed and `path` is untouched.
 */
int gs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         struct gs_error *err);

/* GS_FS_DURABLE: fsync the file before the rename and the directory after it (what
 * gs_write_file_atomic always does). Without it the replace is still atomic for readers and for a
 * process crash, but a power loss may keep the old content: for files rebuilt from a durable
 * record anyway (the kubelet plugin's CDI specs and limits files, rebuilt from its checkpoint). */
#define GS_FS_DURABLE 0x1u
int gs_write_file_atomic_ex(const char *path, const void *data, size_t len, mode_t mode,
                            unsigned flags, struct gs_error *err);

/*
 * Remove the temporaries an interrupted gs_write_file_atomic left in `dir` for files whose name
 * starts with `name_prefix` ("" = any): regular files named "." + <name> + ".tmp.XXXXXX", and the
 * older ". + <name> + .XXXXXX" shape for a non-empty prefix. Returns the number removed (>= 0),
 * or -errno if the directory cannot be read (-ENOENT: nothing to do).
 */
int gs_remove_temps(const char *dir, const char *name_prefix);

/* fsync a directory after creating, renaming or removing entries in it. 0 or -errno. */
int gs_fsync_dir(const char *dir);

/*
 * Read a whole file of at most `max` bytes into a new NUL-terminated buffer (*out, free()); the
 * one file reader of the project. *len (may be NULL) excludes the terminating NUL. Works on files
 * whose size is not known in advance (pipes, /proc). Returns 0 or:
 *   -EFBIG   larger than `max` ("<path>: file too big: ... the limit of <max> bytes"); a regular
 *            file is refused from its size, before anything is read
 *   -EISDIR  a directory;  -ENOMEM;  -errno from open/read ("<path>: <strerror>")
 */
int gs_read_file(const char *path, size_t max, char **out, size_t *len, struct gs_error *err);

/* gs_read_file with `flags` (GS_READ_REGULAR: anything but a regular file is refused before it is
 * read, -EINVAL "<path>: not a regular file") and *st (may be NULL) set to the fstat of the file
 * that was read: its identity and mtime as read, not those of a later stat of the path (which
 * may name a newer file by then). */
#define GS_READ_REGULAR 1u
int gs_read_file_ex(const char *path, size_t max, unsigned flags, char **out, size_t *len,
                    struct stat *st, struct gs_error *err);

/* mkdir -p: create `path` and missing parents with `mode`. 0 if it already is a directory,
 * -ENOTDIR if it (or a parent) exists and is not one. */
int gs_mkdir_p(const char *path, mode_t mode, struct gs_error *err);

/*
 * Remove `path` and, if it is a directory, everything below it, for directories we own (state
 * and scratch dirs). Symbolic links are removed, never followed. 0 if `path` does not exist.
 * -ELOOP beyond 256 levels of nesting.
 */
int gs_rm_rf(const char *path, struct gs_error *err);

#endif /* GS_COMMON_FS_H */
