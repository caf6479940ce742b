/* SPDX-License-Identifier: Apache-2.0 */
/* GPU health: policy, table and watcher (see health.h and docs/internals/gpu.md "Health"). */
#include "gpu/health.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/macros.h"
#include "gpu/device.h"

/* ---- policy -------------------------------------------------------------------------------- */

static void bit_set(uint8_t *bits, uint64_t xid)
{
    bits[xid / 8] |= (uint8_t)(1u << (xid % 8));
}

static bool bit_get(const uint8_t *bits, uint64_t xid)
{
    return xid < GPU_XID_LIST_MAX && (bits[xid / 8] & (1u << (xid % 8)));
}

static int parse_list(uint8_t *bits, const char *what, const char *list, struct gs_error *err)
{
    const char *s = list;
    while (*s) {
        while (*s == ' ' || *s == ',')
            s++;
        if (!*s)
            break;
        const char *end = s;
        while (*end && *end != ',')
            end++;
        size_t len = (size_t)(end - s);
        while (len && s[len - 1] == ' ')
            len--;
        char item[16];
        if (len == 0 || len >= sizeof(item))
            return gs_error_set(err, -EINVAL, "%s: \"%.*s\" is not an XID (0..%d)", what,
                                (int)GS_MIN(len, (size_t)32), s, GPU_XID_LIST_MAX - 1);
        memcpy(item, s, len);
        item[len] = '\0';
        char *stop = NULL;
        errno = 0;
        unsigned long v = strtoul(item, &stop, 10);
        if (errno || *stop || item[0] == '-' || item[0] == '+' || v >= GPU_XID_LIST_MAX)
            return gs_error_set(err, -EINVAL, "%s: \"%s\" is not an XID (0..%d)", what, item,
                                GPU_XID_LIST_MAX - 1);
        bit_set(bits, v);
        s = end;
    }
    return 0;
}

int gpu_health_policy_init(struct gpu_health_policy *p, bool enabled, const char *nonfatal,
                           const char *ignore, struct gs_error *err)
{
    memset(p, 0, sizeof(*p));
    p->enabled = enabled;
    int r = parse_list(p->nonfatal, "health-nonfatal-xids",
                       nonfatal ? nonfatal : GPU_HEALTH_NONFATAL, err);
    if (r < 0)
        return r;
    return parse_list(p->ignore, "health-ignore-xids", ignore ? ignore : "", err);
}

bool gpu_health_xid_nonfatal(const struct gpu_health_policy *p, uint64_t xid)
{
    return bit_get(p->nonfatal, xid);
}

bool gpu_health_xid_ignored(const struct gpu_health_policy *p, uint64_t xid)
{
    return bit_get(p->ignore, xid);
}

/* ---- table --------------------------------------------------------------------------------- */

void gpu_health_table_init(struct gpu_health_table *t, const struct gpu_inventory *inv,
                           const struct gpu_health_policy *policy, int64_t now_s)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    gs_cond_init_monotonic(&t->cond);
    t->policy = *policy;
    t->n = GS_MIN(inv->n, (size_t)GPU_MAX_DEVICES);
    for (size_t i = 0; i < t->n; i++) {
        struct gpu_health_dev *d = &t->dev[i];
        snprintf(d->name, sizeof(d->name), "%s", inv->dev[i].name);
        snprintf(d->uuid, sizeof(d->uuid), "%s", inv->dev[i].uuid);
        d->minor = inv->dev[i].minor;
        d->healthy = true;
        d->since_s = now_s;
    }
}

void gpu_health_table_fini(struct gpu_health_table *t)
{
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
}

static void set_reason(struct gpu_health_dev *d)
{
    char why[sizeof(d->reason)];
    if (d->lost)
        snprintf(why, sizeof(why), "GPU %s (%s) is lost: it does not answer NVML", d->name,
                 d->uuid);
    else if (d->fatal && d->fatal_xid)
        snprintf(why, sizeof(why), "GPU %s (%s) reported fatal XID %llu", d->name, d->uuid,
                 (unsigned long long)d->fatal_xid);
    else if (d->fatal)
        snprintf(why, sizeof(why), "GPU %s (%s) reported a double-bit ECC error", d->name, d->uuid);
    else
        why[0] = '\0';
    memcpy(d->reason, why, sizeof(why));
}

/* What a reader sees of a GPU, field by field. */
static bool dev_same(const struct gpu_health_dev *a, const struct gpu_health_dev *b)
{
    return a->healthy == b->healthy && a->lost == b->lost && a->fatal == b->fatal &&
           a->unmonitored == b->unmonitored && a->has_xid == b->has_xid &&
           a->last_xid_fatal == b->last_xid_fatal && a->last_xid == b->last_xid &&
           a->fatal_xid == b->fatal_xid && a->xid_count == b->xid_count &&
           a->since_s == b->since_s && a->xid_time_s == b->xid_time_s &&
           strcmp(a->reason, b->reason) == 0;
}

/* Apply with the lock held; true when a reader sees a change. */
static bool apply_locked(struct gpu_health_table *t, const struct gpu_health_event *ev,
                         int64_t now_s)
{
    struct gpu_health_dev *d = &t->dev[ev->dev];
    struct gpu_health_dev before = *d;
    switch (ev->kind) {
    case GPU_HEALTH_EV_XID:
        if (gpu_health_xid_ignored(&t->policy, ev->xid))
            return false;
        d->has_xid = true;
        d->last_xid = ev->xid;
        d->xid_time_s = now_s;
        d->xid_count = gs_sat_add_u64(d->xid_count, 1);
        d->last_xid_fatal = !gpu_health_xid_nonfatal(&t->policy, ev->xid);
        if (ev->xid == GPU_XID_FALLEN_OFF)
            d->lost = true; /* the probe clears it when the GPU answers again */
        else if (d->last_xid_fatal && !d->fatal) {
            d->fatal = true;
            d->fatal_xid = ev->xid;
        }
        break;
    case GPU_HEALTH_EV_ECC_DBE:
        if (!d->fatal) {
            d->fatal = true;
            d->fatal_xid = 0;
        }
        break;
    case GPU_HEALTH_EV_LOST:
        d->lost = true;
        break;
    case GPU_HEALTH_EV_ANSWERS:
        d->lost = false;
        break;
    case GPU_HEALTH_EV_CLEAR:
        d->lost = false; /* a probe marks it lost again if it still does not answer */
        d->fatal = false;
        d->fatal_xid = 0;
        break;
    case GPU_HEALTH_EV_UNMONITORED:
        d->unmonitored = true;
        break;
    default:
        return false;
    }
    d->healthy = !d->lost && !d->fatal;
    if (d->healthy != before.healthy)
        d->since_s = now_s;
    set_reason(d);
    return !dev_same(&before, d);
}

int gpu_health_apply(struct gpu_health_table *t, const struct gpu_health_event *ev, int64_t now_s)
{
    if (!ev || ev->dev >= t->n)
        return -EINVAL;
    pthread_mutex_lock(&t->lock);
    struct gpu_health_dev before = t->dev[ev->dev];
    bool changed = apply_locked(t, ev, now_s);
    if (changed) {
        t->gen++;
        pthread_cond_broadcast(&t->cond);
    }
    struct gpu_health_dev after = t->dev[ev->dev];
    pthread_mutex_unlock(&t->lock);
    if (before.healthy != after.healthy) {
        if (after.healthy)
            gs_info("GPU healthy again", "device=%s uuid=%s", after.name, after.uuid);
        else
            gs_warn("GPU unhealthy", "device=%s uuid=%s reason=%s", after.name, after.uuid,
                    GS_LOGQ(after.reason));
    } else if (ev->kind == GPU_HEALTH_EV_XID && changed) {
        gs_info("GPU reported an XID", "device=%s xid=%llu fatal=%d", after.name,
                (unsigned long long)ev->xid, after.last_xid_fatal);
    }
    return changed ? 1 : 0;
}

int gpu_health_clear(struct gpu_health_table *t, const char *name_or_uuid, int64_t now_s)
{
    bool all = strcmp(name_or_uuid, "all") == 0;
    int found = -ENOENT;
    for (size_t i = 0; i < t->n; i++) {
        pthread_mutex_lock(&t->lock);
        bool match = all || strcmp(t->dev[i].name, name_or_uuid) == 0 ||
                     strcasecmp(t->dev[i].uuid, name_or_uuid) == 0;
        pthread_mutex_unlock(&t->lock);
        if (!match)
            continue;
        if (found < 0)
            found = 0;
        struct gpu_health_event ev = {.kind = GPU_HEALTH_EV_CLEAR, .dev = i};
        gs_info("GPU health cleared by the operator", "device=%s", t->dev[i].name);
        if (gpu_health_apply(t, &ev, now_s) > 0)
            found++;
    }
    return found;
}

uint64_t gpu_health_snapshot(struct gpu_health_table *t, struct gpu_health_dev *out, size_t max,
                             size_t *n)
{
    pthread_mutex_lock(&t->lock);
    size_t k = GS_MIN(max, t->n);
    memcpy(out, t->dev, k * sizeof(out[0]));
    uint64_t gen = t->gen;
    pthread_mutex_unlock(&t->lock);
    *n = k;
    return gen;
}

bool gpu_health_get(struct gpu_health_table *t, const char *name, struct gpu_health_dev *out)
{
    bool found = false;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n && !found; i++) {
        if (strcmp(t->dev[i].name, name) == 0) {
            *out = t->dev[i];
            found = true;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

uint64_t gpu_health_wait_change(struct gpu_health_table *t, uint64_t seen, uint64_t timeout_ms)
{
    struct timespec until = gs_timespec_in_ns(gs_sat_mul_u64(timeout_ms, GS_NSEC_PER_MSEC));
    pthread_mutex_lock(&t->lock);
    while (t->gen == seen && !t->stop) {
        if (pthread_cond_timedwait(&t->cond, &t->lock, &until) != 0)
            break;
    }
    uint64_t gen = t->gen;
    pthread_mutex_unlock(&t->lock);
    return gen;
}

void gpu_health_table_stop(struct gpu_health_table *t)
{
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

size_t gpu_health_lost_now(unsigned *index, size_t max)
{
    const struct gs_device_backend *b = gs_device_backend_find(NULL);
    return b && b->lost_now ? b->lost_now(index, max) : 0;
}

int gpu_health_save_file(struct gpu_health_table *t, const char *path, struct gs_error *err)
{
    struct gpu_health_dev *d = calloc(GPU_MAX_DEVICES, sizeof(*d));
    if (!d)
        return gs_error_set(err, -ENOMEM, "out of memory");
    size_t n = 0;
    uint64_t gen = gpu_health_snapshot(t, d, GPU_MAX_DEVICES, &n);
    json_t *devs = json_array();
    for (size_t i = 0; devs && i < n; i++) {
        json_t *o = json_pack("{s:s, s:s, s:b, s:b, s:b, s:I, s:s, s:I}", "name", d[i].name, "uuid",
                              d[i].uuid, "healthy", d[i].healthy, "lost", d[i].lost, "fatal",
                              d[i].fatal, "fatalXid", (json_int_t)d[i].fatal_xid, "reason",
                              d[i].reason, "since", (json_int_t)d[i].since_s);
        if (o && d[i].has_xid)
            json_object_set_new(o, "lastXid", json_integer((json_int_t)d[i].last_xid));
        json_array_append_new(devs, o);
    }
    free(d);
    json_t *root = json_pack("{s:I, s:I, s:o}", "pid", (json_int_t)getpid(), "generation",
                             (json_int_t)gen, "devices", devs);
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!text)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int r = gs_write_file_atomic_ex(path, text, strlen(text), 0644, 0, err);
    free(text);
    return r;
}

size_t gpu_health_load_file(const char *path, struct gpu_health_dev *out, size_t max)
{
    char *data = NULL;
    size_t len = 0;
    if (gs_read_file(path, GPU_HEALTH_FILE_MAX, &data, &len, NULL) < 0)
        return 0;
    json_t *root = json_loadb(data, len, 0, NULL);
    free(data);
    json_int_t pid = json_integer_value(json_object_get(root, "pid"));
    size_t k = 0;
    if (pid > 0 && pid <= INT32_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
        size_t i;
        const json_t *o;
        json_array_foreach(json_object_get(root, "devices"), i, o)
        {
            if (k >= max)
                break;
            const char *name = json_string_value(json_object_get(o, "name"));
            const char *uuid = json_string_value(json_object_get(o, "uuid"));
            const char *reason = json_string_value(json_object_get(o, "reason"));
            if (!name || !uuid || !json_is_boolean(json_object_get(o, "healthy")))
                continue;
            struct gpu_health_dev *d = &out[k++];
            memset(d, 0, sizeof(*d));
            snprintf(d->name, sizeof(d->name), "%s", name);
            snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
            snprintf(d->reason, sizeof(d->reason), "%s", reason ? reason : "");
            d->healthy = json_is_true(json_object_get(o, "healthy"));
            d->lost = json_is_true(json_object_get(o, "lost"));
            d->fatal = json_is_true(json_object_get(o, "fatal"));
            json_int_t fx = json_integer_value(json_object_get(o, "fatalXid"));
            d->fatal_xid = fx > 0 ? (uint64_t)fx : 0;
            const json_t *lx = json_object_get(o, "lastXid");
            d->has_xid = json_is_integer(lx) && json_integer_value(lx) >= 0;
            d->last_xid = d->has_xid ? (uint64_t)json_integer_value(lx) : 0;
            d->last_xid_fatal = d->fatal && d->fatal_xid == d->last_xid;
            json_int_t since = json_integer_value(json_object_get(o, "since"));
            d->since_s = since > 0 ? since : 0;
            if (!d->healthy && !d->lost && !d->fatal)
                d->fatal = true; /* keep the invariant healthy == !lost && !fatal */
            if (d->healthy)
                d->lost = d->fatal = false;
        }
    }
    json_decref(root);
    return k;
}

/* ---- watcher ------------------------------------------------------------------------------- */

#define EVENTS_MAX 64

struct gpu_health_watcher {
    struct gpu_health_table *t;
    struct gpu_inventory *inv;
    const struct gs_device_backend *backend;
    char clear_dir[1024];
    int64_t clear_mtime[GPU_MAX_DEVICES + 1][2]; /* by name, by UUID; [n][0] = "all" */
    bool scanned;
    unsigned poll_ms;
    void (*on_change)(void *user);
    void *user;
    pthread_mutex_t lock;
    pthread_cond_t cond;  /* suspend/resume handshake */
    unsigned suspend_req; /* gpu_health_watcher_suspend calls not yet resumed */
    bool suspended;       /* the source is closed for them */
    bool stop;
    bool started;
    pthread_t thread;
};

static bool watcher_stopping(struct gpu_health_watcher *w)
{
    pthread_mutex_lock(&w->lock);
    bool s = w->stop;
    pthread_mutex_unlock(&w->lock);
    return s;
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

static bool apply_all(struct gpu_health_watcher *w, const struct gpu_health_event *ev, size_t n)
{
    bool changed = false;
    for (size_t i = 0; i < n; i++)
        if (gpu_health_apply(w->t, &ev[i], now_s()) > 0)
            changed = true;
    return changed;
}

/* Operator clears: touching <clear_dir>/<GPU> (its name "hami-gpu-1", its UUID, or "all")
 * clears it. The files stay (every daemon's watcher reads them); a clear is a change of the
 * file's mtime since the last scan, and the first scan only records what is there. */
static bool scan_clears(struct gpu_health_watcher *w)
{
    if (!w->clear_dir[0])
        return false;
    bool changed = false;
    for (size_t i = 0; i <= w->t->n; i++) {
        const char *names[2] = {"all", NULL};
        if (i < w->t->n) {
            names[0] = w->t->dev[i].name; /* immutable after init */
            names[1] = w->t->dev[i].uuid;
        }
        for (size_t k = 0; k < 2 && names[k]; k++) {
            char path[2048];
            snprintf(path, sizeof(path), "%s/%s", w->clear_dir, names[k]);
            struct stat st;
            int64_t m = 0;
            if (stat(path, &st) == 0)
                m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            int64_t *seen = &w->clear_mtime[i][k];
            if (m && m != *seen && w->scanned) {
                gs_info("health clear file touched", "file=%s", GS_LOGQ(path));
                if (gpu_health_clear(w->t, i < w->t->n ? names[0] : "all", now_s()) > 0)
                    changed = true;
            }
            *seen = m;
        }
    }
    w->scanned = true;
    return changed;
}

static void *watcher_main(void *arg)
{
    struct gpu_health_watcher *w = arg;
    struct gs_error err = {0};
    void *h = w->backend->health_open(w->inv, &err);
    struct gpu_health_event ev[EVENTS_MAX];
    if (!h) {
        gs_warn("GPU health cannot be watched; GPUs are marked unmonitored", "error=%s",
                GS_LOGQ(err.msg));
        for (size_t i = 0; i < w->t->n; i++)
            ev[GS_MIN(i, (size_t)EVENTS_MAX - 1)] =
                (struct gpu_health_event){.kind = GPU_HEALTH_EV_UNMONITORED, .dev = i};
        if (apply_all(w, ev, GS_MIN(w->t->n, (size_t)EVENTS_MAX)) && w->on_change)
            w->on_change(w->user);
    }
    uint64_t last_probe = 0;
    while (!watcher_stopping(w)) {
        pthread_mutex_lock(&w->lock);
        if (w->suspend_req && !w->stop) {
            /* Someone re-discovers the GPUs: NVML must be shut down (refcount 0) for a fresh
             * enumeration, so the source is closed meanwhile and opened again after. */
            pthread_mutex_unlock(&w->lock);
            if (h)
                w->backend->health_close(h);
            h = NULL;
            pthread_mutex_lock(&w->lock);
            w->suspended = true;
            pthread_cond_broadcast(&w->cond);
            while (w->suspend_req && !w->stop)
                pthread_cond_wait(&w->cond, &w->lock);
            w->suspended = false;
            pthread_mutex_unlock(&w->lock);
            gs_error_clear(&err);
            if (!(h = w->backend->health_open(w->inv, &err)))
                gs_warn("GPU health cannot be watched again", "error=%s", GS_LOGQ(err.msg));
            continue;
        }
        pthread_mutex_unlock(&w->lock);
        bool changed = false;
        if (h) {
            size_t n = w->backend->health_wait(h, w->poll_ms, ev, EVENTS_MAX);
            changed |= apply_all(w, ev, n);
            uint64_t now = gs_now_ms();
            if (now - last_probe >= w->poll_ms) {
                last_probe = now;
                n = w->backend->health_probe(h, ev, EVENTS_MAX);
                changed |= apply_all(w, ev, n);
            }
        } else {
            gs_sleep_ms(w->poll_ms);
        }
        changed |= scan_clears(w);
        if (changed && w->on_change)
            w->on_change(w->user);
    }
    if (h)
        w->backend->health_close(h);
    return NULL;
}

struct gpu_health_watcher *gpu_health_watcher_start(struct gpu_health_table *t,
                                                    const struct gpu_inventory *inv,
                                                    const struct gpu_health_watcher_config *cfg,
                                                    struct gs_error *err)
{
    struct gpu_health_watcher *w = calloc(1, sizeof(*w));
    if (!w || !(w->inv = malloc(sizeof(*w->inv)))) {
        free(w);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(w->inv, inv, sizeof(*inv));
    w->t = t;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (!t->policy.enabled)
        return w;
    const char *bname = cfg && cfg->backend ? cfg->backend : "nvidia";
    w->backend = gs_device_backend_find(bname);
    if (!w->backend) {
        gs_error_set(err, -EINVAL, "health: no device backend named \"%s\"", bname);
        gpu_health_watcher_stop(w);
        return NULL;
    }
    w->poll_ms = cfg && cfg->poll_ms ? cfg->poll_ms : 500;
    if (cfg && cfg->clear_dir)
        snprintf(w->clear_dir, sizeof(w->clear_dir), "%s", cfg->clear_dir);
    w->on_change = cfg ? cfg->on_change : NULL;
    w->user = cfg ? cfg->user : NULL;
    if (pthread_create(&w->thread, NULL, watcher_main, w) != 0) {
        gs_error_set(err, -EAGAIN, "cannot start the GPU health watcher thread");
        gpu_health_watcher_stop(w);
        return NULL;
    }
    w->started = true;
    return w;
}

void gpu_health_watcher_suspend(struct gpu_health_watcher *w)
{
    if (!w || !w->started)
        return;
    pthread_mutex_lock(&w->lock);
    w->suspend_req++;
    while (!w->suspended && !w->stop)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

void gpu_health_watcher_resume(struct gpu_health_watcher *w)
{
    if (!w || !w->started)
        return;
    pthread_mutex_lock(&w->lock);
    if (w->suspend_req)
        w->suspend_req--;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void gpu_health_watcher_stop(struct gpu_health_watcher *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (w->started)
        pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w->inv);
    free(w);
}
