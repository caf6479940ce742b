/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offline translation of manifests: `gpuslice-webhook translate FILE...` (or `-` for stdin).
 *
 * For every Pod, and every pod template of a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
 * CronJob or ReplicationController (also inside a `kind: List`), the same translation /mutate
 * does, applied to the manifest; the ResourceClaimTemplates it needs are added in front. The
 * result is one `kind: List` (JSON) that kubectl can apply: a migration of legacy manifests to DRA
 * without the webhook. Other objects are passed through unchanged. Warnings and denials go to
 * `diag`, naming the file, the document and the object.
 */
#ifndef GS_WEBHOOK_PREVIEW_H
#define GS_WEBHOOK_PREVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "webhook/shape.h"

#define WH_PREVIEW_MAX_FILE (16u * 1024u * 1024u)

struct wh_preview_config {
    const struct wh_names *names;
    const int64_t *sizes; /* GPU memory sizes (bytes) for percentages; NULL = none known */
    size_t n_sizes;
    const char *default_namespace; /* for objects without metadata.namespace */
};

/* 0: everything translated or unchanged; 1: some object was denied (kept unchanged in the
 * output); negative: a file could not be read or parsed (message in err, nothing printed). */
int wh_preview(const struct wh_preview_config *cfg, char *const *files, size_t n_files, FILE *out,
               FILE *diag, struct gs_error *err);

/* The same for one text already in memory (`name` names it in messages). -EPROTO if a patch
 * the translation produced could not be applied to the manifest (a bug, never bad input). */
int wh_preview_text(const struct wh_preview_config *cfg, const char *name, const char *text,
                    size_t len, FILE *out, FILE *diag, struct gs_error *err);

/* Parse "15Gi,80Gi" into bytes. -EINVAL with the offending entry named. */
int wh_parse_memory_sizes(const char *list, int64_t *sizes, size_t max, size_t *n,
                          struct gs_error *err);

#endif /* GS_WEBHOOK_PREVIEW_H */
