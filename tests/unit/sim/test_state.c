/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim shared state: memory charges and OOM, the timeline's FIFO and busy-time queries,
 * reclaim of a process that exits without unregistering, and model mismatches. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/sim-state.h"
#include "tap.h"

static char dir[128], path[200];

static struct sim_state *open_state(const char *preset, struct gs_error *err)
{
    struct sim_config cfg;
    sim_config_preset(preset, &cfg, NULL);
    struct sim_state *st = NULL;
    if (sim_state_open(&cfg, &st, err) < 0)
        return NULL;
    return st;
}

static void test_memory(struct sim_state *st)
{
    uint64_t used, total;
    is_int(sim_mem_charge(st, 0, 10ull << 30), 0, "charge 10 GiB");
    is_int(sim_mem_charge(st, 0, 5ull << 30), 0, "charge 5 GiB (full)");
    is_int(sim_mem_charge(st, 0, 1), -ENOMEM, "1 more byte: -ENOMEM");
    sim_mem_info(st, 0, &used, &total);
    ok(used == total && total == 15ull << 30, "used == total == 15 GiB");
    sim_mem_uncharge(st, 0, 15ull << 30);
    sim_mem_uncharge(st, 0, 1ull << 30);
    sim_mem_info(st, 0, &used, &total);
    is_uint(used, 0, "uncharge saturates at 0");
    is_int(sim_mem_charge(st, 3, 1), -EINVAL, "device 3 does not exist");
}

static void test_timeline(struct sim_state *st)
{
    sim_lock(st);
    uint64_t base = st->sh->dev[0].tail_ns + 1000000;
    uint64_t e1 = sim_enqueue_locked(st, 0, base, 0, 100);
    uint64_t e2 = sim_enqueue_locked(st, 0, base + 50, 0, 100);
    uint64_t c = st->sh->dev[0].ring_count;
    uint64_t e3 = sim_enqueue_locked(st, 0, base + 5000, 0, 50);
    uint64_t e4 = sim_enqueue_locked(st, 0, base + 6000, base + 7000, 10);
    bool complete;
    uint64_t all = sim_busy_total_locked(st, 0, base, base + 10000, &complete);
    uint64_t part = sim_busy_total_locked(st, 0, base + 150, base + 5025, NULL);
    struct sim_pid_busy pb[4];
    int n = sim_busy_by_pid_locked(st, 0, base, base + 10000, pb, 4, NULL);
    sim_unlock(st);
    is_uint(e1, base + 100, "first kernel ends at now + cost");
    is_uint(e2, base + 200, "second queues behind it (FIFO)");
    is_uint(st->sh->dev[0].ring_count, c + 2, "back-to-back kernels of one process merge");
    is_uint(e3, base + 5050, "an idle device starts at once");
    is_uint(e4, base + 7010, "not_before (stream/event order) is honoured");
    is_uint(all, 260, "busy time in the window");
    ok(complete, "window fully covered by the ring");
    is_uint(part, 50 + 25, "partial overlaps count their part");
    ok(n == 1 && pb[0].pid == (uint32_t)getpid() && pb[0].busy_ns == 260, "busy by pid");

    /* Wrap the ring: gaps keep intervals apart. */
    sim_lock(st);
    uint64_t t = st->sh->dev[0].tail_ns + 1000;
    uint64_t first = t;
    for (int i = 0; i < SIM_RING + 10; i++, t += 20)
        sim_enqueue_locked(st, 0, t, 0, 10);
    uint64_t busy = sim_busy_total_locked(st, 0, first, t, &complete);
    sim_unlock(st);
    ok(!complete, "a window older than the ring is reported incomplete");
    is_uint(busy, (uint64_t)SIM_RING * 10, "the ring keeps the last %d intervals", SIM_RING);
}

static void test_reclaim(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sim_state *c = open_state("t4", NULL);
        if (!c || sim_proc_register(c, NULL) < 0 || sim_mem_charge(c, 0, 1ull << 30) < 0)
            _exit(1);
        _exit(0); /* no unregister: like a SIGKILL */
    }
    int status;
    waitpid(pid, &status, 0);
    is_int(WEXITSTATUS(status), 0, "child charged 1 GiB and died");
    struct gs_error err = {0};
    struct sim_state *st = open_state("t4", &err);
    uint64_t used, total;
    sim_mem_info(st, 0, &used, &total);
    is_uint(used, 0, "its memory is reclaimed at the next look");
    /* A different model on the same file: allowed only when nobody uses it. */
    sim_proc_register(st, NULL);
    struct sim_state *other = open_state("h200x2", &err);
    ok(other == NULL && err.code == -EBUSY, "another model cannot take a file in use");
    like_str(err.msg, "in use by processes simulating another machine", "message");
    sim_state_close(st);
    other = open_state("h200x2", &err);
    ok(other != NULL && other->ndev == 2, "once free, the file is re-initialised");
    sim_state_close(other);
}

/* A process dies holding the shared lock in the middle of an update: the next locker gets the
 * lock (EOWNERDEAD), recomputes the totals and reclaims the dead slot. */
static void test_owner_dead(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sim_state *c = open_state("t4", NULL);
        if (!c || sim_proc_register(c, NULL) < 0 || sim_mem_charge(c, 0, 3ull << 30) < 0)
            _exit(1);
        sim_lock(c);
        c->sh->dev[0].used_mem = 12345; /* a half-done update */
        _exit(0);                       /* dies holding the lock */
    }
    int status;
    waitpid(pid, &status, 0);
    is_int(WEXITSTATUS(status), 0, "child took the lock and died");
    struct gs_error err = {0};
    struct sim_state *st = open_state("t4", &err);
    sim_lock(st); /* would hang forever without the robust mutex */
    uint64_t used = st->sh->dev[0].used_mem;
    int live = 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++)
        live += st->sh->procs[i].state == SIM_PROC_LIVE;
    sim_unlock(st);
    is_uint(used, 0, "totals recomputed and the dead slot's 3 GiB reclaimed");
    is_int(live, 0, "no live slot left");
    /* The mutex was made consistent: another process can take it (a lock left unrecoverable
     * would return ENOTRECOVERABLE forever; the alarm ends a hang), and updates count again. */
    pid = fork();
    if (pid == 0) {
        alarm(10);
        struct sim_state *c = open_state("t4", NULL);
        if (!c || sim_proc_register(c, NULL) < 0 || sim_mem_charge(c, 0, 1ull << 30) < 0)
            _exit(1);
        _exit(c->sh->dev[0].used_mem == 1ull << 30 ? 0 : 3);
    }
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "after recovery another process locks it and charges 1 GiB exactly (status %d)", status);
    is_int(sim_proc_register(st, &err), 0, "and this one registers");
    is_int(sim_mem_charge(st, 0, 2ull << 30), 0, "and charges 2 GiB");
    uint64_t total = 0;
    sim_mem_info(st, 0, &used, &total); /* sweeps: the exited child's 1 GiB goes */
    is_uint(used, 2ull << 30, "the device total counts only live processes' memory");
    sim_state_close(st);
}

/* A process killed with work queued: the work it had not run yet leaves the device. */
static void test_dead_work(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sim_state *c = open_state("t4", NULL);
        if (!c || sim_proc_register(c, NULL) < 0)
            _exit(1);
        sim_lock(c);
        uint64_t now = sim_now_ns();
        sim_enqueue_locked(c, 0, now, 0, 5000000000ull); /* 5 s of work */
        sim_unlock(c);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    is_int(WEXITSTATUS(status), 0, "child queued 5 s of work and died");
    struct gs_error err = {0};
    struct sim_state *st = open_state("t4", &err);
    sim_sweep(st);
    sim_lock(st);
    uint64_t now = sim_now_ns(), tail = st->sh->dev[0].tail_ns;
    uint64_t future = sim_busy_total_locked(st, 0, now, now + 10000000000ull, NULL);
    sim_unlock(st);
    ok(tail <= now, "the device is no longer busy for the dead process");
    is_uint(future, 0, "no busy time left in the future");
    sim_state_close(st);
}

/* A process that only reads the file (NVML) also keeps it from being re-initialised under it. */
static void test_reader_blocks(void)
{
    struct gs_error err = {0};
    struct sim_state *reader = open_state("t4", &err);
    ok(reader != NULL && reader->slot < 0, "an unregistered reader (%s)", err.msg);
    struct sim_state *other = open_state("h200x2", &err);
    ok(other == NULL && err.code == -EBUSY, "another model is refused while it reads");
    sim_state_close(other);
    sim_state_close(reader);
    other = open_state("h200x2", &err);
    ok(other != NULL, "and accepted once it has closed");
    sim_state_close(other);
}

/* A damaged or foreign file at GPUSIM_STATE is re-initialised when nobody uses it. */
static void test_garbage(void)
{
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 100000; i++)
        fputc(i * 7 & 0xff, f);
    fclose(f);
    struct gs_error err = {0};
    struct sim_state *st = open_state("t4", &err);
    ok(st != NULL, "a garbage file is replaced (%s)", err.msg);
    if (!st)
        return;
    ok(st->sh->magic == SIM_STATE_MAGIC && st->sh->version == SIM_STATE_VERSION, "fresh header");
    is_uint(st->sh->dev[0].total_mem, 15ull << 30, "fresh device totals");
    sim_state_close(st);
}

int main(void)
{
    tap_plan_auto();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/gpusim-unit-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 2;
    snprintf(path, sizeof(path), "%s/state", dir);
    setenv("GPUSIM_STATE", path, 1);
    struct gs_error err = {0};
    struct sim_state *st = open_state("t4", &err);
    ok(st != NULL, "open the state file (%s)", err.msg);
    if (!st)
        return tap_done();
    is_int(sim_proc_register(st, &err), 0, "register");
    is_uint(st->sh->procs[st->slot].pid, (unsigned)getpid(), "slot holds our pid");
    ok(st->sh->procs[st->slot].start_time > 0, "and our start time");
    test_memory(st);
    test_timeline(st);
    sim_state_close(st);
    test_reclaim();
    test_owner_dead();
    test_dead_work();
    test_reader_blocks();
    test_garbage();
    unlink(path);
    rmdir(dir);
    return tap_done();
}
