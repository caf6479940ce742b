/* SPDX-License-Identifier: Apache-2.0 */
#include "base/version.h"

#include <stdio.h>

#ifndef GS_PROJECT_VERSION
#error "GS_PROJECT_VERSION is set by src/base/meson.build"
#endif

const char *gs_version(void)
{
    return gs_vcs_version && gs_vcs_version[0] ? gs_vcs_version : GS_PROJECT_VERSION;
}

const char *gs_version_commit(void)
{
    return gs_vcs_commit && gs_vcs_commit[0] ? gs_vcs_commit : "unknown";
}

void gs_version_print(const char *program, FILE *out)
{
    fprintf(out, "%s %s (commit %s)\n", program, gs_version(), gs_version_commit());
}

/* Prometheus label value: backslash, double quote and newline escaped. */
static size_t escape(char *dst, size_t len, const char *s)
{
    size_t n = 0;
    for (; *s && n + 2 < len; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n')
            dst[n++] = '\\';
        dst[n++] = *s == '\n' ? 'n' : *s;
    }
    if (len)
        dst[n < len ? n : len - 1] = '\0';
    return n;
}

int gs_version_metric(char *buf, size_t len)
{
    char version[160], commit[96];
    escape(version, sizeof(version), gs_version());
    escape(commit, sizeof(commit), gs_version_commit());
    return snprintf(buf, len,
                    "# HELP gpuslice_build_info The version and commit this program was built "
                    "from (always 1).\n"
                    "# TYPE gpuslice_build_info gauge\n"
                    "gpuslice_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                    version, commit);
}
