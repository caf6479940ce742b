/* SPDX-License-Identifier: Apache-2.0 */
/* `translate`: legacy manifests -> DRA manifests + ResourceClaimTemplates, offline. */
#include "webhook/preview.h"

#include <errno.h>
#include <string.h>

#include "base/fs.h"
#include "base/macros.h"
#include "config/quantity.h"
#include "config/yaml.h"
#include "webhook/patch.h"
#include "webhook/translate.h"

struct ctx {
    const struct wh_preview_config *cfg;
    FILE *diag;
    json_t *templates; /* ResourceClaimTemplates, deduplicated by namespace/name */
    json_t *items;     /* the documents, translated in place */
    int denied;
    int broken; /* a generated patch did not apply: a bug */
};

static int memory_sizes(void *user, uint64_t deadline_ms, int64_t *sizes, size_t max, size_t *n,
                        struct gs_error *err)
{
    const struct wh_preview_config *cfg = user;
    if (!cfg->sizes || cfg->n_sizes == 0)
        return gs_error_set(err, -EINVAL,
                            "no GPU memory sizes known: pass --memory-sizes (e.g. 15Gi,80Gi)");
    for (size_t i = 0; i < cfg->n_sizes && i < max; i++)
        sizes[i] = cfg->sizes[i];
    *n = cfg->n_sizes;
    return 0;
}

int wh_parse_memory_sizes(const char *list, int64_t *sizes, size_t max, size_t *n,
                          struct gs_error *err)
{
    *n = 0;
    const char *p = list;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof(item))
            return gs_error_set(err, -EINVAL, "--memory-sizes: entry \"%.*s\" is not a quantity",
                                (int)GS_MIN(len, 64), p);
        memcpy(item, p, len);
        item[len] = '\0';
        int64_t bytes;
        if (gs_quantity_parse_int64(item, &bytes, NULL) < 0 || bytes <= 0)
            return gs_error_set(err, -EINVAL,
                                "--memory-sizes: \"%s\" is not a positive whole number of bytes",
                                item);
        if (*n >= max)
            return gs_error_set(err, -EINVAL, "--memory-sizes: more than %zu sizes", max);
        sizes[(*n)++] = bytes;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* The pod template of a workload object, the object itself for a Pod, NULL otherwise. */
static json_t *pod_of(json_t *doc)
{
    static const char *const workloads[] = {"Deployment", "ReplicaSet", "StatefulSet",
                                            "DaemonSet",  "Job",        "ReplicationController"};
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind)
        return NULL;
    if (strcmp(kind, "Pod") == 0)
        return doc;
    for (size_t i = 0; i < GS_ARRAY_SIZE(workloads); i++)
        if (strcmp(kind, workloads[i]) == 0)
            return json_object_get(json_object_get(doc, "spec"), "template");
    if (strcmp(kind, "CronJob") == 0)
        return json_object_get(
            json_object_get(json_object_get(json_object_get(doc, "spec"), "jobTemplate"), "spec"),
            "template");
    return NULL;
}

static void add_templates(struct ctx *c, const json_t *templates)
{
    size_t i, j;
    json_t *t, *have;
    json_array_foreach((json_t *)templates, i, t)
    {
        const json_t *m = json_object_get(t, "metadata");
        bool dup = false;
        json_array_foreach(c->templates, j, have)
        {
            const json_t *hm = json_object_get(have, "metadata");
            dup |= json_equal(json_object_get(m, "name"), json_object_get(hm, "name")) &&
                   json_equal(json_object_get(m, "namespace"), json_object_get(hm, "namespace"));
        }
        if (!dup)
            json_array_append(c->templates, t);
    }
}

static void translate_doc(struct ctx *c, const char *file, size_t index, json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (kind && strcmp(kind, "List") == 0) {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(doc, "items"), i, item)
            translate_doc(c, file, index, item);
        return;
    }
    json_t *pod = pod_of(doc);
    if (!json_is_object(pod))
        return;
    const json_t *meta = json_object_get(doc, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name)
        name = json_string_value(json_object_get(meta, "generateName"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!ns || !*ns)
        ns = c->cfg->default_namespace;
    char where[512];
    snprintf(where, sizeof(where), "%s: document %zu (%s %s/%s)", file, index + 1, kind, ns,
             name ? name : "");

    struct wh_cluster_ops ops = {.memory_sizes = memory_sizes, .user = (void *)c->cfg};
    struct wh_translation tr;
    struct gs_error err = {0};
    int r = wh_translate_pod(c->cfg->names, &ops, ns, pod, &tr, &err);
    if (r == 0 && tr.patch && wh_json_patch_apply(pod, tr.patch, &err) < 0) {
        fprintf(c->diag, "%s: internal error: %s\n", where, err.msg);
        c->broken = 1;
        r = -EPROTO;
    }
    size_t i;
    json_t *w;
    json_array_foreach(tr.warnings, i, w)
        fprintf(c->diag, "%s: warning: %s\n", where, json_string_value(w));
    if (r < 0) {
        fprintf(c->diag, "%s: denied: %s\n", where, err.msg);
        c->denied = 1;
    } else if (tr.patch) {
        add_templates(c, tr.templates);
        fprintf(c->diag, "%s: translated (%zu claim template(s))\n", where,
                json_array_size(tr.templates));
    }
    wh_translation_fini(&tr);
}

static int finish(struct ctx *c, FILE *out, struct gs_error *err)
{
    int r = 0;
    if (c->broken) {
        r = gs_error_set(err, -EPROTO, "a generated JSON Patch did not apply (see above)");
    } else {
        json_array_extend(c->templates, c->items);
        json_t *list =
            json_pack("{s:s,s:s,s:O}", "apiVersion", "v1", "kind", "List", "items", c->templates);
        char *text = list ? json_dumps(list, JSON_INDENT(2)) : NULL;
        if (text) {
            fputs(text, out);
            fputc('\n', out);
        } else {
            r = gs_error_set(err, -ENOMEM, "out of memory");
        }
        free(text);
        json_decref(list);
        if (r == 0)
            r = c->denied;
    }
    json_decref(c->templates);
    json_decref(c->items);
    return r;
}

/* Parse one text and translate its documents into c. */
static int add_text(struct ctx *c, const char *name, const char *text, size_t len,
                    struct gs_error *err)
{
    json_t *docs = NULL;
    int r = gs_yaml_load_documents(text, len, &docs, err);
    if (r < 0)
        return gs_error_prefix(err, "%s: ", name), r;
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        translate_doc(c, name, i, doc);
        json_array_append(c->items, doc);
    }
    json_decref(docs);
    return 0;
}

int wh_preview_text(const struct wh_preview_config *cfg, const char *name, const char *text,
                    size_t len, FILE *out, FILE *diag, struct gs_error *err)
{
    struct ctx c = {.cfg = cfg, .diag = diag, .templates = json_array(), .items = json_array()};
    int r = add_text(&c, name, text, len, err);
    if (r < 0) {
        json_decref(c.templates);
        json_decref(c.items);
        return r;
    }
    return finish(&c, out, err);
}

int wh_preview(const struct wh_preview_config *cfg, char *const *files, size_t n_files, FILE *out,
               FILE *diag, struct gs_error *err)
{
    struct ctx c = {.cfg = cfg, .diag = diag, .templates = json_array(), .items = json_array()};
    for (size_t f = 0; f < n_files; f++) {
        const char *path = strcmp(files[f], "-") == 0 ? "/dev/stdin" : files[f];
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = gs_read_file(path, WH_PREVIEW_MAX_FILE, &text, &len, err);
        if (r < 0)
            gs_error_prefix(err, "%s: ", files[f]);
        else
            r = add_text(&c, files[f], text, len, err);
        if (r < 0) {
            json_decref(c.templates);
            json_decref(c.items);
            return r;
        }
    }
    return finish(&c, out, err);
}
