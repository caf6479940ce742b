/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/ledger.h"
#include "tap.h"

#define CAPACITY 100

/* An allocation as the ledger stores it: one result on device gpu0 consuming `cores`. */
static json_t *allocation_of(const char *cores)
{
    return json_pack("{s:{s:[{s:s, s:s, s:s, s:{s:s}}]}}", "devices", "results", "request", "gpu",
                     "pool", "node", "device", "gpu0", "consumedCapacity", "cores", cores);
}

/* Test decide: sum the "cores" of live claims (claim.cores) against a capacity of 100; an
 * unreadable row (ledger.h) holds the whole device. */
static int decide_cores(void *ud, json_t *live, json_t **allocation, struct gs_error *err)
{
    int want = *(int *)ud;
    int used = 0;
    size_t i;
    json_t *c;
    json_array_foreach(live, i, c)
    {
        if (json_object_get(c, LEDGER_UNREADABLE)) {
            used = CAPACITY;
            continue;
        }
        used += (int)json_integer_value(json_object_get(c, "cores"));
        if (!json_is_object(json_object_get(c, "status")))
            return gs_error_set(err, -EINVAL, "live claim without status");
    }
    if (used + want > CAPACITY)
        return gs_error_set(err, -ENOSPC, "cores: need %d, free %d", want, CAPACITY - used);
    char buf[16];
    snprintf(buf, sizeof(buf), "%d", want);
    *allocation = allocation_of(buf);
    return 0;
}

/* A decide that stores an allocation the ledger cannot trust (negative cores). */
static int decide_corrupt(void *ud, json_t *live, json_t **allocation, struct gs_error *err)
{
    (void)ud, (void)live, (void)err;
    *allocation = allocation_of("-5");
    return 0;
}

static int allocate(struct ledger *l, const char *name, int cores, pid_t owner, int64_t *id,
                    struct gs_error *err)
{
    struct ledger_entry e = {.name = name, .command = "sleep 1", .slice_dir = ""};
    e.claim = json_pack("{s:i}", "cores", cores);
    if (ledger_owner_of(owner, &e.owner) < 0) {
        json_decref(e.claim);
        return -ESRCH;
    }
    int rc = ledger_allocate(l, &e, decide_cores, &cores, id, err);
    json_decref(e.claim);
    json_decref(e.allocation);
    return rc;
}

static char cmd_rm2[256];

int main(void)
{
    tap_plan_auto();
    char dir[] = "/tmp/gs-ledger-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    struct gs_error err = {0};
    struct ledger *l = NULL;
    is_int(ledger_open(dir, &l, &err), 0, "open ledger in a fresh state dir");

    int64_t id1 = 0, id2 = 0, id3 = 0;
    is_int(allocate(l, "a", 30, 0, &id1, &err), 0, "first 30-core slice fits");
    is_int(allocate(l, "b", 30, 0, &id2, &err), 0, "second 30-core slice fits");
    is_int(allocate(l, "c", 80, 0, &id3, &err), -ENOSPC, "80 cores do not fit beside 60");
    is_str(err.msg, "cores: need 80, free 40", "decide's reason is passed through");

    json_t *list = NULL;
    is_int(ledger_list(l, &list, &err), 0, "list");
    is_int(json_array_size(list), 2, "two live slices");
    is_str(json_string_value(json_object_get(json_array_get(list, 0), "name")), "a",
           "oldest first");
    is_int(json_integer_value(
               json_object_get(json_object_get(json_array_get(list, 1), "owner"), "pid")),
           getpid(), "owner pid recorded");
    json_decref(list);

    is_int(ledger_release(l, id1, &err), 0, "release a");
    is_int(ledger_release(l, id1, &err), 0, "release is idempotent");
    is_int(allocate(l, "d", 70, 0, &id3, &err), 0, "70 cores fit after the release");

    /* A slice owned by a process that dies (SIGKILL) is reclaimed at the next allocation. */
    is_int(ledger_release(l, id2, &err), 0, "release b");
    is_int(ledger_release(l, id3, &err), 0, "release d");
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    int64_t idk = 0;
    is_int(allocate(l, "victim", 90, child, &idk, &err), 0, "slice owned by a child");
    struct ledger_owner o;
    ledger_owner_of(child, &o);
    ok(ledger_owner_alive(&o), "child owner is alive");
    is_int(allocate(l, "x", 20, 0, &id1, &err), -ENOSPC, "20 cores do not fit while it lives");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ok(!ledger_owner_alive(&o), "killed owner is dead");
    is_int(allocate(l, "x", 20, 0, &id1, &err), 0, "dead owner's 90 cores reclaimed");
    ledger_list(l, &list, &err);
    is_int(json_array_size(list), 1, "only the live slice remains");
    json_decref(list);
    ledger_release(l, id1, &err);

    /* Fail closed: a live row whose allocation cannot be read counts as holding everything. */
    {
        struct ledger_entry e = {.name = "corrupt", .command = "x", .slice_dir = ""};
        e.claim = json_pack("{s:i}", "cores", 5);
        ledger_owner_of(0, &e.owner);
        int64_t idc = 0;
        is_int(ledger_allocate(l, &e, decide_corrupt, NULL, &idc, &err), 0,
               "a row with cores \"-5\" is stored");
        json_decref(e.claim);
        json_decref(e.allocation);
        is_int(allocate(l, "y", 10, 0, &id2, &err), -ENOSPC,
               "beside an unreadable live row even 10 cores do not fit");
        is_int(ledger_release(l, idc, &err), 0, "release the unreadable row");
        is_int(allocate(l, "y", 10, 0, &id2, &err), 0, "then 10 cores fit");
        ledger_release(l, id2, &err);
    }

    /* A recorded start time that does not match the pid is a reused pid: dead. */
    struct ledger_owner fake;
    ledger_owner_of(0, &fake);
    fake.start_time += 1;
    ok(!ledger_owner_alive(&fake), "pid reuse (other start time) is detected as dead");
    ledger_owner_of(0, &fake);
    strcpy(fake.boot_id, "other-boot");
    ok(!ledger_owner_alive(&fake), "row from another boot is dead");

    /* 20 concurrent processes each ask 10 cores of 100: exactly 10 succeed. */
    ledger_close(l);
    enum { N = 20 };
    int pipes[2];
    if (pipe(pipes) != 0)
        return 1;
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            struct ledger *cl = NULL;
            struct gs_error e = {0};
            int64_t cid;
            char res = 'E';
            if (ledger_open(dir, &cl, &e) == 0) {
                int rc = allocate(cl, "p", 10, getppid(), &cid, &e);
                res = rc == 0 ? 'Y' : rc == -ENOSPC ? 'N' : 'E';
                ledger_close(cl);
            }
            if (write(pipes[1], &res, 1) != 1)
                _exit(2);
            _exit(0);
        }
    }
    close(pipes[1]);
    int yes = 0, no = 0, errs = 0;
    char c;
    while (read(pipes[0], &c, 1) == 1)
        c == 'Y' ? yes++ : c == 'N' ? no++ : errs++;
    close(pipes[0]);
    for (int i = 0; i < N; i++)
        waitpid(kids[i], NULL, 0);
    is_int(yes, 10, "exactly 10 of 20 concurrent 10-core slices granted");
    is_int(no, 10, "the other 10 refused");
    is_int(errs, 0, "no database errors under contention");
    ledger_open(dir, &l, &err);
    ledger_list(l, &list, &err);
    int sum = 0;
    size_t i;
    json_t *row;
    json_array_foreach(list, i, row)
    {
        sum += (int)json_integer_value(json_object_get(json_object_get(row, "claim"), "cores"));
    }
    is_int(sum, 100, "ledger holds exactly the capacity, never more");
    json_decref(list);

    /* 16 processes create and use a fresh ledger at the same moment: none may see "database is
     * locked" (journal-mode switch and schema creation race each other). */
    char dir2[] = "/tmp/gs-ledger2-XXXXXX";
    if (!mkdtemp(dir2))
        return 1;
    if (pipe(pipes) != 0)
        return 1;
    enum { M = 16 };
    pid_t kids2[M];
    for (int k = 0; k < M; k++) {
        kids2[k] = fork();
        if (kids2[k] == 0) {
            struct ledger *cl = NULL;
            struct gs_error e = {0};
            int64_t cid;
            char res = 'E';
            if (ledger_open(dir2, &cl, &e) == 0) {
                res = allocate(cl, "q", 5, getppid(), &cid, &e) == 0 ? 'Y' : 'N';
                ledger_close(cl);
            } else {
                fprintf(stderr, "open: %s\n", e.msg);
            }
            if (write(pipes[1], &res, 1) != 1)
                _exit(2);
            _exit(0);
        }
    }
    close(pipes[1]);
    yes = no = errs = 0;
    while (read(pipes[0], &c, 1) == 1)
        c == 'Y' ? yes++ : c == 'N' ? no++ : errs++;
    close(pipes[0]);
    for (int k = 0; k < M; k++)
        waitpid(kids2[k], NULL, 0);
    is_int(errs, 0, "concurrent creation of a fresh ledger: no open errors");
    is_int(yes, M, "concurrent creation: every 5-core slice granted");
    snprintf(cmd_rm2, sizeof(cmd_rm2), "rm -rf %s", dir2);
    if (system(cmd_rm2) != 0)
        diag("cleanup failed");

    is_int(ledger_open("/nonexistent/dir", &(struct ledger *){NULL}, &err), -EIO,
           "missing state dir is an error");
    like_str(err.msg, "/nonexistent/dir/ledger.db", "error names the ledger path");
    ledger_close(l);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("cleanup failed");
    return tap_done();
}
