/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compute QoS: which cap a launch obeys now (docs/internals/vgpu.md, "Compute QoS").
 *
 * The rules follow HAMi's vGPU monitor (Project-HAMi/HAMi cmd/vGPUmonitor/feedback.go, Observe
 * with CheckBlocking and CheckPriority), evaluated by each tenant for itself instead of by a node
 * daemon every 5 s:
 *  - a tenant is held (HAMi: recent_kernel = -1) while a tenant of higher priority (lower
 *    CUDA_TASK_PRIORITY number) has work pending on the GPU; held, it still gets
 *    VGPU_QOS_HOLD_FLOOR % of GPU time (or its cap if lower): never starved;
 *  - work-conserving: the cap applies (HAMi: utilization_switch = 1) while another tenant of the
 *    same or a higher priority has work pending, else the tenant may use the idle GPU;
 *  - hard: the cap always applies (HAMi-core with GPU_CORE_UTILIZATION_POLICY=force);
 *  - disabled: no cap (GPU_CORE_UTILIZATION_POLICY=disable).
 *
 * Trust: the tenant's own policy, priority and cap come from its read-only limits file (or the
 * environment at start-up). A co-tenant's priority and cap come from *its* limits file and its
 * pending work from *its* region, both under the read-only `peers` directory: a tenant can write
 * only its own region, so the most it can do is claim work pending that it does not have — which
 * only makes others obey their own caps (or, if the trusted file says it is high priority, hold
 * them as it may). Nothing it writes raises its own share or priority: no field of any region
 * is read back as policy or priority.
 */
#include "vgpu/qos.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/limits.h"
#include "vgpu/hami-region.h"
#include "vgpu/vgpu-internal.h"

#define MAX_PEERS 32

struct peer_map {
    void *base; /* whole region, PROT_READ */
};

struct qos_dev {
    pthread_mutex_t lock; /* scans and decisions (trylock on the launch path) */
    bool configured, fixed_peers;
    int policy, priority;
    char claim[GS_LIMITS_CLAIM_MAX];
    char peers_dir[GS_LIMITS_PATH_MAX];
    char uuid[GS_LIMITS_UUID_MAX];
    int n_peers;
    struct vgpu_qos_peer peers[MAX_PEERS];
    struct peer_map maps[MAX_PEERS];
    uint64_t scanned_ns;
    _Atomic uint64_t decided_ns;
    _Atomic uint64_t verdict;    /* cores | state << 32 */
    _Atomic uint64_t stamped_ns; /* our last pending_ns stamp (process-local) */
};

static struct qos_dev qs[GS_REGION_MAX_DEVICES] = {
    [0 ... GS_REGION_MAX_DEVICES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

static _Atomic uint64_t queue_tail[GS_REGION_MAX_DEVICES]; /* see vgpu_qos_queued */

static bool pending(const struct gs_region_device *d, uint64_t now)
{
    uint64_t p = atomic_load_explicit(&d->pending_ns, memory_order_relaxed);
    /* a stamp a little ahead of our clock read is a tenant that stamped after we read it */
    return p != 0 && (int64_t)(now - p) < (int64_t)GS_REGION_PENDING_WINDOW_NS;
}

struct vgpu_qos_verdict vgpu_qos_decide(int policy, int priority, uint32_t cores,
                                        const struct vgpu_qos_peer *peers, int n_peers,
                                        int hami_switch, uint64_t now)
{
    struct vgpu_qos_verdict v = {.cores = cores, .state = GS_REGION_QOS_STATE_CAPPED};
    if (policy == GS_POLICY_DISABLED || cores == 0 || cores >= 100)
        return (struct vgpu_qos_verdict){0, GS_REGION_QOS_STATE_FREE};
    bool higher = false, same = false;
    for (int i = 0; i < n_peers; i++) {
        const struct vgpu_qos_peer *p = &peers[i];
        if (!p->dev || !p->cores || !pending(p->dev, now))
            continue;
        if (p->priority < priority)
            higher = true;
        else if (p->priority == priority)
            same = true;
    }
    if (higher) {
        v.cores = GS_MIN(cores, VGPU_QOS_HOLD_FLOOR);
        v.state = GS_REGION_QOS_STATE_HELD;
        return v;
    }
    switch (policy) {
    case GS_POLICY_HARD:
        return v;
    case GS_POLICY_WORK_CONSERVING:
        if (!same)
            v = (struct vgpu_qos_verdict){0, GS_REGION_QOS_STATE_FREE};
        return v;
    default:
        /* unset: HAMi-core's meaning, the switch HAMi's vGPU monitor writes (1 = cap) */
        if (hami_switch == 0)
            v = (struct vgpu_qos_verdict){0, GS_REGION_QOS_STATE_FREE};
        return v;
    }
}

/* ------------------------------------------------------------------ configuration */

void vgpu_qos_configure(int dev, const struct vgpu_qos_self *self)
{
    if (dev < 0 || dev >= GS_REGION_MAX_DEVICES)
        return;
    struct qos_dev *q = &qs[dev];
    pthread_mutex_lock(&q->lock);
    q->policy = self->policy;
    q->priority = self->priority;
    snprintf(q->claim, sizeof(q->claim), "%s", self->claim ? self->claim : "");
    snprintf(q->peers_dir, sizeof(q->peers_dir), "%s", self->peers_dir ? self->peers_dir : "");
    snprintf(q->uuid, sizeof(q->uuid), "%s", self->uuid ? self->uuid : "");
    atomic_store(&q->decided_ns, 0);
    q->scanned_ns = 0;
    q->configured = true;
    pthread_mutex_unlock(&q->lock);
}

bool vgpu_qos_configured(int dev)
{
    return dev >= 0 && dev < GS_REGION_MAX_DEVICES && qs[dev].configured;
}

static void unmap_peers_locked(struct qos_dev *q)
{
    for (int i = 0; i < q->n_peers; i++) {
        if (q->maps[i].base)
            munmap(q->maps[i].base, sizeof(struct gs_region));
        q->maps[i].base = NULL;
    }
    q->n_peers = 0;
}

void vgpu_qos_set_peers(int dev, const struct vgpu_qos_peer *peers, int n)
{
    if (dev < 0 || dev >= GS_REGION_MAX_DEVICES)
        return;
    struct qos_dev *q = &qs[dev];
    pthread_mutex_lock(&q->lock);
    unmap_peers_locked(q);
    q->fixed_peers = peers != NULL;
    for (int i = 0; peers && i < n && i < MAX_PEERS; i++)
        q->peers[q->n_peers++] = peers[i];
    atomic_store(&q->decided_ns, 0);
    q->scanned_ns = 0;
    pthread_mutex_unlock(&q->lock);
}

void vgpu_qos_reset(void)
{
    for (int i = 0; i < GS_REGION_MAX_DEVICES; i++) {
        struct qos_dev *q = &qs[i];
        pthread_mutex_lock(&q->lock);
        unmap_peers_locked(q);
        q->configured = q->fixed_peers = false;
        q->scanned_ns = 0;
        atomic_store(&q->decided_ns, 0);
        atomic_store(&q->verdict, 0);
        atomic_store(&q->stamped_ns, 0);
        atomic_store(&queue_tail[i], 0);
        pthread_mutex_unlock(&q->lock);
    }
}

/* ------------------------------------------------------------------ peers */

/* Map a co-tenant's region read-only and find its slot for our GPU (NULL if absent/unusable). */
static const struct gs_region_device *map_peer(const char *path, const char *uuid, void **base)
{
    *base = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == sizeof(struct gs_region))
        m = mmap(NULL, sizeof(struct gs_region), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return NULL;
    const struct gs_region *r = m;
    uint32_t n = atomic_load_explicit(&r->n_devices, memory_order_acquire);
    if (r->magic != GS_REGION_MAGIC || r->version < 3 || r->size != sizeof(*r) ||
        atomic_load(&r->init_state) != GS_REGION_READY || n > GS_REGION_MAX_DEVICES) {
        munmap(m, sizeof(struct gs_region));
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (strncmp(r->devices[i].uuid, uuid, GS_REGION_UUID_MAX) == 0) {
            *base = m;
            return &r->devices[i];
        }
    }
    munmap(m, sizeof(struct gs_region));
    return NULL;
}

/* Re-read the peers directory: every other claim granted our GPU with a cap. A claim whose
 * region does not exist yet (no process started) has no work pending: skipped until the next
 * scan. Bounded: MAX_PEERS co-tenants. */
static void scan_locked(struct qos_dev *q)
{
    unmap_peers_locked(q);
    if (!q->peers_dir[0])
        return;
    DIR *dir = opendir(q->peers_dir);
    if (!dir)
        return;
    struct gs_limits *lim = malloc(sizeof(*lim));
    struct dirent *de;
    while (lim && (de = readdir(dir)) != NULL && q->n_peers < MAX_PEERS) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, q->claim) == 0)
            continue;
        char path[GS_LIMITS_PATH_MAX + 2 * 256];
        struct gs_error err = {0};
        struct stat st;
        /* the kubelet plugin's layout (<claim>/<claim>.limits, <claim>/region/region) or
         * `gpuslice run`'s (<claim>/limits/<claim>.limits, <claim>/region) */
        snprintf(path, sizeof(path), "%s/%s/%s%s", q->peers_dir, de->d_name, de->d_name,
                 GS_LIMITS_SUFFIX);
        if (stat(path, &st) != 0)
            snprintf(path, sizeof(path), "%s/%s/limits/%s%s", q->peers_dir, de->d_name, de->d_name,
                     GS_LIMITS_SUFFIX);
        if (gs_limits_read(path, lim, &err) < 0 || strcmp(lim->claim, q->claim) == 0)
            continue; /* a broken peer file: it gets the safe reading, we ignore it */
        const struct gs_limits_device *ld = gs_limits_find(lim, q->uuid);
        if (!ld || ld->cores == 0 || ld->cores >= 100 || lim->policy == GS_POLICY_DISABLED)
            continue; /* not on our GPU, or never publishes pending work */
        snprintf(path, sizeof(path), "%s/%s/region", q->peers_dir, de->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            snprintf(path, sizeof(path), "%s/%s/" GS_PEERS_REGION_SUBPATH, q->peers_dir,
                     de->d_name);
        void *base = NULL;
        const struct gs_region_device *rd = map_peer(path, q->uuid, &base);
        if (!rd)
            continue;
        int i = q->n_peers++;
        q->maps[i].base = base;
        q->peers[i] = (struct vgpu_qos_peer){
            .priority = lim->priority == GS_PRIORITY_UNSET ? GS_PRIORITY_DEFAULT : lim->priority,
            .cores = ld->cores,
            .dev = rd};
    }
    free(lim);
    closedir(dir);
}

/* ------------------------------------------------------------------ verdicts */

void vgpu_qos_pending(struct gs_region_device *rd, uint64_t now)
{
    /* never move a published stamp back (queued work may have put it ahead of now) */
    uint64_t p = atomic_load_explicit(&rd->pending_ns, memory_order_relaxed);
    if ((int64_t)(now - p) > 0)
        atomic_store_explicit(&rd->pending_ns, now, memory_order_relaxed);
}

/* Work queued on the GPU is pending too: a process that queues 16 kernels and then waits in a
 * synchronisation launches nothing for a while, yet its work is not done. Each process keeps the
 * time its known queue would drain if it had the GPU alone (the sum of its estimates; sharing
 * makes it drain later, which the pending window covers), at most VGPU_QOS_QUEUE_MAX_NS ahead
 * (estimates measured under contention run long: a larger lead would outlive the work), and
 * publishes it at most once per millisecond of change. */
void vgpu_qos_queued(int dev, struct gs_region_device *rd, uint64_t now, int64_t gpu_ns)
{
    if (dev < 0 || dev >= GS_REGION_MAX_DEVICES || gpu_ns <= 0)
        return;
    uint64_t t = atomic_load_explicit(&queue_tail[dev], memory_order_relaxed), n;
    do {
        n = ((int64_t)(t - now) > 0 ? t : now) + (uint64_t)gpu_ns;
        if ((int64_t)(n - now) > (int64_t)VGPU_QOS_QUEUE_MAX_NS)
            n = now + VGPU_QOS_QUEUE_MAX_NS;
    } while (!atomic_compare_exchange_weak_explicit(&queue_tail[dev], &t, n, memory_order_relaxed,
                                                    memory_order_relaxed));
    uint64_t p = atomic_load_explicit(&rd->pending_ns, memory_order_relaxed);
    if ((int64_t)(n - p) >= (int64_t)VGPU_QOS_DECIDE_NS)
        atomic_store_explicit(&rd->pending_ns, n, memory_order_relaxed);
}

static void publish(struct gs_region_device *rd, const struct qos_dev *q, uint32_t state)
{
    int prio = q->priority < 0 ? GS_PRIORITY_DEFAULT : q->priority;
    int pol = q->policy == GS_POLICY_UNSET ? GS_POLICY_HARD : q->policy;
    uint32_t word = GS_REGION_QOS(pol, prio, state);
    if (atomic_load_explicit(&rd->qos, memory_order_relaxed) != word)
        atomic_store_explicit(&rd->qos, word, memory_order_relaxed);
}

struct vgpu_qos_verdict vgpu_qos_verdict(int dev, struct gs_region_device *rd, uint32_t cores,
                                         uint64_t now)
{
    struct qos_dev *q = &qs[dev];
    uint64_t st = atomic_load_explicit(&q->stamped_ns, memory_order_relaxed);
    if (now - st >= VGPU_QOS_DECIDE_NS &&
        atomic_compare_exchange_strong_explicit(&q->stamped_ns, &st, now, memory_order_relaxed,
                                                memory_order_relaxed))
        vgpu_qos_pending(rd, now);

    uint64_t dn = atomic_load_explicit(&q->decided_ns, memory_order_relaxed);
    uint64_t cached = atomic_load_explicit(&q->verdict, memory_order_relaxed);
    if ((dn && now - dn < VGPU_QOS_DECIDE_NS) || pthread_mutex_trylock(&q->lock) != 0) {
        if (dn)
            return (struct vgpu_qos_verdict){(uint32_t)cached, (uint32_t)(cached >> 32)};
        pthread_mutex_lock(&q->lock); /* the very first verdict: wait for it */
    }
    if (!q->fixed_peers && (!q->scanned_ns || now - q->scanned_ns >= VGPU_QOS_SCAN_NS)) {
        scan_locked(q);
        q->scanned_ns = now ? now : 1;
    }
    int policy = q->configured ? q->policy : GS_POLICY_HARD;
    int hami_switch = vgpu_hami_switch();
    /* work-conserving needs to see its co-tenants: without a peers directory (or HAMi's
     * monitor) it cannot tell contention, and the cap applies */
    if (policy == GS_POLICY_WORK_CONSERVING && !q->peers_dir[0] && !q->fixed_peers)
        policy = hami_switch >= 0 ? GS_POLICY_UNSET : GS_POLICY_HARD;
    int priority = q->priority < 0 ? GS_PRIORITY_DEFAULT : q->priority;
    struct vgpu_qos_verdict v =
        vgpu_qos_decide(policy, priority, cores, q->peers, q->n_peers, hami_switch, now);
    atomic_store_explicit(&q->verdict, (uint64_t)v.cores | (uint64_t)v.state << 32,
                          memory_order_relaxed);
    atomic_store_explicit(&q->decided_ns, now ? now : 1, memory_order_relaxed);
    publish(rd, q, v.state);
    pthread_mutex_unlock(&q->lock);
    return v;
}
