/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error convention (see docs/internals/layers.md):
 *  - functions return 0 on success or a negative errno-style code (-EINVAL, -ENOMEM, -ERANGE, ...),
 *    or a pointer / NULL;
 *  - where a message matters they also take `struct gs_error *err` (may be NULL), filled with the
 *    same code and a human message naming the field and the value. Reporting never allocates.
 */
#ifndef GS_COMMON_ERROR_H
#define GS_COMMON_ERROR_H

#include <stdarg.h>

#include "base/macros.h"

#define GS_ERROR_MSG_MAX 256

struct gs_error {
    int code; /* negative errno-style code, 0 = no error */
    char msg[GS_ERROR_MSG_MAX];
};

/* Set *err (if non-NULL) and return `code` (which must be negative) so callers can
 * `return gs_error_set(err, -EINVAL, "memory: %s is not a quantity", s);` */
int gs_error_set(struct gs_error *err, int code, const char *fmt, ...) GS_PRINTF(3, 4);
int gs_error_setv(struct gs_error *err, int code, const char *fmt, va_list ap) GS_PRINTF(3, 0);

/* gs_error_set() as a macro so that the returned code is visible where it is called: the static
 * analyzer (make lint) then knows `return gs_error_set(err, -EINVAL, ...)` returns -EINVAL instead
 * of an unknown value from another file, and does not follow impossible "error returned >= 0"
 * paths. `code` is evaluated once, before the message arguments (which may call strerror(errno)).
 */
#define gs_error_set(err, code, ...)                                                               \
    __extension__({                                                                                \
        int gs_error_code_ = (code);                                                               \
        if (gs_error_code_ > 0)                                                                    \
            gs_error_code_ = -gs_error_code_;                                                      \
        (gs_error_set)((err), gs_error_code_, __VA_ARGS__);                                        \
        gs_error_code_;                                                                            \
    })

/* Prefix an existing message: "file.yaml: " + old message. Keeps the code and returns it; returns
 * -EINVAL when err is NULL or holds no error, so `return gs_error_prefix(...)` on a failure path
 * never reads as success. Where the failing call's code is at hand, prefer `return
 * gs_error_prefix(err, "..."), r;`. */
int gs_error_prefix(struct gs_error *err, const char *fmt, ...) GS_PRINTF(2, 3);

void gs_error_clear(struct gs_error *err);

/* Message for a code when no struct gs_error was filled (strerror-like, never NULL). */
const char *gs_strerror(int code);

#endif /* GS_COMMON_ERROR_H */
