/* SPDX-License-Identifier: Apache-2.0 */
/* Pod walk and JSON Patch operations. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/translate.h"

static struct wh_names names;

static int translate(const char *pod_json, const struct wh_cluster_ops *ops,
                     struct wh_translation *tr, struct gs_error *err)
{
    json_t *pod = json_loads(pod_json, 0, NULL);
    if (!pod)
        return -999;
    int r = wh_translate_pod(&names, ops, "ns", pod, tr, err);
    json_decref(pod);
    return r;
}

static char *patch_text(const struct wh_translation *tr)
{
    return tr->patch ? json_dumps(tr->patch, JSON_COMPACT) : strdup("(none)");
}

int main(void)
{
    tap_plan_auto();
    wh_names_default(&names);
    char buf[16];
    struct wh_translation tr;
    struct gs_error err = {0};

    is_int(wh_json_pointer_escape("nvidia.com/gpu", buf, sizeof(buf)), 0, "escape");
    is_str(buf, "nvidia.com~1gpu", "/ -> ~1");
    wh_json_pointer_escape("a~b/c", buf, sizeof(buf));
    is_str(buf, "a~0b~1c", "~ -> ~0 first");
    is_int(wh_json_pointer_escape("0123456789abcdef", buf, sizeof(buf)), -ENOSPC, "too long");

    is_int(translate("{\"spec\":{\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{"
                     "\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"20\"},"
                     "\"requests\":{\"nvidia.com/gpu\":\"1\"},\"claims\":[{\"name\":\"x\"}]}}],"
                     "\"resourceClaims\":[{\"name\":\"x\",\"resourceClaimName\":\"nic\"}]}}",
                     NULL, &tr, &err),
           0, "mixed resources translate");
    char *p = patch_text(&tr);
    const char *tpl = json_string_value(
        json_object_get(json_object_get(json_array_get(tr.templates, 0), "metadata"), "name"));
    char want[1024];
    snprintf(
        want, sizeof(want),
        "[{\"op\":\"add\",\"path\":\"/spec/resourceClaims/-\",\"value\":{\"name\":"
        "\"gpu-m\",\"resourceClaimTemplateName\":\"%s\"}},"
        "{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpu\"},"
        "{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpucores\"},"
        "{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/requests\"},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/claims/-\",\"value\":"
        "{\"name\":\"gpu-m\"}},"
        "{\"op\":\"add\",\"path\":\"/metadata\",\"value\":{\"labels\":{\"hami.io/dra\":"
        "\"true\"}}}]",
        tpl ? tpl : "?");
    is_str(p, want, "exact patch: append to existing claims, remove only legacy keys");
    free(p);
    is_int(json_array_size(tr.warnings), 0, "no warnings");
    wh_translation_fini(&tr);
    wh_translation_fini(&tr);

    is_int(translate("{\"spec\":{\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{"
                     "\"nvidia.com/gpumem-percentage\":\"10\"}}}]}}",
                     NULL, &tr, &err),
           -EINVAL, "percentage without a cluster");
    is_str(err.msg,
           "nvidia.com/gpumem-percentage: nvidia.com/gpumem-percentage needs the GPU "
           "memory sizes of the cluster's ResourceSlices, and no API server is "
           "configured",
           "message says why");
    wh_translation_fini(&tr);

    is_int(translate("{\"spec\":{\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{"
                     "\"nvidia.com/gpu\":\"1\"}}}],\"resourceClaims\":[{\"name\":\"gpu-m\","
                     "\"resourceClaimName\":\"other\"}]}}",
                     NULL, &tr, &err),
           -EINVAL, "pod claim name taken");
    is_str(err.msg,
           "container \"m\": the pod already has a claim named \"gpu-m\"; rename it or "
           "the container",
           "collision named");
    wh_translation_fini(&tr);

    is_int(translate("{\"spec\":{\"containers\":[{\"name\":\"m\"}]}}", NULL, &tr, &err), 0,
           "no legacy resources");
    ok(tr.patch == NULL && json_array_size(tr.templates) == 0, "no patch, no template");
    wh_translation_fini(&tr);

    is_int(translate("{\"spec\":5}", NULL, &tr, &err), -EINVAL, "spec not an object");
    is_str(err.msg, "pod: spec is missing or not an object", "message");
    wh_translation_fini(&tr);

    is_int(translate("{\"metadata\":{\"annotations\":{\"nvidia.com/use-gputype\":7}},\"spec\":{"
                     "\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{"
                     "\"nvidia.com/gpu\":\"1\"}}}]}}",
                     NULL, &tr, &err),
           -EINVAL, "bad annotation type");
    is_str(err.msg, "annotation nvidia.com/use-gputype: value is not a string", "named");
    wh_translation_fini(&tr);
    return tap_done();
}
