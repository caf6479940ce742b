/* SPDX-License-Identifier: Apache-2.0 */
/* The shared region: exact boundary, cross-process accounting, SIGKILLed processes swept,
 * a lock held by a dead process never wedges the others. The races of the sweep are driven to
 * their bad interleaving deterministically (fork, SIGKILL, pipes, and the driver-check callback,
 * which runs between a sweep's unlocked judgement and its locked reclaim), never by timing. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"
#include "tap.h"
#include "vgpu/vgpu-internal.h"

#define MiB  (1ULL << 20)
#define UUID "GPU-11111111-2222-3333-4444-555555555555"

static char path[256];

static void test_boundary(struct vgpu_region *r, int slot)
{
    int fails = 0;
    for (int i = 0; i < 4096; i++)
        if (vgpu_region_reserve(r, slot, MiB, 4096 * MiB) != 0)
            fails++;
    is_int(fails, 0, "4096 reservations of 1 MiB fit a 4096 MiB limit");
    is_int(vgpu_region_reserve(r, slot, MiB, 4096 * MiB), -ENOMEM, "the 4097th is refused");
    is_int(vgpu_region_reserve(r, slot, 1, 4096 * MiB), -ENOMEM, "even one more byte is refused");
    is_uint(vgpu_region_used(r, slot), 4096 * MiB, "used is exactly the limit");
    vgpu_region_release(r, slot, MiB);
    is_int(vgpu_region_reserve(r, slot, MiB, 4096 * MiB), 0, "after a release one fits again");
    vgpu_region_release(r, slot, 4096 * MiB);
    is_uint(vgpu_region_used(r, slot), 0, "all released");
    vgpu_region_release(r, slot, MiB);
    is_uint(vgpu_region_used(r, slot), 0, "release never goes below zero");
    is_int(vgpu_region_reserve(r, slot, UINT64_MAX, 0), 0, "no cap: saturating reserve accepted");
    vgpu_region_release(r, slot, UINT64_MAX);
    is_uint(vgpu_region_used(r, slot), 0, "saturated release back to zero");
}

/* A child reserves, then is SIGKILLed: the sweep gives its usage back. */
static void test_sweep(struct vgpu_region *r, int slot)
{
    int pipefd[2];
    ok(pipe(pipefd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        vgpu_region_atfork_child();
        struct vgpu_region *cr = vgpu_region_open(path);
        int s = vgpu_region_device(cr, UUID, 4096 * MiB, 30);
        int rc = vgpu_region_reserve(cr, s, 100 * MiB, 4096 * MiB);
        (void)!write(pipefd[1], &rc, sizeof(rc));
        pause();
        _exit(0);
    }
    int rc = -1;
    (void)!read(pipefd[0], &rc, sizeof(rc));
    is_int(rc, 0, "child reserved 100 MiB");
    is_uint(vgpu_region_used(r, slot), 100 * MiB, "parent sees the child's usage");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "sweep reclaims the dead child's slot");
    is_uint(vgpu_region_used(r, slot), 0, "usage back to 0 after the sweep");
    close(pipefd[0]);
    close(pipefd[1]);
}

/* A child dies while holding the region lock: the next locker recovers and recomputes. */
static void test_dead_lock_owner(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    is_int(vgpu_region_reserve(r, slot, 10 * MiB, 0), 0, "parent holds 10 MiB");
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&shm->lock);
        atomic_store(&shm->devices[slot].used, 999 * MiB); /* half-done update */
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    is_int(vgpu_region_reserve(r, slot, MiB, 0), 0, "lock of a dead owner does not wedge");
    is_uint(vgpu_region_used(r, slot), 11 * MiB, "usage recomputed from the slots (10 + 1 MiB)");
    vgpu_region_release(r, slot, 11 * MiB);
}

/* ------------------------------------------------------------------ controlled child processes */

/* A child that opens the region and, for each 64-bit size read from its command pipe, reserves
 * that many bytes and writes the result back (0 = _exit without any clean-up, as if killed). */
struct child {
    pid_t pid;
    int cmd, ack;
};

static struct child child_start(void)
{
    int c[2], a[2];
    struct child ch = {.pid = -1, .cmd = -1, .ack = -1};
    if (pipe(c) != 0 || pipe(a) != 0)
        return ch;
    pid_t pid = fork();
    if (pid == 0) {
        close(c[1]);
        close(a[0]);
        vgpu_region_atfork_child();
        struct vgpu_region *cr = vgpu_region_open(path);
        int s = vgpu_region_device(cr, UUID, 4096 * MiB, 30);
        uint64_t size;
        while (read(c[0], &size, sizeof(size)) == (ssize_t)sizeof(size) && size) {
            int rc = vgpu_region_reserve(cr, s, size, 4096 * MiB);
            (void)!write(a[1], &rc, sizeof(rc));
        }
        _exit(0); /* no destructor: the slot stays as a SIGKILL leaves it */
    }
    close(c[0]);
    close(a[1]);
    ch.pid = pid;
    ch.cmd = c[1];
    ch.ack = a[0];
    return ch;
}

static int child_reserve(struct child *ch, uint64_t size)
{
    int rc = -1;
    if (write(ch->cmd, &size, sizeof(size)) != (ssize_t)sizeof(size) ||
        read(ch->ack, &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
        return -999;
    return rc;
}

static void child_kill(struct child *ch)
{
    kill(ch->pid, SIGKILL);
    waitpid(ch->pid, NULL, 0);
    close(ch->cmd);
    close(ch->ack);
}

static int slot_of(struct gs_region *shm, pid_t pid)
{
    for (int p = 0; p < GS_REGION_MAX_PROCS; p++)
        if (atomic_load(&shm->procs[p].pid) == pid)
            return p;
    return -1;
}

/* ------------------------------------------------------------------ driver-check doubles */

static int holds_answer;  /* what the double returns */
static bool holds_listed; /* whether it says every pid still holds memory */
static int holds_calls;

static int driver_double(const int *pids, bool *holds, int n)
{
    (void)pids;
    holds_calls++;
    for (int i = 0; i < n; i++)
        holds[i] = holds_listed;
    return holds_answer;
}

/* Race: between a sweep's unlocked judgement and its locked reclaim, another sweeper reclaims the
 * dead slot and a NEW process claims it with the same start time (clock ticks are 10 ms: two
 * processes started in one tick share it). The first sweep must not reclaim the newcomer. */
static struct vgpu_region *race_region;
static struct child race_newcomer;
static int race_nested_swept = -1, race_newcomer_rc = -1;
static int race_depth;

static int driver_race(const int *pids, bool *holds, int n)
{
    (void)pids;
    for (int i = 0; i < n; i++)
        holds[i] = false;
    if (race_depth++ == 0) {
        /* the other sweeper, then a new process that claims the freed slot */
        race_nested_swept = vgpu_region_sweep(race_region, VGPU_SWEEP_FORCE);
        race_newcomer_rc = child_reserve(&race_newcomer, 50 * MiB);
    }
    race_depth--;
    return 0;
}

static void test_sweep_slot_reused_same_tick(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    struct child dead = child_start();
    is_int(child_reserve(&dead, 100 * MiB), 0, "race: first process reserved 100 MiB");
    int dead_slot = slot_of(shm, dead.pid);
    child_kill(&dead);
    race_newcomer = child_start(); /* started, no slot yet */
    uint64_t st = 0;
    gs_proc_start_time(race_newcomer.pid, &st);
    /* the dead process started in the same clock tick as the newcomer */
    atomic_store(&shm->procs[dead_slot].start_time, st ? st : 1);
    race_region = r;
    vgpu_region_set_driver_check(driver_race);
    int swept = vgpu_region_sweep(r, VGPU_SWEEP_FORCE);
    vgpu_region_set_driver_check(NULL);
    is_int(race_nested_swept, 1, "race: the other sweeper reclaimed the dead process");
    is_int(race_newcomer_rc, 0, "race: the newcomer reserved 50 MiB meanwhile");
    is_int(slot_of(shm, race_newcomer.pid), dead_slot, "race: in the very slot just freed");
    is_int(swept, 0, "race: the first sweep leaves the newcomer's slot alone");
    is_uint(vgpu_region_used(r, slot), 50 * MiB, "race: the newcomer's 50 MiB are still counted");
    child_kill(&race_newcomer);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "race: newcomer swept once dead");
    is_uint(vgpu_region_used(r, slot), 0, "race: usage back to 0");
}

/* More dead processes than one sweep batch: a single sweep gives all of them back. */
static void test_sweep_many_dead(struct vgpu_region *r, int slot)
{
    enum { N = 70 };
    struct child ch[N];
    int reserved = 0;
    for (int i = 0; i < N; i++) {
        ch[i] = child_start();
        reserved += child_reserve(&ch[i], MiB) == 0;
    }
    is_int(reserved, N, "70 processes reserved 1 MiB each");
    is_uint(vgpu_region_used(r, slot), N * MiB, "70 MiB counted");
    for (int i = 0; i < N; i++)
        child_kill(&ch[i]);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), N, "one sweep reclaims all 70 dead slots");
    is_uint(vgpu_region_used(r, slot), 0, "usage back to 0");
}

/* The driver decides when a dead process's bytes come back: while it still lists the pid, or
 * cannot answer, the charge stays (else a new allocation could push physical usage over the
 * limit while the driver still holds the dead process's memory). */
static void test_sweep_waits_for_driver(struct vgpu_region *r, int slot)
{
    struct child ch = child_start();
    is_int(child_reserve(&ch, 30 * MiB), 0, "driver: process reserved 30 MiB");
    /* _exit without waitpid: a zombie, like a SIGKILLed process whose other threads are still
     * tearing down (the driver still holds its memory) */
    close(ch.cmd);
    int rc;
    (void)!read(ch.ack, &rc, sizeof(rc)); /* EOF once it has exited */
    uint64_t st = 0;
    for (int i = 0; i < 1000 && gs_proc_start_time(ch.pid, &st) != -ESRCH; i++)
        usleep(1000);
    is_int(gs_proc_start_time(ch.pid, &st), -ESRCH, "driver: the process is a zombie");
    vgpu_region_set_driver_check(driver_double);
    holds_answer = 0;
    holds_listed = true;
    holds_calls = 0;
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 0, "driver lists the zombie: slot kept");
    is_int(holds_calls, 1, "driver: asked once");
    is_uint(vgpu_region_used(r, slot), 30 * MiB, "driver: its 30 MiB still counted");
    holds_answer = -EAGAIN;
    holds_listed = false;
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 0, "driver cannot answer: slot kept");
    is_uint(vgpu_region_used(r, slot), 30 * MiB, "driver: still counted");
    holds_answer = 0;
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "driver let go: slot reclaimed");
    is_uint(vgpu_region_used(r, slot), 0, "driver: usage back to 0");
    /* a driver that can never tell (no NVML, "not supported"): the /proc judgement decides */
    struct child ch2 = child_start();
    is_int(child_reserve(&ch2, 4 * MiB), 0, "driver: another process reserved 4 MiB");
    child_kill(&ch2);
    holds_answer = -ENOSYS;
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "driver can never tell: /proc decides");
    is_uint(vgpu_region_used(r, slot), 0, "driver: usage back to 0");
    vgpu_region_set_driver_check(NULL);
    waitpid(ch.pid, NULL, 0);
    close(ch.ack);
}

/* A slot whose start time could not be recorded (0 = unknown) is judged by its pid alone: a live
 * process is never swept on a start-time mismatch it did not cause. */
static void test_sweep_unknown_start(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    struct child ch = child_start();
    is_int(child_reserve(&ch, 8 * MiB), 0, "unknown start: process reserved 8 MiB");
    atomic_store(&shm->procs[slot_of(shm, ch.pid)].start_time, 0);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 0, "unknown start: live process kept");
    is_uint(vgpu_region_used(r, slot), 8 * MiB, "unknown start: 8 MiB still counted");
    child_kill(&ch);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "unknown start: swept once gone");
    is_uint(vgpu_region_used(r, slot), 0, "unknown start: usage back to 0");
}

/* If our slot ever carries another process's identity, we neither give back from it nor charge
 * into it: its owner's accounting stays exact. */
static void test_slot_taken_over(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    is_int(vgpu_region_reserve(r, slot, 10 * MiB, 0), 0, "takeover: we hold 10 MiB");
    int mine = slot_of(shm, getpid());
    /* as a wrong sweep would: our slot freed with its usage */
    atomic_store(&shm->procs[mine].used[slot], 0);
    atomic_store(&shm->devices[slot].used, 0);
    atomic_store(&shm->procs[mine].pid, 0);
    struct child ch = child_start();
    is_int(child_reserve(&ch, 20 * MiB), 0, "takeover: another process reserved 20 MiB");
    is_int(slot_of(shm, ch.pid), mine, "takeover: in our former slot");
    vgpu_region_release(r, slot, 10 * MiB);
    is_uint(vgpu_region_used(r, slot), 20 * MiB, "takeover: our release leaves its 20 MiB");
    is_uint(atomic_load(&shm->procs[mine].used[slot]), 20 * MiB, "takeover: its slot intact");
    is_int(vgpu_region_reserve(r, slot, MiB, 0), 0, "takeover: our next reserve succeeds");
    ok(slot_of(shm, getpid()) >= 0 && slot_of(shm, getpid()) != mine,
       "takeover: in a slot of our own");
    is_uint(vgpu_region_used(r, slot), 21 * MiB, "takeover: 20 + 1 MiB");
    vgpu_region_release(r, slot, MiB);
    child_kill(&ch);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "takeover: the other process swept");
    is_uint(vgpu_region_used(r, slot), 0, "takeover: usage back to 0");
}

/* A process dies holding the lock in the middle of its own reservation (device total raised,
 * its slot not yet): the next locker recomputes from the slots, and sweeping the dead process
 * then leaves exactly the survivors' usage. */
static void test_dead_owner_mid_reserve(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    is_int(vgpu_region_reserve(r, slot, 3 * MiB, 0), 0, "mid-reserve: we hold 3 MiB");
    struct child ch = child_start();
    is_int(child_reserve(&ch, 5 * MiB), 0, "mid-reserve: other process holds 5 MiB");
    int cs = slot_of(shm, ch.pid);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&shm->lock);
        atomic_fetch_add(&shm->devices[slot].used, 7 * MiB); /* half of a reservation */
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    is_int(vgpu_region_reserve(r, slot, MiB, 0), 0, "mid-reserve: lock recovered");
    is_uint(vgpu_region_used(r, slot), 9 * MiB, "mid-reserve: recomputed 3 + 5 + 1 MiB");
    is_uint(atomic_load(&shm->procs[cs].used[slot]), 5 * MiB, "mid-reserve: dead's slot intact");
    child_kill(&ch);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "mid-reserve: dead process swept");
    is_uint(vgpu_region_used(r, slot), 4 * MiB, "mid-reserve: our 4 MiB remain");
    vgpu_region_release(r, slot, 4 * MiB);
    is_uint(vgpu_region_used(r, slot), 0, "mid-reserve: back to 0");
}

/* A normal exit frees an empty slot at once; a slot that still holds charges is left to the
 * sweep (the driver frees a process's memory after its library destructors ran). */
static void exit_child(uint64_t keep, uint64_t release)
{
    vgpu_region_atfork_child();
    struct vgpu_region *cr = vgpu_region_open(path);
    int s = vgpu_region_device(cr, UUID, 4096 * MiB, 30);
    if (vgpu_region_reserve(cr, s, keep + release, 4096 * MiB) != 0)
        _exit(2);
    vgpu_region_release(cr, s, release);
    exit(0); /* destructors run */
}

static void test_normal_exit(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    uint64_t gen = atomic_load(&shm->generation);
    pid_t pid = fork();
    if (pid == 0)
        exit_child(0, 6 * MiB);
    int st = -1;
    waitpid(pid, &st, 0);
    is_int(st, 0, "exit: a process reserved and released 6 MiB, then exited");
    is_int(slot_of(shm, pid), -1, "exit: its empty slot was freed at exit");
    ok(atomic_load(&shm->generation) >= gen + 2, "exit: slot claimed and released");
    is_uint(vgpu_region_used(r, slot), 0, "exit: nothing counted");
    pid = fork();
    if (pid == 0)
        exit_child(12 * MiB, MiB);
    waitpid(pid, &st, 0);
    is_int(st, 0, "exit: a process exited still holding 12 MiB");
    ok(slot_of(shm, pid) >= 0, "exit: its slot is left to the sweep");
    is_uint(vgpu_region_used(r, slot), 12 * MiB, "exit: its 12 MiB stay counted until then");
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "exit: the sweep reclaims it");
    is_uint(vgpu_region_used(r, slot), 0, "exit: usage back to 0");
}

/* Fail closed: a region that cannot be mapped refuses every reservation; a full device table
 * gives no slot (libvgpu then refuses the device); the refusing region refuses. */
static void test_fail_closed(void)
{
    struct vgpu_region *bad = vgpu_region_open("/nonexistent-gpuslice-dir/region");
    ok(bad != NULL && vgpu_region_refuses(bad), "unmappable region: refusing, not private");
    if (bad) {
        ok(vgpu_region_reserve(bad, 0, MiB, 0) < 0, "unmappable region: reservation refused");
        is_int(vgpu_region_device(bad, UUID, MiB, 0), -1, "unmappable region: no device slot");
        ok(vgpu_region_used(bad, 0) == UINT64_MAX, "unmappable region: nothing shows free");
    }
    struct vgpu_region *ref = vgpu_region_refusing();
    ok(vgpu_region_refuses(ref) && vgpu_region_reserve(ref, -1, 1, 0) < 0,
       "the refusing region refuses even one byte, even with no cap");
    vgpu_region_release(ref, -1, 1); /* harmless */

    char p9[300];
    snprintf(p9, sizeof(p9), "%s-nine", path);
    unlink(p9);
    struct vgpu_region *r9 = vgpu_region_open(p9);
    int got = 0;
    for (int i = 0; i < GS_REGION_MAX_DEVICES; i++) {
        char u[64];
        snprintf(u, sizeof(u), "GPU-00000000-0000-0000-0000-%012d", i);
        got += vgpu_region_device(r9, u, MiB, 0) == i;
    }
    is_int(got, GS_REGION_MAX_DEVICES, "a full table: every device gets its slot");
    is_int(vgpu_region_device(r9, "GPU-00000000-0000-0000-0000-999999999999", MiB, 0), -1,
           "one device more gets no slot (libvgpu refuses it; never uncapped)");
    unlink(p9);
}

/* The first process initialises the region under the file's flock: a stalled initialiser makes
 * the others fail closed (refuse) after the timeout instead of re-initialising the region under
 * it, so nothing accounted can be wiped later. */
static void test_stalled_initialiser(void)
{
    char pi[300];
    snprintf(pi, sizeof(pi), "%s-init", path);
    unlink(pi);
    int fd = open(pi, O_RDWR | O_CREAT, 0666);
    ok(fd >= 0 && ftruncate(fd, sizeof(struct gs_region)) == 0, "stalled: region file sized");
    struct gs_region *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    atomic_store(&m->init_state, GS_REGION_INITIALISING);
    atomic_store(&m->devices[0].used, 123); /* what must survive */
    int ready[2];
    ok(pipe(ready) == 0, "stalled: pipe");
    pid_t holder = fork();
    if (holder == 0) {
        int f = open(pi, O_RDWR);
        flock(f, LOCK_EX); /* the initialiser, stalled while holding the flock */
        ssize_t w = write(ready[1], "x", 1);
        (void)w;
        pause();
        _exit(0);
    }
    char c;
    ok(read(ready[0], &c, 1) == 1, "stalled: initialiser holds the flock");
    pid_t opener = fork();
    if (opener == 0) {
        vgpu_region_atfork_child();
        struct vgpu_region *r = vgpu_region_open(pi);
        _exit(r && vgpu_region_refuses(r) && vgpu_region_reserve(r, 0, 1, 0) < 0 ? 0 : 1);
    }
    int st = -1;
    waitpid(opener, &st, 0);
    is_int(st, 0, "stalled: another process refuses (fails closed) instead of re-initialising");
    is_uint(atomic_load(&m->init_state), GS_REGION_INITIALISING, "stalled: state untouched");
    is_uint(atomic_load(&m->devices[0].used), 123, "stalled: nothing wiped");
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    /* the initialiser died (its flock went with it): the next process initialises */
    opener = fork();
    if (opener == 0) {
        vgpu_region_atfork_child();
        struct vgpu_region *r = vgpu_region_open(pi);
        _exit(r && !vgpu_region_refuses(r) ? 0 : 1);
    }
    waitpid(opener, &st, 0);
    is_int(st, 0, "stalled: once the initialiser is dead the region is initialised");
    is_uint(atomic_load(&m->init_state), GS_REGION_READY, "stalled: state READY");
    munmap(m, sizeof(*m));
    close(fd);
    close(ready[0]);
    close(ready[1]);
    unlink(pi);
}

/* Any lock error other than EOWNERDEAD refuses the reservation (a corrupted lock word). */
static void test_lock_error(void)
{
    char pl[300];
    snprintf(pl, sizeof(pl), "%s-lock", path);
    unlink(pl);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* a hang is a failure, not a stuck suite */
        vgpu_region_atfork_child();
        struct vgpu_region *r = vgpu_region_open(pl);
        int s = vgpu_region_device(r, UUID, MiB, 0);
        if (s != 0 || vgpu_region_reserve(r, s, 1, MiB) != 0)
            _exit(3);
        vgpu_region_release(r, s, 1);
        struct gs_region *shm = vgpu_region_shm(r);
        shm->lock.__data.__kind = 0x7fff; /* not a mutex type glibc knows */
        int rc = vgpu_region_reserve(r, s, 1, MiB);
        _exit(rc < 0 && rc != -ENOMEM ? 0 : 4);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "a lock that fails with an error other than EOWNERDEAD refuses the reservation "
       "(status 0x%x)",
       st);
    unlink(pl);
}

static void test_layout(void)
{
    int fd = open(path, O_RDONLY);
    struct gs_region *ro = mmap(NULL, sizeof(*ro), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    ok(ro != MAP_FAILED, "read-only mapping (monitor view)");
    is_uint(ro->magic, GS_REGION_MAGIC, "magic");
    is_uint(ro->version, GS_REGION_VERSION, "version");
    is_uint(ro->size, sizeof(struct gs_region), "size");
    is_str(ro->devices[0].uuid, UUID, "device keyed by UUID");
    is_uint(atomic_load(&ro->devices[0].memory_limit), 4096 * MiB, "limit published");
    is_uint(atomic_load(&ro->devices[0].cores), 30, "cores published");
    munmap(ro, sizeof(*ro));
}

int main(void)
{
    tap_plan_auto();
    snprintf(path, sizeof(path), "/tmp/gs-region-test-%d", (int)getpid());
    unlink(path);
    struct vgpu_region *r = vgpu_region_open(path);
    ok(r != NULL, "region created");
    if (!r)
        return tap_done();
    int slot = vgpu_region_device(r, UUID, 4096 * MiB, 30);
    is_int(slot, 0, "first device gets slot 0");
    is_int(vgpu_region_device(r, UUID, 4096 * MiB, 30), 0, "same UUID, same slot");
    test_boundary(r, slot);
    test_sweep(r, slot);
    test_dead_lock_owner(r, slot);
    test_sweep_slot_reused_same_tick(r, slot);
    test_sweep_many_dead(r, slot);
    test_sweep_waits_for_driver(r, slot);
    test_sweep_unknown_start(r, slot);
    test_slot_taken_over(r, slot);
    test_dead_owner_mid_reserve(r, slot);
    test_normal_exit(r, slot);
    test_fail_closed();
    test_stalled_initialiser();
    test_lock_error();
    test_layout();
    unlink(path);
    return tap_done();
}
