/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compiled programs keyed by expression text. A mutex guards the table; programs are immutable
 * once inserted and live until cel_cache_free(), so callers may evaluate them without the lock.
 * Compile errors are remembered too (selectors are re-evaluated for every device and node).
 */
#include <pthread.h>
#include <string.h>

#include "cel/cel-internal.h"

struct cache_entry {
    struct cache_entry *next;
    uint64_t hash;
    char *expr;
    struct cel_program *prog; /* NULL: compile error in err */
    struct gs_error err;
};

struct cel_cache {
    pthread_mutex_t lock;
    struct cache_entry **buckets;
    size_t nbuckets, count;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

struct cel_cache *cel_cache_new(void)
{
    struct cel_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->nbuckets = 64;
    c->buckets = calloc(c->nbuckets, sizeof(struct cache_entry *));
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void cel_cache_free(struct cel_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct cache_entry *e = c->buckets[i];
        while (e) {
            struct cache_entry *next = e->next;
            cel_program_free(e->prog);
            free(e->expr);
            free(e);
            e = next;
        }
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void grow(struct cel_cache *c)
{
    size_t nb = c->nbuckets * 2;
    struct cache_entry **b = calloc(nb, sizeof(struct cache_entry *));
    if (!b)
        return; /* keep the old table: lookups stay correct, only slower */
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct cache_entry *e = c->buckets[i];
        while (e) {
            struct cache_entry *next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = next;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

const struct cel_program *cel_cache_get(struct cel_cache *c, const char *expr, struct gs_error *err)
{
    if (!c || !expr) {
        gs_error_set(err, -EINVAL, "cel_cache_get: missing cache or expression");
        return NULL;
    }
    uint64_t h = hash_str(expr);
    pthread_mutex_lock(&c->lock);
    for (struct cache_entry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->next) {
        if (e->hash == h && !strcmp(e->expr, expr)) {
            const struct cel_program *p = e->prog;
            if (!p && err)
                *err = e->err;
            pthread_mutex_unlock(&c->lock);
            return p;
        }
    }
    struct cache_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->expr = strdup(expr))) {
        free(e);
        pthread_mutex_unlock(&c->lock);
        gs_error_set(err, -ENOMEM, "out of memory caching expression");
        return NULL;
    }
    e->hash = h;
    e->prog = cel_compile(expr, &e->err);
    if (!e->prog && err)
        *err = e->err;
    if (!e->prog && e->err.code == -ENOMEM) { /* transient: try again next time */
        free(e->expr);
        free(e);
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    if (c->count + 1 > c->nbuckets)
        grow(c);
    e->next = c->buckets[h & (c->nbuckets - 1)];
    c->buckets[h & (c->nbuckets - 1)] = e;
    c->count++;
    const struct cel_program *p = e->prog;
    pthread_mutex_unlock(&c->lock);
    return p;
}

size_t cel_cache_size(const struct cel_cache *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&c->lock);
    size_t n = c->count;
    pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
    return n;
}
