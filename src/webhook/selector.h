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
#include <stdbool.h>
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

/* How use-gputype/nouse-gputype entries match the productName attribute. */
enum wh_type_match {
    WH_TYPE_MATCH_SUBSTRING = 0, /* legacy HAMi: case-insensitive substring ("A100" matches
                                  * "NVIDIA A100-SXM4-80GB") */
    WH_TYPE_MATCH_EXACT = 1,     /* HAMi-DRA: the productName exactly */
};

/* The four annotation keys of one vendor (NULL = that kind is not offered). */
struct wh_selector_keys {
    const char *use_uuid, *nouse_uuid, *use_type, *nouse_type;
};
extern const struct wh_selector_keys wh_nvidia_selector_keys;

/*
 * Selectors for one vendor's annotations, appended to `selectors`. `fail_closed`: an annotation
 * whose entries all trim to nothing is refused (-EINVAL naming it) instead of ignored: the DRA
 * path (HAMi-DRA's rule); the legacy route keeps HAMi's (ignored).
 */
int wh_selectors_build(const struct wh_selector_keys *keys, const json_t *annotations,
                       const char *driver, enum wh_type_match match, bool fail_closed,
                       json_t *selectors, struct gs_error *err);

/*
 * Legacy HAMi's rule (substring types, empty lists ignored), NVIDIA's keys: the extender.
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
