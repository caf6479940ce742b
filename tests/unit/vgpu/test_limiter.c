/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compute limiter's core (src/vgpu/limiter.c) driven with a fake clock and a fake GPU:
 * kernels run one after another on one device timeline (FIFO, like gpusim), events complete when
 * the work queued before them on their stream has, sleeping advances the clock. The busy share is
 * judged from the fake GPU's own timeline (what it executed), never from the limiter's books.
 *
 * Covered: refill and the burst cap, the gate's waits, every launch charged (up front, corrected
 * when measured), estimates that a few outliers cannot move much, the adversarial workloads of
 * issue 11 (5 ms kernel with 10 % of launches at 50 us, strict 5 ms / 50 us alternation, 512
 * launches per sync, a new key per launch) held to 30 % +-3 pp over a long run, the record pool
 * never dropping a measurement, refunds of failed launches, the monitor fields (gpu_busy_ns,
 * last_kernel_ns), and the event-destroy race (a thread waiting on a measurement's event while
 * another thread consumes that measurement).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/limits.h"
#include "tap.h"
#include "vgpu/limiter.h"
#include "vgpu/qos.h"
#include "vgpu/vgpu-internal.h"

/* hami-region.c registers its usage mirror with region.c (not compiled into this test) */
void vgpu_region_set_usage_hook(vgpu_usage_hook_fn fn)
{
    (void)fn;
}

/* libvgpu symbols limiter.c refers to outside its core (only used by vgpu_limiter_before). */
struct gs_real_cuda gs_real_cu;
struct vgpu_device *vgpu_device_current(void)
{
    return NULL;
}
int vgpu_device_index(const struct vgpu_device *d)
{
    (void)d;
    return 0;
}
struct gs_region_device *vgpu_region_dev(struct vgpu_region *r, int slot)
{
    (void)r;
    (void)slot;
    return NULL;
}

#define MS 1000000ULL
#define US 1000ULL

/* ------------------------------------------------------------------ fake GPU */

#define MAX_EVENTS  4096
#define MAX_STREAMS 4

struct fake_event {
    uint64_t t;          /* completes at */
    uint64_t generation; /* bumped by every record */
    void *ctx;
    bool live, recorded;
};

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t fk_now;      /* fake CLOCK_MONOTONIC */
static uint64_t fk_dev_tail; /* the device is busy until then */
static uint64_t fk_stream_tail[MAX_STREAMS];
static uint64_t fk_busy; /* GPU time executed (the outside truth) */
static struct fake_event fk_events[MAX_EVENTS];
static int fk_live_events, fk_max_live_events, fk_use_after_destroy, fk_created;
static int fk_rerecorded_while_waited; /* an event re-recorded while a thread waited on it */
static int fk_cross_ctx;               /* an event recorded in another context than its own */
static int fk_ctx_a, fk_ctx_b;
static void *fk_ctx = &fk_ctx_a;
static uint64_t fk_launches;

/* the race test: event_sync blocks until released */
static bool fk_sync_blocks;
static int fk_sync_waiting, fk_sync_release;
static pthread_cond_t fk_cond = PTHREAD_COND_INITIALIZER;

static int stream_ix(CUstream s)
{
    return (int)((uintptr_t)s % MAX_STREAMS);
}

static uint64_t f_now(void)
{
    pthread_mutex_lock(&fk_lock);
    uint64_t t = fk_now;
    pthread_mutex_unlock(&fk_lock);
    return t;
}

static uint64_t f_wall(void)
{
    return 1700000000ULL * 1000000000ULL + f_now();
}

static struct gs_region_device peer_rd;
static bool peer_live; /* the QoS tests' co-tenant keeps work pending as time passes */

static void f_sleep(int64_t ns)
{
    pthread_mutex_lock(&fk_lock);
    fk_now += (uint64_t)ns;
    if (peer_live)
        atomic_store(&peer_rd.pending_ns, fk_now);
    pthread_mutex_unlock(&fk_lock);
}

static struct fake_event *ev_of(CUevent e)
{
    return (struct fake_event *)(void *)e;
}

static CUresult f_create(CUevent *e)
{
    pthread_mutex_lock(&fk_lock);
    for (int i = 0; i < MAX_EVENTS; i++) {
        if (!fk_events[i].live) {
            fk_events[i] = (struct fake_event){.live = true, .ctx = fk_ctx};
            fk_live_events++;
            fk_created++;
            fk_max_live_events = GS_MAX(fk_max_live_events, fk_live_events);
            *e = (CUevent)(void *)&fk_events[i];
            pthread_mutex_unlock(&fk_lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&fk_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult f_record(CUevent e, CUstream s)
{
    pthread_mutex_lock(&fk_lock);
    struct fake_event *f = ev_of(e);
    CUresult r = CUDA_ERROR_INVALID_HANDLE;
    if (f->live && f->ctx != fk_ctx) {
        r = CUDA_ERROR_INVALID_HANDLE; /* an event of another context */
        fk_cross_ctx++;
    } else if (f->live) {
        f->t = GS_MAX(fk_now, fk_stream_tail[stream_ix(s)]);
        f->recorded = true;
        f->generation++;
        r = CUDA_SUCCESS;
    } else {
        fk_use_after_destroy++;
    }
    pthread_mutex_unlock(&fk_lock);
    return r;
}

static CUresult f_query(CUevent e)
{
    pthread_mutex_lock(&fk_lock);
    struct fake_event *f = ev_of(e);
    CUresult r;
    if (!f->live) {
        fk_use_after_destroy++;
        r = CUDA_ERROR_INVALID_HANDLE;
    } else {
        r = !f->recorded || fk_now >= f->t ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    }
    pthread_mutex_unlock(&fk_lock);
    return r;
}

static CUresult f_sync(CUevent e)
{
    pthread_mutex_lock(&fk_lock);
    uint64_t gen = ev_of(e)->generation;
    if (fk_sync_blocks) {
        fk_sync_waiting++;
        pthread_cond_broadcast(&fk_cond);
        while (!fk_sync_release)
            pthread_cond_wait(&fk_cond, &fk_lock);
    }
    struct fake_event *f = ev_of(e);
    CUresult r = CUDA_SUCCESS;
    if (f->generation != gen)
        fk_rerecorded_while_waited++;
    if (!f->live) {
        fk_use_after_destroy++;
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (f->recorded && fk_now < f->t) {
        fk_now = f->t; /* the host waits until the GPU got there */
    }
    pthread_mutex_unlock(&fk_lock);
    return r;
}

static CUresult f_elapsed(float *ms, CUevent a, CUevent b)
{
    pthread_mutex_lock(&fk_lock);
    struct fake_event *x = ev_of(a), *y = ev_of(b);
    CUresult r = CUDA_SUCCESS;
    if (!x->live || !y->live) {
        fk_use_after_destroy++;
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (fk_now < x->t || fk_now < y->t) {
        r = CUDA_ERROR_NOT_READY;
    } else {
        *ms = (float)(((double)y->t - (double)x->t) / 1e6);
    }
    pthread_mutex_unlock(&fk_lock);
    return r;
}

static CUresult f_destroy(CUevent e)
{
    pthread_mutex_lock(&fk_lock);
    struct fake_event *f = ev_of(e);
    if (!f->live)
        fk_use_after_destroy++;
    f->live = false;
    fk_live_events--;
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

static void *f_ctx(void)
{
    pthread_mutex_lock(&fk_lock);
    void *c = fk_ctx;
    pthread_mutex_unlock(&fk_lock);
    return c;
}

static const struct vgpu_limiter_ops fake_ops = {
    .now_ns = f_now,
    .wall_ns = f_wall,
    .sleep_ns = f_sleep,
    .event_create = f_create,
    .event_record = f_record,
    .event_query = f_query,
    .event_sync = f_sync,
    .event_elapsed = f_elapsed,
    .event_destroy = f_destroy,
    .ctx_current = f_ctx,
    .seed = 42,
};

/* The GPU runs a kernel of `ns` queued on stream s. */
static void fake_kernel(CUstream s, uint64_t ns)
{
    pthread_mutex_lock(&fk_lock);
    uint64_t start = GS_MAX(fk_now, fk_dev_tail);
    fk_dev_tail = start + ns;
    fk_stream_tail[stream_ix(s)] = fk_dev_tail;
    fk_busy += ns;
    fk_launches++;
    pthread_mutex_unlock(&fk_lock);
}

/* cuCtxSynchronize: the host waits for the device. */
static void fake_sync_all(void)
{
    pthread_mutex_lock(&fk_lock);
    fk_now = GS_MAX(fk_now, fk_dev_tail);
    pthread_mutex_unlock(&fk_lock);
}

static struct gs_region_device rd;

static void reset_world(void)
{
    pthread_mutex_lock(&fk_lock);
    fk_now = 1000 * MS;
    fk_dev_tail = 0;
    memset(fk_stream_tail, 0, sizeof(fk_stream_tail));
    fk_busy = 0;
    fk_launches = 0;
    memset(fk_events, 0, sizeof(fk_events));
    fk_live_events = fk_max_live_events = fk_created = 0;
    fk_use_after_destroy = fk_rerecorded_while_waited = fk_cross_ctx = 0;
    fk_ctx = &fk_ctx_a;
    fk_sync_blocks = false;
    fk_sync_waiting = fk_sync_release = 0;
    pthread_mutex_unlock(&fk_lock);
    vgpu_limiter_set_ops(&fake_ops);
    vgpu_qos_reset();
    memset(&rd, 0, sizeof(rd));
    atomic_store(&rd.refill_ns, f_now());
}

/* One launch of `ns` through the limiter (key = function/grid/block hash of the hooks). */
static void launch(uint64_t key, CUstream s, uint64_t ns)
{
    struct vgpu_launch l;
    vgpu_limiter_begin(&l, &rd, 0, 30, key, s);
    fake_kernel(s, ns);
    vgpu_limiter_end(&l, CUDA_SUCCESS);
}

/* Consume every completed measurement (a poll takes a bounded number at a time). */
static void drain(void)
{
    struct vgpu_limiter_stats st;
    for (int i = 0; i < 1000; i++) {
        vgpu_limiter_poll();
        vgpu_limiter_stats(0, 0, &st);
        if (st.in_flight == 0)
            return;
    }
}

/* ------------------------------------------------------------------ workloads */

enum workload { W_CONST, W_RANDOM10, W_ALTERNATE, W_NEW_KEYS };

/* Run a workload for `secs` of fake time, `queue` launches between syncs; returns the share of
 * the device it got, in percent, from the fake GPU's timeline. */
static double run(enum workload w, int queue, uint64_t kernel_ns, double secs)
{
    reset_world();
    uint64_t t0 = f_now(), end = t0 + (uint64_t)(secs * 1e9);
    unsigned seed = 7;
    uint64_t n = 0;
    while (f_now() < end) {
        for (int i = 0; i < queue; i++, n++) {
            uint64_t ns = kernel_ns, key = 0xF00D;
            if (w == W_RANDOM10 && rand_r(&seed) % 10 == 0)
                ns = 50 * US;
            else if (w == W_ALTERNATE && n % 2)
                ns = 50 * US;
            else if (w == W_NEW_KEYS)
                key = 0x10000 + n; /* another grid every launch */
            launch(key, NULL, ns);
        }
        fake_sync_all();
    }
    return 100.0 * (double)fk_busy / (double)(f_now() - t0);
}

static void check_share(const char *what, double share)
{
    ok(share >= 27.0 && share <= 33.0, "%s: long-run share %.2f %% within 30 +-3 pp", what, share);
}

/* ------------------------------------------------------------------ tests */

static void test_refill_and_gate(void)
{
    reset_world();
    is_int(atomic_load(&rd.budget_ns), 0, "the bucket starts empty");
    f_sleep(10 * MS);
    launch(0xA, NULL, 1 * MS);
    /* 10 ms at 30 % refilled 3 ms; the first launch of a key is charged the device mean (0) */
    is_int(atomic_load(&rd.budget_ns), 3 * MS, "10 ms at cores 30 refills 3 ms");
    fake_sync_all();
    drain();
    is_int(atomic_load(&rd.budget_ns), 2 * MS,
           "its measurement (1 ms) is charged when it completes");
    f_sleep(10000 * MS);
    struct vgpu_launch l;
    vgpu_limiter_begin(&l, &rd, 0, 30, 0xB, NULL);
    vgpu_limiter_end(&l, CUDA_ERROR_INVALID_VALUE);
    is_int(atomic_load(&rd.budget_ns), GS_REGION_BURST_NS * 30 / 100,
           "a long idle fills the bucket only to the burst cap (100 ms x 30 %%)");

    /* a debt of 3 ms at cores 30 is waited off in about 10 ms of wall time */
    reset_world();
    atomic_store(&rd.budget_ns, -3 * (int64_t)MS);
    uint64_t t0 = f_now();
    vgpu_limiter_begin(&l, &rd, 0, 30, 0xC, NULL);
    uint64_t waited = f_now() - t0;
    vgpu_limiter_end(&l, CUDA_ERROR_INVALID_VALUE);
    ok(waited >= 10 * MS && waited <= 10 * MS + 100 * US,
       "a 3 ms debt at cores 30 waits 10 ms (waited %.3f ms)", (double)waited / 1e6);
    ok(atomic_load(&rd.throttled_ns) >= 10 * MS, "the wait is counted in throttled_ns");
}

static void test_every_launch_charged(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 1000 * (int64_t)MS); /* no waiting: look at the books only */
    for (int i = 0; i < 400; i++)
        launch(0xBEEF, NULL, 1 * MS);
    fake_sync_all();
    drain();
    struct vgpu_limiter_stats st;
    vgpu_limiter_stats(0xBEEF, 0, &st);
    ok(st.estimate_ns == (int64_t)MS, "estimate of a steady 1 ms kernel is 1 ms (%lld)",
       (long long)st.estimate_ns);
    ok(st.samples >= 8 && st.samples < 120,
       "warm-up measured, then a sample of the rest (%u of 400 measured)", st.samples);
    is_uint(atomic_load(&rd.busy_ns), 400 * MS,
            "400 launches charged 400 ms (first one corrected)");
    is_uint(atomic_load(&rd.gpu_busy_ns), 400 * MS, "gpu_busy_ns: 400 ms of busy GPU time");
    is_uint(atomic_load(&rd.launches), 400, "launches counted");
    is_int(atomic_load(&rd.budget_ns), 600 * (int64_t)MS, "the bucket lost exactly 400 ms");
    is_int(st.in_flight, 0, "nothing left in flight after a sync");
    int created = fk_created;
    for (int i = 0; i < 400; i++)
        launch(0xBEEF, NULL, 1 * MS);
    fake_sync_all();
    drain();
    vgpu_limiter_stats(0xBEEF, 0, &st);
    ok(fk_created == created,
       "measurements reuse their events (%d created for %u measurements, none for the last 400 "
       "launches)",
       fk_created, st.samples);
    is_int(fk_use_after_destroy, 0, "no event used after it was destroyed");

    /* another context: events of the old one are not recorded there */
    pthread_mutex_lock(&fk_lock);
    fk_ctx = &fk_ctx_b;
    pthread_mutex_unlock(&fk_lock);
    uint64_t measured = st.measured;
    for (int i = 0; i < 40; i++)
        launch(0xBEEF, NULL, 1 * MS);
    fake_sync_all();
    drain();
    vgpu_limiter_stats(0xBEEF, 0, &st);
    ok(st.measured > measured, "measurements go on in a new context (%llu more)",
       (unsigned long long)(st.measured - measured));
    is_int(fk_cross_ctx, 0, "no event of the old context was recorded in the new one");
}

static void test_outliers(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 100000 * (int64_t)MS);
    for (int i = 0; i < 16; i++)
        launch(0x51, NULL, 1 * MS);
    fake_sync_all();
    vgpu_limiter_poll();
    struct vgpu_limiter_stats st;
    /* one short sample cannot make the kernel cheap (the old minimum-of-samples dropped to it) */
    vgpu_limiter_set_ops(&fake_ops); /* fresh estimates, same world */
    for (int i = 0; i < 8; i++) {
        launch(0x52, NULL, i == 7 ? 50 * US : 1 * MS);
        fake_sync_all();
    }
    vgpu_limiter_poll();
    vgpu_limiter_stats(0x52, 0, &st);
    ok(st.estimate_ns >= (int64_t)(MS * 85 / 100),
       "one 50 us launch among 1 ms ones moves the estimate by at most 1/8 (%lld ns)",
       (long long)st.estimate_ns);
    /* one long sample (e.g. a wait behind another container) cannot make it expensive for long */
    launch(0x53, NULL, 1 * MS);
    fake_sync_all();
    for (int i = 0; i < 7; i++) {
        launch(0x53, NULL, i == 0 ? 100 * MS : 1 * MS);
        fake_sync_all();
    }
    vgpu_limiter_poll();
    vgpu_limiter_stats(0x53, 0, &st);
    ok(st.estimate_ns <= (int64_t)(MS + 99 * MS / 8),
       "one 100 ms outlier raises the estimate by at most 1/8 of its excess (%lld ns)",
       (long long)st.estimate_ns);
    uint32_t after = st.samples;
    for (int i = 0; i < 100000 && st.samples < after + 32; i++) {
        launch(0x53, NULL, 1 * MS);
        fake_sync_all();
        vgpu_limiter_poll();
        vgpu_limiter_stats(0x53, 0, &st);
    }
    ok(st.estimate_ns <= (int64_t)(MS * 11 / 10),
       "and decays geometrically: back within 10 %% of 1 ms after 32 more measurements (%lld ns)",
       (long long)st.estimate_ns);
}

static void test_adversarial(void)
{
    check_share("steady 1 ms kernel, one per sync", run(W_CONST, 1, 1 * MS, 120));
    check_share("5 ms kernel, 10 % of launches at 50 us", run(W_RANDOM10, 1, 5 * MS, 300));
    check_share("strictly alternating 5 ms / 50 us", run(W_ALTERNATE, 1, 5 * MS, 300));
    check_share("alternating, 16 launches per sync", run(W_ALTERNATE, 16, 5 * MS, 300));
    check_share("512 launches of 1 ms per sync", run(W_CONST, 512, 1 * MS, 300));
    check_share("512 launches of 50 us per sync", run(W_CONST, 512, 50 * US, 120));
    check_share("a new key (grid) every launch, 64 per sync", run(W_NEW_KEYS, 64, 1 * MS, 120));
}

static void test_pool_never_drops(void)
{
    /* 600 launches of never-measured keys queued without a sync: each must be measured, so
     * once the 256 records are in flight a launch waits for the oldest */
    reset_world();
    atomic_store(&rd.budget_ns, 100000 * (int64_t)MS);
    for (int i = 0; i < 600; i++)
        launch(0x90000 + (uint64_t)i, NULL, 1 * MS);
    struct vgpu_limiter_stats st;
    vgpu_limiter_stats(0, 0, &st);
    ok(fk_max_live_events <= 2 * 256,
       "never more than 256 measurements (event pairs) at once (%d events)", fk_max_live_events);
    ok(st.waits > 0, "a launch waited for the oldest measurement instead of going unmeasured");
    fake_sync_all();
    drain();
    vgpu_limiter_stats(0, 0, &st);
    is_uint(st.measured, 600, "all 600 launches of new kernels were measured");
    is_uint(atomic_load(&rd.busy_ns), 600 * MS, "and charged exactly their 600 ms");
    is_int(fk_use_after_destroy, 0, "no event used after it was destroyed");
}

static void test_refund(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 1000 * (int64_t)MS);
    for (int i = 0; i < 16; i++)
        launch(0x77, NULL, 2 * MS);
    fake_sync_all();
    vgpu_limiter_poll();
    int64_t b = atomic_load(&rd.budget_ns);
    uint64_t busy = atomic_load(&rd.busy_ns), gb = atomic_load(&rd.gpu_busy_ns);
    struct vgpu_launch l;
    vgpu_limiter_begin(&l, &rd, 0, 30, 0x77, NULL);
    ok(atomic_load(&rd.budget_ns) == b - 2 * (int64_t)MS,
       "a launch is charged its estimate up front");
    vgpu_limiter_end(&l, CUDA_ERROR_INVALID_VALUE);
    vgpu_limiter_flush();
    is_int(atomic_load(&rd.budget_ns), b, "a launch the driver refused is refunded");
    is_uint(atomic_load(&rd.busy_ns), busy, "busy_ns refunded");
    is_uint(atomic_load(&rd.gpu_busy_ns), gb, "gpu_busy_ns unchanged (nothing ran)");
    is_uint(atomic_load(&rd.launches), 16, "not counted as a launch");
    fake_sync_all();
    drain();
    struct vgpu_limiter_stats st;
    vgpu_limiter_stats(0x77, 0, &st);
    is_int(st.in_flight, 0, "its measurement record went back to the pool");
}

static void test_monitor_fields(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 1000 * (int64_t)MS);
    is_uint(atomic_load(&rd.last_kernel_ns), 0, "last_kernel_ns is 0 before any launch");
    launch(0x33, NULL, 1 * MS);
    uint64_t first = atomic_load(&rd.last_kernel_ns);
    is_uint(first, f_wall(), "last_kernel_ns is the wall time of the launch");
    f_sleep(500 * US);
    launch(0x33, NULL, 1 * MS);
    is_uint(atomic_load(&rd.last_kernel_ns), first, "refreshed at most once per ms");
    f_sleep(600 * US);
    launch(0x33, NULL, 1 * MS);
    is_uint(atomic_load(&rd.last_kernel_ns), f_wall(), "refreshed after 1 ms");
    uint64_t prev = 0;
    bool mono = true;
    unsigned seed = 3;
    for (int i = 0; i < 20000; i++) {
        launch(0x34, NULL, rand_r(&seed) % 2 ? 50 * US : 5 * MS);
        if (i % 8 == 7)
            fake_sync_all();
        uint64_t g = atomic_load(&rd.gpu_busy_ns);
        mono = mono && g >= prev;
        prev = g;
    }
    ok(mono, "gpu_busy_ns never decreases, even when corrections refund");
    fake_sync_all();
    drain();
    double err = ((double)atomic_load(&rd.gpu_busy_ns) - (double)fk_busy) / (double)fk_busy;
    ok(err > -0.05 && err < 0.05, "gpu_busy_ns within 5 %% of the GPU time executed (%+.2f %%)",
       100 * err);
}

/* The application destroys a context: the driver destroys its events with it. */
static void fake_ctx_destroy(void *ctx)
{
    pthread_mutex_lock(&fk_lock);
    for (int i = 0; i < MAX_EVENTS; i++) {
        if (fk_events[i].live && fk_events[i].ctx == ctx) {
            fk_events[i].live = false;
            fk_live_events--;
        }
    }
    pthread_mutex_unlock(&fk_lock);
}

static void test_context_gone(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 100000 * (int64_t)MS);
    for (int i = 0; i < 64; i++)
        launch(0x66, NULL, 1 * MS); /* measurements in flight and records holding events */
    struct vgpu_limiter_stats st;
    vgpu_limiter_stats(0x66, 0, &st);
    uint32_t in_flight = st.in_flight;
    fake_ctx_destroy(&fk_ctx_a);
    vgpu_limiter_ctx_gone(&fk_ctx_a);
    pthread_mutex_lock(&fk_lock);
    fk_ctx = &fk_ctx_b;
    pthread_mutex_unlock(&fk_lock);
    for (int i = 0; i < 64; i++)
        launch(0x66, NULL, 1 * MS);
    fake_sync_all();
    drain();
    vgpu_limiter_stats(0x66, 0, &st);
    ok(in_flight > 0, "measurements were in flight when the context went (%u)", in_flight);
    is_int(fk_use_after_destroy, 0,
           "no event of the destroyed context is queried, recorded or destroyed again");
    is_int(st.in_flight, 0, "its measurements were consumed (unmeasured: they keep their charge)");
    ok(st.samples > 0, "measuring goes on in the new context (%u measurements)", st.samples);
}

/* Issue 21 item 5: a fresh context per 5 ms kernel, destroyed at once (a new module, so a new
 * function and key each time): the measurements must outlive the contexts. Without
 * vgpu_limiter_ctx_going the share read 95 % at a 30 % cap. */
static void test_context_per_kernel(void)
{
    reset_world();
    static int ctxs[4096];
    uint64_t t0 = f_now(), b0 = fk_busy, end = t0 + 20ULL * 1000 * MS;
    for (int i = 0; f_now() < end; i++) {
        void *ctx = &ctxs[i % 4096];
        pthread_mutex_lock(&fk_lock);
        fk_ctx = ctx;
        pthread_mutex_unlock(&fk_lock);
        launch(0x500000 + (uint64_t)i, NULL, 5 * MS);
        vgpu_limiter_ctx_going(ctx); /* cuCtxDestroy's hook, before the driver */
        fake_ctx_destroy(ctx);
        vgpu_limiter_ctx_gone(ctx);
        fake_sync_all();
    }
    double share = 100.0 * (double)(fk_busy - b0) / (double)(f_now() - t0);
    ok(share >= 27.0 && share <= 33.0,
       "a context per 5 ms kernel, destroyed at once: %.2f %% (30 +-3): measurements outlive "
       "their contexts",
       share);
    is_int(fk_use_after_destroy, 0, "no event of a destroyed context touched");
    pthread_mutex_lock(&fk_lock);
    fk_ctx = &fk_ctx_a;
    pthread_mutex_unlock(&fk_lock);
}

static void *three_launches(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        launch(0x44, NULL, 1 * MS);
    return NULL;
}

static void test_counters_published(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 1000 * (int64_t)MS);
    launch(0x45, NULL, 1 * MS);
    vgpu_limiter_flush();
    uint64_t n0 = atomic_load(&rd.launches);
    for (int i = 0; i < 5; i++)
        launch(0x45, NULL, 1 * MS);
    f_sleep(2 * MS);
    launch(0x45, NULL, 1 * MS);
    is_uint(atomic_load(&rd.launches), n0 + 6,
            "a thread's counters reach the region within a millisecond without any poll");
    uint64_t n1 = atomic_load(&rd.launches);
    pthread_t t;
    pthread_create(&t, NULL, three_launches, NULL);
    pthread_join(t, NULL);
    is_uint(atomic_load(&rd.launches), n1 + 3, "and when the thread exits");
}

/* The race: thread A waits on the end event of a measurement in flight (a kernel never
 * measured waits for its first measurement) while thread B consumes that measurement. Before
 * the fix B destroyed the events A was still waiting on. */
static void *race_waiter(void *arg)
{
    (void)arg;
    struct vgpu_launch l;
    vgpu_limiter_begin(&l, &rd, 0, 30, 0xACE, NULL);
    fake_kernel(NULL, 1 * MS);
    vgpu_limiter_end(&l, CUDA_SUCCESS);
    return NULL;
}

static void test_event_destroy_race(void)
{
    reset_world();
    atomic_store(&rd.budget_ns, 1000 * (int64_t)MS);
    launch(0xACE, NULL, 5 * MS); /* measured, in flight for 5 ms */
    pthread_mutex_lock(&fk_lock);
    fk_sync_blocks = true;
    pthread_mutex_unlock(&fk_lock);
    pthread_t a;
    pthread_create(&a, NULL, race_waiter, NULL);
    pthread_mutex_lock(&fk_lock);
    while (fk_sync_waiting == 0)
        pthread_cond_wait(&fk_cond, &fk_lock);
    fk_now += 10 * MS; /* the kernel completes while A waits on its event */
    pthread_mutex_unlock(&fk_lock);
    vgpu_limiter_poll(); /* thread B (here: main) consumes the measurement */
    struct vgpu_limiter_stats st;
    vgpu_limiter_stats(0xACE, 0, &st);
    is_uint(st.samples, 1, "B consumed the measurement A waits on");
    is_int(st.held, 1, "its record stays allocated while A holds a reference");
    /* B goes on launching new kernels (each measured): none may take A's record */
    for (int i = 0; i < 4; i++)
        launch(0xB0B0 + (uint64_t)i, NULL, 1 * MS);
    pthread_mutex_lock(&fk_lock);
    fk_sync_release = 1;
    fk_sync_blocks = false;
    pthread_cond_broadcast(&fk_cond);
    pthread_mutex_unlock(&fk_lock);
    pthread_join(a, NULL);
    is_int(fk_use_after_destroy, 0, "A never used an event after it was destroyed");
    is_int(fk_rerecorded_while_waited, 0, "nor one re-recorded for another launch meanwhile");
    fake_sync_all();
    vgpu_limiter_poll();
    vgpu_limiter_stats(0xACE, 0, &st);
    is_int(st.held, 0, "the last holder freed the record");
    is_int(st.in_flight, 0, "nothing left in flight");
}

/* ------------------------------------------------------------------ compute QoS (issue 24) */

/* One phase of a QoS run: `secs` of fake time, 16 launches of 1 ms between syncs, the peer
 * showing work pending (its pending_ns kept fresh) or not; returns our share in the phase. */
static double qos_phase(uint32_t cores, bool peer_active, double secs, bool forge)
{
    uint64_t t0 = f_now(), b0 = fk_busy, end = t0 + (uint64_t)(secs * 1e9);
    peer_live = peer_active;
    while (f_now() < end) {
        if (peer_active)
            atomic_store(&peer_rd.pending_ns, f_now());
        if (forge) {
            /* the tenant writes what it can write, its own region: claims priority 0 and
             * policy disabled for monitors, no work pending, a full bucket */
            atomic_store(&rd.qos, GS_REGION_QOS(GS_POLICY_DISABLED, 0, 0));
            atomic_store(&rd.pending_ns, 0);
        }
        for (int i = 0; i < 16; i++) {
            struct vgpu_launch l;
            vgpu_limiter_begin(&l, &rd, 0, cores, 0xC0DE, NULL);
            fake_kernel(NULL, 1 * MS);
            vgpu_limiter_end(&l, CUDA_SUCCESS);
        }
        fake_sync_all();
        if (peer_active)
            atomic_store(&peer_rd.pending_ns, f_now());
    }
    peer_live = false;
    return 100.0 * (double)(fk_busy - b0) / (double)(f_now() - t0);
}

static void qos_world(int policy, int priority, int peer_priority)
{
    reset_world();
    memset(&peer_rd, 0, sizeof(peer_rd));
    struct vgpu_qos_self self = {
        .policy = policy, .priority = priority, .claim = "me", .peers_dir = "", .uuid = "GPU-x"};
    vgpu_qos_configure(0, &self);
    struct vgpu_qos_peer peer = {.priority = peer_priority, .cores = 70, .dev = &peer_rd};
    vgpu_qos_set_peers(0, &peer, 1);
}

static void test_qos_decide(void)
{
    struct gs_region_device busy = {0}, idle = {0};
    uint64_t now = 5000 * MS;
    atomic_store(&busy.pending_ns, now - 1 * MS);
    atomic_store(&idle.pending_ns, now - 2 * GS_REGION_PENDING_WINDOW_NS);
    struct vgpu_qos_peer hi = {0, 50, &busy}, lo = {1, 50, &busy}, gone = {0, 50, &idle};
    struct vgpu_qos_verdict v;
    v = vgpu_qos_decide(GS_POLICY_WORK_CONSERVING, 1, 30, NULL, 0, -1, now);
    ok(v.cores == 0 && v.state == GS_REGION_QOS_STATE_FREE, "decide: work-conserving alone: free");
    v = vgpu_qos_decide(GS_POLICY_WORK_CONSERVING, 1, 30, &lo, 1, -1, now);
    ok(v.cores == 30 && v.state == GS_REGION_QOS_STATE_CAPPED,
       "decide: work-conserving, same priority pending: capped");
    v = vgpu_qos_decide(GS_POLICY_WORK_CONSERVING, 0, 30, &lo, 1, -1, now);
    ok(v.cores == 0, "decide: work-conserving, only a lower priority pending: free (HAMi)");
    v = vgpu_qos_decide(GS_POLICY_WORK_CONSERVING, 1, 30, &hi, 1, -1, now);
    ok(v.cores == VGPU_QOS_HOLD_FLOOR && v.state == GS_REGION_QOS_STATE_HELD,
       "decide: higher priority pending: held at the floor");
    v = vgpu_qos_decide(GS_POLICY_HARD, 1, 3, &hi, 1, -1, now);
    ok(v.cores == 3 && v.state == GS_REGION_QOS_STATE_HELD, "decide: held below the floor: cap");
    v = vgpu_qos_decide(GS_POLICY_WORK_CONSERVING, 1, 30, &gone, 1, -1, now);
    ok(v.cores == 0, "decide: a peer idle for longer than the window does not count");
    v = vgpu_qos_decide(GS_POLICY_HARD, 1, 30, NULL, 0, -1, now);
    ok(v.cores == 30 && v.state == GS_REGION_QOS_STATE_CAPPED, "decide: hard alone: capped");
    v = vgpu_qos_decide(GS_POLICY_DISABLED, 1, 30, &hi, 1, -1, now);
    ok(v.cores == 0 && v.state == GS_REGION_QOS_STATE_FREE, "decide: disabled: free, never held");
    v = vgpu_qos_decide(GS_POLICY_UNSET, 1, 30, NULL, 0, 0, now);
    ok(v.cores == 0, "decide: HAMi's utilization_switch 0: free");
    v = vgpu_qos_decide(GS_POLICY_UNSET, 1, 30, NULL, 0, 1, now);
    ok(v.cores == 30, "decide: HAMi's utilization_switch 1: capped");
    v = vgpu_qos_decide(GS_POLICY_UNSET, 1, 30, NULL, 0, -1, now);
    ok(v.cores == 30, "decide: unset without HAMi's monitor: capped (hard)");
}

/* Shares judged from the fake GPU's timeline (what it executed). */
static void test_qos_shares(void)
{
    qos_world(GS_POLICY_WORK_CONSERVING, 1, 1);
    double alone = qos_phase(30, false, 5, false);
    ok(alone >= 95.0, "work-conserving cap 30 alone: %.1f %% busy (>= 95)", alone);
    double warm = qos_phase(30, true, 0.2, false);
    double both = qos_phase(30, true, 10, false);
    ok(both >= 27.0 && both <= 33.0,
       "work-conserving cap 30, a same-priority tenant pending: %.2f %% (30 +-3; first 200 ms "
       "%.1f %%)",
       both, warm);
    qos_phase(30, false, 0.2, false);
    double after = qos_phase(30, false, 1, false);
    ok(after >= 95.0, "the other tenant idles: %.1f %% within 200 ms (>= 95)", after);

    qos_world(GS_POLICY_HARD, 1, 1);
    double hard = qos_phase(30, false, 10, false);
    ok(hard >= 27.0 && hard <= 33.0, "hard cap 30 alone: %.2f %% (30 +-3)", hard);

    qos_world(GS_POLICY_WORK_CONSERVING, 1, 0);
    double held = qos_phase(90, true, 10, false);
    ok(held > 0.5 && held <= VGPU_QOS_HOLD_FLOOR + 1.0,
       "low priority while a high one is pending: %.2f %% (the %u %% floor: never starved)", held,
       VGPU_QOS_HOLD_FLOOR);
    ok(atomic_load(&rd.held_ns) > 0, "held time published (held_ns %llu)",
       (unsigned long long)atomic_load(&rd.held_ns));
    is_int(GS_REGION_QOS_STATE(atomic_load(&rd.qos)), GS_REGION_QOS_STATE_HELD,
           "state published: held");
    qos_phase(90, false, 0.2, false);
    double resumed = qos_phase(90, false, 1, false);
    ok(resumed >= 90.0, "the high one idles: the low one gets %.1f %% within 200 ms (>= 90)",
       resumed);

    qos_world(GS_POLICY_DISABLED, 1, 0);
    double dis = qos_phase(30, true, 2, false);
    ok(dis >= 99.0, "disabled: %.1f %% (no cap, never held)", dis);
}

/* No self-promotion: writing its own region (all a tenant can write) does not raise its share;
 * a co-tenant's priority comes from that co-tenant's read-only limits file, never its region. */
static void write_peer(const char *dir, const char *claim, int priority, uint64_t pending,
                       uint32_t forged_qos)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, claim);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/%s/region", dir, claim);
    mkdir(p, 0755);
    struct gs_limits l;
    struct gs_error err;
    gs_limits_init(&l);
    snprintf(l.claim, sizeof(l.claim), "%s", claim);
    l.priority = priority;
    gs_limits_add_device(&l, "GPU-qos-test", 0, 50, &err);
    snprintf(p, sizeof(p), "%s/%s/%s.limits", dir, claim, claim);
    unlink(p);
    ok(gs_limits_write(p, &l, &err) == 0, "peer %s limits written (%s)", claim, err.msg);
    struct gs_region *r = calloc(1, sizeof(*r));
    r->magic = GS_REGION_MAGIC;
    r->version = GS_REGION_VERSION;
    r->size = sizeof(*r);
    atomic_store(&r->init_state, GS_REGION_READY);
    atomic_store(&r->n_devices, 1);
    strcpy(r->devices[0].uuid, "GPU-qos-test");
    atomic_store(&r->devices[0].pending_ns, pending);
    atomic_store(&r->devices[0].qos, forged_qos);
    snprintf(p, sizeof(p), "%s/%s/region/region", dir, claim);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok(fd >= 0 && write(fd, r, sizeof(*r)) == (ssize_t)sizeof(*r), "peer %s region written", claim);
    close(fd);
    free(r);
}

static void test_qos_no_self_promotion(void)
{
    /* 1. the tenant forges its own region: its share under contention stays at its cap */
    qos_world(GS_POLICY_WORK_CONSERVING, 1, 1);
    qos_phase(30, true, 0.5, true);
    double forged = qos_phase(30, true, 10, true);
    ok(forged >= 27.0 && forged <= 33.0,
       "a tenant writing its own region (priority 0, disabled, nothing pending) stays at its "
       "cap under contention: %.2f %% (30 +-3)",
       forged);

    /* 2. a co-tenant whose region claims priority 0 but whose limits file says 1 does not hold
     * us; the same co-tenant with priority 0 in its limits file does (the test can fail) */
    char dir[] = "/tmp/gs-qos-peers-XXXXXX";
    ok(mkdtemp(dir) != NULL, "peers dir");
    reset_world();
    uint64_t now = f_now();
    write_peer(dir, "forger", 1, now, GS_REGION_QOS(GS_POLICY_HARD, 0, 0));
    struct vgpu_qos_self self = {.policy = GS_POLICY_WORK_CONSERVING,
                                 .priority = 1,
                                 .claim = "me",
                                 .peers_dir = dir,
                                 .uuid = "GPU-qos-test"};
    vgpu_qos_configure(0, &self);
    struct vgpu_qos_verdict v = vgpu_qos_verdict(0, &rd, 90, now);
    ok(v.state == GS_REGION_QOS_STATE_CAPPED && v.cores == 90,
       "a co-tenant's forged priority in its region is ignored: capped at our own cap, not "
       "held (state %u, cores %u)",
       v.state, v.cores);
    write_peer(dir, "forger", 0, now, 0);
    vgpu_qos_configure(0, &self); /* re-scan now */
    v = vgpu_qos_verdict(0, &rd, 90, now);
    ok(v.state == GS_REGION_QOS_STATE_HELD,
       "the same co-tenant with priority 0 in its read-only limits file holds us (state %u)",
       v.state);
    write_peer(dir, "me", 0, now, 0); /* our own claim's directory is never a peer */
    write_peer(dir, "forger", 1, now - 10 * GS_REGION_PENDING_WINDOW_NS, 0);
    vgpu_qos_configure(0, &self);
    v = vgpu_qos_verdict(0, &rd, 90, now);
    ok(v.state == GS_REGION_QOS_STATE_FREE,
       "our own claim in the peers directory is not a co-tenant; an idle peer: free (%u)", v.state);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ok(system(cmd) == 0, "cleanup");
}

int main(void)
{
    tap_plan_auto();
    test_refill_and_gate();
    test_every_launch_charged();
    test_outliers();
    test_refund();
    test_monitor_fields();
    test_counters_published();
    test_context_gone();
    test_context_per_kernel();
    test_pool_never_drops();
    test_event_destroy_race();
    test_adversarial();
    test_qos_decide();
    test_qos_shares();
    test_qos_no_self_promotion();
    vgpu_limiter_set_ops(NULL);
    return tap_done();
}
