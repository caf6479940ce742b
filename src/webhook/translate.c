/* SPDX-License-Identifier: Apache-2.0 */
/* Pod walk: legacy containers -> pod claims, container claims and the JSON Patch. */
#include "webhook/translate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/macros.h"
#include "webhook/selector.h"
#include "webhook/template.h"

#define POD_CLAIM_PREFIX "gpu-"
#define DNS_LABEL_MAX    63

void wh_translation_fini(struct wh_translation *t)
{
    if (!t)
        return;
    json_decref(t->patch);
    json_decref(t->templates);
    json_decref(t->warnings);
    *t = (struct wh_translation){0};
}

int wh_json_pointer_escape(const char *token, char *buf, size_t len)
{
    size_t o = 0;
    for (const char *p = token; *p; p++) {
        const char *rep = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
        size_t n = rep ? 2 : 1;
        if (o + n >= len)
            return -ENOSPC;
        if (rep)
            memcpy(buf + o, rep, 2);
        else
            buf[o] = *p;
        o += n;
    }
    if (o >= len)
        return -ENOSPC;
    buf[o] = '\0';
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

static int add_op(json_t *patch, const char *op, const char *path, json_t *value)
{
    json_t *o = value ? json_pack("{s:s,s:s,s:o}", "op", op, "path", path, "value", value)
                      : json_pack("{s:s,s:s}", "op", op, "path", path);
    if (!o || json_array_append_new(patch, o) < 0)
        return -ENOMEM;
    return 0;
}

/* Remove the legacy names from resources.<field>; the whole map when nothing else is left. */
static int remove_legacy(json_t *patch, const struct wh_names *names, const json_t *resources,
                         const char *base, const char *field)
{
    const json_t *map = json_object_get(resources, field);
    const char *key;
    json_t *v;
    size_t n_legacy = 0;
    char path[1024], tok[512];
    if (!json_is_object(map))
        return 0;
    json_object_foreach((json_t *)map, key, v) n_legacy += wh_is_legacy_name(names, key);
    if (n_legacy == 0)
        return 0;
    if (n_legacy == json_object_size(map)) {
        snprintf(path, sizeof(path), "%s/%s", base, field);
        return add_op(patch, "remove", path, NULL);
    }
    json_object_foreach((json_t *)map, key, v)
    {
        if (!wh_is_legacy_name(names, key))
            continue;
        if (wh_json_pointer_escape(key, tok, sizeof(tok)) < 0)
            return -ENAMETOOLONG;
        snprintf(path, sizeof(path), "%s/%s/%s", base, field, tok);
        int r = add_op(patch, "remove", path, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

/* A DNS-1123 label (RFC 1123): what Kubernetes requires of a container name, and what makes
 * "gpu-<name>" a valid claim name and a safe JSON Pointer token. */
bool wh_is_dns_label(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > DNS_LABEL_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i < n - 1))
            return false;
    }
    return true;
}

/* `s` for a message: at most 64 characters, `"` and `\` escaped, control bytes as \xNN. */
static void quote_value(char *buf, size_t len, const char *s)
{
    size_t o = 0, i = 0;
    for (; s[i] && i < 64 && o + 5 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    if (s[i] && o + 4 < len)
        buf[o++] = '.', buf[o++] = '.', buf[o++] = '.';
    buf[o] = '\0';
}

/*
 * The claim spec's hash, memoised by what determines the spec: hashing means a key-sorted
 * serialisation, the largest cost of a translation (bench/webhook). The key holds every input
 * of wh_claim_spec_build as text, so equal keys mean equal specs; a direct-mapped table, an
 * entry replaced on collision. Keys that do not fit are simply not memoised.
 */
#define MEMO_SLOTS   256
#define MEMO_KEY_MAX 2048

struct hash_memo {
    size_t klen;
    char key[MEMO_KEY_MAX];
    char hex[65];
};

static struct hash_memo memo[MEMO_SLOTS];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t memo_key(char *buf, size_t cap, const struct wh_legacy *l,
                       const struct wh_names *names, const json_t *selectors,
                       enum wh_topology topology, const int64_t *sizes, size_t n_sizes)
{
    int n = snprintf(
        buf, cap, "%d:%" PRId64 ":%d:%" PRId64 ":%d:%" PRId64 ":%d:%" PRId64 ":%d:%s%c%s%c",
        l->has_count, l->count, l->has_mem, l->mem_mib, l->has_pct, l->pct, l->has_cores, l->cores,
        (int)topology, names->device_class, 0, names->driver, 0);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    size_t o = (size_t)n, i;
    json_t *sel;
    json_array_foreach((json_t *)selectors, i, sel)
    {
        const char *e =
            json_string_value(json_object_get(json_object_get(sel, "cel"), "expression"));
        size_t el = e ? strlen(e) : 0;
        if (o + el + 2 >= cap)
            return 0;
        memcpy(buf + o, e ? e : "", el);
        o += el;
        buf[o++] = '\0';
    }
    for (size_t k = 0; k < n_sizes; k++) {
        n = snprintf(buf + o, cap - o, "%" PRId64 ",", sizes[k]);
        if (n < 0 || (size_t)n >= cap - o)
            return 0;
        o += (size_t)n;
    }
    return o;
}

static uint32_t fnv1a_n(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* wh_claim_spec_hash(cspec), from the memo when the same inputs were hashed before. */
static int spec_hash(const json_t *cspec, const char *key, size_t klen, char hex[65])
{
    struct hash_memo *m = klen ? &memo[fnv1a_n(key, klen) % MEMO_SLOTS] : NULL;
    if (m) {
        pthread_mutex_lock(&memo_lock);
        bool hit = m->klen == klen && memcmp(m->key, key, klen) == 0;
        if (hit)
            memcpy(hex, m->hex, 65);
        pthread_mutex_unlock(&memo_lock);
        if (hit)
            return 0;
    }
    int r = wh_claim_spec_hash(cspec, hex);
    if (r == 0 && m) {
        pthread_mutex_lock(&memo_lock);
        memcpy(m->key, key, klen);
        m->klen = klen;
        memcpy(m->hex, hex, 65);
        pthread_mutex_unlock(&memo_lock);
    }
    return r;
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static bool name_taken(const json_t *claims, const json_t *added, const char *name)
{
    const json_t *lists[2] = {claims, added};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach((json_t *)lists[l], i,
                           c) if (json_is_string(json_object_get(c, "name")) &&
                                  strcmp(json_string_value(json_object_get(c, "name")), name) ==
                                      0) return true;
    }
    return false;
}

static void pod_claim_name(const char *ctr, char *buf, size_t len)
{
    if (strlen(POD_CLAIM_PREFIX) + strlen(ctr) <= DNS_LABEL_MAX)
        snprintf(buf, len, POD_CLAIM_PREFIX "%s", ctr);
    else
        snprintf(buf, len, POD_CLAIM_PREFIX "%.50s-%08" PRIx32, ctr, fnv1a(ctr));
}

static int parse_topology(const json_t *annotations, enum wh_topology *out, struct gs_error *err)
{
    const json_t *v = json_object_get(annotations, WH_ANN_TOPOLOGY);
    *out = WH_TOPOLOGY_NONE;
    if (!v)
        return 0;
    const char *s = json_string_value(v);
    if (s && strcmp(s, "nvlink") == 0)
        *out = WH_TOPOLOGY_NVLINK;
    else if (s && strcmp(s, "nvlink-preferred") == 0)
        *out = WH_TOPOLOGY_NVLINK_PREFERRED;
    else
        return gs_error_set(err, -EINVAL,
                            "annotation %s: \"%.64s\" is not one of nvlink, nvlink-preferred",
                            WH_ANN_TOPOLOGY, s ? s : "(not a string)");
    return 0;
}

/* Does the pod already carry a claim of its own for our device class? */
static int has_own_claim(const struct wh_names *names, const struct wh_cluster_ops *ops,
                         const char *ns, const json_t *claims, char *which, size_t len,
                         struct gs_error *err)
{
    size_t i;
    json_t *c;
    json_array_foreach((json_t *)claims, i, c)
    {
        const char *cname = json_string_value(json_object_get(c, "name"));
        const char *tpl = json_string_value(json_object_get(c, "resourceClaimTemplateName"));
        int r = 0;
        if (tpl && strncmp(tpl, WH_TEMPLATE_PREFIX, strlen(WH_TEMPLATE_PREFIX)) == 0)
            r = 1;
        else if (ops && ops->pod_claim_uses_class)
            r = ops->pod_claim_uses_class(ops->user, ops->deadline_ms, ns, c, names->device_class,
                                          err);
        if (r < 0)
            return gs_error_prefix(err, "pod claim \"%.64s\": ", cname ? cname : ""), r;
        if (r > 0) {
            snprintf(which, len, "%s", cname ? cname : "");
            return 1;
        }
    }
    return 0;
}

struct legacy_ctr {
    const char *list; /* "initContainers" | "containers" */
    size_t index;
    const json_t *ctr;
    struct wh_legacy l;
};

int wh_translate_pod(const struct wh_names *names, const struct wh_cluster_ops *ops, const char *ns,
                     const json_t *pod, struct wh_translation *out, struct gs_error *err)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const json_t *spec = json_object_get(pod, "spec");
    int r = 0;

    *out = (struct wh_translation){.templates = json_array(), .warnings = json_array()};
    if (!out->templates || !out->warnings)
        return gs_error_set(err, -ENOMEM, "out of memory");
    if (!json_is_object(spec))
        return gs_error_set(err, -EINVAL, "pod: spec is missing or not an object");

    /* Pass 1: which containers carry legacy resources (and are they valid)? */
    size_t n_ctr = 0, n_legacy = 0;
    for (size_t l = 0; l < GS_ARRAY_SIZE(lists); l++)
        n_ctr += json_array_size(json_object_get(spec, lists[l]));
    if (n_ctr == 0)
        return 0;
    _cleanup_free_ struct legacy_ctr *ctrs = calloc(n_ctr, sizeof(*ctrs));
    if (!ctrs)
        return gs_error_set(err, -ENOMEM, "out of memory");
    bool any_pct = false;
    for (size_t l = 0; l < GS_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            char what[128];
            const char *cn = json_string_value(json_object_get(c, "name"));
            snprintf(what, sizeof(what), "%s \"%.64s\"", l == 0 ? "init container" : "container",
                     cn ? cn : "");
            struct legacy_ctr *lc = &ctrs[n_legacy];
            r = wh_legacy_read(json_object_get(c, "resources"), names, what, &lc->l, err);
            if (r < 0)
                return r;
            if (!wh_legacy_any(&lc->l))
                continue;
            if (!wh_is_dns_label(cn)) {
                /* It becomes the claim name "gpu-<name>" and a JSON Pointer token: refuse what
                 * Kubernetes would refuse anyway, before it is used. */
                char q[300];
                quote_value(q, sizeof(q), cn ? cn : "");
                return gs_error_set(err, -EINVAL,
                                    "%s #%zu name \"%s\" is not a DNS-1123 label (lowercase "
                                    "letters, digits and '-', starting and ending with a letter or "
                                    "digit, at most 63 characters)",
                                    l == 0 ? "init container" : "container", i, q);
            }
            lc->list = lists[l], lc->index = i, lc->ctr = c;
            any_pct |= lc->l.has_pct;
            n_legacy++;
        }
    }
    if (n_legacy == 0)
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): ctrs is _cleanup_ (layers.md Lint) */
        return 0;

    const json_t *claims = json_object_get(spec, "resourceClaims");
    char own[128];
    r = has_own_claim(names, ops, ns, claims, own, sizeof(own), err);
    if (r < 0)
        return r;
    if (r > 0) {
        add_warning(
            out,
            "pod already has claim \"%s\" for device class %s; its %s resources were left as "
            "they are",
            own, names->device_class, names->gpu);
        return 0;
    }

    const json_t *annotations = json_object_get(json_object_get(pod, "metadata"), "annotations");
    enum wh_topology topology;
    if ((r = parse_topology(annotations, &topology, err)) < 0)
        return r;
    json_t *selectors = json_array();
    if (!selectors)
        return gs_error_set(err, -ENOMEM, "out of memory");
    r = wh_selectors_from_annotations(annotations, names->driver, selectors, err);

    int64_t sizes[WH_MEM_SIZES_MAX];
    size_t n_sizes = 0;
    if (r == 0 && any_pct) {
        if (!ops || !ops->memory_sizes)
            r = gs_error_set(err, -EINVAL,
                             "%s needs the GPU memory sizes of the cluster's ResourceSlices, and "
                             "no API server is configured",
                             names->mem_pct);
        else
            r = ops->memory_sizes(ops->user, ops->deadline_ms, sizes, GS_ARRAY_SIZE(sizes),
                                  &n_sizes, err);
        if (r < 0)
            gs_error_prefix(err, "%s: ", names->mem_pct);
        else if (n_sizes > GS_ARRAY_SIZE(sizes))
            r = gs_error_set(err, -EINVAL,
                             "%s: the cluster publishes %zu distinct GPU memory sizes, more than "
                             "the %d firstAvailable subrequests a claim may have",
                             names->mem_pct, n_sizes, WH_MAX_SUBREQUESTS);
    }

    json_t *patch = json_array(), *added = json_array();
    for (size_t k = 0; r == 0 && k < n_legacy; k++) {
        struct legacy_ctr *lc = &ctrs[k];
        const char *cn = json_string_value(json_object_get(lc->ctr, "name"));
        char what[128], tpl[WH_TEMPLATE_NAME_MAX], cname[DNS_LABEL_MAX + 8], base[128];
        json_t *cspec = NULL;
        snprintf(what, sizeof(what), "%s \"%.64s\"",
                 lc->list == lists[0] ? "init container" : "container", cn ? cn : "");
        r = wh_claim_spec_build(&lc->l, names, selectors, topology, sizes, n_sizes, what, &cspec,
                                err);
        if (r < 0)
            break;
        if (topology != WH_TOPOLOGY_NONE && lc->l.count < 2)
            add_warning(out,
                        "%s: annotation %s applies to 2 or more GPUs; ignored for %" PRId64 " GPU",
                        what, WH_ANN_TOPOLOGY, lc->l.count);
        char hex[65];
        static _Thread_local char key[MEMO_KEY_MAX];
        size_t klen =
            memo_key(key, sizeof(key), &lc->l, names, selectors, topology, sizes, n_sizes);
        if (spec_hash(cspec, key, klen, hex) < 0) {
            json_decref(cspec);
            r = gs_error_set(err, -EIO, "%s: cannot hash the claim shape", what);
            break;
        }
        snprintf(tpl, sizeof(tpl), "%s%.20s", WH_TEMPLATE_PREFIX, hex);
        bool known = false;
        size_t i;
        json_t *t;
        json_array_foreach(out->templates, i, t) known |=
            strcmp(json_string_value(json_object_get(json_object_get(t, "metadata"), "name")),
                   tpl) == 0;
        if (!known)
            json_array_append_new(out->templates, wh_template_object_hashed(tpl, ns, cspec, hex));
        json_decref(cspec);
        if (json_array_size(out->templates) > WH_MAX_TEMPLATES_PER_POD) {
            r = gs_error_set(err, -EINVAL,
                             "%s: the pod needs more than %d distinct GPU claim shapes; give "
                             "containers the same resources or split the pod",
                             what, WH_MAX_TEMPLATES_PER_POD);
            break;
        }

        pod_claim_name(cn ? cn : "", cname, sizeof(cname));
        if (name_taken(claims, added, cname)) {
            r = gs_error_set(err, -EINVAL,
                             "%s: the pod already has a claim named \"%s\"; rename it or the "
                             "container",
                             what, cname);
            break;
        }
        json_array_append_new(
            added, json_pack("{s:s,s:s}", "name", cname, "resourceClaimTemplateName", tpl));

        const json_t *res = json_object_get(lc->ctr, "resources");
        snprintf(base, sizeof(base), "/spec/%s/%zu/resources", lc->list, lc->index);
        if ((r = remove_legacy(patch, names, res, base, "limits")) < 0 ||
            (r = remove_legacy(patch, names, res, base, "requests")) < 0) {
            r = gs_error_set(err, r, "%s: resource name too long", what);
            break;
        }
        char path[160];
        json_t *entry = json_pack("{s:s}", "name", cname);
        if (json_is_array(json_object_get(res, "claims"))) {
            snprintf(path, sizeof(path), "%s/claims/-", base);
            r = add_op(patch, "add", path, entry);
        } else {
            snprintf(path, sizeof(path), "%s/claims", base);
            r = add_op(patch, "add", path, json_pack("[o]", entry));
        }
        if (r < 0)
            r = gs_error_set(err, r, "out of memory");
    }
    json_decref(selectors);

    if (r == 0) {
        /* The pod's claims go first: the containers' claims reference them. */
        json_t *ops_first = json_array();
        if (json_is_array(claims)) {
            size_t i;
            json_t *c;
            json_array_foreach(added, i, c)
                add_op(ops_first, "add", "/spec/resourceClaims/-", json_incref(c));
        } else {
            add_op(ops_first, "add", "/spec/resourceClaims", json_incref(added));
        }
        json_array_extend(ops_first, patch);
        json_decref(patch);
        patch = ops_first;

        const char *used[4] = {names->gpu, names->mem, names->mem_pct, names->cores};
        for (size_t u = 0; ops && ops->extended_resource_class && u < 4; u++) {
            bool in_pod = false;
            for (size_t k = 0; k < n_legacy && !in_pod; k++) {
                const json_t *res = json_object_get(ctrs[k].ctr, "resources");
                in_pod = json_object_get(json_object_get(res, "limits"), used[u]) ||
                         json_object_get(json_object_get(res, "requests"), used[u]);
            }
            char cls[256];
            if (in_pod && ops->extended_resource_class(ops->user, ops->deadline_ms, used[u], cls,
                                                       sizeof(cls)) > 0)
                add_warning(out,
                            "DeviceClass %s maps %s through extendedResourceName; the pod was "
                            "translated to ResourceClaimTemplates by gpuslice-webhook anyway",
                            cls, used[u]);
        }
        const char *node = json_string_value(json_object_get(spec, "nodeName"));
        if (node && *node)
            add_warning(out,
                        "spec.nodeName is set (%.64s): the scheduler does not run for this pod, "
                        "so its GPU claims will not be allocated",
                        node);
        out->patch = TAKE_PTR(patch);
    }
    json_decref(patch);
    json_decref(added);
    return r;
}
