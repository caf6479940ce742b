/* SPDX-License-Identifier: Apache-2.0 */
/* CEL values: kind names, heterogeneous equality and ordering, maps, UTF-8, double formatting. */
#include <math.h>
#include <string.h>

#include "cel/cel-internal.h"

const char *cel_kind_name(int kind)
{
    switch (kind) {
    case CEL_K_NULL:
        return "null_type";
    case CEL_K_BOOL:
        return "bool";
    case CEL_K_INT:
        return "int";
    case CEL_K_UINT:
        return "uint";
    case CEL_K_DOUBLE:
        return "double";
    case CEL_K_STRING:
        return "string";
    case CEL_K_BYTES:
        return "bytes";
    case CEL_K_LIST:
        return "list";
    case CEL_K_MAP:
        return "map";
    case CEL_K_TYPE:
        return "type";
    case CEL_K_QUANTITY:
        return "kubernetes.Quantity";
    case CEL_K_SEMVER:
        return "kubernetes.Semver";
    case CEL_K_OPTIONAL:
        return "optional_type";
    case CEL_K_TIMESTAMP:
        return "google.protobuf.Timestamp";
    case CEL_K_DURATION:
        return "google.protobuf.Duration";
    case CEL_K_IP:
        return "net.IP";
    case CEL_K_CIDR:
        return "net.CIDR";
    case CEL_K_ERROR:
        return "error";
    case CEL_K_COUNT_:
        return "type";
    default:
        return "unknown";
    }
}

bool cel_utf8_valid(const char *s, size_t n)
{
    return cel_utf8_len(s, n) >= 0;
}

int64_t cel_utf8_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    int64_t count = 0;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            count++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return -1;
        }
        if (i + len > n)
            return -1;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return -1;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return -1;
        i += len;
        count++;
    }
    return count;
}

/* Compare int with uint / double exactly. */
static int cmp_int_uint(int64_t a, uint64_t b)
{
    if (a < 0)
        return -1;
    return (uint64_t)a < b ? -1 : (uint64_t)a > b;
}

/* cel-go compares a double with an integer by converting the integer to double. */
static int cmp_double_int(double d, int64_t i, bool *nan)
{
    double x = (double)i;
    if (isnan(d)) {
        *nan = true;
        return 0;
    }
    return d < x ? -1 : d > x;
}

static int cmp_double_uint(double d, uint64_t u, bool *nan)
{
    double x = (double)u;
    if (isnan(d)) {
        *nan = true;
        return 0;
    }
    return d < x ? -1 : d > x;
}

static bool is_num(int k)
{
    return k == CEL_K_INT || k == CEL_K_UINT || k == CEL_K_DOUBLE;
}

/* Numeric ordering across int/uint/double; *nan set when a NaN is involved. */
static int num_cmp(const struct cel_value *a, const struct cel_value *b, bool *nan)
{
    *nan = false;
    switch (a->kind) {
    case CEL_K_INT:
        if (b->kind == CEL_K_INT)
            return a->i < b->i ? -1 : a->i > b->i;
        if (b->kind == CEL_K_UINT)
            return cmp_int_uint(a->i, b->u);
        return -cmp_double_int(b->d, a->i, nan);
    case CEL_K_UINT:
        if (b->kind == CEL_K_UINT)
            return a->u < b->u ? -1 : a->u > b->u;
        if (b->kind == CEL_K_INT)
            return -cmp_int_uint(b->i, a->u);
        return -cmp_double_uint(b->d, a->u, nan);
    default:
        if (b->kind == CEL_K_DOUBLE) {
            if (isnan(a->d) || isnan(b->d)) {
                *nan = true;
                return 0;
            }
            return a->d < b->d ? -1 : a->d > b->d;
        }
        if (b->kind == CEL_K_INT)
            return cmp_double_int(a->d, b->i, nan);
        return cmp_double_uint(a->d, b->u, nan);
    }
}

static int bytes_cmp(const struct cel_value *a, const struct cel_value *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->s, b->s, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a->len < b->len ? -1 : a->len > b->len;
}

static bool generic_map_find(const struct cel_map *m, const struct cel_value *key, size_t *idx)
{
    for (size_t i = 0; i < m->n; i++) {
        if (cel_value_equal(&m->keys[i], key)) {
            *idx = i;
            return true;
        }
    }
    return false;
}

static bool map_equal(const struct cel_map *a, const struct cel_map *b)
{
    /* Both generic here (DRA views are never compared: they are materialised first). */
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        size_t j;
        if (!generic_map_find(b, &a->keys[i], &j) || !cel_value_equal(&a->vals[i], &b->vals[j]))
            return false;
    }
    return true;
}

bool cel_value_equal(const struct cel_value *a, const struct cel_value *b)
{
    if (is_num(a->kind) && is_num(b->kind)) {
        bool nan;
        int c = num_cmp(a, b, &nan);
        return !nan && c == 0;
    }
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case CEL_K_NULL:
        return true;
    case CEL_K_BOOL:
        return a->b == b->b;
    case CEL_K_STRING:
    case CEL_K_BYTES:
        return a->len == b->len && (!a->len || !memcmp(a->s, b->s, a->len));
    case CEL_K_TYPE:
        return a->type_kind == b->type_kind;
    case CEL_K_LIST:
        if (a->list->n != b->list->n)
            return false;
        for (size_t i = 0; i < a->list->n; i++)
            if (!cel_value_equal(&a->list->items[i], &b->list->items[i]))
                return false;
        return true;
    case CEL_K_MAP:
        if (a->map->impl != CEL_MAP_GENERIC || b->map->impl != CEL_MAP_GENERIC)
            return a->map == b->map;
        return map_equal(a->map, b->map);
    case CEL_K_QUANTITY:
        return gs_quantity_cmp(&a->q, &b->q) == 0;
    case CEL_K_SEMVER:
        return cel_semver_cmp(a->semver, b->semver) == 0;
    case CEL_K_IP:
    case CEL_K_CIDR:
        return cel_net_equal(a->net, b->net);
    case CEL_K_TIMESTAMP:
    case CEL_K_DURATION:
        return cel_time_cmp(a, b) == 0;
    case CEL_K_OPTIONAL:
        if (!a->opt || !b->opt)
            return !a->opt && !b->opt;
        return cel_value_equal(a->opt, b->opt);
    default:
        return false;
    }
}

int cel_value_compare(const struct cel_value *a, const struct cel_value *b, int *cmp)
{
    if (is_num(a->kind) && is_num(b->kind)) {
        bool nan;
        *cmp = num_cmp(a, b, &nan);
        return nan ? -EDOM : 0;
    }
    if (a->kind != b->kind)
        return -EINVAL;
    switch (a->kind) {
    case CEL_K_BOOL:
        *cmp = (int)a->b - (int)b->b;
        return 0;
    case CEL_K_STRING:
    case CEL_K_BYTES:
        *cmp = bytes_cmp(a, b);
        return 0;
    case CEL_K_TIMESTAMP:
    case CEL_K_DURATION:
        *cmp = cel_time_cmp(a, b);
        return 0;
    default:
        return -EINVAL;
    }
}

int cel_map_get(struct cel_eval *ev, const struct cel_map *m, const struct cel_value *key,
                struct cel_value *out)
{
    if (m->impl != CEL_MAP_GENERIC)
        return cel_dra_map_get(ev, m, key, out);
    size_t i;
    if (!generic_map_find(m, key, &i))
        return 0;
    *out = m->vals[i];
    return 1;
}

const struct cel_map *cel_map_generic(struct cel_eval *ev, const struct cel_map *m)
{
    if (m->impl == CEL_MAP_GENERIC)
        return m;
    return cel_dra_map_materialize(ev, m);
}

size_t cel_map_size(struct cel_eval *ev, const struct cel_map *m)
{
    const struct cel_map *g = cel_map_generic(ev, m);
    return g ? g->n : 0;
}

void cel_format_double(double d, char *buf, size_t len)
{
    if (isnan(d)) {
        snprintf(buf, len, "NaN");
        return;
    }
    if (isinf(d)) {
        snprintf(buf, len, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* shortest digits that round-trip */
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* exponent of the shortest representation */
    const char *e = strchr(tmp, 'e');
    int exp = e ? (int)strtol(e + 1, NULL, 10) : 0;
    if (exp < -4 || exp >= 21) {
        /* Go: mantissa digits then e+XX (at least two exponent digits) */
        char mant[40];
        size_t ml = (size_t)(e - tmp);
        if (ml >= sizeof(mant))
            ml = sizeof(mant) - 1;
        memcpy(mant, tmp, ml);
        mant[ml] = '\0';
        snprintf(buf, len, "%se%c%02d", mant, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    int decimals = prec - 1 - exp;
    if (decimals < 0)
        decimals = 0;
    snprintf(buf, len, "%.*f", decimals, d);
}
