/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes CEL libraries used by DRA selectors: quantity (k8s.io/apiserver/pkg/cel/library/
 * quantity.go) and semver (semverlib.go). Quantities are exact (config/quantity.h).
 */
#include <math.h>
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)

int cel_quantity_parse(const char *s, size_t len, struct gs_quantity *out, struct gs_error *err)
{
    static const struct {
        char suffix[3];
        int64_t mult;
        enum gs_quantity_format format;
    } suffixes[] = {
        {"", 1, GS_QUANTITY_DECIMAL_SI},
        {"k", 1000, GS_QUANTITY_DECIMAL_SI},
        {"M", 1000000, GS_QUANTITY_DECIMAL_SI},
        {"G", 1000000000, GS_QUANTITY_DECIMAL_SI},
        {"T", 1000000000000, GS_QUANTITY_DECIMAL_SI},
        {"P", 1000000000000000, GS_QUANTITY_DECIMAL_SI},
        {"E", 1000000000000000000, GS_QUANTITY_DECIMAL_SI},
        {"Ki", 1LL << 10, GS_QUANTITY_BINARY_SI},
        {"Mi", 1LL << 20, GS_QUANTITY_BINARY_SI},
        {"Gi", 1LL << 30, GS_QUANTITY_BINARY_SI},
        {"Ti", 1LL << 40, GS_QUANTITY_BINARY_SI},
        {"Pi", 1LL << 50, GS_QUANTITY_BINARY_SI},
        {"Ei", 1LL << 60, GS_QUANTITY_BINARY_SI},
    };
    size_t i = 0;
    int64_t v = 0;
    bool fast = len > 0;
    while (fast && i < len && s[i] >= '0' && s[i] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
            fast = false;
        i++;
    }
    if (fast && i > 0) {
        for (size_t k = 0; k < GS_ARRAY_SIZE(suffixes); k++) {
            size_t sl = strlen(suffixes[k].suffix);
            int64_t r;
            if (len - i != sl || memcmp(s + i, suffixes[k].suffix, sl) != 0)
                continue;
            if (__builtin_mul_overflow(v, suffixes[k].mult, &r))
                break;
            gs_quantity_from_int64(r, suffixes[k].format, out);
            return 0;
        }
    }
    char buf[GS_QUANTITY_STR_MAX + 1];
    if (len >= sizeof(buf) || memchr(s, '\0', len))
        return gs_error_set(err, -EINVAL, "invalid quantity: '%.*s'", (int)GS_MIN(len, 64u), s);
    memcpy(buf, s, len);
    buf[len] = '\0';
    return gs_quantity_parse(buf, out, err);
}

static struct cel_value parse_quantity(struct cel_eval *ev, const struct cel_node *call,
                                       const struct cel_value *s, bool test)
{
    struct gs_quantity q;
    struct gs_error err;
    bool ok = cel_quantity_parse(s->s, s->len, &q, &err) == 0;
    if (test)
        return cel_bool(ok);
    if (!ok)
        return cel_error(ev, call, "invalid quantity: '%.*s'", (int)GS_MIN(s->len, 64u), s->s);
    return (struct cel_value){.kind = CEL_K_QUANTITY, .q = q};
}

static struct cel_value fn_quantity(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    return parse_quantity(ev, call, &a[0], false);
}

static struct cel_value fn_is_quantity(struct cel_eval *ev, const struct cel_node *call,
                                       struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    return parse_quantity(ev, call, &a[0], true);
}

/* Semver normalisation (semver(s, true)): drop a leading 'v', fill in missing minor/patch and
 * strip leading zeros, as the Kubernetes library does. */
static int normalize_semver(const struct cel_value *s, char *out, size_t outlen)
{
    const char *p = s->s;
    size_t len = s->len, i = 0, o = 0;
    if (len && p[0] == 'v')
        i = 1;
    int parts = 0;
    while (parts < 3 && i < len && p[i] >= '0' && p[i] <= '9') {
        while (i + 1 < len && p[i] == '0' && p[i + 1] >= '0' && p[i + 1] <= '9')
            i++;
        while (i < len && p[i] >= '0' && p[i] <= '9') {
            if (o + 1 >= outlen)
                return -ENOSPC;
            out[o++] = p[i++];
        }
        parts++;
        if (parts < 3 && i < len && p[i] == '.') {
            if (o + 1 >= outlen)
                return -ENOSPC;
            out[o++] = '.';
            i++;
        }
    }
    if (!parts)
        return -EINVAL;
    while (parts < 3) {
        if (o + 3 >= outlen)
            return -ENOSPC;
        if (out[o - 1] != '.')
            out[o++] = '.';
        out[o++] = '0';
        parts++;
    }
    if (len - i + o + 1 > outlen)
        return -ENOSPC;
    memcpy(out + o, p + i, len - i);
    o += len - i;
    out[o] = '\0';
    return (int)o;
}

static struct cel_value semver_of(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n, bool test)
{
    if (a[0].kind != CEL_K_STRING || (n == 2 && a[1].kind != CEL_K_BOOL))
        return NO_OVERLOAD();
    const char *s = a[0].s;
    size_t len = a[0].len;
    char buf[256];
    if (n == 2 && a[1].b) {
        int r = normalize_semver(&a[0], buf, sizeof(buf));
        if (r < 0) {
            if (test)
                return cel_bool(false);
            return cel_error(ev, call, "invalid semver: '%.*s'", (int)GS_MIN(len, 64u), s);
        }
        s = buf;
        len = (size_t)r;
    }
    struct cel_semver *v;
    int r = cel_semver_parse(ev->arena, s, len, &v);
    if (r == -ENOMEM)
        return cel_oom(ev);
    if (test)
        return cel_bool(r == 0);
    if (r < 0)
        return cel_error(ev, call, "invalid semver: '%.*s'", (int)GS_MIN(a[0].len, 64u), a[0].s);
    return (struct cel_value){.kind = CEL_K_SEMVER, .semver = v};
}

static struct cel_value fn_semver(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n)
{
    return semver_of(ev, call, a, n, false);
}

static struct cel_value fn_is_semver(struct cel_eval *ev, const struct cel_node *call,
                                     struct cel_value *a, uint32_t n)
{
    return semver_of(ev, call, a, n, true);
}

/* compareTo / isLessThan / isGreaterThan on two quantities or two semvers */
static int ordered(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                   uint32_t n, int *c)
{
    if (a[0].kind == CEL_K_QUANTITY && a[1].kind == CEL_K_QUANTITY) {
        *c = gs_quantity_cmp(&a[0].q, &a[1].q);
        return 0;
    }
    if (a[0].kind == CEL_K_SEMVER && a[1].kind == CEL_K_SEMVER) {
        *c = cel_semver_cmp(a[0].semver, a[1].semver);
        return 0;
    }
    return -EINVAL;
}

static struct cel_value fn_compare_to(struct cel_eval *ev, const struct cel_node *call,
                                      struct cel_value *a, uint32_t n)
{
    int c;
    if (ordered(ev, call, a, n, &c) < 0)
        return NO_OVERLOAD();
    return cel_int(c);
}

static struct cel_value fn_is_less(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    int c;
    if (ordered(ev, call, a, n, &c) < 0)
        return NO_OVERLOAD();
    return cel_bool(c < 0);
}

static struct cel_value fn_is_greater(struct cel_eval *ev, const struct cel_node *call,
                                      struct cel_value *a, uint32_t n)
{
    int c;
    if (ordered(ev, call, a, n, &c) < 0)
        return NO_OVERLOAD();
    return cel_bool(c > 0);
}

static struct cel_value fn_add_sub(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_QUANTITY)
        return NO_OVERLOAD();
    struct gs_quantity rhs;
    if (a[1].kind == CEL_K_QUANTITY)
        rhs = a[1].q;
    else if (a[1].kind == CEL_K_INT)
        gs_quantity_from_int64(a[1].i, GS_QUANTITY_DECIMAL_SI, &rhs);
    else
        return NO_OVERLOAD();
    struct cel_value r = {.kind = CEL_K_QUANTITY};
    int rc = call->name[0] == 'a' ? gs_quantity_add(&a[0].q, &rhs, &r.q)
                                  : gs_quantity_sub(&a[0].q, &rhs, &r.q);
    if (rc < 0)
        return cel_error(ev, call, "quantity overflow in %s()", call->name);
    return r;
}

static struct cel_value fn_as_integer(struct cel_eval *ev, const struct cel_node *call,
                                      struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_QUANTITY)
        return NO_OVERLOAD();
    int64_t v;
    if (gs_quantity_to_int64_exact(&a[0].q, &v) < 0)
        return cel_error(ev, call, "cannot convert value to integer");
    return cel_int(v);
}

static struct cel_value fn_is_integer(struct cel_eval *ev, const struct cel_node *call,
                                      struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_QUANTITY)
        return NO_OVERLOAD();
    int64_t v;
    return cel_bool(gs_quantity_to_int64_exact(&a[0].q, &v) == 0);
}

static struct cel_value fn_as_float(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_QUANTITY)
        return NO_OVERLOAD();
    return cel_double((double)a[0].q.mant * pow(10.0, a[0].q.exp10));
}

static struct cel_value fn_sign(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_QUANTITY)
        return NO_OVERLOAD();
    return cel_int(gs_quantity_sign(&a[0].q));
}

static struct cel_value fn_part(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_SEMVER)
        return NO_OVERLOAD();
    uint64_t v = call->name[0] == 'p'   ? a[0].semver->patch
                 : call->name[1] == 'a' ? a[0].semver->major
                                        : a[0].semver->minor;
    if (v > INT64_MAX)
        return cel_error(ev, call, "version component out of range");
    return cel_int((int64_t)v);
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
const struct cel_func cel_k8s_funcs[] = {
    {"quantity", false, 1, fn_quantity, OV("string:quantity"), true},
    {"isQuantity", false, 1, fn_is_quantity, OV("string:bool"), true},
    {"semver", false, 1, fn_semver, OV("string:semver"), true},
    {"semver", false, 2, fn_semver, OV("string,bool:semver"), true},
    {"isSemver", false, 1, fn_is_semver, OV("string:bool"), true},
    {"isSemver", false, 2, fn_is_semver, OV("string,bool:bool"), true},
    {"compareTo", true, 2, fn_compare_to, OV("quantity,quantity:int", "semver,semver:int"), true},
    {"isLessThan", true, 2, fn_is_less, OV("quantity,quantity:bool", "semver,semver:bool"), true},
    {"isGreaterThan", true, 2, fn_is_greater, OV("quantity,quantity:bool", "semver,semver:bool"),
     true},
    {"add", true, 2, fn_add_sub, OV("quantity,quantity:quantity", "quantity,int:quantity"), true},
    {"sub", true, 2, fn_add_sub, OV("quantity,quantity:quantity", "quantity,int:quantity"), true},
    {"asInteger", true, 1, fn_as_integer, OV("quantity:int"), true},
    {"isInteger", true, 1, fn_is_integer, OV("quantity:bool"), true},
    {"asApproximateFloat", true, 1, fn_as_float, OV("quantity:double"), true},
    {"sign", true, 1, fn_sign, OV("quantity:int"), true},
    {"major", true, 1, fn_part, OV("semver:int"), true},
    {"minor", true, 1, fn_part, OV("semver:int"), true},
    {"patch", true, 1, fn_part, OV("semver:int"), true},
};
const size_t cel_k8s_funcs_count = GS_ARRAY_SIZE(cel_k8s_funcs);
