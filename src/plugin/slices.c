/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/slices.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "config/quantity.h"

/* Remove the fields the DRAConsumableCapacity gate controls, in place. */
static void strip_gated(json_t *spec)
{
    size_t i;
    json_t *dev;
    json_array_foreach(json_object_get(spec, "devices"), i, dev)
    {
        json_object_del(dev, "allowMultipleAllocations");
        const char *k;
        json_t *cap;
        json_object_foreach(json_object_get(dev, "capacity"), k, cap)
            json_object_del(cap, "requestPolicy");
    }
}

/* ---- publisher ---------------------------------------------------------------------------- */

struct publisher {
    struct publisher_config cfg;
    char driver[256], node[256], sysfs_root[1024];
    struct gs_k8s_client *k8s;
    struct driver *drv;
    struct metrics *m;
    struct gpu_inventory *inv;
    struct gpu_health_dev *health; /* the table's snapshot at each sync */
    int64_t generation;
    bool gate_off;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop, kick;
    struct gs_k8s_watch *watch;
    pthread_t thread, watcher;
    bool watcher_started;
};

static uint64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec;
}

void publisher_kick(struct publisher *p)
{
    pthread_mutex_lock(&p->lock);
    p->kick = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

static bool spec_equal_ignoring_generation(const json_t *have, const json_t *want, bool gate_off)
{
    json_t *a = json_deep_copy(json_object_get(have, "spec"));
    json_t *b = json_deep_copy(json_object_get(want, "spec"));
    json_object_del(json_object_get(a, "pool"), "generation");
    json_object_del(json_object_get(b, "pool"), "generation");
    if (gate_off) {
        strip_gated(a);
        strip_gated(b);
    }
    bool eq = json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return eq;
}

static void note_gate(struct publisher *p, const json_t *sent, const json_t *returned)
{
    if (!returned || p->gate_off || !gpu_slice_gate_dropped(sent, returned))
        return;
    p->gate_off = true;
    if (p->m)
        atomic_store(&p->m->gate_off, 1);
    gs_error_log("the API server dropped the consumable-capacity fields of the ResourceSlice "
                 "(allowMultipleAllocations, capacity requestPolicy): the DRAConsumableCapacity "
                 "feature gate is off; enable it on kube-apiserver, kube-scheduler, "
                 "kube-controller-manager and kubelet, or GPUs cannot be shared",
                 "gate=DRAConsumableCapacity driver=%s node=%s", p->driver, p->node);
}

static void count_write(struct publisher *p, int r)
{
    if (!p->m)
        return;
    atomic_fetch_add(r < 0 ? &p->m->slice_errors : &p->m->slice_writes, 1);
}

/* Slice k as wanted: the device model plus the health table's taints. */
static json_t *build_slice(struct publisher *p, size_t k, const struct gpu_health_dev *h, size_t nh)
{
    json_t *want = gpu_slice_build(p->inv, p->driver, p->node, p->generation, k);
    if (want && nh)
        gpu_slice_apply_health(want, h, nh, p->driver);
    return want;
}

/* One full comparison of the API's slices with the wanted ones; writes what differs. */
static int sync_slices(struct publisher *p)
{
    size_t nh = 0;
    if (p->cfg.health)
        gpu_health_snapshot(p->cfg.health, p->health, GPU_MAX_DEVICES, &nh);
    struct gs_error err = {0};
    char sel[700];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s,spec.driver=%s", p->node, p->driver);
    struct gs_k8s_list_options lo = {.field_selector = sel};
    json_t *list = NULL;
    int r = gs_k8s_list(p->k8s, &gs_k8s_resourceslices, NULL, &lo, &list, NULL, &err);
    if (r < 0) {
        gs_warn("cannot list ResourceSlices", "error=%s", GS_LOGQ(err.msg));
        count_write(p, r);
        return r;
    }
    json_t *items = json_object_get(list, "items");
    size_t count = gpu_slice_count(p->inv->n);
    int64_t maxgen = 0;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        json_t *g =
            json_object_get(json_object_get(json_object_get(it, "spec"), "pool"), "generation");
        if (json_is_integer(g) && json_integer_value(g) > maxgen)
            maxgen = json_integer_value(g);
    }
    if (maxgen > p->generation)
        p->generation = maxgen;
    /* Is everything already as wanted, at one generation? */
    bool same = json_array_size(items) == count;
    for (size_t k = 0; same && k < count; k++) {
        json_t *want = build_slice(p, k, p->health, nh);
        const char *wname =
            json_string_value(json_object_get(json_object_get(want, "metadata"), "name"));
        bool found = false;
        json_array_foreach(items, i, it)
        {
            const char *n =
                json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
            json_t *g =
                json_object_get(json_object_get(json_object_get(it, "spec"), "pool"), "generation");
            if (n && strcmp(n, wname) == 0 && json_integer_value(g) == p->generation &&
                spec_equal_ignoring_generation(it, want, p->gate_off))
                found = true;
        }
        json_decref(want);
        same = found;
    }
    if (same) {
        json_decref(list);
        if (p->m) {
            atomic_store(&p->m->devices_published, (long long)p->inv->n);
            atomic_store(&p->m->slices_published, (long long)count);
            atomic_store(&p->m->published_once, 1);
        }
        return 0;
    }
    p->generation++;
    int failures = 0;
    for (size_t k = 0; k < count; k++) {
        json_t *want = build_slice(p, k, p->health, nh);
        const char *wname =
            json_string_value(json_object_get(json_object_get(want, "metadata"), "name"));
        json_t *have = NULL;
        json_array_foreach(items, i, it)
        {
            const char *n =
                json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
            if (n && strcmp(n, wname) == 0)
                have = it;
        }
        json_t *out = NULL;
        if (have) {
            json_t *rv = json_object_get(json_object_get(have, "metadata"), "resourceVersion");
            if (rv)
                json_object_set(json_object_get(want, "metadata"), "resourceVersion", rv);
            r = gs_k8s_update(p->k8s, &gs_k8s_resourceslices, NULL, wname, NULL, want, 0, &out,
                              &err);
        } else {
            r = gs_k8s_create(p->k8s, &gs_k8s_resourceslices, NULL, want, 0, &out, &err);
        }
        count_write(p, r);
        if (r < 0) {
            gs_warn("cannot write ResourceSlice", "name=%s error=%s", wname, GS_LOGQ(err.msg));
            failures++;
        } else {
            gs_info(have ? "ResourceSlice updated" : "ResourceSlice created",
                    "name=%s generation=%lld devices=%zu", wname, (long long)p->generation,
                    json_array_size(json_object_get(json_object_get(want, "spec"), "devices")));
            note_gate(p, want, out);
        }
        json_decref(out);
        json_decref(want);
    }
    /* Slices of our pool that are no longer wanted. */
    json_array_foreach(items, i, it)
    {
        const char *n = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
        bool wanted = false;
        for (size_t k = 0; n && k < count; k++) {
            char wname[512];
            snprintf(wname, sizeof(wname), "%s-%s-%zu", p->node, p->driver, k);
            if (strcmp(n, wname) == 0)
                wanted = true;
        }
        if (!n || wanted)
            continue;
        r = gs_k8s_delete(p->k8s, &gs_k8s_resourceslices, NULL, n, NULL, 0, &err);
        count_write(p, r == -ENOENT ? 0 : r);
        if (r < 0 && r != -ENOENT) {
            gs_warn("cannot delete ResourceSlice", "name=%s error=%s", n, GS_LOGQ(err.msg));
            failures++;
        } else {
            gs_info("ResourceSlice deleted", "name=%s", n);
        }
    }
    json_decref(list);
    if (failures == 0 && p->m) {
        atomic_store(&p->m->devices_published, (long long)p->inv->n);
        atomic_store(&p->m->slices_published, (long long)count);
        atomic_store(&p->m->published_once, 1);
    }
    return failures ? -EIO : 0;
}

static bool inventory_equal(const struct gpu_inventory *a, const struct gpu_inventory *b)
{
    if (a->n != b->n)
        return false;
    return memcmp(a->dev, b->dev, a->n * sizeof(a->dev[0])) == 0;
}

static void *publisher_main(void *arg)
{
    struct publisher *p = arg;
    uint64_t last_discovery = mono_s(), last_reconcile = 0, last_sync = 0;
    unsigned backoff = 1;
    bool need_sync = true;
    struct gpu_inventory *fresh = calloc(1, sizeof(*fresh));
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        bool kicked = p->kick;
        p->kick = false;
        pthread_mutex_unlock(&p->lock);

        uint64_t now = mono_s();
        if (fresh && p->cfg.discovery_interval_s &&
            now - last_discovery >= p->cfg.discovery_interval_s) {
            struct gs_error err = {0};
            last_discovery = now;
            gpu_health_watcher_suspend(p->cfg.watcher); /* NVML must re-enumerate */
            int dr = gpu_discover(p->sysfs_root, fresh, &err);
            gpu_health_watcher_resume(p->cfg.watcher);
            if (dr == 0) {
                if (!inventory_equal(fresh, p->inv)) {
                    gs_info("GPU inventory changed", "devices=%zu", fresh->n);
                    memcpy(p->inv, fresh, sizeof(*fresh));
                    driver_set_inventory(p->drv, p->inv);
                    need_sync = true;
                }
            } else {
                gs_warn("GPU discovery failed, keeping the last inventory", "error=%s",
                        GS_LOGQ(err.msg));
            }
        }
        if (kicked || need_sync ||
            (p->cfg.resync_interval_s && now - last_sync >= p->cfg.resync_interval_s)) {
            last_sync = now;
            if (sync_slices(p) < 0) {
                need_sync = true;
                backoff = GS_MIN(backoff * 2, 30u);
            } else {
                need_sync = false;
                backoff = 1;
            }
        }
        if (p->cfg.reconcile_interval_s && now - last_reconcile >= p->cfg.reconcile_interval_s) {
            last_reconcile = now;
            driver_reconcile_api(p->drv, (int64_t)time(NULL));
        }

        unsigned wait = need_sync ? backoff : 3600;
        if (p->cfg.discovery_interval_s)
            wait = GS_MIN(wait, p->cfg.discovery_interval_s);
        if (p->cfg.resync_interval_s)
            wait = GS_MIN(wait, p->cfg.resync_interval_s);
        if (p->cfg.reconcile_interval_s)
            wait = GS_MIN(wait, p->cfg.reconcile_interval_s);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += wait;
        pthread_mutex_lock(&p->lock);
        while (!p->stop && !p->kick) {
            if (pthread_cond_timedwait(&p->cond, &p->lock, &until) != 0)
                break;
        }
    }
    pthread_mutex_unlock(&p->lock);
    free(fresh);
    return NULL;
}

static int on_slice_event(void *user, enum gs_k8s_event_type type, json_t *obj)
{
    struct publisher *p = user;
    if (type == GS_K8S_EVENT_BOOKMARK)
        return 0;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    gs_debug("ResourceSlice event", "type=%s name=%s", gs_k8s_event_type_name(type),
             name ? name : "");
    if (type == GS_K8S_EVENT_DELETED)
        gs_info("ResourceSlice deleted by someone else, re-creating", "name=%s", name ? name : "");
    publisher_kick(p);
    return 0;
}

static void *watcher_main(void *arg)
{
    struct publisher *p = arg;
    unsigned backoff = 1;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->lock);
        if (stop)
            break;
        struct gs_error err = {0};
        char sel[700];
        snprintf(sel, sizeof(sel), "spec.nodeName=%s,spec.driver=%s", p->node, p->driver);
        struct gs_k8s_list_options lo = {.field_selector = sel};
        json_t *list = NULL;
        char *rv = NULL;
        int r = gs_k8s_list(p->k8s, &gs_k8s_resourceslices, NULL, &lo, &list, &rv, &err);
        json_decref(list);
        if (r == 0) {
            publisher_kick(p); /* anything may have happened since the last watch */
            r = gs_k8s_watch_run(p->watch, rv, on_slice_event, p, &err);
        }
        free(rv);
        if (r == -ECANCELED)
            break;
        if (r == -ESTALE) {
            backoff = 1;
            continue;
        }
        gs_warn("ResourceSlice watch ended, retrying", "error=%s backoff_s=%u", GS_LOGQ(err.msg),
                backoff);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += backoff;
        pthread_mutex_lock(&p->lock);
        while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &until) == 0) {
        }
        pthread_mutex_unlock(&p->lock);
        backoff = GS_MIN(backoff * 2, 30u);
    }
    return NULL;
}

struct publisher *publisher_start(const struct publisher_config *cfg, struct gs_k8s_client *k8s,
                                  struct driver *drv, struct metrics *m,
                                  const struct gpu_inventory *initial, struct gs_error *err)
{
    struct publisher *p = calloc(1, sizeof(*p));
    if (!p || !(p->inv = calloc(1, sizeof(*p->inv))) ||
        !(p->health = calloc(GPU_MAX_DEVICES, sizeof(*p->health)))) {
        if (p)
            free(p->inv);
        free(p);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    p->cfg = *cfg;
    snprintf(p->driver, sizeof(p->driver), "%s", cfg->driver);
    snprintf(p->node, sizeof(p->node), "%s", cfg->node);
    snprintf(p->sysfs_root, sizeof(p->sysfs_root), "%s", cfg->sysfs_root);
    p->k8s = k8s;
    p->drv = drv;
    p->m = m;
    memcpy(p->inv, initial, sizeof(*initial));
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);

    char sel[700];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s,spec.driver=%s", p->node, p->driver);
    struct gs_k8s_watch_options wo = {.field_selector = sel};
    p->watch = gs_k8s_watch_new(k8s, &gs_k8s_resourceslices, NULL, &wo, err);
    if (!p->watch)
        goto fail;
    if (pthread_create(&p->thread, NULL, publisher_main, p) != 0) {
        gs_error_set(err, -EAGAIN, "cannot start the publisher thread");
        goto fail;
    }
    if (pthread_create(&p->watcher, NULL, watcher_main, p) == 0)
        p->watcher_started = true;
    else
        gs_warn("cannot start the ResourceSlice watcher; relying on periodic resync", "%s", "");
    return p;
fail:
    gs_k8s_watch_free(p->watch);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p->health);
    free(p->inv);
    free(p);
    return NULL;
}

void publisher_stop(struct publisher *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    gs_k8s_watch_stop(p->watch);
    pthread_join(p->thread, NULL);
    if (p->watcher_started)
        pthread_join(p->watcher, NULL);
    gs_k8s_watch_free(p->watch);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p->health);
    free(p->inv);
    free(p);
}
