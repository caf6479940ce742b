/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who holds a standalone slice. A slice lives until every process that holds it is gone -- not
 * only its runner: a workload may leave children behind (a daemon that called setsid, a process
 * that outlived a runner killed with SIGKILL) that still hold GPU memory under the slice's limits.
 *
 * Members are tracked two ways:
 *   - cgroup (when available): `gpuslice run` creates <cgroup2 mount><own cgroup>/gpuslice-<uid>
 *     and moves the workload into it before exec; every descendant inherits it, setsid or not.
 *     The slice is held while cgroup.procs lists a process.
 *   - shared region (always): every process that used the GPU through libvgpu has a process slot
 *     in <slice dir>/region; a slot whose pid is alive with the recorded start time (or that
 *     lives in another pid namespace, which cannot be checked from here) holds the slice.
 * The runner records itself and the cgroup in <slice dir>/holders.json, so a slice directory the
 * ledger lost (a truncated ledger) is still known to be held.
 */
#ifndef GS_CLI_MEMBERS_H
#define GS_CLI_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cli/ledger.h"
#include "base/error.h"

#define MEMBERS_FILE "holders.json"

/* Create the slice's cgroup; path = "" when cgroup v2 is unavailable or not writable, or when
 * GPUSLICE_CGROUP=off (the region then tracks members alone). GPUSLICE_CGROUP=<absolute dir>
 * names the parent instead of <cgroup2 mount><own cgroup> (a delegated subtree): there a failed
 * mkdir is an error (path holds the path tried). Returns 0 (also when unavailable), -errno of
 * that mkdir, -EINVAL for another GPUSLICE_CGROUP value, or -ENAMETOOLONG. */
int members_cgroup_create(const char *uid, char *path, size_t len);
/* Move the calling process into the cgroup at `path` (in the child, before exec). 0 or -errno. */
int members_cgroup_join(const char *path);
/* Remove the cgroup directory if it is empty (no-op for "" or a missing one). */
void members_cgroup_remove(const char *path);

/* Write <slice_dir>/holders.json: the runner's identity and the cgroup path ("" = none). */
int members_record(const char *slice_dir, const struct ledger_owner *runner, const char *cgroup,
                   struct gs_error *err);

/* Live member processes of the slice (cgroup members and live region slots, each process once),
 * the runner not included; *example (may be NULL) = one of their pids. */
int members_count(const char *slice_dir, pid_t *example);

/* True while the slice is held: its recorded runner is alive or members_count() > 0. */
bool members_slice_held(const char *slice_dir);

/* The recorded cgroup of a slice directory into buf ("" when none). */
void members_cgroup_of(const char *slice_dir, char *buf, size_t len);

#endif /* GS_CLI_MEMBERS_H */
