/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's allocation map against a reference array, through growth and deletions. */
#include <errno.h>
#include <stdlib.h>

#include "sim/sim-map.h"
#include "tap.h"

#define N 50000

int main(void)
{
    tap_plan_auto();
    struct sim_map m = {0};
    static uint64_t keys[N];
    static int present[N];
    uint64_t seed = 42;
    for (int i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        keys[i] = ((1ull << 48) + (seed >> 20)) & ~511ull;
    }
    int put_ok = 0, dup = 0;
    for (int i = 0; i < N; i++) {
        struct sim_map_entry e = {.key = keys[i], .size = (uint64_t)i, .kind = 1};
        int r = sim_map_put(&m, &e);
        if (r == 0) {
            put_ok++;
            present[i] = 1;
        } else if (r == -EEXIST) {
            dup++;
        }
    }
    is_int(put_ok + dup, N, "every put succeeds or is a duplicate key");
    is_uint(m.n, (unsigned)put_ok, "count");
    is_int(sim_map_put(&m, &(struct sim_map_entry){.key = 0}), -EINVAL, "key 0 refused");
    /* Delete every third present key, then check everything. */
    int del = 0;
    for (int i = 0; i < N; i += 3) {
        if (present[i] && sim_map_del(&m, keys[i], NULL) == 0) {
            present[i] = 0;
            del++;
        }
    }
    int good = 0;
    for (int i = 0; i < N; i++) {
        struct sim_map_entry *e = sim_map_get(&m, keys[i]);
        if (present[i])
            good += e && e->size == (uint64_t)i;
        else
            good += e == NULL || e->size != (uint64_t)i;
    }
    is_int(good, N, "lookups agree with the reference after %d deletions", del);
    is_int(sim_map_del(&m, 12345, NULL), -ENOENT, "deleting a missing key");
    sim_map_clear(&m);
    is_uint(m.n, 0, "cleared");
    return tap_done();
}
