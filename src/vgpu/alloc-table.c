/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-process table of tracked allocations, keyed by (device pointer or handle, kind).
 * Open addressing with linear probing and backward-shift deletion (no tombstones), split into
 * shards by hash so threads rarely contend; each shard grows at 1/2 load. O(1) expected per
 * insert/remove/lookup, whatever the number of live allocations.
 *
 * A shard is guarded by a spin lock (one atomic exchange to take it, a plain release store to
 * give it back): its critical sections are a few probes, and a mutex costs a second atomic
 * operation and ~50 instructions more per call on the allocation path. A waiter yields the CPU
 * after a few spins (the holder may be descheduled, or growing the shard).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

#define SHARDS  16
#define MIN_CAP 64

/* A slot is one cache line: a probe (key, kind) and a backward shift read one line per slot. */
struct slot {
    struct vgpu_alloc a;
} __attribute__((aligned(64)));

struct shard {
    atomic_int lock;    /* 0 = free, 1 = held */
    struct slot *slots; /* key 0 + kind 0 = empty */
    size_t cap;         /* power of two */
    size_t count;
} __attribute__((aligned(64)));

static struct shard shards[SHARDS];

/* Records that could not be put back in their shard (no memory to grow it) after a failed free:
 * kept here, in memory that needs no allocation, so their charge can still be given back. Looked
 * at only while it holds something (one relaxed load on a miss otherwise). */
#define SPARE 64
static struct {
    atomic_int lock;
    atomic_int count;
    struct vgpu_alloc slots[SPARE];
} spare;

/* Zeroed, cache-line aligned memory for n slots; replaceable by the unit tests (to run out of
 * memory on purpose). */
static void *aligned_calloc(size_t n, size_t size)
{
    void *p = NULL;
    if (size && n > SIZE_MAX / size)
        return NULL;
    if (posix_memalign(&p, 64, n * size) != 0)
        return NULL;
    memset(p, 0, n * size);
    return p;
}

static void *(*table_calloc)(size_t, size_t) = aligned_calloc;

void vgpu_table_set_calloc(void *(*fn)(size_t, size_t))
{
    table_calloc = fn ? fn : aligned_calloc;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static inline void shard_lock(struct shard *s)
{
    while (GS_UNLIKELY(atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))) {
        for (unsigned spins = 0; atomic_load_explicit(&s->lock, memory_order_relaxed); spins++) {
            if (spins < 64)
                cpu_relax();
            else
                sched_yield();
        }
    }
}

static inline void shard_unlock(struct shard *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static inline void spare_lock(void)
{
    while (atomic_exchange_explicit(&spare.lock, 1, memory_order_acquire))
        sched_yield();
}

static inline void spare_unlock(void)
{
    atomic_store_explicit(&spare.lock, 0, memory_order_release);
}

/* Take (key, kind) out of the spare records; false if not there. */
static bool spare_take(uint64_t key, uint32_t kind, struct vgpu_alloc *out, bool remove)
{
    if (GS_LIKELY(atomic_load_explicit(&spare.count, memory_order_relaxed) == 0))
        return false;
    bool found = false;
    spare_lock();
    int n = atomic_load_explicit(&spare.count, memory_order_relaxed);
    for (int i = 0; i < n && !found; i++) {
        if (spare.slots[i].key == key && spare.slots[i].kind == kind) {
            if (out)
                *out = spare.slots[i];
            if (remove) {
                spare.slots[i] = spare.slots[n - 1];
                atomic_store_explicit(&spare.count, n - 1, memory_order_relaxed);
            }
            found = true;
        }
    }
    spare_unlock();
    return found;
}

static inline uint64_t mix(uint64_t key, uint32_t kind)
{
    uint64_t x = key ^ ((uint64_t)kind << 56);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline bool empty(const struct vgpu_alloc *a)
{
    return a->kind == 0;
}

static int grow(struct shard *s)
{
    size_t ncap = s->cap ? s->cap * 2 : MIN_CAP;
    struct slot *ns = table_calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (empty(&s->slots[i].a))
            continue;
        size_t j = (mix(s->slots[i].a.key, s->slots[i].a.kind) >> 4) & (ncap - 1);
        while (!empty(&ns[j].a))
            j = (j + 1) & (ncap - 1);
        ns[j].a = s->slots[i].a;
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
    return 0;
}

int vgpu_table_insert(const struct vgpu_alloc *a, struct vgpu_alloc *replaced)
{
    uint64_t h = mix(a->key, a->kind);
    struct shard *s = &shards[h & (SHARDS - 1)];
    shard_lock(s);
    if ((s->count + 1) * 2 > s->cap && grow(s) < 0) {
        shard_unlock(s);
        return -1;
    }
    size_t i = (h >> 4) & (s->cap - 1);
    while (!empty(&s->slots[i].a)) {
        if (s->slots[i].a.key == a->key && s->slots[i].a.kind == a->kind) {
            /* the driver reused a key we did not see freed: hand the old entry back */
            if (replaced)
                *replaced = s->slots[i].a;
            s->slots[i].a = *a;
            shard_unlock(s);
            return 1;
        }
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i].a = *a;
    s->count++;
    shard_unlock(s);
    return 0;
}

int vgpu_table_insert_keep(const struct vgpu_alloc *a, struct vgpu_alloc *replaced)
{
    int r = vgpu_table_insert(a, replaced);
    if (r >= 0)
        return r;
    spare_lock();
    int n = atomic_load_explicit(&spare.count, memory_order_relaxed);
    if (n < SPARE) {
        spare.slots[n] = *a;
        atomic_store_explicit(&spare.count, n + 1, memory_order_relaxed);
    }
    spare_unlock();
    return n < SPARE ? 0 : -1;
}

static ssize_t find(struct shard *s, uint64_t h, uint64_t key, uint32_t kind)
{
    if (!s->cap)
        return -1;
    size_t i = (h >> 4) & (s->cap - 1);
    while (!empty(&s->slots[i].a)) {
        if (s->slots[i].a.key == key && s->slots[i].a.kind == kind)
            return (ssize_t)i;
        i = (i + 1) & (s->cap - 1);
    }
    return -1;
}

/* Backward-shift deletion of slot `found` (shard lock held). */
static void delete_at(struct shard *s, size_t found)
{
    size_t mask = s->cap - 1;
    size_t i = found;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (empty(&s->slots[j].a))
            break;
        size_t home = (mix(s->slots[j].a.key, s->slots[j].a.kind) >> 4) & mask;
        /* move j into the hole i if its home is not cyclically in (i, j] */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            s->slots[i].a = s->slots[j].a;
            i = j;
        }
    }
    memset(&s->slots[i].a, 0, sizeof(s->slots[i].a));
    s->count--;
}

bool vgpu_table_lookup(uint64_t key, uint32_t kind, struct vgpu_alloc *out)
{
    uint64_t h = mix(key, kind);
    struct shard *s = &shards[h & (SHARDS - 1)];
    shard_lock(s);
    ssize_t i = find(s, h, key, kind);
    if (i >= 0 && out)
        *out = s->slots[i].a;
    shard_unlock(s);
    return i >= 0 || spare_take(key, kind, out, false);
}

bool vgpu_table_remove(uint64_t key, uint32_t kind, struct vgpu_alloc *out)
{
    uint64_t h = mix(key, kind);
    struct shard *s = &shards[h & (SHARDS - 1)];
    shard_lock(s);
    ssize_t found = find(s, h, key, kind);
    if (found < 0) {
        shard_unlock(s);
        return spare_take(key, kind, out, true);
    }
    if (out)
        *out = s->slots[found].a;
    delete_at(s, (size_t)found);
    shard_unlock(s);
    return true;
}

int vgpu_table_add_refs(uint64_t key, uint32_t kind, int32_t delta, struct vgpu_alloc *out)
{
    uint64_t h = mix(key, kind);
    struct shard *s = &shards[h & (SHARDS - 1)];
    shard_lock(s);
    ssize_t i = find(s, h, key, kind);
    if (i < 0) {
        shard_unlock(s);
        return -1;
    }
    struct vgpu_alloc *a = &s->slots[i].a;
    if (delta < 0 && (uint32_t)-delta >= a->refs)
        a->refs = 0; /* never wraps: the last reference is the last */
    else
        a->refs = (uint32_t)((int64_t)a->refs + delta);
    if (out)
        *out = *a;
    int rc = 0;
    if (a->refs == 0) {
        delete_at(s, (size_t)i);
        rc = 1;
    }
    shard_unlock(s);
    return rc;
}

size_t vgpu_table_remove_if(bool (*match)(const struct vgpu_alloc *a, void *arg),
                            void (*removed)(const struct vgpu_alloc *a, void *arg), void *arg)
{
    size_t n = 0;
    for (int k = 0; k < SHARDS; k++) {
        struct shard *s = &shards[k];
        for (;;) {
            /* Collect a batch under the lock, call back outside it (removed() may charge). */
            struct vgpu_alloc batch[64];
            size_t nb = 0;
            shard_lock(s);
            for (size_t i = 0; i < s->cap && nb < GS_ARRAY_SIZE(batch);) {
                if (!empty(&s->slots[i].a) && match(&s->slots[i].a, arg)) {
                    batch[nb++] = s->slots[i].a;
                    delete_at(s, i); /* slot i now holds a shifted entry (or is empty) */
                    continue;
                }
                i++;
            }
            shard_unlock(s);
            for (size_t i = 0; i < nb; i++)
                if (removed)
                    removed(&batch[i], arg);
            n += nb;
            if (nb < GS_ARRAY_SIZE(batch))
                break;
        }
    }
    if (atomic_load_explicit(&spare.count, memory_order_relaxed)) {
        struct vgpu_alloc batch[SPARE];
        size_t nb = 0;
        spare_lock();
        int cnt = atomic_load_explicit(&spare.count, memory_order_relaxed);
        for (int i = 0; i < cnt;) {
            if (match(&spare.slots[i], arg)) {
                batch[nb++] = spare.slots[i];
                spare.slots[i] = spare.slots[--cnt];
                continue;
            }
            i++;
        }
        atomic_store_explicit(&spare.count, cnt, memory_order_relaxed);
        spare_unlock();
        for (size_t i = 0; i < nb; i++)
            if (removed)
                removed(&batch[i], arg);
        n += nb;
    }
    return n;
}

void vgpu_table_retag_ctx(const void *ctx, uint32_t from, uint32_t to)
{
    for (int k = 0; k < SHARDS; k++) {
        struct shard *s = &shards[k];
        shard_lock(s);
        for (size_t i = 0; i < s->cap; i++)
            if (!empty(&s->slots[i].a) && s->slots[i].a.ctx == ctx && s->slots[i].a.ctx_id == from)
                s->slots[i].a.ctx_id = to;
        shard_unlock(s);
    }
}

size_t vgpu_table_count(void)
{
    size_t n = (size_t)atomic_load(&spare.count);
    for (int i = 0; i < SHARDS; i++) {
        shard_lock(&shards[i]);
        n += shards[i].count;
        shard_unlock(&shards[i]);
    }
    return n;
}

void vgpu_table_reset(void)
{
    atomic_store(&spare.lock, 0);
    atomic_store(&spare.count, 0);
    for (int i = 0; i < SHARDS; i++) {
        atomic_store(&shards[i].lock, 0); /* another thread may have held it at fork() */
        free(shards[i].slots);
        shards[i].slots = NULL;
        shards[i].cap = 0;
        shards[i].count = 0;
    }
}
