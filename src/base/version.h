/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The build's identity: the version (git describe of the newest v* tag at build time, else the
 * meson project version) and the commit, for --version and the gpuslice_build_info metric.
 *
 * Both strings come from src/base/vcs-version.c.in and vcs-commit.c.in, filled by meson's
 * vcs_tag (tools/version.py) at every build and linked into each executable through `version_dep`
 * only, so a new commit relinks the programs and not every test. A program built without
 * version_dep (a unit test) reports the meson project version and commit "unknown".
 *
 *   gs_version_print("gpuslice-webhook", stdout);
 *       -> "gpuslice-webhook 0.1.0 (commit 1a2b3c4d5e6f)"
 *   gs_version_metric(buf, sizeof(buf));
 *       -> "# HELP gpuslice_build_info ...\n# TYPE gpuslice_build_info gauge\n"
 *          "gpuslice_build_info{version=\"0.1.0\",commit=\"1a2b3c4d5e6f\"} 1\n"
 */
#ifndef GS_COMMON_VERSION_H
#define GS_COMMON_VERSION_H

#include <stddef.h>
#include <stdio.h>

/* Defined by the generated vcs-*.c of version_dep; weak here: absent in programs without it. */
extern const char gs_vcs_version[] __attribute__((weak));
extern const char gs_vcs_commit[] __attribute__((weak));

const char *gs_version(void);
const char *gs_version_commit(void);

/* "<program> <version> (commit <commit>)\n" */
void gs_version_print(const char *program, FILE *out);

/* The gpuslice_build_info gauge (HELP, TYPE and the sample, Prometheus text format), label
 * values escaped. Returns the length written (snprintf semantics: >= len when truncated). */
int gs_version_metric(char *buf, size_t len);

#endif /* GS_COMMON_VERSION_H */
