/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet plugin's GPU health: watcher, reporter thread, Node Events (see health.h). */
#include "plugin/health.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/macros.h"
#include "base/clock.h"
#include "config/json.h"

static const struct gs_k8s_resource events = {"", "v1", "events", true};

struct plugin_health {
    char node[256], driver[256];
    struct gs_k8s_client *k8s;
    struct gpu_health_table table;
    struct gpu_health_watcher *watcher;
    pthread_mutex_t lock;
    struct publisher *pub;
    bool stop;
    bool started;
    pthread_t reporter;
    struct gpu_health_dev before[GPU_MAX_DEVICES];
    struct gpu_health_dev now[GPU_MAX_DEVICES];
};

/* A Warning (Normal on recovery) Event on the Node, as the kubelet writes its own: namespace
 * "default", involvedObject kind Node. */
static void node_event(struct plugin_health *h, const struct gpu_health_dev *d)
{
    if (!h->k8s)
        return;
    char name[400], ts[32], msg[512];
    int64_t t = (int64_t)time(NULL);
    gs_rfc3339_utc(t, ts, sizeof(ts));
    snprintf(name, sizeof(name), "%.200s.gpuslice-health-%s-%lld", h->node, d->name,
             (long long)gs_realtime_ns());
    if (d->healthy)
        snprintf(msg, sizeof(msg), "GPU %s (%s) is healthy again; its taints are removed", d->name,
                 d->uuid);
    else
        snprintf(msg, sizeof(msg),
                 "%s; device %s is tainted NoSchedule in the ResourceSlice (claims already "
                 "prepared on it are left running: eviction is for a NoExecute taint)",
                 d->reason, d->name);
    _cleanup_(gs_json_decrefp) json_t *ev = json_pack(
        "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s,s:s}}", "apiVersion",
        "v1", "kind", "Event", "metadata", "name", name, "namespace", "default", "involvedObject",
        "apiVersion", "v1", "kind", "Node", "name", h->node, "type",
        d->healthy ? "Normal" : "Warning", "reason", d->healthy ? "GPUHealthy" : "GPUUnhealthy",
        "message", msg, "firstTimestamp", ts, "lastTimestamp", ts, "count", 1, "source",
        "component", "gpuslice-kubelet-plugin", "host", h->node);
    struct gs_error err = {0};
    if (ev && gs_k8s_create(h->k8s, &events, "default", ev, 0, NULL, &err) < 0)
        gs_warn("GPU health event not written", "device=%s error=%s", d->name, GS_LOGQ(err.msg));
}

static void *reporter_main(void *arg)
{
    struct plugin_health *h = arg;
    size_t n = 0, m = 0;
    uint64_t gen = gpu_health_snapshot(&h->table, h->before, GPU_MAX_DEVICES, &n);
    for (;;) {
        uint64_t g = gpu_health_wait_change(&h->table, gen, 1000);
        pthread_mutex_lock(&h->lock);
        bool stop = h->stop;
        struct publisher *pub = h->pub;
        if (g != gen && pub)
            publisher_kick(pub);
        pthread_mutex_unlock(&h->lock);
        if (stop)
            break;
        if (g == gen)
            continue;
        gen = gpu_health_snapshot(&h->table, h->now, GPU_MAX_DEVICES, &m);
        for (size_t i = 0; i < m && i < n; i++)
            if (h->now[i].healthy != h->before[i].healthy)
                node_event(h, &h->now[i]);
        memcpy(h->before, h->now, m * sizeof(h->now[0]));
        n = m;
    }
    return NULL;
}

struct plugin_health *plugin_health_start(const struct plugin_health_config *cfg,
                                          const struct gpu_inventory *inv,
                                          struct gs_k8s_client *k8s, struct gs_error *err)
{
    struct gpu_health_policy policy;
    if (gpu_health_policy_init(&policy, cfg->enabled, cfg->nonfatal_xids, cfg->ignore_xids, err) <
        0)
        return NULL;
    struct plugin_health *h = calloc(1, sizeof(*h));
    if (!h) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(h->node, sizeof(h->node), "%s", cfg->node);
    snprintf(h->driver, sizeof(h->driver), "%s", cfg->driver);
    h->k8s = k8s;
    pthread_mutex_init(&h->lock, NULL);
    gpu_health_table_init(&h->table, inv, &policy, (int64_t)time(NULL));
    struct gpu_health_watcher_config wc = {.clear_dir = cfg->clear_dir};
    h->watcher = gpu_health_watcher_start(&h->table, inv, &wc, err);
    if (!h->watcher) {
        plugin_health_stop(h);
        return NULL;
    }
    if (pthread_create(&h->reporter, NULL, reporter_main, h) != 0) {
        gs_error_set(err, -EAGAIN, "cannot start the GPU health reporter thread");
        plugin_health_stop(h);
        return NULL;
    }
    h->started = true;
    gs_info("GPU health watched", "enabled=%d devices=%zu nonfatal_xids=%s ignore_xids=%s",
            cfg->enabled, h->table.n, GS_LOGQ(cfg->nonfatal_xids ? cfg->nonfatal_xids : ""),
            GS_LOGQ(cfg->ignore_xids ? cfg->ignore_xids : ""));
    return h;
}

struct gpu_health_table *plugin_health_table(struct plugin_health *h)
{
    return h ? &h->table : NULL;
}

struct gpu_health_watcher *plugin_health_watcher(struct plugin_health *h)
{
    return h ? h->watcher : NULL;
}

void plugin_health_set_publisher(struct plugin_health *h, struct publisher *pub)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->pub = pub;
    pthread_mutex_unlock(&h->lock);
}

const char *plugin_health_pool(const struct plugin_health *h)
{
    return h->node;
}

void plugin_health_stop(struct plugin_health *h)
{
    if (!h)
        return;
    gpu_health_watcher_stop(h->watcher);
    pthread_mutex_lock(&h->lock);
    h->stop = true;
    h->pub = NULL;
    pthread_mutex_unlock(&h->lock);
    gpu_health_table_stop(&h->table);
    if (h->started)
        pthread_join(h->reporter, NULL);
    gpu_health_table_fini(&h->table);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
