/* SPDX-License-Identifier: Apache-2.0 */
/* Pod walk: legacy containers -> pod claims, container claims and the JSON Patch. */
#include "webhook/translate.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdarg.h>
#include <stdlib.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/macros.h"
#include "webhook/selector.h"
#include "webhook/vendor.h"
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

/* HAMi-DRA's label on every pod (and Volcano job) it mutates (pkg/constants DraLabel). */
#define DRA_LABEL_TOKEN "hami.io~1dra"

struct legacy_ctr {
    const char *list; /* "initContainers" | "containers" */
    size_t index;
    const json_t *ctr;
    bool nv; /* an NVIDIA claim */
    struct wh_legacy l;
    size_t n_vendor; /* vendor claims: vl[i].has_count */
    struct wh_legacy vl[WH_VENDORS_MAX];
};

/* One pod (or pod template) being translated. */
struct target {
    const struct wh_names *names;
    const struct wh_cluster_ops *ops;
    const char *ns;
    const json_t *meta, *spec, *claims, *annotations;
    const char *base;       /* JSON Pointer of the pod object ("" for a Pod) */
    const char *job_prefix; /* Volcano: templates "<job_prefix>-<container>-<vendor>" */
    struct wh_translation *out;
    json_t *patch, *added, *selectors;
    enum wh_topology topology;
    int64_t sizes[WH_MEM_SIZES_MAX];
    size_t n_sizes;
    struct legacy_ctr *ctrs;
    size_t n_legacy;
};

static bool nvidia_on(const struct wh_names *n)
{
    return !n->vendors || n->vendors->nvidia;
}

static void vendor_names(const struct wh_vendor *v, struct wh_names *vn)
{
    /* "" never names a resource: a vendor without memory or cores resources reads none. */
    *vn = (struct wh_names){.gpu = v->count, .mem = v->mem, .mem_pct = "", .cores = v->cores};
}

static void what_of(const struct legacy_ctr *lc, const char *cn, char *buf, size_t len)
{
    snprintf(buf, len, "%s \"%.64s\"",
             strcmp(lc->list, "initContainers") == 0 ? "init container" : "container",
             cn ? cn : "");
}

/* Pass 1: which containers carry legacy resources of a translated vendor, and are they valid? */
static int read_containers(struct target *t, bool *any_pct, struct gs_error *err)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const struct wh_names *names = t->names;
    const struct wh_vendors *vt = names->vendors;
    *any_pct = false;
    for (size_t l = 0; l < GS_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(t->spec, lists[l]), i, c)
        {
            struct legacy_ctr *lc = &t->ctrs[t->n_legacy];
            const char *cn = json_string_value(json_object_get(c, "name"));
            const json_t *res = json_object_get(c, "resources");
            char what[128];
            *lc = (struct legacy_ctr){.list = lists[l], .index = i, .ctr = c};
            what_of(lc, cn, what, sizeof(what));
            int r = 0;
            if (nvidia_on(names)) {
                r = wh_legacy_read(res, names, what, &lc->l, err);
                if (r < 0)
                    return r;
                lc->nv = wh_legacy_any(&lc->l);
                if (lc->nv && !lc->l.has_count) {
                    if (names->default_count == 0) {
                        /* HAMi-DRA converts only containers that name the count resource. */
                        lc->nv = false;
                        add_warning(t->out,
                                    "%s asks %s or %s without %s: left as it is (--default-gpu "
                                    "0); add %s to have it translated",
                                    what, names->mem, names->cores, names->gpu, names->gpu);
                    } else {
                        lc->l.count = names->default_count;
                    }
                }
            }
            for (size_t v = 0; vt && v < vt->n; v++) {
                struct wh_names vn;
                vendor_names(&vt->v[v], &vn);
                if ((r = wh_legacy_read(res, &vn, what, &lc->vl[v], err)) < 0)
                    return r;
                /* HAMi-DRA handleContainer: a vendor's claim only where its count is named. */
                lc->n_vendor += lc->vl[v].has_count;
            }
            if (!lc->nv && lc->n_vendor == 0)
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
            *any_pct |= lc->nv && lc->l.has_pct;
            t->n_legacy++;
        }
    }
    return 0;
}

/*
 * Should the pod stay as it is? 1 (with a warning where useful), 0, or a negative code:
 * it already has a claim of ours; it carries HAMi-DRA's label (translated before: the pods
 * Volcano creates from a translated job); or (issue 25, DRAExtendedResource) a DeviceClass maps
 * nvidia.com/gpu through extendedResourceName and the pod asks whole GPUs only, which the
 * scheduler then turns into a claim itself.
 */
static int left_alone(struct target *t, struct gs_error *err)
{
    const struct wh_names *names = t->names;
    char own[128];
    int r = has_own_claim(names, t->ops, t->ns, t->claims, own, sizeof(own), err);
    if (r < 0)
        return r;
    if (r > 0) {
        add_warning(t->out,
                    "pod already has claim \"%s\" for device class %s; its %s resources were "
                    "left as they are",
                    own, names->device_class, names->gpu);
        return 1;
    }
    const char *dra =
        json_string_value(json_object_get(json_object_get(t->meta, "labels"), "hami.io/dra"));
    if (dra && strcmp(dra, "true") == 0) {
        add_warning(t->out,
                    "pod carries hami.io/dra=true (translated before, or made from a translated "
                    "Volcano job): its remaining legacy resources were left as they are");
        return 1;
    }
    bool whole_only = true;
    for (size_t k = 0; k < t->n_legacy && whole_only; k++) {
        const struct legacy_ctr *lc = &t->ctrs[k];
        whole_only = lc->n_vendor == 0 && lc->nv && lc->l.has_count && !lc->l.has_mem &&
                     !lc->l.has_pct && !lc->l.has_cores;
    }
    static const char *const steering[] = {WH_ANN_USE_UUID, WH_ANN_NOUSE_UUID, WH_ANN_USE_TYPE,
                                           WH_ANN_NOUSE_TYPE, WH_ANN_TOPOLOGY};
    for (size_t a = 0; a < GS_ARRAY_SIZE(steering) && whole_only; a++)
        whole_only = !json_object_get(t->annotations, steering[a]);
    char cls[256];
    if (whole_only && t->job_prefix == NULL && t->ops && t->ops->extended_resource_class &&
        t->ops->extended_resource_class(t->ops->user, t->ops->deadline_ms, names->gpu, cls,
                                        sizeof(cls)) > 0) {
        add_warning(t->out,
                    "DeviceClass %s maps %s through extendedResourceName: the pod asks whole "
                    "GPUs only and is left to the scheduler, which makes its claim "
                    "(DRAExtendedResource)",
                    cls, names->gpu);
        return 1;
    }
    return 0;
}

/* NVIDIA selectors, topology and (for percentages) the cluster's memory sizes. */
static int nvidia_inputs(struct target *t, bool any_pct, struct gs_error *err)
{
    const struct wh_names *names = t->names;
    int r = parse_topology(t->annotations, &t->topology, err);
    if (r < 0)
        return r;
    if (!nvidia_on(names))
        return 0;
    r = wh_selectors_build(&wh_nvidia_selector_keys, t->annotations, names->driver,
                           names->type_match, true, t->selectors, err);
    if (r < 0 || !any_pct)
        return r;
    const struct wh_cluster_ops *ops = t->ops;
    if (!ops || !ops->memory_sizes)
        r = gs_error_set(err, -EINVAL,
                         "%s needs the GPU memory sizes of the cluster's ResourceSlices, and "
                         "no API server is configured",
                         names->mem_pct);
    else
        r = ops->memory_sizes(ops->user, ops->deadline_ms, t->sizes, GS_ARRAY_SIZE(t->sizes),
                              &t->n_sizes, err);
    if (r < 0)
        return gs_error_prefix(err, "%s: ", names->mem_pct), r;
    if (t->n_sizes > GS_ARRAY_SIZE(t->sizes))
        return gs_error_set(err, -EINVAL,
                            "%s: the cluster publishes %zu distinct GPU memory sizes, more than "
                            "the %d firstAvailable subrequests a claim may have",
                            names->mem_pct, t->n_sizes, WH_MAX_SUBREQUESTS);
    return 0;
}

/* HAMi-DRA truncateDNS1123Label: names over 63 keep a prefix and 8 hex digits of SHA-256. */
static void dns_label_truncate(char *name, size_t len)
{
    if (strlen(name) <= DNS_LABEL_MAX)
        return;
    unsigned char d[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, name, strlen(name), d) < 0)
        memset(d, 0, sizeof(d));
    size_t keep = DNS_LABEL_MAX - 9;
    while (keep > 0 && name[keep - 1] == '-')
        keep--;
    snprintf(name + keep, len - keep, "-%02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
}

/*
 * One claim of container `lc`: the template (by the hash of its spec, or for a Volcano job
 * "<job_prefix>-<container>-<suffix>"), the pod claim "<prefix>-<container>" appended to
 * t->added and its name to `ctr_claims`. Takes `cspec`.
 */
static int add_claim(struct target *t, const struct legacy_ctr *lc, const char *prefix,
                     const char *suffix, json_t *cspec, const char *key, size_t klen,
                     json_t *ctr_claims, struct gs_error *err)
{
    const char *cn = json_string_value(json_object_get(lc->ctr, "name"));
    char what[128], tpl[2 * DNS_LABEL_MAX + 64], hex[65], cname[2 * DNS_LABEL_MAX + 8];
    what_of(lc, cn, what, sizeof(what));
    if (spec_hash(cspec, key, klen, hex) < 0) {
        json_decref(cspec);
        return gs_error_set(err, -EIO, "%s: cannot hash the claim shape", what);
    }
    if (t->job_prefix) {
        snprintf(tpl, sizeof(tpl), "%s-%s-%s", t->job_prefix, cn, suffix);
        dns_label_truncate(tpl, sizeof(tpl));
    } else {
        snprintf(tpl, sizeof(tpl), "%s%.20s", WH_TEMPLATE_PREFIX, hex);
    }
    bool known = false;
    size_t i;
    json_t *tp;
    json_array_foreach(t->out->templates, i, tp) known |=
        strcmp(json_string_value(json_object_get(json_object_get(tp, "metadata"), "name")), tpl) ==
        0;
    if (!known) {
        json_t *obj = wh_template_object_hashed(tpl, t->ns, cspec, hex);
        if (obj && t->job_prefix) {
            json_t *m = json_object_get(obj, "metadata");
            json_object_set_new(json_object_get(m, "labels"), "hami.io/dra", json_string("true"));
            json_object_set_new(json_object_get(m, "annotations"), WH_ANN_VOLCANO_JOB,
                                json_string(t->job_prefix));
        }
        json_array_append_new(t->out->templates, obj);
    }
    json_decref(cspec);
    if (json_array_size(t->out->templates) > WH_MAX_TEMPLATES_PER_POD)
        return gs_error_set(err, -EINVAL,
                            "%s: the pod needs more than %d distinct GPU claim shapes; give "
                            "containers the same resources or split the pod",
                            what, WH_MAX_TEMPLATES_PER_POD);
    char full[DNS_LABEL_MAX + 64];
    snprintf(full, sizeof(full), "%s-", prefix);
    if (strlen(full) + strlen(cn) <= DNS_LABEL_MAX)
        snprintf(cname, sizeof(cname), "%s%s", full, cn);
    else
        snprintf(cname, sizeof(cname), "%s%.*s-%08" PRIx32, full,
                 (int)(DNS_LABEL_MAX - 9 - strlen(full)), cn, fnv1a(cn));
    if (name_taken(t->claims, t->added, cname))
        return gs_error_set(err, -EINVAL,
                            "%s: the pod already has a claim named \"%s\"; rename it or the "
                            "container",
                            what, cname);
    json_array_append_new(t->added,
                          json_pack("{s:s,s:s}", "name", cname, "resourceClaimTemplateName", tpl));
    json_array_append_new(ctr_claims, json_pack("{s:s}", "name", cname));
    return 0;
}

/* The claims of one container: NVIDIA's, then one per vendor it asks. */
static int container_claims(struct target *t, const struct legacy_ctr *lc, json_t *ctr_claims,
                            struct gs_error *err)
{
    const struct wh_names *names = t->names;
    const char *cn = json_string_value(json_object_get(lc->ctr, "name"));
    char what[128];
    what_of(lc, cn, what, sizeof(what));
    int r = 0;
    if (lc->nv) {
        json_t *cspec = NULL;
        /* The DRA path asks cores only when the container names them (HAMi-DRA). */
        struct wh_names dra = *names;
        dra.cores_only_when_named = true;
        r = wh_claim_spec_build(&lc->l, &dra, t->selectors, t->topology, t->sizes, t->n_sizes, what,
                                &cspec, err);
        if (r < 0)
            return r;
        if (t->topology != WH_TOPOLOGY_NONE && lc->l.count < 2)
            add_warning(t->out,
                        "%s: annotation %s applies to 2 or more GPUs; ignored for %" PRId64 " GPU",
                        what, WH_ANN_TOPOLOGY, lc->l.count);
        static _Thread_local char key[MEMO_KEY_MAX];
        size_t klen = memo_key(key, sizeof(key), &lc->l, names, t->selectors, t->topology, t->sizes,
                               t->n_sizes);
        if ((r = add_claim(t, lc, "gpu", "nvidia", cspec, key, klen, ctr_claims, err)) < 0)
            return r;
    }
    const struct wh_vendors *vt = names->vendors;
    for (size_t v = 0; vt && v < vt->n; v++) {
        const struct wh_vendor *ven = &vt->v[v];
        const struct wh_legacy *l = &lc->vl[v];
        if (!l->has_count)
            continue;
        const struct wh_selector_keys keys = {ven->use_uuid, ven->nouse_uuid, ven->use_type,
                                              ven->nouse_type};
        json_t *sels = json_array(), *cspec = NULL;
        /* HAMi-DRA compares the other vendors' types exactly (addAnnotationSelectors). */
        r = wh_selectors_build(&keys, t->annotations, ven->driver, WH_TYPE_MATCH_EXACT, true, sels,
                               err);
        if (r == 0)
            r = wh_vendor_claim_spec(ven, l->count, l->has_mem, l->mem_mib, l->has_cores, l->cores,
                                     sels, what, &cspec, err);
        json_decref(sels);
        if (r == 0)
            r = add_claim(t, lc, ven->suffix, ven->suffix, cspec, NULL, 0, ctr_claims, err);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Is `key` a resource this container's claims replace? */
static bool replaced(const struct target *t, const struct legacy_ctr *lc, const char *key)
{
    if (lc->nv && wh_is_legacy_name(t->names, key))
        return true;
    const struct wh_vendors *vt = t->names->vendors;
    for (size_t v = 0; vt && v < vt->n; v++) {
        const struct wh_vendor *ven = &vt->v[v];
        if (lc->vl[v].has_count &&
            (strcmp(key, ven->count) == 0 || (ven->mem[0] && strcmp(key, ven->mem) == 0) ||
             (ven->cores[0] && strcmp(key, ven->cores) == 0)))
            return true;
    }
    return false;
}

/* Remove the replaced names from resources.<field>; the whole map when nothing else is left. */
static int remove_replaced(struct target *t, const struct legacy_ctr *lc, const json_t *resources,
                           const char *base, const char *field)
{
    const json_t *map = json_object_get(resources, field);
    const char *key;
    json_t *v;
    size_t n = 0;
    char path[1024], tok[512];
    if (!json_is_object(map))
        return 0;
    json_object_foreach((json_t *)map, key, v) n += replaced(t, lc, key);
    if (n == 0)
        return 0;
    if (n == json_object_size(map)) {
        snprintf(path, sizeof(path), "%s/%s", base, field);
        return add_op(t->patch, "remove", path, NULL);
    }
    json_object_foreach((json_t *)map, key, v)
    {
        if (!replaced(t, lc, key))
            continue;
        if (wh_json_pointer_escape(key, tok, sizeof(tok)) < 0)
            return -ENAMETOOLONG;
        snprintf(path, sizeof(path), "%s/%s/%s", base, field, tok);
        int r = add_op(t->patch, "remove", path, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The container's patch: replaced resources removed, its claims added. */
static int container_patch(struct target *t, const struct legacy_ctr *lc, json_t *ctr_claims,
                           struct gs_error *err)
{
    const json_t *res = json_object_get(lc->ctr, "resources");
    char base[256], path[300];
    int r;
    snprintf(base, sizeof(base), "%s/spec/%s/%zu/resources", t->base, lc->list, lc->index);
    if ((r = remove_replaced(t, lc, res, base, "limits")) < 0 ||
        (r = remove_replaced(t, lc, res, base, "requests")) < 0)
        return gs_error_set(err, r, "container #%zu: resource name too long", lc->index);
    if (json_is_array(json_object_get(res, "claims"))) {
        size_t i;
        json_t *c;
        snprintf(path, sizeof(path), "%s/claims/-", base);
        json_array_foreach(ctr_claims, i,
                           c) if ((r = add_op(t->patch, "add", path, json_incref(c))) < 0) break;
    } else {
        snprintf(path, sizeof(path), "%s/claims", base);
        r = add_op(t->patch, "add", path, json_incref(ctr_claims));
    }
    return r < 0 ? gs_error_set(err, r, "out of memory") : 0;
}

/* `value` at <base>/metadata/labels/<token>, creating the map (or metadata) when absent. */
static int add_label(json_t *patch, const char *base, const json_t *meta, const char *token,
                     const char *key, const char *value)
{
    char path[400];
    if (json_is_object(json_object_get(meta, "labels"))) {
        snprintf(path, sizeof(path), "%s/metadata/labels/%s", base, token);
        return add_op(patch, "add", path, json_string(value));
    }
    if (json_is_object(meta)) {
        snprintf(path, sizeof(path), "%s/metadata/labels", base);
        return add_op(patch, "add", path, json_pack("{s:s}", key, value));
    }
    snprintf(path, sizeof(path), "%s/metadata", base);
    return add_op(patch, "add", path, json_pack("{s:{s:s}}", "labels", key, value));
}

/* The runtime class of the vendors the pod now uses (HAMi's runtimeClassName setting). */
static int runtime_class(struct target *t, json_t *ops_out)
{
    const char *want = NULL;
    const struct wh_vendors *vt = t->names->vendors;
    for (size_t k = 0; k < t->n_legacy && !want; k++) {
        const struct legacy_ctr *lc = &t->ctrs[k];
        if (lc->nv && t->names->runtime_class && t->names->runtime_class[0])
            want = t->names->runtime_class;
        for (size_t v = 0; vt && v < vt->n && !want; v++)
            if (lc->vl[v].has_count && vt->v[v].runtime_class[0])
                want = vt->v[v].runtime_class;
    }
    if (!want)
        return 0;
    const char *have = json_string_value(json_object_get(t->spec, "runtimeClassName"));
    if (have && strcmp(have, want) != 0) {
        add_warning(t->out,
                    "spec.runtimeClassName is %.64s; the device configuration names %s "
                    "for these devices: kept as it is",
                    have, want);
        return 0;
    }
    if (have)
        return 0;
    char path[300];
    snprintf(path, sizeof(path), "%s/spec/runtimeClassName", t->base);
    return add_op(ops_out, "add", path, json_string(want));
}

/* Pod claims first (the containers' claims reference them), then the containers' patch, the
 * label, the runtime class; appended to out->patch. */
static int assemble(struct target *t)
{
    json_t *ops_first = json_array();
    char path[300];
    int r = 0;
    if (!ops_first)
        return -ENOMEM;
    if (json_is_array(t->claims)) {
        size_t i;
        json_t *c;
        snprintf(path, sizeof(path), "%s/spec/resourceClaims/-", t->base);
        json_array_foreach(t->added, i, c) if (r == 0) r =
            add_op(ops_first, "add", path, json_incref(c));
    } else {
        snprintf(path, sizeof(path), "%s/spec/resourceClaims", t->base);
        r = add_op(ops_first, "add", path, json_incref(t->added));
    }
    if (r == 0)
        r = json_array_extend(ops_first, t->patch) < 0 ? -ENOMEM : 0;
    if (r == 0)
        r = add_label(ops_first, t->base, t->meta, DRA_LABEL_TOKEN, "hami.io/dra", "true");
    if (r == 0)
        r = runtime_class(t, ops_first);
    if (r == 0 && !t->out->patch)
        t->out->patch = json_array();
    if (r == 0)
        r = json_array_extend(t->out->patch, ops_first) < 0 ? -ENOMEM : 0;
    json_decref(ops_first);
    return r;
}

static void advisories(struct target *t)
{
    const struct wh_names *names = t->names;
    const struct wh_cluster_ops *ops = t->ops;
    const char *used[4] = {names->gpu, names->mem, names->mem_pct, names->cores};
    for (size_t u = 0; nvidia_on(names) && ops && ops->extended_resource_class && u < 4; u++) {
        bool in_pod = false;
        for (size_t k = 0; k < t->n_legacy && !in_pod; k++) {
            const json_t *res = json_object_get(t->ctrs[k].ctr, "resources");
            in_pod = t->ctrs[k].nv && (json_object_get(json_object_get(res, "limits"), used[u]) ||
                                       json_object_get(json_object_get(res, "requests"), used[u]));
        }
        char cls[256];
        if (in_pod && ops->extended_resource_class(ops->user, ops->deadline_ms, used[u], cls,
                                                   sizeof(cls)) > 0)
            add_warning(t->out,
                        "DeviceClass %s maps %s through extendedResourceName; the pod asks GPU "
                        "memory or cores (or names GPUs) and was translated to "
                        "ResourceClaimTemplates by gpuslice-webhook",
                        cls, used[u]);
    }
    const char *node = json_string_value(json_object_get(t->spec, "nodeName"));
    if (node && *node)
        add_warning(t->out,
                    "spec.nodeName is set (%.64s): the scheduler does not run for this pod, "
                    "so its GPU claims will not be allocated",
                    node);
}

int wh_translate_target(const struct wh_names *names, const struct wh_cluster_ops *ops,
                        const char *ns, const json_t *meta, const json_t *spec, const char *base,
                        const char *job_prefix, struct wh_translation *out, struct gs_error *err)
{
    struct target t = {.names = names,
                       .ops = ops,
                       .ns = ns,
                       .meta = meta,
                       .spec = spec,
                       .claims = json_object_get(spec, "resourceClaims"),
                       .annotations = json_object_get(meta, "annotations"),
                       .base = base,
                       .job_prefix = job_prefix,
                       .out = out};
    if (!json_is_object(spec))
        return gs_error_set(err, -EINVAL, "pod: spec is missing or not an object");
    size_t n_ctr = json_array_size(json_object_get(spec, "initContainers")) +
                   json_array_size(json_object_get(spec, "containers"));
    if (n_ctr == 0)
        return 0;
    _cleanup_free_ struct legacy_ctr *ctrs = calloc(n_ctr, sizeof(*ctrs));
    if (!ctrs)
        return gs_error_set(err, -ENOMEM, "out of memory");
    t.ctrs = ctrs;
    bool any_pct;
    int r = read_containers(&t, &any_pct, err);
    if (r < 0 || t.n_legacy == 0)
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): ctrs is _cleanup_ (layers.md Lint) */
        return r;
    if ((r = left_alone(&t, err)) != 0)
        return r < 0 ? r : 0;
    t.selectors = json_array();
    t.patch = json_array();
    t.added = json_array();
    if (!t.selectors || !t.patch || !t.added)
        r = gs_error_set(err, -ENOMEM, "out of memory");
    if (r == 0)
        r = nvidia_inputs(&t, any_pct, err);
    for (size_t k = 0; r == 0 && k < t.n_legacy; k++) {
        json_t *ctr_claims = json_array();
        r = container_claims(&t, &ctrs[k], ctr_claims, err);
        if (r == 0)
            r = container_patch(&t, &ctrs[k], ctr_claims, err);
        json_decref(ctr_claims);
    }
    if (r == 0 && (r = assemble(&t)) < 0)
        r = gs_error_set(err, r, "out of memory");
    if (r == 0)
        advisories(&t);
    json_decref(t.selectors);
    json_decref(t.patch);
    json_decref(t.added);
    return r;
}

int wh_translate_pod(const struct wh_names *names, const struct wh_cluster_ops *ops, const char *ns,
                     const json_t *pod, struct wh_translation *out, struct gs_error *err)
{
    *out = (struct wh_translation){.templates = json_array(), .warnings = json_array()};
    if (!out->templates || !out->warnings)
        return gs_error_set(err, -ENOMEM, "out of memory");
    int r = wh_translate_target(names, ops, ns, json_object_get(pod, "metadata"),
                                json_object_get(pod, "spec"), "", NULL, out, err);
    if (r < 0) {
        json_decref(out->patch);
        out->patch = NULL;
    }
    return r;
}
