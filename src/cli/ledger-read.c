/* SPDX-License-Identifier: Apache-2.0 */
/* The standalone ledger, read-only (see ledger-read.h; schema in ledger.c). */
#include "cli/ledger-read.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/ledger.h"

int ledger_read(const char *state_dir, int busy_ms, ledger_row_fn fn, void *ud,
                struct gs_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/" LEDGER_FILE, state_dir);
    if (access(path, F_OK) != 0)
        return gs_error_set(err, -ENOENT, "%s: no ledger", path);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int r = 0;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, busy_ms);
        rc =
            sqlite3_prepare_v2(db,
                               "SELECT id, name, slice_dir, owner_pid, owner_start, boot_id, claim "
                               "FROM slices ORDER BY id",
                               -1, &st, NULL);
    }
    while (r == 0 && rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        rc = SQLITE_OK;
        const char *claim_text = (const char *)sqlite3_column_text(st, 6);
        json_t *claim = claim_text ? json_loads(claim_text, 0, NULL) : NULL;
        struct ledger_row row = {
            .id = sqlite3_column_int64(st, 0),
            .name = (const char *)sqlite3_column_text(st, 1),
            .slice_dir = (const char *)sqlite3_column_text(st, 2),
            .owner_pid = (pid_t)sqlite3_column_int64(st, 3),
            .owner_start = (uint64_t)sqlite3_column_int64(st, 4),
            .boot_id = (const char *)sqlite3_column_text(st, 5),
            .claim = claim,
        };
        if (row.name && row.slice_dir && row.boot_id)
            r = fn(ud, &row);
        json_decref(claim);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = gs_error_set(err, -EIO, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return r;
}
