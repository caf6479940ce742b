/* SPDX-License-Identifier: Apache-2.0 */
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int gs_error_setv(struct gs_error *err, int code, const char *fmt, va_list ap)
{
    if (code > 0)
        code = -code;
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    }
    return code;
}

int(gs_error_set)(struct gs_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    code = gs_error_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int gs_error_prefix(struct gs_error *err, const char *fmt, ...)
{
    if (!err)
        return -EINVAL;
    char prefix[GS_ERROR_MSG_MAX];
    char old[GS_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s%s", prefix, old);
    return err->code < 0 ? err->code : -EINVAL;
}

void gs_error_clear(struct gs_error *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

const char *gs_strerror(int code)
{
    if (code < 0)
        code = -code;
    /* strerror is not thread-safe in theory; strerrordesc_np is, and never returns NULL for
     * known codes. */
    const char *s = strerrordesc_np(code);
    return s ? s : "unknown error";
}
