/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's parsers as HAMi uses them (Go standard library semantics): strconv.ParseBool,
 * strconv.ParseInt/Atoi, time.Parse(time.RFC3339, ...), time.ParseDuration; and
 * util.PolicyContains (HAMi v2.10.0 pkg/util/util.go).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hami/hami-internal.h"
#include "hami/hami.h"

int hami_parse_bool(const char *s, size_t n, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strlen(yes[i]) == n && memcmp(s, yes[i], n) == 0)
            return *out = true, 0;
        if (strlen(no[i]) == n && memcmp(s, no[i], n) == 0)
            return *out = false, 0;
    }
    return -EINVAL;
}

/* strconv.ParseInt(s, 10, bits): optional sign, decimal digits only, in range. */
int hami_parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (s[0] == '+' || s[0] == '-'))
        neg = s[0] == '-', i = 1;
    if (i == n)
        return -EINVAL;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        if (v > (UINT64_MAX - 9) / 10)
            return -ERANGE;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return -ERANGE;
    int64_t r = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (r < lo || r > hi)
        return -ERANGE;
    *out = r;
    return 0;
}

static int digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* "2006-01-02T15:04:05[.frac](Z|+07:00|-07:00)". Go also takes a lowercase 't'/'z' only in
 * non-RFC3339 layouts, so they are refused here as there. */
int hami_rfc3339_parse(const char *s, size_t n, int64_t *unix_s)
{
    int Y, M, D, h, m, sec;
    if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
        digits(s, 4, &Y) || digits(s + 5, 2, &M) || digits(s + 8, 2, &D) || digits(s + 11, 2, &h) ||
        digits(s + 14, 2, &m) || digits(s + 17, 2, &sec))
        return -EINVAL;
    size_t i = 19;
    if (s[i] == '.' || s[i] == ',') {
        size_t j = i + 1;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == i + 1)
            return -EINVAL;
        i = j;
    }
    int64_t off = 0;
    if (i < n && s[i] == 'Z' && i + 1 == n) {
        off = 0;
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh, om;
        if (digits(s + i + 1, 2, &oh) || digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
            return -EINVAL;
        off = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
    } else {
        return -EINVAL;
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || m > 59 || sec > 59)
        return -EINVAL;
    bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    if (M == 2 && D == 29 && !leap)
        return -EINVAL;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec};
    *unix_s = (int64_t)timegm(&tm) - off;
    return 0;
}

/* time.ParseDuration: [-+]? ( number unit )+ or "0"; number = digits[.digits]; units ns us µs
 * ms s m h. */
int hami_go_duration_parse(const char *s, int64_t *ns)
{
    static const struct {
        const char *u;
        double mult;
    } units[] = {{"ns", 1},   {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
                 {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
    if (!s || !*s)
        return -EINVAL;
    bool neg = false;
    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    if (strcmp(s, "0") == 0)
        return *ns = 0, 0;
    double total = 0;
    if (!*s)
        return -EINVAL;
    while (*s) {
        const char *start = s;
        double v = 0, scale = 1;
        bool any = false;
        while (*s >= '0' && *s <= '9')
            v = v * 10 + (*s++ - '0'), any = true;
        if (*s == '.') {
            s++;
            while (*s >= '0' && *s <= '9')
                scale /= 10, v += (*s++ - '0') * scale, any = true;
        }
        if (!any || s == start)
            return -EINVAL;
        size_t k, ul = 0;
        for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
            ul = strlen(units[k].u);
            /* "ms" before "m", "ns"/"us" before "s": longest unit first by list order. */
            if (strncmp(s, units[k].u, ul) == 0)
                break;
        }
        if (k == sizeof(units) / sizeof(units[0]))
            return -EINVAL;
        total += v * units[k].mult;
        s += ul;
    }
    if (total > 9.2e18)
        return -ERANGE;
    *ns = (int64_t)(neg ? -total : total);
    return 0;
}

bool hami_policy_contains(const char *policy, const char *name)
{
    if (!policy || !name)
        return false;
    size_t nl = strlen(name);
    for (const char *p = policy;;) {
        const char *c = strchr(p, ',');
        const char *e = c ? c : p + strlen(p);
        const char *b = p;
        while (b < e && (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
            e--;
        if ((size_t)(e - b) == nl && memcmp(b, name, nl) == 0)
            return true;
        if (!c)
            return false;
        p = c + 1;
    }
}
