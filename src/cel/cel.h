/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL for DRA device selectors: compile once, evaluate many times (see docs/internals/cel.md).
 *
 *   struct gs_error err;
 *   struct cel_program *p = cel_compile("device.driver == \"x\"", &err);   // NULL + message on
 * error struct cel_device dev = {.driver = "x", .attributes = attrs, .capacity = cap}; bool match;
 *   if (cel_eval_device(p, &dev, &match, &err) < 0) ... // runtime error: err.msg names the column
 *   cel_program_free(p);
 *
 * Limits as upstream Kubernetes: an expression is at most CEL_MAX_EXPRESSION_LEN bytes; one
 * evaluation may spend at most CEL_COST_LIMIT cost units (exceeding it is a runtime error).
 *
 * Threads: a compiled program is immutable; any number of threads may evaluate it at the same
 * time. A struct cel_cache is internally locked; the programs it returns live until
 * cel_cache_free() and may be evaluated concurrently.
 */
#ifndef GS_CEL_CEL_H
#define GS_CEL_CEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define CEL_MAX_EXPRESSION_LEN 10240   /* bytes, as Kubernetes' DRA selector limit */
#define CEL_COST_LIMIT         1000000 /* runtime cost units per evaluation */

struct cel_program; /* opaque compiled expression (parsed + type-checked) */

/* Parse and check `expr` in the DRA environment (variable `device`). Returns NULL on error with
 * err->msg like "ERROR: <input>:1:8: undeclared reference to 'devic'" (line:column, 1-based). */
struct cel_program *cel_compile(const char *expr, struct gs_error *err);
void cel_program_free(struct cel_program *p);
/* The expression text the program was compiled from. */
const char *cel_program_source(const struct cel_program *p);

/*
 * The DRA `device` variable. Attributes and capacity are given as in a ResourceSlice device
 * (jansson objects, borrowed for the duration of the call, may be NULL = empty):
 *   attributes {"uuid": {"string": "GPU-..."}, "resource.kubernetes.io/pcieRoot": {"string":
 * "pci0"}, "minor": {"int": 0}, "cudaComputeCapability": {"version": "7.5.0"}, "x": {"bool": true}}
 *   capacity   {"memory": {"value": "15Gi", "requestPolicy": {...}}, "cores": {"value": "100"}}
 * Names without a domain prefix ("uuid") live under the driver's domain, so
 *   device.attributes["hami-core-gpu.project-hami.io"].uuid
 * reads "uuid" above. Qualified names ("resource.kubernetes.io/pcieRoot") live under their domain.
 */
struct cel_device {
    const char *driver;
    const json_t *attributes;
    const json_t *capacity;
    bool allow_multiple_allocations;
};

/* Evaluate a selector against one device. Returns 0 and sets *out, or a negative code with a
 * message: runtime error (e.g. "no such key: foo" with its column), cost limit exceeded,
 * a malformed attribute/capacity entry, or a result that is not a bool. */
int cel_eval_device(const struct cel_program *p, const struct cel_device *dev, bool *out,
                    struct gs_error *err);

/* Cache of compiled programs keyed by expression text (thread-safe). */
struct cel_cache;
struct cel_cache *cel_cache_new(void);
void cel_cache_free(struct cel_cache *c);
/* Borrowed program, valid until cel_cache_free(). Compile errors are cached as well: the same
 * failing expression returns NULL with the same message without being recompiled. */
const struct cel_program *cel_cache_get(struct cel_cache *c, const char *expr,
                                        struct gs_error *err);
/* Number of distinct expressions held (for tests and stats). */
size_t cel_cache_size(const struct cel_cache *c);

#endif /* GS_CEL_CEL_H */
