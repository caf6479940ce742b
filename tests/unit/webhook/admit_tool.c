/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test driver: runs one AdmissionReview file through wh_admit() with cluster facts given on the
 * command line, and prints {"status", "content_type", "body", "templates"} as JSON, where
 * "templates" are the ResourceClaimTemplates the webhook asked to exist. Used by
 * test_fixtures.py, which applies the patch with python3-jsonpatch and validates the result.
 *
 *   admit_tool REVIEW.json [--sizes BYTES,BYTES] [--no-slices] [--own-claims NAME,NAME]
 *              [--extended RESOURCE=CLASS] [--device-class C] [--resource-name N]
 *              [--resource-mem N] [--resource-mem-percentage N] [--resource-cores N]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/admit.h"

struct facts {
    int64_t sizes[64];
    size_t n_sizes;
    int slices_error;
    const char *own_claims; /* comma list of pod claim names that use our class */
    const char *extended;   /* RESOURCE=CLASS */
    json_t *ensured;
};

static int memory_sizes(void *user, uint64_t deadline_ms, int64_t *sizes, size_t max, size_t *n,
                        struct gs_error *err)
{
    struct facts *f = user;
    if (f->slices_error)
        return gs_error_set(err, -ECONNREFUSED, "cannot list ResourceSlices: connection refused");
    for (size_t i = 0; i < f->n_sizes && i < max; i++)
        sizes[i] = f->sizes[i];
    *n = f->n_sizes;
    return 0;
}

static int pod_claim_uses_class(void *user, uint64_t deadline_ms, const char *ns,
                                const json_t *pod_claim, const char *device_class,
                                struct gs_error *err)
{
    struct facts *f = user;
    const char *name = json_string_value(json_object_get(pod_claim, "name"));
    if (!f->own_claims || !name)
        return 0;
    char list[512];
    snprintf(list, sizeof(list), ",%s,", f->own_claims);
    char needle[300];
    snprintf(needle, sizeof(needle), ",%s,", name);
    return strstr(list, needle) != NULL;
}

static int extended_resource_class(void *user, uint64_t deadline_ms, const char *resource,
                                   char *buf, size_t len)
{
    struct facts *f = user;
    const char *eq = f->extended ? strchr(f->extended, '=') : NULL;
    if (!eq || strlen(resource) != (size_t)(eq - f->extended) ||
        strncmp(f->extended, resource, (size_t)(eq - f->extended)) != 0)
        return 0;
    snprintf(buf, len, "%s", eq + 1);
    return 1;
}

static int ensure(void *user, const json_t *templates, uint64_t deadline_ms, struct gs_error *err)
{
    struct facts *f = user;
    json_array_extend(f->ensured, (json_t *)templates);
    return 0;
}

int main(int argc, char **argv)
{
    struct facts f = {.ensured = json_array()};
    struct wh_names names;
    wh_names_default(&names);
    if (argc < 2) {
        fprintf(stderr, "usage: %s REVIEW.json [options]\n", argv[0]);
        return 2;
    }
    for (int a = 2; a + 1 < argc || (a < argc && strcmp(argv[a], "--no-slices") == 0); a++) {
        const char *k = argv[a];
        if (strcmp(k, "--no-slices") == 0) {
            f.slices_error = 1;
            continue;
        }
        const char *v = argv[++a];
        if (strcmp(k, "--sizes") == 0) {
            for (char *p = (char *)v; *p && f.n_sizes < 64;) {
                f.sizes[f.n_sizes++] = strtoll(p, &p, 10);
                if (*p == ',')
                    p++;
            }
        } else if (strcmp(k, "--own-claims") == 0) {
            f.own_claims = v;
        } else if (strcmp(k, "--extended") == 0) {
            f.extended = v;
        } else if (strcmp(k, "--device-class") == 0) {
            names.device_class = v;
        } else if (strcmp(k, "--resource-name") == 0) {
            names.gpu = v;
        } else if (strcmp(k, "--resource-mem") == 0) {
            names.mem = v;
        } else if (strcmp(k, "--resource-mem-percentage") == 0) {
            names.mem_pct = v;
        } else if (strcmp(k, "--resource-cores") == 0) {
            names.cores = v;
        } else {
            fprintf(stderr, "unknown option %s\n", k);
            return 2;
        }
    }
    FILE *in = fopen(argv[1], "rb");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    static char body[4u << 20];
    size_t len = fread(body, 1, sizeof(body), in);
    fclose(in);

    struct wh_cluster_ops ops = {memory_sizes, pod_claim_uses_class, extended_resource_class, &f};
    struct wh_admit_ctx ctx = {
        .names = &names, .ops = &ops, .ensure_templates = ensure, .ensure_user = &f};
    struct wh_admit_reply reply;
    wh_admit(&ctx, body, len, &reply);
    json_t *parsed = reply.body ? json_loads(reply.body, 0, NULL) : NULL;
    json_t *out = json_pack("{s:i,s:s,s:o,s:O}", "status", (int)reply.status, "content_type",
                            reply.content_type ? reply.content_type : "", "body",
                            parsed ? parsed : json_string(reply.body ? reply.body : ""),
                            "templates", f.ensured);
    char *text = json_dumps(out, JSON_INDENT(1) | JSON_SORT_KEYS);
    puts(text);
    free(text);
    json_decref(out);
    json_decref(f.ensured);
    wh_admit_reply_fini(&reply);
    return 0;
}
