/* SPDX-License-Identifier: Apache-2.0 */
/* common/version: the --version line and the gpuslice_build_info sample, with the build's
 * identity (this test links version_dep) and label values escaped for Prometheus. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/macros.h"
#include "base/version.h"
#include "tap.h"

static void test_identity(void)
{
    ok(gs_vcs_version != NULL && gs_vcs_commit != NULL, "version_dep linked: vcs strings present");
    ok(strlen(gs_version()) > 0, "version %s", gs_version());
    const char *c = gs_version_commit();
    size_t hex = strspn(c, "0123456789abcdef");
    ok(strcmp(c, "unknown") == 0 || (hex == 12 && (c[12] == '\0' || strcmp(c + 12, "-dirty") == 0)),
       "commit %s: 12 hex digits (+ -dirty), or unknown", c);

    char buf[512];
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    gs_version_print("prog", f);
    fclose(f);
    char want[512];
    snprintf(want, sizeof(want), "prog %s (commit %s)\n", gs_version(), c);
    is_str(buf, want, "version line");
}

static void test_metric(void)
{
    char buf[512];
    int n = gs_version_metric(buf, sizeof(buf));
    ok(n > 0 && (size_t)n < sizeof(buf), "metric fits");
    like_str(buf, "# TYPE gpuslice_build_info gauge\n", "gauge");
    char want[256];
    snprintf(want, sizeof(want), "gpuslice_build_info{version=\"%s\",commit=\"%s\"} 1\n",
             gs_version(), gs_version_commit());
    like_str(buf, want, "sample with version and commit");
    char small[16];
    n = gs_version_metric(small, sizeof(small));
    ok(n >= (int)sizeof(small) && strlen(small) == sizeof(small) - 1, "truncated, terminated");
}

struct cfg {
    int64_t n;
};

static void test_config_flag(void)
{
    static const struct gs_option opts[] = {
        {.name = "n",
         .type = GS_OPT_INT,
         .def = "1",
         .help = "a number",
         .offset = offsetof(struct cfg, n)},
    };
    static const struct gs_config_spec spec = {
        .program = "tool", .options = opts, .n_options = GS_ARRAY_SIZE(opts)};
    char out[512] = "";
    FILE *f = fmemopen(out, sizeof(out), "w");
    struct cfg c = {0};
    struct gs_error err = {0};
    char *argv[] = {"tool", "--n", "3", "--version", NULL};
    int r = gs_config_parse(&spec, &c, 4, argv, f, NULL, &err);
    fclose(f);
    is_int(r, GS_CONFIG_EXIT, "--version exits like --help");
    out[strcspn(out, "\n")] = '\0';
    ok(strncmp(out, "tool ", 5) == 0 && strstr(out, "(commit "), "--version prints: %s", out);
    char *bad[] = {"tool", "--version=x", NULL};
    f = fmemopen(out, sizeof(out), "w");
    r = gs_config_parse(&spec, &c, 2, bad, f, NULL, &err);
    fclose(f);
    ok(r < 0, "--version=x refused");
    is_str(err.msg, "--version takes no value", "message names the flag");
    static const struct gs_option clash[] = {
        {.name = "version", .type = GS_OPT_BOOL, .help = "x", .offset = 0},
    };
    static const struct gs_config_spec cspec = {
        .program = "tool", .options = clash, .n_options = GS_ARRAY_SIZE(clash)};
    struct cfg c2 = {0};
    r = gs_config_defaults(&cspec, &c2, &err);
    ok(r < 0 && strstr(err.msg, "version is reserved"), "an option named version is refused: %s",
       err.msg);
}

int main(void)
{
    tap_plan_auto();
    test_identity();
    test_metric();
    test_config_flag();
    return tap_done();
}
