/* SPDX-License-Identifier: Apache-2.0 */
/* Bump allocator for ASTs and evaluation temporaries: one free for everything. */
#include <stdarg.h>
#include <string.h>

#include "cel/cel-internal.h"

struct cel_arena_chunk {
    struct cel_arena_chunk *next;
    size_t size;
    max_align_t data[];
};

void cel_arena_init(struct cel_arena *a, void *buf, size_t len)
{
    memset(a, 0, sizeof(*a));
    if (buf) {
        size_t skip = (8 - ((uintptr_t)buf & 7)) & 7; /* align to 8 */
        if (len > skip) {
            a->cur = (char *)buf + skip;
            a->end = (char *)buf + len;
        }
    }
}

void cel_arena_fini(struct cel_arena *a)
{
    for (struct cel_arena_cleanup *c = a->cleanups; c; c = c->next)
        c->fn(c->ptr);
    struct cel_arena_chunk *ch = a->chunks;
    while (ch) {
        struct cel_arena_chunk *next = ch->next;
        free(ch);
        ch = next;
    }
    memset(a, 0, sizeof(*a));
}

void *cel_arena_alloc(struct cel_arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n == 0)
        n = 8;
    if ((size_t)(a->end - a->cur) >= n && a->cur) {
        void *p = a->cur;
        a->cur += n;
        return p;
    }
    size_t size = n > 8192 ? n : 8192;
    if (a->total >= 65536 && size < a->total / 2)
        size = a->total / 2; /* grow geometrically */
    if (a->max_total && gs_sat_add_u64(a->total, size) > a->max_total) {
        a->failed = true;
        return NULL;
    }
    struct cel_arena_chunk *ch = malloc(sizeof(*ch) + size);
    if (!ch) {
        a->failed = true;
        return NULL;
    }
    ch->next = a->chunks;
    ch->size = size;
    a->chunks = ch;
    a->total += size;
    a->cur = (char *)ch->data + n;
    a->end = (char *)ch->data + size;
    return ch->data;
}

char *cel_arena_strndup(struct cel_arena *a, const char *s, size_t n)
{
    char *p = cel_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *cel_arena_printf(struct cel_arena *a, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    if ((size_t)n >= sizeof(buf))
        n = sizeof(buf) - 1;
    return cel_arena_strndup(a, buf, (size_t)n);
}

int cel_arena_defer(struct cel_arena *a, void (*fn)(void *), void *ptr)
{
    struct cel_arena_cleanup *c = cel_arena_alloc(a, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->fn = fn;
    c->ptr = ptr;
    c->next = a->cleanups;
    a->cleanups = c;
    return 0;
}
