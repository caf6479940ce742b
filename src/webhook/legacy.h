/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The legacy route (--mode=legacy): for clusters that share GPUs through a device plugin and a
 * scheduler extender (HAMi's pipeline, served by gpuslice-device-plugin and gpuslice-extender)
 * instead of DRA. The pod keeps its nvidia.com/gpu* resources; the webhook routes it to the
 * extender's scheduler, makes HAMi's defaults explicit in the container limits and denies what
 * HAMi's webhook denies, with HAMi's messages (see docs/internals/webhook.md, "Legacy mode"):
 *
 *   gpumem / gpucores / gpumem-percentage without gpu -> gpu: default_gpu (HAMi defaultGPUNum)
 *   gpu without gpumem and gpumem-percentage -> gpumem: default_gpumem (MiB) when set, else
 *                                              gpumem-percentage: 100 (the whole memory)
 *   gpu without gpucores, default_gpucores > 0 -> gpucores: default_gpucores (100 = exclusive)
 *   spec.schedulerName -> scheduler_name, unless the pod names another scheduler than
 *                         default-scheduler (then it is left unchanged, with a warning)
 *   denied: "pod has no containers", "container <name> is privileged", "pod has node assigned"
 */
#ifndef GS_WEBHOOK_LEGACY_H
#define GS_WEBHOOK_LEGACY_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "webhook/shape.h"
#include "webhook/translate.h"

#define WH_DEFAULT_SCHEDULER_NAME "hami-scheduler"
/* kube-scheduler's name, which the API server writes into pods that name none. */
#define WH_KUBE_DEFAULT_SCHEDULER "default-scheduler"
/* HAMi's node annotation: the node's GPUs as published by HAMi's (or our) device plugin. */
#define WH_HAMI_NODE_REGISTER "hami.io/node-nvidia-register"

enum wh_mode {
    WH_MODE_DRA = 0,    /* translate to ResourceClaimTemplates (the default) */
    WH_MODE_LEGACY = 1, /* route to the scheduler extender */
};

struct wh_legacy_config {
    const char *scheduler_name; /* NULL = WH_DEFAULT_SCHEDULER_NAME */
    int64_t default_gpu;        /* GPUs for a container asking memory/cores only; 0 = none */
    int64_t default_gpumem;     /* MiB; 0 = the whole memory (gpumem-percentage 100) */
    int64_t default_gpucores;   /* percent; 0 = no default (compute shared) */
};

/*
 * The legacy route for `pod`: out->patch (NULL when the pod is left unchanged), out->warnings;
 * out->templates stays empty. Returns 0, -EPERM with HAMi's message for what HAMi denies, or
 * -EINVAL with a message naming container, resource and value for an invalid value.
 */
int wh_legacy_route(const struct wh_legacy_config *cfg, const struct wh_names *names,
                    const json_t *pod, struct wh_translation *out, struct gs_error *err);

#endif /* GS_WEBHOOK_LEGACY_H */
