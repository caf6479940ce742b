/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice schedule -f FILE_OR_DIR... [--node NAME] [--policy P] [--explain] [-o table|yaml|json]
 *
 * Reads Kubernetes objects (YAML, multi-document, or JSON; `kind: List` is expanded), builds
 * the allocator state from ResourceSlices, DeviceClasses, Nodes and already-allocated
 * ResourceClaims, then allocates every unallocated ResourceClaim in order, as kube-scheduler
 * would, each committed before the next. With Pods in the input, each pod's claims (named, or
 * generated from ResourceClaimTemplates) are allocated together on one node, in pod order, and
 * claims no pod uses stay pending. Exit status: 0 every claim allocated, 1 at least one
 * claim could not be allocated, 2 usage error or bad input (the message names file, object and
 * field).
 */
#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc/alloc.h"
#include "cli/commands.h"
#include "base/error.h"
#include "base/fs.h"
#include "config/yaml.h"

#define MAX_INPUT_BYTES (16u << 20)
#define MAX_INPUTS      4096

enum out_format { OUT_TABLE, OUT_YAML, OUT_JSON };

struct input_obj {
    json_t *obj;
    char where[512]; /* "file: document N" */
};

struct inputs {
    size_t n, cap;
    struct input_obj *v;
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpuslice schedule -f FILE_OR_DIR... [--node NAME] [--policy P] [--explain]\n"
        "                         [-o table|yaml|json]\n"
        "\n"
        "Allocate every unallocated ResourceClaim in the given Kubernetes objects the way\n"
        "kube-scheduler does (resource.k8s.io/v1 structured parameters, consumable capacity).\n"
        "\n"
        "  -f, --filename PATH  YAML/JSON file, or a directory of *.yaml, *.yml, *.json files\n"
        "                       (repeatable; objects: ResourceSlice, DeviceClass, Node,\n"
        "                       ResourceClaim; others are ignored)\n"
        "      --node NAME      node to allocate on (default: try every node the objects name,\n"
        "                       in name order, first that fits)\n"
        "      --policy P       first-fit (kube-scheduler), binpack, spread, topology\n"
        "      --explain        say why, per request and per device, for every claim\n"
        "  -o, --output F       table (default), yaml or json: the claims with\n"
        "                       status.allocation (and, with --explain, `explanations`:\n"
        "                       one per node tried)\n"
        "\n"
        "exit status: 0 all claims allocated, 1 some claim could not be allocated,\n"
        "             2 usage error or invalid input\n");
}

static int push_obj(struct inputs *in, json_t *obj, const char *where)
{
    if (in->n >= MAX_INPUTS) {
        fprintf(stderr, "gpuslice schedule: %s: more than %d objects\n", where, MAX_INPUTS);
        return -E2BIG;
    }
    if (in->n == in->cap) {
        size_t nc = in->cap ? in->cap * 2 : 32;
        struct input_obj *nv = realloc(in->v, nc * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        in->v = nv;
        in->cap = nc;
    }
    in->v[in->n].obj = json_incref(obj);
    snprintf(in->v[in->n].where, sizeof(in->v[in->n].where), "%s", where);
    in->n++;
    return 0;
}

static int load_file(struct inputs *in, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    struct gs_error err = {0};
    int r = gs_read_file(path, MAX_INPUT_BYTES, &text, &len, &err);
    if (r < 0) {
        fprintf(stderr, "gpuslice schedule: %s\n", err.msg);
        return r;
    }
    json_t *docs = NULL;
    r = gs_yaml_load_documents(text, len, &docs, &err);
    free(text);
    if (r < 0) {
        fprintf(stderr, "gpuslice schedule: %s: %s\n", path, err.msg);
        return r;
    }
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        char where[512];
        snprintf(where, sizeof(where), "%s: document %zu", path, i + 1);
        if (!json_is_object(d)) {
            fprintf(stderr, "gpuslice schedule: %s: not an object\n", where);
            json_decref(docs);
            return -EINVAL;
        }
        const json_t *kind = json_object_get(d, "kind");
        const json_t *items = json_object_get(d, "items");
        if (json_is_string(kind) && strcmp(json_string_value(kind), "List") == 0 &&
            json_is_array(items)) {
            size_t k;
            json_t *it;
            json_array_foreach(items, k, it)
            {
                char w2[600];
                snprintf(w2, sizeof(w2), "%s, items[%zu]", where, k);
                if ((r = push_obj(in, it, w2)) < 0)
                    break;
            }
        } else
            r = push_obj(in, d, where);
        if (r < 0)
            break;
    }
    json_decref(docs);
    return r < 0 ? r : 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int load_path(struct inputs *in, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "gpuslice schedule: %s: %s\n", path, strerror(errno));
        return -errno;
    }
    if (!S_ISDIR(st.st_mode))
        return load_file(in, path);
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "gpuslice schedule: %s: %s\n", path, strerror(errno));
        return -errno;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.' ||
            !(has_suffix(de->d_name, ".yaml") || has_suffix(de->d_name, ".yml") ||
              has_suffix(de->d_name, ".json")))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nn = realloc(names, nc * sizeof(*nn));
            if (!nn) {
                r = -ENOMEM;
                break;
            }
            names = nn;
            cap = nc;
        }
        if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(dir);
    if (n)
        qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n; i++) {
        if (r == 0)
            r = load_file(in, names[i]);
        free(names[i]);
    }
    free(names);
    return r;
}

/* ---- scheduling ------------------------------------------------------------------------------ */

static const char *kind_of(const json_t *o)
{
    const json_t *k = json_object_get(o, "kind");
    return json_is_string(k) ? json_string_value(k) : "";
}

static bool is_allocated(const json_t *claim)
{
    const json_t *st = json_object_get(claim, "status");
    const json_t *al = st ? json_object_get(st, "allocation") : NULL;
    return al && !json_is_null(al);
}

static const char *meta_str(const json_t *o, const char *key, const char *def)
{
    const json_t *m = json_object_get(o, "metadata");
    const json_t *v = m ? json_object_get(m, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : def;
}

static int add_name(char ***names, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*names)[i], name) == 0)
            return 0;
    char **nn = realloc(*names, (*n + 1) * sizeof(*nn));
    if (!nn)
        return -ENOMEM;
    *names = nn;
    if (!(nn[*n] = strdup(name)))
        return -ENOMEM;
    (*n)++;
    return 0;
}

/* Nodes to try when --node is not given: Node objects and slice nodeNames, sorted. */
static int candidate_nodes(const struct inputs *in, char ***names, size_t *n)
{
    for (size_t i = 0; i < in->n; i++) {
        const json_t *o = in->v[i].obj;
        const char *kind = kind_of(o);
        const char *name = NULL;
        if (strcmp(kind, "Node") == 0)
            name = meta_str(o, "name", NULL);
        else if (strcmp(kind, "ResourceSlice") == 0) {
            const json_t *spec = json_object_get(o, "spec");
            const json_t *nn = spec ? json_object_get(spec, "nodeName") : NULL;
            name = json_is_string(nn) ? json_string_value(nn) : NULL;
            if (spec && json_is_true(json_object_get(spec, "perDeviceNodeSelection"))) {
                size_t k;
                const json_t *d;
                json_array_foreach(json_object_get(spec, "devices"), k, d)
                {
                    const json_t *dn = json_object_get(d, "nodeName");
                    if (json_is_string(dn) && *json_string_value(dn) &&
                        add_name(names, n, json_string_value(dn)) < 0)
                        return -ENOMEM;
                }
            }
        }
        if (name && *name && add_name(names, n, name) < 0)
            return -ENOMEM;
    }
    if (*n)
        qsort(*names, *n, sizeof(**names), name_cmp);
    return 0;
}

static void table_header(void)
{
    printf("%-28s %-14s %-18s %-14s %-36s %s\n", "CLAIM", "NODE", "REQUEST", "DEVICE", "SHARE-ID",
           "CONSUMED");
}

static void table_rows(const char *claim, const char *node, const json_t *allocation,
                       const char *failure)
{
    if (!allocation) {
        printf("%-28s %-14s %s\n", claim, node ? node : "-", failure);
        return;
    }
    const json_t *results = json_object_get(json_object_get(allocation, "devices"), "results");
    size_t i;
    const json_t *r;
    json_array_foreach(results, i, r)
    {
        char consumed[512] = "";
        size_t off = 0;
        const char *k;
        const json_t *v;
        json_object_foreach(json_object_get(r, "consumedCapacity"), k, v)
        {
            int w = snprintf(consumed + off, sizeof(consumed) - off, "%s%s=%s", off ? "," : "", k,
                             json_string_value(v));
            if (w < 0 || (size_t)w >= sizeof(consumed) - off)
                break;
            off += (size_t)w;
        }
        const json_t *sid = json_object_get(r, "shareID");
        printf("%-28s %-14s %-18s %-14s %-36s %s\n", claim, node,
               json_string_value(json_object_get(r, "request")),
               json_string_value(json_object_get(r, "device")),
               json_is_string(sid) ? json_string_value(sid) : "-", off ? consumed : "-");
    }
}

/* ---- scheduling groups: a pod's claims land on one node; without pods, each claim alone -- */

struct member {
    json_t *obj; /* the claim (borrowed, or owned when generated from a template) */
    const char *where;
    bool generated;
    char key[600]; /* namespace/name */
    json_t *allocation;
    const char *placed;
    const char *reason; /* why not placed (table) */
    size_t n_whys;
    struct alloc_explanation **whys; /* one per node tried where this claim failed */
};

struct sched {
    struct alloc_state *st;
    struct alloc_options aopt;
    char **nodes;
    size_t n_nodes;
    enum out_format fmt;
    json_t *items;
    char **done; /* claims allocated so far (namespace/name) */
    size_t n_done;
    int status;
};

static bool is_done(const struct sched *s, const char *key)
{
    for (size_t i = 0; i < s->n_done; i++)
        if (strcmp(s->done[i], key) == 0)
            return true;
    return false;
}

static void member_fini(struct member *m)
{
    json_decref(m->allocation);
    for (size_t w = 0; w < m->n_whys; w++)
        alloc_explanation_free(m->whys[w]);
    free(m->whys);
    if (m->generated)
        json_decref(m->obj);
}

static void emit(struct sched *s, struct member *m)
{
    if (s->fmt == OUT_TABLE) {
        if (s->aopt.explain) {
            for (size_t w = 0; w < m->n_whys; w++)
                alloc_explanation_print(m->whys[w], stdout);
        } else
            table_rows(m->key, m->placed, m->allocation, m->reason ? m->reason : "Error");
        return;
    }
    json_t *item = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "resource.k8s.io/v1", "kind",
                             "ResourceClaim", "metadata", "name", meta_str(m->obj, "name", ""),
                             "namespace", meta_str(m->obj, "namespace", "default"));
    if (!item)
        return;
    if (m->generated) {
        json_t *meta = json_object_get(m->obj, "metadata");
        json_object_set(item, "metadata", meta);
        json_object_set(item, "spec", json_object_get(m->obj, "spec"));
    }
    if (m->allocation)
        json_object_set_new(item, "status", json_pack("{s:O}", "allocation", m->allocation));
    if (s->aopt.explain) {
        json_t *arr = json_array();
        for (size_t w = 0; w < m->n_whys; w++)
            json_array_append_new(arr, alloc_explanation_json(m->whys[w]));
        json_object_set_new(item, "explanations", arr);
    }
    json_array_append_new(s->items, item);
}

/* Allocate every member on one node, trying nodes in order. 0, or 2 for invalid input. */
static int schedule_group(struct sched *s, const char *pod, struct member *m, size_t n)
{
    struct gs_error err = {0};
    struct alloc_claim_spec **spec = calloc(n + 1, sizeof(struct alloc_claim_spec *));
    int ret = 0;
    if (!spec)
        return 2;
    for (size_t j = 0; j < n; j++) {
        m[j].whys = calloc(s->n_nodes + 1, sizeof(struct alloc_explanation *));
        spec[j] = m[j].whys ? alloc_claim_spec_new(m[j].obj, &err) : NULL;
        if (!spec[j]) {
            fprintf(stderr, "gpuslice schedule: %s: %s\n", m[j].where, err.msg);
            ret = 2;
            goto out;
        }
    }
    char failure[GS_ERROR_MSG_MAX] = "";
    bool placed = false;
    json_t **al = calloc(n + 1, sizeof(json_t *));
    struct alloc_explanation **why = calloc(n + 1, sizeof(struct alloc_explanation *));
    if (!al || !why) {
        free(al);
        free(why);
        ret = 2;
        goto out;
    }
    /* All of a group's claims are searched together on each node, first node that fits wins. */
    for (size_t k = 0; k < s->n_nodes && !placed; k++) {
        s->aopt.node = s->nodes[k];
        int r = alloc_claims_allocate(s->st, (const struct alloc_claim_spec *const *)spec, n,
                                      &s->aopt, al, why, &err);
        if (r == 0) {
            placed = true;
            for (size_t i = 0; i < n; i++) {
                m[i].allocation = al[i];
                m[i].placed = s->nodes[k];
                for (size_t w = 0; w < m[i].n_whys; w++)
                    alloc_explanation_free(m[i].whys[w]);
                m[i].n_whys = 0;
                if (why[i])
                    m[i].whys[m[i].n_whys++] = why[i];
            }
            break;
        }
        snprintf(failure, sizeof(failure), "%s", err.msg);
        for (size_t i = 0; i < n; i++)
            if (why[i])
                m[i].whys[m[i].n_whys++] = why[i];
    }
    free(al);
    free(why);
    if (placed) {
        for (size_t i = 0; i < n; i++) {
            char **nd = realloc(s->done, (s->n_done + 1) * sizeof(char *));
            if (nd) {
                s->done = nd;
                s->done[s->n_done] = strdup(m[i].key);
                if (s->done[s->n_done])
                    s->n_done++;
            }
        }
    } else {
        s->status = 1;
        for (size_t i = 0; i < n; i++) {
            m[i].reason =
                m[i].n_whys ? alloc_explanation_reason(m[i].whys[m[i].n_whys - 1]) : "Error";
            if (s->aopt.explain)
                continue;
            for (size_t w = 0; w < m[i].n_whys; w++)
                alloc_explanation_print(m[i].whys[w], stderr);
        }
        if (pod)
            fprintf(stderr,
                    "gpuslice schedule: pod %s: its claims do not fit together on any "
                    "node\n",
                    pod);
        else if (n && !m[0].n_whys)
            fprintf(stderr, "gpuslice schedule: claim %s: %s\n", m[0].key, failure);
    }
    for (size_t i = 0; i < n; i++)
        emit(s, &m[i]);
out:
    for (size_t j = 0; j < n; j++)
        alloc_claim_spec_release(spec[j]);
    free(spec);
    return ret;
}

static const json_t *find_object(const struct inputs *in, const char *kind, const char *ns,
                                 const char *name, const char **where)
{
    for (size_t i = 0; i < in->n; i++) {
        const json_t *o = in->v[i].obj;
        if (strcmp(kind_of(o), kind) == 0 && strcmp(meta_str(o, "name", ""), name) == 0 &&
            strcmp(meta_str(o, "namespace", "default"), ns) == 0) {
            if (where)
                *where = in->v[i].where;
            return o;
        }
    }
    return NULL;
}

/* Kubernetes names a pod's claim from a template "<pod>-<entry>-<5 random characters>"; here
 * the 5 characters come from a hash of namespace, pod and entry so runs are reproducible. */
static void generated_name(const char *ns, const char *pod, const char *entry, char *out,
                           size_t len)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t h = 1469598103934665603ULL;
    const char *parts[] = {ns, "/", pod, "/", entry};
    for (size_t p = 0; p < GS_ARRAY_SIZE(parts); p++)
        for (const char *c = parts[p]; *c; c++) {
            h ^= (unsigned char)*c;
            h *= 1099511628211ULL;
        }
    char suffix[6];
    for (int i = 0; i < 5; i++) {
        suffix[i] = alphabet[h % (sizeof(alphabet) - 1)];
        h /= sizeof(alphabet) - 1;
    }
    suffix[5] = 0;
    snprintf(out, len, "%.28s-%.28s-%s", pod, entry, suffix);
}

/* Pods present: allocate each pod's claims together (existing ones by name, new ones from
 * templates); claims no pod uses stay pending, as in a cluster. */
static int schedule_pods(struct sched *s, const struct inputs *in)
{
    for (size_t i = 0; i < in->n; i++) {
        const json_t *pod = in->v[i].obj;
        if (strcmp(kind_of(pod), "Pod") != 0)
            continue;
        const char *ns = meta_str(pod, "namespace", "default"), *pname = meta_str(pod, "name", "");
        char pkey[600];
        snprintf(pkey, sizeof(pkey), "%s/%s", ns, pname);
        const json_t *rcs = json_object_get(json_object_get(pod, "spec"), "resourceClaims");
        size_t n = json_is_array(rcs) ? json_array_size(rcs) : 0;
        struct member *m = calloc(n + 1, sizeof(*m));
        size_t nm = 0;
        int ret = 0;
        if (!m)
            return 2;
        for (size_t k = 0; k < n && ret == 0; k++) {
            const json_t *rc = json_array_get(rcs, k);
            const char *entry = json_string_value(json_object_get(rc, "name"));
            const char *cname = json_string_value(json_object_get(rc, "resourceClaimName"));
            const char *tname = json_string_value(json_object_get(rc, "resourceClaimTemplateName"));
            const char *where = in->v[i].where;
            struct member *x = &m[nm];
            if (!entry || (!cname == !tname)) {
                fprintf(stderr,
                        "gpuslice schedule: %s: Pod %s: spec.resourceClaims[%zu]: needs "
                        "name and one of resourceClaimName, resourceClaimTemplateName\n",
                        where, pname, k);
                ret = 2;
                break;
            }
            if (cname) {
                const json_t *c = find_object(in, "ResourceClaim", ns, cname, &where);
                if (!c) {
                    fprintf(stderr,
                            "gpuslice schedule: %s: Pod %s: spec.resourceClaims[%zu]: "
                            "ResourceClaim %s/%s not found\n",
                            in->v[i].where, pname, k, ns, cname);
                    ret = 2;
                    break;
                }
                snprintf(x->key, sizeof(x->key), "%s/%s", ns, cname);
                if (is_allocated(c) || is_done(s, x->key))
                    continue; /* allocated already (shared with another pod) */
                x->obj = (json_t *)c;
                x->where = where;
            } else {
                const json_t *t = find_object(in, "ResourceClaimTemplate", ns, tname, &where);
                const json_t *tspec =
                    t ? json_object_get(json_object_get(t, "spec"), "spec") : NULL;
                if (!tspec) {
                    fprintf(stderr,
                            "gpuslice schedule: %s: Pod %s: spec.resourceClaims[%zu]: "
                            "ResourceClaimTemplate %s/%s not found (or has no spec.spec)\n",
                            in->v[i].where, pname, k, ns, tname);
                    ret = 2;
                    break;
                }
                char gname[80];
                generated_name(ns, pname, entry, gname, sizeof(gname));
                x->obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:O}", "apiVersion",
                                   "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata",
                                   "name", gname, "namespace", ns, "annotations",
                                   "resource.kubernetes.io/pod-claim-name", entry, "spec", tspec);
                if (!x->obj) {
                    ret = 2;
                    break;
                }
                x->generated = true;
                x->where = where;
                snprintf(x->key, sizeof(x->key), "%s/%s", ns, gname);
            }
            nm++;
        }
        if (ret == 0 && nm)
            ret = schedule_group(s, pkey, m, nm);
        for (size_t k = 0; k < nm; k++)
            member_fini(&m[k]);
        free(m);
        if (ret)
            return ret;
    }
    /* Claims no pod uses: pending, not a failure. */
    for (size_t i = 0; i < in->n; i++) {
        json_t *o = in->v[i].obj;
        if (strcmp(kind_of(o), "ResourceClaim") != 0 || is_allocated(o))
            continue;
        struct member x = {.obj = o, .where = in->v[i].where, .reason = "Pending (no pod uses it)"};
        snprintf(x.key, sizeof(x.key), "%s/%s", meta_str(o, "namespace", "default"),
                 meta_str(o, "name", ""));
        if (is_done(s, x.key))
            continue;
        if (s->fmt == OUT_TABLE && s->aopt.explain)
            printf("claim %s: Pending: no pod uses it\n", x.key);
        else
            emit(s, &x);
    }
    return 0;
}

static int schedule_claims(struct sched *s, const struct inputs *in)
{
    for (size_t i = 0; i < in->n; i++) {
        json_t *o = in->v[i].obj;
        if (strcmp(kind_of(o), "ResourceClaim") != 0 || is_allocated(o))
            continue;
        struct member x = {.obj = o, .where = in->v[i].where};
        snprintf(x.key, sizeof(x.key), "%s/%s", meta_str(o, "namespace", "default"),
                 meta_str(o, "name", "(unnamed)"));
        int r = schedule_group(s, NULL, &x, 1);
        member_fini(&x);
        if (r)
            return r;
    }
    return 0;
}

int cmd_schedule(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"node", required_argument, NULL, 'n'},
        {"policy", required_argument, NULL, 'p'},
        {"explain", no_argument, NULL, 'e'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *files[256];
    size_t n_files = 0;
    const char *node = NULL;
    enum out_format fmt = OUT_TABLE;
    struct alloc_options aopt = {.policy = ALLOC_POLICY_FIRST_FIT};
    struct gs_error err = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (n_files == GS_ARRAY_SIZE(files)) {
                fprintf(stderr, "gpuslice schedule: too many -f options (max 256)\n");
                return 2;
            }
            files[n_files++] = optarg;
            break;
        case 'n':
            node = optarg;
            break;
        case 'p':
            if (alloc_policy_parse(optarg, &aopt.policy, &err) < 0) {
                fprintf(stderr, "gpuslice schedule: --%s\n", err.msg);
                return 2;
            }
            break;
        case 'e':
            aopt.explain = true;
            break;
        case 'o':
            if (strcmp(optarg, "table") == 0)
                fmt = OUT_TABLE;
            else if (strcmp(optarg, "yaml") == 0)
                fmt = OUT_YAML;
            else if (strcmp(optarg, "json") == 0)
                fmt = OUT_JSON;
            else {
                fprintf(stderr, "gpuslice schedule: --output: \"%s\" is not table, yaml or json\n",
                        optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuslice schedule: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (n_files == 0) {
        fprintf(stderr, "gpuslice schedule: -f FILE_OR_DIR is required\n");
        usage(stderr);
        return 2;
    }

    struct inputs in = {0};
    struct sched sc = {.aopt = aopt, .fmt = fmt, .st = alloc_state_new(), .items = json_array()};
    if (!sc.st || !sc.items) {
        fprintf(stderr, "gpuslice schedule: out of memory\n");
        sc.status = 2;
        goto out;
    }
    for (size_t i = 0; i < n_files; i++)
        if (load_path(&in, files[i]) < 0) {
            sc.status = 2;
            goto out;
        }
    /* Devices, classes and nodes first, then claims that are already allocated. */
    bool pods = false;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < in.n; i++) {
            const json_t *o = in.v[i].obj;
            const char *kind = kind_of(o);
            bool claim = strcmp(kind, "ResourceClaim") == 0;
            bool known = claim || strcmp(kind, "ResourceSlice") == 0 ||
                         strcmp(kind, "DeviceClass") == 0 || strcmp(kind, "Node") == 0;
            pods |= strcmp(kind, "Pod") == 0;
            if (!known || (pass == 0) == claim || (claim && !is_allocated(o)))
                continue;
            if (alloc_state_add_object(sc.st, o, &err) < 0) {
                fprintf(stderr, "gpuslice schedule: %s: %s\n", in.v[i].where, err.msg);
                sc.status = 2;
                goto out;
            }
        }
    if (node) {
        if (add_name(&sc.nodes, &sc.n_nodes, node) < 0)
            goto oom;
    } else if (candidate_nodes(&in, &sc.nodes, &sc.n_nodes) < 0)
        goto oom;
    if (sc.n_nodes == 0) {
        fprintf(stderr, "gpuslice schedule: no node named by the objects (no Node, no "
                        "ResourceSlice with nodeName): use --node NAME\n");
        sc.status = 2;
        goto out;
    }
    if (fmt == OUT_TABLE && !aopt.explain)
        table_header();
    int r = pods ? schedule_pods(&sc, &in) : schedule_claims(&sc, &in);
    if (r) {
        sc.status = r;
        goto out;
    }
    if (fmt == OUT_JSON) {
        json_t *list =
            json_pack("{s:s,s:s,s:O}", "apiVersion", "v1", "kind", "List", "items", sc.items);
        char *str = list ? json_dumps(list, JSON_INDENT(2)) : NULL;
        if (str)
            printf("%s\n", str);
        free(str);
        json_decref(list);
    } else if (fmt == OUT_YAML) {
        size_t i;
        json_t *it;
        json_array_foreach(sc.items, i, it)
        {
            printf("---\n");
            gs_yaml_dumpf(stdout, it);
        }
    }
    goto out;
oom:
    fprintf(stderr, "gpuslice schedule: out of memory\n");
    sc.status = 2;
out:
    for (size_t i = 0; i < in.n; i++)
        json_decref(in.v[i].obj);
    free(in.v);
    for (size_t i = 0; i < sc.n_nodes; i++)
        free(sc.nodes[i]);
    free(sc.nodes);
    for (size_t i = 0; i < sc.n_done; i++)
        free(sc.done[i]);
    free(sc.done);
    json_decref(sc.items);
    alloc_state_free(sc.st);
    return sc.status;
}
