/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes resource.Quantity semantics. Expected canonical strings follow
 * k8s.io/apimachinery/pkg/api/resource (ParseQuantity + CanonicalizeBytes).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "config/quantity.h"
#include "tap.h"

struct valid_case {
    const char *in;
    const char *canonical;
    int64_t value;       /* Value(): rounded away from zero */
    int64_t milli_value; /* MilliValue(); INT64_MAX here means "overflows: -ERANGE" */
    enum gs_quantity_format format;
};

#define DSI GS_QUANTITY_DECIMAL_SI
#define BSI GS_QUANTITY_BINARY_SI
#define DEX GS_QUANTITY_DECIMAL_EXPONENT

static const struct valid_case valid[] = {
    /* plain integers and zero */
    {"0", "0", 0, 0, DSI},
    {"-0", "0", 0, 0, DSI},
    {"+0", "0", 0, 0, DSI},
    {"00", "0", 0, 0, DSI},
    {"0.0", "0", 0, 0, DSI},
    {"0Gi", "0", 0, 0, BSI},
    {"0e5", "0", 0, 0, DEX},
    {"1", "1", 1, 1000, DSI},
    {"+1", "1", 1, 1000, DSI},
    {"-1", "-1", -1, -1000, DSI},
    {"01", "1", 1, 1000, DSI},
    {"007", "7", 7, 7000, DSI},
    {"30", "30", 30, 30000, DSI},
    {"100", "100", 100, 100000, DSI},
    {"1000", "1k", 1000, 1000000, DSI},
    {"1024", "1024", 1024, 1024000, DSI},
    {"1536", "1536", 1536, 1536000, DSI},
    {"1500", "1500", 1500, 1500000, DSI},
    {"12000", "12k", 12000, 12000000, DSI},
    {"123456789", "123456789", 123456789, 123456789000, DSI},
    {"9223372036854775807", "9223372036854775807", INT64_MAX, INT64_MAX, DSI},
    {"-9223372036854775807", "-9223372036854775807", -INT64_MAX, INT64_MAX, DSI},
    /* decimal fractions and milli/micro/nano */
    {"0.5", "500m", 1, 500, DSI},
    {"-0.5", "-500m", -1, -500, DSI},
    {".5", "500m", 1, 500, DSI},
    {"1.", "1", 1, 1000, DSI},
    {"1.5", "1500m", 2, 1500, DSI},
    {"1000m", "1", 1, 1000, DSI},
    {"1500m", "1500m", 2, 1500, DSI},
    {"100m", "100m", 1, 100, DSI},
    {"1m", "1m", 1, 1, DSI},
    {"0.001", "1m", 1, 1, DSI},
    {"1u", "1u", 1, 1, DSI},
    {"1000u", "1m", 1, 1, DSI},
    {"1n", "1n", 1, 1, DSI},
    {"1000000n", "1m", 1, 1, DSI},
    {"0.1n", "1n", 1, 1, DSI},
    {"-0.1n", "-1n", -1, -1, DSI},
    {"0.0000000001", "1n", 1, 1, DSI},
    {"1.0000000001", "1000000001n", 2, 1001, DSI},
    {"0.000000000000000000000000000000000000000000001", "1n", 1, 1, DSI},
    {"1.1m", "1100u", 1, 2, DSI},
    {"-1.1m", "-1100u", -1, -2, DSI},
    /* decimal SI suffixes */
    {"1k", "1k", 1000, 1000000, DSI},
    {"1.5k", "1500", 1500, 1500000, DSI},
    {"1M", "1M", 1000000, 1000000000, DSI},
    {"1G", "1G", 1000000000, 1000000000000, DSI},
    {"2.5G", "2500M", 2500000000, 2500000000000, DSI},
    {"1T", "1T", 1000000000000, 1000000000000000, DSI},
    {"1P", "1P", 1000000000000000, 1000000000000000000, DSI},
    {"1E", "1E", 1000000000000000000, INT64_MAX, DSI},
    {"9E", "9E", 9000000000000000000, INT64_MAX, DSI},
    {"0.001k", "1", 1, 1000, DSI},
    {"1000k", "1M", 1000000, 1000000000, DSI},
    /* binary SI suffixes */
    {"1Ki", "1Ki", 1024, 1024000, BSI},
    {"1Mi", "1Mi", 1048576, 1048576000, BSI},
    {"4096Mi", "4Gi", 4294967296, 4294967296000, BSI},
    {"1.5Gi", "1536Mi", 1610612736, 1610612736000, BSI},
    {"1Gi", "1Gi", 1073741824, 1073741824000, BSI},
    {"1024Ki", "1Mi", 1048576, 1048576000, BSI},
    {"1025Ki", "1025Ki", 1049600, 1049600000, BSI},
    {"0.5Ki", "512", 512, 512000, BSI},
    {"0.5Gi", "512Mi", 536870912, 536870912000, BSI},
    {"0.1Ki", "102400m", 103, 102400, BSI},
    {"1.1Ki", "1126400m", 1127, 1126400, BSI},
    {"1Ti", "1Ti", 1099511627776, 1099511627776000, BSI},
    {"1Pi", "1Pi", 1125899906842624, 1125899906842624000, BSI},
    {"1Ei", "1Ei", 1152921504606846976, INT64_MAX, BSI},
    {"7Ei", "7Ei", 8070450532247928832, INT64_MAX, BSI},
    {"-1Gi", "-1Gi", -1073741824, -1073741824000, BSI},
    {"-1.5Gi", "-1536Mi", -1610612736, -1610612736000, BSI},
    {"16Gi", "16Gi", 17179869184, 17179869184000, BSI},
    {"80Gi", "80Gi", 85899345920, 85899345920000, BSI},
    {"2000Mi", "2000Mi", 2097152000, 2097152000000, BSI},
    {"1000Ki", "1000Ki", 1024000, 1024000000, BSI},
    {"312.5Ki", "320000", 320000, 320000000, BSI},
    {"0.0005Ki", "512m", 1, 512, DSI}, /* BinarySI below 1 is parsed as DecimalSI */
    {"-0.0005Ki", "-512m", -1, -512, DSI},
    {"0.0009765625Ki", "1", 1, 1000, BSI},
    /* decimal exponents */
    {"1e3", "1e3", 1000, 1000000, DEX},
    {"1E3", "1e3", 1000, 1000000, DEX},
    {"1e+3", "1e3", 1000, 1000000, DEX},
    {"10e2", "1e3", 1000, 1000000, DEX},
    {"1.5e3", "1500", 1500, 1500000, DEX},
    {"1e0", "1", 1, 1000, DEX},
    {"1e-3", "1e-3", 1, 1, DEX},
    {"1.5E-3", "1500e-6", 1, 2, DEX},
    {"12e6", "12e6", 12000000, 12000000000, DEX},
    {"1e18", "1e18", 1000000000000000000, INT64_MAX, DEX},
    {"1e-20", "1e-9", 1, 1, DEX},
    {"5e-99999999999", "1e-9", 1, 1, DEX},
    {"100e-2", "1", 1, 1000, DEX},
};

struct invalid_case {
    const char *in;
    int code;
    const char *msg_part;
};

static const struct invalid_case invalid[] = {
    {"", -EINVAL, "empty"},
    {"abc", -EINVAL, "\"abc\""},
    {"1.2.3", -EINVAL, "\"1.2.3\""},
    {"Gi", -EINVAL, "expected a number"},
    {"-", -EINVAL, "expected a number"},
    {".", -EINVAL, "expected a number"},
    {"+", -EINVAL, "expected a number"},
    {"1Gb", -EINVAL, "\"1Gb\""},
    {" 1", -EINVAL, "\" 1\""},
    {"1 ", -EINVAL, "\"1 \""},
    {"--1", -EINVAL, "\"--1\""},
    {"+-1", -EINVAL, "\"+-1\""},
    {"1i", -EINVAL, "unknown suffix"},
    {".5i", -EINVAL, "unknown suffix"},
    {"1K", -EINVAL, "unknown suffix"},
    {"1KI", -EINVAL, "\"1KI\""},
    {"1e", -EINVAL, "unknown suffix"},
    {"1e-", -EINVAL, "unknown suffix"},
    {"-3.01e-", -EINVAL, "unknown suffix"},
    {"1.1.M", -EINVAL, "\"1.1.M\""},
    {"1+1.0M", -EINVAL, "\"1+1.0M\""},
    {"0.1mi", -EINVAL, "unknown suffix"},
    {"0.1am", -EINVAL, "\"0.1am\""},
    {"1Mii", -EINVAL, "unknown suffix"},
    {"1GiB", -EINVAL, "\"1GiB\""},
    {"1kk", -EINVAL, "unknown suffix"},
    {"1e3e3", -EINVAL, "\"1e3e3\""},
    {"1e99999999999999999999", -EINVAL, "unknown suffix"},
    {"0x10", -EINVAL, "\"0x10\""},
    {"1_000", -EINVAL, "\"1_000\""},
    {"1,5", -EINVAL, "\"1,5\""},
    {"１", -EINVAL, "\\xef"},
    {"1\n", -EINVAL, "\\x0a"},
    {"inf", -EINVAL, "\"inf\""},
    {"NaN", -EINVAL, "\"NaN\""},
    {"9223372036854775808", -ERANGE, "out of range"},
    {"-9223372036854775808", -ERANGE, "out of range"},
    {"99999999999999999999", -ERANGE, "out of range"},
    {"10Ei", -ERANGE, "out of range"},
    {"8Ei", -ERANGE, "out of range"},
    {"8192Pi", -ERANGE, "out of range"},
    {"10E", -ERANGE, "out of range"},
    {"1e19", -ERANGE, "out of range"},
    {"1e99999", -ERANGE, "out of range"},
    {"9223372036854775807.5", -ERANGE, "out of range"},
    {"9223372036.854775808", -ERANGE, "out of range"},
    {"1234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901"
     "234567890",
     -ERANGE, "significant digits"},
};

static void test_valid(void)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(valid); i++) {
        const struct valid_case *c = &valid[i];
        struct gs_quantity q;
        struct gs_error err = {0};
        int r = gs_quantity_parse(c->in, &q, &err);
        if (!ok(r == 0, "parse \"%s\"", c->in)) {
            diag("  rc=%d msg=%s", r, err.msg);
            continue;
        }
        char buf[GS_QUANTITY_STR_MAX];
        is_int(gs_quantity_format(&q, buf, sizeof(buf)), 0, "format \"%s\"", c->in);
        is_str(buf, c->canonical, "\"%s\" canonical form", c->in);
        is_int(q.format, c->format, "\"%s\" format family", c->in);
        int64_t v = 0;
        is_int(gs_quantity_value(&q, &v), 0, "\"%s\" Value() fits", c->in);
        is_int(v, c->value, "\"%s\" Value()", c->in);
        int64_t mv = 0;
        int mr = gs_quantity_milli_value(&q, &mv);
        if (c->milli_value == INT64_MAX) {
            is_int(mr, -ERANGE, "\"%s\" MilliValue() overflows -> -ERANGE", c->in);
        } else {
            is_int(mr, 0, "\"%s\" MilliValue() fits", c->in);
            is_int(mv, c->milli_value, "\"%s\" MilliValue()", c->in);
        }
        /* Round trip: the canonical form parses back to the same value and canonical form. */
        struct gs_quantity back;
        char buf2[GS_QUANTITY_STR_MAX];
        ok(gs_quantity_parse(buf, &back, NULL) == 0 && gs_quantity_cmp(&q, &back) == 0,
           "\"%s\" -> \"%s\" parses back to the same value", c->in, buf);
        back.format = q.format; /* the text alone does not carry the format family */
        gs_quantity_format(&back, buf2, sizeof(buf2));
        is_str(buf2, buf, "\"%s\" canonical form is a fixed point", buf);
    }
}

/* Test names must stay on one TAP line: show control bytes escaped. */
static const char *name_of(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    for (; *s && o + 5 < len; s++) {
        if ((unsigned char)*s < 0x20)
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", (unsigned char)*s);
        else
            buf[o++] = *s;
    }
    buf[o] = '\0';
    return buf;
}

static void test_family_change(void)
{
    /* BinarySI that is not a multiple of 1024 prints without a suffix; read back, that text is
     * DecimalSI and prints differently: the same in Kubernetes. */
    struct gs_quantity q;
    char buf[GS_QUANTITY_STR_MAX];
    gs_quantity_parse("312.5Ki", &q, NULL);
    is_str(gs_quantity_str(&q, buf), "320000", "312.5Ki prints as 320000");
    gs_quantity_parse(buf, &q, NULL);
    is_int(q.format, DSI, "320000 reads back as DecimalSI");
    is_str(gs_quantity_str(&q, buf), "320k", "and prints as 320k");

    /* Format of a sum: a BinarySI amount below 1 was parsed as DecimalSI, so the sum is too. */
    struct gs_quantity a, b, r;
    gs_quantity_parse("0.0005Ki", &a, NULL);
    gs_quantity_parse("0.9995Ki", &b, NULL);
    is_int(gs_quantity_add(&a, &b, &r), 0, "0.0005Ki + 0.9995Ki");
    is_str(gs_quantity_str(&r, buf), "1024", "sum keeps DecimalSI: 1024, not 1Ki");
    is_int(gs_quantity_add(&b, &a, &r), 0, "0.9995Ki + 0.0005Ki");
    is_str(gs_quantity_str(&r, buf), "1Ki", "sum keeps BinarySI: 1Ki");
}

static void test_invalid(void)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(invalid); i++) {
        char nb[160];
        struct invalid_case cc = invalid[i];
        cc.in = name_of(invalid[i].in, nb, sizeof(nb));
        const struct invalid_case *c = &cc;
        struct gs_quantity q = {.mant = 42, .exp10 = 0};
        struct gs_error err = {0};
        int r = gs_quantity_parse(invalid[i].in, &q, &err);
        is_int(r, c->code, "reject \"%s\"", c->in);
        is_int(err.code, c->code, "error code stored for \"%s\"", c->in);
        like_str(err.msg, c->msg_part, "message for \"%s\" says %s", c->in, c->msg_part);
        like_str(err.msg, "invalid quantity", "message for \"%s\" names the problem", c->in);
    }
    struct gs_error err = {0};
    is_int(gs_quantity_parse(NULL, &(struct gs_quantity){0}, &err), -EINVAL, "NULL rejected");
    like_str(err.msg, "empty", "NULL reported as empty");
    /* Long inputs are shown truncated, and the message never overflows. */
    char longbad[400];
    memset(longbad, 'x', sizeof(longbad) - 1);
    longbad[sizeof(longbad) - 1] = '\0';
    is_int(gs_quantity_parse(longbad, &(struct gs_quantity){0}, &err), -EINVAL, "long junk");
    like_str(err.msg, "xxx...\"", "long input truncated with ...");
}

static struct gs_quantity q_of(const char *s)
{
    struct gs_quantity q = {0};
    struct gs_error err = {0};
    if (gs_quantity_parse(s, &q, &err) < 0)
        diag("q_of(%s): %s", s, err.msg);
    return q;
}

static const char *fmt(const struct gs_quantity *q, char *buf)
{
    return gs_quantity_str(q, buf);
}

static void test_arith(void)
{
    char b[GS_QUANTITY_STR_MAX];
    struct gs_quantity a = q_of("1Gi"), c = q_of("1024Mi"), r;
    is_int(gs_quantity_cmp(&a, &c), 0, "1Gi == 1024Mi");
    struct gs_quantity x = q_of("1G");
    is_int(gs_quantity_cmp(&x, &a), -1, "1G < 1Gi");
    is_int(gs_quantity_cmp(&a, &x), 1, "1Gi > 1G");
    struct gs_quantity m1 = q_of("1001m"), one = q_of("1");
    is_int(gs_quantity_cmp(&m1, &one), 1, "1001m > 1");
    struct gs_quantity n1 = q_of("1n"), z = q_of("0");
    is_int(gs_quantity_cmp(&n1, &z), 1, "1n > 0");
    struct gs_quantity neg = q_of("-1n");
    is_int(gs_quantity_cmp(&neg, &z), -1, "-1n < 0");
    struct gs_quantity big = q_of("9223372036854775807"), big2 = q_of("9223372036854775806");
    is_int(gs_quantity_cmp(&big2, &big), -1, "cmp exact at int64 max");
    struct gs_quantity e7 = q_of("7Ei"), e1 = q_of("1E");
    is_int(gs_quantity_cmp(&e7, &e1), 1, "7Ei > 1E");

    is_int(gs_quantity_add(&a, &c, &r), 0, "1Gi + 1024Mi");
    is_str(fmt(&r, b), "2Gi", "1Gi + 1024Mi = 2Gi");
    struct gs_quantity half = q_of("512Mi");
    is_int(gs_quantity_sub(&a, &half, &r), 0, "1Gi - 512Mi");
    is_str(fmt(&r, b), "512Mi", "1Gi - 512Mi = 512Mi");
    is_int(gs_quantity_sub(&half, &a, &r), 0, "512Mi - 1Gi");
    is_str(fmt(&r, b), "-512Mi", "512Mi - 1Gi = -512Mi");
    struct gs_quantity c30 = q_of("30"), c70 = q_of("70");
    is_int(gs_quantity_add(&c30, &c70, &r), 0, "30 + 70");
    is_str(fmt(&r, b), "100", "30 + 70 = 100");
    struct gs_quantity mm = q_of("500m");
    is_int(gs_quantity_add(&mm, &mm, &r), 0, "500m + 500m");
    is_str(fmt(&r, b), "1", "500m + 500m = 1");
    is_int(gs_quantity_add(&a, &x, &r), 0, "1Gi + 1G");
    is_str(fmt(&r, b), "2073741824", "1Gi + 1G keeps BinarySI, not a multiple of 1024");
    is_int(r.format, BSI, "sum keeps the left operand's format");
    is_int(gs_quantity_add(&x, &a, &r), 0, "1G + 1Gi");
    is_int(r.format, DSI, "1G + 1Gi is DecimalSI");
    is_int(gs_quantity_add(&z, &a, &r), 0, "0 + 1Gi");
    is_int(r.format, BSI, "zero left operand takes the right operand's format");
    is_str(fmt(&r, b), "1Gi", "0 + 1Gi = 1Gi");

    /* overflow is reported, never wrapped */
    is_int(gs_quantity_add(&e7, &e7, &r), -ERANGE, "7Ei + 7Ei overflows");
    struct gs_quantity one_unit = q_of("1");
    is_int(gs_quantity_add(&big, &one_unit, &r), -ERANGE, "INT64_MAX + 1 overflows");
    struct gs_quantity nbig = q_of("-9223372036854775807");
    is_int(gs_quantity_sub(&nbig, &one_unit, &r), -ERANGE, "-INT64_MAX - 1 overflows");
    is_int(gs_quantity_sub(&big, &nbig, &r), -ERANGE, "INT64_MAX - (-INT64_MAX) overflows");
    is_int(gs_quantity_add(&big, &nbig, &r), 0, "INT64_MAX + -INT64_MAX");
    ok(gs_quantity_is_zero(&r), "INT64_MAX + -INT64_MAX = 0");
    struct gs_quantity frac = q_of("1n"), bigish = q_of("9223372036");
    is_int(gs_quantity_add(&bigish, &frac, &r), 0, "9223372036 + 1n fits 19 digits");
    is_str(fmt(&r, b), "9223372036000000001n", "9223372036 + 1n exact");
    struct gs_quantity bigger = q_of("9223372037");
    is_int(gs_quantity_add(&bigger, &frac, &r), -ERANGE, "9223372037 + 1n needs 20 digits");

    int64_t v;
    is_int(gs_quantity_value(&e7, &v), 0, "Value of 7Ei");
    is_int(v, 8070450532247928832LL, "7Ei = 8070450532247928832");
    is_int(gs_quantity_milli_value(&e7, &v), -ERANGE, "MilliValue of 7Ei overflows");
    is_int(gs_quantity_to_int64_exact(&a, &v), 0, "1Gi exact");
    is_int(v, 1073741824, "1Gi = 1073741824");
    struct gs_quantity f = q_of("1.5");
    is_int(gs_quantity_to_int64_exact(&f, &v), -EDOM, "1.5 not an integer");
    ok(!gs_quantity_is_integer(&f), "1.5 is_integer false");
    ok(gs_quantity_is_integer(&a), "1Gi is_integer true");
    is_int(gs_quantity_sign(&neg), -1, "sign -1");
    is_int(gs_quantity_sign(&z), 0, "sign 0");
    is_int(gs_quantity_sign(&a), 1, "sign 1");

    struct gs_error err = {0};
    is_int(gs_quantity_parse_int64("4Gi", &v, &err), 0, "parse_int64 4Gi");
    is_int(v, 4294967296, "parse_int64 4Gi value");
    is_int(gs_quantity_parse_int64("1.5", &v, &err), -EINVAL, "parse_int64 1.5");
    like_str(err.msg, "\"1.5\": not a whole number", "parse_int64 names the input");
    is_int(gs_quantity_parse_int64("8Ei", &v, &err), -ERANGE, "parse_int64 8Ei");

    /* constructors */
    gs_quantity_from_int64(4294967296, BSI, &r);
    is_str(fmt(&r, b), "4Gi", "from_int64 bytes BinarySI");
    gs_quantity_from_int64(1536, BSI, &r);
    is_str(fmt(&r, b), "1536", "from_int64 1536 BinarySI");
    gs_quantity_from_int64(30, DSI, &r);
    is_str(fmt(&r, b), "30", "from_int64 30");
    gs_quantity_from_int64(5000, DSI, &r);
    is_str(fmt(&r, b), "5k", "from_int64 5000 DecimalSI");
    gs_quantity_from_int64(INT64_MAX, DSI, &r);
    is_str(fmt(&r, b), "9223372036854775807", "from_int64 INT64_MAX");
    gs_quantity_from_milli(1500, DSI, &r);
    is_str(fmt(&r, b), "1500m", "from_milli 1500");
    gs_quantity_from_milli(-250, DSI, &r);
    is_str(fmt(&r, b), "-250m", "from_milli -250");
    gs_quantity_from_milli(INT64_MAX, DSI, &r);
    is_int(gs_quantity_milli_value(&r, &v), 0, "from_milli INT64_MAX milli value");
    is_int(v, INT64_MAX, "from_milli INT64_MAX round trip");

    /* format into short buffers */
    is_int(gs_quantity_format(&a, b, 3), -ENOSPC, "1Gi needs 4 bytes");
    is_int(gs_quantity_format(&a, b, 4), 0, "1Gi fits 4 bytes");
    is_int(gs_quantity_format(&big, b, 8), -ENOSPC, "too small buffer -> -ENOSPC");
    is_str(b, "", "buffer emptied on -ENOSPC");
}

/* Whole numbers with binary/decimal suffixes take a fast path: its range edges and its agreement
 * with the general path (the same value written with a fraction or an exponent). */
static void test_fast_path_edges(void)
{
    static const struct {
        const char *in;
        int rc;
        const char *canonical;
    } cases[] = {
        {"8796093022207Mi", 0, "8796093022207Mi"},
        {"8796093022208Mi", -ERANGE, NULL},
        {"7Ei", 0, "7Ei"},
        {"8Ei", -ERANGE, NULL},
        {"-7Ei", 0, "-7Ei"},
        {"922337203685477580", 0, "922337203685477580"},
        {"922337203685477580k", -ERANGE, NULL},
        {"9223372036854775k", 0, "9223372036854775k"},
        {"999999999999999999E", -ERANGE, NULL},
        {"0Gi", 0, "0"},
        {"000000000000000001Ki", 0, "1Ki"},
        {"1024Ki", 0, "1Mi"},
        {"1000k", 0, "1M"},
    };
    for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++) {
        struct gs_quantity q;
        char buf[GS_QUANTITY_STR_MAX];
        int rc = gs_quantity_parse(cases[i].in, &q, NULL);
        is_int(rc, cases[i].rc, "fast path: parse %s", cases[i].in);
        if (rc == 0 && cases[i].canonical) {
            gs_quantity_format(&q, buf, sizeof(buf));
            is_str(buf, cases[i].canonical, "fast path: %s canonical", cases[i].in);
        }
    }
    static const char *const same[][2] = {
        {"15Gi", "15.0Gi"}, {"4096Mi", "4096.0Mi"}, {"30", "30.0"}, {"2k", "2e3"}, {"5G", "5e9"},
    };
    for (size_t i = 0; i < GS_ARRAY_SIZE(same); i++) {
        struct gs_quantity a, b;
        gs_quantity_parse(same[i][0], &a, NULL);
        gs_quantity_parse(same[i][1], &b, NULL);
        ok(gs_quantity_cmp(&a, &b) == 0 && a.mant == b.mant && a.exp10 == b.exp10,
           "fast path %s equals general path %s", same[i][0], same[i][1]);
    }
}

int main(void)
{
    tap_plan_auto();
    test_fast_path_edges();
    test_valid();
    test_family_change();
    test_invalid();
    test_arith();
    diag("%zu valid and %zu invalid table cases", GS_ARRAY_SIZE(valid), GS_ARRAY_SIZE(invalid));
    return tap_done();
}
