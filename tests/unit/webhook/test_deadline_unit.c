/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook/deadline.h: calls run at once in their own threads; the wait ends at the deadline
 * while a slow call goes on; the arguments are freed exactly once, by whoever ends last; the
 * in-flight count is drained. Ordering is made with pipes, not with sleeps: a "slow" call
 * blocks until the test releases it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "tap.h"
#include "webhook/deadline.h"

static atomic_int freed, started;

struct arg {
    int fd;    /* read one byte before returning (-1: return at once) */
    int value; /* returned */
};

static int call(void *p, struct gs_error *err)
{
    struct arg *a = p;
    atomic_fetch_add(&started, 1);
    char c;
    if (a->fd >= 0 && read(a->fd, &c, 1) != 1)
        return gs_error_set(err, -EIO, "read");
    if (a->value < 0)
        return gs_error_set(err, a->value, "call %d failed", a->value);
    return a->value;
}

static void arg_free(void *p)
{
    atomic_fetch_add(&freed, 1);
    free(p);
}

static struct arg *mk(int fd, int value)
{
    struct arg *a = malloc(sizeof(*a));
    a->fd = fd, a->value = value;
    return a;
}

int main(void)
{
    tap_plan_auto();
    struct gs_error err = {0};
    struct wh_inflight inflight;
    wh_inflight_init(&inflight);

    /* Three calls that all block until released: they must all have started (at once). */
    int p[2];
    if (pipe(p) < 0)
        return 1;
    struct wh_group *g = wh_group_new(3, &inflight);
    for (int i = 0; i < 3; i++)
        wh_group_start(g, (size_t)i, call, mk(p[0], i + 1), arg_free);
    /* Bounded: 30 s of polling (a loaded machine still starts three threads well within it). */
    for (int i = 0; i < 30000 && atomic_load(&started) < 3; i++)
        gs_sleep_ms(1);
    is_int(atomic_load(&started), 3, "three blocking calls started without waiting for each other");
    is_int(write(p[1], "xyz", 3), 3, "release them");
    is_int(wh_group_wait(g, 0), 0, "wait without deadline: all ended");
    int sum = 0;
    for (size_t i = 0; i < 3; i++)
        sum += wh_group_result(g, i, &err);
    is_int(sum, 6, "each call's own result");
    wh_group_release(g);
    /* The last of the calls' own references may be dropped just after the wait returned:
     * the in-flight count says when every call has let go. */
    wh_inflight_drain(&inflight);
    is_int(atomic_load(&freed), 3, "arguments freed once each");
    wh_inflight_init(&inflight);

    /* A call that outlives the deadline: -ETIMEDOUT now, its result stays unknown, it ends
     * later and frees its argument itself. */
    atomic_store(&freed, 0);
    g = wh_group_new(2, &inflight);
    wh_group_start(g, 0, call, mk(-1, 7), arg_free);
    wh_group_start(g, 1, call, mk(p[0], 8), arg_free);
    for (int i = 0; i < 10000 && wh_group_done(g) < 1; i++) /* a loaded machine: let it end */
        gs_sleep_ms(1);
    is_int(wh_group_wait(g, gs_now_ms() + 50), -ETIMEDOUT, "blocked call: deadline passes");
    is_int(wh_group_done(g), 1, "the quick call had ended, the blocked one not");
    is_int(wh_group_result(g, 1, &err), -EINPROGRESS, "the blocked one is still running");
    wh_group_release(g);
    is_int(atomic_load(&freed), 0, "arguments live while a call of the group still runs");
    is_int(write(p[1], "x", 1), 1, "release the blocked call");
    wh_inflight_drain(&inflight); /* returns only when it has ended */
    is_int(atomic_load(&freed), 2, "the abandoned call freed the arguments when it ended");

    /* wh_call_by: result, error message, and the deadline message. */
    wh_inflight_init(&inflight);
    is_int(wh_call_by(call, mk(-1, 5), arg_free, &inflight, gs_now_ms() + 10000, "x", &err), 5,
           "wh_call_by: the call's result");
    is_int(wh_call_by(call, mk(-1, -EACCES), arg_free, &inflight, 0, "x", &err), -EACCES,
           "wh_call_by: the call's error");
    is_str(err.msg, "call -13 failed", "wh_call_by: the call's message");
    is_int(wh_call_by(call, mk(p[0], 1), arg_free, &inflight, gs_now_ms() + 20, "reading a claim",
                      &err),
           -ETIMEDOUT, "wh_call_by: deadline");
    is_str(err.msg, "reading a claim: no answer from the API server before the admission deadline",
           "deadline message names what was waited for");
    is_int(write(p[1], "x", 1), 1, "release");
    wh_inflight_drain(&inflight);
    close(p[0]);
    close(p[1]);
    return tap_done();
}
