/* SPDX-License-Identifier: Apache-2.0 */
/* String-keyed hash map (open addressing, linear probing, backward-shift deletion). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static size_t find_slot(const struct alloc_map *m, const char *key)
{
    size_t mask = m->cap - 1, i = (size_t)hash(key) & mask;
    while (m->e[i].key && strcmp(m->e[i].key, key) != 0)
        i = (i + 1) & mask;
    return i;
}

void *alloc_map_get(const struct alloc_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t i = find_slot(m, key);
    return m->e[i].key ? m->e[i].value : NULL;
}

static int grow(struct alloc_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    if (ncap > SIZE_MAX / sizeof(struct alloc_map_entry))
        return -ENOMEM;
    struct alloc_map_entry *ne = calloc(ncap, sizeof(*ne));
    if (!ne)
        return -ENOMEM;
    struct alloc_map old = *m;
    m->cap = ncap;
    m->e = ne;
    for (size_t i = 0; i < old.cap; i++)
        if (old.e[i].key)
            m->e[find_slot(m, old.e[i].key)] = old.e[i];
    free(old.e);
    return 0;
}

int alloc_map_put(struct alloc_map *m, const char *key, void *value, void **old)
{
    if (old)
        *old = NULL;
    if ((m->len + 1) * 4 > m->cap * 3) {
        int r = grow(m);
        if (r < 0)
            return r;
    }
    size_t i = find_slot(m, key);
    if (m->e[i].key) {
        if (old)
            *old = m->e[i].value;
        m->e[i].value = value;
        return 0;
    }
    char *k = strdup(key);
    if (!k)
        return -ENOMEM;
    m->e[i].key = k;
    m->e[i].value = value;
    m->len++;
    return 0;
}

void *alloc_map_remove(struct alloc_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = find_slot(m, key);
    if (!m->e[i].key)
        return NULL;
    void *v = m->e[i].value;
    free(m->e[i].key);
    m->e[i].key = NULL;
    m->len--;
    /* Backward-shift the following cluster so lookups never stop early. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->e[j].key)
            break;
        size_t home = (size_t)hash(m->e[j].key) & mask;
        bool between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!between) {
            m->e[i] = m->e[j];
            m->e[j].key = NULL;
            i = j;
        }
    }
    return v;
}

void alloc_map_fini(struct alloc_map *m, void (*free_value)(void *))
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->e[i].key) {
            free(m->e[i].key);
            if (free_value)
                free_value(m->e[i].value);
        }
    free(m->e);
    memset(m, 0, sizeof(*m));
}
