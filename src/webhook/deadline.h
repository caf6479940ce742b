/* SPDX-License-Identifier: Apache-2.0 */
/*
 * API calls bounded by the admission's deadline. An admission must be answered before the API
 * server gives up on the webhook (timeoutSeconds), however slow the API server is. The bound is
 * the HTTP layer's own (issue 19): every call of an admission is given its deadline as
 * gs_k8s_call_opts, so each attempt's timeout is cut to what is left and the call returns
 * -ETIMEDOUT once it has passed — no call outlives its admission, none is left running in a
 * detached thread. What must happen at once (the templates of one pod) runs in threads that are
 * all joined before the admission answers.
 *
 *   struct gs_k8s_call_opts o;
 *   wh_call_opts(client, deadline_ms, &o);           // gs_now_ms() deadline -> client clock
 *   gs_k8s_get_with(client, ..., &o, &obj, &err);
 *   wh_run_all(n, create_fn, args, codes, errs);     // n calls at once, all joined
 */
#ifndef GS_WEBHOOK_DEADLINE_H
#define GS_WEBHOOK_DEADLINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "kube/k8s.h"

/* The client's call options for an admission deadline on the gs_now_ms() clock (0 = none): the
 * same instant on the client's clock. A deadline already passed stays passed. */
void wh_call_opts(const struct gs_k8s_client *c, uint64_t deadline_ms, struct gs_k8s_call_opts *o);

typedef int (*wh_call_fn)(void *arg, struct gs_error *err);

/* fn(args[i]) for every i < n at once, each in a thread of its own (the last in the caller's;
 * a call whose thread cannot start runs in the caller's too), all joined before returning:
 * codes[i] and errs[i] (message when negative). Each call must bound itself (wh_call_opts). */
void wh_run_all(size_t n, wh_call_fn fn, void *const *args, int *codes, struct gs_error *errs);

#endif /* GS_WEBHOOK_DEADLINE_H */
