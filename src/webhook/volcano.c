/* SPDX-License-Identifier: Apache-2.0 */
/* Volcano jobs: one ResourceClaimTemplate per task container (HAMi-DRA pkg/webhook/volcano). */
#include "webhook/volcano.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/macros.h"

#define VOLCANO_GROUP "batch.volcano.sh"

bool wh_review_is_volcano_job(const struct wh_review *r)
{
    return strcmp(r->group, VOLCANO_GROUP) == 0 && strcmp(r->kind, "Job") == 0 &&
           strcmp(r->subresource, "") == 0;
}

/* HAMi-DRA handleTask: a job without a name yet (generateName) gets 5 random characters
 * (k8s.io/apimachinery util/rand.String's alphabet). */
static void random_name(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5] = {0};
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        memset(b, 7, sizeof(b));
    for (size_t i = 0; i < 5; i++)
        out[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
    out[5] = '\0';
}

/*
 * The prefix of a task's templates and the value of their WH_ANN_VOLCANO_JOB:
 * "<namespace>-<job>-<task>-<8 hex digits of SHA-256 of "<namespace>/<job>/<task>">".
 * HAMi-DRA (pkg/webhook/volcano/mutating.go handleTask) joins job and task with '-' alone, and
 * '-' is also a character of either name: job "my" task "job-worker" and job "my-job" task
 * "worker" got the same templates, and deleting one job deleted the other's. '/' cannot occur in
 * either name, so the digest tells them apart; names over 63 are still truncated as HAMi-DRA's
 * truncateDNS1123Label (translate.c).
 */
void wh_job_prefix(char *out, size_t len, const char *ns, const char *job, const char *task)
{
    char whole[600];
    unsigned char d[32];
    int n = snprintf(whole, sizeof(whole), "%s/%s/%s", ns, job, task);
    if (n < 0 || (size_t)n >= sizeof(whole) ||
        gnutls_hash_fast(GNUTLS_DIG_SHA256, whole, (size_t)n, d) < 0)
        memset(d, 0, sizeof(d));
    snprintf(out, len, "%s-%s-%s-%02x%02x%02x%02x", ns, job, task, d[0], d[1], d[2], d[3]);
}

int wh_translate_job(const struct wh_names *names, const struct wh_cluster_ops *ops, const char *ns,
                     const json_t *job, struct wh_translation *out, struct gs_error *err)
{
    *out = (struct wh_translation){.templates = json_array(), .warnings = json_array()};
    if (!out->templates || !out->warnings)
        return gs_error_set(err, -ENOMEM, "out of memory");
    const json_t *meta = json_object_get(job, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    char rnd[6];
    if (!name || !name[0]) {
        random_name(rnd);
        name = rnd;
    }
    const json_t *tasks = json_object_get(json_object_get(job, "spec"), "tasks");
    if (tasks && !json_is_array(tasks))
        return gs_error_set(err, -EINVAL, "volcano job: spec.tasks is not a list");
    size_t i;
    json_t *task;
    int r = 0;
    json_array_foreach((json_t *)tasks, i, task)
    {
        const char *tname = json_string_value(json_object_get(task, "name"));
        const json_t *tpl = json_object_get(task, "template");
        char prefix[300], base[64];
        if (!tname || !wh_is_dns_label(tname)) {
            r = gs_error_set(err, -EINVAL,
                             "volcano job: spec.tasks[%zu].name \"%.64s\" is not a DNS-1123 "
                             "label; it names the task's ResourceClaimTemplates",
                             i, tname ? tname : "");
            break;
        }
        if (!json_is_object(json_object_get(tpl, "spec")))
            continue;
        wh_job_prefix(prefix, sizeof(prefix), ns, name, tname);
        snprintf(base, sizeof(base), "/spec/tasks/%zu/template", i);
        r = wh_translate_target(names, ops, ns, json_object_get(tpl, "metadata"),
                                json_object_get(tpl, "spec"), base, prefix, out, err);
        if (r < 0) {
            gs_error_prefix(err, "volcano job: task \"%s\": ", tname);
            break;
        }
    }
    if (r == 0 && out->patch) {
        /* HAMi-DRA labels the job (the DELETE side looks for it). */
        json_t *op;
        if (json_is_object(json_object_get(meta, "labels")))
            op = json_pack("{s:s,s:s,s:s}", "op", "add", "path", "/metadata/labels/hami.io~1dra",
                           "value", "true");
        else
            op = json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path", "/metadata/labels", "value",
                           "hami.io/dra", "true");
        if (!op || json_array_append_new(out->patch, op) < 0)
            r = gs_error_set(err, -ENOMEM, "out of memory");
    }
    if (r < 0) {
        json_decref(out->patch);
        out->patch = NULL;
    }
    return r;
}

int wh_job_owned_templates(const json_t *old_job, const char *ns, json_t **names, json_t **prefixes)
{
    *names = json_array();
    *prefixes = json_array();
    if (!*names || !*prefixes)
        return -ENOMEM;
    const json_t *meta = json_object_get(old_job, "metadata");
    const char *dra =
        json_string_value(json_object_get(json_object_get(meta, "labels"), "hami.io/dra"));
    const char *job = json_string_value(json_object_get(meta, "name"));
    if (!dra || strcmp(dra, "true") != 0 || !job)
        return 0;
    size_t i, k;
    json_t *task, *pc;
    json_array_foreach(json_object_get(json_object_get(old_job, "spec"), "tasks"), i, task)
    {
        const char *tname = json_string_value(json_object_get(task, "name"));
        char prefix[300];
        if (!tname)
            continue;
        wh_job_prefix(prefix, sizeof(prefix), ns, job, tname);
        json_array_append_new(*prefixes, json_string(prefix));
        json_array_foreach(
            json_object_get(json_object_get(json_object_get(task, "template"), "spec"),
                            "resourceClaims"),
            k, pc)
        {
            const json_t *t = json_object_get(pc, "resourceClaimTemplateName");
            if (json_is_string(t))
                json_array_append(*names, (json_t *)t);
        }
    }
    return 0;
}
