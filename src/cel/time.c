/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Timestamps and durations (google.protobuf.Timestamp / Duration semantics): timestamp(),
 * duration(), arithmetic, comparisons, int()/string() conversions and the get*() accessors.
 * Time zones: UTC and fixed offsets ("+05:30", "-08:00"); IANA zone names are not supported
 * (an error names the zone). Timestamps cover 0001-01-01 .. 9999-12-31 UTC, durations
 * +-10000 years, as the CEL spec requires; leaving that range is an error.
 */
#include <ctype.h>
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)
#define NANOS         1000000000LL
#define TS_MIN        (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define TS_MAX        253402300799LL   /* 9999-12-31T23:59:59Z */
#define DUR_MAX       315576000000LL   /* 10000 years in seconds */

/* days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm) */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static struct cel_value mk_ts(struct cel_eval *ev, const struct cel_node *call, int64_t sec,
                              int64_t nsec)
{
    if (nsec < 0) {
        sec -= 1;
        nsec += NANOS;
    }
    if (sec < TS_MIN || sec > TS_MAX)
        return cel_error(ev, call, "timestamp out of range");
    return (struct cel_value){.kind = CEL_K_TIMESTAMP, .t = {.sec = sec, .nsec = (int32_t)nsec}};
}

static struct cel_value mk_dur(struct cel_eval *ev, const struct cel_node *call, int64_t sec,
                               int64_t nsec)
{
    /* normalise: nanos carry the sign of the seconds */
    sec += nsec / NANOS;
    nsec %= NANOS;
    if (sec > 0 && nsec < 0) {
        sec--;
        nsec += NANOS;
    } else if (sec < 0 && nsec > 0) {
        sec++;
        nsec -= NANOS;
    }
    if (sec < -DUR_MAX || sec > DUR_MAX)
        return cel_error(ev, call, "duration out of range");
    return (struct cel_value){.kind = CEL_K_DURATION, .t = {.sec = sec, .nsec = (int32_t)nsec}};
}

static int digits(const char *s, size_t len, size_t *i, int n, int64_t *out)
{
    int64_t v = 0;
    for (int k = 0; k < n; k++, (*i)++) {
        if (*i >= len || !isdigit((unsigned char)s[*i]))
            return -1;
        v = v * 10 + (s[*i] - '0');
    }
    *out = v;
    return 0;
}

/* RFC 3339: 2006-01-02T15:04:05[.999999999](Z|+hh:mm|-hh:mm) */
static int parse_rfc3339(const char *s, size_t len, int64_t *sec, int64_t *nsec)
{
    size_t i = 0;
    int64_t y, mo, d, h, mi, se, frac = 0;
    if (digits(s, len, &i, 4, &y) || i >= len || s[i++] != '-' || digits(s, len, &i, 2, &mo) ||
        i >= len || s[i++] != '-' || digits(s, len, &i, 2, &d) || i >= len ||
        (s[i] != 'T' && s[i] != 't'))
        return -EINVAL;
    i++;
    if (digits(s, len, &i, 2, &h) || i >= len || s[i++] != ':' || digits(s, len, &i, 2, &mi) ||
        i >= len || s[i++] != ':' || digits(s, len, &i, 2, &se))
        return -EINVAL;
    if (i < len && s[i] == '.') {
        i++;
        int nd = 0;
        while (i < len && isdigit((unsigned char)s[i])) {
            if (nd < 9) {
                frac = frac * 10 + (s[i] - '0');
                nd++;
            }
            i++;
        }
        if (!nd)
            return -EINVAL;
        while (nd++ < 9)
            frac *= 10;
    }
    int64_t off = 0;
    if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < len && (s[i] == '+' || s[i] == '-')) {
        int sign = s[i++] == '-' ? -1 : 1;
        int64_t oh, om;
        if (digits(s, len, &i, 2, &oh) || i >= len || s[i++] != ':' || digits(s, len, &i, 2, &om) ||
            oh > 23 || om > 59)
            return -EINVAL;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -EINVAL;
    }
    if (i != len || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -EINVAL;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t y2;
    unsigned m2, d2;
    civil_from_days(days, &y2, &m2, &d2);
    if (m2 != mo || d2 != d) /* e.g. February 30 */
        return -EINVAL;
    *sec = days * 86400 + h * 3600 + mi * 60 + se - off;
    *nsec = frac;
    return 0;
}

/* Go duration syntax: [-+]?(\d+(\.\d*)?(ns|us|µs|ms|s|m|h))+ or "0" */
static int parse_duration(const char *s, size_t len, int64_t *sec, int64_t *nsec)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (len - i == 1 && s[i] == '0') {
        *sec = *nsec = 0;
        return 0;
    }
    if (i >= len)
        return -EINVAL;
    __int128 total = 0; /* nanoseconds */
    while (i < len) {
        int64_t whole = 0, frac = 0, scale = 1;
        size_t start = i;
        while (i < len && isdigit((unsigned char)s[i])) {
            if (whole > (INT64_MAX - 9) / 10)
                return -ERANGE;
            whole = whole * 10 + (s[i++] - '0');
        }
        bool have_int = i > start;
        if (i < len && s[i] == '.') {
            i++;
            size_t fs = i;
            while (i < len && isdigit((unsigned char)s[i])) {
                if (scale < NANOS) {
                    frac = frac * 10 + (s[i] - '0');
                    scale *= 10;
                }
                i++;
            }
            if (!have_int && i == fs)
                return -EINVAL;
        } else if (!have_int) {
            return -EINVAL;
        }
        static const struct {
            const char *u;
            int64_t ns;
        } units[] = {{"ns", 1},    {"us", 1000},      {"\xc2\xb5s", 1000}, {"ms", 1000000},
                     {"s", NANOS}, {"m", 60 * NANOS}, {"h", 3600 * NANOS}};
        int64_t unit = 0;
        for (size_t k = 0; k < GS_ARRAY_SIZE(units); k++) {
            size_t ul = strlen(units[k].u);
            if (i + ul <= len && !memcmp(s + i, units[k].u, ul) &&
                !(ul == 1 && units[k].u[0] == 'm' && i + 1 < len && s[i + 1] == 's')) {
                unit = units[k].ns;
                i += ul;
                break;
            }
        }
        if (!unit)
            return -EINVAL;
        total += (__int128)whole * unit + (__int128)frac * unit / scale;
        if (total > (__int128)DUR_MAX * NANOS * 2)
            return -ERANGE;
    }
    if (neg)
        total = -total;
    *sec = (int64_t)(total / NANOS);
    *nsec = (int64_t)(total % NANOS);
    return 0;
}

static struct cel_value fn_timestamp(struct cel_eval *ev, const struct cel_node *call,
                                     struct cel_value *a, uint32_t n)
{
    if (a[0].kind == CEL_K_TIMESTAMP)
        return a[0];
    if (a[0].kind == CEL_K_INT)
        return mk_ts(ev, call, a[0].i, 0);
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    int64_t sec, nsec;
    if (parse_rfc3339(a[0].s, a[0].len, &sec, &nsec) < 0)
        return cel_error(ev, call, "invalid timestamp '%.*s'", (int)GS_MIN(a[0].len, 64u), a[0].s);
    return mk_ts(ev, call, sec, nsec);
}

static struct cel_value fn_duration(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (a[0].kind == CEL_K_DURATION)
        return a[0];
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    int64_t sec, nsec;
    if (parse_duration(a[0].s, a[0].len, &sec, &nsec) < 0)
        return cel_error(ev, call, "invalid duration '%.*s'", (int)GS_MIN(a[0].len, 64u), a[0].s);
    return mk_dur(ev, call, sec, nsec);
}

void cel_time_format(const struct cel_value *v, char *buf, size_t len)
{
    char frac[16] = "";
    int32_t ns = v->t.nsec < 0 ? -v->t.nsec : v->t.nsec;
    if (ns) {
        snprintf(frac, sizeof(frac), ".%09d", ns);
        size_t l = strlen(frac);
        while (l > 1 && frac[l - 1] == '0')
            frac[--l] = '\0';
    }
    if (v->kind == CEL_K_DURATION) {
        bool neg = v->t.sec < 0 || v->t.nsec < 0;
        int64_t s = v->t.sec < 0 ? -v->t.sec : v->t.sec;
        snprintf(buf, len, "%s%lld%ss", neg ? "-" : "", (long long)s, frac);
        return;
    }
    int64_t days = v->t.sec / 86400, rem = v->t.sec % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(buf, len, "%04lld-%02u-%02uT%02lld:%02lld:%02lld%sZ", (long long)y, m, d,
             (long long)(rem / 3600), (long long)(rem / 60 % 60), (long long)(rem % 60), frac);
}

int cel_time_cmp(const struct cel_value *a, const struct cel_value *b)
{
    if (a->t.sec != b->t.sec)
        return a->t.sec < b->t.sec ? -1 : 1;
    return a->t.nsec < b->t.nsec ? -1 : a->t.nsec > b->t.nsec;
}

/* + and - with timestamps/durations (called by stdlib's operators). */
struct cel_value cel_time_arith(struct cel_eval *ev, const struct cel_node *call,
                                const struct cel_value *x, const struct cel_value *y, bool sub)
{
    int64_t ys = sub ? -y->t.sec : y->t.sec, yn = sub ? -(int64_t)y->t.nsec : y->t.nsec;
    if (x->kind == CEL_K_TIMESTAMP && y->kind == CEL_K_TIMESTAMP && sub)
        return mk_dur(ev, call, x->t.sec - y->t.sec, (int64_t)x->t.nsec - y->t.nsec);
    if (x->kind == CEL_K_TIMESTAMP && y->kind == CEL_K_DURATION)
        return mk_ts(ev, call, x->t.sec + ys, x->t.nsec + yn);
    if (x->kind == CEL_K_DURATION && y->kind == CEL_K_TIMESTAMP && !sub)
        return mk_ts(ev, call, y->t.sec + x->t.sec, (int64_t)y->t.nsec + x->t.nsec);
    if (x->kind == CEL_K_DURATION && y->kind == CEL_K_DURATION)
        return mk_dur(ev, call, x->t.sec + ys, x->t.nsec + yn);
    struct cel_value args[2] = {*x, *y};
    return cel_no_overload(ev, call, args, 2);
}

/* Offset in seconds of a zone: "UTC", "Z", "+05:30", "-08:00". */
static int zone_offset(const struct cel_value *z, int64_t *off)
{
    const char *s = z->s;
    size_t len = z->len;
    if ((len == 3 && !memcmp(s, "UTC", 3)) || (len == 1 && s[0] == 'Z') ||
        (len == 7 && !memcmp(s, "Etc/UTC", 7))) {
        *off = 0;
        return 0;
    }
    if ((len == 6 || len == 5) && (s[0] == '+' || s[0] == '-')) {
        size_t i = 1;
        int64_t h, m;
        if (digits(s, len, &i, 2, &h) || (len == 6 && s[i++] != ':') || digits(s, len, &i, 2, &m) ||
            h > 23 || m > 59)
            return -EINVAL;
        *off = (s[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
        return 0;
    }
    return -EINVAL;
}

static struct cel_value fn_get(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    const char *f = call->name + 3; /* after "get" */
    if (a[0].kind == CEL_K_DURATION && n == 1) {
        int64_t s = a[0].t.sec;
        if (!strcmp(f, "Hours"))
            return cel_int(s / 3600);
        if (!strcmp(f, "Minutes"))
            return cel_int(s / 60);
        if (!strcmp(f, "Seconds"))
            return cel_int(s);
        if (!strcmp(f, "Milliseconds"))
            return cel_int(a[0].t.nsec / 1000000);
        return NO_OVERLOAD();
    }
    if (a[0].kind != CEL_K_TIMESTAMP || (n == 2 && a[1].kind != CEL_K_STRING))
        return NO_OVERLOAD();
    int64_t off = 0;
    if (n == 2 && zone_offset(&a[1], &off) < 0)
        return cel_error(ev, call, "unsupported time zone '%.*s' (UTC and +hh:mm offsets only)",
                         (int)GS_MIN(a[1].len, 64u), a[1].s);
    int64_t t = a[0].t.sec + off, days = t / 86400, rem = t % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (!strcmp(f, "FullYear"))
        return cel_int(y);
    if (!strcmp(f, "Month"))
        return cel_int(m - 1);
    if (!strcmp(f, "Date"))
        return cel_int(d);
    if (!strcmp(f, "DayOfMonth"))
        return cel_int(d - 1);
    if (!strcmp(f, "DayOfWeek"))
        return cel_int(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday (4) */
    if (!strcmp(f, "DayOfYear"))
        return cel_int(days - days_from_civil(y, 1, 1));
    if (!strcmp(f, "Hours"))
        return cel_int(rem / 3600);
    if (!strcmp(f, "Minutes"))
        return cel_int(rem / 60 % 60);
    if (!strcmp(f, "Seconds"))
        return cel_int(rem % 60);
    if (!strcmp(f, "Milliseconds"))
        return cel_int(a[0].t.nsec / 1000000);
    return NO_OVERLOAD();
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define TS_GETTER(name)                                                                            \
    {name, true, 1, fn_get, OV("timestamp:int"), true},                                            \
    {                                                                                              \
        name, true, 2, fn_get, OV("timestamp,string:int"), true                                    \
    }
#define TD_GETTER(name)                                                                            \
    {name, true, 1, fn_get, OV("timestamp:int", "duration:int"), true},                            \
    {                                                                                              \
        name, true, 2, fn_get, OV("timestamp,string:int"), true                                    \
    }
const struct cel_func cel_time_funcs[] = {
    {"timestamp", false, 1, fn_timestamp,
     OV("string:timestamp", "int:timestamp", "timestamp:timestamp"), true},
    {"duration", false, 1, fn_duration, OV("string:duration", "duration:duration"), true},
    TS_GETTER("getFullYear"),
    TS_GETTER("getMonth"),
    TS_GETTER("getDate"),
    TS_GETTER("getDayOfMonth"),
    TS_GETTER("getDayOfWeek"),
    TS_GETTER("getDayOfYear"),
    TD_GETTER("getHours"),
    TD_GETTER("getMinutes"),
    TD_GETTER("getSeconds"),
    TD_GETTER("getMilliseconds"),
};
const size_t cel_time_funcs_count = GS_ARRAY_SIZE(cel_time_funcs);
