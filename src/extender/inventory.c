/* SPDX-License-Identifier: Apache-2.0 */
/* HAMi annotations -> allocator state (see inventory.h). */
#include "extender/inventory.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "base/macros.h"
#include "extender/assign.h"
#include "gpu/slice.h"

/* Container entries a placed pod's annotation may hold. */
#define EXT_MAX_PLACED_CTRS 64

void ext_device_name(size_t i, char *buf, size_t len)
{
    snprintf(buf, len, "hami-gpu-%zu", i);
}

bool ext_device_usable(const struct ext_node *n, size_t i)
{
    const struct hami_node_device *h = &n->dev[i];
    return h->health && h->devmem > 0 && h->devcore > 0 && n->use[i].used < h->count;
}

static const char *annotation(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static json_t *device_class(const char *driver)
{
    char expr[256];
    snprintf(expr, sizeof(expr), "device.driver == \"%s\"", driver);
    return json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "apiVersion", "resource.k8s.io/v1",
                     "kind", "DeviceClass", "metadata", "name", driver, "spec", "selectors", "cel",
                     "expression", expr);
}

static void set_cores(json_t *dev, int64_t cores)
{
    json_t *c = json_object_get(json_object_get(dev, "capacity"), "cores");
    json_t *q = json_sprintf("%" PRId64, cores);
    json_object_set(c, "value", q);
    json_object_set(json_object_get(c, "requestPolicy"), "default", q);
    json_object_set(json_object_get(json_object_get(c, "requestPolicy"), "validRange"), "max", q);
    json_decref(q);
}

/* The node's usable devices as one ResourceSlice of our model; `cores` is devcore (HAMi's
 * deviceCoreScaling may make it exceed 100), `memory` devmem (deviceMemoryScaling included),
 * and EXT_ATTR_TASKS the tasks placed pods run there. */
static json_t *node_slice(const struct ext_node *n, const char *driver)
{
    _cleanup_free_ struct gpu_inventory *gi = calloc(1, sizeof(*gi));
    size_t pos[GPU_MAX_DEVICES] = {0};
    if (!gi)
        return NULL;
    for (size_t i = 0; i < n->n && gi->n < GPU_MAX_DEVICES; i++) {
        const struct hami_node_device *h = &n->dev[i];
        if (!ext_device_usable(n, i))
            continue;
        pos[gi->n] = i;
        struct gpu_device *d = &gi->dev[gi->n++];
        d->minor = d->index = h->index;
        ext_device_name(i, d->name, sizeof(d->name));
        snprintf(d->uuid, sizeof(d->uuid), "%s", h->id);
        /* HAMi's type is "NVIDIA-<product>" unless the product starts with NVIDIA. */
        snprintf(d->product, sizeof(d->product), "%s", hami_type_product(h->type));
        d->numa_node = h->numa >= 0 && h->numa <= INT32_MAX ? (int)h->numa : -1;
        d->nvlink_domain = (unsigned)i;
        d->memory_total = (uint64_t)h->devmem * GPU_MIB;
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): gi is _cleanup_ (layers.md Lint) */
    json_t *slice = gpu_slice_build(gi, driver, n->name, 1, 0);
    size_t k;
    json_t *dev;
    json_array_foreach(json_object_get(json_object_get(slice, "spec"), "devices"), k, dev)
    {
        if (k >= gi->n)
            break;
        const struct hami_node_device *h = &n->dev[pos[k]];
        json_object_set_new(json_object_get(dev, "attributes"), EXT_ATTR_TASKS,
                            json_pack("{s:I}", "int", (json_int_t)n->use[pos[k]].used));
        if (h->devcore != 100)
            set_cores(dev, h->devcore);
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): gi is _cleanup_ (layers.md Lint) */
    return slice;
}

static void add_size(struct ext_inventory *inv, int64_t bytes)
{
    for (size_t i = 0; i < inv->n_sizes; i++)
        if (inv->sizes[i] == bytes)
            return;
    if (inv->n_sizes < EXT_MAX_SIZES)
        inv->sizes[inv->n_sizes++] = bytes;
}

const struct ext_node *ext_inventory_node(const struct ext_inventory *inv, const char *name)
{
    if (!name)
        return NULL;
    if (!inv->by_name) {
        for (size_t i = 0; i < inv->n_nodes; i++)
            if (strcmp(inv->nodes[i].name, name) == 0)
                return &inv->nodes[i];
        return NULL;
    }
    /* The first node of that name, as the linear scan would find. */
    size_t lo = 0, hi = inv->n_nodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(inv->nodes[inv->by_name[mid]].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < inv->n_nodes && strcmp(inv->nodes[inv->by_name[lo]].name, name) == 0)
        return &inv->nodes[inv->by_name[lo]];
    return NULL;
}

static int by_name_cmp(const void *a, const void *b, void *ctx)
{
    const struct ext_node *nodes = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(nodes[x].name, nodes[y].name);
    return c ? c : (x > y) - (x < y);
}

/* The index ext_inventory_node searches (the filter looks a node up for every node it tries). */
static int index_nodes(struct ext_inventory *inv)
{
    inv->by_name = calloc(inv->n_nodes ? inv->n_nodes : 1, sizeof(*inv->by_name));
    if (!inv->by_name)
        return -ENOMEM;
    for (size_t i = 0; i < inv->n_nodes; i++)
        inv->by_name[i] = i;
    qsort_r(inv->by_name, inv->n_nodes, sizeof(*inv->by_name), by_name_cmp, inv->nodes);
    return 0;
}

const struct hami_node_device *ext_node_device_by_uuid(const struct ext_node *n, const char *uuid)
{
    for (size_t i = 0; i < n->n; i++)
        if (strcmp(n->dev[i].id, uuid) == 0)
            return &n->dev[i];
    return NULL;
}

long ext_node_device_by_name(const struct ext_node *n, const char *name)
{
    const char *p = strncmp(name, "hami-gpu-", 9) == 0 ? name + 9 : NULL;
    char *end;
    unsigned long i = p && *p ? strtoul(p, &end, 10) : 0;
    if (!p || !*p || *end || i >= n->n)
        return -1;
    return (long)i;
}

static bool pod_finished(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

static struct hami_ctr_devices *decode_placed(const json_t *pod, const char *value, int *n,
                                              struct gs_error *err)
{
    struct hami_ctr_devices *ctrs = calloc(EXT_MAX_PLACED_CTRS, sizeof(*ctrs));
    if (!ctrs) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    *n = hami_pod_devices_decode(value, ctrs, EXT_MAX_PLACED_CTRS, err);
    if (*n < 0) {
        const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
        gs_error_prefix(err, "pod %s/%s: %s: ", ns ? ns : "", name ? name : "", HAMI_ANN_ALLOCATED);
        free(ctrs);
        return NULL;
    }
    return ctrs;
}

static long device_by_uuid(const struct ext_node *n, const char *uuid)
{
    for (size_t i = 0; i < n->n; i++)
        if (strcmp(n->dev[i].id, uuid) == 0)
            return (long)i;
    return -1;
}

/* A placed pod's effective usage per device of the node (CollapseInitContainerUsage,
 * pkg/device/initContainer.go, HAMi v2.10.0): entries below the pod's number of init containers
 * run one after another (peak memory and cores, one task), app containers run together (sums, a
 * task each); a device's usage is the larger of the two. Without init containers: the sums. */
struct eff_use {
    int32_t tasks;
    int64_t mem, cores;
};

static void effective_use(const struct ext_node *node, const struct hami_ctr_devices *ctrs, int n,
                          size_t n_init, struct eff_use *out)
{
    struct eff_use init[HAMI_MAX_NODE_DEVICES] = {{0}}, app[HAMI_MAX_NODE_DEVICES] = {{0}};
    for (int c = 0; c < n; c++)
        for (size_t d = 0; d < ctrs[c].n; d++) {
            long i = device_by_uuid(node, ctrs[c].dev[d].uuid);
            if (i < 0)
                continue;
            const struct hami_ctr_device *x = &ctrs[c].dev[d];
            if ((size_t)c < n_init) {
                init[i].tasks = 1;
                init[i].mem = GS_MAX(init[i].mem, (int64_t)x->usedmem);
                init[i].cores = GS_MAX(init[i].cores, (int64_t)x->usedcores);
            } else {
                app[i].tasks++;
                app[i].mem += x->usedmem;
                app[i].cores += x->usedcores;
            }
        }
    for (size_t i = 0; i < node->n; i++)
        out[i] =
            (struct eff_use){GS_MAX(init[i].tasks, app[i].tasks), GS_MAX(init[i].mem, app[i].mem),
                             GS_MAX(init[i].cores, app[i].cores)};
}

/* HAMi's usage of a placed pod (DeviceUsage: tasks, memory, cores) into node->use. */
static void count_placed(struct ext_node *node, const struct hami_ctr_devices *ctrs, int n,
                         size_t n_init)
{
    struct eff_use e[HAMI_MAX_NODE_DEVICES];
    effective_use(node, ctrs, n, n_init, e);
    for (size_t i = 0; i < node->n; i++) {
        node->use[i].used += e[i].tasks;
        node->use[i].usedmem += e[i].mem;
        node->use[i].usedcores += e[i].cores;
        if (node->dev[i].health)
            node->mem_used += e[i].mem;
    }
}

static size_t init_count(const json_t *pod)
{
    return json_array_size(json_object_get(json_object_get(pod, "spec"), "initContainers"));
}

static void add_result(json_t *results, const struct ext_inventory *inv,
                       const struct ext_node *node, size_t i, size_t k, int64_t mem, int64_t cores)
{
    char dev[64], share[40], ms[32], cs[32];
    ext_device_name(i, dev, sizeof(dev));
    snprintf(share, sizeof(share), "00000000-0000-4000-8000-%012zx", k);
    snprintf(ms, sizeof(ms), "%" PRId64 "Mi", GS_MAX(mem, (int64_t)0));
    snprintf(cs, sizeof(cs), "%" PRId64, GS_MAX(cores, (int64_t)0));
    json_array_append_new(results,
                          json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s}}", "request", "gpu", "driver",
                                    inv->driver, "pool", node->name, "device", dev, "shareID",
                                    share, "consumedCapacity", "memory", ms, "cores", cs));
}

/* A placed pod's devices as an allocated claim "<ns>/hami-<pod>". Devices not in the allocator
 * (unhealthy, exhausted, gone) are skipped. */
static int add_placed_pod(struct ext_inventory *inv, struct ext_node *node, const json_t *pod,
                          const struct hami_ctr_devices *ctrs, int n, struct gs_error *err)
{
    const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
    json_t *results = json_array();
    size_t k = 0, n_init = init_count(pod);
    if (n_init > 0) {
        /* One result per device with the pod's effective (collapsed) usage. */
        struct eff_use e[HAMI_MAX_NODE_DEVICES];
        effective_use(node, ctrs, n, n_init, e);
        for (size_t i = 0; i < node->n; i++)
            if (e[i].tasks && ext_device_usable(node, i))
                add_result(results, inv, node, i, ++k, e[i].mem, e[i].cores);
    } else {
        for (int c = 0; c < n; c++)
            for (size_t d = 0; d < ctrs[c].n; d++) {
                long i = device_by_uuid(node, ctrs[c].dev[d].uuid);
                if (i >= 0 && ext_device_usable(node, (size_t)i))
                    add_result(results, inv, node, (size_t)i, ++k, ctrs[c].dev[d].usedmem,
                               ctrs[c].dev[d].usedcores);
            }
    }
    if (json_array_size(results) == 0) {
        json_decref(results);
        return 0;
    }
    char cname[300];
    snprintf(cname, sizeof(cname), "hami-%s", name ? name : "");
    _cleanup_(gs_json_decrefp) json_t *claim =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{s:{s:o}}}}", "apiVersion", "resource.k8s.io/v1",
                  "kind", "ResourceClaim", "metadata", "namespace", ns ? ns : "", "name", cname,
                  "status", "allocation", "devices", "results", results);
    int r = alloc_state_add_allocated_claim(inv->st, claim, err);
    if (r < 0)
        return r;
    inv->n_placed++;
    return 0;
}

bool ext_pod_requests_gpu(const json_t *pod)
{
    static const char *const lists[] = {"initContainers", "containers"};
    static const char *const kinds[] = {"limits", "requests"};
    static const char *const res[] = {HAMI_RES_GPU, HAMI_RES_MEM, HAMI_RES_MEM_PCT, HAMI_RES_CORES};
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < GS_ARRAY_SIZE(lists); l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const json_t *rs = json_object_get(c, "resources");
            for (size_t k = 0; k < GS_ARRAY_SIZE(kinds); k++)
                for (size_t r = 0; r < GS_ARRAY_SIZE(res); r++)
                    if (json_object_get(json_object_get(rs, kinds[k]), res[r]))
                        return true;
        }
    }
    return false;
}

/* The placement records on the nodes (extender/assign.h), by pod UID. */
struct rec_ref {
    const char *uid;   /* in the key */
    const char *key;   /* borrowed from the Node object */
    const char *value; /* borrowed */
    size_t node;       /* index into inv->nodes */
};

struct rec_index {
    struct rec_ref *r;
    size_t n, cap;
};

static void rec_index_fini(struct rec_index *ri)
{
    free(ri->r);
}

static int add_records(struct rec_index *ri, const json_t *node_obj, size_t node)
{
    const char *k;
    const json_t *v;
    size_t pl = strlen(EXT_ASSIGN_PREFIX);
    json_t *ann = json_object_get(json_object_get(node_obj, "metadata"), "annotations");
    json_object_foreach(ann, k, v)
    {
        if (strncmp(k, EXT_ASSIGN_PREFIX, pl) != 0 || !ext_uid_valid(k + pl) || !json_is_string(v))
            continue;
        if (ri->n == ri->cap) {
            size_t cap = ri->cap ? 2 * ri->cap : 16;
            struct rec_ref *nr = realloc(ri->r, cap * sizeof(*nr));
            if (!nr)
                return -ENOMEM;
            ri->r = nr, ri->cap = cap;
        }
        ri->r[ri->n++] = (struct rec_ref){k + pl, k, json_string_value(v), node};
    }
    return 0;
}

static int rec_cmp(const void *a, const void *b)
{
    return strcmp(((const struct rec_ref *)a)->uid, ((const struct rec_ref *)b)->uid);
}

/*
 * The pod's placement record: on the node it is bound to, or — not bound yet — on the node our
 * bind is placing it (the record is written before the Binding; the newest if there are several).
 * The record must name the pod (namespace and name) as well as its UID. 0 with *rec filled and
 * *node the record's node index, or -ENOENT.
 */
static int find_record(const struct ext_inventory *inv, const struct rec_index *ri,
                       const json_t *pod, const char *bound, struct ext_assignment *rec,
                       size_t *node)
{
    const char *uid = meta_str(pod, "uid"), *ns = meta_str(pod, "namespace"),
               *name = meta_str(pod, "name");
    if (!uid || !ns || !name || ri->n == 0)
        return -ENOENT;
    struct rec_ref want = {.uid = uid};
    const struct rec_ref *hit = bsearch(&want, ri->r, ri->n, sizeof(*ri->r), rec_cmp);
    if (!hit)
        return -ENOENT;
    while (hit > ri->r && strcmp(hit[-1].uid, uid) == 0)
        hit--;
    int found = -ENOENT;
    for (; hit < ri->r + ri->n && strcmp(hit->uid, uid) == 0; hit++) {
        if (bound && strcmp(inv->nodes[hit->node].name, bound) != 0)
            continue;
        struct ext_assignment a;
        struct gs_error e = {0};
        if (ext_assign_decode(hit->key, hit->value, &a, &e) < 0 || strcmp(a.ns, ns) != 0 ||
            strcmp(a.name, name) != 0 || (found == 0 && a.time <= rec->time)) {
            ext_assignment_fini(&a);
            continue;
        }
        if (found == 0)
            ext_assignment_fini(rec);
        *rec = a;
        *node = hit->node;
        found = 0;
    }
    return found;
}

/*
 * What a pod books, and where: NULL when it books nothing. HAMi counts every pod that carries
 * hami.io/vgpu-node (Scheduler.onAddPod -> podManager, then getNodesUsage, pkg/scheduler/
 * scheduler.go, HAMi v2.10.0), bound or not, since HAMi books at filter. We book at bind, so a
 * booking is a pod that asks for our resources, is not finished, and
 *   - is bound to the node (spec.nodeName, which only a Binding or the pod's creator sets):
 *     its devices from the node's placement record while there is one (what the device plugin
 *     will serve), else from hami.io/vgpu-devices-allocated (-to-allocate) when hami.io/vgpu-node
 *     names that node and bind-phase is not failed; or
 *   - is not bound yet but has a placement record on a node: our bind in progress (the record
 *     is written before the Binding); its devices from the record.
 * A pod's annotations alone (never scheduled, or naming a node it is not on) book nothing.
 * `rec` holds the record when the devices come from one (fini by the caller).
 */
static const char *placed_value(const struct ext_inventory *inv, const struct rec_index *ri,
                                const json_t *pod, const char *skip_ns, const char *skip_name,
                                struct ext_node **node, struct ext_assignment *rec)
{
    *rec = (struct ext_assignment){0};
    if (pod_finished(pod) || !ext_pod_requests_gpu(pod))
        return NULL;
    const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
    if (skip_ns && skip_name && ns && name && strcmp(ns, skip_ns) == 0 &&
        strcmp(name, skip_name) == 0)
        return NULL;
    const char *bound =
        json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (bound && !*bound)
        bound = NULL;
    const char *val = NULL;
    size_t at = 0;
    if (find_record(inv, ri, pod, bound, rec, &at) == 0) {
        *node = &((struct ext_inventory *)inv)->nodes[at];
        val = rec->devices;
    } else if (bound) {
        const char *on = annotation(pod, HAMI_ANN_NODE);
        const char *phase = annotation(pod, HAMI_ANN_BIND_PHASE);
        val = annotation(pod, HAMI_ANN_ALLOCATED);
        if (!val)
            val = annotation(pod, HAMI_ANN_TO_ALLOCATE);
        if (!on || strcmp(on, bound) != 0 || (phase && strcmp(phase, HAMI_BIND_FAILED) == 0))
            return NULL;
        *node = (struct ext_node *)ext_inventory_node(inv, bound);
    }
    if (!val || !*node || (*node)->problem[0])
        return NULL;
    return val;
}

int ext_inventory_build(const json_t *nodes, const json_t *pods, const char *driver,
                        const char *skip_ns, const char *skip_name, struct ext_inventory **out,
                        struct gs_error *err)
{
    struct ext_inventory *inv = calloc(1, sizeof(*inv));
    size_t nn = json_array_size(nodes);
    if (!inv || !(inv->st = alloc_state_new()) ||
        !(inv->nodes = calloc(nn ? nn : 1, sizeof(*inv->nodes)))) {
        ext_inventory_free(inv);
        return gs_error_set(err, -ENOMEM, "out of memory");
    }
    inv->driver = driver;
    int r = 0;
    _cleanup_(rec_index_fini) struct rec_index ri = {0};
    {
        _cleanup_(gs_json_decrefp) json_t *cls = device_class(driver);
        r = alloc_state_add_class(inv->st, cls, err);
    }
    /* 1. Nodes: decode the register annotation. */
    size_t i;
    const json_t *node;
    json_array_foreach(nodes, i, node)
    {
        if (r < 0)
            break;
        const char *name = meta_str(node, "name");
        if (!name)
            continue;
        struct ext_node *n = &inv->nodes[inv->n_nodes++];
        if (add_records(&ri, node, inv->n_nodes - 1) < 0) {
            r = gs_error_set(err, -ENOMEM, "out of memory");
            break;
        }
        n->name = strdup(name);
        n->dev = calloc(HAMI_MAX_NODE_DEVICES, sizeof(*n->dev));
        n->use = calloc(HAMI_MAX_NODE_DEVICES, sizeof(*n->use));
        if (!n->name || !n->dev || !n->use) {
            r = gs_error_set(err, -ENOMEM, "out of memory");
            break;
        }
        const char *reg = annotation(node, HAMI_ANN_NODE_REGISTER);
        const char *hs = annotation(node, HAMI_ANN_NODE_HANDSHAKE);
        if (!reg) {
            snprintf(n->problem, sizeof(n->problem), "node has no %s annotation",
                     HAMI_ANN_NODE_REGISTER);
            continue;
        }
        if (hs && strncmp(hs, HAMI_HANDSHAKE_DELETED, strlen(HAMI_HANDSHAKE_DELETED)) == 0) {
            snprintf(n->problem, sizeof(n->problem), "%s is \"%.64s\": device plugin gone",
                     HAMI_ANN_NODE_HANDSHAKE, hs);
            continue;
        }
        struct gs_error e = {0};
        int cnt = hami_node_devices_decode(reg, n->dev, HAMI_MAX_NODE_DEVICES, &e);
        if (cnt < 0) {
            snprintf(n->problem, sizeof(n->problem), "%s", e.msg);
            continue;
        }
        n->n = (size_t)cnt;
    }
    if (r >= 0 && index_nodes(inv) < 0)
        r = gs_error_set(err, -ENOMEM, "out of memory");
    if (ri.n > 1)
        qsort(ri.r, ri.n, sizeof(*ri.r), rec_cmp);
    /* 2. Placed pods: HAMi's usage per device (tasks, memory, cores). */
    const json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        if (r < 0)
            break;
        struct ext_node *n = NULL;
        struct ext_assignment rec;
        const char *val = placed_value(inv, &ri, pod, skip_ns, skip_name, &n, &rec);
        int cnt = 0;
        _cleanup_free_ struct hami_ctr_devices *ctrs =
            val ? decode_placed(pod, val, &cnt, err) : NULL;
        ext_assignment_fini(&rec);
        if (!val)
            continue;
        if (!ctrs) {
            r = -EINVAL;
            break;
        }
        count_placed(n, ctrs, cnt, init_count(pod));
    }
    /* 3. Slices of the usable devices. */
    for (size_t k = 0; r >= 0 && k < inv->n_nodes; k++) {
        struct ext_node *n = &inv->nodes[k];
        if (n->problem[0])
            continue;
        for (size_t d = 0; d < n->n; d++)
            if (n->dev[d].health && n->dev[d].devmem > 0) {
                n->mem_total += n->dev[d].devmem;
                add_size(inv, n->dev[d].devmem * (int64_t)GPU_MIB);
            }
        _cleanup_(gs_json_decrefp) json_t *slice = node_slice(n, driver);
        _cleanup_(gs_json_decrefp) json_t *nobj =
            json_pack("{s:s,s:{s:s}}", "kind", "Node", "metadata", "name", n->name);
        if (!slice || !nobj)
            r = gs_error_set(err, -ENOMEM, "out of memory");
        else if ((r = alloc_state_add_slice(inv->st, slice, err)) < 0 ||
                 (r = alloc_state_add_node(inv->st, nobj, err)) < 0)
            gs_error_prefix(err, "node %s: ", n->name);
    }
    /* 4. Placed pods as allocated claims on those devices. */
    json_array_foreach(pods, i, pod)
    {
        if (r < 0)
            break;
        struct ext_node *n = NULL;
        struct ext_assignment rec;
        const char *val = placed_value(inv, &ri, pod, skip_ns, skip_name, &n, &rec);
        int cnt = 0;
        _cleanup_free_ struct hami_ctr_devices *ctrs =
            val ? decode_placed(pod, val, &cnt, err) : NULL;
        ext_assignment_fini(&rec);
        if (!val)
            continue;
        if (!ctrs) {
            r = -EINVAL;
            break;
        }
        r = add_placed_pod(inv, n, pod, ctrs, cnt, err);
    }
    if (r < 0) {
        ext_inventory_free(inv);
        return r;
    }
    *out = inv;
    return 0;
}

void ext_inventory_free(struct ext_inventory *inv)
{
    if (!inv)
        return;
    for (size_t i = 0; i < inv->n_nodes; i++) {
        free(inv->nodes[i].name);
        free(inv->nodes[i].dev);
        free(inv->nodes[i].use);
    }
    free(inv->nodes);
    free(inv->by_name);
    alloc_state_free(inv->st);
    free(inv);
}
