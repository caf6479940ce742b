/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-only view of the standalone ledger (cli/ledger.h owns the database and its schema): the
 * rows as they are, without reclaiming dead owners (a reader never writes). For processes that
 * only observe `gpuslice run`'s slices — the monitor — so that none of them spells the ledger's
 * SQL. Links sqlite, jansson and common only.
 */
#ifndef GS_CLI_LEDGER_READ_H
#define GS_CLI_LEDGER_READ_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

struct ledger_row {
    int64_t id;
    const char *name;
    const char *slice_dir;
    pid_t owner_pid;
    uint64_t owner_start; /* clock ticks since boot */
    const char *boot_id;
    const json_t *claim; /* the ResourceClaim; NULL when the stored text is not JSON */
};

/* Called per row, oldest first; a non-zero return stops the walk and is returned. */
typedef int (*ledger_row_fn)(void *ud, const struct ledger_row *row);

/*
 * Walk <state_dir>/ledger.db read-only (waiting at most busy_ms for a writer). -ENOENT when the
 * ledger does not exist (`gpuslice run` never ran), -EIO with sqlite's message on a database
 * that cannot be read.
 */
int ledger_read(const char *state_dir, int busy_ms, ledger_row_fn fn, void *ud,
                struct gs_error *err);

#endif /* GS_CLI_LEDGER_READ_H */
