/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes client against tests/lib/fakeapi.py over loopback HTTP: CRUD with the API's own
 * error messages, list with selectors and pages, watch (events, bookmarks, re-open, 410 -> relist,
 * stop from another thread), retries on 500/429/timeouts with backoff, the QPS bucket, token
 * rotation, oversize responses and events. Waits (backoff, rate limit) go through a fake clock,
 * so nothing here depends on timing.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fs.h"
#include "kube/k8s.h"
#include "fakeapi_proc.h"
#include "tap.h"

static struct fakeapi api;
static char tmpdir[256];

/* ---- fake clock ----------------------------------------------------------------------------- */

struct fake_clock {
    pthread_mutex_t mu;
    uint64_t now;
    uint64_t slept;
    int sleeps;
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
    c->slept += ms;
    c->sleeps++;
    pthread_mutex_unlock(&c->mu);
}

static struct gs_k8s_client *client_with(struct fake_clock *clk, struct gs_k8s_options *o)
{
    struct gs_kube_config cfg = {.server = api.url};
    struct gs_error err = {0};
    struct gs_k8s_client *c;

    if (clk) {
        o->now_ms = clock_now;
        o->sleep_ms = clock_sleep;
        o->clock_user = clk;
    }
    c = gs_k8s_client_new_with(&cfg, o, &err);
    if (!c)
        diag("client: %s", err.msg);
    return c;
}

static json_t *claim(const char *name, const char *label)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:[{s:s, s:{s:s}}]}}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name", name,
                     "labels", "app", label, "spec", "devices", "requests", "name", "gpu",
                     "exactly", "deviceClassName", "hami-core-gpu.project-hami.io");
}

static json_t *slice(const char *name, const char *node, const char *driver)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:i, s:i}, s:[{s:s}]}}",
                     "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata",
                     "name", name, "spec", "driver", driver, "nodeName", node, "pool", "name", node,
                     "generation", 1, "resourceSliceCount", 1, "devices", "name", "hami-gpu-0");
}

static const char *meta(json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

/* ---- CRUD ----------------------------------------------------------------------------------- */

static void test_crud(void)
{
    struct gs_k8s_options o = {0};
    struct gs_k8s_client *c = client_with(NULL, &o);
    struct gs_error err = {0};
    json_t *in = claim("claim-a", "web"), *out = NULL, *got = NULL;
    int r;

    fakeapi_ctl(&api, "reset", NULL);
    r = gs_k8s_create(c, &gs_k8s_resourceclaims, "default", in, 0, &out, &err);
    is_int(r, 0, "create claim");
    is_str(meta(out, "name"), "claim-a", "created name");
    is_str(meta(out, "namespace"), "default", "created namespace");
    ok(meta(out, "uid") && strlen(meta(out, "uid")) == 36, "server assigned a uid");
    char rv1[32];
    snprintf(rv1, sizeof(rv1), "%s",
             meta(out, "resourceVersion") ? meta(out, "resourceVersion") : "");
    ok(rv1[0] != '\0', "server assigned a resourceVersion");
    json_decref(out);

    r = gs_k8s_create(c, &gs_k8s_resourceclaims, "default", in, 0, NULL, &err);
    is_int(r, -EEXIST, "second create -> -EEXIST");
    is_str(err.msg, "resourceclaims.resource.k8s.io \"claim-a\" already exists (409)",
           "AlreadyExists message from the Status");

    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "nope", &got, &err);
    is_int(r, -ENOENT, "get missing -> -ENOENT");
    is_str(err.msg, "resourceclaims.resource.k8s.io \"nope\" not found (404)",
           "NotFound message names the claim and the code");
    ok(got == NULL, "nothing handed out on error");

    r = gs_k8s_get(c, &gs_k8s_resourceclaims, NULL, "claim-a", &got, &err);
    is_int(r, 0, "get (client namespace)");
    is_str(json_string_value(
               json_object_get(json_object_get(json_object_get(got, "metadata"), "labels"), "app")),
           "web", "label round-trips");

    /* optimistic concurrency */
    json_t *stale = json_deep_copy(got);
    json_object_set_new(json_object_get(got, "metadata"), "annotations",
                        json_pack("{s:s}", "a", "1"));
    r = gs_k8s_update(c, &gs_k8s_resourceclaims, "default", NULL, NULL, got, 0, &out, &err);
    is_int(r, 0, "update with the current resourceVersion");
    ok(meta(out, "resourceVersion") && strcmp(meta(out, "resourceVersion"), rv1) != 0,
       "resourceVersion advanced");
    json_decref(out);
    r = gs_k8s_update(c, &gs_k8s_resourceclaims, "default", NULL, NULL, stale, 0, NULL, &err);
    is_int(r, -EBUSY, "update with a stale resourceVersion -> -EBUSY");
    like_str(err.msg, "the object has been modified", "Conflict message");
    like_str(err.msg, "(409)", "Conflict code");
    json_decref(stale);

    /* status subresource */
    json_t *st = json_deep_copy(got);
    json_object_del(json_object_get(st, "metadata"), "resourceVersion");
    json_object_set_new(st, "status",
                        json_pack("{s:{s:{s:[]}}}", "allocation", "devices", "results"));
    r = gs_k8s_update(c, &gs_k8s_resourceclaims, "default", "claim-a", "status", st, 0, &out, &err);
    is_int(r, 0, "update /status");
    ok(json_is_object(json_object_get(json_object_get(out, "status"), "allocation")),
       "status written");
    json_decref(out);
    json_decref(st);
    json_decref(got);
    is_int(fakeapi_count(&api, "PUT", "/namespaces/default/resourceclaims/claim-a/status", NULL), 1,
           "PUT went to .../resourceclaims/claim-a/status");

    /* patches */
    json_t *mp = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "tier", "gpu");
    r = gs_k8s_patch(c, &gs_k8s_resourceclaims, "default", "claim-a", NULL, GS_K8S_PATCH_MERGE, mp,
                     0, &out, &err);
    is_int(r, 0, "merge patch");
    is_str(json_string_value(json_object_get(
               json_object_get(json_object_get(out, "metadata"), "labels"), "tier")),
           "gpu", "merge patch applied");
    json_decref(out);
    json_decref(mp);
    json_t *req = fakeapi_request(&api, -1);
    is_str(json_string_value(json_object_get(req, "content_type")), "application/merge-patch+json",
           "merge patch content type");
    json_decref(req);
    json_t *jp = json_pack("[{s:s, s:s, s:s}]", "op", "add", "path", "/metadata/annotations/b",
                           "value", "2");
    r = gs_k8s_patch(c, &gs_k8s_resourceclaims, "default", "claim-a", NULL, GS_K8S_PATCH_JSON, jp,
                     0, &out, &err);
    is_int(r, 0, "JSON patch");
    is_str(json_string_value(json_object_get(
               json_object_get(json_object_get(out, "metadata"), "annotations"), "b")),
           "2", "JSON patch applied");
    json_decref(out);
    json_decref(jp);
    req = fakeapi_request(&api, -1);
    is_str(json_string_value(json_object_get(req, "content_type")), "application/json-patch+json",
           "JSON patch content type");
    json_decref(req);

    /* dry run and generateName */
    json_t *dry = claim("claim-dry", "x");
    r = gs_k8s_create(c, &gs_k8s_resourceclaims, "default", dry, GS_K8S_DRY_RUN, NULL, &err);
    is_int(r, 0, "dry-run create");
    req = fakeapi_request(&api, -1);
    is_str(json_string_value(json_object_get(json_object_get(req, "query"), "dryRun")), "All",
           "dryRun=All sent");
    json_decref(req);
    is_int(gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "claim-dry", NULL, &err), -ENOENT,
           "dry-run created nothing");
    json_decref(dry);
    json_t *gen = json_pack("{s:{s:s}, s:{}}", "metadata", "generateName", "gpu-", "spec");
    r = gs_k8s_create(c, &gs_k8s_resourceclaimtemplates, "default", gen, 0, &out, &err);
    is_int(r, 0, "create with generateName");
    ok(meta(out, "name") && strncmp(meta(out, "name"), "gpu-", 4) == 0 &&
           strlen(meta(out, "name")) == 9,
       "generated name gpu-xxxxx (%s)", meta(out, "name") ? meta(out, "name") : "null");
    json_decref(out);
    json_decref(gen);

    /* delete with preconditions */
    r = gs_k8s_delete(c, &gs_k8s_resourceclaims, "default", "claim-a",
                      "00000000-0000-0000-0000-000000000000", 0, &err);
    is_int(r, -EBUSY, "delete with a wrong uid precondition -> -EBUSY");
    like_str(err.msg, "Precondition failed", "precondition message");
    r = gs_k8s_delete(c, &gs_k8s_resourceclaims, "default", "claim-a", NULL, 0, &err);
    is_int(r, 0, "delete");
    r = gs_k8s_delete(c, &gs_k8s_resourceclaims, "default", "claim-a", NULL, 0, &err);
    is_int(r, -ENOENT, "delete again -> -ENOENT");

    /* cluster-scoped */
    json_t *s1 = slice("node-1-gpu", "node-1", "hami-core-gpu.project-hami.io");
    r = gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s1, 0, NULL, &err);
    is_int(r, 0, "create a cluster-scoped ResourceSlice");
    is_int(fakeapi_count(&api, "POST", "/apis/resource.k8s.io/v1/resourceslices", NULL), 1,
           "POST to /apis/resource.k8s.io/v1/resourceslices");
    json_decref(s1);
    json_decref(in);
    gs_k8s_client_free(c);
}

/* ---- list ----------------------------------------------------------------------------------- */

static void test_list(void)
{
    struct gs_k8s_options o = {0};
    struct gs_k8s_client *c = client_with(NULL, &o);
    struct gs_error err = {0};
    json_t *out = NULL;
    char *rv = NULL;
    int r;

    fakeapi_ctl(&api, "reset", NULL);
    for (int i = 0; i < 5; i++) {
        char name[32], node[32];
        snprintf(name, sizeof(name), "s-%d", i);
        snprintf(node, sizeof(node), "node-%d", i % 2);
        json_t *s =
            slice(name, node, i == 4 ? "other.example.com" : "hami-core-gpu.project-hami.io");
        gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s, 0, NULL, &err);
        json_decref(s);
    }
    json_t *a = claim("a", "web"), *b = claim("b", "db");
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", a, 0, NULL, &err);
    gs_k8s_create(c, &gs_k8s_resourceclaims, "team", b, 0, NULL, &err);
    json_decref(a);
    json_decref(b);

    struct gs_k8s_list_options lo = {.field_selector = "spec.nodeName=node-0"};
    r = gs_k8s_list(c, &gs_k8s_resourceslices, NULL, &lo, &out, &rv, &err);
    is_int(r, 0, "list with a field selector");
    is_uint(json_array_size(json_object_get(out, "items")), 3, "3 slices on node-0");
    json_t *state = fakeapi_get(&api, "state");
    char want_rv[32];
    snprintf(want_rv, sizeof(want_rv), "%lld",
             (long long)json_integer_value(json_object_get(state, "resourceVersion")));
    json_decref(state);
    is_str(rv, want_rv, "list resourceVersion is the store's");
    json_decref(out);
    free(rv);

    lo = (struct gs_k8s_list_options){.field_selector =
                                          "spec.nodeName=node-0,spec.driver!=other.example.com"};
    r = gs_k8s_list(c, &gs_k8s_resourceslices, NULL, &lo, &out, NULL, &err);
    is_uint(json_array_size(json_object_get(out, "items")), 2, "two field requirements (= and !=)");
    json_decref(out);

    lo = (struct gs_k8s_list_options){.label_selector = "app in (web,api)"};
    r = gs_k8s_list(c, &gs_k8s_resourceclaims, NULL, &lo, &out, NULL, &err);
    is_int(r, 0, "list claims in all namespaces with a label selector");
    is_uint(json_array_size(json_object_get(out, "items")), 1,
            "one claim matches app in (web,api)");
    is_str(meta(json_array_get(json_object_get(out, "items"), 0), "name"), "a", "it is claim a");
    json_decref(out);
    r = gs_k8s_list(c, &gs_k8s_resourceclaims, "team", NULL, &out, NULL, &err);
    is_uint(json_array_size(json_object_get(out, "items")), 1, "namespace-scoped list");
    json_decref(out);

    fakeapi_ctl(&api, "log/clear", NULL);
    lo = (struct gs_k8s_list_options){.page_size = 2};
    r = gs_k8s_list(c, &gs_k8s_resourceslices, NULL, &lo, &out, NULL, &err);
    is_int(r, 0, "paged list");
    is_uint(json_array_size(json_object_get(out, "items")), 5, "all 5 slices joined from pages");
    ok(json_object_get(json_object_get(out, "metadata"), "continue") == NULL,
       "no continue token left in the joined list");
    is_int(fakeapi_count(&api, "GET", "/resourceslices", "limit"), 3, "3 pages of 2 requested");
    is_int(fakeapi_count(&api, "GET", "/resourceslices", "continue"), 2, "2 with a continue token");
    json_decref(out);

    lo = (struct gs_k8s_list_options){.field_selector = "bad selector"};
    r = gs_k8s_list(c, &gs_k8s_resourceslices, NULL, &lo, &out, NULL, &err);
    is_int(r, -EINVAL, "invalid selector -> -EINVAL (400)");
    like_str(err.msg, "invalid field selector", "400 message from the Status");
    gs_k8s_client_free(c);
}

/* ---- watch ---------------------------------------------------------------------------------- */

struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int n;
    enum gs_k8s_event_type types[64];
    char names[64][64];
    int bookmarks;
    struct gs_k8s_watch *w;
    const char *rv;
    int result;
    struct gs_error err;
    bool done;
    int stop_after; /* callback returns -ECONNABORTED after this many non-bookmark events */
};

static int record(void *user, enum gs_k8s_event_type t, json_t *obj)
{
    struct recorder *rc = user;
    pthread_mutex_lock(&rc->mu);
    if (t == GS_K8S_EVENT_BOOKMARK) {
        rc->bookmarks++;
    } else if (rc->n < 64) {
        rc->types[rc->n] = t;
        snprintf(rc->names[rc->n], sizeof(rc->names[0]), "%s",
                 meta(obj, "name") ? meta(obj, "name") : "");
        rc->n++;
    }
    int stop = rc->stop_after && rc->n >= rc->stop_after;
    pthread_cond_broadcast(&rc->cond);
    pthread_mutex_unlock(&rc->mu);
    return stop ? -ECONNABORTED : 0;
}

static void *watch_thread(void *arg)
{
    struct recorder *rc = arg;
    int r = gs_k8s_watch_run(rc->w, rc->rv, record, rc, &rc->err);
    pthread_mutex_lock(&rc->mu);
    rc->result = r;
    rc->done = true;
    pthread_cond_broadcast(&rc->cond);
    pthread_mutex_unlock(&rc->mu);
    return NULL;
}

/* Wait (at most 20 s, a safety net, not a measurement) until pred holds. */
static bool wait_until(struct recorder *rc, bool (*pred)(struct recorder *, int), int arg)
{
    struct timespec dl;
    bool okay;

    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 20;
    pthread_mutex_lock(&rc->mu);
    while (!(okay = pred(rc, arg)))
        if (pthread_cond_timedwait(&rc->cond, &rc->mu, &dl) != 0)
            break;
    okay = pred(rc, arg);
    pthread_mutex_unlock(&rc->mu);
    return okay;
}

static bool have_events(struct recorder *rc, int n)
{
    return rc->n >= n || rc->done;
}

static bool have_bookmarks(struct recorder *rc, int n)
{
    return rc->bookmarks >= n || rc->done;
}

static bool is_done(struct recorder *rc, int n)
{
    (void)n;
    return rc->done;
}

static void recorder_init(struct recorder *rc)
{
    memset(rc, 0, sizeof(*rc));
    pthread_mutex_init(&rc->mu, NULL);
    pthread_cond_init(&rc->cond, NULL);
}

static void recorder_fini(struct recorder *rc)
{
    pthread_mutex_destroy(&rc->mu);
    pthread_cond_destroy(&rc->cond);
}

static void test_watch(void)
{
    struct gs_k8s_options o = {0};
    struct gs_k8s_client *c = client_with(NULL, &o);
    struct gs_error err = {0};
    struct recorder rc;
    pthread_t t;
    char *rv = NULL;
    json_t *out = NULL;
    char last[128];

    fakeapi_ctl(&api, "reset", NULL);
    json_t *s0 = slice("pre", "node-1", "hami-core-gpu.project-hami.io");
    gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s0, 0, NULL, &err);
    json_decref(s0);
    gs_k8s_list(c, &gs_k8s_resourceslices, NULL, NULL, &out, &rv, &err);
    json_decref(out);

    recorder_init(&rc);
    struct gs_k8s_watch_options wo = {.field_selector = "spec.nodeName=node-1", .timeout_s = 1};
    rc.w = gs_k8s_watch_new(c, &gs_k8s_resourceslices, NULL, &wo, &err);
    rc.rv = rv;
    ok(rc.w != NULL, "watch created");
    pthread_create(&t, NULL, watch_thread, &rc);

    json_t *s1 = slice("s1", "node-1", "d"), *s2 = slice("s2", "node-2", "d");
    gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s1, 0, NULL, &err);
    gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s2, 0, NULL, &err); /* filtered out */
    json_decref(s1);
    json_decref(s2);
    json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "x", "y");
    gs_k8s_patch(c, &gs_k8s_resourceslices, NULL, "s1", NULL, GS_K8S_PATCH_MERGE, p, 0, NULL, &err);
    json_decref(p);
    gs_k8s_delete(c, &gs_k8s_resourceslices, NULL, "s1", NULL, 0, &err);
    ok(wait_until(&rc, have_events, 3), "three events arrive");
    /* the stream ends after timeoutSeconds=1 and is re-opened from the last resourceVersion:
     * 7 bookmarks 0.2 s apart cannot all come from the first stream */
    ok(wait_until(&rc, have_bookmarks, 7), "bookmarks arrive");
    json_t *s3 = slice("s3", "node-1", "d");
    gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s3, 0, NULL, &err);
    json_decref(s3);
    ok(wait_until(&rc, have_events, 4), "an event after the re-open arrives");
    gs_k8s_watch_stop(rc.w);
    ok(wait_until(&rc, is_done, 0), "watch stops when asked from another thread");
    pthread_join(t, NULL);
    is_int(rc.result, -ECANCELED, "stopped watch returns -ECANCELED");
    is_int(rc.n, 4, "exactly the 4 events of node-1 (node-2 filtered out by the server)");
    ok(rc.types[0] == GS_K8S_EVENT_ADDED && !strcmp(rc.names[0], "s1"), "ADDED s1");
    ok(rc.types[1] == GS_K8S_EVENT_MODIFIED && !strcmp(rc.names[1], "s1"), "MODIFIED s1");
    ok(rc.types[2] == GS_K8S_EVENT_DELETED && !strcmp(rc.names[2], "s1"), "DELETED s1");
    ok(rc.types[3] == GS_K8S_EVENT_ADDED && !strcmp(rc.names[3], "s3"), "ADDED s3 after re-open");
    gs_k8s_watch_resource_version(rc.w, last, sizeof(last));
    json_t *s3o = NULL;
    gs_k8s_get(c, &gs_k8s_resourceslices, NULL, "s3", &s3o, &err);
    ok(atoll(last) >= atoll(meta(s3o, "resourceVersion") ? meta(s3o, "resourceVersion") : "0"),
       "watch tracked the resourceVersion (%s)", last);
    json_decref(s3o);
    ok(fakeapi_count(&api, "GET", "/resourceslices", "watch") >= 2,
       "the stream was re-opened after the server ended it");
    /* the first watch request carried the list's resourceVersion and asked for bookmarks */
    {
        json_t *log = fakeapi_get(&api, "log"), *r;
        size_t i;
        bool found = false;
        json_array_foreach(json_object_get(log, "requests"), i, r)
        {
            json_t *q = json_object_get(r, "query");
            if (json_object_get(q, "watch") && !found) {
                found = true;
                is_str(json_string_value(json_object_get(q, "resourceVersion")), rv,
                       "watch from the list's resourceVersion");
                is_str(json_string_value(json_object_get(q, "allowWatchBookmarks")), "true",
                       "allowWatchBookmarks=true");
                is_str(json_string_value(json_object_get(q, "fieldSelector")),
                       "spec.nodeName=node-1", "field selector sent");
            }
        }
        json_decref(log);
    }
    gs_k8s_watch_free(rc.w);
    recorder_fini(&rc);

    /* a callback error ends the watch with its code */
    recorder_init(&rc);
    rc.stop_after = 1;
    rc.w = gs_k8s_watch_new(c, &gs_k8s_resourceslices, NULL, NULL, &err);
    rc.rv = "";
    int r = gs_k8s_watch_run(rc.w, "", record, &rc, &rc.err);
    is_int(r, -ECONNABORTED, "callback's code ends the watch (initial ADDED of existing objects)");
    gs_k8s_watch_free(rc.w);
    recorder_fini(&rc);

    /* 410: compacted history -> -ESTALE, relist, watch again */
    fakeapi_ctl(&api, "compact", NULL);
    recorder_init(&rc);
    rc.w = gs_k8s_watch_new(c, &gs_k8s_resourceslices, NULL, NULL, &err);
    r = gs_k8s_watch_run(rc.w, rv, record, &rc, &err);
    is_int(r, -ESTALE, "watch from a compacted resourceVersion -> -ESTALE");
    like_str(err.msg, "too old resource version", "410 message");
    free(rv);
    rv = NULL;
    gs_k8s_list(c, &gs_k8s_resourceslices, NULL, NULL, &out, &rv, &err);
    json_decref(out);
    rc.rv = rv;
    pthread_create(&t, NULL, watch_thread, &rc);
    json_t *s4 = slice("s4", "node-1", "d");
    gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s4, 0, NULL, &err);
    json_decref(s4);
    ok(wait_until(&rc, have_events, 1), "after the relist the watch sees new events");
    /* 410 while streaming (ERROR event) */
    fakeapi_ctl(&api, "expire-watches", NULL);
    ok(wait_until(&rc, is_done, 0), "expired watch ends");
    pthread_join(t, NULL);
    is_int(rc.result, -ESTALE, "ERROR 410 event during the stream -> -ESTALE");
    is_int(rc.n, 1, "the ERROR event is not delivered as an object event");
    gs_k8s_watch_free(rc.w);
    recorder_fini(&rc);
    free(rv);

    /* stop before run returns at once */
    struct gs_k8s_watch *w = gs_k8s_watch_new(c, &gs_k8s_resourceslices, NULL, NULL, &err);
    gs_k8s_watch_stop(w);
    is_int(gs_k8s_watch_run(w, "", record, NULL, &err), -ECANCELED, "stop before run");
    gs_k8s_watch_free(w);
    gs_k8s_client_free(c);
}

/* ---- list-watch (informer loop) ------------------------------------------------------------- */

struct informer {
    struct recorder rc; /* events */
    int lists;
    size_t last_items;
};

static int on_list(void *user, json_t *list)
{
    struct informer *in = user;
    pthread_mutex_lock(&in->rc.mu);
    in->lists++;
    in->last_items = json_array_size(json_object_get(list, "items"));
    pthread_cond_broadcast(&in->rc.cond);
    pthread_mutex_unlock(&in->rc.mu);
    return 0;
}

static int on_informer_event(void *user, enum gs_k8s_event_type t, json_t *obj)
{
    struct informer *in = user;
    return record(&in->rc, t, obj);
}

static void *informer_thread(void *arg)
{
    struct informer *in = arg;
    int r = gs_k8s_list_watch(in->rc.w, on_list, on_informer_event, in, &in->rc.err);
    pthread_mutex_lock(&in->rc.mu);
    in->rc.result = r;
    in->rc.done = true;
    pthread_cond_broadcast(&in->rc.cond);
    pthread_mutex_unlock(&in->rc.mu);
    return NULL;
}

static bool have_lists(struct recorder *rc, int n)
{
    struct informer *in = (struct informer *)rc; /* rc is the first member */
    return in->lists >= n || rc->done;
}

static void test_list_watch(void)
{
    struct gs_k8s_options o = {0};
    struct gs_k8s_client *c = client_with(NULL, &o);
    struct gs_error err = {0};
    struct informer in = {0};
    pthread_t t;

    fakeapi_ctl(&api, "reset", NULL);
    json_t *a = claim("a", "web"), *b = claim("b", "db");
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", a, 0, NULL, &err);
    recorder_init(&in.rc);
    struct gs_k8s_watch_options wo = {.label_selector = "app=web"};
    in.rc.w = gs_k8s_watch_new(c, &gs_k8s_resourceclaims, "default", &wo, &err);
    pthread_create(&t, NULL, informer_thread, &in);
    ok(wait_until(&in.rc, have_lists, 1), "informer lists first");
    is_uint(in.last_items, 1, "the list holds the one matching claim");
    json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", "x", "1");
    gs_k8s_patch(c, &gs_k8s_resourceclaims, "default", "a", NULL, GS_K8S_PATCH_MERGE, p, 0, NULL,
                 &err);
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", b, 0, NULL, &err); /* not app=web */
    ok(wait_until(&in.rc, have_events, 1), "then watches: the update arrives");
    ok(in.rc.types[0] == GS_K8S_EVENT_MODIFIED && !strcmp(in.rc.names[0], "a"),
       "MODIFIED a (b filtered by the label selector)");
    json_t *c2 = claim("c", "web");
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", c2, 0, NULL, &err);
    fakeapi_ctl(&api, "expire-watches", NULL); /* history gone: the next watch needs a relist */
    ok(wait_until(&in.rc, have_lists, 2), "410 -> relist");
    is_uint(in.last_items, 2, "the relist sees the current state (a and c)");
    gs_k8s_watch_stop(in.rc.w);
    ok(wait_until(&in.rc, is_done, 0), "informer stops");
    pthread_join(t, NULL);
    is_int(in.rc.result, -ECANCELED, "stopped informer returns -ECANCELED");
    is_int(in.lists, 2, "listed exactly twice");
    gs_k8s_watch_free(in.rc.w);
    recorder_fini(&in.rc);
    json_decref(p);
    json_decref(a);
    json_decref(b);
    json_decref(c2);
    gs_k8s_client_free(c);
}

/* ---- retries and rate limit ----------------------------------------------------------------- */

static void test_retries(void)
{
    struct fake_clock clk = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = 1000};
    struct gs_k8s_options o = {
        .max_attempts = 3, .backoff_base_ms = 100, .backoff_max_ms = 1000, .qps = -1};
    struct gs_k8s_client *c = client_with(&clk, &o);
    struct gs_k8s_stats st;
    struct gs_error err = {0};
    json_t *in = claim("r", "x"), *out = NULL;
    int r;

    fakeapi_ctl(&api, "reset", NULL);
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", in, 0, NULL, &err);
    fakeapi_ctl(&api, "log/clear", NULL);

    fakeapi_ctl(&api, "fail", "{\"count\":2,\"status\":500}");
    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", &out, &err);
    is_int(r, 0, "two 500s then success");
    json_decref(out);
    gs_k8s_client_stats(c, &st);
    is_uint(st.requests, 4, "3 GETs + the create were sent");
    is_uint(st.retries, 2, "2 retries");
    is_int(fakeapi_count(&api, "GET", "/resourceclaims/r", NULL), 3, "server saw 3 GETs");
    ok(st.backoff_wait_ms <= 100 + 200, "full jitter: sleeps within base*2^n caps (%llu ms)",
       (unsigned long long)st.backoff_wait_ms);
    /* Full jitter may draw 0 ms, which is not slept: count at most two sleeps, and check that
     * the clock slept exactly the backoff the client reports. */
    ok(clk.sleeps <= 2, "at most two backoff sleeps (%d)", clk.sleeps);
    is_uint(clk.slept, st.backoff_wait_ms, "the clock slept the reported backoff");

    fakeapi_ctl(&api, "fail", "{\"count\":5,\"status\":503,\"message\":\"etcd is down\"}");
    fakeapi_ctl(&api, "log/clear", NULL);
    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", &out, &err);
    is_int(r, -EIO, "503 on every attempt -> -EIO");
    is_str(err.msg, "etcd is down (503)", "the server's message and code");
    is_int(fakeapi_count(&api, "GET", NULL, NULL), 3, "bounded: max_attempts=3 requests");
    fakeapi_ctl(&api, "reset", NULL);
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", in, 0, NULL, &err);

    fakeapi_ctl(&api, "fail", "{\"count\":1,\"status\":429,\"retry_after\":7}");
    gs_k8s_client_stats(c, &st);
    uint64_t before = st.backoff_wait_ms;
    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", &out, &err);
    is_int(r, 0, "429 then success");
    json_decref(out);
    gs_k8s_client_stats(c, &st);
    is_uint(st.last_backoff_ms, 7000, "Retry-After: 7 honoured (7000 ms)");
    is_uint(st.backoff_wait_ms - before, 7000, "and nothing else slept");

    fakeapi_ctl(&api, "fail", "{\"count\":3,\"status\":429,\"retry_after\":1}");
    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", &out, &err);
    is_int(r, -EAGAIN, "429 on every attempt -> -EAGAIN");
    like_str(err.msg, "(429)", "429 message");

    fakeapi_ctl(&api, "fail", "{\"count\":1,\"status\":500}");
    r = gs_k8s_create(c, &gs_k8s_resourceclaims, "default", in, 0, NULL, &err);
    is_int(r, -EEXIST, "POST retried after a 500 (and then finds the object exists)");

    /* a watch that gets 503 twice backs off and opens again */
    json_t *dc = json_pack("{s:s, s:s, s:{s:s}, s:{}}", "apiVersion", "resource.k8s.io/v1", "kind",
                           "DeviceClass", "metadata", "name", "gpu.example.com", "spec");
    gs_k8s_create(c, &gs_k8s_deviceclasses, NULL, dc, 0, NULL, &err);
    json_decref(dc);
    fakeapi_ctl(&api, "log/clear", NULL);
    fakeapi_ctl(&api, "fail", "{\"count\":2,\"status\":503,\"match\":\"/deviceclasses\"}");
    struct gs_k8s_watch *w = gs_k8s_watch_new(c, &gs_k8s_deviceclasses, NULL, NULL, &err);
    struct recorder rc;
    recorder_init(&rc);
    rc.stop_after = 1;
    r = gs_k8s_watch_run(w, "", record, &rc, &err);
    is_int(r, -ECONNABORTED, "watch survives two 503s and delivers the event");
    is_int(fakeapi_count(&api, "GET", "/deviceclasses", "watch"), 3, "three watch requests");
    fakeapi_ctl(&api, "fail", "{\"count\":3,\"status\":503,\"match\":\"/deviceclasses\"}");
    r = gs_k8s_watch_run(w, "", record, &rc, &err);
    is_int(r, -EIO, "max_attempts failed watch opens end the watch with -EIO");
    like_str(err.msg, "injected fault: 503 (503)", "with the server's message");
    recorder_fini(&rc);
    gs_k8s_watch_free(w);

    json_decref(in);
    gs_k8s_client_free(c);

    /* timeouts: a GET is retried, a POST is not (it may have been applied) */
    struct gs_k8s_options ot = {.timeout_ms = 300, .max_attempts = 2, .qps = -1};
    struct fake_clock clk2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
    c = client_with(&clk2, &ot);
    fakeapi_ctl(&api, "delay", "{\"count\":1,\"seconds\":1.5,\"method\":\"GET\"}");
    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", &out, &err);
    is_int(r, 0, "GET that timed out once succeeds on the retry");
    json_decref(out);
    gs_k8s_client_stats(c, &st);
    is_uint(st.retries, 1, "one retry after the timeout");
    fakeapi_ctl(&api, "delay", "{\"count\":1,\"seconds\":1.5,\"method\":\"POST\"}");
    json_t *n2 = claim("r2", "x");
    r = gs_k8s_create(c, &gs_k8s_resourceclaims, "default", n2, 0, NULL, &err);
    is_int(r, -ETIMEDOUT, "POST timing out is not retried");
    gs_k8s_client_stats(c, &st);
    is_uint(st.retries, 1, "no retry for the POST");
    json_decref(n2);
    gs_k8s_client_free(c);

    /* QPS: burst 3 then one request per 1/qps seconds, counted on a fake clock */
    struct fake_clock clk3 = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = 5000};
    struct gs_k8s_options oq = {.qps = 2, .burst = 3};
    c = client_with(&clk3, &oq);
    fakeapi_ctl(&api, "log/clear", NULL);
    for (int i = 0; i < 7; i++)
        gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", NULL, &err);
    gs_k8s_client_stats(c, &st);
    is_uint(st.requests, 7, "7 requests sent");
    is_int(fakeapi_count(&api, "GET", NULL, NULL), 7, "server saw 7");
    is_uint(st.throttled, 4, "the 3 of the burst went at once, the other 4 waited");
    is_uint(st.throttle_wait_ms, 2000, "each waited 1/qps = 500 ms");
    is_uint(clk3.slept, 2000, "the clock slept exactly that");
    clock_sleep(&clk3, 10000); /* idle: the bucket refills to the burst, not beyond */
    for (int i = 0; i < 4; i++)
        gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", NULL, &err);
    gs_k8s_client_stats(c, &st);
    is_uint(st.throttled, 5, "after idling, a burst of 3 again, the 4th waits");
    gs_k8s_client_free(c);

    /* a rate that is not a whole number of milliseconds per token loses nothing to rounding */
    struct fake_clock clk4 = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = 5000};
    struct gs_k8s_options o3 = {.qps = 3, .burst = 1};
    c = client_with(&clk4, &o3);
    for (int i = 0; i < 4; i++)
        gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "r", NULL, &err);
    gs_k8s_client_stats(c, &st);
    is_uint(st.throttled, 3, "qps 3, burst 1: 3 of 4 requests waited");
    is_uint(st.throttle_wait_ms, 1000, "for 1000 ms in all (334 + 333 + 333)");
    gs_k8s_client_free(c);
}

/* ---- token rotation ------------------------------------------------------------------------- */

static void write_token(const char *path, const char *tok)
{
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%s\n", tok);
    fclose(f);
    rename(tmp, path); /* as kubelet's atomic writer swaps the projected token */
}

static void test_token(void)
{
    char path[512];
    struct gs_error err = {0};
    struct gs_k8s_stats st;
    int r;

    snprintf(path, sizeof(path), "%s/token", tmpdir);
    write_token(path, "tok-1");
    fakeapi_ctl(&api, "reset", NULL);
    fakeapi_ctl(&api, "token", "{\"token\":\"tok-1\"}");
    struct gs_kube_config cfg = {.server = api.url, .token_file = path};
    struct gs_k8s_options o = {.qps = -1, .max_attempts = 2, .backoff_base_ms = 1};
    struct gs_k8s_client *c = gs_k8s_client_new_with(&cfg, &o, &err);
    ok(c != NULL, "client with a token file");

    r = gs_k8s_list(c, &gs_k8s_deviceclasses, NULL, NULL, NULL, NULL, &err);
    is_int(r, 0, "authenticated with tok-1");
    json_t *req = fakeapi_request(&api, -1);
    is_str(json_string_value(json_object_get(req, "auth")), "Bearer tok-1", "tok-1 sent");
    json_decref(req);

    write_token(path, "tok-2");
    fakeapi_ctl(&api, "token", "{\"token\":\"tok-2\"}");
    r = gs_k8s_list(c, &gs_k8s_deviceclasses, NULL, NULL, NULL, NULL, &err);
    is_int(r, 0, "after rotation the new token is used");
    req = fakeapi_request(&api, -1);
    is_str(json_string_value(json_object_get(req, "auth")), "Bearer tok-2", "tok-2 sent");
    json_decref(req);
    gs_k8s_client_stats(c, &st);
    is_uint(st.token_reloads, 2, "token file read twice (start + rotation)");

    fakeapi_ctl(&api, "token", "{\"token\":\"tok-3\"}");
    r = gs_k8s_list(c, &gs_k8s_deviceclasses, NULL, NULL, NULL, NULL, &err);
    is_int(r, -EACCES, "a token the server rejects -> -EACCES");
    is_str(err.msg, "Unauthorized (401)", "401 message");
    gs_k8s_client_stats(c, &st);
    is_uint(st.token_reloads, 3, "a 401 forces one re-read of the token file");
    fakeapi_ctl(&api, "token", "{\"token\":null}");
    gs_k8s_client_free(c);
}

/* ---- bounds --------------------------------------------------------------------------------- */

static void test_bounds(void)
{
    struct gs_k8s_options o = {
        .qps = -1, .max_response_bytes = 64 * 1024, .max_event_bytes = 64 * 1024};
    struct gs_k8s_client *c = client_with(NULL, &o);
    struct gs_error err = {0};
    char *big = malloc(100 * 1024 + 1);
    int r;

    fakeapi_ctl(&api, "reset", NULL);
    memset(big, 'z', 100 * 1024);
    big[100 * 1024] = '\0';
    json_t *obj = claim("big", "x");
    json_object_set_new(json_object_get(obj, "metadata"), "annotations",
                        json_pack("{s:s}", "blob", big));
    free(big);
    struct gs_k8s_options o2 = {.qps = -1};
    struct gs_k8s_client *writer = client_with(NULL, &o2);
    r = gs_k8s_create(writer, &gs_k8s_resourceclaims, "default", obj, 0, NULL, &err);
    is_int(r, 0, "a 100 KiB object stored");
    json_decref(obj);

    json_t *out = NULL;
    r = gs_k8s_get(c, &gs_k8s_resourceclaims, "default", "big", &out, &err);
    is_int(r, -E2BIG, "response over max_response_bytes -> -E2BIG");
    like_str(err.msg, "response too big (more than 65536 bytes)", "message");
    ok(out == NULL, "nothing handed out");

    struct gs_k8s_watch *w = gs_k8s_watch_new(c, &gs_k8s_resourceclaims, "default", NULL, &err);
    struct recorder rc;
    recorder_init(&rc);
    r = gs_k8s_watch_run(w, "", record, &rc, &err);
    is_int(r, -E2BIG, "watch event over max_event_bytes -> -E2BIG");
    like_str(err.msg, "event too big (more than 65536 bytes)", "event message");
    is_int(rc.n, 0, "no partial event delivered");
    recorder_fini(&rc);
    gs_k8s_watch_free(w);
    gs_k8s_client_free(c);
    gs_k8s_client_free(writer);
}

/* ---- gated fields --------------------------------------------------------------------------- */

static void test_gate(void)
{
    struct gs_k8s_options o = {.qps = -1};
    struct gs_k8s_client *c = client_with(NULL, &o);
    struct gs_error err = {0};
    json_t *out = NULL;

    fakeapi_ctl(&api, "reset", NULL);
    fakeapi_ctl(&api, "gate", "{\"DRAConsumableCapacity\":false}");
    json_t *s = json_pack(
        "{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:i, s:i}, s:[{s:s, s:b, s:{s:{s:s, "
        "s:{s:s}}}}]}}",
        "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", "g",
        "spec", "driver", "d", "nodeName", "n", "pool", "name", "n", "generation", 1,
        "resourceSliceCount", 1, "devices", "name", "hami-gpu-0", "allowMultipleAllocations", 1,
        "capacity", "cores", "value", "100", "requestPolicy", "default", "100");
    int r = gs_k8s_create(c, &gs_k8s_resourceslices, NULL, s, 0, &out, &err);
    is_int(r, 0, "slice created with the gate off");
    json_t *dev = json_array_get(json_object_get(json_object_get(out, "spec"), "devices"), 0);
    ok(json_object_get(dev, "allowMultipleAllocations") == NULL,
       "allowMultipleAllocations dropped by the server");
    json_t *cores = json_object_get(json_object_get(dev, "capacity"), "cores");
    ok(json_object_get(cores, "requestPolicy") == NULL && json_object_get(cores, "value"),
       "requestPolicy dropped, value kept");
    json_decref(out);
    json_decref(s);
    fakeapi_ctl(&api, "gate", "{\"DRAConsumableCapacity\":true}");
    gs_k8s_client_free(c);
}

/* ---- TLS: CA file and data, client certificates, insecure ----------------------------------- */

static int sh(const char *fmt, ...) GS_PRINTF(1, 2);
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

static char *slurp(const char *name)
{
    char p[512];
    char *buf = NULL;
    snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
    if (gs_read_file(p, 1 << 20, &buf, NULL, NULL) < 0)
        return NULL;
    return buf;
}

static int tls_list(const char *kubeconfig, struct gs_error *err)
{
    struct gs_kube_config cfg;
    struct gs_k8s_options o = {.qps = -1, .max_attempts = 1};
    struct gs_k8s_client *c;
    int r;

    r = gs_kube_config_parse(kubeconfig, strlen(kubeconfig), tmpdir, "tls", NULL, &cfg, err);
    if (r < 0)
        return r;
    c = gs_k8s_client_new_with(&cfg, &o, err);
    gs_kube_config_fini(&cfg);
    if (!c)
        return err->code;
    r = gs_k8s_list(c, &gs_k8s_deviceclasses, NULL, NULL, NULL, NULL, err);
    gs_k8s_client_free(c);
    return r;
}

static void test_tls(void)
{
    struct fakeapi t;
    struct gs_error err = {0};
    char ca[512], crt[512], key[512], kc[8192];
    const char *d = tmpdir;
    int r;

    r = sh("( cd '%s' && printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext && "
           "printf 'extendedKeyUsage=clientAuth\\n' > client.ext && "
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
           "-keyout ca.key -out ca.crt -days 2 -subj /CN=gs-test-ca && "
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key "
           "-out server.csr -subj /CN=127.0.0.1 && "
           "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
           "-out server.crt -days 2 -extfile server.ext && "
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout client.key "
           "-out client.csr -subj /CN=gs-client && "
           "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
           "-out client.crt -days 2 -extfile client.ext && "
           "for f in ca.crt client.crt client.key; do openssl base64 -A -in $f -out $f.b64; done"
           " ) >/dev/null 2>&1",
           d);
    if (r != 0) {
        skip("TLS tests", "openssl could not make test certificates");
        return;
    }
    snprintf(ca, sizeof(ca), "%s/ca.crt", d);
    snprintf(crt, sizeof(crt), "%s/server.crt", d);
    snprintf(key, sizeof(key), "%s/server.key", d);
    if (fakeapi_start_tls(&t,
                          (const char *const[]){"--tls-cert", crt, "--tls-key", key, "--client-ca",
                                                ca, "--token", "tls-token", NULL},
                          true, ca) < 0) {
        ok(0, "TLS fake API server starts");
        fakeapi_stop(&t);
        return;
    }
    char *ca64 = slurp("ca.crt.b64"), *crt64 = slurp("client.crt.b64"),
         *key64 = slurp("client.key.b64");
    const char *head =
        "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n";

    snprintf(
        kc, sizeof(kc),
        "%sclusters:\n- name: k\n  cluster:\n    server: %s\n"
        "    certificate-authority-data: %s\nusers:\n- name: u\n  user:\n    token: tls-token\n",
        head, t.url, ca64 ? ca64 : "");
    r = tls_list(kc, &err);
    is_int(r, 0, "https with certificate-authority-data and a token");

    snprintf(kc, sizeof(kc),
             "%sclusters:\n- name: k\n  cluster:\n    server: %s\n"
             "    certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n"
             "    client-certificate: client.crt\n    client-key: client.key\n",
             head, t.url);
    r = tls_list(kc, &err);
    is_int(r, 0, "client certificate files authenticate (no token)");

    snprintf(kc, sizeof(kc),
             "%sclusters:\n- name: k\n  cluster:\n    server: %s\n"
             "    certificate-authority-data: %s\nusers:\n- name: u\n  user:\n"
             "    client-certificate-data: %s\n    client-key-data: %s\n",
             head, t.url, ca64 ? ca64 : "", crt64 ? crt64 : "", key64 ? key64 : "");
    r = tls_list(kc, &err);
    is_int(r, 0, "client certificate data authenticates (no token)");

    snprintf(kc, sizeof(kc),
             "%sclusters:\n- name: k\n  cluster:\n    server: %s\n"
             "    certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n    token: wrong\n",
             head, t.url);
    r = tls_list(kc, &err);
    is_int(r, -EACCES, "wrong token over TLS -> -EACCES");

    snprintf(kc, sizeof(kc),
             "%sclusters:\n- name: k\n  cluster:\n    server: %s\nusers:\n- name: u\n  user:\n"
             "    token: tls-token\n",
             head, t.url);
    r = tls_list(kc, &err);
    is_int(r, -EPROTO, "a server the system store does not trust -> -EPROTO");
    like_str(err.msg, "GET ", "TLS failure message names the request");

    snprintf(kc, sizeof(kc),
             "%sclusters:\n- name: k\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: "
             "true\nusers:\n- name: u\n  user:\n    token: tls-token\n",
             head, t.url);
    r = tls_list(kc, &err);
    is_int(r, 0, "insecure-skip-tls-verify connects without a CA");

    free(ca64);
    free(crt64);
    free(key64);
    fakeapi_stop(&t);
}

/* ---- deadlines (a caller's bound on a whole call, retries included) ------------------------ */

static void test_deadline(void)
{
    struct fake_clock clk = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = 1000};
    struct gs_k8s_options o = {.max_attempts = 5, .qps = -1};
    struct gs_k8s_client *c = client_with(&clk, &o);
    struct gs_error err = {0};
    json_t *in = claim("d", "x"), *out = NULL;
    int r;

    fakeapi_ctl(&api, "reset", NULL);
    gs_k8s_create(c, &gs_k8s_resourceclaims, "default", in, 0, NULL, &err);

    /* A backoff that would end past the deadline is not slept: one request, then -ETIMEDOUT. */
    fakeapi_ctl(&api, "log/clear", NULL);
    fakeapi_ctl(&api, "fail", "{\"count\":5,\"status\":429,\"retry_after\":7}");
    struct gs_k8s_call_opts b = {.deadline_ms = gs_k8s_now_ms(c) + 2000};
    int sleeps = clk.sleeps;
    r = gs_k8s_get_with(c, &gs_k8s_resourceclaims, "default", "d", &b, &out, &err);
    is_int(r, -ETIMEDOUT, "Retry-After past the deadline -> -ETIMEDOUT");
    like_str(err.msg, "deadline exceeded (1 attempt)", "message names the deadline");
    is_int(fakeapi_count(&api, "GET", "/resourceclaims/d", NULL), 1, "one request, no retry");
    is_int(clk.sleeps, sleeps, "nothing slept");
    ok(out == NULL, "no object");
    fakeapi_ctl(&api, "clear-faults", NULL);

    /* A deadline already passed sends nothing. */
    fakeapi_ctl(&api, "log/clear", NULL);
    b.deadline_ms = gs_k8s_now_ms(c);
    r = gs_k8s_get_with(c, &gs_k8s_resourceclaims, "default", "d", &b, &out, &err);
    is_int(r, -ETIMEDOUT, "deadline already passed -> -ETIMEDOUT");
    is_int(fakeapi_count(&api, "GET", NULL, NULL), 0, "no request sent");

    /* Without faults, the bounded call is an ordinary GET. */
    b.deadline_ms = gs_k8s_now_ms(c) + 60000;
    r = gs_k8s_get_with(c, &gs_k8s_resourceclaims, "default", "d", &b, &out, &err);
    is_int(r, 0, "within the deadline -> 0");
    is_str(meta(out, "name"), "d", "the object");
    json_decref(out);
    out = NULL;

    /* A cancelled call returns -ECANCELED without waiting. */
    struct gs_http_cancel *cancel = gs_http_cancel_new();
    gs_http_cancel_trigger(cancel);
    struct gs_k8s_call_opts bc = {.cancel = cancel};
    r = gs_k8s_get_with(c, &gs_k8s_resourceclaims, "default", "d", &bc, &out, &err);
    is_int(r, -ECANCELED, "cancelled -> -ECANCELED");
    gs_http_cancel_free(cancel);
    gs_k8s_client_free(c);

    /* Real clock, a server that hangs: the attempt's timeout is cut to what is left, so the call
     * ends with -ETIMEDOUT although the client's per-attempt timeout is 30 s. */
    struct gs_k8s_options ro = {.max_attempts = 5, .qps = -1};
    c = client_with(NULL, &ro);
    fakeapi_ctl(&api, "log/clear", NULL);
    fakeapi_ctl(&api, "delay", "{\"count\":1,\"seconds\":5}");
    b.deadline_ms = gs_k8s_now_ms(c) + 300;
    r = gs_k8s_get_with(c, &gs_k8s_resourceclaims, "default", "d", &b, &out, &err);
    is_int(r, -ETIMEDOUT, "hung server -> -ETIMEDOUT at the deadline");
    ok(gs_k8s_now_ms(c) < b.deadline_ms + 25000, "returned long before the 30 s attempt timeout");
    ok(out == NULL, "no object");
    fakeapi_ctl(&api, "clear-faults", NULL);
    gs_k8s_client_free(c);
    json_decref(in);
}

int main(int argc, char **argv)
{
    char cmd[300];

    tap_plan_auto();
    snprintf(tmpdir, sizeof(tmpdir), "%s/gs-k8s-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir) ||
        fakeapi_start(&api, (const char *const[]){"--bookmark-interval", "0.2", NULL}) < 0) {
        ok(0, "fake API server starts");
        return tap_done();
    }
    diag("fake API at %s", api.url);
    static const struct {
        const char *name;
        void (*fn)(void);
    } sections[] = {{"crud", test_crud},       {"list", test_list},
                    {"watch", test_watch},     {"listwatch", test_list_watch},
                    {"retries", test_retries}, {"token", test_token},
                    {"bounds", test_bounds},   {"gate", test_gate},
                    {"tls", test_tls},         {"deadline", test_deadline}};
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        bool run = argc < 2;
        for (int a = 1; a < argc; a++) /* arguments select sections, for debugging */
            run = run || strcmp(argv[a], sections[i].name) == 0;
        if (run)
            sections[i].fn();
    }
    fakeapi_stop(&api);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        diag("could not remove %s", tmpdir);
    return tap_done();
}
