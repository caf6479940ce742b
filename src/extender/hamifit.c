/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HAMi's card rules and the filter over many nodes (see schedule.h). The rules follow Fit in
 * Project-HAMi/HAMi v2.10.0 pkg/device/nvidia/device.go card by card, in its order, so the
 * reasons and their counts are HAMi's; our allocator then places the pod on the nodes the rules
 * accept (so a node fits when both agree).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "extender/schedule.h"
#include "hami/hami.h"

static const char *ann_str(const json_t *ann, const char *key)
{
    return json_string_value(json_object_get(ann, key));
}

/* One container request over the node's cards (Fit): the cards it takes are charged to `use`
 * (AddResourceUsage). Returns true, or false with `rs` holding the reasons. */
static bool fit_container(const struct ext_node *node, const struct ext_pod_request *req,
                          const struct ext_hami_request *k0, struct ext_dev_usage *use,
                          struct hami_reasons *rs, int64_t *mem_added)
{
    const json_t *ann = req->annotations;
    const char *use_t = ann_str(ann, HAMI_ANN_USE_TYPE),
               *nouse_t = ann_str(ann, HAMI_ANN_NOUSE_TYPE);
    const char *use_u = ann_str(ann, HAMI_ANN_USE_UUID),
               *nouse_u = ann_str(ann, HAMI_ANN_NOUSE_UUID);
    const char *mode = ann_str(ann, HAMI_ANN_VGPU_MODE);
    struct ext_hami_request k = *k0;
    int32_t origin = k.nums;
    int64_t prevnuma = -1;
    size_t taken[HAMI_MAX_NODE_DEVICES], nt = 0;
    int32_t taken_mem[HAMI_MAX_NODE_DEVICES];
    if (k.coresreq > 100) /* "core limit can't exceed 100" */
        k.coresreq = 100;
    for (size_t j = node->n; j-- > 0;) {
        const struct hami_node_device *d = &node->dev[j];
        const struct ext_dev_usage *u = &use[j];
        if (!d->health) {
            hami_reasons_add(rs, HAMI_REASON_CARD_NOT_HEALTH, 1);
            continue;
        }
        if (!hami_check_type(use_t, nouse_t, d->type) || (mode && !strstr(mode, d->mode))) {
            hami_reasons_add(rs, HAMI_REASON_CARD_TYPE_MISMATCH, 1);
            continue;
        }
        if (req->numa && prevnuma != d->numa) {
            if (k.nums != origin)
                hami_reasons_add(rs, HAMI_REASON_NUMA_NOT_FIT, (int)nt);
            k.nums = origin;
            prevnuma = d->numa;
            nt = 0;
        }
        if (!hami_check_uuid(use_u, nouse_u, d->id)) {
            hami_reasons_add(rs, HAMI_REASON_CARD_UUID_MISMATCH, 1);
            continue;
        }
        if (d->count <= u->used) {
            hami_reasons_add(rs, HAMI_REASON_CARD_TIMESLICING, 1);
            continue;
        }
        if (req->mutex && u->used > 0) {
            hami_reasons_add(rs, HAMI_REASON_EXCLUSIVE_CONFLICT, 1);
            continue;
        }
        int64_t memreq = k.memreq > 0 ? k.memreq : 0;
        if (k.mem_pct != 101 && k.memreq == 0)
            memreq = (int64_t)d->devmem * k.mem_pct / 100;
        if ((int64_t)d->devmem - u->usedmem < memreq) {
            hami_reasons_add(rs, HAMI_REASON_CARD_INSUFFICIENT_MEM, 1);
            continue;
        }
        if ((int64_t)d->devcore - u->usedcores < k.coresreq) {
            hami_reasons_add(rs, HAMI_REASON_CARD_INSUFFICIENT_CORE, 1);
            continue;
        }
        /* Coresreq=100 asks for the card alone. */
        if (d->devcore == 100 && k.coresreq == 100 && u->used > 0) {
            hami_reasons_add(rs, HAMI_REASON_EXCLUSIVE_CONFLICT, 1);
            continue;
        }
        /* A 0-core task does not go to a card whose compute is all taken. */
        if (d->devcore != 0 && u->usedcores == d->devcore && k.coresreq == 0) {
            hami_reasons_add(rs, HAMI_REASON_CARD_COMPUTE_EXHAUSTED, 1);
            continue;
        }
        if (k.nums > 0) {
            k.nums--;
            taken[nt] = j, taken_mem[nt] = (int32_t)memreq, nt++;
        }
        if (k.nums == 0) {
            for (size_t t = 0; t < nt; t++) {
                use[taken[t]].used++;
                use[taken[t]].usedmem += taken_mem[t];
                use[taken[t]].usedcores += k.coresreq;
                *mem_added += taken_mem[t];
            }
            return true;
        }
    }
    if (nt > 0)
        hami_reasons_set(rs, HAMI_REASON_ALLOCATED_INSUFFICIENT, (int)nt);
    return false;
}

bool ext_hami_check(const struct ext_node *node, const struct ext_pod_request *req,
                    struct ext_fit *fit)
{
    struct ext_dev_usage use[HAMI_MAX_NODE_DEVICES];
    memcpy(use, node->use, node->n * sizeof(*use));
    int64_t added = 0;
    for (size_t c = 0; c < req->n_claims; c++) {
        struct hami_reasons rs = {0};
        const char *why = NULL;
        /* fitInDevices (pkg/scheduler/score.go): more cards asked than the node has. */
        if ((size_t)req->hami[c].nums > node->n)
            why = HAMI_REASON_NODE_INSUFFICIENT;
        else if (!fit_container(node, req, &req->hami[c], use, &rs, &added))
            why = "";
        if (!why)
            continue;
        fit->fits = false;
        if (*why) {
            snprintf(fit->reason, sizeof(fit->reason), "%s", why);
            snprintf(fit->message, sizeof(fit->message), "%s", why);
        } else {
            size_t best = 0;
            for (size_t i = 1; i < rs.n; i++)
                if (rs.r[i].count > rs.r[best].count)
                    best = i;
            snprintf(fit->reason, sizeof(fit->reason), "%s",
                     rs.n ? rs.r[best].name : HAMI_REASON_NODE_UNFIT_POD);
            if (rs.n == 0)
                hami_reasons_set(&rs, HAMI_REASON_NODE_UNFIT_POD, (int)node->n);
            hami_reasons_format(&rs, (int)node->n, fit->message, sizeof(fit->message));
        }
        return false;
    }
    fit->mem_added = added;
    fit->score =
        node->mem_total > 0 ? (double)(node->mem_used + added) / (double)node->mem_total : 0.0;
    return true;
}

struct ranked {
    size_t i;
    double score;
};

static int by_score_desc(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

int ext_filter_nodes(struct ext_inventory *inv, const struct ext_pod_request *req,
                     const char *const *names, size_t n, struct ext_fit *fits, long *best,
                     struct gs_error *err)
{
    *best = -1;
    _cleanup_free_ struct ranked *cand = calloc(n ? n : 1, sizeof(*cand));
    if (!cand)
        return gs_error_set(err, -ENOMEM, "out of memory");
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        struct ext_fit *f = &fits[i];
        *f = (struct ext_fit){0};
        if (!names[i])
            continue;
        const struct ext_node *node = ext_inventory_node(inv, names[i]);
        if (!node || node->problem[0]) {
            /* ext_try_node says why, without the allocator. */
            int r = ext_try_node(inv, req, names[i], false, f, err);
            if (r < 0)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): cand is _cleanup_ (layers.md Lint) */
                return r;
            continue;
        }
        if (!ext_hami_check(node, req, f))
            continue;
        /* binpack: the most used node first; spread: the least. */
        cand[nc++] = (struct ranked){
            .i = i, .score = req->node_policy == EXT_NODE_BINPACK ? f->score : -f->score};
    }
    qsort(cand, nc, sizeof(*cand), by_score_desc);
    for (size_t c = 0; c < nc; c++) {
        size_t i = cand[c].i;
        int r = ext_try_node(inv, req, names[i], false, &fits[i], err);
        if (r < 0)
            return r;
        if (fits[i].fits) {
            *best = (long)i;
            return 0;
        }
    }
    return 0;
}
