/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Apply a JSON Patch (RFC 6902) in place: the `add` and `remove` operations the webhook emits,
 * with JSON Pointer paths (RFC 6901, "~0"/"~1" escapes, "-" = append). Used by the offline
 * `translate` mode to show the rewritten manifest.
 */
#ifndef GS_WEBHOOK_PATCH_H
#define GS_WEBHOOK_PATCH_H

#include <jansson.h>

#include "base/error.h"

/* 0, or -EINVAL with a message naming the operation index and path (unsupported op, missing
 * parent, bad index). `doc` may be partly patched on failure. */
int wh_json_patch_apply(json_t *doc, const json_t *patch, struct gs_error *err);

#endif /* GS_WEBHOOK_PATCH_H */
