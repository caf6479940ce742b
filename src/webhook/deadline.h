/* SPDX-License-Identifier: Apache-2.0 */
/*
 * API calls bounded by the admission's deadline. An admission must be answered before the API
 * server gives up on the webhook (timeoutSeconds), however slow the API server is, so every
 * call that may wait on it runs in a thread of its own while the admission waits for it only
 * until its deadline. A call still running then is left to finish in the background: it owns
 * its argument (freed by whoever finishes last) and is counted in a wh_inflight, which the
 * owner of what the calls use (the cluster) drains before freeing it.
 *
 *   struct wh_group *g = wh_group_new(n, &cluster->inflight);
 *   for (i...) wh_group_start(g, i, create_fn, arg_i, free_arg);
 *   int r = wh_group_wait(g, deadline_ms);        // 0: all done; -ETIMEDOUT
 *   code_i = wh_group_result(g, i, &err);         // -EINPROGRESS if still running
 *   wh_group_release(g);
 */
#ifndef GS_WEBHOOK_DEADLINE_H
#define GS_WEBHOOK_DEADLINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Calls still running (also those abandoned at a deadline). */
struct wh_inflight {
    pthread_mutex_t lock;
    pthread_cond_t idle;
    unsigned n;
};

void wh_inflight_init(struct wh_inflight *f);
/* Wait until no call is running any more, then destroy. */
void wh_inflight_drain(struct wh_inflight *f);

typedef int (*wh_call_fn)(void *arg, struct gs_error *err);
typedef void (*wh_free_fn)(void *arg);

struct wh_group;

/* A group of `n` calls (n >= 1); NULL on ENOMEM. `inflight` may be NULL. */
struct wh_group *wh_group_new(size_t n, struct wh_inflight *inflight);
/* Start call `i` in its own thread: fn(arg). The group owns `arg` from now on and calls
 * free_arg(arg) (may be NULL) when the group is released and the call has ended. When no
 * thread can be started the call runs here, before returning. */
void wh_group_start(struct wh_group *g, size_t i, wh_call_fn fn, void *arg, wh_free_fn free_arg);
/* Wait until every started call has ended (0) or until `deadline_ms` (gs_now_ms() clock; 0 =
 * no deadline) passes first (-ETIMEDOUT). */
int wh_group_wait(struct wh_group *g, uint64_t deadline_ms);
/* Result of call `i`: its return code (message copied into err when negative), or
 * -EINPROGRESS while it still runs. */
int wh_group_result(struct wh_group *g, size_t i, struct gs_error *err);
/* Number of calls that have ended. */
size_t wh_group_done(struct wh_group *g);
/* The caller's reference: the group is freed when its last call has ended too. */
void wh_group_release(struct wh_group *g);

/* One call under a deadline: wh_group of one. Returns the call's code, or -ETIMEDOUT with a
 * message naming `what` and the deadline when it passes first. */
int wh_call_by(wh_call_fn fn, void *arg, wh_free_fn free_arg, struct wh_inflight *inflight,
               uint64_t deadline_ms, const char *what, struct gs_error *err);

#endif /* GS_WEBHOOK_DEADLINE_H */
