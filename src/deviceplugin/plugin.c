/* SPDX-License-Identifier: Apache-2.0 */
/* Registration, ListAndWatch, Allocate (see plugin.h). */
#include "deviceplugin/plugin.h"

#include <errno.h>
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
#include "extender/hami.h"

struct dp_plugin {
    struct dp_config cfg;
    struct dp_server *server;
    char sock[4096], kubelet[4096];
    ino_t kubelet_ino, sock_ino;
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

static void list_and_watch(void *user, struct dp_stream *st)
{
    struct dp_plugin *p = user;
    count(p, &p->stats.list_and_watch);
    const struct gpu_inventory *inv = p->cfg.inv;
    size_t n = inv->n * p->cfg.split_count;
    V1beta1__Device *devs = calloc(n + 1, sizeof(*devs));
    V1beta1__Device **dp = calloc(n + 1, sizeof(V1beta1__Device *));
    V1beta1__TopologyInfo *topo = calloc(inv->n + 1, sizeof(*topo));
    V1beta1__NUMANode *numa = calloc(inv->n + 1, sizeof(*numa));
    V1beta1__NUMANode **numap = calloc(inv->n + 1, sizeof(V1beta1__NUMANode *));
    char(*ids)[GPU_STR_MAX + 16] = calloc(n + 1, sizeof(*ids));
    if (devs && dp && topo && numa && numap && ids) {
        size_t k = 0;
        for (size_t g = 0; g < inv->n; g++) {
            v1beta1__topology_info__init(&topo[g]);
            v1beta1__numanode__init(&numa[g]);
            numa[g].id = inv->dev[g].numa_node < 0 ? 0 : inv->dev[g].numa_node;
            numap[g] = &numa[g];
            topo[g].n_nodes = 1;
            topo[g].nodes = &numap[g];
            for (unsigned j = 0; j < p->cfg.split_count; j++, k++) {
                v1beta1__device__init(&devs[k]);
                snprintf(ids[k], sizeof(ids[k]), "%s-%u", inv->dev[g].uuid, j);
                devs[k].id = ids[k];
                devs[k].health = "Healthy";
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
            if (dp_stream_send(st, buf, len) == 0)
                gs_log(GS_LOG_INFO, "ListAndWatch", "devices=%zu", n);
            free(buf);
        }
    }
    /* The inventory does not change while we run (a GPU change restarts the plugin): hold the
     * stream open until the kubelet goes away or we stop. */
    while (!dp_stream_closed(st, 1000))
        ;
    free(devs);
    free(dp);
    free(topo);
    free(numa);
    free(numap);
    free(ids);
}

static const char *ann_of(const json_t *o, const char *k)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), k));
}

/* The pod on this node in bind-phase allocating with a container entry left to allocate
 * (oldest hami.io/bind-time first). */
static int find_pod(struct dp_plugin *p, json_t **pod, struct gs_error *err)
{
    char sel[512];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s", p->cfg.node_name);
    struct gs_k8s_list_options lo = {.field_selector = sel};
    _cleanup_(gs_json_decrefp) json_t *list = NULL;
    int r = gs_k8s_list(p->cfg.k8s, &gs_k8s_pods, NULL, &lo, &list, NULL, err);
    if (r < 0)
        return r;
    const json_t *best = NULL;
    long long best_t = 0;
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(list, "items"), i, o)
    {
        const char *phase = ann_of(o, HAMI_ANN_BIND_PHASE);
        const char *node = ann_of(o, HAMI_ANN_NODE);
        const char *todo = ann_of(o, HAMI_ANN_TO_ALLOCATE);
        if (!phase || strcmp(phase, HAMI_BIND_ALLOCATING) != 0 || !node ||
            strcmp(node, p->cfg.node_name) != 0 || !todo || !strchr(todo, ','))
            continue;
        const char *bt = ann_of(o, HAMI_ANN_BIND_TIME);
        long long t = bt ? strtoll(bt, NULL, 10) : 0;
        if (!best || t < best_t)
            best = o, best_t = t;
    }
    if (!best)
        return gs_error_set(err, -ENOENT,
                            "no pod on node %s is in %s=%s with devices left to allocate",
                            p->cfg.node_name, HAMI_ANN_BIND_PHASE, HAMI_BIND_ALLOCATING);
    *pod = json_incref((json_t *)best);
    return 0;
}

static void add_env(V1beta1__ContainerAllocateResponse *c, const char *k, const char *v)
{
    V1beta1__ContainerAllocateResponse__EnvsEntry *e = calloc(1, sizeof(*e));
    V1beta1__ContainerAllocateResponse__EnvsEntry **arr =
        realloc(c->envs, (c->n_envs + 1) * sizeof(V1beta1__ContainerAllocateResponse__EnvsEntry *));
    if (!e || !arr) {
        free(e);
        if (arr)
            c->envs = arr;
        return;
    }
    v1beta1__container_allocate_response__envs_entry__init(e);
    e->key = strdup(k);
    e->value = strdup(v);
    arr[c->n_envs++] = e;
    c->envs = arr;
}

static void add_mount(V1beta1__ContainerAllocateResponse *c, const char *host, const char *ctr,
                      bool ro)
{
    V1beta1__Mount *m = calloc(1, sizeof(*m));
    V1beta1__Mount **arr = realloc(c->mounts, (c->n_mounts + 1) * sizeof(V1beta1__Mount *));
    if (!m || !arr) {
        free(m);
        if (arr)
            c->mounts = arr;
        return;
    }
    v1beta1__mount__init(m);
    m->host_path = strdup(host);
    m->container_path = strdup(ctr);
    m->read_only = ro;
    arr[c->n_mounts++] = m;
    c->mounts = arr;
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

/* One container: the next entry of the pod's to-allocate annotation. */
static int allocate_one(struct dp_plugin *p, size_t n_ids, V1beta1__ContainerAllocateResponse *out,
                        struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *pod = NULL;
    int r = find_pod(p, &pod, err);
    if (r < 0)
        return r;
    const json_t *md = json_object_get(pod, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *uid = json_string_value(json_object_get(md, "uid"));
    const json_t *ctrs = json_object_get(json_object_get(pod, "spec"), "containers");
    size_t nc = json_array_size(ctrs);
    _cleanup_free_ struct hami_ctr_devices *cd = calloc(nc + 1, sizeof(*cd));
    if (!cd)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int n = hami_pod_devices_decode(ann_of(pod, HAMI_ANN_TO_ALLOCATE), cd, nc + 1, err);
    if (n < 0)
        return gs_error_prefix(err, "pod %s/%s: %s: ", ns, name, HAMI_ANN_TO_ALLOCATE);
    int ci = -1;
    for (int i = 0; i < n && ci < 0; i++)
        if (cd[i].n)
            ci = i;
    if (ci < 0 || (size_t)ci >= nc)
        return gs_error_set(err, -ENOENT, "pod %s/%s: no container left to allocate", ns, name);
    const struct hami_ctr_devices *mine = &cd[ci];
    if (mine->n != n_ids)
        return gs_error_set(err, -EINVAL,
                            "pod %s/%s container %d: the extender assigned %zu GPUs, kubelet "
                            "asks for %zu devices",
                            ns, name, ci, mine->n, n_ids);
    const char *cname =
        json_string_value(json_object_get(json_array_get(ctrs, (size_t)ci), "name"));
    char key[512];
    snprintf(key, sizeof(key), "%s-%s", uid ? uid : name, cname ? cname : "c");

    /* Environment as HAMi's device plugin sets it. */
    char visible[GS_LIMITS_MAX_DEVICES * (HAMI_ID_MAX + 1)] = "";
    struct gs_limits lim;
    gs_limits_init(&lim);
    snprintf(lim.claim, sizeof(lim.claim), "%s", key);
    for (size_t i = 0; i < mine->n; i++) {
        const struct hami_ctr_device *d = &mine->dev[i];
        if (i)
            strncat(visible, ",", sizeof(visible) - strlen(visible) - 1);
        strncat(visible, d->uuid, sizeof(visible) - strlen(visible) - 1);
        char k[64], v[32];
        snprintf(k, sizeof(k), "CUDA_DEVICE_MEMORY_LIMIT_%zu", i);
        snprintf(v, sizeof(v), "%" PRId64 "m", d->usedmem);
        add_env(out, k, v);
        if (gs_limits_add_device(&lim, d->uuid, (uint64_t)d->usedmem * 1024 * 1024,
                                 (uint32_t)d->usedcores, err) < 0)
            return gs_error_prefix(err, "pod %s/%s: ", ns, name);
    }
    add_env(out, "NVIDIA_VISIBLE_DEVICES", visible);
    char v[64];
    snprintf(v, sizeof(v), "%" PRId64, mine->dev[0].usedcores);
    add_env(out, "CUDA_DEVICE_SM_LIMIT", v);
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/%s.cache", DP_CONTAINER_CACHE, key);
    add_env(out, "CUDA_DEVICE_MEMORY_SHARED_CACHE", cache);
    add_env(out, GS_LIMITS_ENV, GS_LIMITS_DIR_DEFAULT);

    /* Limits file (authoritative over the environment, as in DRA mode) and the cache folder. */
    char dir[4096], path[4200], cdir[4096], rdir[4096], rctr[4096];
    snprintf(dir, sizeof(dir), "%s/limits/%s", p->cfg.state_dir, key);
    snprintf(cdir, sizeof(cdir), "%s/containers/%s", p->cfg.state_dir, key);
    snprintf(rdir, sizeof(rdir), "%s/regions/%s", p->cfg.state_dir, key);
    snprintf(rctr, sizeof(rctr), "%s/%s", DP_CONTAINER_REGION_DIR, key);
    if ((r = gs_mkdir_p(dir, 0755, err)) < 0 || (r = gs_mkdir_p(cdir, 0777, err)) < 0 ||
        (r = gs_mkdir_p(rdir, 0777, err)) < 0)
        return r;
    /* The container's own shared region (as the DRA plugin gives each claim one): without a
     * region line libvgpu would use its fixed default region. */
    snprintf(lim.region_path, sizeof(lim.region_path), "%s/region", rctr);
    if ((r = gs_limits_path(path, sizeof(path), dir, key, err)) < 0 ||
        (r = gs_limits_write(path, &lim, err)) < 0)
        return r;
    char host[4200];
    snprintf(host, sizeof(host), "%s/libvgpu.so", p->cfg.host_dir);
    add_mount(out, host, DP_CONTAINER_VGPU "/libvgpu.so", true);
    snprintf(host, sizeof(host), "%s/ld.so.preload", p->cfg.host_dir);
    add_mount(out, host, "/etc/ld.so.preload", true);
    add_mount(out, dir, GS_LIMITS_DIR_DEFAULT, true);
    add_mount(out, cdir, DP_CONTAINER_CACHE, false);
    add_mount(out, rdir, rctr, false);

    /* This container is served: its entry is emptied; the last one ends the bind phase. */
    cd[ci].n = 0;
    bool left = false;
    for (int i = 0; i < n; i++)
        left |= cd[i].n > 0;
    _cleanup_free_ char *rest = hami_pod_devices_encode(cd, (size_t)n);
    _cleanup_(gs_json_decrefp) json_t *ann =
        json_pack("{s:s}", HAMI_ANN_TO_ALLOCATE, rest ? rest : "");
    if (!left)
        json_object_set_new(ann, HAMI_ANN_BIND_PHASE, json_string(HAMI_BIND_SUCCESS));
    _cleanup_(gs_json_decrefp) json_t *patch =
        json_pack("{s:{s:O}}", "metadata", "annotations", ann);
    if ((r = gs_k8s_patch(p->cfg.k8s, &gs_k8s_pods, ns, name, NULL, GS_K8S_PATCH_MERGE, patch, 0,
                          NULL, err)) < 0)
        return r;
    char q[1024];
    gs_log(GS_LOG_INFO, "allocated", "pod=%s/%s container=%s devices=%s bind_phase=%s", ns, name,
           cname ? cname : "", gs_log_quote(q, sizeof(q), visible),
           left ? HAMI_BIND_ALLOCATING : HAMI_BIND_SUCCESS);
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
    pthread_mutex_lock(&p->alloc_lock);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        v1beta1__container_allocate_response__init(&cr[i]);
        crp[i] = &cr[i];
        rc = allocate_one(p, in->container_requests[i]->n_devices_ids, &cr[i], &err);
    }
    pthread_mutex_unlock(&p->alloc_lock);
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
    if (p->registered && ks.st_ino == p->kubelet_ino)
        return 0;
    int r = do_register(p, err);
    if (r < 0)
        return r;
    p->registered = true;
    p->kubelet_ino = ks.st_ino;
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
        snprintf(d->type, sizeof(d->type), "NVIDIA-%s", g->product);
        snprintf(d->mode, sizeof(d->mode), "hami-core");
        d->index = (int)g->index;
        d->count = (int)p->cfg.split_count;
        d->devmem = (int64_t)(g->memory_total / GPU_MIB);
        d->devcore = 100;
        d->numa = g->numa_node < 0 ? 0 : g->numa_node;
        d->health = true;
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
