/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The legacy route (--mode=legacy): each case runs wh_legacy_route on a pod, applies the patch
 * with the JSON Patch applier and checks the pod the scheduler extender and the device plugin
 * will see — schedulerName, HAMi's defaults in the container limits — or HAMi's denial.
 */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/legacy.h"
#include "webhook/patch.h"

static struct wh_names names;

#define POD(CTRS, EXTRA)                                                                           \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"  \
    "\"spec\":{\"schedulerName\":\"default-scheduler\",\"containers\":[" CTRS "]" EXTRA "}}"
#define CTR(NAME, LIMITS)                                                                          \
    "{\"name\":\"" NAME "\",\"image\":\"cuda\",\"resources\":{\"limits\":{" LIMITS "}}}"

/* Route `pod_json`; on success *pod_out is the patched pod (new reference). */
static int route(const struct wh_legacy_config *cfg, const char *pod_json, json_t **pod_out,
                 struct wh_translation *tr, struct gs_error *err)
{
    json_t *pod = json_loads(pod_json, 0, NULL);
    if (!pod)
        return -999;
    int r = wh_legacy_route(cfg, &names, pod, tr, err);
    if (r == 0 && tr->patch && wh_json_patch_apply(pod, tr->patch, err) < 0)
        r = -998;
    if (pod_out)
        *pod_out = pod;
    else
        json_decref(pod);
    return r;
}

static const char *limit(const json_t *pod, size_t ctr, const char *name)
{
    return json_string_value(json_object_get(
        json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), ctr),
                "resources"),
            "limits"),
        name));
}

static const char *scheduler(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "spec"), "schedulerName"));
}

int main(void)
{
    tap_plan_auto();
    wh_names_default(&names);
    struct wh_legacy_config hami = {.default_gpu = 1}; /* HAMi's defaults */
    struct wh_translation tr;
    struct gs_error err = {0};
    json_t *pod = NULL;

    /* The seed pod: explicit values are kept, the scheduler is the extender's. */
    is_int(route(&hami,
                 POD(CTR("main", "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"8000\","
                                 "\"nvidia.com/gpucores\":\"10\""),
                     ""),
                 &pod, &tr, &err),
           0, "seed pod routed");
    is_str(scheduler(pod), "hami-scheduler", "schedulerName hami-scheduler (default)");
    is_str(limit(pod, 0, "nvidia.com/gpumem"), "8000", "gpumem kept");
    is_str(limit(pod, 0, "nvidia.com/gpucores"), "10", "gpucores kept");
    ok(!limit(pod, 0, "nvidia.com/gpumem-percentage"), "no percentage added beside gpumem");
    is_int((int)json_array_size(tr.templates), 0, "no ResourceClaimTemplate in legacy mode");
    json_decref(pod), wh_translation_fini(&tr);

    /* gpu only: the whole memory (gpumem-percentage 100), cores shared (no default). */
    route(&hami, POD(CTR("main", "\"nvidia.com/gpu\":\"2\""), ""), &pod, &tr, &err);
    is_str(limit(pod, 0, "nvidia.com/gpumem-percentage"), "100",
           "gpu only, defaultMem 0: gpumem-percentage 100");
    ok(!limit(pod, 0, "nvidia.com/gpucores"), "gpu only, defaultCores 0: no gpucores");
    json_decref(pod), wh_translation_fini(&tr);

    /* Configured defaults: memory in MiB and exclusive cores. */
    struct wh_legacy_config excl = {.scheduler_name = "gpuslice-scheduler",
                                    .default_gpu = 1,
                                    .default_gpumem = 4096,
                                    .default_gpucores = 100};
    route(&excl, POD(CTR("main", "\"nvidia.com/gpu\":\"1\""), ""), &pod, &tr, &err);
    is_str(limit(pod, 0, "nvidia.com/gpumem"), "4096", "--default-gpumem 4096 applied");
    is_str(limit(pod, 0, "nvidia.com/gpucores"), "100", "--default-gpucores 100: exclusive");
    is_str(scheduler(pod), "gpuslice-scheduler", "--scheduler-name applied");
    json_decref(pod), wh_translation_fini(&tr);
    route(&excl, POD(CTR("main", "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"30\""), ""),
          &pod, &tr, &err);
    is_str(limit(pod, 0, "nvidia.com/gpucores"), "30", "explicit gpucores wins over the default");
    json_decref(pod), wh_translation_fini(&tr);

    /* Memory without a count: defaultGPUNum GPUs; with 0 the container asks for no GPU. */
    route(&hami, POD(CTR("main", "\"nvidia.com/gpumem\":\"3000\""), ""), &pod, &tr, &err);
    is_str(limit(pod, 0, "nvidia.com/gpu"), "1", "gpumem without gpu: gpu 1 (defaultGPUNum)");
    json_decref(pod), wh_translation_fini(&tr);
    struct wh_legacy_config nogpu = {.default_gpu = 0};
    is_int(route(&nogpu, POD(CTR("main", "\"nvidia.com/gpumem\":\"3000\""), ""), &pod, &tr, &err),
           0, "defaultGPUNum 0: allowed");
    ok(!tr.patch && !strcmp(scheduler(pod), "default-scheduler"),
       "defaultGPUNum 0, gpumem only: pod unchanged, left to kube-scheduler");
    json_decref(pod), wh_translation_fini(&tr);

    /* No limits map / no resources at all on the container: created. */
    route(&hami,
          POD("{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"requests\":{\"nvidia.com/"
              "gpucores\":\"20\"}}}",
              ""),
          &pod, &tr, &err);
    is_str(limit(pod, 0, "nvidia.com/gpu"), "1", "requests only: limits created with gpu 1");
    is_str(limit(pod, 0, "nvidia.com/gpumem-percentage"), "100", "... and the whole memory");
    json_decref(pod), wh_translation_fini(&tr);

    /* Pods without GPU resources: unchanged, even the scheduler. */
    route(&hami, POD(CTR("web", "\"cpu\":\"1\""), ""), &pod, &tr, &err);
    ok(!tr.patch && !strcmp(scheduler(pod), "default-scheduler"), "no GPU resource: unchanged");
    json_decref(pod), wh_translation_fini(&tr);

    /* Another scheduler named by the user: left alone, with a warning. */
    is_int(route(&hami,
                 "{\"spec\":{\"schedulerName\":\"volcano\",\"containers\":[" CTR(
                     "main", "\"nvidia.com/gpu\":\"1\"") "]}}",
                 NULL, &tr, &err),
           0, "other scheduler: allowed");
    ok(!tr.patch, "other scheduler: pod unchanged");
    like_str(json_string_value(json_array_get(tr.warnings, 0)),
             "pod already has different scheduler assigned (volcano)", "warning names it");
    wh_translation_fini(&tr);

    /* What HAMi denies, with HAMi's messages (403). */
    is_int(route(&hami, "{\"spec\":{\"containers\":[]}}", NULL, &tr, &err), -EPERM,
           "no containers: denied");
    is_str(err.msg, "pod has no containers", "HAMi's message");
    wh_translation_fini(&tr);
    is_int(route(&hami,
                 POD(CTR("main", "\"nvidia.com/gpu\":\"1\"") ",{\"name\":\"debug\",\"image\":"
                                                             "\"x\",\"securityContext\":{"
                                                             "\"privileged\":true}}",
                     ""),
                 NULL, &tr, &err),
           -EPERM, "privileged container in a GPU pod: denied");
    is_str(err.msg, "container debug is privileged", "HAMi's message names the container");
    wh_translation_fini(&tr);
    is_int(route(&hami,
                 POD("{\"name\":\"debug\",\"image\":\"x\",\"securityContext\":{\"privileged\":"
                     "true}}",
                     ""),
                 NULL, &tr, &err),
           0, "privileged container without GPUs: allowed (not HAMi's business)");
    wh_translation_fini(&tr);
    is_int(route(&hami, POD(CTR("main", "\"nvidia.com/gpu\":\"1\""), ",\"nodeName\":\"n1\""), NULL,
                 &tr, &err),
           -EPERM, "nodeName set: denied (the extender cannot place it)");
    is_str(err.msg, "pod has node assigned", "HAMi's message");
    wh_translation_fini(&tr);

    /* Invalid values: the same checks and messages as DRA mode (422). */
    is_int(route(&hami, POD(CTR("main", "\"nvidia.com/gpucores\":\"150\""), ""), NULL, &tr, &err),
           -EINVAL, "gpucores 150: denied");
    like_str(err.msg, "container \"main\": nvidia.com/gpucores: \"150\" is outside 0-100",
             "message names container, resource and value");
    wh_translation_fini(&tr);

    /* Init containers get the defaults too. */
    route(&hami,
          "{\"spec\":{\"initContainers\":[" CTR(
              "init", "\"nvidia.com/gpu\":\"1\"") "],"
                                                  "\"containers\":[" CTR("main",
                                                                         "\"cpu\":\"1\"") "]}}",
          &pod, &tr, &err);
    is_str(json_string_value(json_object_get(
               json_object_get(
                   json_object_get(
                       json_array_get(
                           json_object_get(json_object_get(pod, "spec"), "initContainers"), 0),
                       "resources"),
                   "limits"),
               "nvidia.com/gpumem-percentage")),
           "100", "init container: default applied");
    is_str(scheduler(pod), "hami-scheduler", "init container with a GPU routes the pod");
    json_decref(pod), wh_translation_fini(&tr);
    return tap_done();
}
