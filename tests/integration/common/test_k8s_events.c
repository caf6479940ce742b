/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Event recorder (kube/event.h) against tests/lib/fakeapi.py, on a fake clock: the first
 * failure creates a core/v1 Event on the object, 1,000 repeats write nothing, the first repeat
 * after the interval raises the same Event's count by all of them, an Event gone (TTL) is created
 * again, distinct objects are held by the write budget, and a refused write is counted, not
 * returned as a hang.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube/event.h"
#include "kube/k8s.h"
#include "fakeapi_proc.h"
#include "tap.h"

static struct fakeapi api;

struct fake_clock {
    pthread_mutex_t mu;
    uint64_t now;
};

static uint64_t clock_now(void *user)
{
    struct fake_clock *c = user;
    pthread_mutex_lock(&c->mu);
    uint64_t n = c->now;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void clock_sleep(void *user, uint64_t ms)
{
    struct fake_clock *c = user;
    pthread_mutex_lock(&c->mu);
    c->now += ms;
    pthread_mutex_unlock(&c->mu);
}

static void advance(struct fake_clock *c, uint64_t ms)
{
    clock_sleep(c, ms);
}

static json_t *only_event(struct gs_k8s_client *k, const char *ns, const char *name)
{
    static const struct gs_k8s_resource events = {"", "v1", "events", true};
    json_t *list = NULL, *found = NULL, *e;
    struct gs_error err = {0};
    size_t i, n = 0;
    if (gs_k8s_list(k, &events, ns, NULL, &list, NULL, &err) < 0)
        return NULL;
    json_array_foreach(json_object_get(list, "items"), i, e)
    {
        const char *on =
            json_string_value(json_object_get(json_object_get(e, "involvedObject"), "name"));
        if (on && strcmp(on, name) == 0) {
            n++;
            found = e;
        }
    }
    json_t *out = n == 1 ? json_incref(found) : NULL;
    json_decref(list);
    return out;
}

static int event_writes(void)
{
    return fakeapi_count(&api, "POST", "/events", NULL) +
           fakeapi_count(&api, "PATCH", "/events", NULL);
}

int main(void)
{
    tap_plan_auto();
    if (fakeapi_start(&api, NULL) < 0) {
        ok(0, "fake API server starts");
        return tap_done();
    }
    struct fake_clock clk = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = 1000000};
    struct gs_kube_config cfg = {.server = api.url};
    struct gs_k8s_options ko = {.now_ms = clock_now,
                                .sleep_ms = clock_sleep,
                                .clock_user = &clk,
                                .qps = -1,
                                .max_attempts = 1};
    struct gs_error err = {0};
    struct gs_k8s_client *k = gs_k8s_client_new_with(&cfg, &ko, &err);
    struct gs_k8s_recorder *rec = gs_k8s_recorder_new(
        k, &(struct gs_k8s_recorder_options){.component = "gpuslice-test", .instance = "node-1"});
    ok(k && rec, "client and recorder");
    struct gs_k8s_object_ref pod = {"v1", "Pod", "team-a", "trainer-0",
                                    "0b6f7c8e-1d2a-4e3b-9c4d-5e6f7a8b9c0d"};

    is_int(gs_k8s_record(rec, &pod, true, "FilteringFailed", "no node fits: %s", "t4"), 1,
           "the first failure is written");
    json_t *ev = only_event(k, "team-a", "trainer-0");
    json_t *io = json_object_get(ev, "involvedObject");
    is_str(json_string_value(json_object_get(io, "kind")), "Pod", "involvedObject.kind");
    is_str(json_string_value(json_object_get(io, "uid")), pod.uid, "involvedObject.uid");
    is_str(json_string_value(json_object_get(io, "namespace")), "team-a",
           "involvedObject.namespace");
    is_str(json_string_value(json_object_get(ev, "type")), "Warning", "type Warning");
    is_str(json_string_value(json_object_get(ev, "reason")), "FilteringFailed", "reason");
    is_str(json_string_value(json_object_get(ev, "message")), "no node fits: t4", "message");
    is_int(json_integer_value(json_object_get(ev, "count")), 1, "count 1");
    is_str(json_string_value(json_object_get(json_object_get(ev, "source"), "component")),
           "gpuslice-test", "source.component");
    is_str(json_string_value(json_object_get(ev, "reportingInstance")), "node-1",
           "reportingInstance");
    like_str(json_string_value(json_object_get(json_object_get(ev, "metadata"), "name")),
             "trainer-0.", "named <object>.<hex> as client-go names it");
    json_decref(ev);

    fakeapi_ctl(&api, "log/clear", NULL);
    int written = 0;
    for (int i = 0; i < 1000; i++)
        written += gs_k8s_record(rec, &pod, true, "FilteringFailed", "no node fits: %s", "t4");
    is_int(written, 0, "1,000 repeats within the interval: nothing written");
    is_int(event_writes(), 0, "no API request at all for them");

    /* Another reason on the same object is another series. */
    is_int(gs_k8s_record(rec, &pod, true, "BindingFailed", "bind to t4 refused"), 1,
           "another reason: its own Event");

    advance(&clk, 61000);
    fakeapi_ctl(&api, "log/clear", NULL);
    is_int(gs_k8s_record(rec, &pod, true, "FilteringFailed", "still no node"), 1,
           "after the interval: written");
    is_int(fakeapi_count(&api, "PATCH", "/events/", NULL), 1, "as a PATCH of the same Event");
    ev = NULL;
    {
        static const struct gs_k8s_resource events = {"", "v1", "events", true};
        json_t *list = NULL, *e;
        size_t i;
        gs_k8s_list(k, &events, "team-a", NULL, &list, NULL, &err);
        json_array_foreach(json_object_get(list, "items"), i, e)
        {
            if (strcmp(json_string_value(json_object_get(e, "reason")), "FilteringFailed") == 0)
                ev = json_incref(e);
        }
        json_decref(list);
    }
    is_int(json_integer_value(json_object_get(ev, "count")), 1002,
           "count = 1 + the 1,000 folded repeats + this one");
    is_str(json_string_value(json_object_get(ev, "message")), "still no node",
           "the newest message");
    ok(strcmp(json_string_value(json_object_get(ev, "firstTimestamp")),
              json_string_value(json_object_get(ev, "lastTimestamp"))) <= 0,
       "firstTimestamp kept, lastTimestamp moved");

    /* The Event expired (TTL): the next write creates a new one. */
    const char *evname =
        json_string_value(json_object_get(json_object_get(ev, "metadata"), "name"));
    static const struct gs_k8s_resource events = {"", "v1", "events", true};
    ok(gs_k8s_delete(k, &events, "team-a", evname, NULL, 0, &err) == 0, "Event deleted");
    json_decref(ev);
    advance(&clk, 61000);
    fakeapi_ctl(&api, "log/clear", NULL);
    is_int(gs_k8s_record(rec, &pod, true, "FilteringFailed", "again"), 1, "written again");
    is_int(fakeapi_count(&api, "POST", "/events", NULL), 1, "created anew after a 404 patch");

    /* Distinct objects at one instant: the budget (burst 25) holds. */
    advance(&clk, 300000); /* bucket full again */
    fakeapi_ctl(&api, "log/clear", NULL);
    written = 0;
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof(name), "flood-%d", i);
        struct gs_k8s_object_ref o = {"v1", "Pod", "team-a", name, NULL};
        written += gs_k8s_record(rec, &o, true, "FilteringFailed", "no");
    }
    is_int(written, 25, "100 distinct objects at once: 25 written (the burst)");
    is_int(event_writes(), 25, "25 API writes");
    /* An object first seen while the budget was empty is written later, in its namespace. */
    advance(&clk, 300000);
    struct gs_k8s_object_ref late = {"v1", "Pod", "team-a", "flood-99", NULL};
    is_int(gs_k8s_record(rec, &late, true, "FilteringFailed", "no"), 1,
           "an object held back by the budget is written once tokens are back");
    ev = only_event(k, "team-a", "flood-99");
    is_int(json_integer_value(json_object_get(ev, "count")), 2,
           "in its namespace, counting the call held back");
    json_decref(ev);

    /* A refused write is counted and returned, and the next one after the interval goes on. */
    advance(&clk, 300000);
    fakeapi_ctl(&api, "fail", "{\"count\":1,\"status\":403,\"match\":\"/events\"}");
    struct gs_k8s_object_ref other = {"v1", "Pod", "team-b", "x", NULL};
    ok(gs_k8s_record(rec, &other, true, "AllocationFailed", "boom") < 0,
       "a refused write returns the error");
    struct gs_k8s_recorder_stats st;
    gs_k8s_recorder_get_stats(rec, &st);
    is_uint(st.failed, 1, "counted as failed");
    ok(st.suppressed >= 1075, "suppressed counted (1,000 repeats + 75 over the budget)");
    gs_k8s_recorder_free(rec);
    gs_k8s_client_free(k);
    fakeapi_stop(&api);
    return tap_done();
}
