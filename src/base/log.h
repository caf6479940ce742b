/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One line per event, logfmt, to stderr:
 *   ts=2026-11-30T04:47:08.123Z level=info comp=plugin msg="claim prepared" claim=ns/name
 * Each line is formatted into a stack buffer and written with one write(2): no allocation, no
 * locks, safe after fork and from several threads.
 */
#ifndef GS_COMMON_LOG_H
#define GS_COMMON_LOG_H

#include <stdarg.h>

#include "base/macros.h"

enum gs_log_level {
    GS_LOG_ERROR = 1,
    GS_LOG_WARN = 2,
    GS_LOG_INFO = 3,
    GS_LOG_DEBUG = 4,
};

#define GS_LOG_LINE_MAX 2048

/* Process-wide settings. Defaults: level info, component "gpuslice", fd 2. */
void gs_log_set_level(enum gs_log_level level);
enum gs_log_level gs_log_get_level(void);
void gs_log_set_component(const char *comp); /* pointer kept: pass a string literal */
void gs_log_set_fd(int fd);
/* Parse "error|warn|info|debug" or "1".."4"; returns 0 or -EINVAL. */
int gs_log_parse_level(const char *s, enum gs_log_level *out);

/*
 * gs_log(level, msg, fmt, ...): `msg` is the human sentence, `fmt` formats extra logfmt
 * key=value pairs (may be NULL or ""). Values with spaces must be quoted by the caller with
 * gs_log_quote() or the %q-like helper below.
 */
void gs_log(enum gs_log_level level, const char *msg, const char *kvfmt, ...) GS_PRINTF(3, 4);
void gs_logv(enum gs_log_level level, const char *msg, const char *kvfmt, va_list ap)
    GS_PRINTF(3, 0);

/* Quote a value for logfmt into buf (adds quotes and escapes when needed). Returns buf. */
const char *gs_log_quote(char *buf, size_t len, const char *value);

/* gs_log_quote into a temporary that lives until the end of the enclosing block, for log call
 * arguments: gs_warn("write failed", "path=%s error=%s", GS_LOGQ(path), GS_LOGQ(err.msg)).
 * Values longer than GS_LOG_QUOTE_MAX are cut. */
#define GS_LOG_QUOTE_MAX 600
#define GS_LOGQ(value)   gs_log_quote((char[GS_LOG_QUOTE_MAX]){0}, GS_LOG_QUOTE_MAX, (value))

#define gs_error_log(msg, ...) gs_log(GS_LOG_ERROR, msg, __VA_ARGS__)
#define gs_warn(msg, ...)      gs_log(GS_LOG_WARN, msg, __VA_ARGS__)
#define gs_info(msg, ...)      gs_log(GS_LOG_INFO, msg, __VA_ARGS__)
#define gs_debug(msg, ...)                                                                         \
    do {                                                                                           \
        if (gs_log_get_level() >= GS_LOG_DEBUG)                                                    \
            gs_log(GS_LOG_DEBUG, msg, __VA_ARGS__);                                                \
    } while (0)

#endif /* GS_COMMON_LOG_H */
