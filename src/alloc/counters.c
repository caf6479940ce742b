/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Partitionable devices (KEP-4815): devices consume counters from counter sets that slices of
 * the same pool share (sharedCounters). Available = the pool's counter sets (highest
 * generation, every slice of the pool whatever node it targets) minus what allocated devices
 * consume; a device may be allocated only if the counters it consumes, added to those taken
 * by devices chosen earlier in the same search, stay within what is available.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

static struct alloc_counter_avail *find(struct alloc_pool_counters *pc, const char *set,
                                        const char *name)
{
    for (size_t i = 0; i < pc->n; i++)
        if (strcmp(pc->e[i].set, set) == 0 && strcmp(pc->e[i].name, name) == 0)
            return &pc->e[i];
    return NULL;
}

int alloc_counters_init(struct alloc_state *st, const struct alloc_pool *pool,
                        struct alloc_pool_counters *pc)
{
    memset(pc, 0, sizeof(*pc));
    const struct alloc_slice_list *l = alloc_pool_slices(st, pool->driver, pool->pool);
    if (!l)
        return 0;
    int64_t gen = INT64_MIN;
    size_t total = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i]->generation > gen)
            gen = l->v[i]->generation;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i]->generation == gen)
            for (size_t k = 0; k < l->v[i]->n_csets; k++)
                total += l->v[i]->csets[k].n;
    pc->e = calloc(total + 1, sizeof(*pc->e));
    if (!pc->e)
        return -ENOMEM;
    for (size_t i = 0; i < l->n; i++) {
        const struct alloc_slice *s = l->v[i];
        if (s->generation != gen)
            continue;
        for (size_t k = 0; k < s->n_csets; k++)
            for (size_t j = 0; j < s->csets[k].n; j++) {
                struct alloc_counter_avail *e = &pc->e[pc->n++];
                e->set = s->csets[k].name;
                e->name = s->csets[k].c[j].name;
                e->avail = s->csets[k].c[j].q.n;
                e->fmt = s->csets[k].c[j].q.fmt;
            }
    }
    /* Counters consumed by devices that are allocated already (shared or not). */
    for (size_t i = 0; i < l->n; i++) {
        const struct alloc_slice *s = l->v[i];
        if (s->generation != gen)
            continue;
        for (size_t d = 0; d < s->n_dev; d++) {
            const struct alloc_device *dev = &s->dev[d];
            if (!dev->n_consumes || !(dev->usage->exclusive || dev->usage->shared))
                continue;
            for (size_t k = 0; k < dev->n_consumes; k++)
                for (size_t j = 0; j < dev->consumes[k].n; j++) {
                    struct alloc_counter_avail *e =
                        find(pc, dev->consumes[k].name, dev->consumes[k].c[j].name);
                    if (e)
                        e->avail -= dev->consumes[k].c[j].q.n;
                }
        }
    }
    return 0;
}

void alloc_counters_fini(struct alloc_pool_counters *pc)
{
    free(pc->e);
    memset(pc, 0, sizeof(*pc));
}

static void add(struct alloc_pool_counters *pc, const struct alloc_device *d, int sign)
{
    for (size_t k = 0; k < d->n_consumes; k++)
        for (size_t j = 0; j < d->consumes[k].n; j++) {
            struct alloc_counter_avail *e = find(pc, d->consumes[k].name, d->consumes[k].c[j].name);
            if (e)
                e->pending += sign * d->consumes[k].c[j].q.n;
        }
}

bool alloc_counters_take(struct alloc_pool_counters *pc, const struct alloc_device *d, char *detail,
                         size_t len)
{
    add(pc, d, +1);
    for (size_t k = 0; k < d->n_consumes; k++)
        for (size_t j = 0; j < d->consumes[k].n; j++) {
            const struct alloc_counter *c = &d->consumes[k].c[j];
            const struct alloc_counter_avail *e = find(pc, d->consumes[k].name, c->name);
            if (!e) {
                if (detail)
                    snprintf(detail, len, "%s/%s: no such counter in the pool", d->consumes[k].name,
                             c->name);
                add(pc, d, -1);
                return false;
            }
            if (e->pending > e->avail) {
                if (detail) {
                    char a[GS_QUANTITY_STR_MAX], b[GS_QUANTITY_STR_MAX];
                    __int128 before = e->pending - c->q.n;
                    struct alloc_qty fr = {.n = e->avail > before ? e->avail - before : 0,
                                           .fmt = e->fmt};
                    alloc_qty_format(&c->q, a, sizeof(a));
                    alloc_qty_format(&fr, b, sizeof(b));
                    snprintf(detail, len, "%s/%s: need %s, free %s", d->consumes[k].name, c->name,
                             a, b);
                }
                add(pc, d, -1);
                return false;
            }
        }
    return true;
}

void alloc_counters_give(struct alloc_pool_counters *pc, const struct alloc_device *d)
{
    add(pc, d, -1);
}
