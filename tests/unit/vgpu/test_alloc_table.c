/* SPDX-License-Identifier: Apache-2.0 */
/* The per-process allocation table: exact bookkeeping over 50,000 live entries, kinds kept apart,
 * deletion that keeps every other entry reachable. */
#include <stdlib.h>

#include "tap.h"
#include "vgpu/vgpu-internal.h"

#define N 50000

int main(void)
{
    tap_plan_auto();
    int bad = 0;
    for (uint64_t i = 0; i < N; i++) {
        struct vgpu_alloc a = {
            .key = 0x7f0000000000ULL + i * 512, .size = i + 1, .dev = 0, .kind = VGPU_KIND_DPTR};
        if (vgpu_table_insert(&a, NULL) != 0)
            bad++;
    }
    is_int(bad, 0, "50,000 inserts");
    is_uint(vgpu_table_count(), N, "count 50,000");
    struct vgpu_alloc h = {.key = 0x7f0000000000ULL, .size = 7, .kind = VGPU_KIND_VMM};
    is_int(vgpu_table_insert(&h, NULL), 0, "same key, other kind is a separate entry");
    struct vgpu_alloc again = {.key = 0x7f0000000000ULL, .size = 99, .kind = VGPU_KIND_DPTR};
    struct vgpu_alloc old = {0};
    is_int(vgpu_table_insert(&again, &old), 1, "re-inserting a live key reports a replacement");
    is_uint(old.size, 1, "and hands the old entry back (its charge can be returned)");
    again.size = 1;
    vgpu_table_insert(&again, NULL);
    /* remove every other entry, then check all the rest are still found with their sizes */
    for (uint64_t i = 0; i < N; i += 2) {
        struct vgpu_alloc out;
        if (!vgpu_table_remove(0x7f0000000000ULL + i * 512, VGPU_KIND_DPTR, &out) ||
            out.size != i + 1)
            bad++;
    }
    is_int(bad, 0, "25,000 removes return the right sizes");
    for (uint64_t i = 0; i < N; i++) {
        struct vgpu_alloc out;
        bool found = vgpu_table_lookup(0x7f0000000000ULL + i * 512, VGPU_KIND_DPTR, &out);
        if (found != (i % 2 == 1) || (found && out.size != i + 1))
            bad++;
    }
    is_int(bad, 0, "remaining entries all reachable after backward-shift deletes");
    struct vgpu_alloc out;
    ok(vgpu_table_lookup(0x7f0000000000ULL, VGPU_KIND_VMM, &out) && out.size == 7,
       "VMM entry untouched by DPTR removal");
    ok(!vgpu_table_remove(0xdeadbeef, VGPU_KIND_DPTR, NULL), "unknown key: not tracked");
    vgpu_table_reset();
    is_uint(vgpu_table_count(), 0, "reset empties the table");
    return tap_done();
}
