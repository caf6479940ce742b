/* SPDX-License-Identifier: Apache-2.0 */
/* API access with TTL caches: slices' memory sizes, DeviceClasses, templates known to exist. */
#include "webhook/cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/macros.h"
#include "config/quantity.h"
#include "kube/http.h"
#include "webhook/deadline.h"
#include "webhook/shape.h"
#include "webhook/template.h"

#define TEMPLATE_SLOTS 4096 /* power of two; cleared when half full */
#define KEY_MAX        320  /* namespace (63) + '/' + name (253) + NUL */

struct template_slot {
    char key[KEY_MAX];
    uint64_t expires_ms;
};

/* A list kept for a TTL and refreshed by one call at a time, made by the admission that missed
 * first under its own deadline (concurrent misses wait for it, each only until its own
 * deadline, and try themselves when the refresher's deadline cut it short). */
struct cached_list {
    const char *what; /* "ResourceSlices" */
    pthread_mutex_t lock;
    pthread_cond_t refreshed;
    bool refreshing;
    bool cache_failures; /* a failed list also waits out the TTL (advisory data) */
    uint64_t generation; /* +1 per finished refresh */
    uint64_t expires_ms; /* 0 = never fetched */
    uint64_t ttl_ms;
    int last_code;
    struct gs_error last_err;
    int (*fetch)(struct wh_cluster *c, uint64_t deadline_ms, json_t **list, struct gs_error *err);
    void (*store)(struct wh_cluster *c, const json_t *list); /* called under lock */
};

struct wh_cluster {
    struct gs_k8s_client *client;
    char *driver;
    uint64_t template_ttl_ms;

    struct cached_list sizes_list;
    int64_t sizes[WH_MEM_SIZES_MAX];
    size_t n_sizes;

    struct cached_list classes_list;
    json_t *classes; /* {"<extendedResourceName>": "<DeviceClass name>"} */

    pthread_mutex_t templates_lock;
    struct template_slot *slots;
    size_t n_slots_used;

    _Atomic uint64_t created, existing, cache_hits, api_errors;
};

/* GET of a cluster-scoped list under the admission's deadline (one page: the lists the webhook
 * reads are its driver's slices and the DeviceClasses). */
static int list_by(struct wh_cluster *c, const struct gs_k8s_resource *res, const char *query,
                   uint64_t deadline_ms, json_t **list, struct gs_error *err)
{
    char path[1024];
    struct gs_k8s_call_opts o;
    int r = gs_k8s_path(path, sizeof(path), res, NULL, NULL, NULL, err);
    if (r < 0)
        return r;
    if (query && (size_t)snprintf(path + strlen(path), sizeof(path) - strlen(path), "?%s", query) >=
                     sizeof(path) - strlen(path))
        return gs_error_set(err, -ENAMETOOLONG, "list %s: query too long", res->plural);
    wh_call_opts(c->client, deadline_ms, &o);
    return gs_k8s_request_with(c->client, "GET", path, NULL, &o, list, NULL, err);
}

static int fetch_slices(struct wh_cluster *c, uint64_t deadline_ms, json_t **list,
                        struct gs_error *err)
{
    char sel[300], q[400];
    snprintf(sel, sizeof(sel), "spec.driver=%s", c->driver);
    _cleanup_free_ char *esc = gs_http_escape(sel);
    if (!esc)
        return gs_error_set(err, -ENOMEM, "out of memory");
    snprintf(q, sizeof(q), "fieldSelector=%s", esc);
    return list_by(c, &gs_k8s_resourceslices, q, deadline_ms, list, err);
}

static void store_slices(struct wh_cluster *c, const json_t *list)
{
    wh_slice_memory_sizes(list, c->driver, c->sizes, GS_ARRAY_SIZE(c->sizes), &c->n_sizes);
}

static int fetch_classes(struct wh_cluster *c, uint64_t deadline_ms, json_t **list,
                         struct gs_error *err)
{
    return list_by(c, &gs_k8s_deviceclasses, NULL, deadline_ms, list, err);
}

static void store_classes(struct wh_cluster *c, const json_t *list)
{
    size_t i;
    json_t *dc;
    json_object_clear(c->classes);
    json_array_foreach(json_object_get(list, "items"), i, dc)
    {
        const char *ern =
            json_string_value(json_object_get(json_object_get(dc, "spec"), "extendedResourceName"));
        const char *name =
            json_string_value(json_object_get(json_object_get(dc, "metadata"), "name"));
        if (ern && name)
            json_object_set_new(c->classes, ern, json_string(name));
    }
}

static void
cached_list_init(struct cached_list *l, const char *what, uint64_t ttl_ms, bool cache_failures,
                 int (*fetch)(struct wh_cluster *, uint64_t, json_t **, struct gs_error *),
                 void (*store)(struct wh_cluster *, const json_t *))
{
    pthread_mutex_init(&l->lock, NULL);
    gs_cond_init_monotonic(&l->refreshed);
    l->what = what, l->ttl_ms = ttl_ms, l->cache_failures = cache_failures;
    l->fetch = fetch, l->store = store;
}

static void cached_list_fini(struct cached_list *l)
{
    pthread_cond_destroy(&l->refreshed);
    pthread_mutex_destroy(&l->lock);
}

static int deadline_error(struct cached_list *l, struct gs_error *err)
{
    return gs_error_set(err, -ETIMEDOUT,
                        "listing %s: no answer from the API server before the admission deadline",
                        l->what);
}

/* Is what the last refresh left usable (l->lock held)? */
static bool usable(const struct cached_list *l)
{
    return l->last_code == 0 || (l->cache_failures && l->expires_ms);
}

/*
 * 0 with l->lock held when the list is fresh (the caller reads what store() derived, then
 * unlocks); a negative code (lock not held) when the refresh failed, or -ETIMEDOUT when no
 * answer came before deadline_ms. The first admission to miss lists, under its own deadline;
 * the others wait for it until theirs.
 */
static int cached_list_get(struct wh_cluster *c, struct cached_list *l, uint64_t deadline_ms,
                           struct gs_error *err)
{
    pthread_mutex_lock(&l->lock);
    for (;;) {
        if (l->expires_ms && gs_now_ms() < l->expires_ms)
            return 0;
        if (!l->refreshing) {
            l->refreshing = true;
            pthread_mutex_unlock(&l->lock);
            struct gs_error ferr = {0};
            json_t *list = NULL;
            int r = l->fetch(c, deadline_ms, &list, &ferr);
            if (r == -ETIMEDOUT) {
                deadline_error(l, &ferr);
            } else if (r < 0) {
                atomic_fetch_add(&c->api_errors, 1);
                gs_error_prefix(&ferr, "cannot list %s: ", l->what);
            }
            pthread_mutex_lock(&l->lock);
            if (r == 0)
                l->store(c, list);
            /* A deadline cut is this admission's, not the API server's answer: not cached. */
            if (r == 0 || (l->cache_failures && r != -ETIMEDOUT))
                l->expires_ms = gs_now_ms() + l->ttl_ms;
            l->last_code = r;
            l->last_err = ferr;
            l->refreshing = false;
            l->generation++;
            pthread_cond_broadcast(&l->refreshed);
            json_decref(list);
            if (usable(l))
                return 0;
            if (err)
                *err = ferr;
            pthread_mutex_unlock(&l->lock);
            return r;
        }
        uint64_t gen = l->generation;
        struct timespec ts = gs_timespec_ns(gs_sat_mul_u64(deadline_ms, GS_NSEC_PER_MSEC));
        while (l->generation == gen) {
            if (!deadline_ms) {
                pthread_cond_wait(&l->refreshed, &l->lock);
            } else if (gs_now_ms() >= deadline_ms ||
                       pthread_cond_timedwait(&l->refreshed, &l->lock, &ts) == ETIMEDOUT) {
                if (l->generation != gen)
                    break;
                pthread_mutex_unlock(&l->lock);
                return deadline_error(l, err);
            }
        }
        if (usable(l))
            return 0;
        if (l->last_code == -ETIMEDOUT)
            continue; /* the refresher's deadline, not ours: list ourselves */
        int r = l->last_code;
        if (err)
            *err = l->last_err;
        pthread_mutex_unlock(&l->lock);
        return r;
    }
}

struct wh_cluster *wh_cluster_new(struct gs_k8s_client *client, const struct wh_cluster_config *cfg)
{
    struct wh_cluster *c = calloc(1, sizeof(*c));
    if (c) {
        c->slots = calloc(TEMPLATE_SLOTS, sizeof(*c->slots));
        c->driver = strdup(cfg->driver ? cfg->driver : "");
        c->classes = json_object();
    }
    if (!c || !c->slots || !c->driver || !c->classes) {
        if (c) {
            free(c->slots);
            free(c->driver);
            json_decref(c->classes);
            free(c);
        }
        gs_k8s_client_free(client);
        return NULL;
    }
    c->client = client;
    c->template_ttl_ms = cfg->template_ttl_ms ? cfg->template_ttl_ms : 300000;
    cached_list_init(&c->sizes_list, "ResourceSlices",
                     cfg->slice_ttl_ms ? cfg->slice_ttl_ms : 30000, false, fetch_slices,
                     store_slices);
    /* A failed DeviceClass list is retried only after the TTL too: the warning is advisory. */
    cached_list_init(&c->classes_list, "DeviceClasses",
                     cfg->class_ttl_ms ? cfg->class_ttl_ms : 60000, true, fetch_classes,
                     store_classes);
    pthread_mutex_init(&c->templates_lock, NULL);
    return c;
}

void wh_cluster_free(struct wh_cluster *c)
{
    if (!c)
        return;
    /* No call outlives its admission (webhook/deadline.h): nothing to wait for. */
    gs_k8s_client_free(c->client);
    cached_list_fini(&c->sizes_list);
    cached_list_fini(&c->classes_list);
    pthread_mutex_destroy(&c->templates_lock);
    json_decref(c->classes);
    free(c->slots);
    free(c->driver);
    free(c);
}

void wh_cluster_get_stats(struct wh_cluster *c, struct wh_cluster_stats *out)
{
    out->templates_created = atomic_load(&c->created);
    out->templates_existing = atomic_load(&c->existing);
    out->template_cache_hits = atomic_load(&c->cache_hits);
    out->api_errors = atomic_load(&c->api_errors);
}

/* ---- memory sizes ------------------------------------------------------------------------- */

void wh_slice_memory_sizes(const json_t *list, const char *driver, int64_t *sizes, size_t max,
                           size_t *n)
{
    size_t i, j, count = 0;
    json_t *slice, *dev;
    *n = 0;
    json_array_foreach(json_object_get(list, "items"), i, slice)
    {
        const json_t *spec = json_object_get(slice, "spec");
        const char *d = json_string_value(json_object_get(spec, "driver"));
        if (!d || strcmp(d, driver) != 0)
            continue;
        json_array_foreach(json_object_get(spec, "devices"), j, dev)
        {
            const char *v = json_string_value(json_object_get(
                json_object_get(json_object_get(dev, "capacity"), "memory"), "value"));
            int64_t bytes;
            if (!v || gs_quantity_parse_int64(v, &bytes, NULL) < 0 || bytes <= 0)
                continue;
            bool seen = false;
            for (size_t k = 0; k < GS_MIN(count, max) && !seen; k++)
                seen = sizes[k] == bytes;
            if (seen)
                continue;
            if (count < max)
                sizes[count] = bytes;
            count++;
        }
    }
    *n = count;
}

static int op_memory_sizes(void *user, uint64_t deadline_ms, int64_t *sizes, size_t max, size_t *n,
                           struct gs_error *err)
{
    struct wh_cluster *c = user;
    int r = cached_list_get(c, &c->sizes_list, deadline_ms, err);
    if (r < 0)
        return r;
    *n = c->n_sizes;
    memcpy(sizes, c->sizes,
           GS_MIN(GS_MIN(c->n_sizes, max), GS_ARRAY_SIZE(c->sizes)) * sizeof(*sizes));
    pthread_mutex_unlock(&c->sizes_list.lock);
    return 0;
}

/* ---- DeviceClasses ------------------------------------------------------------------------ */

static int op_extended_resource_class(void *user, uint64_t deadline_ms, const char *resource,
                                      char *buf, size_t len)
{
    struct wh_cluster *c = user;
    struct gs_error err = {0};
    if (cached_list_get(c, &c->classes_list, deadline_ms, &err) < 0)
        return 0; /* advisory: no warning rather than a late or failed admission */
    const char *name = json_string_value(json_object_get(c->classes, resource));
    int found = 0;
    if (name) {
        snprintf(buf, len, "%s", name);
        found = 1;
    }
    pthread_mutex_unlock(&c->classes_list.lock);
    return found;
}

/* ---- a pod's own claims ------------------------------------------------------------------- */

bool wh_claim_spec_uses_class(const json_t *claim_spec, const char *device_class)
{
    size_t i, j;
    json_t *req, *sub;
    json_array_foreach(json_object_get(json_object_get(claim_spec, "devices"), "requests"), i, req)
    {
        const char *dc =
            json_string_value(json_object_get(json_object_get(req, "exactly"), "deviceClassName"));
        if (dc && strcmp(dc, device_class) == 0)
            return true;
        json_array_foreach(json_object_get(req, "firstAvailable"), j, sub)
        {
            dc = json_string_value(json_object_get(sub, "deviceClassName"));
            if (dc && strcmp(dc, device_class) == 0)
                return true;
        }
    }
    return false;
}

/* 1 the pod claim's claim or template uses the class, 0 it does not (or is missing), negative:
 * API error or the deadline (the GET is bounded by it). */
static int op_pod_claim_uses_class(void *user, uint64_t deadline_ms, const char *ns,
                                   const json_t *pod_claim, const char *device_class,
                                   struct gs_error *err)
{
    struct wh_cluster *c = user;
    const char *claim = json_string_value(json_object_get(pod_claim, "resourceClaimName"));
    const char *tpl = json_string_value(json_object_get(pod_claim, "resourceClaimTemplateName"));
    if (!claim && !tpl)
        return 0;
    struct gs_k8s_call_opts o;
    wh_call_opts(c->client, deadline_ms, &o);
    json_t *obj = NULL;
    int r =
        gs_k8s_get_with(c->client, claim ? &gs_k8s_resourceclaims : &gs_k8s_resourceclaimtemplates,
                        ns, claim ? claim : tpl, &o, &obj, err);
    if (r == -ENOENT) {
        gs_error_clear(err);
        return 0; /* the API server reports the missing claim itself */
    }
    if (r == -ETIMEDOUT)
        return gs_error_set(err, r,
                            "reading the pod's claim: no answer from the API server "
                            "before the admission deadline");
    if (r < 0) {
        atomic_fetch_add(&c->api_errors, 1);
        return r;
    }
    const json_t *spec = json_object_get(obj, "spec");
    if (tpl && !claim)
        spec = json_object_get(spec, "spec");
    bool uses = wh_claim_spec_uses_class(spec, device_class);
    json_decref(obj);
    return uses ? 1 : 0;
}

void wh_cluster_ops(struct wh_cluster *c, struct wh_cluster_ops *ops)
{
    *ops = (struct wh_cluster_ops){
        .memory_sizes = op_memory_sizes,
        .pod_claim_uses_class = op_pod_claim_uses_class,
        .extended_resource_class = op_extended_resource_class,
        .user = c,
    };
}

/* ---- templates ---------------------------------------------------------------------------- */

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Slot holding `key`, or the empty slot where it would go. Caller holds templates_lock. */
static struct template_slot *find_slot(struct wh_cluster *c, const char *key)
{
    size_t i = hash_key(key) & (TEMPLATE_SLOTS - 1);
    for (;; i = (i + 1) & (TEMPLATE_SLOTS - 1))
        if (!c->slots[i].key[0] || strcmp(c->slots[i].key, key) == 0)
            return &c->slots[i];
}

static bool template_known(struct wh_cluster *c, const char *key)
{
    pthread_mutex_lock(&c->templates_lock);
    struct template_slot *s = find_slot(c, key);
    bool known = s->key[0] && gs_now_ms() < s->expires_ms;
    pthread_mutex_unlock(&c->templates_lock);
    return known;
}

static void template_remember(struct wh_cluster *c, const char *key)
{
    pthread_mutex_lock(&c->templates_lock);
    if (c->n_slots_used >= TEMPLATE_SLOTS / 2) {
        memset(c->slots, 0, TEMPLATE_SLOTS * sizeof(*c->slots));
        c->n_slots_used = 0;
    }
    struct template_slot *s = find_slot(c, key);
    if (!s->key[0]) {
        snprintf(s->key, sizeof(s->key), "%s", key);
        c->n_slots_used++;
    }
    s->expires_ms = gs_now_ms() + c->template_ttl_ms;
    pthread_mutex_unlock(&c->templates_lock);
}

/* Create one template (409 with our hash: fine). In its own thread when called from
 * wh_cluster_ensure_templates. */
static int ensure_one(struct wh_cluster *c, const json_t *tpl, uint64_t deadline_ms,
                      struct gs_error *err)
{
    struct gs_k8s_call_opts o;
    char path[1024];
    const json_t *meta = json_object_get(tpl, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    char key[KEY_MAX];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    wh_call_opts(c->client, deadline_ms, &o);
    int r = gs_k8s_path(path, sizeof(path), &gs_k8s_resourceclaimtemplates, ns, NULL, NULL, err);
    if (r == 0)
        r = gs_k8s_request_with(c->client, "POST", path, tpl, &o, NULL, NULL, err);
    if (r == -ETIMEDOUT)
        return r; /* counted by the caller: not answered before the deadline */
    if (r == -EEXIST) {
        /* Same name, so the same shape — if the webhook made it: check the spec hash. */
        const char *want = json_string_value(
            json_object_get(json_object_get(meta, "annotations"), WH_ANN_SPEC_HASH));
        json_t *have = NULL;
        gs_error_clear(err);
        r = gs_k8s_get_with(c->client, &gs_k8s_resourceclaimtemplates, ns, name, &o, &have, err);
        if (r == -ETIMEDOUT)
            return r;
        if (r < 0) {
            atomic_fetch_add(&c->api_errors, 1);
            return gs_error_prefix(
                       err, "ResourceClaimTemplate %s/%s exists but cannot be read: ", ns, name),
                   r;
        }
        const char *got = json_string_value(json_object_get(
            json_object_get(json_object_get(have, "metadata"), "annotations"), WH_ANN_SPEC_HASH));
        bool same = want && got && strcmp(want, got) == 0;
        json_decref(have);
        if (!same)
            return gs_error_set(err, -EEXIST,
                                "ResourceClaimTemplate %s/%s exists but was not made by "
                                "gpuslice-webhook for this claim shape (annotation %s differs); "
                                "delete it",
                                ns, name, WH_ANN_SPEC_HASH);
        atomic_fetch_add(&c->existing, 1);
    } else if (r == 0) {
        atomic_fetch_add(&c->created, 1);
        char q[KEY_MAX + 8];
        gs_info("claim template created", "template=%s", gs_log_quote(q, sizeof(q), key));
    } else {
        atomic_fetch_add(&c->api_errors, 1);
        return gs_error_prefix(err, "cannot create ResourceClaimTemplate %s/%s: ", ns, name), r;
    }
    template_remember(c, key);
    return 0;
}

/* Check a template's namespace/name and make its cache key. */
static int template_key(const json_t *tpl, char key[KEY_MAX], struct gs_error *err)
{
    const json_t *meta = json_object_get(tpl, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!ns || !name || !*ns)
        return gs_error_set(err, -EINVAL, "ResourceClaimTemplate without namespace or name");
    if ((size_t)snprintf(key, KEY_MAX, "%s/%s", ns, name) >= KEY_MAX)
        return gs_error_set(err, -ENAMETOOLONG, "ResourceClaimTemplate %.64s/%.64s: name too long",
                            ns, name);
    return 0;
}

int wh_cluster_ensure_template(struct wh_cluster *c, const json_t *tpl, struct gs_error *err)
{
    char key[KEY_MAX];
    int r = template_key(tpl, key, err);
    if (r < 0)
        return r;
    if (template_known(c, key)) {
        atomic_fetch_add(&c->cache_hits, 1);
        return 0;
    }
    return ensure_one(c, tpl, 0, err);
}

struct create_arg {
    struct wh_cluster *c;
    const json_t *tpl;
    uint64_t deadline_ms;
};

static int create_call(void *p, struct gs_error *err)
{
    struct create_arg *a = p;
    return ensure_one(a->c, a->tpl, a->deadline_ms, err);
}

int wh_cluster_ensure_templates(struct wh_cluster *c, const json_t *templates, uint64_t deadline_ms,
                                struct gs_error *err)
{
    size_t i, n_missing = 0, n = json_array_size(templates);
    json_t *tpl;
    char key[KEY_MAX];
    if (n > WH_MAX_TEMPLATES_PER_POD * 2)
        return gs_error_set(err, -EINVAL, "%zu ResourceClaimTemplates in one admission", n);
    struct create_arg args[WH_MAX_TEMPLATES_PER_POD * 2];
    void *argp[WH_MAX_TEMPLATES_PER_POD * 2];
    int codes[WH_MAX_TEMPLATES_PER_POD * 2];
    struct gs_error errs[WH_MAX_TEMPLATES_PER_POD * 2];
    json_array_foreach((json_t *)templates, i, tpl)
    {
        int r = template_key(tpl, key, err);
        if (r < 0)
            return r;
        if (template_known(c, key)) {
            atomic_fetch_add(&c->cache_hits, 1);
            continue;
        }
        args[n_missing] = (struct create_arg){c, tpl, deadline_ms};
        argp[n_missing] = &args[n_missing];
        n_missing++;
    }
    if (n_missing == 0)
        return 0; /* the common case: every shape seen before, no API call, no thread */
    /* All at once (a pod with 6 shapes takes one call's time), each bounded by the deadline. */
    wh_run_all(n_missing, create_call, argp, codes, errs);
    size_t answered = 0;
    int r = 0;
    /* A failure that has an answer tells more than the deadline: report the first one. */
    for (size_t j = 0; j < n_missing; j++) {
        answered += codes[j] != -ETIMEDOUT;
        if (r == 0 && codes[j] < 0 && codes[j] != -ETIMEDOUT) {
            r = codes[j];
            *err = errs[j];
        }
    }
    if (r == 0 && answered < n_missing)
        r = gs_error_set(err, -ETIMEDOUT,
                         "creating %zu ResourceClaimTemplate(s): %zu answered by the API server "
                         "before the admission deadline",
                         n_missing, answered);
    return r;
}

/* ---- the other mode's objects ------------------------------------------------------------- */

static bool node_has_annotation(const json_t *node, const char *key)
{
    return json_object_get(json_object_get(json_object_get(node, "metadata"), "annotations"),
                           key) != NULL;
}

int wh_cluster_check_mode(struct wh_cluster *c, enum wh_mode mode, const char *device_class,
                          struct gs_error *err)
{
    json_t *obj = NULL;
    int r;
    if (mode == WH_MODE_LEGACY) {
        r = gs_k8s_get(c->client, &gs_k8s_deviceclasses, NULL, device_class, &obj, err);
        json_decref(obj);
        obj = NULL;
        if (r == 0)
            return gs_error_set(err, -EEXIST,
                                "--mode=legacy, but this cluster runs gpuslice in DRA mode: "
                                "DeviceClass %s exists. The two modes must not run in one "
                                "cluster; remove the DRA deployment first (or run --mode=dra)",
                                device_class);
        if (r != -ENOENT)
            return gs_error_prefix(err, "cannot read DeviceClass %s: ", device_class), r;
        gs_error_clear(err);
        char sel[300];
        snprintf(sel, sizeof(sel), "spec.driver=%s", c->driver);
        struct gs_k8s_list_options lo = {.field_selector = sel};
        r = gs_k8s_list(c->client, &gs_k8s_resourceslices, NULL, &lo, &obj, NULL, err);
        if (r < 0)
            return gs_error_prefix(err, "cannot list ResourceSlices: "), r;
        size_t n = json_array_size(json_object_get(obj, "items"));
        const char *first = json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(obj, "items"), 0), "spec"), "nodeName"));
        char node[128];
        snprintf(node, sizeof(node), "%.100s", first ? first : "");
        json_decref(obj);
        if (n)
            return gs_error_set(err, -EEXIST,
                                "--mode=legacy, but this cluster runs gpuslice in DRA mode: %zu "
                                "ResourceSlice(s) of driver %s (node %s, ...). The two modes "
                                "must not run in one cluster; remove the DRA driver first (or run "
                                "--mode=dra)",
                                n, c->driver, node);
        return 0;
    }
    /* Whole Node objects are large (images, conditions): pages of 100 keep every response far
     * below the client's response limit on clusters of thousands of nodes. Once, at start. */
    struct gs_k8s_list_options lo = {.page_size = 100};
    r = gs_k8s_list(c->client, &gs_k8s_nodes, NULL, &lo, &obj, NULL, err);
    if (r < 0)
        return gs_error_prefix(err, "cannot list Nodes: "), r;
    size_t i, n = 0;
    json_t *node;
    char first[128] = "";
    json_array_foreach(json_object_get(obj, "items"), i, node)
    {
        if (!node_has_annotation(node, WH_HAMI_NODE_REGISTER))
            continue;
        if (!n++) {
            const char *name =
                json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
            snprintf(first, sizeof(first), "%.100s", name ? name : "");
        }
    }
    json_decref(obj);
    if (n)
        return gs_error_set(err, -EEXIST,
                            "--mode=dra, but %zu node(s) carry the legacy device plugin's "
                            "annotation %s (node %s, ...): this cluster shares GPUs the legacy "
                            "way (HAMi or gpuslice-device-plugin). The two modes must not run in "
                            "one cluster; run --mode=legacy, or remove the legacy device plugin "
                            "and its node annotations first",
                            n, WH_HAMI_NODE_REGISTER, first);
    return 0;
}

/* ---- templates a Volcano job owns (webhook/volcano.h) ------------------------------------ */

static const char *meta_str(const json_t *obj, const char *map, const char *key)
{
    const json_t *m = json_object_get(obj, "metadata");
    return json_string_value(map ? json_object_get(json_object_get(m, map), key)
                                 : json_object_get(m, key));
}

/* Delete one template if it is ours for one of `prefixes` (a UID precondition, so a template
 * re-made in between by someone else is kept). 0, or a negative code with a message. */
static int delete_owned(struct wh_cluster *c, const char *ns, const char *name,
                        const json_t *prefixes, bool dry_run, uint64_t deadline_ms,
                        struct gs_error *err)
{
    json_t *have = NULL;
    struct gs_k8s_call_opts o;
    char path[1024];
    wh_call_opts(c->client, deadline_ms, &o);
    int r = gs_k8s_get_with(c->client, &gs_k8s_resourceclaimtemplates, ns, name, &o, &have, err);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return gs_error_prefix(err, "ResourceClaimTemplate %s/%s: ", ns, name), r;
    const char *owner = meta_str(have, "annotations", WH_ANN_VOLCANO_JOB);
    const char *label = meta_str(have, "labels", "hami.io/dra");
    bool ours = false;
    size_t i;
    json_t *p;
    json_array_foreach((json_t *)prefixes, i, p) ours |=
        owner && strcmp(owner, json_string_value(p)) == 0;
    if (!ours || !label || strcmp(label, "true") != 0) {
        json_decref(have);
        return gs_error_set(err, -EPERM,
                            "ResourceClaimTemplate %s/%s was not made by gpuslice-webhook for "
                            "this job (annotation %s); kept",
                            ns, name, WH_ANN_VOLCANO_JOB);
    }
    char uid[128] = "";
    const char *u = meta_str(have, NULL, "uid");
    snprintf(uid, sizeof(uid), "%s", u ? u : "");
    json_decref(have);
    r = gs_k8s_path(path, sizeof(path), &gs_k8s_resourceclaimtemplates, ns, name, NULL, err);
    if (r == 0 && dry_run)
        strncat(path, "?dryRun=All", sizeof(path) - strlen(path) - 1);
    json_t *opts = uid[0] ? json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind",
                                      "DeleteOptions", "preconditions", "uid", uid)
                          : NULL;
    if (r == 0)
        r = gs_k8s_request_with(c->client, "DELETE", path, opts, &o, NULL, NULL, err);
    json_decref(opts);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return gs_error_prefix(err, "cannot delete ResourceClaimTemplate %s/%s: ", ns, name), r;
    char q[KEY_MAX + 8], key[KEY_MAX];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    gs_info("claim template deleted", "template=%s dry_run=%d", gs_log_quote(q, sizeof(q), key),
            dry_run);
    return 0;
}

int wh_cluster_create_owned(struct wh_cluster *c, const json_t *templates, uint64_t deadline_ms,
                            struct gs_error *err)
{
    struct gs_k8s_call_opts o;
    char path[1024];
    wh_call_opts(c->client, deadline_ms, &o);
    size_t i;
    json_t *tpl;
    json_t *done = json_array(), *prefixes = json_array();
    int r = 0;
    json_array_foreach((json_t *)templates, i, tpl)
    {
        const char *ns = meta_str(tpl, NULL, "namespace"), *name = meta_str(tpl, NULL, "name");
        const char *owner = meta_str(tpl, "annotations", WH_ANN_VOLCANO_JOB);
        if (!ns || !name || !owner) {
            r = gs_error_set(err, -EINVAL, "job template without namespace, name or owner");
            break;
        }
        json_array_append_new(prefixes, json_string(owner));
        r = gs_k8s_path(path, sizeof(path), &gs_k8s_resourceclaimtemplates, ns, NULL, NULL, err);
        if (r == 0)
            r = gs_k8s_request_with(c->client, "POST", path, tpl, &o, NULL, NULL, err);
        if (r == -EEXIST) {
            /* A retry of the same job: ours, for this task, with this spec. */
            json_t *have = NULL;
            gs_error_clear(err);
            r = gs_k8s_get_with(c->client, &gs_k8s_resourceclaimtemplates, ns, name, &o, &have,
                                err);
            const char *own = r == 0 ? meta_str(have, "annotations", WH_ANN_VOLCANO_JOB) : NULL;
            const char *h = r == 0 ? meta_str(have, "annotations", WH_ANN_SPEC_HASH) : NULL;
            const char *want = meta_str(tpl, "annotations", WH_ANN_SPEC_HASH);
            bool same = own && h && want && strcmp(own, owner) == 0 && strcmp(h, want) == 0;
            json_decref(have);
            if (r == 0 && !same)
                r = gs_error_set(err, -EEXIST,
                                 "ResourceClaimTemplate %s/%s exists and was not made by "
                                 "gpuslice-webhook for this job and claim shape; delete it or "
                                 "rename the job",
                                 ns, name);
            else if (r < 0)
                gs_error_prefix(err, "ResourceClaimTemplate %s/%s exists but cannot be read: ", ns,
                                name);
            if (r == 0)
                atomic_fetch_add(&c->existing, 1);
        } else if (r == 0) {
            atomic_fetch_add(&c->created, 1);
            json_array_append(done, tpl);
        } else {
            atomic_fetch_add(&c->api_errors, 1);
            gs_error_prefix(err, "cannot create ResourceClaimTemplate %s/%s: ", ns, name);
        }
        if (r < 0)
            break;
    }
    if (r < 0) {
        /* HAMi-DRA deleteResourceClaimTemplates: what this admission created goes again. */
        json_array_foreach(done, i, tpl)
        {
            struct gs_error derr = {0};
            char q[GS_ERROR_MSG_MAX + 8];
            /* Not bounded by the admission's deadline: a rollback is worth the API timeout. */
            if (delete_owned(c, meta_str(tpl, NULL, "namespace"), meta_str(tpl, NULL, "name"),
                             prefixes, false, 0, &derr) < 0)
                gs_warn("claim template left behind", "error=%s",
                        gs_log_quote(q, sizeof(q), derr.msg));
        }
    }
    json_decref(done);
    json_decref(prefixes);
    return r;
}

int wh_cluster_delete_owned(struct wh_cluster *c, const char *ns, const json_t *names,
                            const json_t *prefixes, bool dry_run, uint64_t deadline_ms,
                            json_t *warnings)
{
    size_t i;
    json_t *n;
    int failed = 0;
    json_array_foreach((json_t *)names, i, n)
    {
        struct gs_error err = {0};
        if (delete_owned(c, ns, json_string_value(n), prefixes, dry_run, deadline_ms, &err) < 0) {
            failed++;
            wh_utf8_sanitize(err.msg);
            json_array_append_new(warnings, json_string(err.msg));
        }
    }
    return failed ? -EIO : 0;
}
