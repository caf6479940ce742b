/* SPDX-License-Identifier: Apache-2.0 */
#include "base/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = GS_LOG_INFO;
static const char *_Atomic log_component = "gpuslice";
static _Atomic int log_fd = 2;

void gs_log_set_level(enum gs_log_level level)
{
    if (level < GS_LOG_ERROR)
        level = GS_LOG_ERROR;
    if (level > GS_LOG_DEBUG)
        level = GS_LOG_DEBUG;
    atomic_store(&log_level, (int)level);
}

enum gs_log_level gs_log_get_level(void)
{
    return (enum gs_log_level)atomic_load(&log_level);
}

void gs_log_set_component(const char *comp)
{
    atomic_store(&log_component, comp ? comp : "gpuslice");
}

void gs_log_set_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

int gs_log_parse_level(const char *s, enum gs_log_level *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (!s || !*s)
        return -EINVAL;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, names[i]) == 0 || (s[0] == '1' + i && s[1] == '\0')) {
            *out = (enum gs_log_level)(i + 1);
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = GS_LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

static size_t append(char *buf, size_t pos, size_t len, const char *s)
{
    while (*s && pos + 1 < len)
        buf[pos++] = *s++;
    buf[pos < len ? pos : len - 1] = '\0';
    return pos;
}

const char *gs_log_quote(char *buf, size_t len, const char *value)
{
    if (!buf || len == 0)
        return "";
    if (!value)
        value = "";
    int needs = value[0] == '\0';
    for (const char *p = value; *p; p++)
        if (*p == ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p < 0x20)
            needs = 1;
    if (!needs) {
        snprintf(buf, len, "%s", value);
        return buf;
    }
    size_t pos = 0;
    if (len < 3) {
        buf[0] = '\0';
        return buf;
    }
    buf[pos++] = '"';
    for (const char *p = value; *p && pos + 3 < len; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            buf[pos++] = '\\';
            buf[pos++] = (char)c;
        } else if (c == '\n') {
            buf[pos++] = '\\';
            buf[pos++] = 'n';
        } else if (c < 0x20) {
            buf[pos++] = '?';
        } else {
            buf[pos++] = (char)c;
        }
    }
    buf[pos++] = '"';
    buf[pos] = '\0';
    return buf;
}

void gs_logv(enum gs_log_level level, const char *msg, const char *kvfmt, va_list ap)
{
    if ((int)level > atomic_load(&log_level))
        return;
    static const char *const names[] = {"", "error", "warn", "info", "debug"};
    int saved_errno = errno;
    char line[GS_LOG_LINE_MAX];
    char q[512];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n =
        snprintf(line, sizeof(line),
                 "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s comp=%s msg=", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
                 names[level], atomic_load(&log_component));
    size_t pos = n < 0 ? 0 : GS_MIN((size_t)n, sizeof(line) - 1);
    pos = append(line, pos, sizeof(line), gs_log_quote(q, sizeof(q), msg));
    if (kvfmt && *kvfmt && pos + 2 < sizeof(line)) {
        line[pos++] = ' ';
        int m = vsnprintf(line + pos, sizeof(line) - pos, kvfmt, ap);
        if (m > 0)
            pos = GS_MIN(pos + (size_t)m, sizeof(line) - 2);
    }
    if (pos > sizeof(line) - 2)
        pos = sizeof(line) - 2;
    line[pos++] = '\n';
    const char *p = line;
    size_t left = pos;
    int fd = atomic_load(&log_fd);
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
    errno = saved_errno;
}

void gs_log(enum gs_log_level level, const char *msg, const char *kvfmt, ...)
{
    va_list ap;
    va_start(ap, kvfmt);
    gs_logv(level, msg, kvfmt, ap);
    va_end(ap);
}
