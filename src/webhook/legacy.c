/* SPDX-License-Identifier: Apache-2.0 */
/* The legacy route: scheduler name, HAMi's defaults made explicit, HAMi's denials. */
#include "webhook/legacy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/macros.h"
#include "webhook/selector.h"

static int add_op(json_t *patch, const char *path, json_t *value)
{
    json_t *o = json_pack("{s:s,s:s,s:o}", "op", "add", "path", path, "value", value);
    if (!o || json_array_append_new(patch, o) < 0)
        return -ENOMEM;
    return 0;
}

static void add_warning(struct wh_translation *t, const char *fmt, ...) GS_PRINTF(2, 3);
static void add_warning(struct wh_translation *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    wh_utf8_sanitize(msg);
    json_array_append_new(t->warnings, json_string(msg));
}

static bool privileged(const json_t *ctr)
{
    return json_is_true(json_object_get(json_object_get(ctr, "securityContext"), "privileged"));
}

/* Add `name: value` to the container's resources.limits (creating what is missing). */
static int add_limit(json_t *patch, const char *list, size_t index, const json_t *ctr,
                     const char *name, int64_t value, bool *limits_added)
{
    char path[600], tok[512], v[32];
    const json_t *res = json_object_get(ctr, "resources");
    snprintf(v, sizeof(v), "%" PRId64, value);
    if (wh_json_pointer_escape(name, tok, sizeof(tok)) < 0)
        return -ENAMETOOLONG;
    if (!json_is_object(res)) {
        snprintf(path, sizeof(path), "/spec/%s/%zu/resources", list, index);
        *limits_added = true;
        return add_op(patch, path, json_pack("{s:{s:s}}", "limits", name, v));
    }
    if (!json_is_object(json_object_get(res, "limits")) && !*limits_added) {
        snprintf(path, sizeof(path), "/spec/%s/%zu/resources/limits", list, index);
        *limits_added = true;
        return add_op(patch, path, json_pack("{s:s}", name, v));
    }
    snprintf(path, sizeof(path), "/spec/%s/%zu/resources/limits/%s", list, index, tok);
    return add_op(patch, path, json_string(v));
}

int wh_legacy_route(const struct wh_legacy_config *cfg, const struct wh_names *names,
                    const json_t *pod, struct wh_translation *out, struct gs_error *err)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const char *scheduler = cfg->scheduler_name ? cfg->scheduler_name : WH_DEFAULT_SCHEDULER_NAME;
    const json_t *spec = json_object_get(pod, "spec");

    *out = (struct wh_translation){.templates = json_array(), .warnings = json_array()};
    if (!out->templates || !out->warnings)
        return gs_error_set(err, -ENOMEM, "out of memory");
    if (!json_is_object(spec))
        return gs_error_set(err, -EINVAL, "pod: spec is missing or not an object");
    if (json_array_size(json_object_get(spec, "containers")) == 0)
        return gs_error_set(err, -EPERM, "pod has no containers");
    const char *current = json_string_value(json_object_get(spec, "schedulerName"));
    if (current && *current && strcmp(current, WH_KUBE_DEFAULT_SCHEDULER) != 0 &&
        strcmp(current, scheduler) != 0) {
        add_warning(out,
                    "pod already has different scheduler assigned (%.64s); its GPU resources "
                    "are left to that scheduler",
                    current);
        return 0;
    }

    json_t *patch = json_array();
    if (!patch)
        return gs_error_set(err, -ENOMEM, "out of memory");
    bool has_resource = false;
    const char *privileged_name = NULL;
    int r = 0;
    for (size_t l = 0; r == 0 && l < GS_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const char *cn = json_string_value(json_object_get(c, "name"));
            if (!privileged_name && privileged(c))
                privileged_name = cn ? cn : "";
            char what[128];
            snprintf(what, sizeof(what), "%s \"%.64s\"", l == 0 ? "init container" : "container",
                     cn ? cn : "");
            struct wh_legacy lg;
            if ((r = wh_legacy_read(json_object_get(c, "resources"), names, what, &lg, err)) < 0)
                break;
            /* HAMi: memory, cores or a percentage without a count get defaultGPUNum GPUs; with
             * defaultGPUNum 0 the container asks for no GPU at all. */
            bool wants = lg.has_count || (wh_legacy_any(&lg) && cfg->default_gpu > 0);
            if (!wants)
                continue;
            has_resource = true;
            bool limits_added = false;
            if (!lg.has_count)
                r = add_limit(patch, lists[l], i, c, names->gpu, cfg->default_gpu, &limits_added);
            if (r == 0 && !lg.has_mem && !lg.has_pct)
                r = cfg->default_gpumem > 0
                        ? add_limit(patch, lists[l], i, c, names->mem, cfg->default_gpumem,
                                    &limits_added)
                        : add_limit(patch, lists[l], i, c, names->mem_pct, 100, &limits_added);
            if (r == 0 && !lg.has_cores && cfg->default_gpucores > 0)
                r = add_limit(patch, lists[l], i, c, names->cores, cfg->default_gpucores,
                              &limits_added);
            if (r < 0) {
                r = gs_error_set(err, r, "%s: cannot build the patch (%s)", what, gs_strerror(r));
                break;
            }
        }
    }
    if (r == 0 && has_resource && privileged_name)
        r = gs_error_set(err, -EPERM, "container %.64s is privileged", privileged_name);
    if (r == 0 && has_resource) {
        const char *node = json_string_value(json_object_get(spec, "nodeName"));
        if (node && *node)
            r = gs_error_set(err, -EPERM, "pod has node assigned");
    }
    if (r == 0 && has_resource && (!current || strcmp(current, scheduler) != 0) &&
        add_op(patch, "/spec/schedulerName", json_string(scheduler)) < 0)
        r = gs_error_set(err, -ENOMEM, "out of memory");
    if (r == 0 && has_resource)
        out->patch = TAKE_PTR(patch);
    json_decref(patch);
    return r;
}
