/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A ResourceClaim from the API server (untrusted JSON) -> claim plan -> checkpoint JSON -> plan.
 * Invariants: never crash; a built plan reads back from its checkpoint form unchanged; limits are
 * within bounds (cores <= 100, memory <= the device's total).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/claim.h"

#define UID "3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gpu_inventory inv;
    static struct claim_plan plan, back;
    if (inv.n == 0) {
        for (unsigned i = 0; i < 2; i++) {
            struct gpu_device *d = &inv.dev[i];
            d->minor = i;
            snprintf(d->name, sizeof(d->name), "hami-gpu-%u", i);
            snprintf(d->uuid, sizeof(d->uuid), "GPU-0000000%u-1111-2222-3333-444444444444", i);
            d->memory_total = 16ull << 30;
        }
        inv.n = 2;
    }
    json_error_t je;
    json_t *claim = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!claim)
        return 0;
    struct gs_error err = {0};
    if (claim_plan_build(claim, "ns", "name", UID, "hami-core-gpu.project-hami.io", "node", &inv,
                         &plan, &err) == 0) {
        for (size_t i = 0; i < plan.n_devices; i++) {
            if (plan.devices[i].cores > 100 || plan.devices[i].memory_limit > (16ull << 30))
                abort();
        }
        json_t *j = claim_plan_to_json(&plan);
        if (!j || claim_plan_from_json(j, &back, &err) != 0 || memcmp(&plan, &back, sizeof(plan)))
            abort();
        json_decref(j);
    } else if (!err.msg[0]) {
        abort(); /* every failure names what is wrong */
    }
    /* The same bytes as a checkpoint entry must be refused or read cleanly. */
    claim_plan_from_json(claim, &back, &err);
    json_decref(claim);
    return 0;
}
