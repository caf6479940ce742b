/* SPDX-License-Identifier: Apache-2.0 */
/* Pod -> claims -> allocator, per node (see schedule.h). */
#include "extender/schedule.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "base/log.h"
#include "base/macros.h"
#include "config/quantity.h"
#include "webhook/selector.h"
#include "webhook/shape.h"

int ext_node_policy_parse(const char *s, enum ext_node_policy *out, struct gs_error *err)
{
    if (strcmp(s, "binpack") == 0)
        *out = EXT_NODE_BINPACK;
    else if (strcmp(s, "spread") == 0)
        *out = EXT_NODE_SPREAD;
    else
        return gs_error_set(err, -EINVAL, "node policy \"%.64s\": expected binpack or spread", s);
    return 0;
}

/* HAMi's GPU policy names ("topology-aware") and ours. */
static int gpu_policy_parse(const char *s, enum alloc_policy *out, struct gs_error *err)
{
    if (strcmp(s, "topology-aware") == 0) {
        *out = ALLOC_POLICY_TOPOLOGY;
        return 0;
    }
    return alloc_policy_parse(s, out, err);
}

void ext_pod_request_fini(struct ext_pod_request *req)
{
    for (size_t i = 0; i < req->n_claims; i++)
        alloc_claim_spec_release(req->spec[i]);
    req->n_claims = 0;
}

int ext_pod_request_init(struct ext_pod_request *req, const json_t *pod,
                         const struct ext_inventory *inv, enum alloc_policy gpu_policy,
                         enum ext_node_policy node_policy, struct gs_error *err)
{
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *ann = json_object_get(md, "annotations");
    *req = (struct ext_pod_request){.ns = json_string_value(json_object_get(md, "namespace")),
                                    .name = json_string_value(json_object_get(md, "name")),
                                    .gpu_policy = gpu_policy,
                                    .node_policy = node_policy};
    if (!req->name)
        return gs_error_set(err, -EINVAL, "pod: metadata.name is missing");
    if (!req->ns)
        req->ns = "default";
    const char *p = json_string_value(json_object_get(ann, HAMI_ANN_GPU_POLICY));
    if (p && gpu_policy_parse(p, &req->gpu_policy, err) < 0)
        return gs_error_prefix(err, "annotation %s: ", HAMI_ANN_GPU_POLICY);
    p = json_string_value(json_object_get(ann, HAMI_ANN_NODE_POLICY));
    if (p && ext_node_policy_parse(p, &req->node_policy, err) < 0)
        return gs_error_prefix(err, "annotation %s: ", HAMI_ANN_NODE_POLICY);

    struct wh_names names;
    wh_names_default(&names);
    _cleanup_(gs_json_decrefp) json_t *selectors = json_array();
    int r = wh_selectors_from_annotations(ann, names.driver, selectors, err);
    if (r < 0)
        return r;
    const json_t *ctrs = json_object_get(json_object_get(pod, "spec"), "containers");
    req->n_containers = json_array_size(ctrs);
    if (req->n_containers > EXT_MAX_CONTAINERS)
        return gs_error_set(err, -EINVAL, "pod has %zu containers, at most %d", req->n_containers,
                            EXT_MAX_CONTAINERS);
    int64_t sizes[EXT_MAX_SIZES];
    size_t n_sizes = inv ? inv->n_sizes : 0;
    for (size_t i = 0; i < n_sizes; i++)
        sizes[i] = inv->sizes[i];
    size_t i;
    const json_t *c;
    json_array_foreach(ctrs, i, c)
    {
        const char *cn = json_string_value(json_object_get(c, "name"));
        char what[128];
        snprintf(what, sizeof(what), "container \"%.64s\"", cn ? cn : "");
        struct wh_legacy l;
        if ((r = wh_legacy_read(json_object_get(c, "resources"), &names, what, &l, err)) < 0)
            goto fail;
        if (!wh_legacy_any(&l))
            continue;
        if (!l.has_count) /* HAMi's webhook defaults gpu to 1 */
            l.has_count = true, l.count = 1;
        if (l.count == 0)
            continue;
        if (l.has_pct && n_sizes == 0) {
            r = gs_error_set(err, -EINVAL, "%s: %s needs registered GPUs, and no node has any",
                             what, names.mem_pct);
            goto fail;
        }
        json_t *cspec = NULL;
        if ((r = wh_claim_spec_build(&l, &names, selectors, WH_TOPOLOGY_NONE, sizes, n_sizes, what,
                                     &cspec, err)) < 0)
            goto fail;
        char cname[128];
        snprintf(cname, sizeof(cname), "%.60s-%zu", req->name, i);
        _cleanup_(gs_json_decrefp) json_t *claim = json_pack(
            "{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "resource.k8s.io/v1", "kind",
            "ResourceClaim", "metadata", "namespace", req->ns, "name", cname, "spec", cspec);
        struct alloc_claim_spec *s = claim ? alloc_claim_spec_new(claim, err) : NULL;
        if (!s) {
            r = claim ? -EINVAL : gs_error_set(err, -ENOMEM, "out of memory");
            goto fail;
        }
        req->ctr_of[req->n_claims] = i;
        req->spec[req->n_claims++] = s;
    }
    return 0;
fail:
    ext_pod_request_fini(req);
    return r;
}

void ext_fit_fini(struct ext_fit *fit)
{
    free(fit->ctrs);
    *fit = (struct ext_fit){0};
}

/* The first device-level HAMi reason in the explanations, with its detail. */
static void explain_failure(struct alloc_explanation **why, size_t n, struct ext_fit *fit)
{
    if (gs_log_get_level() >= GS_LOG_DEBUG)
        for (size_t i = 0; i < n; i++)
            if (why[i]) {
                _cleanup_(gs_json_decrefp) json_t *j = alloc_explanation_json(why[i]);
                _cleanup_free_ char *s = json_dumps(j, JSON_COMPACT);
                char q[2048];
                gs_log(GS_LOG_DEBUG, "unschedulable", "explanation=%s",
                       gs_log_quote(q, sizeof(q), s ? s : ""));
            }
    const char *fallback = NULL, *fallback_msg = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!why[i])
            continue;
        _cleanup_(gs_json_decrefp) json_t *j = alloc_explanation_json(why[i]);
        size_t k, d;
        json_t *rq, *dev;
        json_array_foreach(json_object_get(j, "requests"), k, rq)
        {
            json_array_foreach(json_object_get(rq, "devices"), d, dev)
            {
                const char *hr = json_string_value(json_object_get(dev, "hamiReason"));
                const char *dr = json_string_value(json_object_get(dev, "reason"));
                const char *dm = json_string_value(json_object_get(dev, "message"));
                if (!hr && dr && dm && strcmp(dr, "CapacityPolicy") == 0)
                    /* Above the card's maximum: HAMi says the card has too little. */
                    hr = strncmp(dm, "memory", 6) == 0  ? "CardInsufficientMemory"
                         : strncmp(dm, "cores", 5) == 0 ? "CardInsufficientCore"
                                                        : NULL;
                if (!hr)
                    continue;
                snprintf(fit->reason, sizeof(fit->reason), "%s", hr);
                snprintf(fit->message, sizeof(fit->message), "%s: %s: %s", hr,
                         json_string_value(json_object_get(dev, "device")),
                         json_string_value(json_object_get(dev, "message")));
                return;
            }
            if (!fallback) {
                fallback = json_string_value(json_object_get(rq, "reason"));
                fallback_msg = json_string_value(json_object_get(rq, "message"));
            }
        }
        if (!fallback) {
            fallback = alloc_explanation_reason(why[i]);
            fallback_msg = json_string_value(json_object_get(j, "message"));
        }
        if (fallback) {
            /* Every device fit alone: the request did not fit as a whole (too few cards). */
            snprintf(fit->reason, sizeof(fit->reason), "%s",
                     strcmp(fallback, "InsufficientDevices") == 0 ||
                             strcmp(fallback, "NoDevices") == 0
                         ? "NodeUnfitPod"
                         : fallback);
            snprintf(fit->message, sizeof(fit->message), "%s: %s", fit->reason,
                     fallback_msg ? fallback_msg : fallback);
            return;
        }
    }
    snprintf(fit->reason, sizeof(fit->reason), "NodeUnfitPod");
    snprintf(fit->message, sizeof(fit->message), "NodeUnfitPod: the pod does not fit");
}

static int fill_devices(const struct ext_node *node, const struct ext_pod_request *req,
                        json_t **allocs, struct ext_fit *fit, struct gs_error *err)
{
    fit->ctrs = calloc(req->n_containers ? req->n_containers : 1, sizeof(*fit->ctrs));
    if (!fit->ctrs)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int64_t added = 0;
    for (size_t i = 0; i < req->n_claims; i++) {
        struct hami_ctr_devices *cd = &fit->ctrs[req->ctr_of[i]];
        size_t k;
        const json_t *res;
        json_array_foreach(json_object_get(json_object_get(allocs[i], "devices"), "results"), k,
                           res)
        {
            const char *dn = json_string_value(json_object_get(res, "device"));
            const struct hami_node_device *h = dn ? ext_node_device_by_name(node, dn) : NULL;
            if (!h || cd->n == HAMI_MAX_CTR_DEVICES)
                return gs_error_set(err, -EIO, "allocator returned unknown device %s on %s",
                                    dn ? dn : "(none)", node->name);
            const json_t *cc = json_object_get(res, "consumedCapacity");
            struct gs_quantity q;
            int64_t mem = h->devmem, cores = 100;
            const char *ms = json_string_value(json_object_get(cc, "memory"));
            const char *cs = json_string_value(json_object_get(cc, "cores"));
            int64_t v;
            if (ms && gs_quantity_parse(ms, &q, NULL) == 0 &&
                gs_quantity_to_int64_exact(&q, &v) == 0)
                mem = v / (1024 * 1024);
            if (cs && gs_quantity_parse(cs, &q, NULL) == 0 &&
                gs_quantity_to_int64_exact(&q, &v) == 0)
                cores = v;
            struct hami_ctr_device *d = &cd->dev[cd->n++];
            snprintf(d->uuid, sizeof(d->uuid), "%s", h->id);
            snprintf(d->type, sizeof(d->type), "%s", HAMI_DEVICE_TYPE);
            d->usedmem = mem, d->usedcores = cores;
            added += mem;
        }
    }
    fit->mem_added = added;
    fit->score =
        node->mem_total > 0 ? (double)(node->mem_used + added) / (double)node->mem_total : 0.0;
    return 0;
}

int ext_try_node(struct ext_inventory *inv, const struct ext_pod_request *req, const char *name,
                 bool commit, struct ext_fit *fit, struct gs_error *err)
{
    *fit = (struct ext_fit){0};
    const struct ext_node *node = ext_inventory_node(inv, name);
    if (!node) {
        snprintf(fit->reason, sizeof(fit->reason), "NodeUnregistered");
        snprintf(fit->message, sizeof(fit->message), "NodeUnregistered: node %.128s is unknown",
                 name);
        return 0;
    }
    if (node->problem[0]) {
        snprintf(fit->reason, sizeof(fit->reason), "NodeUnregistered");
        snprintf(fit->message, sizeof(fit->message), "NodeUnregistered: %s", node->problem);
        return 0;
    }
    json_t *allocs[EXT_MAX_CONTAINERS] = {0};
    struct alloc_explanation *why[EXT_MAX_CONTAINERS] = {0};
    /* Without commit, a trial: the allocator leaves the state as it was. */
    struct alloc_options opt = {.node = name, .policy = req->gpu_policy, .trial = !commit};
    int r = alloc_claims_allocate(inv->st, (const struct alloc_claim_spec *const *)req->spec,
                                  req->n_claims, &opt, allocs, why, err);
    if (r == 0) {
        fit->fits = true;
        r = fill_devices(node, req, allocs, fit, err);
        if (commit && r < 0)
            for (size_t i = 0; i < req->n_claims; i++) {
                char cname[128];
                snprintf(cname, sizeof(cname), "%.60s-%zu", req->name, req->ctr_of[i]);
                alloc_state_release_claim(inv->st, req->ns, cname);
            }
        else
            ((struct ext_node *)node)->mem_used += fit->mem_added;
    } else if (r == ALLOC_UNSCHEDULABLE || r == ALLOC_SEARCH_LIMIT) {
        explain_failure(why, req->n_claims, fit);
        r = 0;
    } else {
        /* An error of the claim itself (e.g. a CEL error) is reported for this node. */
        snprintf(fit->reason, sizeof(fit->reason), "NodeUnfitPod");
        snprintf(fit->message, sizeof(fit->message), "NodeUnfitPod: %s", err ? err->msg : "");
        r = 0;
    }
    for (size_t i = 0; i < req->n_claims; i++) {
        json_decref(allocs[i]);
        alloc_explanation_free(why[i]);
    }
    if (r < 0)
        ext_fit_fini(fit);
    return r;
}
