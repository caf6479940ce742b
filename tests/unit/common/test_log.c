/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "tap.h"

static char captured[4096];

static void capture(void (*fn)(void))
{
    int p[2];
    if (pipe(p) != 0)
        return;
    gs_log_set_fd(p[1]);
    fn();
    close(p[1]);
    ssize_t n = read(p[0], captured, sizeof(captured) - 1);
    captured[n > 0 ? n : 0] = '\0';
    close(p[0]);
    gs_log_set_fd(2);
}

static void emit_info(void)
{
    gs_info("claim prepared", "claim=%s devices=%d", "ns/c1", 2);
}

static void emit_debug(void)
{
    gs_debug("hidden", "k=%d", 1);
}

static void emit_quoted(void)
{
    char q[64];
    gs_warn("bad value", "value=%s", gs_log_quote(q, sizeof(q), "a b\"c"));
}

int main(void)
{
    tap_plan_auto();
    gs_log_set_component("test");
    capture(emit_info);
    like_str(captured, "level=info comp=test msg=\"claim prepared\" claim=ns/c1 devices=2\n",
             "logfmt line with key/values");
    ok(strncmp(captured, "ts=", 3) == 0, "line starts with a timestamp");
    ok(strchr(captured, '\n') == captured + strlen(captured) - 1, "exactly one line");

    capture(emit_debug);
    is_str(captured, "", "debug suppressed at info level");
    gs_log_set_level(GS_LOG_DEBUG);
    capture(emit_debug);
    like_str(captured, "level=debug", "debug shown at debug level");

    capture(emit_quoted);
    like_str(captured, "value=\"a b\\\"c\"", "values quoted and escaped");

    enum gs_log_level lvl;
    is_int(gs_log_parse_level("warn", &lvl), 0, "parse warn");
    is_int(lvl, GS_LOG_WARN, "warn level");
    is_int(gs_log_parse_level("4", &lvl), 0, "parse numeric");
    is_int(lvl, GS_LOG_DEBUG, "numeric 4 = debug");
    is_int(gs_log_parse_level("loud", &lvl), -EINVAL, "unknown level rejected");
    return tap_done();
}
