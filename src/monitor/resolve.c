/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/resolve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/k8s.h"
#include "base/macros.h"
#include "monitor/ident.h"

#define MAX_PODS       64 /* reservedFor holds at most 256; a claim on one node far fewer */
#define MAX_CONTAINERS 64

static bool str_eq(const json_t *j, const char *s)
{
    const char *v = json_string_value(j);
    return v && s && strcmp(v, s) == 0;
}

/* Does the pod's resourceClaims entry `entry_name` stand for claim `claim_name`? */
static bool entry_is_claim(const json_t *pod, const char *entry_name, const char *claim_name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "resourceClaims"), i, e)
    {
        if (str_eq(json_object_get(e, "name"), entry_name) &&
            str_eq(json_object_get(e, "resourceClaimName"), claim_name))
            return true;
    }
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "resourceClaimStatuses"), i,
                       e)
    {
        if (str_eq(json_object_get(e, "name"), entry_name) &&
            str_eq(json_object_get(e, "resourceClaimName"), claim_name))
            return true;
    }
    return false;
}

/* The runtime's ID of container `name` from the pod's status (the kubelet writes it): "" until
 * the container started. */
static void status_container_id(const json_t *pod, const char *list, const char *name, char *buf,
                                size_t len)
{
    buf[0] = '\0';
    size_t i;
    json_t *st;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), list), i, st)
    {
        if (str_eq(json_object_get(st, "name"), name)) {
            mon_container_id(json_string_value(json_object_get(st, "containerID")), buf, len);
            return;
        }
    }
}

static int append(struct mon_consumer **out, size_t *n, const char *ns, const char *pod,
                  const char *container)
{
    struct mon_consumer *nc = realloc(*out, (*n + 1) * sizeof(*nc));
    if (!nc)
        return -ENOMEM;
    *out = nc;
    struct mon_consumer *c = &nc[(*n)++];
    memset(c, 0, sizeof(*c));
    snprintf(c->ns, sizeof(c->ns), "%s", ns ? ns : "");
    snprintf(c->pod, sizeof(c->pod), "%s", pod ? pod : "");
    snprintf(c->container, sizeof(c->container), "%s", container ? container : "");
    return 0;
}

int mon_pod_consumers(const json_t *pod, const char *claim_name, struct mon_consumer **out,
                      size_t *n)
{
    const json_t *md = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *pname = json_string_value(json_object_get(md, "name"));
    const char *puid = json_string_value(json_object_get(md, "uid"));
    static const char *const lists[] = {"initContainers", "containers"};
    static const char *const statuses[] = {"initContainerStatuses", "containerStatuses"};
    int added = 0;
    for (size_t l = 0; l < GS_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            if (added >= MAX_CONTAINERS)
                break;
            size_t k;
            json_t *rc;
            bool uses = false;
            json_array_foreach(json_object_get(json_object_get(c, "resources"), "claims"), k, rc)
            {
                const char *entry = json_string_value(json_object_get(rc, "name"));
                if (entry && entry_is_claim(pod, entry, claim_name))
                    uses = true;
            }
            if (!uses)
                continue;
            const char *cname = json_string_value(json_object_get(c, "name"));
            if (append(out, n, ns, pname, cname) < 0)
                return -ENOMEM;
            struct mon_consumer *last = &(*out)[*n - 1];
            snprintf(last->pod_uid, sizeof(last->pod_uid), "%s", puid ? puid : "");
            if (cname)
                status_container_id(pod, statuses[l], cname, last->container_id,
                                    sizeof(last->container_id));
            added++;
        }
    }
    if (added == 0) {
        if (append(out, n, ns, pname, "") < 0)
            return -ENOMEM;
        snprintf((*out)[*n - 1].pod_uid, sizeof((*out)[*n - 1].pod_uid), "%s", puid ? puid : "");
        added = 1;
    }
    return added;
}

int mon_resolve_claim(struct gs_k8s_client *k8s, const char *ns, const char *name, const char *uid,
                      struct mon_resolve_result *out, struct gs_error *err)
{
    memset(out, 0, sizeof(*out));
    json_t *claim = NULL;
    int r = gs_k8s_get(k8s, &gs_k8s_resourceclaims, ns, name, &claim, err);
    if (r < 0)
        return r;
    const char *got = json_string_value(json_object_get(json_object_get(claim, "metadata"), "uid"));
    if (!got || strcmp(got, uid) != 0) {
        r = gs_error_set(err, -ENOENT,
                         "claim %s/%s: the API server has UID %s, the node prepared %s", ns, name,
                         got ? got : "(none)", uid);
        json_decref(claim);
        return r;
    }
    size_t i, pods = 0;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(claim, "status"), "reservedFor"), i, ref)
    {
        if (!str_eq(json_object_get(ref, "resource"), "pods") || pods >= MAX_PODS)
            continue;
        const char *pname = json_string_value(json_object_get(ref, "name"));
        const char *puid = json_string_value(json_object_get(ref, "uid"));
        if (!pname)
            continue;
        pods++;
        json_t *pod = NULL;
        struct gs_error perr = {0};
        r = gs_k8s_get(k8s, &gs_k8s_pods, ns, pname, &pod, &perr);
        if (r == -ENOENT) {
            out->pods_gone++;
            continue;
        }
        if (r < 0) {
            json_decref(claim);
            mon_resolve_result_fini(out);
            if (err)
                *err = perr;
            return r;
        }
        const char *got_uid =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        if (puid && got_uid && strcmp(puid, got_uid) != 0) {
            out->pods_gone++; /* a new pod with the same name: not this claim's consumer */
            json_decref(pod);
            continue;
        }
        r = mon_pod_consumers(pod, name, &out->consumers, &out->n_consumers);
        json_decref(pod);
        if (r < 0) {
            json_decref(claim);
            mon_resolve_result_fini(out);
            return gs_error_set(err, -ENOMEM, "out of memory");
        }
    }
    json_decref(claim);
    return 0;
}

void mon_resolve_result_fini(struct mon_resolve_result *r)
{
    free(r->consumers);
    r->consumers = NULL;
    r->n_consumers = 0;
}
