/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error convention (see docs/internals/common.md):
 *  - functions return 0 on success or a negative errno-style code (-EINVAL, -ENOMEM, -ERANGE, ...),
 *    or a pointer / NULL;
 *  - where a message matters they also take `struct gs_error *err` (may be NULL), filled with the
 *    same code and a human message naming the field and the value. Reporting never allocates.
 */
#ifndef GS_COMMON_ERROR_H
#define GS_COMMON_ERROR_H

#include <stdarg.h>

#include "common/macros.h"

#define GS_ERROR_MSG_MAX 256

struct gs_error {
    int code; /* negative errno-style code, 0 = no error */
    char msg[GS_ERROR_MSG_MAX];
};

/* Set *err (if non-NULL) and return `code` (which must be negative) so callers can
 * `return gs_error_set(err, -EINVAL, "memory: %s is not a quantity", s);` */
int gs_error_set(struct gs_error *err, int code, const char *fmt, ...) GS_PRINTF(3, 4);
int gs_error_setv(struct gs_error *err, int code, const char *fmt, va_list ap) GS_PRINTF(3, 0);

/* Prefix an existing message: "file.yaml: " + old message. Keeps the code. */
int gs_error_prefix(struct gs_error *err, const char *fmt, ...) GS_PRINTF(2, 3);

void gs_error_clear(struct gs_error *err);

/* Message for a code when no struct gs_error was filled (strerror-like, never NULL). */
const char *gs_strerror(int code);

#endif /* GS_COMMON_ERROR_H */
