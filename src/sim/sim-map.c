/* SPDX-License-Identifier: Apache-2.0 */
#include "sim/sim-map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int grow(struct sim_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    if (cap > (SIZE_MAX / sizeof(struct sim_map_entry)))
        return -ENOMEM;
    struct sim_map_entry *e = calloc(cap, sizeof(*e));
    if (!e)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key)
            continue;
        size_t j = slot_of(m->e[i].key, cap);
        while (e[j].key)
            j = (j + 1) & (cap - 1);
        e[j] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
    return 0;
}

int sim_map_put(struct sim_map *m, const struct sim_map_entry *e)
{
    if (e->key == 0)
        return -EINVAL;
    if ((m->n + 1) * 2 > m->cap) {
        int r = grow(m);
        if (r < 0)
            return r;
    }
    size_t j = slot_of(e->key, m->cap);
    while (m->e[j].key) {
        if (m->e[j].key == e->key)
            return -EEXIST;
        j = (j + 1) & (m->cap - 1);
    }
    m->e[j] = *e;
    m->n++;
    return 0;
}

struct sim_map_entry *sim_map_get(const struct sim_map *m, uint64_t key)
{
    if (!m->cap || key == 0)
        return NULL;
    size_t j = slot_of(key, m->cap);
    while (m->e[j].key) {
        if (m->e[j].key == key)
            return &m->e[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

int sim_map_del(struct sim_map *m, uint64_t key, struct sim_map_entry *out)
{
    struct sim_map_entry *hit = sim_map_get(m, key);
    if (!hit)
        return -ENOENT;
    if (out)
        *out = *hit;
    size_t mask = m->cap - 1, i = (size_t)(hit - m->e), j = i;
    /* Backward-shift: move later entries of the same probe run into the hole. */
    for (;;) {
        j = (j + 1) & mask;
        if (!m->e[j].key)
            break;
        size_t home = slot_of(m->e[j].key, m->cap);
        /* Entry j may move to i if its home is not in (i, j] cyclically. */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->e[i] = m->e[j];
            i = j;
        }
    }
    memset(&m->e[i], 0, sizeof(m->e[i]));
    m->n--;
    return 0;
}

void sim_map_clear(struct sim_map *m)
{
    free(m->e);
    m->e = NULL;
    m->cap = 0;
    m->n = 0;
}
