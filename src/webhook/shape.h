/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Legacy HAMi resources of one container -> the DRA claim shape (see docs/internals/webhook.md).
 *
 *   nvidia.com/gpu: N            -> exactly.count N (ExactCount), no capacity request: whole GPUs
 *   nvidia.com/gpumem: M (MiB)   -> capacity.requests.memory  M * 1Mi
 *   nvidia.com/gpucores: C (%)   -> capacity.requests.cores   C
 *   nvidia.com/gpumem-percentage: P -> firstAvailable, one subrequest per GPU memory size S known
 *                                   in the cluster: memory == S selector, requests floor(S*P/100)
 * Mi
 */
#ifndef GS_WEBHOOK_SHAPE_H
#define GS_WEBHOOK_SHAPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuslice/hami.h"
#include "base/error.h"
#include "webhook/selector.h"

struct wh_vendors;

#define WH_DEFAULT_DEVICE_CLASS "hami-core-gpu.project-hami.io"
#define WH_DEFAULT_DRIVER       "hami-core-gpu.project-hami.io"
#define WH_DEFAULT_RES_GPU      HAMI_RES_GPU
#define WH_DEFAULT_RES_MEM      HAMI_RES_MEM
#define WH_DEFAULT_RES_MEM_PCT  HAMI_RES_MEM_PCT
#define WH_DEFAULT_RES_CORES    HAMI_RES_CORES

/* The one request of every generated claim. */
#define WH_REQUEST_NAME "gpu"
/* Template names: prefix + 20 hex digits of SHA-256 over the claim spec. */
#define WH_TEMPLATE_PREFIX   "gpuslice-"
#define WH_TEMPLATE_NAME_MAX 64
/* Kubernetes' limit on the devices one claim can be allocated (AllocationResultsMaxSize). */
#define WH_MAX_DEVICES_PER_CLAIM 32
/* Kubernetes' limit on firstAvailable subrequests. */
#define WH_MAX_SUBREQUESTS 8
#define WH_MIB             (1024 * 1024)

struct wh_names {
    const char *device_class; /* deviceClassName of every request */
    const char *driver;       /* attribute/capacity domain of our devices */
    const char *gpu;          /* count */
    const char *mem;          /* MiB */
    const char *mem_pct;      /* percent of the GPU's memory */
    const char *cores;        /* percent of the GPU's compute */
    /* How the DRA path translates (wh_names_default: substring, 1, NULL, NULL). */
    enum wh_type_match type_match; /* use-gputype / nouse-gputype */
    int64_t default_count; /* GPUs of a container asking memory or cores without a count (HAMi's
                            * defaultGPUNum); 0 = such a container is left as it is (HAMi-DRA) */
    const struct wh_vendors *vendors; /* other vendors (webhook/vendor.h); NULL = NVIDIA only */
    const char *runtime_class;        /* runtimeClassName given to translated NVIDIA pods */
    /* Memory without gpucores: false = cores "0" (legacy HAMi's default gpucores 0: shared, no
     * SM limit; the extender), true = no cores request (HAMi-DRA; the webhook's DRA path). */
    bool cores_only_when_named;
};

/* wh_names with every default. */
void wh_names_default(struct wh_names *n);

enum wh_topology {
    WH_TOPOLOGY_NONE = 0,
    WH_TOPOLOGY_NVLINK = 1,           /* required: matchAttribute nvlinkDomain */
    WH_TOPOLOGY_NVLINK_PREFERRED = 2, /* firstAvailable: with the constraint, then without */
};

struct wh_legacy {
    bool has_count, has_mem, has_pct, has_cores;
    int64_t count, mem_mib, pct, cores;
};

/*
 * Read and check the legacy resources of one container (`resources` may be NULL). Limits win
 * over requests. `what` names the container in messages ("container \"main\""). Returns 0 (see
 * wh_legacy_any) or -EINVAL with a message naming the container, the resource and the value.
 */
int wh_legacy_read(const json_t *resources, const struct wh_names *names, const char *what,
                   struct wh_legacy *out, struct gs_error *err);
bool wh_legacy_any(const struct wh_legacy *l);
/* Is `key` one of the four legacy resource names? */
bool wh_is_legacy_name(const struct wh_names *names, const char *key);

/*
 * Build the ResourceClaimSpec ({"devices": {...}}) for one container. `selectors` (array, may be
 * NULL or empty) are added to every (sub)request. `sizes` are the distinct GPU memory sizes in
 * bytes (needed only for a percentage; ascending order is produced here). `topology` applies
 * for count >= 2 only. Returns 0 and *out (new reference), or a negative code with a message.
 */
int wh_claim_spec_build(const struct wh_legacy *l, const struct wh_names *names,
                        const json_t *selectors, enum wh_topology topology, const int64_t *sizes,
                        size_t n_sizes, const char *what, json_t **out, struct gs_error *err);

#endif /* GS_WEBHOOK_SHAPE_H */
