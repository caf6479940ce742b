/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A ResourceClaim as the plugin needs it: the allocation results of our driver on this node and,
 * per device, the summed consumed capacity (the limits we enforce). Pure functions: no I/O.
 */
#ifndef GS_GPU_CLAIM_H
#define GS_GPU_CLAIM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gpu/discovery.h"

#define CLAIM_MAX_RESULTS 32
#define CLAIM_MAX_DEVICES 32
#define CLAIM_NAME_MAX    256
#define CLAIM_UID_MAX     64
#define CLAIM_ERROR_MAX   512

/* One allocation result of our driver (one request -> one device share). */
struct claim_result {
    char request[64]; /* base request name ("gpu" for "gpu/sub") */
    char pool[256];
    char device[64];   /* "hami-gpu-<minor>" */
    char share_id[64]; /* "" when the result has no shareID */
};

/* One device of the claim with what the claim may use of it. */
struct claim_device {
    char device[64];
    char uuid[GPU_STR_MAX];
    unsigned minor;
    uint64_t memory_limit; /* bytes; 0 = the whole device (no consumedCapacity) */
    uint32_t cores;        /* percent 1..100; 0 = no compute cap */
    unsigned env_index;    /* i of CUDA_DEVICE_*_LIMIT_<i>: rank by minor within the claim */
};

struct claim_plan {
    char ns[CLAIM_NAME_MAX];
    char name[CLAIM_NAME_MAX];
    char uid[CLAIM_UID_MAX];
    size_t n_results;
    struct claim_result results[CLAIM_MAX_RESULTS];
    size_t n_devices;
    struct claim_device devices[CLAIM_MAX_DEVICES];
};

/*
 * Build the plan of `claim` (a resource.k8s.io/v1 ResourceClaim object) for kubelet's request
 * (ns, name, uid). Checks: the object's UID equals `uid`, status.allocation exists, at least one
 * result is of `driver`, every such result's pool is `pool` and its device is in `inv`; quantities
 * parse. Errors (-EINVAL, -ENOENT, -ESTALE) name the claim and the field:
 *   "claim test-dra/c: UID mismatch: kubelet asked for 1234, API server has 5678"
 */
int claim_plan_build(const json_t *claim, const char *ns, const char *name, const char *uid,
                     const char *driver, const char *pool, const struct gpu_inventory *inv,
                     struct claim_plan *out, struct gs_error *err);

/* JSON form of a plan (checkpoint); claim_plan_from_json validates everything it reads. */
json_t *claim_plan_to_json(const struct claim_plan *p);
int claim_plan_from_json(const json_t *j, struct claim_plan *out, struct gs_error *err);

/* True if `s` is a safe claim UID (used in file names): [A-Za-z0-9-], 1..63 characters. */
bool claim_uid_valid(const char *s);

#endif /* GS_GPU_CLAIM_H */
