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
#include "gpu/slice.h"

void ext_device_name(const struct hami_node_device *d, char *buf, size_t len)
{
    snprintf(buf, len, "hami-gpu-%d", d->index);
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

/* The node's healthy devices as one ResourceSlice of our model. */
static json_t *node_slice(const struct ext_node *n, const char *driver)
{
    _cleanup_free_ struct gpu_inventory *gi = calloc(1, sizeof(*gi));
    if (!gi)
        return NULL;
    for (size_t i = 0; i < n->n && gi->n < GPU_MAX_DEVICES; i++) {
        const struct hami_node_device *h = &n->dev[i];
        if (!h->health)
            continue;
        struct gpu_device *d = &gi->dev[gi->n++];
        d->minor = d->index = (unsigned)h->index;
        ext_device_name(h, d->name, sizeof(d->name));
        snprintf(d->uuid, sizeof(d->uuid), "%s", h->id);
        /* HAMi's type is "NVIDIA-<product>"; our productName is the product as NVML names it. */
        const char *prod = strncmp(h->type, "NVIDIA-", 7) == 0 ? h->type + 7 : h->type;
        snprintf(d->product, sizeof(d->product), "%s", prod);
        d->numa_node = h->numa;
        d->nvlink_domain = (unsigned)h->index;
        d->memory_total = (uint64_t)h->devmem * GPU_MIB;
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): gi is _cleanup_ (layers.md Lint) */
    return gpu_slice_build(gi, driver, n->name, 1, 0);
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

const struct hami_node_device *ext_node_device_by_name(const struct ext_node *n, const char *name)
{
    char buf[64];
    for (size_t i = 0; i < n->n; i++) {
        ext_device_name(&n->dev[i], buf, sizeof(buf));
        if (strcmp(buf, name) == 0)
            return &n->dev[i];
    }
    return NULL;
}

static bool pod_finished(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* A placed pod's devices as an allocated claim "<ns>/hami-<pod>". Devices the node no longer
 * publishes are skipped (logged by the caller through the return count). */
static int add_placed_pod(struct ext_inventory *inv, struct ext_node *node, const json_t *pod,
                          const char *value, struct gs_error *err)
{
    struct hami_ctr_devices *ctrs = calloc(64, sizeof(*ctrs));
    if (!ctrs)
        return gs_error_set(err, -ENOMEM, "out of memory");
    const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
    int n = hami_pod_devices_decode(value, ctrs, 64, err);
    if (n < 0) {
        free(ctrs);
        return gs_error_prefix(err, "pod %s/%s: %s: ", ns ? ns : "", name ? name : "",
                               HAMI_ANN_ALLOCATED);
    }
    json_t *results = json_array();
    size_t k = 0;
    for (int c = 0; c < n; c++)
        for (size_t d = 0; d < ctrs[c].n; d++) {
            const struct hami_node_device *h = ext_node_device_by_uuid(node, ctrs[c].dev[d].uuid);
            if (!h || !h->health)
                continue;
            char dev[64], share[40], mem[32], cores[32];
            ext_device_name(h, dev, sizeof(dev));
            snprintf(share, sizeof(share), "00000000-0000-4000-8000-%012zx", ++k);
            snprintf(mem, sizeof(mem), "%" PRId64 "Mi", ctrs[c].dev[d].usedmem);
            snprintf(cores, sizeof(cores), "%" PRId64, ctrs[c].dev[d].usedcores);
            json_array_append_new(
                results, json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s}}", "request", "gpu", "driver",
                                   inv->driver, "pool", node->name, "device", dev, "shareID", share,
                                   "consumedCapacity", "memory", mem, "cores", cores));
            node->mem_used += ctrs[c].dev[d].usedmem;
        }
    free(ctrs);
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
    {
        _cleanup_(gs_json_decrefp) json_t *cls = device_class(driver);
        r = alloc_state_add_class(inv->st, cls, err);
    }
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
        n->name = strdup(name);
        n->dev = calloc(HAMI_MAX_NODE_DEVICES, sizeof(*n->dev));
        if (!n->name || !n->dev) {
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
        if (hs && strncmp(hs, "Deleted", 7) == 0) {
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
        for (size_t d = 0; d < n->n; d++)
            if (n->dev[d].health) {
                n->mem_total += n->dev[d].devmem;
                add_size(inv, n->dev[d].devmem * (int64_t)GPU_MIB);
            }
        _cleanup_(gs_json_decrefp) json_t *slice = node_slice(n, driver);
        _cleanup_(gs_json_decrefp) json_t *nobj =
            json_pack("{s:s,s:{s:s}}", "kind", "Node", "metadata", "name", name);
        if (!slice || !nobj)
            r = gs_error_set(err, -ENOMEM, "out of memory");
        else if ((r = alloc_state_add_slice(inv->st, slice, err)) < 0 ||
                 (r = alloc_state_add_node(inv->st, nobj, err)) < 0)
            gs_error_prefix(err, "node %s: ", name);
    }
    if (r >= 0 && index_nodes(inv) < 0)
        r = gs_error_set(err, -ENOMEM, "out of memory");
    const json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        if (r < 0)
            break;
        const char *on = annotation(pod, HAMI_ANN_NODE);
        const char *val = annotation(pod, HAMI_ANN_ALLOCATED);
        if (!val)
            val = annotation(pod, HAMI_ANN_TO_ALLOCATE);
        const char *phase = annotation(pod, HAMI_ANN_BIND_PHASE);
        if (!on || !val || pod_finished(pod) || (phase && strcmp(phase, HAMI_BIND_FAILED) == 0))
            continue;
        const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
        if (skip_ns && skip_name && ns && name && strcmp(ns, skip_ns) == 0 &&
            strcmp(name, skip_name) == 0)
            continue;
        struct ext_node *n = (struct ext_node *)ext_inventory_node(inv, on);
        if (!n || n->problem[0])
            continue;
        r = add_placed_pod(inv, n, pod, val, err);
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
    }
    free(inv->nodes);
    free(inv->by_name);
    alloc_state_free(inv->st);
    free(inv);
}
