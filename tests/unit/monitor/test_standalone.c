/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The standalone source: rows of `gpuslice run`'s ledger (written here with its schema), read
 * read-only. A row whose limits file is not written yet (gpuslice run inserts the row first) is
 * listed without devices and completed at a later refresh; a row whose owner is dead is skipped
 * and counted, never reported.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "config/limits.h"
#include "base/proc.h"
#include "fixtures.h"
#include "monitor/catalog.h"
#include "monitor/collect.h"
#include "tap.h"

#define UID_LIVE "11111111-0000-4000-8000-000000000001"
#define UID_DEAD "22222222-0000-4000-8000-000000000002"

static char root[256];

static int exec_sql(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        diag("sql: %s", msg ? msg : "?");
    sqlite3_free(msg);
    return rc;
}

static void add_row(sqlite3 *db, const char *name, const char *uid, long pid, uint64_t start,
                    const char *boot)
{
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "INSERT INTO slices (name, command, slice_dir, owner_pid, owner_start, boot_id, "
             "created, claim, allocation) VALUES ('%s', 'cmd', '%s/slices/%s', %ld, %llu, '%s', 0, "
             "'{\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"}}', '{}')",
             name, root, uid, pid, (unsigned long long)start, boot, name, uid);
    exec_sql(db, sql);
}

static char *scrape(struct mon_catalog *c)
{
    struct mon_collect_opts o = {.node = "n", .version = "t"};
    char *t = NULL;
    size_t len;
    mon_collect(c, &o, NULL, MON_FORMAT_TEXT, &t, &len);
    return t;
}

int main(void)
{
    tap_plan_auto();
    snprintf(root, sizeof(root), "/tmp/gs-test-standalone-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    char path[512];
    snprintf(path, sizeof(path), "%s/ledger.db", root);
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return 1;
    exec_sql(db, "PRAGMA journal_mode=WAL");
    exec_sql(db, "CREATE TABLE slices (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
                 " command TEXT NOT NULL, slice_dir TEXT NOT NULL, owner_pid INTEGER NOT NULL,"
                 " owner_start INTEGER NOT NULL, boot_id TEXT NOT NULL, created INTEGER NOT NULL,"
                 " claim TEXT NOT NULL, allocation TEXT NOT NULL)");
    uint64_t start = 0;
    char boot[64];
    gs_proc_start_time(getpid(), &start);
    gs_boot_id(boot, sizeof(boot));
    add_row(db, "job", UID_LIVE, (long)getpid(), start, boot);
    add_row(db, "ghost", UID_DEAD, (long)getpid(), start + 1, boot); /* same pid, other start */

    struct mon_catalog cat;
    struct mon_catalog_config cfg = {.node = "n",
                                     .host_dir = root,
                                     .standalone_state_dir = root,
                                     .refresh_ns = 1000000000ull,
                                     .resync_ns = 1000000000ull};
    if (mon_catalog_init(&cat, &cfg, NULL) < 0)
        return 1;
    mon_catalog_refresh(&cat);
    is_int(cat.n_claims, 1, "the live row is listed, the dead owner's is not");
    ok(atomic_load(&cat.skipped[MON_CAUSE_OWNER_GONE]) == 1, "dead owner counted (owner_gone)");
    ok(cat.n_claims == 1 && !cat.claims[0]->devices_known && cat.claims[0]->n_devices == 0,
       "limits file not written yet: no devices, no error");
    is_int(atomic_load(&cat.skipped[MON_CAUSE_LIMITS_UNREADABLE]), 0,
           "a limits file that does not exist yet is not counted as unreadable");

    char dir[700], lpath[800], rpath[800];
    snprintf(dir, sizeof(dir), "%s/slices/%s/limits", root, UID_LIVE);
    gs_mkdir_p(dir, 0755, NULL);
    snprintf(lpath, sizeof(lpath), "%s/%s.limits", dir, UID_LIVE);
    struct gs_limits *lim = calloc(1, sizeof(*lim));
    gs_limits_init(lim);
    snprintf(lim->claim, sizeof(lim->claim), "%s", UID_LIVE);
    gs_limits_add_device(lim, "GPU-standalone", 4ull << 30, 30, NULL);
    ok(gs_limits_write(lpath, lim, NULL) == 0, "limits file written (as gpuslice run does)");
    free(lim);
    snprintf(rpath, sizeof(rpath), "%s/slices/%s/region", root, UID_LIVE);
    const struct fx_device d[] = {{.uuid = "GPU-standalone", .used = 1000ull << 20, .cores = 30}};
    fx_write_region(rpath, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d, 1);
    mon_catalog_refresh(&cat);
    ok(cat.n_claims == 1 && cat.claims[0]->devices_known && cat.claims[0]->n_devices == 1,
       "next refresh: the slice's device is known");
    char *t = scrape(&cat);
    ok(t && strstr(t, "gpuslice_claim_memory_limit_bytes{source=\"standalone\",namespace=\"\","
                      "claim=\"job\",claim_uid=\"" UID_LIVE "\",vdevice_index=\"0\","
                      "device_uuid=\"GPU-standalone\"} 4294967296\n"),
       "limit from the limits file, slice name as the claim label");
    ok(t && strstr(t, "hami_vgpu_memory_used_bytes{namespace=\"\",pod=\"\",container=\"\","
                      "vdevice_index=\"0\",device_uuid=\"GPU-standalone\"} 1048576000\n"),
       "usage from the slice's region, empty pod labels");
    free(t);

    exec_sql(db, "DELETE FROM slices WHERE name = 'job'");
    mon_catalog_refresh(&cat);
    is_int(cat.n_claims, 0, "a released slice disappears");
    t = scrape(&cat);
    ok(t && !strstr(t, "GPU-standalone"), "and none of its series is left");
    free(t);

    /* A ledger that is not a database: counted, nothing listed, no crash. */
    sqlite3_close(db);
    gs_write_file_atomic(path, "not a database", 14, 0600, NULL);
    mon_catalog_refresh(&cat);
    ok(atomic_load(&cat.skipped[MON_CAUSE_LEDGER_UNREADABLE]) >= 1 && cat.n_claims == 0,
       "unreadable ledger counted, nothing reported");
    mon_catalog_fini(&cat);
    gs_rm_rf(root, NULL);
    return tap_done();
}
