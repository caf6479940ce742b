/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/ledger.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <ftw.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/members.h"
#include "base/clock.h"
#include "config/limits.h"
#include "base/log.h"
#include "base/proc.h"
#include "config/quantity.h"

struct ledger {
    sqlite3 *db;
    char path[4096];
};

#define BUSY_TIMEOUT_MS 30000

static const char schema[] = "CREATE TABLE IF NOT EXISTS slices ("
                             " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                             " name TEXT NOT NULL,"
                             " command TEXT NOT NULL,"
                             " slice_dir TEXT NOT NULL,"
                             " owner_pid INTEGER NOT NULL,"
                             " owner_start INTEGER NOT NULL,"
                             " boot_id TEXT NOT NULL,"
                             " created INTEGER NOT NULL,"
                             " claim TEXT NOT NULL,"
                             " allocation TEXT NOT NULL);";

#define SCHEMA_VERSION 1
/* How long opening may retry while other processes create or migrate the database. */
#define INIT_RETRY_MS 30000

static int db_error(struct gs_error *err, struct ledger *l, const char *what)
{
    return gs_error_set(err, -EIO, "ledger %s: %s: %s", l->path, what, sqlite3_errmsg(l->db));
}

static int exec_rc(sqlite3 *db, const char *sql, char *msg, size_t len)
{
    char *m = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &m);
    if (rc != SQLITE_OK)
        snprintf(msg, len, "%s: %s", sql, m ? m : sqlite3_errstr(rc));
    sqlite3_free(m);
    return rc;
}

static int query_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            snprintf(out, len, "%s", t ? (const char *)t : "");
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/*
 * WAL (persistent, set once by whoever creates the file) lets `gpuslice ls` read while a run
 * allocates; synchronous=FULL (per connection) keeps a committed slice across a crash. The schema
 * is created in one IMMEDIATE transaction, only when user_version says it is missing, so a plain
 * open writes nothing.
 */
static int init_db(struct ledger *l, char *msg, size_t len)
{
    char mode[32] = "";
    int64_t version = 0;
    int rc = query_text(l->db, "PRAGMA journal_mode", mode, sizeof(mode));
    if (rc == SQLITE_OK && strcmp(mode, "wal") != 0) {
        rc = query_text(l->db, "PRAGMA journal_mode=WAL", mode, sizeof(mode));
        if (rc == SQLITE_OK && strcmp(mode, "wal") != 0) {
            snprintf(msg, len, "journal mode is %s, WAL refused", mode);
            return SQLITE_ERROR;
        }
    }
    if (rc == SQLITE_OK)
        rc = exec_rc(l->db, "PRAGMA synchronous=FULL", msg, len);
    if (rc == SQLITE_OK)
        rc = query_int(l->db, "PRAGMA user_version", &version);
    if (rc != SQLITE_OK || version == SCHEMA_VERSION)
        return rc;
    if (version > SCHEMA_VERSION) {
        snprintf(msg, len, "schema version %lld is newer than this gpuslice (%d)",
                 (long long)version, SCHEMA_VERSION);
        return SQLITE_ERROR;
    }
    rc = exec_rc(l->db, "BEGIN IMMEDIATE", msg, len);
    if (rc != SQLITE_OK)
        return rc;
    char set[64];
    snprintf(set, sizeof(set), "PRAGMA user_version = %d", SCHEMA_VERSION);
    rc = exec_rc(l->db, schema, msg, len);
    if (rc == SQLITE_OK)
        rc = exec_rc(l->db, set, msg, len);
    if (rc == SQLITE_OK)
        rc = exec_rc(l->db, "COMMIT", msg, len);
    if (rc != SQLITE_OK)
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int ledger_open(const char *state_dir, struct ledger **out, struct gs_error *err)
{
    *out = NULL;
    struct ledger *l = calloc(1, sizeof(*l));
    if (!l)
        return gs_error_set(err, -ENOMEM, "ledger: out of memory");
    int n = snprintf(l->path, sizeof(l->path), "%s/%s", state_dir, LEDGER_FILE);
    if (n < 0 || (size_t)n >= sizeof(l->path)) {
        free(l);
        return gs_error_set(err, -ENAMETOOLONG, "state dir %s: path too long", state_dir);
    }
    if (sqlite3_open_v2(l->path, &l->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        int rc = gs_error_set(err, -EIO, "ledger %s: cannot open: %s", l->path,
                              l->db ? sqlite3_errmsg(l->db) : "out of memory");
        sqlite3_close(l->db);
        free(l);
        return rc;
    }
    sqlite3_busy_timeout(l->db, BUSY_TIMEOUT_MS);
    /* Many runners and `ls` open the same database at once; SQLite answers SQLITE_BUSY without
     * waiting when switching the journal mode or creating the schema races another connection, so
     * initialisation retries for a bounded time. */
    char msg[256] = "";
    int rc = SQLITE_BUSY;
    for (int waited = 0; waited <= INIT_RETRY_MS; waited += 20) {
        rc = init_db(l, msg, sizeof(msg));
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
            break;
        gs_sleep_ms(20);
    }
    if (rc != SQLITE_OK) {
        int r = gs_error_set(err, -EIO, "ledger %s: cannot initialise: %s", l->path,
                             msg[0] ? msg : sqlite3_errstr(rc));
        sqlite3_close(l->db);
        free(l);
        return r;
    }
    *out = l;
    return 0;
}

void ledger_close(struct ledger *l)
{
    if (!l)
        return;
    sqlite3_close(l->db);
    free(l);
}

int ledger_owner_of(pid_t pid, struct ledger_owner *out)
{
    if (pid == 0)
        pid = getpid();
    memset(out, 0, sizeof(*out));
    int rc = gs_proc_start_time(pid, &out->start_time);
    if (rc < 0)
        return rc;
    out->pid = pid;
    gs_boot_id(out->boot_id, sizeof(out->boot_id));
    return 0;
}

int ledger_owner_alive(const struct ledger_owner *o)
{
    struct ledger_owner now;
    if (o->pid <= 0 || ledger_owner_of(o->pid, &now) < 0)
        return 0;
    return now.start_time == o->start_time && strcmp(now.boot_id, o->boot_id) == 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static void remove_slice_dir(const char *dir)
{
    if (dir && *dir) {
        char cg[PATH_MAX];
        members_cgroup_of(dir, cg, sizeof(cg));
        members_cgroup_remove(cg);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

/* Inside a transaction: delete rows whose owner died. */
static int reclaim_locked(struct ledger *l, int *count, struct gs_error *err)
{
    sqlite3_stmt *st = NULL;
    int removed = 0;
    if (sqlite3_prepare_v2(
            l->db, "SELECT id, owner_pid, owner_start, boot_id, slice_dir, name FROM slices", -1,
            &st, NULL) != SQLITE_OK)
        return db_error(err, l, "reclaim");
    int64_t dead[256];
    char dirs[256][512];
    size_t n_dead = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n_dead < GS_ARRAY_SIZE(dead)) {
        struct ledger_owner o = {0};
        o.pid = (pid_t)sqlite3_column_int64(st, 1);
        o.start_time = (uint64_t)sqlite3_column_int64(st, 2);
        snprintf(o.boot_id, sizeof(o.boot_id), "%s", (const char *)sqlite3_column_text(st, 3));
        const char *dir = (const char *)sqlite3_column_text(st, 4);
        /* Dead only when the runner is gone and nothing it started still holds the slice. */
        if (!ledger_owner_alive(&o) && !(dir && *dir && members_count(dir, NULL) > 0)) {
            dead[n_dead] = sqlite3_column_int64(st, 0);
            snprintf(dirs[n_dead], sizeof(dirs[n_dead]), "%s",
                     (const char *)sqlite3_column_text(st, 4));
            gs_info("reclaiming slice of a dead owner", "slice=%lld name=%s pid=%d",
                    (long long)dead[n_dead], GS_LOGQ((const char *)sqlite3_column_text(st, 5)),
                    (int)o.pid);
            n_dead++;
        }
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < n_dead; i++) {
        if (sqlite3_prepare_v2(l->db, "DELETE FROM slices WHERE id = ?", -1, &st, NULL) !=
            SQLITE_OK)
            return db_error(err, l, "reclaim delete");
        sqlite3_bind_int64(st, 1, dead[i]);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return db_error(err, l, "reclaim delete");
        remove_slice_dir(dirs[i]);
        removed++;
    }
    if (count)
        *count = removed;
    return 0;
}

static json_t *row_to_json(sqlite3_stmt *st)
{
    json_t *claim = json_loads((const char *)sqlite3_column_text(st, 8), 0, NULL);
    json_t *alloc = json_loads((const char *)sqlite3_column_text(st, 9), 0, NULL);
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:{s:i, s:I}, s:I, s:o, s:o}", "id",
        (json_int_t)sqlite3_column_int64(st, 0), "name", (const char *)sqlite3_column_text(st, 1),
        "command", (const char *)sqlite3_column_text(st, 2), "sliceDir",
        (const char *)sqlite3_column_text(st, 3), "owner", "pid", (int)sqlite3_column_int64(st, 4),
        "startTime", (json_int_t)sqlite3_column_int64(st, 5), "created",
        (json_int_t)sqlite3_column_int64(st, 7), "claim", claim ? claim : json_null(), "allocation",
        alloc ? alloc : json_null());
    return o;
}

static int list_locked(struct ledger *l, json_t **out, struct gs_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(l->db,
                           "SELECT id, name, command, slice_dir, owner_pid, owner_start, boot_id, "
                           "created, claim, allocation FROM slices ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return db_error(err, l, "list");
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = row_to_json(st);
        if (o)
            json_array_append_new(arr, o);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return db_error(err, l, "list");
    }
    *out = arr;
    return 0;
}

static int exec_simple(struct ledger *l, const char *sql, struct gs_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(l->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = gs_error_set(err, -EIO, "ledger %s: %s: %s", l->path, sql, msg ? msg : "error");
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

int ledger_reclaim(struct ledger *l, int *n, struct gs_error *err)
{
    int rc = exec_simple(l, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    rc = reclaim_locked(l, n, err);
    if (rc < 0) {
        exec_simple(l, "ROLLBACK", NULL);
        return rc;
    }
    return exec_simple(l, "COMMIT", err);
}

int ledger_list(struct ledger *l, json_t **out, struct gs_error *err)
{
    *out = NULL;
    int rc = ledger_reclaim(l, NULL, err);
    if (rc < 0)
        return rc;
    return list_locked(l, out, err);
}

/* ---- fail closed ------------------------------------------------------------------------------
 */

/* A quantity the allocator may count: parses and is not negative. */
static bool quantity_ok(const json_t *v)
{
    struct gs_quantity q;
    return json_is_string(v) && gs_quantity_parse(json_string_value(v), &q, NULL) == 0 &&
           gs_quantity_sign(&q) >= 0;
}

/* status.allocation as we write it: devices.results[], each naming a device, with non-negative
 * consumedCapacity quantities. */
static bool allocation_readable(const json_t *a)
{
    const json_t *results = json_object_get(json_object_get(a, "devices"), "results");
    if (!json_is_object(a) || !json_is_array(results))
        return false;
    size_t i;
    const json_t *r;
    json_array_foreach(results, i, r)
    {
        const char *dev = json_string_value(json_object_get(r, "device"));
        const json_t *cc = json_object_get(r, "consumedCapacity");
        if (!json_is_object(r) || !dev || !*dev || (cc && !json_is_object(cc)))
            return false;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)cc, k, v)
        {
            if (!quantity_ok(v))
                return false;
        }
    }
    return true;
}

/* Device names an unreadable allocation still names (new array; empty = unknown). */
static json_t *result_devices(const json_t *a)
{
    json_t *out = json_array();
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(json_object_get(a, "devices"), "results"), i, r)
    {
        const char *dev = json_string_value(json_object_get(r, "device"));
        if (dev && *dev)
            json_array_append_new(out, json_string(dev));
    }
    return out;
}

/* Slice directories no row accounts for (the ledger was truncated or replaced): still held ->
 * a marker naming the GPUs of its limits file; nobody holds it -> removed. */
static void orphan_slices(struct ledger *l, const json_t *rows, json_t *live)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", l->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    snprintf(slash, sizeof(dir) - (size_t)(slash - dir), "/slices");
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        bool known = false;
        size_t i;
        const json_t *row;
        json_array_foreach(rows, i, row)
        {
            const char *sd = json_string_value(json_object_get(row, "sliceDir"));
            if (sd && strcmp(sd, path) == 0)
                known = true;
        }
        if (known)
            continue;
        if (!members_slice_held(path)) {
            gs_info("removing a slice directory nobody holds", "dir=%s", GS_LOGQ(path));
            remove_slice_dir(path);
            continue;
        }
        json_t *uuids = json_array();
        char ldir[PATH_MAX + 300];
        snprintf(ldir, sizeof(ldir), "%s/limits", path);
        DIR *ld = opendir(ldir);
        struct dirent *le;
        while (ld && (le = readdir(ld))) {
            size_t n = strlen(le->d_name);
            if (n < 7 || strcmp(le->d_name + n - 7, ".limits") != 0)
                continue;
            char lp[PATH_MAX + 600];
            snprintf(lp, sizeof(lp), "%s/%s", ldir, le->d_name);
            struct gs_limits *lim = calloc(1, sizeof(*lim));
            if (lim && gs_limits_read(lp, lim, NULL) == 0)
                for (size_t k = 0; k < lim->n_devices; k++)
                    json_array_append_new(uuids, json_string(lim->devices[k].uuid));
            free(lim);
        }
        if (ld)
            closedir(ld);
        gs_warn("slice directory not in the ledger is still held: its GPUs count as fully "
                "allocated",
                "dir=%s", GS_LOGQ(path));
        json_array_append_new(
            live, json_pack("{s:{s:s, s:o}}", LEDGER_UNREADABLE, "dir", path, "uuids", uuids));
    }
    closedir(d);
}

int ledger_allocate(struct ledger *l, struct ledger_entry *entry, ledger_decide_fn decide, void *ud,
                    int64_t *id, struct gs_error *err)
{
    int rc = exec_simple(l, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    json_t *rows = NULL, *live = NULL, *alloc = NULL;
    char *claim_s = NULL, *alloc_s = NULL;
    sqlite3_stmt *st = NULL;
    if ((rc = reclaim_locked(l, NULL, err)) < 0 || (rc = list_locked(l, &rows, err)) < 0)
        goto fail;
    live = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        json_t *a = json_object_get(row, "allocation");
        if (!json_is_object(json_object_get(row, "claim")) || !allocation_readable(a)) {
            json_int_t rid = json_integer_value(json_object_get(row, "id"));
            gs_warn(
                "ledger row unreadable: its GPUs count as fully allocated until it is reclaimed",
                "slice=%lld", (long long)rid);
            json_array_append_new(live, json_pack("{s:{s:I, s:o}}", LEDGER_UNREADABLE, "id", rid,
                                                  "devices", result_devices(a)));
            continue;
        }
        json_t *claim = json_deep_copy(json_object_get(row, "claim"));
        json_t *status = json_object();
        json_object_set(status, "allocation", a);
        json_object_set_new(claim, "status", status);
        json_array_append_new(live, claim);
    }
    orphan_slices(l, rows, live);
    rc = decide(ud, live, &alloc, err);
    if (rc < 0)
        goto fail;
    claim_s = json_dumps(entry->claim, JSON_COMPACT);
    alloc_s = json_dumps(alloc, JSON_COMPACT);
    if (!claim_s || !alloc_s) {
        rc = gs_error_set(err, -ENOMEM, "ledger: cannot serialise the slice");
        goto fail;
    }
    if (sqlite3_prepare_v2(l->db,
                           "INSERT INTO slices (name, command, slice_dir, owner_pid, owner_start, "
                           "boot_id, created, claim, allocation) VALUES (?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = db_error(err, l, "insert");
        goto fail;
    }
    sqlite3_bind_text(st, 1, entry->name ? entry->name : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, entry->command ? entry->command : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, entry->slice_dir ? entry->slice_dir : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, entry->owner.pid);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)entry->owner.start_time);
    sqlite3_bind_text(st, 6, entry->owner.boot_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
    sqlite3_bind_text(st, 8, claim_s, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 9, alloc_s, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = db_error(err, l, "insert");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    *id = sqlite3_last_insert_rowid(l->db);
    rc = exec_simple(l, "COMMIT", err);
    if (rc < 0)
        goto fail;
    entry->allocation = alloc;
    json_decref(rows);
    json_decref(live);
    free(claim_s);
    free(alloc_s);
    return 0;
fail:
    sqlite3_finalize(st);
    exec_simple(l, "ROLLBACK", NULL);
    json_decref(rows);
    json_decref(live);
    json_decref(alloc);
    free(claim_s);
    free(alloc_s);
    return rc;
}

int ledger_release(struct ledger *l, int64_t id, struct gs_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(l->db, "DELETE FROM slices WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return db_error(err, l, "release");
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_error(err, l, "release");
    return 0;
}

int ledger_release_slice(struct ledger *l, int64_t id, const char *slice_dir, struct gs_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(l->db, "DELETE FROM slices WHERE id = ? AND slice_dir = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return db_error(err, l, "release");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, slice_dir, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_error(err, l, "release");
    return 0;
}
