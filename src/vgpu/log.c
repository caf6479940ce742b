/* SPDX-License-Identifier: Apache-2.0 */
/* libvgpu logging: silent by default; LIBCUDA_LOG_LEVEL 1..4 (error..debug) writes one line per
 * event to stderr, formatted in a stack buffer and written with one write(2). Never stdout. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuslice/hami.h"
#include "vgpu/vgpu-internal.h"

int vgpu_log_level = 0;

void vgpu_log_init(void)
{
    const char *s = getenv(HAMI_ENV_LOG_LEVEL);
    if (!s || !*s)
        return;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end && *end == '\0' && v >= 0 && v <= 4)
        vgpu_log_level = (int)v;
    else
        vgpu_log_level = VGPU_LOG_WARN;
    if (end && *end != '\0')
        vgpu_log(VGPU_LOG_WARN, HAMI_ENV_LOG_LEVEL "=\"%.32s\" is not 0..4, using 2", s);
}

void vgpu_log(int level, const char *fmt, ...)
{
    static const char *const names[] = {"", "error", "warn", "info", "debug"};
    int saved = errno;
    char line[1024];
    int n = snprintf(line, sizeof(line), "[gpuslice vgpu %s pid=%d] ",
                     names[level >= 1 && level <= 4 ? level : 0], (int)getpid());
    if (n < 0)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m > 0 ? GS_MIN((size_t)m, sizeof(line) - (size_t)n - 2) : 0);
    line[len++] = '\n';
    const char *p = line;
    while (len > 0) {
        ssize_t w = write(2, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        len -= (size_t)w;
    }
    errno = saved;
}
