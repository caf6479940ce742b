/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open-addressing hash map from a 64-bit key (device address) to a small record, O(1) put,
 * get and delete (linear probing with backward-shift deletion, no tombstones). Not thread-safe:
 * callers hold their own lock. Key 0 is reserved (empty slot).
 */
#ifndef GS_SIM_SIM_MAP_H
#define GS_SIM_SIM_MAP_H

#include <stddef.h>
#include <stdint.h>

struct sim_map_entry {
    uint64_t key;
    uint64_t size; /* bytes charged / mapped */
    void *aux;     /* owner object (pool, VMM handle) or NULL */
    uint32_t kind;
    int32_t dev;
    uint32_t flags; /* gpusim: cuMemHostAlloc/Register flags, IPC open flags */
    void *host;     /* gpusim: host view of the bytes once mapped (see cuda-copy.c), else NULL */
};

struct sim_map {
    struct sim_map_entry *e;
    size_t cap; /* power of two, 0 when empty */
    size_t n;
};

/* 0, -EEXIST (key present), -ENOMEM. */
int sim_map_put(struct sim_map *m, const struct sim_map_entry *e);
/* Pointer into the table (valid until the next put/del), or NULL. */
struct sim_map_entry *sim_map_get(const struct sim_map *m, uint64_t key);
/* 0 and *out filled (if non-NULL), or -ENOENT. */
int sim_map_del(struct sim_map *m, uint64_t key, struct sim_map_entry *out);
void sim_map_clear(struct sim_map *m);

#endif /* GS_SIM_SIM_MAP_H */
