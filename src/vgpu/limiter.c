/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compute limiter: a token bucket of GPU time per device, shared by the claim's processes through
 * the region (struct gs_region_device: budget_ns, refill_ns). The bucket refills at cores% of
 * wall time; launches wait while it is empty. Design (docs/internals/vgpu.md, "Compute limiter"):
 *
 *  - Every launch is charged up front: the estimate of its key (function, grid, block, device),
 *    a decayed mean of that key's measured GPU times. A key never measured is charged the
 *    device's mean and is always measured.
 *  - Measured launches are corrected to their measured time (charge += measured - estimate) when
 *    their end event completes. A launch is measured while its key is warming up (the first
 *    EST_WARM launches), then at random with probability 1/SAMPLE_ONE_IN, so the launches that
 *    are not measured are a random sample the application cannot choose: their estimate is
 *    unbiased, and the decayed mean telescopes (the error over any run is bounded by the change
 *    of the estimate over the run divided by the decay weight, not by the run's length).
 *  - A launch chosen for measurement is always measured: when all REC_MAX records are in flight
 *    it first waits for the oldest one. Nothing is dropped unmeasured.
 *  - A launch of a key without any completed measurement waits for that key's measurement in
 *    flight, so a deep queue of a new kernel cannot run ahead of the budget.
 *
 * Threads: one process-wide mutex guards the estimates and records; it is never held while
 * sleeping or waiting on an event. A record's events are destroyed only under the mutex, when the
 * record is consumed and no thread waits on it (refs == 0): a waiter takes a reference under the
 * mutex before it lets go of it to wait.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "vgpu/hami-region.h"
#include "vgpu/limiter.h"
#include "vgpu/qos.h"
#include "vgpu/vgpu-internal.h"

#define EST_SLOTS       1024 /* estimates per process (direct-mapped, replaced on collision) */
#define REC_MAX         256  /* measurements in flight at once */
#define EST_WARM        8    /* launches of a key always measured */
#define SAMPLE_ONE_IN   8    /* then each launch is measured with probability 1/8 */
#define EST_DECAY_SHIFT 3    /* decayed mean: est += (sample - est) / 8 */
#define POLL_MAX        16   /* completions consumed per poll */
#define POLL_EVERY_NS   20000ULL
#define WAIT_MIN_NS     20000LL
#define WAIT_MAX_NS     5000000LL
#define STAMP_EVERY_NS  1000000ULL /* last_kernel_ns is refreshed at most once per ms */
#define FLUSH_EVERY_NS  1000000ULL /* a thread publishes its counters every ms (or clock tick) */
#define REFILL_EVERY_NS 50000ULL   /* a bucket with budget left is refilled at most every 50 us */
#define HOLD_POLL_NS    1000000LL  /* a launch blocked by HAMi's monitor looks again every ms */

/* key, ns, samples and taken are written under lim_lock with atomic stores and read without it
 * by the fast path (a launch of a known kernel that is not measured takes no lock). */
struct estimate {
    uint64_t key; /* 0 = empty */
    int64_t ns;   /* decayed mean of the measured GPU times */
    uint32_t samples;
    uint32_t taken; /* launches chosen for measurement */
    int32_t rec;    /* newest record of this key (valid while it is in flight with this key) */
    uint32_t reserved;
};

#define LOAD(x)     __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

enum rec_state { REC_FREE = 0, REC_OWNED, REC_IN_FLIGHT, REC_CONSUMED };

/* A measurement: two events around one launch. A free record keeps its events for the next
 * measurement in the same context (creating events costs more than the launch). */
struct record {
    CUevent start, end;
    void *ctx; /* context the events belong to */
    uint64_t key;
    struct gs_region_device *rd;
    int64_t charged; /* charged up front */
    int64_t idle_ns; /* host time of the launch call when the device was idle (not GPU time) */
    int32_t dev;
    uint32_t refs; /* threads waiting on `end` without the mutex */
    uint32_t state;
    uint32_t drop; /* destroy the events when the record is freed (the driver refused them) */
    uint32_t reserved;
};

static pthread_mutex_t lim_lock = PTHREAD_MUTEX_INITIALIZER;
static struct estimate est[EST_SLOTS];
static struct record recs[REC_MAX];
static int32_t free_list[REC_MAX];
static int n_free = -1; /* -1: not initialised */
static int32_t fifo[REC_MAX];
static unsigned fifo_head, fifo_tail; /* records in flight, in launch order */
static int64_t dev_mean[GS_REGION_MAX_DEVICES];
static uint64_t n_measured, n_waits;
static _Atomic uint64_t last_poll_ns;
static _Atomic uint32_t n_in_flight; /* fifo_tail - fifo_head, readable without the mutex */
static _Atomic uint64_t stamp_ns[GS_REGION_MAX_DEVICES]; /* monotonic time of our last stamp */
static _Atomic uint64_t seed_counter;

/* Counters for monitors (launches, busy_ns, gpu_busy_ns) are summed per thread and published
 * to the region every FLUSH_EVERY_NS of the launch path's clock (the coarse clock: at most a
 * tick, 1-4 ms, late), when the thread moves to another device, and at
 * thread and process exit: the launch path itself then does one atomic operation on the region
 * (the budget). */
struct counters {
    struct gs_region_device *rd;
    uint64_t flushed_ns, now_ns;
    int64_t busy;
    uint64_t gpu_busy, launches;
    bool registered;
};
static _Thread_local struct counters thread_counters;
static pthread_key_t counters_key;
static pthread_once_t counters_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------ ops */

static uint64_t real_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t real_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void real_sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static CUresult real_event_create(CUevent *ev)
{
    return gs_real_cu.cuEventCreate ? gs_real_cu.cuEventCreate(ev, CU_EVENT_DEFAULT)
                                    : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult real_event_record(CUevent ev, CUstream stream)
{
    return gs_real_cu.cuEventRecord(ev, stream);
}

static CUresult real_event_query(CUevent ev)
{
    return gs_real_cu.cuEventQuery(ev);
}

static CUresult real_event_sync(CUevent ev)
{
    return gs_real_cu.cuEventSynchronize ? gs_real_cu.cuEventSynchronize(ev)
                                         : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult real_event_elapsed(float *ms, CUevent start, CUevent end)
{
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (gs_real_cu.cuEventElapsedTime_v2)
        r = gs_real_cu.cuEventElapsedTime_v2(ms, start, end);
    if (r != CUDA_SUCCESS && gs_real_cu.cuEventElapsedTime)
        r = gs_real_cu.cuEventElapsedTime(ms, start, end);
    return r;
}

static CUresult real_event_destroy(CUevent ev)
{
    return gs_real_cu.cuEventDestroy_v2(ev);
}

static void *real_ctx_current(void)
{
    CUcontext c = NULL;
    if (!gs_real_cu.cuCtxGetCurrent || gs_real_cu.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
        return NULL;
    return c;
}

static const struct vgpu_limiter_ops real_ops = {
    .now_ns = vgpu_now_ns,
    .coarse_ns = real_coarse_ns,
    .wall_ns = real_wall_ns,
    .sleep_ns = real_sleep_ns,
    .event_create = real_event_create,
    .event_record = real_event_record,
    .event_query = real_event_query,
    .event_sync = real_event_sync,
    .event_elapsed = real_event_elapsed,
    .event_destroy = real_event_destroy,
    .ctx_current = real_ctx_current,
};

static const struct vgpu_limiter_ops *ops = &real_ops;

/* ------------------------------------------------------------------ counters */

static void add_signed(_Atomic uint64_t *c, int64_t d)
{
    if (d >= 0)
        atomic_fetch_add_explicit(c, (uint64_t)d, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(c, (uint64_t)-d, memory_order_relaxed);
}

static void counters_flush(struct counters *c)
{
    if (!c->rd)
        return;
    if (c->busy)
        add_signed(&c->rd->busy_ns, c->busy);
    if (c->gpu_busy)
        atomic_fetch_add_explicit(&c->rd->gpu_busy_ns, c->gpu_busy, memory_order_relaxed);
    if (c->launches)
        atomic_fetch_add_explicit(&c->rd->launches, c->launches, memory_order_relaxed);
    c->busy = 0;
    c->gpu_busy = c->launches = 0;
}

static void counters_thread_exit(void *p)
{
    counters_flush(p);
}

/* A forked child starts with no measurements in flight (its parent's events and contexts are
 * not its own; CUDA contexts do not survive fork), nothing unpublished, and a free mutex. */
static void limiter_atfork_child(void)
{
    pthread_mutex_init(&lim_lock, NULL);
    memset(recs, 0, sizeof(recs));
    n_free = -1;
    fifo_head = fifo_tail = 0;
    atomic_store(&n_in_flight, 0);
    bool registered = thread_counters.registered;
    memset(&thread_counters, 0, sizeof(thread_counters));
    thread_counters.registered = registered;
}

/* Held across fork() (issue 34): a thread that was updating the estimates under it must not
 * leave the child half an update. Taken before gpusim's/the driver's own locks (this handler is
 * registered after cuInit, and prepare handlers run in reverse order), the order in which a
 * measuring launch nests them. */
static void limiter_atfork_prepare(void)
{
    pthread_mutex_lock(&lim_lock);
}

static void limiter_atfork_parent(void)
{
    pthread_mutex_unlock(&lim_lock);
}

static void counters_key_init(void)
{
    pthread_key_create(&counters_key, counters_thread_exit);
    pthread_atfork(limiter_atfork_prepare, limiter_atfork_parent, limiter_atfork_child);
}

/* The calling thread's counters for rd (published first if they were another device's). */
static struct counters *counters_for(struct gs_region_device *rd)
{
    struct counters *c = &thread_counters;
    if (GS_UNLIKELY(c->rd != rd)) {
        counters_flush(c);
        c->rd = rd;
        if (!c->registered) {
            pthread_once(&counters_once, counters_key_init);
            pthread_setspecific(counters_key, c);
            c->registered = true;
        }
    }
    return c;
}

static void counters_maybe_flush(struct counters *c)
{
    if (c->now_ns - c->flushed_ns >= FLUSH_EVERY_NS) {
        counters_flush(c);
        c->flushed_ns = c->now_ns;
    }
}

/* Process exit: thread-specific destructors do not run for the thread that calls exit(). */
__attribute__((destructor)) static void counters_at_exit(void)
{
    counters_flush(&thread_counters);
}

void vgpu_limiter_flush(void)
{
    counters_flush(&thread_counters);
}

/* ------------------------------------------------------------------ estimates, records */

static uint64_t rng_next(void)
{
    static _Thread_local uint64_t s;
    if (GS_UNLIKELY(s == 0)) {
        uint64_t z = (ops->seed ? ops->seed : ops->now_ns()) +
                     0x9E3779B97F4A7C15ULL * (atomic_fetch_add(&seed_counter, 1) + 1);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        s = (z ^ (z >> 31)) | 1;
    }
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
}

/* The estimate key: the hooks' (function, grid, block) key on this device (a CUkernel launched
 * in two contexts runs as two functions, possibly on devices of different speed). Never 0. */
static uint64_t mix_key(uint64_t key, int dev)
{
    uint64_t k = key ^ ((uint64_t)(dev + 1) * 0xD6E8FEB86659FD93ULL);
    return k ? k : 1;
}

static struct estimate *est_slot(uint64_t key)
{
    struct estimate *e = &est[(key * 0x9E3779B97F4A7C15ULL) >> 54];
    if (e->key != key) {
        STORE(e->key, 0);
        STORE(e->ns, 0);
        STORE(e->samples, 0);
        STORE(e->taken, 0);
        e->rec = -1;
        STORE(e->key, key);
    }
    return e;
}

static void recs_init_locked(void)
{
    if (n_free >= 0)
        return;
    n_free = 0;
    for (int i = REC_MAX - 1; i >= 0; i--)
        free_list[n_free++] = i;
}

static void rec_drop_events_locked(struct record *p)
{
    /* (a record whose context is gone has no events left: the driver destroyed them) */
    if (p->start)
        ops->event_destroy(p->start);
    if (p->end)
        ops->event_destroy(p->end);
    p->start = p->end = NULL;
    p->ctx = NULL;
}

/* Back to the pool; its events stay for the next measurement in the same context. */
static void rec_free_locked(int32_t i)
{
    struct record *p = &recs[i];
    if (p->drop)
        rec_drop_events_locked(p);
    p->state = REC_FREE;
    p->refs = 0;
    p->drop = 0;
    free_list[n_free++] = i;
}

static void decay(int64_t *mean, int64_t sample, bool first)
{
    if (first)
        *mean = sample;
    else
        *mean += (sample - *mean) / (1 << EST_DECAY_SHIFT);
}

/* A completed record: correct the launch's charge to its measured time, update the estimates. */
static void consume_locked(struct record *p, CUresult q)
{
    float ms = -1;
    int64_t ns = -1;
    if (q == CUDA_SUCCESS && ops->event_elapsed(&ms, p->start, p->end) == CUDA_SUCCESS && ms >= 0)
        ns = (int64_t)((double)ms * 1e6);
    struct gs_region_device *rd = p->rd;
    if (ns < 0) {
        /* not measurable (context gone, driver error): the launch keeps its up-front charge */
        atomic_fetch_add_explicit(&rd->gpu_busy_ns, (uint64_t)p->charged, memory_order_relaxed);
        return;
    }
    /* The start event ran at once (the stream was idle): the events also span the host's
     * launch call, time the GPU spent waiting for the kernel, not running it. */
    ns = ns > p->idle_ns ? ns - p->idle_ns : 0;
    int64_t delta = ns - p->charged;
    struct estimate *e = est_slot(p->key);
    atomic_fetch_sub_explicit(&rd->budget_ns, delta, memory_order_relaxed);
    add_signed(&rd->busy_ns, delta);
    atomic_fetch_add_explicit(&rd->gpu_busy_ns, (uint64_t)ns, memory_order_relaxed);
    int64_t mean = e->ns;
    decay(&mean, ns, e->samples == 0);
    STORE(e->ns, mean);
    STORE(e->samples, e->samples + 1);
    decay(&dev_mean[p->dev], ns, dev_mean[p->dev] == 0);
    n_measured++;
    VLOG(VGPU_LOG_DEBUG, "limiter: kernel %llx measured %lld ns (charged %lld), estimate %lld ns",
         (unsigned long long)p->key, (long long)ns, (long long)p->charged, (long long)e->ns);
}

/* Consume completed measurements in launch order (caller holds lim_lock). */
static void poll_locked(void)
{
    for (int n = 0; n < POLL_MAX && fifo_head != fifo_tail; n++) {
        int32_t i = fifo[fifo_head % REC_MAX];
        struct record *p = &recs[i];
        CUresult q = p->end ? ops->event_query(p->end) : CUDA_ERROR_CONTEXT_IS_DESTROYED;
        if (q == CUDA_ERROR_NOT_READY)
            break;
        consume_locked(p, q);
        if (q != CUDA_SUCCESS)
            p->drop = 1; /* the driver refused them (context gone?) */
        fifo_head++;
        atomic_store_explicit(&n_in_flight, fifo_tail - fifo_head, memory_order_relaxed);
        if (p->refs)
            p->state = REC_CONSUMED; /* the last waiter frees it */
        else
            rec_free_locked(i);
    }
}

/* Wait (without the mutex) until record i's end event completes, then consume what completed.
 * Called and returns with lim_lock held. */
static void wait_record_locked(int32_t i)
{
    struct record *p = &recs[i];
    p->refs++;
    CUevent ev = p->end;
    n_waits++;
    pthread_mutex_unlock(&lim_lock);
    if (ev)
        ops->event_sync(ev);
    pthread_mutex_lock(&lim_lock);
    p->refs--;
    poll_locked();
    if (p->state == REC_CONSUMED && p->refs == 0)
        rec_free_locked(i);
}

static int32_t rec_take_locked(void)
{
    recs_init_locked();
    /* every record in flight: first take back those already completed (a loop of empty kernels
     * completes them as fast as it launches; waiting on one would block the thread and cost a
     * context switch per launch, issue 24) */
    for (unsigned before = fifo_head + 1; n_free == 0 && fifo_head != before;) {
        before = fifo_head;
        poll_locked();
    }
    while (n_free == 0 && fifo_head != fifo_tail) {
        /* every record in flight: wait for the oldest rather than leave this launch unmeasured */
        unsigned before = fifo_head;
        wait_record_locked(fifo[fifo_head % REC_MAX]);
        if (fifo_head == before)
            break; /* the oldest did not complete (driver error): give up measuring */
    }
    if (n_free == 0)
        return -1;
    int32_t i = free_list[--n_free];
    struct record *p = &recs[i];
    p->state = REC_OWNED;
    void *ctx = ops->ctx_current ? ops->ctx_current() : NULL;
    if (p->start && (!ctx || p->ctx != ctx))
        rec_drop_events_locked(p);
    if (!p->start) {
        if (ops->event_create(&p->start) != CUDA_SUCCESS ||
            ops->event_create(&p->end) != CUDA_SUCCESS) {
            if (p->start)
                ops->event_destroy(p->start);
            p->start = p->end = NULL;
            rec_free_locked(i);
            return -1;
        }
        p->ctx = ctx;
    }
    return i;
}

/* ------------------------------------------------------------------ bucket */

/* Add the GPU time earned since the last refill. `hurry`: the bucket is empty, refill now;
 * otherwise at most every REFILL_EVERY_NS (two compare-and-swaps saved on most launches). */
static void refill(struct gs_region_device *rd, uint32_t cores, uint64_t now, bool hurry)
{
    uint64_t last = atomic_load_explicit(&rd->refill_ns, memory_order_relaxed);
    if (now <= last || (!hurry && now - last < REFILL_EVERY_NS) ||
        !atomic_compare_exchange_strong(&rd->refill_ns, &last, now))
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

/* Wait until the bucket holds budget; returns the monotonic time it did. While the bucket holds
 * budget the coarse clock is enough (same clock, lagging by at most a tick: a refill it does is
 * exact, one it skips is done later); an empty bucket is judged with the precise clock. */
static uint64_t gate(struct gs_region_device *rd, uint32_t cores)
{
    if (ops->coarse_ns) {
        uint64_t now = ops->coarse_ns();
        refill(rd, cores, now, false);
        if (atomic_load_explicit(&rd->budget_ns, memory_order_relaxed) > 0)
            return now;
    }
    for (;;) {
        uint64_t now = ops->now_ns();
        refill(rd, cores, now, false);
        int64_t b = atomic_load_explicit(&rd->budget_ns, memory_order_relaxed);
        if (b > 0)
            return now;
        refill(rd, cores, now, true);
        b = atomic_load_explicit(&rd->budget_ns, memory_order_relaxed);
        if (b > 0)
            return now;
        int64_t wait = (-b) * 100 / cores + WAIT_MIN_NS;
        if (wait > WAIT_MAX_NS)
            wait = WAIT_MAX_NS;
        vgpu_qos_pending(rd, now); /* still has work pending while it waits */
        ops->sleep_ns(wait);
        atomic_fetch_add_explicit(&rd->throttled_ns, (uint64_t)wait, memory_order_relaxed);
        if (pthread_mutex_trylock(&lim_lock) == 0) {
            poll_locked();
            pthread_mutex_unlock(&lim_lock);
        }
    }
}

/* HAMi's vGPU monitor blocks launches (recent_kernel < 0, HAMi-core's rate_limiter): wait until
 * it lifts the block, looking every millisecond (HAMi-core sleeps a second at a time). */
static void hami_wait(struct gs_region_device *rd)
{
    if (GS_LIKELY(!vgpu_hami_blocked()))
        return;
    uint64_t t0 = ops->now_ns();
    while (vgpu_hami_blocked()) {
        vgpu_qos_pending(rd, ops->now_ns());
        ops->sleep_ns(HOLD_POLL_NS);
    }
    atomic_fetch_add_explicit(&rd->held_ns, ops->now_ns() - t0, memory_order_relaxed);
}

/* The QoS verdict (qos.c), then the bucket at the cap it says: none (alone under
 * work-conserving, disabled), the claim's cap, or the hold floor while a higher priority has
 * work pending. Returns the monotonic time the launch may go. */
static uint64_t qos_gate(struct gs_region_device *rd, int dev, uint32_t cores)
{
    hami_wait(rd);
    uint64_t now = ops->coarse_ns ? ops->coarse_ns() : ops->now_ns();
    struct vgpu_qos_verdict v = vgpu_qos_verdict(dev, rd, cores, now);
    if (v.cores == 0) {
        /* free: keep the bucket refilled and out of debt, so a cap that applies again later
         * starts from at most a burst, never from the debt of the free run */
        refill(rd, cores, now, false);
        if (atomic_load_explicit(&rd->budget_ns, memory_order_relaxed) < 0)
            atomic_store_explicit(&rd->budget_ns, 0, memory_order_relaxed);
        return now;
    }
    if (v.state != GS_REGION_QOS_STATE_HELD)
        return gate(rd, v.cores);
    /* held: at most the floor's burst, then the floor's rate */
    int64_t cap = GS_REGION_BURST_NS * (int64_t)v.cores / 100;
    if (atomic_load_explicit(&rd->budget_ns, memory_order_relaxed) > cap)
        atomic_store_explicit(&rd->budget_ns, cap, memory_order_relaxed);
    uint64_t t = gate(rd, v.cores);
    if (t > now)
        atomic_fetch_add_explicit(&rd->held_ns, t - now, memory_order_relaxed);
    return t;
}

static void stamp(struct gs_region_device *rd, int dev, uint64_t now)
{
    uint64_t last = atomic_load_explicit(&stamp_ns[dev], memory_order_relaxed);
    if (now - last < STAMP_EVERY_NS ||
        !atomic_compare_exchange_strong_explicit(&stamp_ns[dev], &last, now, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    atomic_store_explicit(&rd->last_kernel_ns, ops->wall_ns(), memory_order_relaxed);
    vgpu_hami_launched();
}

/* ------------------------------------------------------------------ launches */

void vgpu_limiter_begin(struct vgpu_launch *l, struct gs_region_device *rd, int dev, uint32_t cores,
                        uint64_t key, CUstream stream)
{
    l->rd = rd;
    l->dev = dev;
    l->stream = stream;
    l->rec = -1;
    l->key = mix_key(key, dev);

    /* Wait for budget first: the measurement must not include our own throttling. */
    uint64_t now = qos_gate(rd, dev, cores);
    stamp(rd, dev, now);
    struct counters *c = counters_for(rd);
    c->now_ns = now;

    /* Consume completed measurements every POLL_EVERY_NS (whoever gets the mutex). */
    /* (the coarse clock ticks every 1-4 ms: a fast loop also polls when half the records are
     * in flight, so it never runs out of them and has to wait) */
    uint32_t inflight = atomic_load_explicit(&n_in_flight, memory_order_relaxed);
    if (inflight &&
        (now - atomic_load_explicit(&last_poll_ns, memory_order_relaxed) >= POLL_EVERY_NS ||
         inflight >= REC_MAX / 2) &&
        pthread_mutex_trylock(&lim_lock) == 0) {
        atomic_store_explicit(&last_poll_ns, now, memory_order_relaxed);
        poll_locked();
        pthread_mutex_unlock(&lim_lock);
    }

    /* Fast path, no lock: a warm kernel, not chosen for measurement, is charged its estimate. */
    int64_t pre;
    struct estimate *e = &est[(l->key * 0x9E3779B97F4A7C15ULL) >> 54];
    if (LOAD(e->key) == l->key && LOAD(e->samples) && LOAD(e->taken) >= EST_WARM &&
        rng_next() % SAMPLE_ONE_IN != 0) {
        pre = LOAD(e->ns);
        if (LOAD(e->key) == l->key)
            goto charge;
    }

    pthread_mutex_lock(&lim_lock);
    poll_locked(); /* a launch to be measured also consumes what completed */
    e = est_slot(l->key);
    if (e->samples == 0 && e->rec >= 0 && recs[e->rec].key == l->key &&
        recs[e->rec].state == REC_IN_FLIGHT) {
        /* Never measured: wait for the measurement in flight of this key, so a queue of a new
         * kernel cannot run ahead of the budget. */
        wait_record_locked(e->rec);
        e = est_slot(l->key);
    }
    pre = e->samples ? e->ns : dev_mean[dev];
    /* Chosen for measurement: warming up, never measured, or at random (the fast path drew the
     * same 1-in-SAMPLE_ONE_IN lot for warm kernels before taking the lock). */
    {
        int32_t i = rec_take_locked();
        e = est_slot(l->key);
        if (i >= 0) {
            struct record *p = &recs[i];
            uint64_t t0 = ops->now_ns();
            if (p->start && ops->event_record(p->start, stream) == CUDA_SUCCESS) {
                STORE(e->taken, e->taken + 1);
                l->rec = i;
                l->rec_ns = t0;
            } else {
                p->drop = 1;
                rec_free_locked(i);
            }
        }
    }
    pthread_mutex_unlock(&lim_lock);

charge:
    l->precharged = pre;
    atomic_fetch_sub_explicit(&rd->budget_ns, pre, memory_order_relaxed);
    c->busy += pre;
    vgpu_qos_queued(dev, rd, now, pre);
}

void vgpu_limiter_end(struct vgpu_launch *l, CUresult launched)
{
    struct gs_region_device *rd = l->rd;
    struct counters *c = counters_for(rd);
    if (launched != CUDA_SUCCESS) {
        /* nothing ran: refund */
        atomic_fetch_add_explicit(&rd->budget_ns, l->precharged, memory_order_relaxed);
        c->busy -= l->precharged;
        if (l->rec >= 0) {
            pthread_mutex_lock(&lim_lock);
            rec_free_locked(l->rec); /* start was recorded; the next record overwrites it */
            pthread_mutex_unlock(&lim_lock);
        }
        return;
    }
    c->launches++;
    if (l->rec < 0) {
        c->gpu_busy += (uint64_t)l->precharged;
        counters_maybe_flush(c);
        return;
    }
    pthread_mutex_lock(&lim_lock);
    struct record *p = &recs[l->rec];
    if (p->end && ops->event_record(p->end, l->stream) == CUDA_SUCCESS) {
        /* Had the start event completed once the end was recorded? Then the stream was idle and
         * the host's launch call (from before the start record to after the end record) lies
         * between the events: time the GPU waited for the kernel, not ran it (issue 24: an
         * empty kernel costs no GPU time, or a loop of them is throttled and sleeps). With work
         * queued ahead the start event is still pending: no correction. */
        p->idle_ns = 0;
        if (ops->event_query(p->start) == CUDA_SUCCESS) {
            uint64_t t = ops->now_ns();
            p->idle_ns = t > l->rec_ns ? (int64_t)(t - l->rec_ns) : 0;
        }
        p->key = l->key;
        p->rd = rd;
        p->dev = l->dev;
        p->charged = l->precharged;
        p->state = REC_IN_FLIGHT;
        fifo[fifo_tail++ % REC_MAX] = l->rec;
        atomic_store_explicit(&n_in_flight, fifo_tail - fifo_head, memory_order_relaxed);
        est_slot(l->key)->rec = l->rec;
    } else {
        p->drop = 1;
        rec_free_locked(l->rec);
        c->gpu_busy += (uint64_t)l->precharged;
    }
    pthread_mutex_unlock(&lim_lock);
    counters_maybe_flush(c);
}

/* A context is about to go: its measurements in flight would die with their events (a fresh
 * context per kernel, destroyed at once, was never measured and ran uncapped: issue 21 item 5).
 * Wait for them now — the driver's destroy waits for the context's work anyway — and consume
 * them measured, oldest first (measurements are consumed in launch order). */
void vgpu_limiter_ctx_going(void *ctx)
{
    if (!ctx || !atomic_load_explicit(&n_in_flight, memory_order_relaxed))
        return;
    pthread_mutex_lock(&lim_lock);
    for (;;) {
        bool any = false;
        for (unsigned k = fifo_head; k != fifo_tail && !any; k++)
            any = recs[fifo[k % REC_MAX]].ctx == ctx;
        if (!any)
            break;
        unsigned before = fifo_head;
        wait_record_locked(fifo[fifo_head % REC_MAX]);
        if (fifo_head == before)
            break; /* the oldest cannot complete (driver error): leave the rest to ctx_gone */
    }
    pthread_mutex_unlock(&lim_lock);
}

void vgpu_limiter_ctx_gone(void *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&lim_lock);
    for (int i = 0; i < REC_MAX; i++) {
        struct record *p = &recs[i];
        if (p->ctx == ctx) {
            /* the driver destroyed the events with the context: forget them, never touch them
             * again; a measurement in flight is consumed unmeasured (it keeps its charge) */
            p->start = p->end = NULL;
            p->ctx = NULL;
        }
    }
    pthread_mutex_unlock(&lim_lock);
}

void vgpu_limiter_poll(void)
{
    pthread_mutex_lock(&lim_lock);
    poll_locked();
    pthread_mutex_unlock(&lim_lock);
    counters_flush(&thread_counters);
}

void vgpu_limiter_set_ops(const struct vgpu_limiter_ops *o)
{
    pthread_mutex_lock(&lim_lock);
    ops = o ? o : &real_ops;
    memset(est, 0, sizeof(est));
    memset(recs, 0, sizeof(recs));
    memset(dev_mean, 0, sizeof(dev_mean));
    n_free = -1;
    fifo_head = fifo_tail = 0;
    atomic_store(&n_in_flight, 0);
    n_measured = n_waits = 0;
    atomic_store(&last_poll_ns, 0);
    for (int i = 0; i < GS_REGION_MAX_DEVICES; i++)
        atomic_store(&stamp_ns[i], 0);
    pthread_mutex_unlock(&lim_lock);
}

void vgpu_limiter_stats(uint64_t key, int dev, struct vgpu_limiter_stats *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t k = mix_key(key, dev);
    pthread_mutex_lock(&lim_lock);
    const struct estimate *e = &est[(k * 0x9E3779B97F4A7C15ULL) >> 54];
    if (e->key == k) {
        out->estimate_ns = e->ns;
        out->samples = e->samples;
    }
    out->in_flight = fifo_tail - fifo_head;
    for (int i = 0; i < REC_MAX; i++)
        out->held += recs[i].state == REC_CONSUMED;
    out->measured = n_measured;
    out->waits = n_waits;
    pthread_mutex_unlock(&lim_lock);
}

/* ------------------------------------------------------------------ hooks' entry points */

void vgpu_limiter_before(struct vgpu_launch *l, uint64_t key, CUstream stream)
{
    l->rd = NULL;
    struct vgpu_device *d = vgpu_device_current();
    if (!d || !d->cfg.cores || !d->region || !gs_real_cu.cuEventRecord ||
        !gs_real_cu.cuEventQuery || !gs_real_cu.cuEventDestroy_v2)
        return;
    int dev = vgpu_device_index(d);
    if (dev < 0 || dev >= GS_REGION_MAX_DEVICES)
        return;
    if (GS_UNLIKELY(!vgpu_qos_configured(dev))) {
        struct vgpu_qos_self self = {.policy = d->cfg.policy,
                                     .priority = d->cfg.priority,
                                     .claim = d->cfg.claim,
                                     .peers_dir = d->cfg.peers_dir,
                                     .uuid = d->uuid};
        vgpu_qos_configure(dev, &self);
    }
    vgpu_limiter_begin(l, vgpu_region_dev(d->region, d->slot), dev, d->cfg.cores, key, stream);
}

void vgpu_limiter_after(struct vgpu_launch *l, CUresult launched)
{
    if (l->rd)
        vgpu_limiter_end(l, launched);
}
