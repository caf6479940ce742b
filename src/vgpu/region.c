/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The claim's shared region (layout: include/gpuslice/shared_region.h): mapping, initialisation,
 * process slots, atomic reservation under a robust process-shared mutex, dead-process sweep.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "vgpu/vgpu-internal.h"

#define MAX_REGIONS 8
#define SWEEP_BATCH 64 /* dead slots judged per driver listing */

struct vgpu_region {
    char path[GS_LIMITS_PATH_MAX]; /* "" = process-private */
    struct gs_region *shm;
    bool refuse;   /* fail closed: the region could not be used; every charge refused */
    bool prepared; /* a claim's region (limits file): never created or re-initialised
                    * from nothing by libvgpu, its file identity watched */
    uint64_t file_dev, file_ino; /* identity of the mapped file (0: private) */
    uint64_t checked_ns;         /* last identity check */
    int proc;                    /* our slot, -1 until the first charge */
    pid_t owner_pid;             /* process that claimed `proc` (fork detection) */
    uint64_t owner_start;        /* start time written into the slot with owner_pid */
};

static struct vgpu_region regions[MAX_REGIONS];
static int n_regions;
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t self_start, self_pidns;
static pid_t cached_pid; /* getpid() is a syscall; reset in the child after fork */

static pid_t self_pid(void)
{
    pid_t p = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);
    if (GS_UNLIKELY(!p)) {
        p = getpid();
        __atomic_store_n(&cached_pid, p, __ATOMIC_RELAXED);
    }
    return p;
}

static void init_mutex(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

static void init_header(struct gs_region *r, uint64_t dev, uint64_t ino)
{
    memset(r, 0, sizeof(*r));
    r->file_dev = dev;
    r->file_ino = ino;
    r->magic = GS_REGION_MAGIC;
    r->version = GS_REGION_VERSION;
    r->size = sizeof(*r);
    init_mutex(&r->lock);
    atomic_store(&r->init_state, GS_REGION_READY);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Take the file's flock within the initialisation timeout (a stalled initialiser makes us fail
 * closed, never re-initialise under it). */
static bool flock_bounded(int fd)
{
    uint64_t deadline = vgpu_now_ns() + GS_REGION_INIT_TIMEOUT_MS * 1000000ULL;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return false;
        if (vgpu_now_ns() >= deadline)
            return false;
        sleep_ms(1);
    }
}

/*
 * Map the region file, initialising it if nobody has: the whole initialisation (size, header,
 * lock) happens under an exclusive flock(2) of the file, which the kernel releases if the
 * initialiser dies, and a region found READY is never initialised again — so a stalled
 * initialiser can never wipe accounting that others wrote after it. NULL on any failure (the
 * caller fails closed).
 */
static struct gs_region *map_file(const char *path, bool prepared, struct stat *id)
{
    /* A claim's region is created (sized, header marked) by whoever prepared the claim (the
     * kubelet plugin, `gpuslice run`): missing, it was removed or renamed; size 0, truncated;
     * zero-filled without the mark, truncated and extended again. Each fails closed: a fresh
     * region would give the next process the whole limit again. */
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (prepared ? 0 : O_CREAT), 0666);
    if (fd < 0) {
        VLOG(VGPU_LOG_ERROR, "region %s: cannot open: %s%s", path, strerror(errno),
             prepared && errno == ENOENT ? " (removed or renamed?)" : "");
        return NULL;
    }
    fchmod(fd, 0666); /* processes of other containers/users of the claim share it */
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return NULL;
    }
    bool locked = false;
    if (st.st_size == 0 && prepared) {
        VLOG(VGPU_LOG_ERROR, "region %s: empty (truncated?)", path);
        close(fd);
        return NULL;
    }
    if (st.st_size == 0) {
        /* new file: size it under the flock (two creators must not both initialise) */
        if (!flock_bounded(fd)) {
            VLOG(VGPU_LOG_ERROR, "region %s: cannot lock for initialisation: %s", path,
                 strerror(errno));
            close(fd);
            return NULL;
        }
        locked = true;
        if (fstat(fd, &st) < 0 ||
            (st.st_size == 0 && ftruncate(fd, sizeof(struct gs_region)) < 0)) {
            VLOG(VGPU_LOG_ERROR, "region %s: cannot size: %s", path, strerror(errno));
            close(fd);
            return NULL;
        }
        st.st_size = sizeof(struct gs_region);
    }
    if (st.st_size != (off_t)sizeof(struct gs_region)) {
        VLOG(VGPU_LOG_ERROR, "region %s: size %lld is not %zu (other version?)", path,
             (long long)st.st_size, sizeof(struct gs_region));
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, sizeof(struct gs_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        VLOG(VGPU_LOG_ERROR, "region %s: mmap: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    struct gs_region *r = p;
    if (atomic_load(&r->init_state) != GS_REGION_READY) {
        if (!locked && !flock_bounded(fd)) {
            VLOG(VGPU_LOG_ERROR, "region %s: initialisation did not finish in %d ms", path,
                 GS_REGION_INIT_TIMEOUT_MS);
            munmap(p, sizeof(struct gs_region));
            close(fd);
            return NULL;
        }
        locked = true;
        /* under the flock: READY means someone finished; anything else was cut short by a
         * death (the flock was released) and nobody can have accounted into it yet */
        if (atomic_load(&r->init_state) != GS_REGION_READY) {
            if (prepared && r->magic != GS_REGION_MAGIC) {
                VLOG(VGPU_LOG_ERROR, "region %s: not prepared (zero-filled: truncated?)", path);
                flock(fd, LOCK_UN);
                munmap(p, sizeof(struct gs_region));
                close(fd);
                return NULL;
            }
            init_header(r, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
        }
    }
    if (locked)
        flock(fd, LOCK_UN);
    close(fd);
    if (r->magic != GS_REGION_MAGIC || r->version != GS_REGION_VERSION ||
        r->size != sizeof(struct gs_region)) {
        VLOG(VGPU_LOG_ERROR, "region %s: bad magic/version/size (version %u)", path, r->version);
        munmap(p, sizeof(struct gs_region));
        return NULL;
    }
    /* The file its initialiser mapped, or a copy put in its place (whose books start over)? */
    if (r->file_ino && (r->file_dev != (uint64_t)st.st_dev || r->file_ino != (uint64_t)st.st_ino)) {
        VLOG(VGPU_LOG_ERROR, "region %s: not the file it was created as (replaced?)", path);
        munmap(p, sizeof(struct gs_region));
        return NULL;
    }
    *id = st;
    return r;
}

static struct gs_region *map_private(void)
{
    void *p = mmap(NULL, sizeof(struct gs_region), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    init_header(p, 0, 0);
    return p;
}

static struct vgpu_region *region_open(const char *path, bool prepared)
{
    pthread_mutex_lock(&regions_lock);
    if (!self_start) {
        self_start = vgpu_proc_start_time(getpid());
        self_pidns = vgpu_self_pidns();
    }
    for (int i = 0; i < n_regions; i++) {
        if (strcmp(regions[i].path, path) == 0) {
            pthread_mutex_unlock(&regions_lock);
            return &regions[i];
        }
    }
    struct vgpu_region *res = NULL;
    if (n_regions < MAX_REGIONS) {
        struct stat id = {0};
        struct gs_region *shm = path[0] ? map_file(path, prepared, &id) : map_private();
        bool refuse = false;
        if (!shm && path[0]) {
            /* Fail closed: a claim's region that cannot be used refuses every allocation on
             * the devices that use it (a private region would let each process have the whole
             * limit). */
            VLOG(VGPU_LOG_ERROR, "region %s unusable: allocations on its devices are refused",
                 path);
            refuse = true;
        }
        if (shm || refuse) {
            res = &regions[n_regions++];
            snprintf(res->path, sizeof(res->path), "%s", path);
            res->shm = shm;
            res->proc = -1;
            res->refuse = refuse;
            res->prepared = prepared;
            res->file_dev = (uint64_t)id.st_dev;
            res->file_ino = (uint64_t)id.st_ino;
            res->checked_ns = vgpu_now_ns();
        }
    }
    pthread_mutex_unlock(&regions_lock);
    return res;
}

struct vgpu_region *vgpu_region_open(const char *path)
{
    return region_open(path, false);
}

struct vgpu_region *vgpu_region_open_prepared(const char *path)
{
    return region_open(path, true);
}

/* A claim's region file must stay the one this process mapped: removed, renamed, replaced or
 * truncated, the books others read are no longer ours: fail closed (every later charge is
 * refused). At most once a second per process. */
static void check_identity(struct vgpu_region *vr)
{
    if (!vr->prepared || !vr->path[0] || __atomic_load_n(&vr->refuse, __ATOMIC_RELAXED))
        return;
    uint64_t now = vgpu_now_ns();
    if (now - vr->checked_ns < GS_REGION_SWEEP_INTERVAL_MS * 1000000ULL)
        return;
    vr->checked_ns = now;
    struct stat st;
    const char *why = NULL;
    if (stat(vr->path, &st) < 0)
        why = "removed or renamed";
    else if ((uint64_t)st.st_dev != vr->file_dev || (uint64_t)st.st_ino != vr->file_ino)
        why = "replaced";
    else if (st.st_size != (off_t)sizeof(struct gs_region))
        why = "truncated";
    if (why) {
        VLOG(VGPU_LOG_ERROR, "region %s: %s; allocations on its devices are refused", vr->path,
             why);
        __atomic_store_n(&vr->refuse, true, __ATOMIC_RELAXED);
    }
}

static struct vgpu_region refusing_region;
static pthread_once_t refusing_once = PTHREAD_ONCE_INIT;

static void refusing_init(void)
{
    snprintf(refusing_region.path, sizeof(refusing_region.path), "(refusing)");
    refusing_region.shm = NULL; /* never mapped: every accessor checks `refuse` first */
    refusing_region.proc = -1;
    refusing_region.refuse = true;
}

struct vgpu_region *vgpu_region_refusing(void)
{
    pthread_once(&refusing_once, refusing_init);
    return &refusing_region;
}

bool vgpu_region_refuses(const struct vgpu_region *r)
{
    return !r || r->refuse;
}

/* Every device's total recomputed from the live process slots (the lock is held, or unusable
 * by anyone). */
static void recompute_from_slots(struct gs_region *r)
{
    uint32_t nd = atomic_load(&r->n_devices);
    uint32_t np = atomic_load(&r->n_procs_hint);
    for (uint32_t d = 0; d < nd && d < GS_REGION_MAX_DEVICES; d++) {
        uint64_t sum = 0;
        for (uint32_t p = 0; p < np && p < GS_REGION_MAX_PROCS; p++)
            if (atomic_load(&r->procs[p].pid))
                sum = gs_sat_add_u64(sum, atomic_load(&r->procs[p].used[d]));
        atomic_store(&r->devices[d].used, sum);
    }
}

/* The lock is not recoverable (an owner died and whoever inherited it released it without
 * marking it consistent): every lock attempt fails at once, so nobody can change the books.
 * Under the file's flock (one recoverer at a time; the initialisation uses the same lock) and
 * only if it is still not recoverable: recompute the totals from the process slots, initialise
 * the mutex again, count it. 0 when the lock can be tried again. */
static int recover_lock(struct vgpu_region *vr)
{
    struct gs_region *r = vr->shm;
    if (!vr->path[0]) {
        /* a process-private region: nobody else can be using it */
        recompute_from_slots(r);
        init_mutex(&r->lock);
        atomic_fetch_add(&r->lock_recoveries, 1);
        return 0;
    }
    int fd = open(vr->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (!flock_bounded(fd)) {
        rc = -ETIMEDOUT;
    } else {
        int e = pthread_mutex_trylock(&r->lock);
        if (e == ENOTRECOVERABLE) {
            recompute_from_slots(r);
            init_mutex(&r->lock);
            atomic_fetch_add(&r->lock_recoveries, 1);
            VLOG(VGPU_LOG_ERROR,
                 "region %s: lock was not recoverable; re-initialised, usage recomputed from "
                 "the process slots",
                 vr->path);
        } else if (e == 0 || e == EOWNERDEAD) {
            /* recovered by another process meanwhile (or its new owner died): let go, and
             * take it the ordinary way */
            if (e == EOWNERDEAD) {
                recompute_from_slots(r);
                pthread_mutex_consistent(&r->lock);
            }
            pthread_mutex_unlock(&r->lock);
        }
        flock(fd, LOCK_UN);
    }
    close(fd);
    return rc;
}

/* Lock; on owner death recompute the device totals from the process slots; a lock that is not
 * recoverable is re-initialised from them (recover_lock). Returns 0, or a negative errno when
 * the lock cannot be had (any other error: a corrupted lock word): the caller must then not
 * touch the accounting (reservations are refused). */
static int region_lock(struct vgpu_region *vr)
{
    struct gs_region *r = vr->shm;
    int e = pthread_mutex_lock(&r->lock);
    for (int tries = 0; e == ENOTRECOVERABLE && tries < 3; tries++) {
        int rc = recover_lock(vr);
        if (rc < 0) {
            VLOG(VGPU_LOG_ERROR, "region: lock not recoverable and cannot be re-initialised: %s",
                 strerror(-rc));
            return -ENOTRECOVERABLE;
        }
        e = pthread_mutex_lock(&r->lock);
    }
    if (e == EOWNERDEAD) {
        recompute_from_slots(r);
        if (pthread_mutex_consistent(&r->lock) != 0) {
            pthread_mutex_unlock(&r->lock);
            VLOG(VGPU_LOG_ERROR, "region: lock owner died and the lock cannot be recovered");
            return -ENOTRECOVERABLE;
        }
        VLOG(VGPU_LOG_WARN, "region: lock owner died; usage recomputed from process slots");
        return 0;
    }
    if (e != 0) {
        VLOG(VGPU_LOG_ERROR, "region: lock failed: %s; allocations refused", strerror(e));
        return -e;
    }
    return 0;
}

static void region_unlock(struct gs_region *r)
{
    pthread_mutex_unlock(&r->lock);
}

int vgpu_region_device(struct vgpu_region *vr, const char *uuid, uint64_t limit, uint32_t cores)
{
    struct gs_region *r = vr->shm;
    int slot = -1;
    if (vr->refuse || region_lock(vr) < 0)
        return -1;
    uint32_t nd = atomic_load(&r->n_devices);
    for (uint32_t d = 0; d < nd && d < GS_REGION_MAX_DEVICES; d++)
        if (strncmp(r->devices[d].uuid, uuid, GS_REGION_UUID_MAX) == 0)
            slot = (int)d;
    if (slot < 0 && nd < GS_REGION_MAX_DEVICES) {
        slot = (int)nd;
        struct gs_region_device *d = &r->devices[slot];
        snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
        atomic_store(&d->budget_ns, 0); /* starts empty: no burst above the cap at start */
        atomic_store(&d->refill_ns, vgpu_now_ns());
        atomic_store(&r->n_devices, nd + 1);
    }
    if (slot >= 0) {
        atomic_store(&r->devices[slot].memory_limit, limit);
        atomic_store(&r->devices[slot].cores, cores);
    }
    region_unlock(r);
    return slot;
}

struct gs_region *vgpu_region_shm(struct vgpu_region *r)
{
    return r->shm;
}

struct gs_region_device *vgpu_region_dev(struct vgpu_region *r, int slot)
{
    static struct gs_region_device none; /* a refused device's counters go nowhere */
    if (r->refuse || slot < 0 || slot >= GS_REGION_MAX_DEVICES)
        return &none;
    return &r->shm->devices[slot];
}

/* Does our slot still carry our identity? A slot is only ever taken from a process that is
 * gone, so this is a defence: if it ever fails we must neither charge into nor give back from
 * what is now another process's slot. */
static bool slot_is_ours(const struct gs_region *r, const struct vgpu_region *vr, pid_t pid)
{
    const struct gs_region_proc *s = &r->procs[vr->proc];
    return atomic_load(&s->pid) == pid && atomic_load(&s->start_time) == vr->owner_start;
}

/* Our process slot; claims one (under the lock, which the caller holds) if needed. */
static int own_slot_locked(struct vgpu_region *vr)
{
    struct gs_region *r = vr->shm;
    pid_t pid = self_pid();
    if (GS_LIKELY(vr->proc >= 0 && vr->owner_pid == pid)) {
        if (GS_LIKELY(slot_is_ours(r, vr, pid)))
            return vr->proc;
        VLOG(VGPU_LOG_ERROR, "region %s: process slot %d no longer ours; claiming another",
             vr->path[0] ? vr->path : "(process)", vr->proc);
        vr->proc = -1;
    }
    if (vr->owner_pid != pid || !self_start) {
        /* after fork: the child starts with nothing charged; a start time that could not be
         * read before is tried again (0 = unknown: the slot is then swept only once the pid is
         * gone, never on a start-time mismatch) */
        vr->proc = -1;
        self_start = vgpu_proc_start_time(pid);
    }
    for (int p = 0; p < GS_REGION_MAX_PROCS; p++) {
        if (atomic_load(&r->procs[p].pid) == 0) {
            struct gs_region_proc *s = &r->procs[p];
            for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
                atomic_store(&s->used[d], 0);
            atomic_store(&s->start_time, self_start);
            atomic_store(&s->pidns, self_pidns);
            atomic_store(&s->pid, pid);
            if ((uint32_t)p + 1 > atomic_load(&r->n_procs_hint))
                atomic_store(&r->n_procs_hint, (uint32_t)p + 1);
            atomic_fetch_add(&r->generation, 1);
            vr->proc = p;
            vr->owner_pid = pid;
            vr->owner_start = self_start;
            return p;
        }
    }
    return -1;
}

/* One consistent reading of a slot's identity, taken without the lock: the pid is read before
 * and after the rest (a slot is claimed by writing start time and namespace first, pid last,
 * and freed by writing pid 0), so a slot freed and re-claimed meanwhile is not mixed up. */
struct slot_id {
    int pid;
    uint64_t start, pidns;
};

static bool slot_read_id(const struct gs_region_proc *s, struct slot_id *id)
{
    id->pid = atomic_load(&s->pid);
    if (id->pid == 0)
        return false;
    id->start = atomic_load(&s->start_time);
    id->pidns = atomic_load(&s->pidns);
    return atomic_load(&s->pid) == id->pid;
}

static bool slot_has_id(const struct gs_region_proc *s, const struct slot_id *id)
{
    return atomic_load(&s->pid) == id->pid && atomic_load(&s->start_time) == id->start &&
           atomic_load(&s->pidns) == id->pidns;
}

/* Is the process of `id` certainly gone? Only a definite answer counts: the pid does not exist,
 * is a zombie, or now belongs to a process with another start time. Anything unknown (another
 * pid namespace, /proc unreadable, start time never recorded) keeps the slot. */
static bool proc_dead(const struct slot_id *id)
{
    if (id->pidns != self_pidns)
        return false; /* another container's process: not ours to judge */
    if (kill(id->pid, 0) < 0 && errno == ESRCH)
        return true;
    uint64_t st = 0;
    int e = gs_proc_start_time(id->pid, &st);
    if (e == -ESRCH)
        return true;
    if (e < 0)
        return false;
    if (!st)
        st = 1; /* as vgpu_proc_start_time() records it */
    return id->start != 0 && st != id->start;
}

static vgpu_driver_holds_fn driver_holds;

void vgpu_region_set_driver_check(vgpu_driver_holds_fn fn)
{
    driver_holds = fn;
}

/* Judge one batch of candidate slots [*from, np) and reclaim the dead ones the driver no longer
 * holds memory for. Advances *from past the slots judged. */
static int sweep_batch(struct vgpu_region *vr, uint32_t *from, uint32_t np)
{
    struct gs_region *r = vr->shm;
    /* Find candidates without the lock (reading /proc is slow), reclaim under it. */
    int dead[SWEEP_BATCH];
    struct slot_id ids[SWEEP_BATCH];
    int n_dead = 0;
    uint32_t p = *from;
    for (; p < np && p < GS_REGION_MAX_PROCS && n_dead < SWEEP_BATCH; p++) {
        if ((int)p == vr->proc && vr->owner_pid == self_pid())
            continue;
        struct slot_id id;
        if (slot_read_id(&r->procs[p], &id) && proc_dead(&id)) {
            dead[n_dead] = (int)p;
            ids[n_dead++] = id;
        }
    }
    *from = p;
    if (n_dead == 0)
        return 0;
    bool holds[SWEEP_BATCH] = {false};
    if (driver_holds) {
        int pids[SWEEP_BATCH];
        for (int i = 0; i < n_dead; i++)
            pids[i] = ids[i].pid;
        int e = driver_holds(pids, holds, n_dead);
        if (e < 0 && e != -ENOSYS)
            return 0; /* the driver could not answer now: keep every charge until it can */
        /* A listed pid that now belongs to another live process (pid reuse) is that process: the
         * driver has already let go of the dead one (a driver frees a process's memory before
         * its pid can be reused; gpusim reclaims it in the very listing call). */
        for (int i = 0; i < n_dead; i++) {
            uint64_t now_start = holds[i] ? vgpu_proc_start_time(pids[i]) : 0;
            if (now_start != 0 && now_start != ids[i].start)
                holds[i] = false;
        }
    }
    int reclaimed = 0;
    if (region_lock(vr) < 0)
        return 0;
    uint32_t nd = atomic_load(&r->n_devices);
    for (int i = 0; i < n_dead; i++) {
        struct gs_region_proc *s = &r->procs[dead[i]];
        /* The exact process judged dead, still in the slot? Another sweeper may have reclaimed
         * it and a new process claimed the slot meanwhile, possibly with the same start time
         * (clock ticks): only pid + start time + namespace together identify it. */
        if (!slot_has_id(s, &ids[i]))
            continue;
        if (holds[i])
            continue; /* the driver has not freed its memory yet: next sweep */
        for (uint32_t d = 0; d < nd && d < GS_REGION_MAX_DEVICES; d++) {
            uint64_t u = atomic_exchange(&s->used[d], 0);
            uint64_t cur = atomic_load(&r->devices[d].used);
            atomic_store(&r->devices[d].used, gs_sat_sub_u64(cur, u));
        }
        VLOG(VGPU_LOG_INFO, "region: reclaimed slot of dead process %d", ids[i].pid);
        atomic_store(&s->pid, 0);
        atomic_fetch_add(&r->generation, 1);
        reclaimed++;
    }
    region_unlock(r);
    return reclaimed;
}

int vgpu_region_sweep(struct vgpu_region *vr, enum vgpu_sweep_mode mode)
{
    struct gs_region *r = vr->shm;
    check_identity(vr);
    if (vr->refuse)
        return 0;
    uint64_t now = vgpu_now_ns();
    uint64_t last = atomic_load(&r->sweep_ns);
    uint64_t interval = mode == VGPU_SWEEP_PERIODIC ? GS_REGION_SWEEP_INTERVAL_MS * 1000000ULL
                        : mode == VGPU_SWEEP_OOM    ? 10000000ULL
                                                    : 0;
    if (mode != VGPU_SWEEP_FORCE && now - last < interval)
        return 0;
    if (!atomic_compare_exchange_strong(&r->sweep_ns, &last, now) && mode != VGPU_SWEEP_FORCE)
        return 0;
    if (!self_pidns)
        self_pidns = vgpu_self_pidns();
    /* Every slot, in batches (more dead processes than one batch are all reclaimed at once). */
    uint32_t np = atomic_load(&r->n_procs_hint);
    int reclaimed = 0;
    for (uint32_t from = 0; from < np && from < GS_REGION_MAX_PROCS;)
        reclaimed += sweep_batch(vr, &from, np);
    return reclaimed;
}

/* Observer of this process's usage (HAMi-core's region mirror, hami-region.c): called after the
 * lock is released with the process's new charge on the device. */
static vgpu_usage_hook_fn usage_hook;

void vgpu_region_set_usage_hook(vgpu_usage_hook_fn fn)
{
    __atomic_store_n(&usage_hook, fn, __ATOMIC_RELEASE);
}

static void notify_usage(struct gs_region *r, int slot, int p)
{
    vgpu_usage_hook_fn fn = __atomic_load_n(&usage_hook, __ATOMIC_ACQUIRE);
    if (GS_UNLIKELY(fn) && p >= 0)
        fn(r->devices[slot].uuid,
           atomic_load_explicit(&r->procs[p].used[slot], memory_order_relaxed));
}

int vgpu_region_reserve(struct vgpu_region *vr, int slot, uint64_t size, uint64_t limit)
{
    struct gs_region *r = vr->shm;
    int rc = 0;
    if (vr->refuse)
        return -EACCES; /* fail closed: this device's region is unusable */
    if ((rc = region_lock(vr)) < 0)
        return rc;
    int p = own_slot_locked(vr);
    struct gs_region_device *d = &r->devices[slot];
    uint64_t used = atomic_load(&d->used);
    uint64_t next = gs_sat_add_u64(used, size);
    if (p < 0) {
        rc = -ENOSPC;
    } else if (limit && next > limit) {
        rc = -ENOMEM;
    } else {
        /* under the lock: release stores suffice (readers load with acquire; no full fence) */
        atomic_store_explicit(&d->used, next, memory_order_release);
        struct gs_region_proc *s = &r->procs[p];
        atomic_store_explicit(
            &s->used[slot],
            gs_sat_add_u64(atomic_load_explicit(&s->used[slot], memory_order_relaxed), size),
            memory_order_release);
    }
    region_unlock(r);
    if (rc == 0)
        notify_usage(r, slot, p);
    return rc;
}

void vgpu_region_release(struct vgpu_region *vr, int slot, uint64_t size)
{
    struct gs_region *r = vr->shm;
    if (vr->refuse || region_lock(vr) < 0)
        return; /* nothing can be given back: the charge stays (never below the driver) */
    pid_t pid = self_pid();
    if (vr->proc >= 0 && vr->owner_pid == pid && slot_is_ours(r, vr, pid)) {
        struct gs_region_proc *s = &r->procs[vr->proc];
        uint64_t mine = atomic_load_explicit(&s->used[slot], memory_order_relaxed);
        uint64_t give = GS_MIN(mine, size); /* never below what we charged */
        atomic_store_explicit(&s->used[slot], mine - give, memory_order_release);
        struct gs_region_device *d = &r->devices[slot];
        atomic_store_explicit(
            &d->used, gs_sat_sub_u64(atomic_load_explicit(&d->used, memory_order_relaxed), give),
            memory_order_release);
        region_unlock(r);
        notify_usage(r, slot, vr->proc);
        return;
    }
    region_unlock(r);
}

uint64_t vgpu_region_used(struct vgpu_region *vr, int slot)
{
    if (vr->refuse || slot < 0 || slot >= GS_REGION_MAX_DEVICES)
        return UINT64_MAX; /* a refused device shows nothing free */
    return atomic_load_explicit(&vr->shm->devices[slot].used, memory_order_acquire);
}

void vgpu_region_atfork_child(void)
{
    /* Slots are re-claimed lazily: own_slot_locked() notices getpid() changed. The regions_lock
     * may have been held by another thread at fork time. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&regions_lock, &fresh, sizeof(fresh));
    cached_pid = 0;
}

/* Normal exit. A slot with nothing charged is freed now. One that still holds charges (the
 * program exits without freeing) is left to the dead-process sweep: the driver frees a
 * process's memory during its teardown, after this destructor, and giving the bytes back
 * before that would let another process be admitted into memory the driver still holds. */
__attribute__((destructor(60000))) static void region_exit(void)
{
    for (int i = 0; i < n_regions; i++) {
        struct vgpu_region *vr = &regions[i];
        if (vr->refuse || vr->proc < 0 || vr->owner_pid != self_pid())
            continue;
        struct gs_region *r = vr->shm;
        if (region_lock(vr) < 0)
            continue;
        bool ours = slot_is_ours(r, vr, self_pid());
        struct gs_region_proc *s = &r->procs[vr->proc];
        uint32_t nd = atomic_load(&r->n_devices);
        bool empty = true;
        for (uint32_t d = 0; d < nd && d < GS_REGION_MAX_DEVICES; d++)
            if (atomic_load(&s->used[d]))
                empty = false;
        if (ours && empty) {
            atomic_store(&s->pid, 0);
            atomic_fetch_add(&r->generation, 1);
            vr->proc = -1;
        }
        region_unlock(r);
    }
}

/* The claim's processes charged on device slot `slot`, read without the lock (slot_read_id /
 * slot_has_id: a slot freed or re-claimed while it was read is skipped, never mixed up). */
int vgpu_region_procs(struct vgpu_region *vr, int slot, struct vgpu_region_proc_view *out, int max)
{
    if (!vr || vr->refuse || !vr->shm || slot < 0 || slot >= GS_REGION_MAX_DEVICES)
        return 0;
    const struct gs_region *r = vr->shm;
    uint32_t hint = atomic_load(&r->n_procs_hint);
    int n = 0;
    for (uint32_t p = 0; p < hint && p < GS_REGION_MAX_PROCS && n < max; p++) {
        const struct gs_region_proc *s = &r->procs[p];
        struct slot_id id;
        if (!slot_read_id(s, &id))
            continue;
        uint64_t used = atomic_load(&s->used[slot]);
        if (!used || !slot_has_id(s, &id))
            continue;
        out[n].pid = id.pid;
        out[n].start_time = id.start;
        out[n].pidns = id.pidns;
        out[n].used = used;
        n++;
    }
    return n;
}
