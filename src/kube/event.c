/* SPDX-License-Identifier: Apache-2.0 */
/* core/v1 Events with deduplication and a write budget (event.h). */
#include "kube/event.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "config/json.h"

static const struct gs_k8s_resource events = {"", "v1", "events", true};

#define KEY_MAX     400
#define NAME_MAX_EV 254
#define MSG_MAX     1024 /* events.k8s.io/v1 note: 1 kB; core/v1 has no limit but kubectl trims */

struct entry {
    char key[KEY_MAX];            /* ns \x1f name \x1f uid \x1f reason */
    char ns[64];                  /* namespace of the Event */
    char event_name[NAME_MAX_EV]; /* "" until created */
    char first[32];               /* firstTimestamp */
    uint64_t count;               /* what the Event's count says */
    uint64_t pending;             /* calls since, not yet written */
    uint64_t last_write_ms;
    uint64_t used_ms;
    bool writing;
};

struct gs_k8s_recorder {
    struct gs_k8s_client *k;
    struct gs_k8s_recorder_options o;
    char component[128], instance[128];
    pthread_mutex_t lock;
    struct entry *e;
    unsigned n;
    double tokens;
    uint64_t refilled_ms;
    struct gs_k8s_recorder_stats st;
};

struct gs_k8s_recorder *gs_k8s_recorder_new(struct gs_k8s_client *k,
                                            const struct gs_k8s_recorder_options *opts)
{
    struct gs_k8s_recorder *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->k = k;
    r->o = opts ? *opts : (struct gs_k8s_recorder_options){0};
    if (!r->o.repeat_interval_ms)
        r->o.repeat_interval_ms = 60000;
    if (!r->o.burst)
        r->o.burst = 25;
    if (!r->o.refill_ms)
        r->o.refill_ms = 10000;
    if (!r->o.max_keys)
        r->o.max_keys = 1024;
    if (!r->o.timeout_ms)
        r->o.timeout_ms = 3000;
    snprintf(r->component, sizeof(r->component), "%s",
             r->o.component ? r->o.component : "gpuslice");
    snprintf(r->instance, sizeof(r->instance), "%s", r->o.instance ? r->o.instance : "");
    r->e = calloc(r->o.max_keys, sizeof(*r->e));
    if (!r->e) {
        free(r);
        return NULL;
    }
    r->tokens = r->o.burst;
    r->refilled_ms = gs_k8s_now_ms(k);
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void gs_k8s_recorder_free(struct gs_k8s_recorder *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->e);
    free(r);
}

void gs_k8s_recorder_get_stats(struct gs_k8s_recorder *r, struct gs_k8s_recorder_stats *out)
{
    pthread_mutex_lock(&r->lock);
    *out = r->st;
    pthread_mutex_unlock(&r->lock);
}

/* The entry of `key`, or a free or least recently used one (reset) — under the lock. */
static struct entry *slot(struct gs_k8s_recorder *r, const char *key, bool *found)
{
    struct entry *victim = NULL;
    for (unsigned i = 0; i < r->n; i++) {
        if (strcmp(r->e[i].key, key) == 0) {
            *found = true;
            return &r->e[i];
        }
        if (!r->e[i].writing && (!victim || r->e[i].used_ms < victim->used_ms))
            victim = &r->e[i];
    }
    *found = false;
    if (r->n < r->o.max_keys)
        victim = &r->e[r->n++];
    if (victim)
        *victim = (struct entry){0};
    return victim;
}

static bool take_token(struct gs_k8s_recorder *r, uint64_t now)
{
    if (now > r->refilled_ms) {
        r->tokens += (double)(now - r->refilled_ms) / (double)r->o.refill_ms;
        if (r->tokens > r->o.burst)
            r->tokens = r->o.burst;
        r->refilled_ms = now;
    }
    if (r->tokens < 1.0)
        return false;
    r->tokens -= 1.0;
    return true;
}

struct write {
    char ns[64], name[NAME_MAX_EV], first[32];
    uint64_t count;
    bool patch;
};

static int do_write(struct gs_k8s_recorder *r, const struct gs_k8s_object_ref *obj, bool warning,
                    const char *reason, const char *msg, struct write *w)
{
    char now[32];
    gs_rfc3339_utc((int64_t)time(NULL), now, sizeof(now));
    struct gs_error err = {0};
    struct gs_k8s_call_opts co = {.deadline_ms = gs_k8s_now_ms(r->k) + r->o.timeout_ms};
    int rc = -ENOENT;
    if (w->patch) {
        char path[512];
        _cleanup_(gs_json_decrefp) json_t *p = json_pack(
            "{s:I,s:s,s:s}", "count", (json_int_t)w->count, "lastTimestamp", now, "message", msg);
        if (!p)
            return -ENOMEM;
        rc = gs_k8s_path(path, sizeof(path), &events, w->ns, w->name, NULL, &err);
        if (rc == 0) /* (a merge patch: the client's own timeouts bound it) */
            rc = gs_k8s_request(r->k, "PATCH", path, p, "application/merge-patch+json", NULL, NULL,
                                &err);
        if (rc == 0)
            return 1;
        if (rc != -ENOENT)
            goto failed;
        w->count = 1; /* the Event expired: a new one */
        snprintf(w->first, sizeof(w->first), "%s", now);
    }
    {
        /* client-go names an Event "<object>.<hex of the time in ns>" (tools/record/event.go
         * makeEvent). */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(w->name, sizeof(w->name), "%.200s.%llx", obj->name,
                 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
        _cleanup_(gs_json_decrefp) json_t *ev = json_pack(
            "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s},s:s,s:s,s:s,s:I,s:s,s:s,s:{s:s,s:s},s:s,s:s}",
            "apiVersion", "v1", "kind", "Event", "metadata", "name", w->name, "namespace", w->ns,
            "involvedObject", "apiVersion", obj->api_version, "kind", obj->kind, "name", obj->name,
            "type", warning ? "Warning" : "Normal", "reason", reason, "message", msg, "count",
            (json_int_t)w->count, "firstTimestamp", w->first[0] ? w->first : now, "lastTimestamp",
            now, "source", "component", r->component, "host", r->instance, "reportingComponent",
            r->component, "reportingInstance", r->instance);
        if (!ev)
            return -ENOMEM;
        json_t *io = json_object_get(ev, "involvedObject");
        if (obj->ns && obj->ns[0])
            json_object_set_new(io, "namespace", json_string(obj->ns));
        if (obj->uid && obj->uid[0])
            json_object_set_new(io, "uid", json_string(obj->uid));
        char path[512];
        rc = gs_k8s_path(path, sizeof(path), &events, w->ns, NULL, NULL, &err);
        if (rc == 0)
            rc = gs_k8s_request_with(r->k, "POST", path, ev, &co, NULL, NULL, &err);
        if (rc == 0) {
            w->patch = false;
            if (!w->first[0])
                snprintf(w->first, sizeof(w->first), "%s", now);
            return 1;
        }
    }
failed : {
    char q1[300], q2[200];
    gs_warn("event not written", "object=%s/%s reason=%s error=%s", obj->ns ? obj->ns : "",
            gs_log_quote(q2, sizeof(q2), obj->name), reason, gs_log_quote(q1, sizeof(q1), err.msg));
    return rc;
}
}

int gs_k8s_record(struct gs_k8s_recorder *r, const struct gs_k8s_object_ref *obj, bool warning,
                  const char *reason, const char *fmt, ...)
{
    if (!r || !obj || !obj->name || !obj->name[0] || !reason)
        return 0;
    char msg[MSG_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char key[KEY_MAX];
    snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%s", obj->ns ? obj->ns : "", obj->name,
             obj->uid ? obj->uid : "", reason);

    pthread_mutex_lock(&r->lock);
    uint64_t now = gs_k8s_now_ms(r->k);
    bool found = false;
    struct entry *e = slot(r, key, &found);
    if (e && !found) {
        snprintf(e->key, sizeof(e->key), "%s", key);
        snprintf(e->ns, sizeof(e->ns), "%s", obj->ns && obj->ns[0] ? obj->ns : "default");
        e->used_ms = now;
    }
    if (!e || (found && (e->writing || now - e->last_write_ms < r->o.repeat_interval_ms)) ||
        !take_token(r, now)) {
        if (e)
            e->pending++;
        r->st.suppressed++;
        pthread_mutex_unlock(&r->lock);
        return 0;
    }
    struct write w = {.patch = e->event_name[0] != '\0', .count = e->count + e->pending + 1};
    snprintf(w.ns, sizeof(w.ns), "%s", e->ns);
    snprintf(w.name, sizeof(w.name), "%s", e->event_name);
    snprintf(w.first, sizeof(w.first), "%s", e->first);
    e->writing = true;
    e->used_ms = now;
    e->last_write_ms = now;
    uint64_t folded = e->pending;
    e->pending = 0;
    pthread_mutex_unlock(&r->lock);

    int rc = do_write(r, obj, warning, reason, msg, &w);

    pthread_mutex_lock(&r->lock);
    e->writing = false;
    if (rc > 0) {
        if (w.patch)
            r->st.patched++;
        else
            r->st.created++;
        snprintf(e->event_name, sizeof(e->event_name), "%s", w.name);
        snprintf(e->first, sizeof(e->first), "%s", w.first);
        e->count = w.count;
    } else {
        r->st.failed++;
        e->pending += folded;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}
