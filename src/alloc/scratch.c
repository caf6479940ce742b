/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-state scratch memory for the search: a bump allocator over a chain of blocks. After a
 * search the chain collapses into one block as large as the whole chain was, so steady state
 * is one block and no malloc at all.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

struct alloc_scratch {
    struct alloc_scratch *next;
    size_t cap, used;
    max_align_t data[];
};

#define SCRATCH_MIN (16u << 10)

void *alloc_scratch_get(struct alloc_state *st, size_t size)
{
    void *p = alloc_scratch_get_raw(st, size);
    if (p)
        memset(p, 0, size);
    return p;
}

void *alloc_scratch_get_raw(struct alloc_state *st, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    struct alloc_scratch *b = st->scratch;
    if (!b || b->cap - b->used < size) {
        size_t cap = GS_MAX(size, SCRATCH_MIN);
        if (b && b->cap > cap / 2 && b->cap <= SIZE_MAX / 4)
            cap = GS_MAX(cap, b->cap * 2);
        struct alloc_scratch *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->next = b;
        nb->cap = cap;
        nb->used = 0;
        st->scratch = b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

void alloc_scratch_reset(struct alloc_state *st)
{
    struct alloc_scratch *b = st->scratch;
    if (!b)
        return;
    if (!b->next) {
        b->used = 0;
        return;
    }
    size_t total = 0;
    for (struct alloc_scratch *x = b; x; x = x->next)
        total += x->cap;
    alloc_scratch_free(st);
    struct alloc_scratch *nb = malloc(sizeof(*nb) + total);
    if (nb) {
        nb->next = NULL;
        nb->cap = total;
        nb->used = 0;
    }
    st->scratch = nb;
}

void alloc_scratch_free(struct alloc_state *st)
{
    struct alloc_scratch *b = st->scratch;
    while (b) {
        struct alloc_scratch *n = b->next;
        free(b);
        b = n;
    }
    st->scratch = NULL;
}
