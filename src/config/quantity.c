/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes resource.Quantity, integer-exact (see quantity.h and docs/internals/layers.md).
 *
 * Parsing keeps the significant digits of the input in a fixed decimal digit buffer (no
 * allocation, any input length), applies the suffix (times 10^k or times 2^k), rounds away from
 * zero to nano precision exactly as Kubernetes does, then checks the range: |value| must not
 * exceed INT64_MAX units and the normalised mantissa must fit int64.  Arithmetic and comparison
 * go through a signed 128-bit count of nano-units, which holds every valid quantity exactly.
 */
#include "config/quantity.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef __int128 i128;
typedef unsigned __int128 u128;

#define NANO_EXP      (-9)
#define MAX_EXP       18
#define DIGITS_CAP    96 /* significant digits accepted (trailing zeros beyond are fine) */
#define DIGITS_BUF    (DIGITS_CAP + 24)
#define NANOS_PER_ONE ((i128)1000000000)

/* Largest |value| in nano-units: INT64_MAX units. */
static const i128 max_nanos = (i128)INT64_MAX * NANOS_PER_ONE;

static i128 pow10_i128(int n)
{
    i128 r = 1;
    for (int i = 0; i < n; i++)
        r *= 10;
    return r;
}

/* Copy `s` into `buf` for an error message: printable ASCII kept, the rest as \xNN, truncated. */
static const char *printable(char *buf, size_t len, const char *s)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\';
        size_t need = plain ? 1 : 4;
        if (o + need + 4 > len) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (plain)
            buf[o++] = (char)*p;
        else
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
    }
    buf[o] = '\0';
    return buf;
}

static int quantity_error(struct gs_error *err, int code, const char *s, const char *why)
{
    char shown[80];
    return gs_error_set(err, code, "invalid quantity \"%s\": %s",
                        printable(shown, sizeof(shown), s), why);
}

/* ---- decimal digit buffer --------------------------------------------------------------- */

struct digits {
    unsigned char d[DIGITS_BUF]; /* most significant first, values 0..9 */
    int n;
    int64_t exp; /* value = d[0..n) * 10^exp */
    bool sticky; /* a non-zero digit was dropped below d[n-1] while rounding */
};

static void digits_strip_trailing_zeros(struct digits *x)
{
    while (x->n > 0 && x->d[x->n - 1] == 0) {
        x->n--;
        x->exp++;
    }
}

/* Multiply by 2^k (k <= 60). Returns false if the buffer would overflow. */
static bool digits_mul_pow2(struct digits *x, int k)
{
    for (int step = 0; step < k; step++) {
        int carry = 0;
        for (int i = x->n - 1; i >= 0; i--) {
            int v = x->d[i] * 2 + carry;
            x->d[i] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        if (carry) {
            if (x->n >= DIGITS_BUF)
                return false;
            memmove(x->d + 1, x->d, (size_t)x->n);
            x->d[0] = (unsigned char)carry;
            x->n++;
        }
    }
    return true;
}

/* Add one unit in the last place. */
static bool digits_increment(struct digits *x)
{
    for (int i = x->n - 1; i >= 0; i--) {
        if (x->d[i] < 9) {
            x->d[i]++;
            return true;
        }
        x->d[i] = 0;
    }
    if (x->n >= DIGITS_BUF)
        return false;
    memmove(x->d + 1, x->d, (size_t)x->n);
    x->d[0] = 1;
    x->n++;
    return true;
}

/* Round away from zero to 10^-9 (Kubernetes rounds any non-zero value up to at least 1n). */
static bool digits_round_nano(struct digits *x)
{
    if (x->exp < NANO_EXP) {
        int64_t drop = NANO_EXP - x->exp;
        if (drop >= x->n) {
            for (int i = 0; i < x->n; i++)
                x->sticky |= x->d[i] != 0;
            x->n = 0;
        } else {
            for (int64_t i = x->n - drop; i < x->n; i++)
                x->sticky |= x->d[i] != 0;
            x->n -= (int)drop;
        }
        x->exp = NANO_EXP;
        if (x->sticky) {
            if (x->n == 0) {
                x->d[0] = 1;
                x->n = 1;
            } else if (!digits_increment(x)) {
                return false;
            }
            x->sticky = false;
        }
    }
    return !x->sticky; /* sticky left over means digits were lost above nano: out of range */
}

/* ---- parsing ---------------------------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

struct suffix_info {
    int base; /* 10 or 2 */
    int64_t exponent;
    enum gs_quantity_format format;
};

static bool interpret_suffix(const char *s, size_t len, struct suffix_info *out)
{
    static const struct {
        const char *name;
        int base, exponent;
        enum gs_quantity_format format;
    } table[] = {
        {"", 10, 0, GS_QUANTITY_DECIMAL_SI},   {"n", 10, -9, GS_QUANTITY_DECIMAL_SI},
        {"u", 10, -6, GS_QUANTITY_DECIMAL_SI}, {"m", 10, -3, GS_QUANTITY_DECIMAL_SI},
        {"k", 10, 3, GS_QUANTITY_DECIMAL_SI},  {"M", 10, 6, GS_QUANTITY_DECIMAL_SI},
        {"G", 10, 9, GS_QUANTITY_DECIMAL_SI},  {"T", 10, 12, GS_QUANTITY_DECIMAL_SI},
        {"P", 10, 15, GS_QUANTITY_DECIMAL_SI}, {"E", 10, 18, GS_QUANTITY_DECIMAL_SI},
        {"Ki", 2, 10, GS_QUANTITY_BINARY_SI},  {"Mi", 2, 20, GS_QUANTITY_BINARY_SI},
        {"Gi", 2, 30, GS_QUANTITY_BINARY_SI},  {"Ti", 2, 40, GS_QUANTITY_BINARY_SI},
        {"Pi", 2, 50, GS_QUANTITY_BINARY_SI},  {"Ei", 2, 60, GS_QUANTITY_BINARY_SI},
    };
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        if (strlen(table[i].name) == len && memcmp(table[i].name, s, len) == 0) {
            out->base = table[i].base;
            out->exponent = table[i].exponent;
            out->format = table[i].format;
            return true;
        }
    }
    /* Decimal exponent: e|E followed by an optionally signed integer (strconv.ParseInt). */
    if (len > 1 && (s[0] == 'e' || s[0] == 'E')) {
        size_t i = 1;
        bool neg = false;
        if (s[i] == '+' || s[i] == '-') {
            neg = s[i] == '-';
            i++;
        }
        if (i >= len)
            return false;
        int64_t v = 0;
        for (; i < len; i++) {
            if (!is_digit(s[i]))
                return false;
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
                return false;
        }
        out->base = 10;
        out->exponent = neg ? -v : v;
        out->format = GS_QUANTITY_DECIMAL_EXPONENT;
        return true;
    }
    return false;
}

static int64_t sat_add_i64(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* Normalise a nano count into mant * 10^exp10. Returns -ERANGE if it cannot be held. */
static int from_nanos(i128 nanos, enum gs_quantity_format fmt, struct gs_quantity *out)
{
    if (nanos > max_nanos || nanos < -max_nanos)
        return -ERANGE;
    int32_t exp = NANO_EXP;
    if (nanos == 0) {
        exp = 0;
    } else {
        while (nanos % 10 == 0 && exp < MAX_EXP) {
            nanos /= 10;
            exp++;
        }
    }
    if (nanos > INT64_MAX || nanos < -(i128)INT64_MAX)
        return -ERANGE;
    out->mant = (int64_t)nanos;
    out->exp10 = exp;
    out->format = fmt;
    return 0;
}

/* Value in nano-units. Saturates for structs that break the invariants (never valid output). */
static i128 to_nanos(const struct gs_quantity *q)
{
    int32_t e = q->exp10;
    if (q->mant == 0)
        return 0;
    if (e < NANO_EXP) {
        /* Not produced by this module; round away from zero like everything else. */
        i128 div = e < NANO_EXP - 30 ? pow10_i128(30) : pow10_i128(NANO_EXP - e);
        i128 v = (i128)q->mant / div;
        if ((i128)q->mant % div != 0)
            v += q->mant > 0 ? 1 : -1;
        return v;
    }
    i128 r;
    int shift = e - NANO_EXP;
    if (shift > 36 || __builtin_mul_overflow((i128)q->mant, pow10_i128(shift), &r))
        return q->mant > 0 ? max_nanos + 1 : -max_nanos - 1;
    return r;
}

int gs_quantity_parse(const char *s, struct gs_quantity *out, struct gs_error *err)
{
    if (!s || !*s)
        return gs_error_set(err, -EINVAL, "invalid quantity \"\": empty string");

    size_t end = strlen(s), pos = 0;
    bool negative = false;
    if (s[0] == '-' || s[0] == '+') {
        negative = s[0] == '-';
        pos++;
    }
    size_t num_start = pos;
    while (pos < end && is_digit(s[pos]))
        pos++;
    size_t num_end = pos, denom_start = pos, denom_end = pos;
    if (pos < end && s[pos] == '.') {
        pos++;
        denom_start = pos;
        while (pos < end && is_digit(s[pos]))
            pos++;
        denom_end = pos;
    }
    /* Kubernetes' scanner takes "", "-", "." and "Gi" as zero; a quantity without a single digit
     * is always a mistake in our inputs, so it is refused. */
    if (num_end == num_start && denom_end == denom_start)
        return quantity_error(err, -EINVAL, s, "expected a number");

    /* Suffix: [eEinumkKMGTP]* [+-]? [0-9]* and nothing else. */
    size_t suffix_start = pos;
    while (pos < end && strchr("eEinumkKMGTP", s[pos]))
        pos++;
    if (pos < end && (s[pos] == '-' || s[pos] == '+'))
        pos++;
    while (pos < end && is_digit(s[pos]))
        pos++;
    if (pos != end)
        return quantity_error(
            err, -EINVAL, s,
            "not of the form [+-]digits[.digits][suffix] with suffix one of n u m k M G T P E, "
            "Ki Mi Gi Ti Pi Ei or e<exponent>");

    struct suffix_info suf;
    if (!interpret_suffix(s + suffix_start, end - suffix_start, &suf))
        return quantity_error(err, -EINVAL, s, "unknown suffix");

    /* Fast path for what nearly every quantity is: a whole number of at most 18 digits with a
     * binary or non-negative decimal suffix ("15Gi", "4096Mi", "30", "2k"). Exact in 128 bits, no
     * digit array; the general path below gives the same result for these inputs. */
    if (denom_start == denom_end && num_end - num_start <= 18 &&
        (suf.base == 2 || (suf.exponent >= 0 && suf.exponent <= 18))) {
        u128 v = 0;
        for (size_t i = num_start; i < num_end; i++)
            v = v * 10 + (u128)(s[i] - '0');
        if (v == 0) {
            out->mant = 0;
            out->exp10 = 0;
            out->format = suf.format;
            return 0;
        }
        u128 scale = suf.base == 2 ? (u128)1 << suf.exponent : (u128)pow10_i128((int)suf.exponent);
        if (v > (u128)INT64_MAX / scale)
            return quantity_error(err, -ERANGE, s, "out of range (magnitude above 2^63-1)");
        i128 nanos = (i128)(v * scale) * NANOS_PER_ONE;
        if (from_nanos(negative ? -nanos : nanos, suf.format, out) < 0)
            return quantity_error(err, -ERANGE, s, "out of range");
        return 0;
    }

    /* Collect the significant digits. */
    struct digits x = {.n = 0, .exp = 0, .sticky = false};
    bool seen_nonzero = false;
    int64_t last_weight = 0;
    for (size_t i = num_start; i < denom_end; i++) {
        if (i == num_end)
            continue; /* the '.' */
        int64_t weight = i < num_end ? (int64_t)(num_end - 1 - i) : -(int64_t)(i - denom_start + 1);
        int dv = s[i] - '0';
        if (!seen_nonzero && dv == 0)
            continue;
        seen_nonzero = true;
        if (x.n < DIGITS_CAP) {
            x.d[x.n++] = (unsigned char)dv;
            last_weight = weight;
        } else if (dv != 0) {
            return quantity_error(err, -ERANGE, s, "more than 96 significant digits");
        }
    }
    if (!seen_nonzero) {
        out->mant = 0;
        out->exp10 = 0;
        out->format = suf.format;
        return 0;
    }
    x.exp = last_weight;
    digits_strip_trailing_zeros(&x);

    if (suf.base == 10) {
        x.exp = sat_add_i64(x.exp, suf.exponent);
    } else if (!digits_mul_pow2(&x, (int)suf.exponent)) {
        return quantity_error(err, -ERANGE, s, "out of range");
    }
    /* The leading digit is at 10^(exp+n-1); at 10^19 or above the value exceeds INT64_MAX. */
    if (x.exp + x.n > 19)
        return quantity_error(err, -ERANGE, s, "out of range (magnitude above 2^63-1)");
    if (!digits_round_nano(&x))
        return quantity_error(err, -ERANGE, s, "out of range");
    digits_strip_trailing_zeros(&x);
    if (x.n > 38)
        return quantity_error(err, -ERANGE, s, "out of range");

    u128 mag = 0;
    for (int i = 0; i < x.n; i++)
        mag = mag * 10 + x.d[i];
    /* mag * 10^(exp+9) nanos, exp in [-9, 19] */
    int shift = (int)(x.exp - NANO_EXP);
    u128 limit = (u128)max_nanos;
    u128 p = (u128)pow10_i128(shift);
    if (mag > limit / p || mag * p > limit)
        return quantity_error(err, -ERANGE, s, "out of range (magnitude above 2^63-1)");
    i128 nanos = (i128)(mag * p);
    if (negative)
        nanos = -nanos;
    /* Kubernetes: a BinarySI amount strictly between 0 and 1 (in magnitude) becomes DecimalSI. */
    if (suf.format == GS_QUANTITY_BINARY_SI && mag * p < (u128)NANOS_PER_ONE)
        suf.format = GS_QUANTITY_DECIMAL_SI;
    if (from_nanos(nanos, suf.format, out) < 0)
        return quantity_error(err, -ERANGE, s,
                              "out of range (more than 19 significant digits with a fraction)");
    return 0;
}

int gs_quantity_parse_int64(const char *s, int64_t *out, struct gs_error *err)
{
    struct gs_quantity q;
    int r = gs_quantity_parse(s, &q, err);
    if (r < 0)
        return r;
    r = gs_quantity_to_int64_exact(&q, out);
    if (r == -EDOM) {
        char shown[80];
        return gs_error_set(err, -EINVAL, "invalid quantity \"%s\": not a whole number",
                            printable(shown, sizeof(shown), s));
    }
    return r;
}

/* ---- formatting ------------------------------------------------------------------------- */

static size_t put_i128(char *buf, i128 v)
{
    char tmp[48];
    size_t n = 0;
    bool neg = v < 0;
    u128 m = neg ? (u128)(-(v + 1)) + 1 : (u128)v;
    do {
        tmp[n++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m);
    size_t o = 0;
    if (neg)
        buf[o++] = '-';
    while (n)
        buf[o++] = tmp[--n];
    buf[o] = '\0';
    return o;
}

static const char *decimal_suffix(int exp)
{
    switch (exp) {
    case -9:
        return "n";
    case -6:
        return "u";
    case -3:
        return "m";
    case 0:
        return "";
    case 3:
        return "k";
    case 6:
        return "M";
    case 9:
        return "G";
    case 12:
        return "T";
    case 15:
        return "P";
    case 18:
        return "E";
    default:
        return NULL;
    }
}

int gs_quantity_format(const struct gs_quantity *q, char *buf, size_t len)
{
    char tmp[GS_QUANTITY_STR_MAX];
    i128 nanos = to_nanos(q);
    if (nanos > max_nanos || nanos < -max_nanos) {
        if (len)
            buf[0] = '\0';
        return -ERANGE;
    }
    if (nanos == 0) {
        snprintf(tmp, sizeof(tmp), "0");
    } else {
        enum gs_quantity_format fmt = q->format;
        bool integer = nanos % NANOS_PER_ONE == 0;
        if (fmt == GS_QUANTITY_BINARY_SI) {
            if ((nanos > -1024 * NANOS_PER_ONE && nanos < 1024 * NANOS_PER_ONE) || !integer)
                fmt = GS_QUANTITY_DECIMAL_SI;
        } else if (fmt != GS_QUANTITY_DECIMAL_SI) {
            fmt = GS_QUANTITY_DECIMAL_EXPONENT;
        }
        if (fmt == GS_QUANTITY_BINARY_SI) {
            static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
            i128 v = nanos / NANOS_PER_ONE;
            int e = 0;
            while (v % 1024 == 0 && e < 6) {
                v /= 1024;
                e++;
            }
            size_t o = put_i128(tmp, v);
            snprintf(tmp + o, sizeof(tmp) - o, "%s", bin[e]);
        } else {
            /* Strip factors of ten, then lower the exponent to a multiple of three. */
            i128 m = nanos;
            int e = NANO_EXP;
            while (m % 10 == 0) {
                m /= 10;
                e++;
            }
            int adj = ((e % 3) + 3) % 3;
            m *= pow10_i128(adj);
            e -= adj;
            size_t o = put_i128(tmp, m);
            if (fmt == GS_QUANTITY_DECIMAL_SI && decimal_suffix(e)) {
                snprintf(tmp + o, sizeof(tmp) - o, "%s", decimal_suffix(e));
            } else if (e != 0) {
                snprintf(tmp + o, sizeof(tmp) - o, "e%d", e);
            }
        }
    }
    size_t n = strlen(tmp);
    if (n + 1 > len) {
        if (len)
            buf[0] = '\0';
        return -ENOSPC;
    }
    memcpy(buf, tmp, n + 1);
    return 0;
}

const char *gs_quantity_str(const struct gs_quantity *q, char buf[GS_QUANTITY_STR_MAX])
{
    if (gs_quantity_format(q, buf, GS_QUANTITY_STR_MAX) < 0)
        snprintf(buf, GS_QUANTITY_STR_MAX, "(invalid)");
    return buf;
}

/* ---- construction, comparison, arithmetic ----------------------------------------------- */

void gs_quantity_from_int64(int64_t v, enum gs_quantity_format fmt, struct gs_quantity *out)
{
    /* INT64_MIN has no positive counterpart: clamp to the symmetric range. */
    if (v == INT64_MIN)
        v = -INT64_MAX;
    int32_t e = 0;
    if (v == 0) {
        out->mant = 0;
    } else {
        while (v % 10 == 0) {
            v /= 10;
            e++;
        }
        out->mant = v;
    }
    out->exp10 = e;
    out->format = fmt;
}

void gs_quantity_from_milli(int64_t milli, enum gs_quantity_format fmt, struct gs_quantity *out)
{
    if (milli == INT64_MIN)
        milli = -INT64_MAX;
    /* |milli| * 10^6 nanos is always within range. */
    (void)from_nanos((i128)milli * 1000000, fmt, out);
}

int gs_quantity_cmp(const struct gs_quantity *a, const struct gs_quantity *b)
{
    i128 x = to_nanos(a), y = to_nanos(b);
    return x < y ? -1 : x > y ? 1 : 0;
}

bool gs_quantity_is_zero(const struct gs_quantity *q)
{
    return q->mant == 0;
}

int gs_quantity_sign(const struct gs_quantity *q)
{
    return q->mant < 0 ? -1 : q->mant > 0 ? 1 : 0;
}

int gs_quantity_add(const struct gs_quantity *a, const struct gs_quantity *b,
                    struct gs_quantity *out)
{
    enum gs_quantity_format fmt = a->mant == 0 ? b->format : a->format;
    return from_nanos(to_nanos(a) + to_nanos(b), fmt, out);
}

int gs_quantity_sub(const struct gs_quantity *a, const struct gs_quantity *b,
                    struct gs_quantity *out)
{
    enum gs_quantity_format fmt = a->mant == 0 ? b->format : a->format;
    return from_nanos(to_nanos(a) - to_nanos(b), fmt, out);
}

/* nanos / 10^(9-scale_digits), rounded away from zero. */
static int scaled(const struct gs_quantity *q, int keep_fraction_digits, int64_t *out)
{
    i128 n = to_nanos(q);
    if (n > max_nanos || n < -max_nanos)
        return -ERANGE;
    i128 div = pow10_i128(9 - keep_fraction_digits);
    i128 v = n / div;
    if (n % div != 0)
        v += n > 0 ? 1 : -1;
    if (v > INT64_MAX || v < INT64_MIN)
        return -ERANGE;
    *out = (int64_t)v;
    return 0;
}

int gs_quantity_value(const struct gs_quantity *q, int64_t *out)
{
    return scaled(q, 0, out);
}

int gs_quantity_milli_value(const struct gs_quantity *q, int64_t *out)
{
    return scaled(q, 3, out);
}

bool gs_quantity_is_integer(const struct gs_quantity *q)
{
    i128 n = to_nanos(q);
    return n % NANOS_PER_ONE == 0;
}

int gs_quantity_to_int64_exact(const struct gs_quantity *q, int64_t *out)
{
    i128 n = to_nanos(q);
    if (n > max_nanos || n < -max_nanos)
        return -ERANGE;
    if (n % NANOS_PER_ONE != 0)
        return -EDOM;
    *out = (int64_t)(n / NANOS_PER_ONE);
    return 0;
}
