/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL device selectors built from legacy HAMi pod annotations (see docs/internals/webhook.md).
 *
 * Every value that comes from a user (annotation entries, the driver name) enters the expression
 * only as a CEL string literal produced by wh_cel_quote(): double quotes, with `"`, `\`, control
 * characters and every non-ASCII code point escaped, so no annotation value can end the literal
 * and inject CEL.
 */
#ifndef GS_WEBHOOK_SELECTOR_H
#define GS_WEBHOOK_SELECTOR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define WH_ANN_USE_UUID   "nvidia.com/use-gpuuuid"
#define WH_ANN_NOUSE_UUID "nvidia.com/nouse-gpuuuid"
#define WH_ANN_USE_TYPE   "nvidia.com/use-gputype"
#define WH_ANN_NOUSE_TYPE "nvidia.com/nouse-gputype"
#define WH_ANN_TOPOLOGY   "gpuslice.io/topology"

/* Kubernetes' limit on one DRA CEL selector expression. */
#define WH_CEL_MAX_LEN 10240

/*
 * Append `s` (UTF-8, `len` bytes) to `buf` (NUL-terminated, capacity `cap`) as a CEL double-quoted
 * string literal. -EINVAL for invalid UTF-8 or an embedded NUL, -ENOSPC when it does not fit.
 */
int wh_cel_quote(char *buf, size_t cap, const char *s, size_t len);

/*
 * Build the selectors for the pod's annotations (object, may be NULL) and append them to
 * `selectors` (a JSON array of {"cel": {"expression": ...}} objects). `driver` is the attribute
 * domain of our devices. Returns 0 or a negative code with a message naming the annotation.
 */
int wh_selectors_from_annotations(const json_t *annotations, const char *driver, json_t *selectors,
                                  struct gs_error *err);

/* The selector matching devices whose `memory` capacity equals `bytes` exactly. */
int wh_selector_memory_size(const char *driver, int64_t bytes, json_t *selectors,
                            struct gs_error *err);

/* Replace every byte that is not part of valid UTF-8 with '?', in place (messages truncated with
 * %.64s may cut a character in two; JSON needs valid UTF-8). */
void wh_utf8_sanitize(char *s);

#endif /* GS_WEBHOOK_SELECTOR_H */
