/* SPDX-License-Identifier: Apache-2.0 */
/* API calls bounded by the admission's deadline: the HTTP layer's timeouts, joined threads. */
#include "webhook/deadline.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/clock.h"

void wh_call_opts(const struct gs_k8s_client *c, uint64_t deadline_ms, struct gs_k8s_call_opts *o)
{
    *o = (struct gs_k8s_call_opts){0};
    if (!deadline_ms)
        return;
    uint64_t now = gs_now_ms(), client_now = gs_k8s_now_ms(c);
    uint64_t left = deadline_ms > now ? deadline_ms - now : 0;
    /* A deadline of exactly "now" would read as passed only from the next millisecond on;
     * client_now may be 0 under a test clock, and 0 means "none": keep it at least 1. */
    o->deadline_ms = client_now + left ? client_now + left : 1;
}

struct job {
    wh_call_fn fn;
    void *arg;
    int code;
    struct gs_error err;
    pthread_t thread;
    bool threaded;
};

static void *run(void *p)
{
    struct job *j = p;
    j->code = j->fn(j->arg, &j->err);
    return NULL;
}

void wh_run_all(size_t n, wh_call_fn fn, void *const *args, int *codes, struct gs_error *errs)
{
    struct job *jobs = calloc(n ? n : 1, sizeof(*jobs));
    if (!jobs) { /* no memory for the bookkeeping: one after another, still bounded */
        for (size_t i = 0; i < n; i++) {
            errs[i] = (struct gs_error){0};
            codes[i] = fn(args[i], &errs[i]);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        jobs[i] = (struct job){.fn = fn, .arg = args[i]};
        if (i + 1 < n)
            jobs[i].threaded = pthread_create(&jobs[i].thread, NULL, run, &jobs[i]) == 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].threaded)
            run(&jobs[i]);
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].threaded)
            pthread_join(jobs[i].thread, NULL);
        codes[i] = jobs[i].code;
        errs[i] = jobs[i].err;
    }
    free(jobs);
}
