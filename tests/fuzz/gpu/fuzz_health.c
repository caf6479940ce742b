/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health event path: policy lists (untrusted option text) and any sequence of backend events
 * (random XIDs, ECC errors, losses, answers, clears, device indexes out of range) applied to the
 * table. Input: "<nonfatal list>\n<ignore list>\n" then 4-byte events (kind, device, XID
 * little-endian 16 bits). Invariants: never crash; healthy == !lost && !fatal; a reason exactly
 * when unhealthy; the generation never goes back; an operator clear plus an answer from every GPU
 * makes every GPU healthy (no restart needed, whatever came before).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "gpu/health.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gpu_health_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct gpu_health_dev *d = &t->dev[i];
        if (d->healthy != (!d->lost && !d->fatal))
            abort();
        if ((d->reason[0] == '\0') != d->healthy)
            abort();
    }
}

static const char *line(const uint8_t **p, const uint8_t *end, char *buf, size_t len)
{
    size_t k = 0;
    while (*p < end && **p != '\n') {
        if (k + 1 < len)
            buf[k++] = (char)(**p ? **p : ' ');
        (*p)++;
    }
    if (*p < end)
        (*p)++;
    buf[k] = '\0';
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gpu_inventory inv;
    static struct gpu_health_table t;
    if (inv.n == 0) {
        gs_log_set_level(GS_LOG_ERROR);
        for (unsigned i = 0; i < 3; i++) {
            inv.dev[i].minor = i;
            snprintf(inv.dev[i].name, sizeof(inv.dev[i].name), "hami-gpu-%u", i);
            snprintf(inv.dev[i].uuid, sizeof(inv.dev[i].uuid), "GPU-%u", i);
        }
        inv.n = 3;
    }
    const uint8_t *p = data, *end = data + size;
    char nonfatal[256], ignore[256];
    line(&p, end, nonfatal, sizeof(nonfatal));
    line(&p, end, ignore, sizeof(ignore));
    struct gpu_health_policy pol;
    struct gs_error err = {0};
    if (gpu_health_policy_init(&pol, true, nonfatal, ignore, &err) < 0) {
        if (!err.msg[0])
            abort(); /* a rejected list is always named */
        gpu_health_policy_init(&pol, true, NULL, NULL, NULL);
    }
    gpu_health_table_init(&t, &inv, &pol, 1);
    uint64_t gen = 0;
    int64_t now = 1;
    for (; end - p >= 4; p += 4) {
        struct gpu_health_event ev = {.kind = (enum gpu_health_event_kind)(p[0] % 8),
                                      .dev = p[1],
                                      .xid = (uint64_t)p[2] | ((uint64_t)p[3] << 8)};
        int r = gpu_health_apply(&t, &ev, ++now);
        if (r < 0 && ev.dev < t.n && ev.kind <= GPU_HEALTH_EV_UNMONITORED)
            abort();
        if (t.gen < gen)
            abort();
        gen = t.gen;
        check(&t);
    }
    if (gpu_health_clear(&t, "all", ++now) < 0)
        abort();
    for (size_t i = 0; i < t.n; i++) {
        struct gpu_health_event ev = {.kind = GPU_HEALTH_EV_ANSWERS, .dev = i};
        gpu_health_apply(&t, &ev, now);
        if (!t.dev[i].healthy)
            abort();
    }
    gpu_health_table_fini(&t);
    return 0;
}
