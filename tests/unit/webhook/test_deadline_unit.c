/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook/deadline.h: wh_run_all runs its calls at once and joins them all (ordering made with
 * pipes, not sleeps: each call blocks until the next one has started, so they can only all end
 * if they run at the same time); wh_call_opts carries an admission deadline onto the client's
 * clock (none stays none, a passed one stays passed).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "kube/kubeconfig.h"
#include "tap.h"
#include "webhook/deadline.h"

static atomic_int ended;

struct arg {
    int wait_fd;   /* read one byte before returning (-1: none) */
    int signal_fd; /* write one byte when started (-1: none) */
    int value;     /* returned */
};

static int call(void *p, struct gs_error *err)
{
    struct arg *a = p;
    char c = 'x';
    if (a->signal_fd >= 0 && write(a->signal_fd, &c, 1) != 1)
        return gs_error_set(err, -EIO, "write");
    if (a->wait_fd >= 0 && read(a->wait_fd, &c, 1) != 1)
        return gs_error_set(err, -EIO, "read");
    atomic_fetch_add(&ended, 1);
    if (a->value < 0)
        return gs_error_set(err, a->value, "call %d failed", a->value);
    return a->value;
}

int main(void)
{
    tap_plan_auto();

    /* A chain: call i waits for call i+1 to start; the last one waits for nothing. Run one
     * after another the first call would block for ever; run at once, all end. */
    enum { N = 4 };
    int p[N][2];
    struct arg args[N];
    void *argp[N];
    for (int i = 0; i < N; i++)
        if (pipe(p[i]) < 0)
            return 1;
    for (int i = 0; i < N; i++) {
        args[i] = (struct arg){.wait_fd = i + 1 < N ? p[i + 1][0] : -1,
                               .signal_fd = p[i][1],
                               .value = i == 2 ? -EPERM : i};
        argp[i] = &args[i];
    }
    int codes[N];
    struct gs_error errs[N];
    wh_run_all(N, call, argp, codes, errs);
    is_int(atomic_load(&ended), N, "every call ended before wh_run_all returned (joined)");
    is_int(codes[0], 0, "result of call 0");
    is_int(codes[3], 3, "result of call 3 (run in the caller's thread)");
    is_int(codes[2], -EPERM, "a failing call's code");
    is_str(errs[2].msg, "call -1 failed", "and its message");
    for (int i = 0; i < N; i++)
        close(p[i][0]), close(p[i][1]);

    codes[0] = 42;
    wh_run_all(0, call, NULL, codes, errs);
    is_int(codes[0], 42, "no calls: nothing run, nothing written");

    /* wh_call_opts against a real client's clock. */
    struct gs_kube_config kc = {.server = (char *)"http://127.0.0.1:1"};
    struct gs_error err = {0};
    struct gs_k8s_client *c = gs_k8s_client_new(&kc, &err);
    if (!ok(c != NULL, "a client for the clock (%s)", err.msg))
        return tap_done();
    struct gs_k8s_call_opts o;
    wh_call_opts(c, 0, &o);
    is_int((long long)o.deadline_ms, 0, "no admission deadline: none for the call");
    uint64_t before = gs_k8s_now_ms(c);
    wh_call_opts(c, gs_now_ms() + 5000, &o);
    uint64_t after = gs_k8s_now_ms(c);
    ok(o.deadline_ms >= before + 4000 && o.deadline_ms <= after + 5000,
       "a deadline 5 s away is 5 s away on the client's clock (%llu in [%llu, %llu])",
       (unsigned long long)o.deadline_ms, (unsigned long long)before + 4000,
       (unsigned long long)after + 5000);
    wh_call_opts(c, 1, &o);
    ok(o.deadline_ms != 0 && o.deadline_ms <= gs_k8s_now_ms(c),
       "a passed deadline stays passed (and is not \"none\")");
    gs_k8s_client_free(c);
    return tap_done();
}
