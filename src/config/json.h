/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON helpers on jansson: a bounded parser and typed getters addressed by a dotted path.
 *
 * Path syntax: `spec.devices.requests[0].name`; a key holding dots or brackets is written
 * quoted in brackets: `metadata.annotations["nvidia.com/gpu"]`.
 *
 * Getters return 0 and fill *out, or a negative code with a message naming the path:
 *   -ENOENT  "spec.devices.requests[0].name: missing" (also for an out-of-range index, naming
 *            the array length, and for a null or missing intermediate object)
 *   -EINVAL  "spec.devices.requests[0].name: expected string, got number"
 *   -ERANGE  integer outside the caller's bounds, quantity out of range
 * The reported path stops at the first segment that is missing or of the wrong type.
 * Optional variants (`gs_json_opt_*`) return 1 when present, 0 when absent or null (then *out is
 * the default), and the same negative codes for a wrong type. Borrowed references: strings and
 * json_t pointers handed out live as long as `root`.
 */
#ifndef GS_COMMON_JSON_H
#define GS_COMMON_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "config/quantity.h"

static inline void gs_json_decrefp(json_t **p)
{
    if (*p) {
        json_decref(*p);
        *p = NULL;
    }
}

/* Longest path accepted by the getters (characters). */
#define GS_JSON_PATH_MAX 512

/*
 * Parse `len` bytes of JSON (any top-level value). Refuses more than `max_len` bytes with -E2BIG
 * before looking at them, malformed text, duplicate object keys and embedded NUL with -EINVAL
 * and "line L, column C: <reason>". Returns a new reference or NULL (err says why).
 */
json_t *gs_json_parse(const char *buf, size_t len, size_t max_len, struct gs_error *err);

/* "object", "array", "string", "number" (integer or real), "boolean", "null". */
const char *gs_json_type_name(const json_t *v);

/* Look up `path`; -ENOENT if missing or null. */
int gs_json_lookup(json_t *root, const char *path, json_t **out, struct gs_error *err);

int gs_json_get_string(json_t *root, const char *path, const char **out, struct gs_error *err);
int gs_json_get_int(json_t *root, const char *path, int64_t *out, struct gs_error *err);
/* Integer within [min, max]; -ERANGE otherwise ("spec.cores: 101 is above the maximum 100"). */
int gs_json_get_int_range(json_t *root, const char *path, int64_t min, int64_t max, int64_t *out,
                          struct gs_error *err);
int gs_json_get_double(json_t *root, const char *path, double *out, struct gs_error *err);
int gs_json_get_bool(json_t *root, const char *path, bool *out, struct gs_error *err);
int gs_json_get_object(json_t *root, const char *path, json_t **out, struct gs_error *err);
int gs_json_get_array(json_t *root, const char *path, json_t **out, struct gs_error *err);
/* A Kubernetes quantity: a string ("4Gi") or a JSON number (30, 0.5), as Quantity's JSON form. */
int gs_json_get_quantity(json_t *root, const char *path, struct gs_quantity *out,
                         struct gs_error *err);

int gs_json_opt_string(json_t *root, const char *path, const char *def, const char **out,
                       struct gs_error *err);
int gs_json_opt_int(json_t *root, const char *path, int64_t def, int64_t *out,
                    struct gs_error *err);
int gs_json_opt_bool(json_t *root, const char *path, bool def, bool *out, struct gs_error *err);
int gs_json_opt_object(json_t *root, const char *path, json_t **out, struct gs_error *err);
int gs_json_opt_array(json_t *root, const char *path, json_t **out, struct gs_error *err);
int gs_json_opt_quantity(json_t *root, const char *path, const struct gs_quantity *def,
                         struct gs_quantity *out, struct gs_error *err);

/* A quantity from a JSON value (string or number); `what` names it in messages. */
int gs_json_quantity_value(const json_t *v, const char *what, struct gs_quantity *out,
                           struct gs_error *err);

#endif /* GS_COMMON_JSON_H */
