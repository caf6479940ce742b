/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The standalone mode's ledger: who holds which slice of which GPU, in an SQLite database (WAL)
 * under the state directory. Every allocation runs inside one IMMEDIATE transaction (reclaim dead
 * owners, read live allocations, decide, insert), so concurrent `gpuslice run` never over-commit a
 * GPU. A row's owner is identified by pid + process start time + boot id: a pid reused by another
 * process, or a row from before a reboot, is dead. A row is reclaimed only when its owner is dead
 * AND no process holds its slice any more (cli/members.h: the workload's cgroup, live slots of the
 * slice's shared region): children a workload left behind keep the slice allocated.
 *
 * Fail closed: a row that cannot be read (claim or allocation not JSON, a result without a device,
 * a negative or unparsable quantity) and a slice directory no row accounts for whose holders are
 * alive (a truncated or replaced ledger) are handed to the decide callback as
 * {"gpusliceUnreadable": {"id": N | "dir": D, "devices": [names], "uuids": [UUIDs]}}: the caller
 * counts those GPUs (every GPU when neither list says which) as fully allocated.
 */
#ifndef GS_CLI_LEDGER_H
#define GS_CLI_LEDGER_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define LEDGER_FILE "ledger.db"

struct ledger;

/* Identity of a live process: pid, start time (clock ticks since boot, /proc/<pid>/stat field 22)
 * and the boot id. */
struct ledger_owner {
    pid_t pid;
    uint64_t start_time;
    char boot_id[64];
};

/* What a new slice records. `claim` and `allocation` are JSON (the ResourceClaim we built and its
 * status.allocation). */
struct ledger_entry {
    const char *name;
    const char *command;
    const char *slice_dir; /* directory holding the limits file and the shared region */
    json_t *claim;
    json_t *allocation;
    struct ledger_owner owner;
};

#define LEDGER_UNREADABLE "gpusliceUnreadable"

/*
 * Decide callback for ledger_allocate: given the allocations of live slices (a JSON array of
 * ResourceClaim objects with status.allocation, and LEDGER_UNREADABLE markers, see above), fill
 * *allocation (new reference) for the new claim, or return a negative code with a message in err
 * (e.g. -ENOSPC: does not fit).
 */
typedef int (*ledger_decide_fn)(void *ud, json_t *live_claims, json_t **allocation,
                                struct gs_error *err);

/* Open (creating) <state_dir>/ledger.db. */
int ledger_open(const char *state_dir, struct ledger **out, struct gs_error *err);
void ledger_close(struct ledger *l);

/* Identity of `pid` (0 = self); -ESRCH if it does not exist. */
int ledger_owner_of(pid_t pid, struct ledger_owner *out);
/* 1 if the owner is still the same live process, 0 if it is gone. */
int ledger_owner_alive(const struct ledger_owner *o);

/*
 * One IMMEDIATE transaction: reclaim rows whose owner died, collect live claims, call decide,
 * insert the entry with decide's allocation. On success *id is the new row id and entry->allocation
 * is set (caller owns the reference).
 */
int ledger_allocate(struct ledger *l, struct ledger_entry *entry, ledger_decide_fn decide, void *ud,
                    int64_t *id, struct gs_error *err);

/* Remove a row (idempotent: a missing row is success). */
int ledger_release(struct ledger *l, int64_t id, struct gs_error *err);
/* The same, only if row `id` is still the slice in `slice_dir` (a ledger rebuilt since the
 * allocation may have given the id to another slice). */
int ledger_release_slice(struct ledger *l, int64_t id, const char *slice_dir, struct gs_error *err);

/* Reclaim rows whose owner is dead and whose slice nobody holds; *n (optional) = how many were
 * removed. Their slice directories (and cgroups) are removed too. */
int ledger_reclaim(struct ledger *l, int *n, struct gs_error *err);

/*
 * Live slices as a JSON array of objects {id, name, command, sliceDir, owner: {pid, startTime},
 * created, claim, allocation}, oldest first, after reclaiming dead owners.
 */
int ledger_list(struct ledger *l, json_t **out, struct gs_error *err);

#endif /* GS_CLI_LEDGER_H */
