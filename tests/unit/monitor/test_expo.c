/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition writer: both formats, escaping, merging, absent values, bounds, negotiation. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/expo.h"
#include "tap.h"

static char *render(struct mon_expo *e, enum mon_format f)
{
    char *text = NULL;
    size_t len = 0;
    int r = mon_expo_render(e, f, &text, &len);
    if (r < 0) {
        diag("render failed: %d", r);
        return NULL;
    }
    if (strlen(text) != len)
        diag("length %zu != strlen %zu", len, strlen(text));
    return text;
}

static const struct mon_family_def used = {"x_used_bytes", MON_GAUGE, MON_MERGE_SUM, "Used"};
static const struct mon_family_def last = {"x_last_seconds", MON_GAUGE, MON_MERGE_MIN, "Last"};
static const struct mon_family_def refused = {"x_refusals", MON_COUNTER, MON_MERGE_NONE, "Refused"};
static const struct mon_family_def build = {"x_build", MON_INFO, MON_MERGE_NONE, "Build"};
static const struct mon_family_def empty = {"x_empty", MON_GAUGE, MON_MERGE_NONE, "Nothing"};

static void test_formats(void)
{
    struct mon_expo *e = mon_expo_new(0);
    int fu = mon_expo_family(e, &used), fl = mon_expo_family(e, &last),
        fr = mon_expo_family(e, &refused), fb = mon_expo_family(e, &build),
        fe = mon_expo_family(e, &empty);
    struct mon_labels a, b;
    mon_labels_init(&a);
    mon_labels_add(&a, "pod", "p\"1\\\n");
    mon_labels_init(&b);
    mon_labels_add(&b, "pod", "p2");
    /* Two claims of the same container: one series, summed; minimum for "last". */
    mon_expo_add(e, fu, &b, 100);
    mon_expo_add(e, fu, &a, 1);
    mon_expo_add(e, fu, &b, 23);
    mon_expo_add(e, fl, &b, 7.5);
    mon_expo_add(e, fl, &b, 2.25);
    mon_expo_add(e, fl, &a, NAN); /* unknown: absent */
    struct mon_labels none;
    mon_labels_init(&none);
    mon_expo_add(e, fr, &none, 3);
    mon_expo_add(e, fb, &b, 1);
    (void)fe;
    char *t = render(e, MON_FORMAT_TEXT);
    ok(t && strstr(t, "x_used_bytes{pod=\"p2\"} 123\n"), "same labels are summed");
    ok(t && strstr(t, "x_used_bytes{pod=\"p\\\"1\\\\\\n\"} 1\n"),
       "label values escape quote, backslash and newline");
    ok(t && strstr(t, "x_last_seconds{pod=\"p2\"} 2.25\n"), "MIN keeps the smallest");
    ok(t && !strstr(t, "x_last_seconds{pod=\"p\\\"1"), "a NaN sample is absent, not 0");
    ok(t && strstr(t, "# TYPE x_refusals_total counter\nx_refusals_total 3\n"),
       "0.0.4: counter TYPE names the _total sample");
    ok(t && strstr(t, "# TYPE x_build_info gauge\nx_build_info{pod=\"p2\"} 1\n"),
       "0.0.4: info is a gauge named _info");
    ok(t && !strstr(t, "x_empty"), "a family without samples is left out");
    ok(t && !strstr(t, "# EOF"), "0.0.4 has no EOF marker");
    free(t);
    t = render(e, MON_FORMAT_OPENMETRICS);
    ok(t && strstr(t, "# TYPE x_refusals counter\nx_refusals_total 3\n"),
       "OpenMetrics: counter family without _total, sample with it");
    ok(t && strstr(t, "# TYPE x_build info\nx_build_info{pod=\"p2\"} 1\n"),
       "OpenMetrics: info family");
    size_t n = t ? strlen(t) : 0;
    ok(n > 6 && strcmp(t + n - 6, "# EOF\n") == 0, "OpenMetrics ends with # EOF");
    free(t);
    mon_expo_free(e);
}

static void test_histogram(void)
{
    struct mon_expo *e = mon_expo_new(0);
    static const struct mon_family_def h = {"x_seconds", MON_HISTOGRAM, MON_MERGE_NONE, "H"};
    int f = mon_expo_family(e, &h);
    struct mon_labels l;
    mon_labels_init(&l);
    const double bounds[] = {0.001, 0.5};
    const uint64_t cum[] = {2, 3};
    mon_expo_add_histogram(e, f, &l, bounds, cum, 2, 4, 1.25);
    char *t = render(e, MON_FORMAT_TEXT);
    ok(t && strstr(t, "# TYPE x_seconds histogram\nx_seconds_bucket{le=\"0.001\"} 2\n"
                      "x_seconds_bucket{le=\"0.5\"} 3\nx_seconds_bucket{le=\"+Inf\"} 4\n"
                      "x_seconds_count 4\nx_seconds_sum 1.25\n"),
       "histogram buckets, +Inf, count and sum");
    free(t);
    mon_expo_free(e);
}

static void test_bounds(void)
{
    struct mon_expo *e = mon_expo_new(4096);
    int f = mon_expo_family(e, &used);
    struct mon_labels l;
    char v[32];
    for (int i = 0; i < 1000; i++) {
        mon_labels_init(&l);
        snprintf(v, sizeof(v), "pod-%d", i);
        mon_labels_add(&l, "pod", v);
        mon_expo_add(e, f, &l, i);
    }
    char *t = NULL;
    size_t len;
    is_int(mon_expo_render(e, MON_FORMAT_TEXT, &t, &len), -E2BIG,
           "an exposition past its bound is refused (-E2BIG), not truncated");
    ok(t == NULL, "no text on failure");
    mon_expo_free(e);

    struct mon_labels big;
    mon_labels_init(&big);
    char huge[2000];
    memset(huge, 'a', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    mon_labels_add(&big, "pod", huge);
    ok(big.overflow, "a label set past MON_LABELS_MAX is flagged");
    e = mon_expo_new(0);
    f = mon_expo_family(e, &used);
    mon_expo_add(e, f, &big, 1);
    is_int(mon_expo_render(e, MON_FORMAT_TEXT, &t, &len), -EINVAL,
           "a sample with overflowed labels fails the render");
    mon_expo_free(e);
}

static void test_values(void)
{
    char b[64];
    mon_expo_format_value(4294967296.0, b, sizeof(b));
    ok(strcmp(b, "4294967296") == 0, "integral value printed exactly (%s)", b);
    mon_expo_format_value(0.3, b, sizeof(b));
    ok(strcmp(b, "0.3") == 0, "0.3 printed shortest (%s)", b);
    mon_expo_format_value(0.1 + 0.2, b, sizeof(b));
    ok(strtod(b, NULL) == 0.1 + 0.2, "0.1+0.2 round-trips (%s)", b);
    mon_expo_format_value(-2.25, b, sizeof(b));
    ok(strcmp(b, "-2.25") == 0, "negative thousandths (%s)", b);
    mon_expo_format_value(0.07, b, sizeof(b));
    ok(strcmp(b, "0.07") == 0 && strtod(b, NULL) == 0.07, "0.07 keeps its leading zero (%s)", b);
    mon_expo_format_value(1.0005, b, sizeof(b));
    ok(strtod(b, NULL) == 1.0005, "beyond thousandths: exact round trip (%s)", b);
    int round_trips = 0;
    for (int k = -2000; k <= 2000; k++) {
        double v = k / 1000.0;
        mon_expo_format_value(v, b, sizeof(b));
        if (strtod(b, NULL) != v) {
            diag("k/1000 does not round-trip for k=%d (%s)", k, b);
            break;
        }
        round_trips++;
    }
    is_int(round_trips, 4001, "every k/1000 in -2..2 round-trips");
    mon_expo_format_value(INFINITY, b, sizeof(b));
    ok(strcmp(b, "+Inf") == 0, "+Inf");
    mon_expo_format_value(1e300, b, sizeof(b));
    ok(strtod(b, NULL) == 1e300, "large values round-trip (%s)", b);
}

static void test_negotiate(void)
{
    const char *prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                       "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    is_int(mon_expo_negotiate(prom), MON_FORMAT_OPENMETRICS, "Prometheus' Accept: OpenMetrics");
    is_int(mon_expo_negotiate(NULL), MON_FORMAT_TEXT, "no Accept: text 0.0.4");
    is_int(mon_expo_negotiate("*/*"), MON_FORMAT_TEXT, "*/*: text 0.0.4");
    is_int(mon_expo_negotiate("text/plain;version=0.0.4"), MON_FORMAT_TEXT, "text asked: text");
    is_int(mon_expo_negotiate("application/openmetrics-text"), MON_FORMAT_OPENMETRICS,
           "OpenMetrics without version");
    is_int(mon_expo_negotiate("application/openmetrics-text; version=0.0.1"), MON_FORMAT_TEXT,
           "only OpenMetrics 0.0.1 accepted: text (we write 1.0.0)");
    is_int(mon_expo_negotiate("application/openmetrics-text;q=0, text/plain"), MON_FORMAT_TEXT,
           "OpenMetrics with q=0 is refused");
    is_int(mon_expo_negotiate("text/plain, Application/OpenMetrics-Text ; version=1.0.0"),
           MON_FORMAT_OPENMETRICS, "media types compare case-insensitively");
}

int main(void)
{
    tap_plan_auto();
    test_formats();
    test_histogram();
    test_bounds();
    test_values();
    test_negotiate();
    return tap_done();
}
