/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Volcano jobs (batch.volcano.sh/v1alpha1 Job), as HAMi-DRA's pkg/webhook/volcano does: every
 * task container asking legacy resources gets a ResourceClaimTemplate of the job's own, named
 * "<namespace>-<job>-<task>-<hash>-<container>-<vendor>" (wh_job_prefix; truncated to 63 with 8
 * hex digits of SHA-256, truncateDNS1123Label), referenced from the task's pod template; the job
 * and the task templates carry hami.io/dra: "true" so the pods Volcano creates are left alone by
 * the pod path. The templates are created at admission (deleted again when a later one of the job
 * fails) and deleted when the job is deleted (ValidatingAdmission.Handle: dry-run aware).
 */
#ifndef GS_WEBHOOK_VOLCANO_H
#define GS_WEBHOOK_VOLCANO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "webhook/review.h"
#include "webhook/shape.h"
#include "webhook/translate.h"

/* A Volcano Job (not a subresource), any operation. */
bool wh_review_is_volcano_job(const struct wh_review *r);

/*
 * Translate every task of `job` (its request.object). Fills `out` as wh_translate_pod does;
 * out->templates are the job's own (WH_ANN_VOLCANO_JOB). 0 or a negative code with a message.
 */
int wh_translate_job(const struct wh_names *names, const struct wh_cluster_ops *ops, const char *ns,
                     const json_t *job, struct wh_translation *out, struct gs_error *err);

/*
 * The templates a deleted job (request.oldObject) owns: its tasks' resourceClaimTemplateName
 * entries, for a job labelled hami.io/dra=true (new array of names; empty otherwise), and in
 * `prefixes` the wh_job_prefix values their WH_ANN_VOLCANO_JOB must carry.
 */
int wh_job_owned_templates(const json_t *old_job, const char *ns, json_t **names,
                           json_t **prefixes);

/* "<namespace>-<job>-<task>-<8 hex digits of SHA-256 of namespace/job/task>": the prefix of a
 * task's template names and their WH_ANN_VOLCANO_JOB (distinct for job "my" task "job-worker"
 * and job "my-job" task "worker", which HAMi-DRA's "<job>-<task>" confuses). */
void wh_job_prefix(char *out, size_t len, const char *ns, const char *job, const char *task);

#endif /* GS_WEBHOOK_VOLCANO_H */
