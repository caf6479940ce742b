/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compute limiter: a token bucket of GPU time per device, shared by the claim's processes through
 * the region (struct gs_region_device: budget_ns, refill_ns). The bucket refills at cores% of
 * wall time; each launch is charged the GPU time its kernel occupies the device; launches wait
 * while the bucket is empty.
 *
 * GPU time is measured with events recorded around sampled launches on the launch's stream
 * (every launch of a kernel until it has GS_EST_WARM samples, then one in GS_EST_EVERY). The
 * estimate per (function, grid, block) is the minimum of the last 192..256 samples: a sample that
 * waited behind other processes' work on a time-sliced device is longer than the kernel, so the
 * shortest recent sample is the best estimate of the kernel itself. Every launch is charged the
 * estimate up front (gating stays immediate even for long asynchronous queues); launches of a
 * kernel not measured yet are charged when their measurement completes.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "vgpu/vgpu-internal.h"

#define EST_SLOTS    1024
#define PENDING_MAX  128
#define GS_EST_WARM  32
#define GS_EST_EVERY 4
#define WAIT_MIN_NS  20000LL
#define WAIT_MAX_NS  5000000LL

/* Windowed minimum: ns = min over the last (EST_WINDOWS-1)*EST_WINDOW..EST_WINDOWS*EST_WINDOW
 * samples, so kernels that waited behind another container's work (even for long phase-locked
 * stretches) do not inflate the estimate unless every recent sample did (the kernel really got
 * longer). */
#define EST_WINDOW  64
#define EST_WINDOWS 4

struct estimate {
    uint64_t key;
    int64_t ns;
    int64_t win_min[EST_WINDOWS]; /* win_min[cur] is being filled */
    uint32_t cur, cur_n;
    uint32_t samples;
    uint32_t since_sample;
};

struct pending {
    CUevent start, end;
    uint64_t key;
    int dev;
    int64_t charged;
};

static struct estimate est[EST_SLOTS];
static struct pending ring[PENDING_MAX];
static unsigned ring_head, ring_tail; /* tail - head = in flight */
static pthread_mutex_t lim_lock = PTHREAD_MUTEX_INITIALIZER;

static struct estimate *est_slot(uint64_t key)
{
    struct estimate *e = &est[(key * 0x9E3779B97F4A7C15ULL) >> 54];
    if (e->key != key) {
        memset(e, 0, sizeof(*e));
        e->key = key;
    }
    return e;
}

static void charge(struct vgpu_device *d, int64_t ns)
{
    if (ns <= 0)
        return;
    struct gs_region_device *rd = vgpu_region_dev(d->region, d->slot);
    atomic_fetch_sub(&rd->budget_ns, ns);
    atomic_fetch_add(&rd->busy_ns, (uint64_t)ns);
}

static void refill(struct gs_region_device *rd, uint32_t cores)
{
    uint64_t now = vgpu_now_ns();
    uint64_t last = atomic_load(&rd->refill_ns);
    if (now <= last || !atomic_compare_exchange_strong(&rd->refill_ns, &last, now))
        return;
    int64_t add = (int64_t)((now - last) * cores / 100);
    int64_t cap = GS_REGION_BURST_NS * (int64_t)cores / 100;
    int64_t b = atomic_load(&rd->budget_ns);
    for (;;) {
        int64_t nb = b + add;
        if (nb > cap)
            nb = b > cap ? b : cap;
        if (atomic_compare_exchange_weak(&rd->budget_ns, &b, nb))
            break;
    }
}

/* Consume completed measurements (caller holds lim_lock). */
static void poll_locked(void)
{
    while (ring_head != ring_tail) {
        struct pending *p = &ring[ring_head % PENDING_MAX];
        CUresult q = gs_real_cu.cuEventQuery(p->end);
        if (q == CUDA_ERROR_NOT_READY)
            break;
        float ms = 0;
        CUresult r = CUDA_ERROR_NOT_FOUND;
        if (q == CUDA_SUCCESS) {
            if (gs_real_cu.cuEventElapsedTime_v2)
                r = gs_real_cu.cuEventElapsedTime_v2(&ms, p->start, p->end);
            if (r != CUDA_SUCCESS && gs_real_cu.cuEventElapsedTime)
                r = gs_real_cu.cuEventElapsedTime(&ms, p->start, p->end);
        }
        if (r == CUDA_SUCCESS && ms >= 0) {
            int64_t ns = (int64_t)((double)ms * 1e6);
            struct estimate *e = est_slot(p->key);
            if (e->samples == 0)
                for (int w = 0; w < EST_WINDOWS; w++)
                    e->win_min[w] = INT64_MAX;
            if (ns < e->win_min[e->cur])
                e->win_min[e->cur] = ns;
            if (++e->cur_n >= EST_WINDOW) {
                e->cur = (e->cur + 1) % EST_WINDOWS;
                e->win_min[e->cur] = INT64_MAX;
                e->cur_n = 0;
            }
            e->ns = INT64_MAX;
            for (int w = 0; w < EST_WINDOWS; w++)
                e->ns = GS_MIN(e->ns, e->win_min[w]);
            e->samples++;
            VLOG(VGPU_LOG_DEBUG, "limiter: kernel %llx measured %lld ns, estimate %lld ns",
                 (unsigned long long)p->key, (long long)ns, (long long)e->ns);
            if (p->charged == 0) {
                struct vgpu_device *d = vgpu_device_at(p->dev);
                if (d && d->region)
                    charge(d, e->ns);
            }
        }
        gs_real_cu.cuEventDestroy_v2(p->start);
        gs_real_cu.cuEventDestroy_v2(p->end);
        ring_head++;
    }
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void gate(struct vgpu_device *d)
{
    struct gs_region_device *rd = vgpu_region_dev(d->region, d->slot);
    uint32_t cores = d->cfg.cores;
    for (;;) {
        refill(rd, cores);
        int64_t b = atomic_load(&rd->budget_ns);
        if (b > 0)
            return;
        int64_t wait = (-b) * 100 / cores + WAIT_MIN_NS;
        if (wait > WAIT_MAX_NS)
            wait = WAIT_MAX_NS;
        sleep_ns(wait);
        atomic_fetch_add(&rd->throttled_ns, (uint64_t)wait);
        if (pthread_mutex_trylock(&lim_lock) == 0) {
            poll_locked();
            pthread_mutex_unlock(&lim_lock);
        }
    }
}

void vgpu_limiter_before(struct vgpu_launch *l, uint64_t key, CUstream stream)
{
    memset(l, 0, sizeof(*l));
    struct vgpu_device *d = vgpu_device_current();
    if (!d || !d->cfg.cores || !d->region || !gs_real_cu.cuEventCreate ||
        !gs_real_cu.cuEventRecord || !gs_real_cu.cuEventQuery || !gs_real_cu.cuEventDestroy_v2)
        return;
    l->dev = d;
    l->key = key;
    l->stream = stream;

    /* Wait for budget first: the measurement must not include our own throttling. */
    gate(d);

    pthread_mutex_lock(&lim_lock);
    poll_locked();
    struct estimate *e = est_slot(key);
    if (e->samples == 0) {
        /* Not measured yet: wait for an in-flight measurement of this kernel, if any, so an
         * asynchronous queue of unknown kernels cannot run ahead of the budget. */
        for (unsigned i = ring_head; i != ring_tail; i++) {
            struct pending *p = &ring[i % PENDING_MAX];
            if (p->key == key && gs_real_cu.cuEventSynchronize) {
                CUevent ev = p->end;
                pthread_mutex_unlock(&lim_lock);
                gs_real_cu.cuEventSynchronize(ev);
                pthread_mutex_lock(&lim_lock);
                poll_locked();
                break;
            }
        }
        e = est_slot(key);
    }
    bool sample = e->samples < GS_EST_WARM || ++e->since_sample >= GS_EST_EVERY;
    int64_t pre = e->samples ? e->ns : 0;
    if (sample && ring_tail - ring_head < PENDING_MAX) {
        e->since_sample = 0;
        if (gs_real_cu.cuEventCreate(&l->start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
            gs_real_cu.cuEventCreate(&l->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
            gs_real_cu.cuEventRecord(l->start, stream) == CUDA_SUCCESS) {
            /* recorded; end is recorded after the launch */
        } else {
            if (l->start)
                gs_real_cu.cuEventDestroy_v2(l->start);
            if (l->end)
                gs_real_cu.cuEventDestroy_v2(l->end);
            l->start = l->end = NULL;
        }
    }
    pthread_mutex_unlock(&lim_lock);

    l->precharged = pre;
    charge(d, pre);
}

void vgpu_limiter_after(struct vgpu_launch *l, CUresult launched)
{
    struct vgpu_device *d = l->dev;
    if (!d)
        return;
    struct gs_region_device *rd = vgpu_region_dev(d->region, d->slot);
    if (launched != CUDA_SUCCESS) {
        /* nothing ran: refund */
        atomic_fetch_add(&rd->budget_ns, l->precharged);
        atomic_fetch_sub(&rd->busy_ns, (uint64_t)l->precharged);
        if (l->start) {
            gs_real_cu.cuEventDestroy_v2(l->start);
            gs_real_cu.cuEventDestroy_v2(l->end);
        }
        return;
    }
    atomic_fetch_add(&rd->launches, 1);
    if (!l->start)
        return;
    pthread_mutex_lock(&lim_lock);
    if (ring_tail - ring_head < PENDING_MAX &&
        gs_real_cu.cuEventRecord(l->end, l->stream) == CUDA_SUCCESS) {
        struct pending *p = &ring[ring_tail % PENDING_MAX];
        p->start = l->start;
        p->end = l->end;
        p->key = l->key;
        p->dev = vgpu_device_index(d);
        p->charged = l->precharged;
        ring_tail++;
    } else {
        gs_real_cu.cuEventDestroy_v2(l->start);
        gs_real_cu.cuEventDestroy_v2(l->end);
    }
    pthread_mutex_unlock(&lim_lock);
}
