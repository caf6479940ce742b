/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim cross-process state (see sim-state.h for layout, locking and liveness). */
#include "sim/sim-state.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/macros.h"

static_assert(sizeof(struct sim_interval) == 24, "sim_interval layout");
static_assert(sizeof(struct sim_proc) == 344, "sim_proc layout");
static_assert(offsetof(struct sim_shared, lock) == 128, "sim_shared.lock offset");
static_assert(offsetof(struct sim_shared, procs) == 192, "sim_shared.procs offset");
static_assert(SIM_MAX_PROCS % 64 == 0, "live bitmap");
static_assert(sizeof(pthread_mutex_t) <= 64, "mutex fits its pad");
static_assert(offsetof(struct sim_dev_state, ring) == 64, "sim_dev_state.ring offset");

#define SWEEP_PERIOD_NS 1000000000ull

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sim_state_path(const struct sim_config *cfg, char *buf, size_t len, struct gs_error *err)
{
    const char *env = getenv("GPUSIM_STATE");
    int n;
    if (env && *env) {
        n = snprintf(buf, len, "%s", env);
    } else {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        struct stat sb;
        if (rt && *rt && stat(rt, &sb) == 0 && S_ISDIR(sb.st_mode) && access(rt, W_OK) == 0)
            n = snprintf(buf, len, "%s/gpusim-%s.state", rt, cfg->key);
        else
            n = snprintf(buf, len, "/tmp/gpusim-%u-%s.state", (unsigned int)getuid(), cfg->key);
    }
    if (n < 0 || (size_t)n >= len)
        return gs_error_set(err, -ENAMETOOLONG, "GPUSIM_STATE: path longer than %zu characters",
                            len - 1);
    return 0;
}

/* ------------------------------------------------------------------ process identity */

static uint64_t pidns_of(const char *pid)
{
    char path[64];
    struct stat sb;
    snprintf(path, sizeof(path), "/proc/%s/ns/pid", pid);
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

static int byte_lock(int fd, int cmd, short type, off_t start, off_t len)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    int r = fcntl(fd, cmd, &fl);
    if (r < 0)
        return -errno;
    return cmd == F_OFD_GETLK ? fl.l_type : 0;
}

/* Alive while its byte lock is held (released by the kernel when the process dies, even by
 * SIGKILL, and at exec). A full check also catches a recycled pid in our namespace. */
static bool slot_alive(struct sim_state *st, int i, bool full)
{
    struct sim_proc *p = &st->sh->procs[i];
    int r = byte_lock(st->fd, F_OFD_GETLK, F_WRLCK, SIM_LOCK_BASE + i, 1);
    if (r == F_UNLCK)
        return false;
    if (full && p->pidns != 0 && p->pidns == st->pidns) {
        uint64_t t;
        if (gs_proc_start_time((pid_t)p->pid, &t) < 0 || t != p->start_time)
            return false;
    }
    return true;
}

/* A dead (or exiting) process's work that has not run yet is dropped, as the driver tears its
 * contexts down: its intervals at the end of each device's queue are cut at `now`. Work other
 * processes queued behind it keeps its place. */
static void drop_queued_work(struct sim_shared *sh, int slot, uint32_t pid, uint64_t now)
{
    for (uint32_t d = 0; d < sh->ndev && d < SIM_MAX_DEVICES; d++) {
        struct sim_dev_state *dv = &sh->dev[d];
        bool changed = false;
        for (int popped = 0; dv->ring_count > 0 && popped < SIM_RING - 1;) {
            struct sim_interval *e = &dv->ring[(dv->ring_count - 1) % SIM_RING];
            if (e->pid != pid || e->slot != (uint32_t)slot || e->end_ns <= now)
                break;
            changed = true;
            if (e->start_ns >= now) {
                dv->ring_count--;
                popped++;
                continue;
            }
            e->end_ns = now;
            break;
        }
        if (changed)
            dv->tail_ns = dv->ring_count ? dv->ring[(dv->ring_count - 1) % SIM_RING].end_ns : now;
    }
}

static void reclaim_slot(struct sim_shared *sh, int i)
{
    struct sim_proc *p = &sh->procs[i];
    drop_queued_work(sh, i, p->pid, sim_now_ns());
    for (uint32_t d = 0; d < sh->ndev && d < SIM_MAX_DEVICES; d++) {
        sh->dev[d].used_mem = gs_sat_sub_u64(sh->dev[d].used_mem, p->mem[d]);
        p->mem[d] = 0;
        p->ctx[d] = 0;
    }
    p->pid = 0;
    p->start_time = 0;
    p->pidns = 0;
    p->comm[0] = '\0';
    p->state = SIM_PROC_FREE;
    sh->live[i / 64] &= ~(1ull << (i % 64));
}

int sim_sweep_locked(struct sim_state *st, bool full)
{
    int n = 0;
    for (int w = 0; w < SIM_MAX_PROCS / 64; w++) {
        for (uint64_t bits = st->sh->live[w]; bits; bits &= bits - 1) {
            int i = w * 64 + __builtin_ctzll(bits);
            if (i == st->slot)
                continue;
            if (st->sh->procs[i].state != SIM_PROC_LIVE || !slot_alive(st, i, full)) {
                reclaim_slot(st->sh, i);
                n++;
            }
        }
    }
    if (full)
        st->sh->last_sweep_ns = sim_now_ns();
    return n;
}

int sim_sweep(struct sim_state *st)
{
    sim_lock(st);
    int n = sim_sweep_locked(st, true);
    sim_unlock(st);
    return n;
}

/* The previous owner died holding the lock: recompute what is derived, then sweep. */
static void repair_locked(struct sim_state *st)
{
    struct sim_shared *sh = st->sh;
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        uint64_t bit = 1ull << (i % 64);
        if (sh->procs[i].state == SIM_PROC_LIVE)
            sh->live[i / 64] |= bit;
        else
            sh->live[i / 64] &= ~bit;
    }
    for (uint32_t d = 0; d < sh->ndev && d < SIM_MAX_DEVICES; d++) {
        uint64_t sum = 0;
        for (int i = 0; i < SIM_MAX_PROCS; i++)
            if (sh->procs[i].state == SIM_PROC_LIVE)
                sum = gs_sat_add_u64(sum, sh->procs[i].mem[d]);
        sh->dev[d].used_mem = sum;
    }
    sim_sweep_locked(st, true);
}

void sim_lock(struct sim_state *st)
{
    int r = pthread_mutex_lock(&st->sh->lock);
    if (GS_UNLIKELY(r == EOWNERDEAD)) {
        repair_locked(st);
        pthread_mutex_consistent(&st->sh->lock);
    }
}

void sim_unlock(struct sim_state *st)
{
    pthread_mutex_unlock(&st->sh->lock);
}

/* ------------------------------------------------------------------ open / init */
static int init_shared(int fd, const struct sim_config *cfg, struct sim_shared **out,
                       struct gs_error *err, const char *path)
{
    size_t size = sizeof(struct sim_shared);
    if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0)
        return gs_error_set(err, -errno, "GPUSIM_STATE=%s: cannot size the file: %s", path,
                            strerror(errno));
    struct sim_shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED)
        return gs_error_set(err, -errno, "GPUSIM_STATE=%s: mmap: %s", path, strerror(errno));
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&sh->lock, &a);
    pthread_mutexattr_destroy(&a);
    sh->version = SIM_STATE_VERSION;
    sh->ndev = (uint32_t)cfg->ndev;
    sh->file_size = size;
    sh->config_hash = cfg->hash;
    for (int d = 0; d < cfg->ndev; d++)
        sh->dev[d].total_mem = cfg->dev[d].total_mem;
    __atomic_store_n(&sh->magic, SIM_STATE_MAGIC, __ATOMIC_RELEASE);
    *out = sh;
    return 0;
}

/* Byte SIM_LOCK_BASE - 1: every process that has the file open (NVML readers included) holds a
 * shared lock on it; bytes SIM_LOCK_BASE + slot: the registered processes. If we can write-lock
 * them all, nobody has the file mapped and it may be re-initialised. */
#define USERS_BYTE (SIM_LOCK_BASE - 1)

static bool nobody_uses(int fd)
{
    if (byte_lock(fd, F_OFD_SETLK, F_WRLCK, USERS_BYTE, SIM_MAX_PROCS + 1) < 0)
        return false;
    byte_lock(fd, F_OFD_SETLK, F_UNLCK, USERS_BYTE, SIM_MAX_PROCS + 1);
    return true;
}

int sim_state_open(const struct sim_config *cfg, struct sim_state **out, struct gs_error *err)
{
    struct sim_state *st = calloc(1, sizeof(*st));
    if (!st)
        return gs_error_set(err, -ENOMEM, "out of memory");
    st->fd = -1;
    st->slot = -1;
    st->ndev = cfg->ndev;
    int r = sim_state_path(cfg, st->path, sizeof(st->path), err);
    if (r < 0)
        goto fail;
    /* Like /dev/nvidia*: every user of the machine may use the simulated GPUs. */
    st->fd = open(st->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (st->fd >= 0)
        (void)fchmod(st->fd, 0666);
    else if (errno == EEXIST)
        st->fd = open(st->path, O_RDWR | O_CLOEXEC);
    if (st->fd < 0) {
        r = gs_error_set(err, -errno, "GPUSIM_STATE=%s: %s", st->path, strerror(errno));
        goto fail;
    }
    if (flock(st->fd, LOCK_EX) < 0) {
        r = gs_error_set(err, -errno, "GPUSIM_STATE=%s: flock: %s", st->path, strerror(errno));
        goto fail;
    }
    struct stat sb;
    if (fstat(st->fd, &sb) < 0) {
        r = gs_error_set(err, -errno, "GPUSIM_STATE=%s: %s", st->path, strerror(errno));
        goto unlock_fail;
    }
    size_t size = sizeof(struct sim_shared);
    bool fresh = true;
    if ((size_t)sb.st_size == size) {
        struct sim_shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, 0);
        if (sh == MAP_FAILED) {
            r = gs_error_set(err, -errno, "GPUSIM_STATE=%s: mmap: %s", st->path, strerror(errno));
            goto unlock_fail;
        }
        if (sh->magic == SIM_STATE_MAGIC && sh->version == SIM_STATE_VERSION &&
            sh->file_size == size && sh->config_hash == cfg->hash &&
            sh->ndev == (uint32_t)cfg->ndev) {
            st->sh = sh;
            fresh = false;
        } else {
            munmap(sh, size);
        }
    }
    if (fresh) {
        if (sb.st_size != 0 && !nobody_uses(st->fd)) {
            r = gs_error_set(err, -EBUSY,
                             "GPUSIM_STATE=%s: in use by processes simulating another machine "
                             "(or another gpusim version); set GPUSIM_STATE to another file",
                             st->path);
            goto unlock_fail;
        }
        if ((r = init_shared(st->fd, cfg, &st->sh, err, st->path)) < 0)
            goto unlock_fail;
    }
    /* We use it from now on: nobody may re-initialise it under our mapping. */
    if (byte_lock(st->fd, F_OFD_SETLK, F_RDLCK, USERS_BYTE, 1) < 0) {
        r = gs_error_set(err, -errno, "GPUSIM_STATE=%s: cannot lock: %s", st->path,
                         strerror(errno));
        munmap(st->sh, sizeof(struct sim_shared));
        st->sh = NULL;
        goto unlock_fail;
    }
    flock(st->fd, LOCK_UN);
    char self[16];
    snprintf(self, sizeof(self), "self");
    st->pidns = pidns_of(self);
    *out = st;
    return 0;

unlock_fail:
    flock(st->fd, LOCK_UN);
fail:
    if (st->fd >= 0)
        close(st->fd);
    free(st);
    return r;
}

void sim_state_forget(struct sim_state *st)
{
    if (!st)
        return;
    /* The mapping and the descriptor are the parent's as well: only drop our references. */
    st->slot = -1;
}

static void unregister(struct sim_state *st)
{
    if (st->slot < 0)
        return;
    sim_lock(st);
    struct sim_proc *p = &st->sh->procs[st->slot];
    if (p->state == SIM_PROC_LIVE && p->pid == st->pid)
        reclaim_slot(st->sh, st->slot);
    sim_unlock(st);
    byte_lock(st->fd, F_OFD_SETLK, F_UNLCK, SIM_LOCK_BASE + st->slot, 1);
    st->slot = -1;
}

void sim_state_close(struct sim_state *st)
{
    if (!st)
        return;
    unregister(st);
    if (st->sh)
        munmap(st->sh, sizeof(struct sim_shared));
    if (st->fd >= 0)
        close(st->fd);
    free(st);
}

int sim_proc_register(struct sim_state *st, struct gs_error *err)
{
    if (st->slot >= 0)
        return 0;
    uint32_t pid = (uint32_t)getpid();
    uint64_t start = 0;
    gs_proc_start_time((pid_t)pid, &start);
    char comm[SIM_COMM_MAX];
    ssize_t n = readlink("/proc/self/exe", comm, sizeof(comm) - 1);
    comm[n > 0 ? n : 0] = '\0';

    sim_lock(st);
    int slot = -1;
    for (int pass = 0; pass < 2 && slot < 0; pass++) {
        if (pass == 1)
            sim_sweep_locked(st, true);
        for (int i = 0; i < SIM_MAX_PROCS && slot < 0; i++) {
            /* A slot just freed by an exiting process may still have its byte lock for a
             * moment: take the first free slot whose lock we get. */
            if (st->sh->procs[i].state == SIM_PROC_FREE &&
                byte_lock(st->fd, F_OFD_SETLK, F_WRLCK, SIM_LOCK_BASE + i, 1) == 0)
                slot = i;
        }
    }
    if (slot < 0) {
        sim_unlock(st);
        return gs_error_set(err, -EAGAIN, "GPUSIM_STATE=%s: all %d process slots are in use",
                            st->path, SIM_MAX_PROCS);
    }
    struct sim_proc *p = &st->sh->procs[slot];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->start_time = start;
    p->pidns = st->pidns;
    memcpy(p->comm, comm, sizeof(p->comm));
    p->state = SIM_PROC_LIVE;
    st->sh->live[slot / 64] |= 1ull << (slot % 64);
    sim_unlock(st);
    st->slot = slot;
    st->pid = pid;
    return 0;
}

/* ------------------------------------------------------------------ memory */
int sim_mem_charge(struct sim_state *st, int dev, uint64_t bytes)
{
    if (st->slot < 0 || dev < 0 || dev >= st->ndev)
        return -EINVAL;
    sim_lock(st);
    struct sim_shared *sh = st->sh;
    struct sim_dev_state *d = &sh->dev[dev];
    uint64_t now = sim_now_ns();
    if (now - sh->last_sweep_ns > SWEEP_PERIOD_NS ||
        gs_sat_add_u64(d->used_mem, bytes) > d->total_mem)
        sim_sweep_locked(st, true);
    if (gs_sat_add_u64(d->used_mem, bytes) > d->total_mem) {
        sim_unlock(st);
        return -ENOMEM;
    }
    d->used_mem += bytes;
    if (d->used_mem > d->peak_mem)
        d->peak_mem = d->used_mem;
    sh->procs[st->slot].mem[dev] += bytes;
    sim_unlock(st);
    return 0;
}

void sim_mem_uncharge(struct sim_state *st, int dev, uint64_t bytes)
{
    if (st->slot < 0 || dev < 0 || dev >= st->ndev)
        return;
    sim_lock(st);
    struct sim_proc *p = &st->sh->procs[st->slot];
    uint64_t b = GS_MIN(bytes, p->mem[dev]);
    p->mem[dev] -= b;
    st->sh->dev[dev].used_mem = gs_sat_sub_u64(st->sh->dev[dev].used_mem, b);
    sim_unlock(st);
}

void sim_ctx_add(struct sim_state *st, int dev, int delta)
{
    if (st->slot < 0 || dev < 0 || dev >= st->ndev)
        return;
    sim_lock(st);
    uint32_t *c = &st->sh->procs[st->slot].ctx[dev];
    if (delta < 0)
        *c = *c >= (uint32_t)-delta ? *c - (uint32_t)-delta : 0;
    else
        *c += (uint32_t)delta;
    sim_unlock(st);
}

void sim_mem_info(struct sim_state *st, int dev, uint64_t *used, uint64_t *total)
{
    sim_lock(st);
    sim_sweep_locked(st, false);
    *used = st->sh->dev[dev].used_mem;
    *total = st->sh->dev[dev].total_mem;
    sim_unlock(st);
}

int sim_procs_on_device(struct sim_state *st, int dev, struct sim_proc_info *out, int max)
{
    int n = 0;
    sim_lock(st);
    /* Byte locks every time (a dead process disappears at once); start times at most every
     * 100 ms (the lock is shared with every launch). */
    sim_sweep_locked(st, sim_now_ns() - st->sh->last_sweep_ns > SWEEP_PERIOD_NS / 10);
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        const struct sim_proc *p = &st->sh->procs[i];
        if (p->state != SIM_PROC_LIVE || (p->ctx[dev] == 0 && p->mem[dev] == 0))
            continue;
        if (n < max) {
            out[n].pid = p->pid;
            out[n].mem = p->mem[dev];
            memcpy(out[n].comm, p->comm, sizeof(out[n].comm));
            out[n].comm[SIM_COMM_MAX - 1] = '\0';
        }
        n++;
    }
    sim_unlock(st);
    return n;
}

/* ------------------------------------------------------------------ timeline */
uint64_t sim_enqueue_locked(struct sim_state *st, int dev, uint64_t now, uint64_t not_before,
                            uint64_t cost_ns)
{
    struct sim_dev_state *d = &st->sh->dev[dev];
    uint64_t start = GS_MAX(now, GS_MAX(d->tail_ns, not_before));
    uint64_t end = gs_sat_add_u64(start, cost_ns);
    if (cost_ns == 0)
        return start;
    uint64_t c = d->ring_count;
    if (c > 0) {
        struct sim_interval *last = &d->ring[(c - 1) % SIM_RING];
        if (last->pid == st->pid && last->slot == (uint32_t)st->slot && last->end_ns == start) {
            last->end_ns = end;
            d->tail_ns = end;
            return end;
        }
    }
    struct sim_interval *e = &d->ring[c % SIM_RING];
    e->start_ns = start;
    e->end_ns = end;
    e->pid = st->pid;
    e->slot = (uint32_t)st->slot;
    d->ring_count = c + 1;
    d->tail_ns = end;
    return end;
}

static uint64_t overlap(const struct sim_interval *e, uint64_t a, uint64_t b)
{
    uint64_t s = GS_MAX(e->start_ns, a), t = GS_MIN(e->end_ns, b);
    return t > s ? t - s : 0;
}

uint64_t sim_busy_total_locked(struct sim_state *st, int dev, uint64_t a, uint64_t b,
                               bool *complete)
{
    const struct sim_dev_state *d = &st->sh->dev[dev];
    uint64_t c = d->ring_count, lo = c > SIM_RING ? c - SIM_RING : 0, sum = 0;
    bool done = false;
    for (uint64_t i = c; i > lo; i--) {
        const struct sim_interval *e = &d->ring[(i - 1) % SIM_RING];
        if (e->end_ns <= a) {
            done = true;
            break;
        }
        sum += overlap(e, a, b);
    }
    if (complete)
        *complete = done || lo == 0;
    return sum;
}

int sim_busy_by_pid_locked(struct sim_state *st, int dev, uint64_t a, uint64_t b,
                           struct sim_pid_busy *out, int max, bool *complete)
{
    const struct sim_dev_state *d = &st->sh->dev[dev];
    uint64_t c = d->ring_count, lo = c > SIM_RING ? c - SIM_RING : 0;
    int n = 0;
    bool done = false;
    for (uint64_t i = c; i > lo; i--) {
        const struct sim_interval *e = &d->ring[(i - 1) % SIM_RING];
        if (e->end_ns <= a) {
            done = true;
            break;
        }
        uint64_t o = overlap(e, a, b);
        if (o == 0)
            continue;
        /* One entry per process: pid and slot (processes in different pid namespaces can
         * share a pid number). */
        int k;
        for (k = 0; k < n; k++)
            if (out[k].pid == e->pid && out[k].slot == e->slot)
                break;
        if (k == n) {
            if (n == max)
                continue;
            out[n].pid = e->pid;
            out[n].slot = e->slot;
            out[n].busy_ns = 0;
            n++;
        }
        out[k].busy_ns += o;
    }
    if (complete)
        *complete = done || lo == 0;
    return n;
}
