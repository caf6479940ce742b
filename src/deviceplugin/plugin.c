/* SPDX-License-Identifier: Apache-2.0 */
/* Registration, ListAndWatch, Allocate (see plugin.h). */
#include "deviceplugin/plugin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.pb-c.h"
#include "base/fs.h"
#include "config/json.h"
#include "config/limits.h"
#include "base/log.h"
#include "base/macros.h"
#include "deviceplugin/dp-grpc.h"
#include "extender/assign.h"
#include "gpuslice/shared_region.h"
#include "hami/hami.h"

struct dp_plugin {
    struct dp_config cfg;
    struct dp_server *server;
    char sock[4096], kubelet[4096];
    ino_t sock_ino;
    struct stat kubelet_st; /* the kubelet socket registered with */
    bool registered;
    pthread_mutex_t lock; /* stats; Allocate calls one at a time */
    pthread_mutex_t alloc_lock;
    struct dp_stats stats;
};

static void count(struct dp_plugin *p, uint64_t *field)
{
    pthread_mutex_lock(&p->lock);
    (*field)++;
    pthread_mutex_unlock(&p->lock);
}

void dp_plugin_stats(struct dp_plugin *p, struct dp_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->stats;
    pthread_mutex_unlock(&p->lock);
}

static void pack_reply(const ProtobufCMessage *m, struct dp_reply *r)
{
    r->len = protobuf_c_message_get_packed_size(m);
    r->data = malloc(r->len ? r->len : 1);
    if (!r->data) {
        r->status = DP_INTERNAL;
        snprintf(r->details, sizeof(r->details), "out of memory");
        return;
    }
    protobuf_c_message_pack(m, r->data);
    r->status = DP_OK;
}

static void get_options(void *user, const uint8_t *req, size_t len, struct dp_reply *r)
{
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    pack_reply(&o.base, r);
}

static void pre_start(void *user, const uint8_t *req, size_t len, struct dp_reply *r)
{
    V1beta1__PreStartContainerResponse o = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
    pack_reply(&o.base, r);
}

/* Device IDs "<uuid>-<j>" spread over the GPUs first: the kubelet's choice then does not matter
 * (Allocate takes the GPUs from the pod's annotation), but one ID per GPU reads best. */
static void preferred(void *user, const uint8_t *req, size_t len, struct dp_reply *r)
{
    V1beta1__PreferredAllocationRequest *in =
        v1beta1__preferred_allocation_request__unpack(NULL, len, req);
    if (!in) {
        r->status = DP_INVALID_ARGUMENT;
        snprintf(r->details, sizeof(r->details), "PreferredAllocationRequest does not decode");
        return;
    }
    size_t n = in->n_container_requests;
    V1beta1__PreferredAllocationResponse out = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    V1beta1__ContainerPreferredAllocationResponse *cr = calloc(n + 1, sizeof(*cr));
    V1beta1__ContainerPreferredAllocationResponse **crp =
        calloc(n + 1, sizeof(V1beta1__ContainerPreferredAllocationResponse *));
    for (size_t i = 0; cr && crp && i < n; i++) {
        V1beta1__ContainerPreferredAllocationRequest *c = in->container_requests[i];
        v1beta1__container_preferred_allocation_response__init(&cr[i]);
        crp[i] = &cr[i];
        size_t want = c->allocation_size > 0 ? (size_t)c->allocation_size : 0;
        cr[i].deviceids = calloc(want + 1, sizeof(char *));
        if (!cr[i].deviceids)
            continue;
        for (size_t k = 0; k < c->n_must_include_deviceids && cr[i].n_deviceids < want; k++)
            cr[i].deviceids[cr[i].n_deviceids++] = c->must_include_deviceids[k];
        /* then one per GPU (IDs differ by their "-<j>" suffix) */
        for (size_t k = 0; k < c->n_available_deviceids && cr[i].n_deviceids < want; k++) {
            const char *id = c->available_deviceids[k];
            const char *dash = strrchr(id, '-');
            size_t plen = dash ? (size_t)(dash - id) : strlen(id);
            bool dup = false;
            for (size_t q = 0; q < cr[i].n_deviceids && !dup; q++)
                dup = cr[i].deviceids[q] && strncmp(cr[i].deviceids[q], id, plen) == 0;
            if (!dup)
                cr[i].deviceids[cr[i].n_deviceids++] = (char *)id;
        }
        for (size_t k = 0; k < c->n_available_deviceids && cr[i].n_deviceids < want; k++) {
            bool dup = false;
            for (size_t q = 0; q < cr[i].n_deviceids && !dup; q++)
                dup = cr[i].deviceids[q] && c->available_deviceids[k] &&
                      strcmp(cr[i].deviceids[q], c->available_deviceids[k]) == 0;
            if (!dup)
                cr[i].deviceids[cr[i].n_deviceids++] = c->available_deviceids[k];
        }
    }
    out.n_container_responses = cr && crp ? n : 0;
    out.container_responses = crp;
    pack_reply(&out.base, r);
    for (size_t i = 0; cr && i < n; i++)
        free(cr[i].deviceids);
    free(cr);
    free(crp);
    v1beta1__preferred_allocation_request__free_unpacked(in, NULL);
}

/* Is GPU g healthy by the table (healthy when there is no table or it does not know it)? */
static bool gpu_healthy(const struct dp_plugin *p, const struct gpu_health_dev *h, size_t nh,
                        size_t g)
{
    for (size_t i = 0; i < nh; i++)
        if (strcmp(h[i].name, p->cfg.inv->dev[g].name) == 0)
            return h[i].healthy;
    return true;
}

/* One ListAndWatchResponse with every device, health from the table's snapshot `h`. */
static int send_devices(struct dp_plugin *p, struct dp_stream *st, const struct gpu_health_dev *h,
                        size_t nh)
{
    const struct gpu_inventory *inv = p->cfg.inv;
    size_t n = inv->n * p->cfg.split_count;
    int r = -ENOMEM;
    V1beta1__Device *devs = calloc(n + 1, sizeof(*devs));
    V1beta1__Device **dp = calloc(n + 1, sizeof(V1beta1__Device *));
    V1beta1__TopologyInfo *topo = calloc(inv->n + 1, sizeof(*topo));
    V1beta1__NUMANode *numa = calloc(inv->n + 1, sizeof(*numa));
    V1beta1__NUMANode **numap = calloc(inv->n + 1, sizeof(V1beta1__NUMANode *));
    char(*ids)[GPU_STR_MAX + 16] = calloc(n + 1, sizeof(*ids));
    if (devs && dp && topo && numa && numap && ids) {
        size_t k = 0, unhealthy = 0;
        for (size_t g = 0; g < inv->n; g++) {
            v1beta1__topology_info__init(&topo[g]);
            v1beta1__numanode__init(&numa[g]);
            numa[g].id = inv->dev[g].numa_node < 0 ? 0 : inv->dev[g].numa_node;
            numap[g] = &numa[g];
            topo[g].n_nodes = 1;
            topo[g].nodes = &numap[g];
            bool ok = gpu_healthy(p, h, nh, g);
            unhealthy += ok ? 0 : 1;
            for (unsigned j = 0; j < p->cfg.split_count; j++, k++) {
                v1beta1__device__init(&devs[k]);
                snprintf(ids[k], sizeof(ids[k]), "%s-%u", inv->dev[g].uuid, j);
                devs[k].id = ids[k];
                /* kubelet's pluginapi.Healthy / pluginapi.Unhealthy */
                devs[k].health = ok ? "Healthy" : "Unhealthy";
                devs[k].topology = inv->dev[g].numa_node >= 0 ? &topo[g] : NULL;
                dp[k] = &devs[k];
            }
        }
        V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        resp.n_devices = n;
        resp.devices = dp;
        size_t len = protobuf_c_message_get_packed_size(&resp.base);
        uint8_t *buf = malloc(len ? len : 1);
        if (buf) {
            protobuf_c_message_pack(&resp.base, buf);
            r = dp_stream_send(st, buf, len);
            if (r == 0)
                gs_log(GS_LOG_INFO, "ListAndWatch", "devices=%zu unhealthy_gpus=%zu", n, unhealthy);
            free(buf);
        }
    }
    free(devs);
    free(dp);
    free(topo);
    free(numa);
    free(numap);
    free(ids);
    return r;
}

static void list_and_watch(void *user, struct dp_stream *st)
{
    struct dp_plugin *p = user;
    count(p, &p->stats.list_and_watch);
    struct gpu_health_dev *h = calloc(GPU_MAX_DEVICES, sizeof(*h));
    size_t nh = 0;
    uint64_t gen = 0;
    if (h && p->cfg.health)
        gen = gpu_health_snapshot(p->cfg.health, h, GPU_MAX_DEVICES, &nh);
    int r = send_devices(p, st, h, nh);
    /* The inventory does not change while we run (a GPU change restarts the plugin); health
     * does: send the list again at every change, until the kubelet goes away or we stop. */
    while (r != -EPIPE && !dp_stream_closed(st, p->cfg.health ? 100 : 1000)) {
        if (!h || !p->cfg.health)
            continue;
        uint64_t g = gpu_health_wait_change(p->cfg.health, gen, 400);
        if (g == gen)
            continue;
        gen = gpu_health_snapshot(p->cfg.health, h, GPU_MAX_DEVICES, &nh);
        r = send_devices(p, st, h, nh);
    }
    free(h);
}

/* A pod the extender placed on this node, as its Node record says (extender/assign.h), matched
 * to the live pod of that UID; `next` advances in memory while one Allocate serves it. */
struct candidate {
    struct ext_assignment rec;
    char key[128];
    const json_t *pod; /* borrowed from the list */
    size_t n_ctrs;     /* spec.containers */
    int n_entries;     /* container entries of rec.devices */
    struct hami_ctr_devices *cd;
    bool touched;
};

struct plan {
    json_t *pods; /* the list of this node's pods */
    struct candidate *c;
    size_t n;
};

static void plan_fini(struct plan *pl)
{
    for (size_t i = 0; i < pl->n; i++) {
        ext_assignment_fini(&pl->c[i].rec);
        free(pl->c[i].cd);
    }
    free(pl->c);
    json_decref(pl->pods);
    *pl = (struct plan){0};
}

static int cmp_candidate(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->rec.time != y->rec.time)
        return x->rec.time < y->rec.time ? -1 : 1;
    return strcmp(x->rec.uid, y->rec.uid);
}

/* The records on our Node whose pod is bound here with that UID, oldest first. Pod annotations
 * are not trusted (the pod's owner can write them): only the Node's records are. */
static int plan_load(struct dp_plugin *p, struct plan *pl, struct gs_error *err)
{
    *pl = (struct plan){0};
    _cleanup_(gs_json_decrefp) json_t *node = NULL;
    int r = gs_k8s_get(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, &node, err);
    if (r < 0)
        return gs_error_prefix(err, "node %s: ", p->cfg.node_name);
    char sel[512];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s", p->cfg.node_name);
    struct gs_k8s_list_options lo = {.field_selector = sel};
    _cleanup_(gs_json_decrefp) json_t *list = NULL;
    if ((r = gs_k8s_list(p->cfg.k8s, &gs_k8s_pods, NULL, &lo, &list, NULL, err)) < 0)
        return r;
    pl->pods = json_incref(json_object_get(list, "items"));
    const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
    pl->c = calloc(json_object_size(ann) + 1, sizeof(*pl->c));
    if (!pl->c)
        return gs_error_set(err, -ENOMEM, "out of memory");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)ann, k, v)
    {
        struct candidate *c = &pl->c[pl->n];
        struct gs_error e = {0};
        int d = ext_assign_decode(k, json_string_value(v), &c->rec, &e);
        if (d == -ENOENT)
            continue;
        if (d < 0) {
            char q[300];
            gs_log(GS_LOG_WARN, "placement record ignored", "error=%s",
                   gs_log_quote(q, sizeof(q), e.msg));
            ext_assignment_fini(&c->rec);
            continue;
        }
        size_t i;
        const json_t *o;
        json_array_foreach(pl->pods, i, o)
        {
            const json_t *md = json_object_get(o, "metadata");
            const char *uid = json_string_value(json_object_get(md, "uid"));
            const char *ns = json_string_value(json_object_get(md, "namespace"));
            const char *name = json_string_value(json_object_get(md, "name"));
            if (uid && ns && name && strcmp(uid, c->rec.uid) == 0 && strcmp(ns, c->rec.ns) == 0 &&
                strcmp(name, c->rec.name) == 0 && !json_object_get(md, "deletionTimestamp")) {
                c->pod = o;
                break;
            }
        }
        if (!c->pod) { /* not bound here (yet, or any more) */
            ext_assignment_fini(&c->rec);
            continue;
        }
        snprintf(c->key, sizeof(c->key), "%s", k);
        /* entries: spec.initContainers first, then spec.containers (HAMi's order) */
        const json_t *spec = json_object_get(c->pod, "spec");
        c->n_ctrs = json_array_size(json_object_get(spec, "initContainers")) +
                    json_array_size(json_object_get(spec, "containers"));
        c->cd = calloc(c->n_ctrs + 1, sizeof(*c->cd));
        if (!c->cd) {
            ext_assignment_fini(&c->rec);
            return gs_error_set(err, -ENOMEM, "out of memory");
        }
        c->n_entries = hami_pod_devices_decode(c->rec.devices, c->cd, c->n_ctrs + 1, &e);
        if (c->n_entries < 0) {
            char q[300];
            gs_log(GS_LOG_WARN, "placement record ignored", "pod=%s/%s error=%s", c->rec.ns,
                   c->rec.name, gs_log_quote(q, sizeof(q), e.msg));
            ext_assignment_fini(&c->rec);
            free(c->cd);
            c->cd = NULL;
            continue;
        }
        pl->n++;
    }
    qsort(pl->c, pl->n, sizeof(*pl->c), cmp_candidate);
    return 0;
}

/* The next container of the oldest placement with one left: *cand and *ci. */
static int plan_next(struct dp_plugin *p, struct plan *pl, struct candidate **cand, int *ci,
                     struct gs_error *err)
{
    for (size_t i = 0; i < pl->n; i++) {
        struct candidate *c = &pl->c[i];
        for (int k = (int)c->rec.next; k < c->n_entries && (size_t)k < c->n_ctrs; k++)
            if (c->cd[k].n) {
                *cand = c, *ci = k;
                return 0;
            }
    }
    return gs_error_set(err, -ENOENT,
                        "no pod placed on node %s by the extender (bind-phase %s with a "
                        "gpuslice.io/assign- record on the Node) has devices left to allocate",
                        p->cfg.node_name, HAMI_BIND_ALLOCATING);
}

/* A DNS label (RFC 1123), as Kubernetes requires of a container name. */
static bool dns_label(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* Every device is one of this node's GPUs, once, with memory within the card as published (scaled)
 * and cores 0..100. */
static int check_devices(struct dp_plugin *p, const struct hami_ctr_devices *mine, const char *what,
                         struct gs_error *err)
{
    const struct gpu_inventory *inv = p->cfg.inv;
    for (size_t i = 0; i < mine->n; i++) {
        const struct hami_ctr_device *d = &mine->dev[i];
        const struct gpu_device *g = NULL;
        for (size_t k = 0; k < inv->n && !g; k++)
            if (strcmp(inv->dev[k].uuid, d->uuid) == 0)
                g = &inv->dev[k];
        if (!g)
            return gs_error_set(err, -EINVAL, "%s: GPU \"%.80s\" is not a GPU of node %s", what,
                                d->uuid, p->cfg.node_name);
        for (size_t k = 0; k < i; k++)
            if (strcmp(mine->dev[k].uuid, d->uuid) == 0)
                return gs_error_set(err, -EINVAL, "%s: GPU %s is listed twice", what, d->uuid);
        /* the card as published: whole MiB x --device-memory-scaling (HAMi's devmem) */
        uint64_t card_mib = g->memory_total / GPU_MIB;
        double scaled = (double)card_mib * p->cfg.mem_scaling;
        int64_t card = scaled > INT32_MAX ? INT32_MAX : (int64_t)scaled;
        if (d->usedmem <= 0 || d->usedmem > card)
            return gs_error_set(err, -EINVAL,
                                "%s: GPU %s: memory %" PRId32 " MiB is not within the card's "
                                "1..%" PRId64 " MiB",
                                what, d->uuid, d->usedmem, card);
        if (d->usedcores < 0 || d->usedcores > 100)
            return gs_error_set(err, -EINVAL, "%s: GPU %s: cores %" PRId32 " not within 0..100",
                                what, d->uuid, d->usedcores);
    }
    return 0;
}

static int add_env(V1beta1__ContainerAllocateResponse *c, const char *k, const char *v)
{
    V1beta1__ContainerAllocateResponse__EnvsEntry **arr =
        realloc(c->envs, (c->n_envs + 1) * sizeof(V1beta1__ContainerAllocateResponse__EnvsEntry *));
    if (!arr)
        return -ENOMEM;
    c->envs = arr;
    V1beta1__ContainerAllocateResponse__EnvsEntry *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    v1beta1__container_allocate_response__envs_entry__init(e);
    e->key = strdup(k);
    e->value = strdup(v);
    arr[c->n_envs++] = e; /* freed by free_ctr, complete or not */
    return e->key && e->value ? 0 : -ENOMEM;
}

static int add_mount(V1beta1__ContainerAllocateResponse *c, const char *host, const char *ctr,
                     bool ro)
{
    V1beta1__Mount **arr = realloc(c->mounts, (c->n_mounts + 1) * sizeof(V1beta1__Mount *));
    if (!arr)
        return -ENOMEM;
    c->mounts = arr;
    V1beta1__Mount *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    v1beta1__mount__init(m);
    m->host_path = strdup(host);
    m->container_path = strdup(ctr);
    m->read_only = ro;
    arr[c->n_mounts++] = m;
    return m->host_path && m->container_path ? 0 : -ENOMEM;
}

static void free_ctr(V1beta1__ContainerAllocateResponse *c)
{
    for (size_t i = 0; i < c->n_envs; i++) {
        free(c->envs[i]->key);
        free(c->envs[i]->value);
        free(c->envs[i]);
    }
    free(c->envs);
    for (size_t i = 0; i < c->n_mounts; i++) {
        free(c->mounts[i]->host_path);
        free(c->mounts[i]->container_path);
        free(c->mounts[i]);
    }
    free(c->mounts);
}

static bool disable_control(const json_t *ctr)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(ctr, "env"), i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        const char *v = json_string_value(json_object_get(e, "value"));
        bool t = false;
        if (n && strcmp(n, HAMI_ENV_DISABLE_CONTROL) == 0 && v &&
            hami_parse_bool(v, strlen(v), &t) == 0 && t)
            return true;
    }
    return false;
}

static const char *ann_of(const json_t *o, const char *k)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), k));
}

/* ReleaseNodeLock (pkg/util/nodelock/nodelock.go): remove hami.io/mutex.lock when this pod holds
 * it (or it is a bare time, HAMi's older form), with the node's resourceVersion. */
static void release_lock(struct dp_plugin *p, const char *ns, const char *name)
{
    struct gs_error e = {0};
    _cleanup_(gs_json_decrefp) json_t *node = NULL;
    if (gs_k8s_get(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, &node, &e) < 0)
        return;
    const char *v = ann_of(node, HAMI_ANN_NODE_LOCK);
    struct hami_lock lk;
    if (!v || hami_lock_parse(v, &lk, &e) < 0 ||
        (lk.ns[0] && (strcmp(lk.ns, ns) != 0 || strcmp(lk.pod, name) != 0)))
        return;
    const char *rv =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "resourceVersion"));
    _cleanup_(gs_json_decrefp) json_t *patch = json_pack(
        "{s:{s:{s:n},s:s?}}", "metadata", "annotations", HAMI_ANN_NODE_LOCK, "resourceVersion", rv);
    if (gs_k8s_patch(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, NULL, GS_K8S_PATCH_MERGE,
                     patch, 0, NULL, &e) == 0)
        gs_log(GS_LOG_INFO, "node lock released", "node=%s pod=%s/%s", p->cfg.node_name, ns, name);
}

/* PodAllocationFailed (HAMi's device plugin): bind-phase failed, node lock released; and a
 * Warning Event on the Pod (HAMi writes none: the reason is named after that function) so
 * `kubectl describe pod` says why beside the kubelet's UnexpectedAdmissionError. */
static void allocation_failed(struct dp_plugin *p, const struct ext_assignment *rec,
                              const char *why)
{
    const char *ns = rec->ns, *name = rec->name;
    gs_k8s_record(
        p->cfg.events, &(struct gs_k8s_object_ref){"v1", "Pod", rec->ns, rec->name, rec->uid}, true,
        "AllocationFailed", "device plugin Allocate on node %s failed: %s", p->cfg.node_name, why);
    struct gs_error e = {0};
    _cleanup_(gs_json_decrefp) json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                                                         HAMI_ANN_BIND_PHASE, HAMI_BIND_FAILED);
    if (gs_k8s_patch(p->cfg.k8s, &gs_k8s_pods, ns, name, NULL, GS_K8S_PATCH_MERGE, patch, 0, NULL,
                     &e) < 0)
        gs_log(GS_LOG_WARN, "bind-phase failed not written", "pod=%s/%s error=\"%s\"", ns, name,
               e.msg);
    release_lock(p, ns, name);
}

/* Container ci of placement c (see allocate_one). */
static int allocate_ctr(struct dp_plugin *p, struct candidate *c, int ci, size_t n_ids,
                        V1beta1__ContainerAllocateResponse *out, struct gs_error *err)
{
    int r;
    const char *ns = c->rec.ns, *name = c->rec.name, *uid = c->rec.uid;
    /* Entries: spec.initContainers first, then spec.containers (HAMi's order: the device plugin
     * maps an entry index below the number of init containers to an init container). */
    const json_t *spec = json_object_get(c->pod, "spec");
    const json_t *inits = json_object_get(spec, "initContainers");
    const json_t *apps = json_object_get(spec, "containers");
    size_t ni = json_array_size(inits);
    const json_t *ctr =
        (size_t)ci < ni ? json_array_get(inits, (size_t)ci) : json_array_get(apps, (size_t)ci - ni);
    const struct hami_ctr_devices *mine = &c->cd[ci];
    const char *cname = json_string_value(json_object_get(ctr, "name"));
    char what[400];
    snprintf(what, sizeof(what), "pod %s/%s container %d", ns, name, ci);
    if (mine->n != n_ids)
        return gs_error_set(err, -EINVAL,
                            "%s: the extender assigned %zu GPUs, kubelet asks for %zu devices",
                            what, mine->n, n_ids);
    if (!dns_label(cname))
        return gs_error_set(err, -EINVAL, "%s: container name \"%.64s\" is not a DNS label", what,
                            cname ? cname : "");
    if ((r = check_devices(p, mine, what, err)) < 0)
        return r;
    /* Validated before it names a directory: a Kubernetes UID and a DNS label. */
    char key[EXT_UID_LEN + 1 + 64];
    snprintf(key, sizeof(key), "%s-%s", uid, cname);

    /* Environment as HAMi's device plugin sets it. */
    char visible[GS_LIMITS_MAX_DEVICES * (HAMI_ID_MAX + 1)] = "";
    struct gs_limits lim;
    gs_limits_init(&lim);
    snprintf(lim.claim, sizeof(lim.claim), "%s", key);
    int e = 0;
    for (size_t i = 0; i < mine->n; i++) {
        const struct hami_ctr_device *d = &mine->dev[i];
        if (i)
            strncat(visible, ",", sizeof(visible) - strlen(visible) - 1);
        strncat(visible, d->uuid, sizeof(visible) - strlen(visible) - 1);
        char k[64], v[32];
        snprintf(k, sizeof(k), HAMI_ENV_MEMORY_LIMIT "_%zu", i);
        snprintf(v, sizeof(v), "%" PRId32 "m", d->usedmem);
        e |= add_env(out, k, v);
        if (gs_limits_add_device(&lim, d->uuid, (uint64_t)d->usedmem * 1024 * 1024,
                                 (uint32_t)d->usedcores, err) < 0)
            return gs_error_prefix(err, "%s: ", what);
    }
    e |= add_env(out, HAMI_ENV_VISIBLE_DEVICES, visible);
    char v[64];
    snprintf(v, sizeof(v), "%" PRId32, mine->dev[0].usedcores);
    e |= add_env(out, HAMI_ENV_SM_LIMIT, v);
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/%s.cache", DP_CONTAINER_CACHE, key);
    e |= add_env(out, HAMI_ENV_SHARED_CACHE, cache);
    e |= add_env(out, GS_LIMITS_ENV, GS_LIMITS_DIR_DEFAULT);
    /* Allocate in HAMi's plugin/server.go: oversubscription when memory is scaled up, the
     * libvgpu log level, the core limit switch. */
    if (p->cfg.mem_scaling > 1)
        e |= add_env(out, HAMI_ENV_OVERSUBSCRIBE, "true");
    if (p->cfg.cuda_log_level && *p->cfg.cuda_log_level)
        e |= add_env(out, HAMI_ENV_LOG_LEVEL, p->cfg.cuda_log_level);
    if (p->cfg.disable_core_limit)
        e |= add_env(out, HAMI_ENV_CORE_POLICY, "disable");
    /* nvidia.com/priority -> CUDA_TASK_PRIORITY (MutateAdmission, pkg/device/nvidia/device.go:
     * HAMi's webhook sets it; in legacy mode our webhook leaves the pod as is, so we do). */
    const char *prio = json_string_value(json_object_get(
        json_object_get(json_object_get(ctr, "resources"), "limits"), HAMI_RES_PRIORITY));
    char *pend = NULL;
    long long pv = prio ? strtoll(prio, &pend, 10) : 0;
    if (prio && *prio && pend && !*pend) {
        char pb[32];
        snprintf(pb, sizeof(pb), "%lld", pv);
        e |= add_env(out, HAMI_ENV_TASK_PRIORITY, pb);
    }

    /* Limits file (authoritative over the environment, as in DRA mode) and the cache folder. */
    char dir[4096], path[4200], cdir[4096], rdir[4096], rctr[4096];
    snprintf(dir, sizeof(dir), "%s/limits/%s", p->cfg.state_dir, key);
    snprintf(cdir, sizeof(cdir), "%s/containers/%s", p->cfg.state_dir, key);
    snprintf(rdir, sizeof(rdir), "%s/regions/%s", p->cfg.state_dir, key);
    snprintf(rctr, sizeof(rctr), "%s/%s", DP_CONTAINER_REGION_DIR, key);
    char host[4200];
    snprintf(host, sizeof(host), "%s/libvgpu.so", p->cfg.host_dir);
    e |= add_mount(out, host, DP_CONTAINER_VGPU "/libvgpu.so", true);
    /* No preload for a container that opts out (CUDA_DISABLE_CONTROL parsed as Go's
     * strconv.ParseBool; unparsable = false, as HAMi). */
    if (!disable_control(ctr)) {
        snprintf(host, sizeof(host), "%s/ld.so.preload", p->cfg.host_dir);
        e |= add_mount(out, host, "/etc/ld.so.preload", true);
    }
    e |= add_mount(out, HAMI_VGPU_LOCK_DIR, HAMI_VGPU_LOCK_DIR, false);
    e |= add_mount(out, dir, GS_LIMITS_DIR_DEFAULT, true);
    e |= add_mount(out, cdir, DP_CONTAINER_CACHE, false);
    e |= add_mount(out, rdir, rctr, false);
    if (e) /* never a partial answer: a container without its limits or preload runs unlimited */
        return gs_error_set(err, -ENOMEM, "%s: out of memory building the response", what);
    if ((r = gs_mkdir_p(dir, 0755, err)) < 0 || (r = gs_mkdir_p(cdir, 0777, err)) < 0 ||
        (r = gs_mkdir_p(rdir, 0777, err)) < 0 ||
        (r = gs_mkdir_p(HAMI_VGPU_LOCK_DIR, 0777, err)) < 0)
        return r;
    (void)chmod(HAMI_VGPU_LOCK_DIR, 0777); /* as HAMi: every container's libvgpu locks there */
    (void)chmod(rdir, 0777);
    /* The region itself, sized and marked as the DRA plugin makes it (libvgpu never creates a
     * region its limits file names, and refuses an unmarked one); an existing one is kept: it
     * holds the live accounting of the container's processes. */
    char rfile[4200];
    snprintf(rfile, sizeof(rfile), "%s/region", rdir);
    int rfd = open(rfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (rfd >= 0) {
        int tr = ftruncate(rfd, (off_t)sizeof(struct gs_region));
        if (tr == 0)
            tr = gs_region_prepare_fd(rfd);
        int re = errno;
        (void)fchmod(rfd, 0666);
        close(rfd);
        if (tr < 0)
            return gs_error_set(err, -re, "%s: cannot size the shared region %s: %s", what, rfile,
                                strerror(re));
    } else if (errno != EEXIST) {
        int re = errno;
        return gs_error_set(err, -re, "%s: cannot create the shared region %s: %s", what, rfile,
                            strerror(re));
    }
    /* The container's own shared region (as the DRA plugin gives each claim one): without a
     * region line libvgpu would use its fixed default region. */
    snprintf(lim.region_path, sizeof(lim.region_path), "%s/region", rctr);
    if ((r = gs_limits_path(path, sizeof(path), dir, key, err)) < 0 ||
        (r = gs_limits_write(path, &lim, err)) < 0)
        return r;
    c->rec.next = (unsigned)ci + 1;
    c->touched = true;
    char q[1024];
    gs_log(GS_LOG_INFO, "allocated", "pod=%s/%s container=%s devices=%s", ns, name, cname,
           gs_log_quote(q, sizeof(q), visible));
    return 0;
}

/* One container: the next container of the oldest placement. Nothing but HAMi's failure marks
 * is written to the API here (commit() does, once every container of the request is answered).
 * A failure once the pod is known marks it failed (HAMi's bind phase, for HAMi's tools) and
 * releases its node lock; its record on the Node stays. */
static int allocate_one(struct dp_plugin *p, struct plan *pl, size_t n_ids,
                        V1beta1__ContainerAllocateResponse *out, struct gs_error *err)
{
    struct candidate *c = NULL;
    int ci = -1;
    int r = plan_next(p, pl, &c, &ci, err);
    if (r < 0)
        return r;
    r = allocate_ctr(p, c, ci, n_ids, out, err);
    if (r < 0)
        allocation_failed(p, &c->rec, err->msg);
    return r;
}

/* Every container answered: advance (or remove) the Node records — the commit point — then
 * HAMi's pod annotations for HAMi's tools (best effort: the record is what counts). */
static int commit(struct dp_plugin *p, struct plan *pl, struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *ann = json_object();
    for (size_t i = 0; i < pl->n; i++) {
        struct candidate *c = &pl->c[i];
        if (!c->touched)
            continue;
        bool left = false;
        for (int k = (int)c->rec.next; k < c->n_entries; k++)
            left |= c->cd[k].n > 0;
        if (left) {
            char *val =
                ext_assign_encode(c->rec.ns, c->rec.name, c->rec.time, c->rec.devices, c->rec.next);
            if (!val)
                return gs_error_set(err, -ENOMEM, "out of memory");
            json_object_set_new(ann, c->key, json_string(val));
            free(val);
        } else {
            json_object_set_new(ann, c->key, json_null());
        }
    }
    _cleanup_(gs_json_decrefp) json_t *patch =
        json_pack("{s:{s:O}}", "metadata", "annotations", ann);
    int r = gs_k8s_patch(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, NULL,
                         GS_K8S_PATCH_MERGE, patch, 0, NULL, err);
    if (r < 0)
        return gs_error_prefix(err, "node %s: placement record: ", p->cfg.node_name);
    for (size_t i = 0; i < pl->n; i++) {
        struct candidate *c = &pl->c[i];
        if (!c->touched)
            continue;
        bool left = false;
        for (int k = 0; k < c->n_entries; k++) {
            if ((unsigned)k < c->rec.next)
                c->cd[k].n = 0;
            left |= c->cd[k].n > 0;
        }
        _cleanup_free_ char *rest = hami_pod_devices_encode(c->cd, (size_t)c->n_entries);
        _cleanup_(gs_json_decrefp) json_t *pa = json_pack(
            "{s:{s:{s:s,s:s}}}", "metadata", "annotations", HAMI_ANN_TO_ALLOCATE, rest ? rest : "",
            HAMI_ANN_BIND_PHASE, left ? HAMI_BIND_ALLOCATING : HAMI_BIND_SUCCESS);
        struct gs_error e = {0};
        if (gs_k8s_patch(p->cfg.k8s, &gs_k8s_pods, c->rec.ns, c->rec.name, NULL, GS_K8S_PATCH_MERGE,
                         pa, 0, NULL, &e) < 0) {
            char q[300];
            gs_log(GS_LOG_WARN, "pod annotations not updated", "pod=%s/%s error=%s", c->rec.ns,
                   c->rec.name, gs_log_quote(q, sizeof(q), e.msg));
        }
        if (!left) /* PodAllocationTrySuccess: the lock a HAMi scheduler left is released */
            release_lock(p, c->rec.ns, c->rec.name);
    }
    return 0;
}

static void allocate(void *user, const uint8_t *req, size_t len, struct dp_reply *r)
{
    struct dp_plugin *p = user;
    count(p, &p->stats.allocate);
    V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(NULL, len, req);
    if (!in) {
        r->status = DP_INVALID_ARGUMENT;
        snprintf(r->details, sizeof(r->details), "AllocateRequest does not decode");
        count(p, &p->stats.allocate_errors);
        return;
    }
    size_t n = in->n_container_requests;
    V1beta1__ContainerAllocateResponse *cr = calloc(n + 1, sizeof(*cr));
    V1beta1__ContainerAllocateResponse **crp =
        calloc(n + 1, sizeof(V1beta1__ContainerAllocateResponse *));
    struct gs_error err = {0};
    int rc = cr && crp ? 0 : -ENOMEM;
    struct plan pl = {0};
    pthread_mutex_lock(&p->alloc_lock);
    if (rc == 0)
        rc = plan_load(p, &pl, &err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        v1beta1__container_allocate_response__init(&cr[i]);
        crp[i] = &cr[i];
        rc = allocate_one(p, &pl, in->container_requests[i]->n_devices_ids, &cr[i], &err);
    }
    if (rc == 0) /* nothing is consumed unless every container was answered */
        rc = commit(p, &pl, &err);
    pthread_mutex_unlock(&p->alloc_lock);
    plan_fini(&pl);
    if (rc == 0) {
        V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
        out.n_container_responses = n;
        out.container_responses = crp;
        pack_reply(&out.base, r);
    } else {
        count(p, &p->stats.allocate_errors);
        r->status = rc == -ENOENT ? DP_NOT_FOUND : DP_FAILED_PRECONDITION;
        snprintf(r->details, sizeof(r->details), "%s", err.msg[0] ? err.msg : gs_strerror(rc));
        char q[400];
        gs_log(GS_LOG_WARN, "Allocate failed", "error=%s", gs_log_quote(q, sizeof(q), r->details));
    }
    for (size_t i = 0; cr && i < n; i++)
        free_ctr(&cr[i]);
    free(cr);
    free(crp);
    v1beta1__allocate_request__free_unpacked(in, NULL);
}

static const struct dp_method methods[] = {
    {"/v1beta1.DevicePlugin/GetDevicePluginOptions", get_options, NULL},
    {"/v1beta1.DevicePlugin/ListAndWatch", NULL, list_and_watch},
    {"/v1beta1.DevicePlugin/GetPreferredAllocation", preferred, NULL},
    {"/v1beta1.DevicePlugin/Allocate", allocate, NULL},
    {"/v1beta1.DevicePlugin/PreStartContainer", pre_start, NULL},
};

struct dp_plugin *dp_plugin_new(const struct dp_config *cfg, struct gs_error *err)
{
    struct dp_plugin *p = calloc(1, sizeof(*p));
    if (!p) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    p->cfg = *cfg;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->alloc_lock, NULL);
    snprintf(p->sock, sizeof(p->sock), "%s/%s", cfg->plugin_dir, DP_SOCKET_NAME);
    snprintf(p->kubelet, sizeof(p->kubelet), "%s/%s", cfg->plugin_dir, DP_KUBELET_SOCKET);
    return p;
}

void dp_plugin_free(struct dp_plugin *p)
{
    if (!p)
        return;
    dp_server_free(p->server);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->alloc_lock);
    free(p);
}

static int do_register(struct dp_plugin *p, struct gs_error *err)
{
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    V1beta1__RegisterRequest rq = V1BETA1__REGISTER_REQUEST__INIT;
    rq.version = DP_API_VERSION;
    rq.endpoint = DP_SOCKET_NAME;
    rq.resource_name = (char *)p->cfg.resource;
    rq.options = &o;
    uint8_t buf[1024];
    size_t len = v1beta1__register_request__pack(&rq, buf);
    uint8_t *resp = NULL;
    size_t rlen = 0;
    int r = dp_grpc_call(p->kubelet, "/v1beta1.Registration/Register", buf, len, &resp, &rlen, 5000,
                         err);
    free(resp);
    return r;
}

/* The same kubelet socket: a restarted kubelet's new socket may reuse the inode of the one it
 * removed (tmpfs, ext4 do), but not its change time. */
static bool same_socket(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int dp_plugin_tick(struct dp_plugin *p, struct gs_error *err)
{
    struct stat ks, ss;
    bool have_kubelet = stat(p->kubelet, &ks) == 0;
    bool have_sock = stat(p->sock, &ss) == 0 && p->server && ss.st_ino == p->sock_ino;
    if (!have_sock) {
        /* First start, or kubelet restarted and removed every socket of the directory. */
        dp_server_free(p->server);
        p->server = dp_server_new(p->sock, methods, GS_ARRAY_SIZE(methods), p, err);
        if (!p->server)
            return -EADDRINUSE;
        if (stat(p->sock, &ss) == 0)
            p->sock_ino = ss.st_ino;
        p->registered = false;
        gs_log(GS_LOG_INFO, "serving", "socket=%s", p->sock);
    }
    if (!have_kubelet)
        return 0; /* wait for kubelet */
    if (p->registered && same_socket(&ks, &p->kubelet_st))
        return 0;
    int r = do_register(p, err);
    if (r < 0)
        return r;
    p->registered = true;
    p->kubelet_st = ks;
    count(p, &p->stats.registrations);
    gs_log(GS_LOG_INFO, "registered", "kubelet=%s resource=%s endpoint=%s", p->kubelet,
           p->cfg.resource, DP_SOCKET_NAME);
    return 0;
}

int dp_plugin_publish(struct dp_plugin *p, struct gs_error *err)
{
    const struct gpu_inventory *inv = p->cfg.inv;
    _cleanup_free_ struct hami_node_device *devs = calloc(inv->n + 1, sizeof(*devs));
    if (!devs)
        return gs_error_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < inv->n; i++) {
        const struct gpu_device *g = &inv->dev[i];
        struct hami_node_device *d = &devs[i];
        snprintf(d->id, sizeof(d->id), "%s", g->uuid);
        hami_device_type(g->product, d->type, sizeof(d->type));
        snprintf(d->mode, sizeof(d->mode), HAMI_MODE_HAMI_CORE);
        d->index = g->index;
        d->count = (int32_t)p->cfg.split_count;
        uint64_t mib = g->memory_total / GPU_MIB; /* whole MiB, as HAMi's devmem */
        double mem = (double)mib * p->cfg.mem_scaling;
        d->devmem = mem > INT32_MAX ? INT32_MAX : (int32_t)mem;
        d->devcore = (int32_t)(100 * p->cfg.core_scaling);
        d->numa = g->numa_node < 0 ? 0 : g->numa_node;
        struct gpu_health_dev hd;
        /* HAMi's DeviceInfo.Health: the extender places nothing on an unhealthy GPU. */
        d->health = !p->cfg.health || !gpu_health_get(p->cfg.health, g->name, &hd) || hd.healthy;
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): devs is _cleanup_ (layers.md Lint) */
    _cleanup_free_ char *reg = hami_node_devices_encode(devs, inv->n);
    char hs[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(hs, sizeof(hs), "Reported_%Y.%m.%d %H:%M:%S", &tm);
    _cleanup_(gs_json_decrefp) json_t *patch =
        json_pack("{s:{s:{s:s,s:s}}}", "metadata", "annotations", HAMI_ANN_NODE_REGISTER,
                  reg ? reg : "[]", HAMI_ANN_NODE_HANDSHAKE, hs);
    return gs_k8s_patch(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, NULL, GS_K8S_PATCH_MERGE,
                        patch, 0, NULL, err);
}

/* The pod a record names (by namespace and name; `list` is the verb the plugin holds), appended
 * to `pods` when it exists. */
static int record_pod(struct dp_plugin *p, const char *key, const char *value, json_t *pods,
                      struct gs_error *err)
{
    struct ext_assignment a;
    struct gs_error e = {0};
    if (ext_assign_decode(key, value, &a, &e) < 0) {
        ext_assignment_fini(&a);
        return 0; /* stale by itself */
    }
    char sel[300];
    snprintf(sel, sizeof(sel), "metadata.name=%s", a.name);
    struct gs_k8s_list_options lo = {.field_selector = sel};
    _cleanup_(gs_json_decrefp) json_t *list = NULL;
    int r = gs_k8s_list(p->cfg.k8s, &gs_k8s_pods, a.ns, &lo, &list, NULL, err);
    ext_assignment_fini(&a);
    if (r < 0)
        return r;
    json_array_extend(pods, json_object_get(list, "items"));
    return 0;
}

/* Placement records on our Node whose pod is gone, finished, bound elsewhere or never bound
 * (ext_assign_stale) are removed, each logged with its reason: a pod bound and deleted before
 * kubelet's Allocate would otherwise leave its record on the Node for ever. The Node is read
 * before the pods, under alloc_lock (Allocate writes records under it too). */
static int gc_records(struct dp_plugin *p, struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *node = NULL;
    int r = gs_k8s_get(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, &node, err);
    if (r < 0)
        return gs_error_prefix(err, "node %s: ", p->cfg.node_name);
    const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
    _cleanup_(gs_json_decrefp) json_t *pods = json_array();
    _cleanup_(gs_json_decrefp) json_t *drop = json_object();
    if (!pods || !drop)
        return gs_error_set(err, -ENOMEM, "out of memory");
    const char *k;
    const json_t *v;
    size_t pl = strlen(EXT_ASSIGN_PREFIX);
    json_object_foreach((json_t *)ann, k, v)
    {
        if (strncmp(k, EXT_ASSIGN_PREFIX, pl) == 0 &&
            (r = record_pod(p, k, json_string_value(v), pods, err)) < 0)
            return r;
    }
    int64_t now = (int64_t)time(NULL);
    json_object_foreach((json_t *)ann, k, v)
    {
        char why[400], q[450];
        if (strncmp(k, EXT_ASSIGN_PREFIX, pl) != 0 ||
            !ext_assign_stale(k, json_string_value(v), pods, p->cfg.node_name, now,
                              hami_lock_expiry_s(), why, sizeof(why)))
            continue;
        json_object_set_new(drop, k, json_null());
        gs_log(GS_LOG_INFO, "stale placement record removed", "node=%s record=%s reason=%s",
               p->cfg.node_name, k, gs_log_quote(q, sizeof(q), why));
    }
    if (json_object_size(drop) == 0)
        return 0;
    _cleanup_(gs_json_decrefp) json_t *patch =
        json_pack("{s:{s:O}}", "metadata", "annotations", drop);
    r = gs_k8s_patch(p->cfg.k8s, &gs_k8s_nodes, NULL, p->cfg.node_name, NULL, GS_K8S_PATCH_MERGE,
                     patch, 0, NULL, err);
    if (r < 0)
        return gs_error_prefix(err, "node %s: remove stale placement records: ", p->cfg.node_name);
    return (int)json_object_size(drop);
}

/* Remove the per-container folders of pods no longer on this node, and stale placement
 * records. */
int dp_plugin_gc(struct dp_plugin *p, struct gs_error *err)
{
    char sel[512];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s", p->cfg.node_name);
    struct gs_k8s_list_options lo = {.field_selector = sel};
    _cleanup_(gs_json_decrefp) json_t *list = NULL;
    int r = gs_k8s_list(p->cfg.k8s, &gs_k8s_pods, NULL, &lo, &list, NULL, err);
    if (r < 0)
        return r;
    const json_t *items = json_object_get(list, "items");
    int removed = 0;
    static const char *const kinds[] = {"limits", "containers", "regions"};
    /* Allocate creates folders under alloc_lock: none appears for a pod missing from `list`. */
    pthread_mutex_lock(&p->alloc_lock);
    for (size_t k = 0; k < GS_ARRAY_SIZE(kinds); k++) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/%s", p->cfg.state_dir, kinds[k]);
        DIR *d = opendir(dir);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d))) {
            char uid[EXT_UID_LEN + 1];
            if (strlen(de->d_name) <= EXT_UID_LEN + 1 || de->d_name[EXT_UID_LEN] != '-')
                continue;
            memcpy(uid, de->d_name, EXT_UID_LEN);
            uid[EXT_UID_LEN] = '\0';
            if (!ext_uid_valid(uid))
                continue;
            bool live = false;
            size_t i;
            const json_t *o;
            json_array_foreach(items, i, o)
            {
                const char *pu =
                    json_string_value(json_object_get(json_object_get(o, "metadata"), "uid"));
                live |= pu && strcmp(pu, uid) == 0;
            }
            if (live)
                continue;
            char path[4500];
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            struct gs_error e = {0};
            if (gs_rm_rf(path, &e) == 0)
                removed++;
        }
        closedir(d);
    }
    struct gs_error re = {0};
    int recs = gc_records(p, &re);
    pthread_mutex_unlock(&p->alloc_lock);
    if (removed)
        gs_log(GS_LOG_INFO, "state folders removed", "count=%d", removed);
    if (recs < 0) {
        char q[300];
        gs_log(GS_LOG_WARN, "placement records not collected", "error=%s",
               gs_log_quote(q, sizeof(q), re.msg));
    }
    return removed + (recs > 0 ? recs : 0);
}
