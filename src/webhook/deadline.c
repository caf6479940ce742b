/* SPDX-License-Identifier: Apache-2.0 */
/* API calls bounded by a deadline: one thread per call, a condition variable to wait on. */
#include "webhook/deadline.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

struct call {
    struct wh_group *g;
    wh_call_fn fn;
    wh_free_fn free_arg;
    void *arg;
    int code;
    bool started, done;
    struct gs_error err;
};

struct wh_group {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* signalled when a call ends */
    unsigned refs;       /* the caller + each running call */
    size_t n, n_done, n_started;
    struct wh_inflight *inflight;
    struct call calls[];
};

void wh_inflight_init(struct wh_inflight *f)
{
    pthread_mutex_init(&f->lock, NULL);
    gs_cond_init_monotonic(&f->idle);
    f->n = 0;
}

void wh_inflight_drain(struct wh_inflight *f)
{
    pthread_mutex_lock(&f->lock);
    while (f->n)
        pthread_cond_wait(&f->idle, &f->lock);
    pthread_mutex_unlock(&f->lock);
    pthread_cond_destroy(&f->idle);
    pthread_mutex_destroy(&f->lock);
}

static void inflight_add(struct wh_inflight *f, int d)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->n = d > 0 ? f->n + 1 : f->n - 1;
    if (!f->n)
        pthread_cond_broadcast(&f->idle);
    pthread_mutex_unlock(&f->lock);
}

struct wh_group *wh_group_new(size_t n, struct wh_inflight *inflight)
{
    if (n == 0 || n > 4096)
        return NULL;
    struct wh_group *g = calloc(1, sizeof(*g) + n * sizeof(g->calls[0]));
    if (!g)
        return NULL;
    pthread_mutex_init(&g->lock, NULL);
    gs_cond_init_monotonic(&g->cond);
    g->refs = 1;
    g->n = n;
    g->inflight = inflight;
    for (size_t i = 0; i < n; i++)
        g->calls[i].g = g;
    return g;
}

static void group_free(struct wh_group *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->calls[i].started && g->calls[i].free_arg)
            g->calls[i].free_arg(g->calls[i].arg);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* Drop one reference; the last one frees the group. */
static void unref(struct wh_group *g)
{
    pthread_mutex_lock(&g->lock);
    bool last = --g->refs == 0;
    pthread_mutex_unlock(&g->lock);
    if (last)
        group_free(g);
}

static void finish(struct call *c, int code)
{
    struct wh_group *g = c->g;
    struct wh_inflight *f = g->inflight;
    pthread_mutex_lock(&g->lock);
    c->code = code;
    c->done = true;
    g->n_done++;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    unref(g);
    inflight_add(f, -1);
}

static void *run(void *p)
{
    struct call *c = p;
    finish(c, c->fn(c->arg, &c->err));
    return NULL;
}

void wh_group_start(struct wh_group *g, size_t i, wh_call_fn fn, void *arg, wh_free_fn free_arg)
{
    if (i >= g->n || g->calls[i].started) {
        if (free_arg)
            free_arg(arg);
        return;
    }
    struct call *c = &g->calls[i];
    c->fn = fn, c->arg = arg, c->free_arg = free_arg, c->started = true;
    pthread_mutex_lock(&g->lock);
    g->refs++;
    g->n_started++;
    pthread_mutex_unlock(&g->lock);
    inflight_add(g->inflight, +1);
    pthread_attr_t attr;
    pthread_t th;
    bool spawned = false;
    if (pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 512 * 1024);
        spawned = pthread_create(&th, &attr, run, c) == 0;
        pthread_attr_destroy(&attr);
    }
    if (!spawned) /* no thread to be had (EAGAIN): no deadline for this call, but an answer */
        run(c);
}

int wh_group_wait(struct wh_group *g, uint64_t deadline_ms)
{
    int r = 0;
    struct timespec ts = gs_timespec_ns(gs_sat_mul_u64(deadline_ms, GS_NSEC_PER_MSEC));
    pthread_mutex_lock(&g->lock);
    while (g->n_done < g->n_started) {
        if (!deadline_ms) {
            pthread_cond_wait(&g->cond, &g->lock);
            continue;
        }
        if (gs_now_ms() >= deadline_ms ||
            pthread_cond_timedwait(&g->cond, &g->lock, &ts) == ETIMEDOUT) {
            r = g->n_done < g->n_started ? -ETIMEDOUT : 0;
            break;
        }
    }
    pthread_mutex_unlock(&g->lock);
    return r;
}

int wh_group_result(struct wh_group *g, size_t i, struct gs_error *err)
{
    if (i >= g->n)
        return -EINVAL;
    pthread_mutex_lock(&g->lock);
    const struct call *c = &g->calls[i];
    int r = c->done ? c->code : -EINPROGRESS;
    if (c->done && r < 0 && err)
        *err = c->err;
    pthread_mutex_unlock(&g->lock);
    return r;
}

size_t wh_group_done(struct wh_group *g)
{
    pthread_mutex_lock(&g->lock);
    size_t n = g->n_done;
    pthread_mutex_unlock(&g->lock);
    return n;
}

void wh_group_release(struct wh_group *g)
{
    if (g)
        unref(g);
}

int wh_call_by(wh_call_fn fn, void *arg, wh_free_fn free_arg, struct wh_inflight *inflight,
               uint64_t deadline_ms, const char *what, struct gs_error *err)
{
    struct wh_group *g = wh_group_new(1, inflight);
    if (!g) {
        if (free_arg)
            free_arg(arg);
        return gs_error_set(err, -ENOMEM, "out of memory");
    }
    wh_group_start(g, 0, fn, arg, free_arg);
    int r = wh_group_wait(g, deadline_ms);
    if (r == 0)
        r = wh_group_result(g, 0, err);
    else
        r = gs_error_set(err, -ETIMEDOUT,
                         "%s: no answer from the API server before the "
                         "admission deadline",
                         what);
    wh_group_release(g);
    return r;
}
