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

#include "common/log.h"
#include "common/macros.h"
#include "common/quantity.h"
#include "webhook/shape.h"

#define TEMPLATE_SLOTS 4096 /* power of two; cleared when half full */
#define KEY_MAX        320  /* namespace (63) + '/' + name (253) + NUL */

struct template_slot {
    char key[KEY_MAX];
    uint64_t expires_ms;
};

struct wh_cluster {
    struct gs_k8s_client *client;
    char *driver;
    uint64_t slice_ttl_ms, class_ttl_ms, template_ttl_ms;

    pthread_mutex_t sizes_lock;
    int64_t sizes[WH_MEM_SIZES_MAX];
    size_t n_sizes;
    uint64_t sizes_expires_ms; /* 0 = never fetched */

    pthread_mutex_t classes_lock;
    json_t *classes; /* {"<extendedResourceName>": "<DeviceClass name>"} */
    uint64_t classes_expires_ms;

    pthread_mutex_t templates_lock;
    struct template_slot *slots;
    size_t n_slots_used;

    _Atomic uint64_t created, existing, cache_hits, api_errors;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
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
    c->slice_ttl_ms = cfg->slice_ttl_ms ? cfg->slice_ttl_ms : 30000;
    c->class_ttl_ms = cfg->class_ttl_ms ? cfg->class_ttl_ms : 60000;
    c->template_ttl_ms = cfg->template_ttl_ms ? cfg->template_ttl_ms : 300000;
    pthread_mutex_init(&c->sizes_lock, NULL);
    pthread_mutex_init(&c->classes_lock, NULL);
    pthread_mutex_init(&c->templates_lock, NULL);
    return c;
}

void wh_cluster_free(struct wh_cluster *c)
{
    if (!c)
        return;
    gs_k8s_client_free(c->client);
    pthread_mutex_destroy(&c->sizes_lock);
    pthread_mutex_destroy(&c->classes_lock);
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

static int op_memory_sizes(void *user, int64_t *sizes, size_t max, size_t *n, struct gs_error *err)
{
    struct wh_cluster *c = user;
    int r = 0;
    pthread_mutex_lock(&c->sizes_lock);
    uint64_t now = now_ms();
    if (c->sizes_expires_ms == 0 || now >= c->sizes_expires_ms) {
        char sel[300];
        snprintf(sel, sizeof(sel), "spec.driver=%s", c->driver);
        struct gs_k8s_list_options lo = {.field_selector = sel};
        json_t *list = NULL;
        r = gs_k8s_list(c->client, &gs_k8s_resourceslices, NULL, &lo, &list, NULL, err);
        if (r < 0) {
            atomic_fetch_add(&c->api_errors, 1);
            gs_error_prefix(err, "cannot list ResourceSlices: ");
        } else {
            wh_slice_memory_sizes(list, c->driver, c->sizes, GS_ARRAY_SIZE(c->sizes), &c->n_sizes);
            c->sizes_expires_ms = now + c->slice_ttl_ms;
        }
        json_decref(list);
    }
    if (r == 0) {
        *n = c->n_sizes;
        memcpy(sizes, c->sizes,
               GS_MIN(GS_MIN(c->n_sizes, max), GS_ARRAY_SIZE(c->sizes)) * sizeof(*sizes));
    }
    pthread_mutex_unlock(&c->sizes_lock);
    return r;
}

/* ---- DeviceClasses ------------------------------------------------------------------------ */

static int op_extended_resource_class(void *user, const char *resource, char *buf, size_t len)
{
    struct wh_cluster *c = user;
    int found = 0;
    pthread_mutex_lock(&c->classes_lock);
    uint64_t now = now_ms();
    if (c->classes_expires_ms == 0 || now >= c->classes_expires_ms) {
        json_t *list = NULL;
        struct gs_error err = {0};
        if (gs_k8s_list(c->client, &gs_k8s_deviceclasses, NULL, NULL, &list, NULL, &err) == 0) {
            size_t i;
            json_t *dc;
            json_object_clear(c->classes);
            json_array_foreach(json_object_get(list, "items"), i, dc)
            {
                const char *ern = json_string_value(
                    json_object_get(json_object_get(dc, "spec"), "extendedResourceName"));
                const char *name =
                    json_string_value(json_object_get(json_object_get(dc, "metadata"), "name"));
                if (ern && name)
                    json_object_set_new(c->classes, ern, json_string(name));
            }
        } else {
            atomic_fetch_add(&c->api_errors, 1);
        }
        /* A failed list is retried only after the TTL too: the warning is advisory. */
        c->classes_expires_ms = now + c->class_ttl_ms;
        json_decref(list);
    }
    const char *name = json_string_value(json_object_get(c->classes, resource));
    if (name) {
        snprintf(buf, len, "%s", name);
        found = 1;
    }
    pthread_mutex_unlock(&c->classes_lock);
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

static int op_pod_claim_uses_class(void *user, const char *ns, const json_t *pod_claim,
                                   const char *device_class, struct gs_error *err)
{
    struct wh_cluster *c = user;
    const char *claim = json_string_value(json_object_get(pod_claim, "resourceClaimName"));
    const char *tpl = json_string_value(json_object_get(pod_claim, "resourceClaimTemplateName"));
    json_t *obj = NULL;
    int r;
    if (claim)
        r = gs_k8s_get(c->client, &gs_k8s_resourceclaims, ns, claim, &obj, err);
    else if (tpl)
        r = gs_k8s_get(c->client, &gs_k8s_resourceclaimtemplates, ns, tpl, &obj, err);
    else
        return 0;
    if (r == -ENOENT)
        return 0; /* the API server reports the missing claim itself */
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
    bool known = s->key[0] && now_ms() < s->expires_ms;
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
    s->expires_ms = now_ms() + c->template_ttl_ms;
    pthread_mutex_unlock(&c->templates_lock);
}

int wh_cluster_ensure_template(struct wh_cluster *c, const json_t *tpl, struct gs_error *err)
{
    const json_t *meta = json_object_get(tpl, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    char key[KEY_MAX];
    if (!ns || !name || !*ns)
        return gs_error_set(err, -EINVAL, "ResourceClaimTemplate without namespace or name");
    if ((size_t)snprintf(key, sizeof(key), "%s/%s", ns, name) >= sizeof(key))
        return gs_error_set(err, -ENAMETOOLONG, "ResourceClaimTemplate %.64s/%.64s: name too long",
                            ns, name);
    if (template_known(c, key)) {
        atomic_fetch_add(&c->cache_hits, 1);
        return 0;
    }
    int r =
        gs_k8s_create(c->client, &gs_k8s_resourceclaimtemplates, ns, (json_t *)tpl, 0, NULL, err);
    if (r == -EEXIST) {
        /* Same name, so the same shape — if the webhook made it: check the spec hash. */
        const char *want = json_string_value(
            json_object_get(json_object_get(meta, "annotations"), WH_ANN_SPEC_HASH));
        json_t *have = NULL;
        gs_error_clear(err);
        r = gs_k8s_get(c->client, &gs_k8s_resourceclaimtemplates, ns, name, &have, err);
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
        gs_info("claim template created", "template=%s/%s", ns, name);
    } else {
        atomic_fetch_add(&c->api_errors, 1);
        return gs_error_prefix(err, "cannot create ResourceClaimTemplate %s/%s: ", ns, name), r;
    }
    template_remember(c, key);
    return 0;
}
