/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    struct gs_error err = {0};
    int rc = gs_error_set(&err, -EINVAL, "memory: %s is not a quantity", "abc");
    is_int(rc, -EINVAL, "gs_error_set returns the code");
    is_int(err.code, -EINVAL, "code stored");
    is_str(err.msg, "memory: abc is not a quantity", "message formatted");

    rc = gs_error_set(&err, EINVAL, "positive codes are negated");
    is_int(rc, -EINVAL, "positive code negated");

    gs_error_set(&err, -ERANGE, "value too large");
    gs_error_prefix(&err, "%s: ", "claim.yaml");
    is_str(err.msg, "claim.yaml: value too large", "prefix keeps message");
    is_int(err.code, -ERANGE, "prefix keeps code");
    is_int(gs_error_prefix(&err, "x: "), -ERANGE, "prefix returns the code");
    is_int(gs_error_prefix(NULL, "x: "), -EINVAL, "prefix with NULL err still returns an error");
    gs_error_clear(&err);
    is_int(gs_error_prefix(&err, "x: "), -EINVAL, "prefix of no error still returns an error");

    is_int(gs_error_set(NULL, -ENOMEM, "x"), -ENOMEM, "NULL err is allowed");

    char big[600];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    gs_error_set(&err, -E2BIG, "%s", big);
    is_uint(strlen(err.msg), GS_ERROR_MSG_MAX - 1, "message truncated to the fixed buffer");

    gs_error_clear(&err);
    is_int(err.code, 0, "clear resets code");
    is_str(err.msg, "", "clear resets message");
    like_str(gs_strerror(-ENOENT), "No such file", "gs_strerror names the errno");
    return tap_done();
}
