/* SPDX-License-Identifier: Apache-2.0 */
/*
 * string.format(list) of cel-go's strings extension: %s %d %f %e %x %X %o %b %% with an optional
 * precision (%.3f). Lists and maps print as [a, b] and {k: v} (map entries sorted by key text).
 */
#include <math.h>
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define FORMAT_MAX_OUTPUT (1u << 20)

struct sbuf {
    struct cel_arena *arena;
    char *p;
    size_t n, cap;
    bool failed;
};

static void sb_put(struct sbuf *b, const char *s, size_t len)
{
    if (b->failed)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 64;
        while (ncap < b->n + len + 1)
            ncap *= 2;
        if (ncap > FORMAT_MAX_OUTPUT) {
            b->failed = true;
            return;
        }
        char *np = cel_arena_alloc(b->arena, ncap);
        if (!np) {
            b->failed = true;
            return;
        }
        if (b->n)
            memcpy(np, b->p, b->n);
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static bool special_double(double d, struct sbuf *b)
{
    if (isnan(d))
        sb_str(b, "NaN");
    else if (isinf(d))
        sb_str(b, d > 0 ? "Infinity" : "-Infinity");
    else
        return false;
    return true;
}

struct entry {
    char *key;
    size_t key_len;
    const struct cel_value *val;
};

static int entry_cmp(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    return c ? c : (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

/* %s formatting of any value; false if the value cannot be printed. */
static bool fmt_string(struct cel_eval *ev, const struct cel_value *v, struct sbuf *b, int depth)
{
    char tmp[64];
    if (depth > 32)
        return false;
    switch (v->kind) {
    case CEL_K_NULL:
        sb_str(b, "null");
        return true;
    case CEL_K_BOOL:
        sb_str(b, v->b ? "true" : "false");
        return true;
    case CEL_K_INT:
        snprintf(tmp, sizeof(tmp), "%lld", (long long)v->i);
        break;
    case CEL_K_UINT:
        snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v->u);
        break;
    case CEL_K_DOUBLE:
        if (special_double(v->d, b))
            return true;
        cel_format_double(v->d, tmp, sizeof(tmp));
        break;
    case CEL_K_STRING:
    case CEL_K_BYTES:
        sb_put(b, v->s, v->len);
        return true;
    case CEL_K_TYPE:
        sb_str(b, cel_kind_name(v->type_kind));
        return true;
    case CEL_K_QUANTITY:
        if (gs_quantity_format(&v->q, tmp, sizeof(tmp)) < 0)
            return false;
        break;
    case CEL_K_IP:
    case CEL_K_CIDR:
        cel_net_format(v->net, tmp, sizeof(tmp));
        break;
    case CEL_K_TIMESTAMP:
    case CEL_K_DURATION:
        cel_time_format(v, tmp, sizeof(tmp));
        break;
    case CEL_K_SEMVER:
        snprintf(tmp, sizeof(tmp), "%llu.%llu.%llu", (unsigned long long)v->semver->major,
                 (unsigned long long)v->semver->minor, (unsigned long long)v->semver->patch);
        sb_str(b, tmp);
        if (v->semver->pre_len) {
            sb_str(b, "-");
            sb_put(b, v->semver->pre, v->semver->pre_len);
        }
        return true;
    case CEL_K_LIST:
        sb_str(b, "[");
        for (size_t i = 0; i < v->list->n; i++) {
            if (i)
                sb_str(b, ", ");
            if (!fmt_string(ev, &v->list->items[i], b, depth + 1))
                return false;
        }
        sb_str(b, "]");
        return true;
    case CEL_K_MAP: {
        const struct cel_map *m = cel_map_generic(ev, v->map);
        if (!m)
            return false;
        struct entry *e = cel_arena_alloc(ev->arena, sizeof(*e) * (m->n ? m->n : 1));
        if (!e)
            return false;
        for (size_t i = 0; i < m->n; i++) {
            struct sbuf kb = {.arena = ev->arena};
            if (!fmt_string(ev, &m->keys[i], &kb, depth + 1) || kb.failed)
                return false;
            e[i] = (struct entry){kb.p ? kb.p : (char *)"", kb.n, &m->vals[i]};
        }
        qsort(e, m->n, sizeof(*e), entry_cmp);
        sb_str(b, "{");
        for (size_t i = 0; i < m->n; i++) {
            if (i)
                sb_str(b, ", ");
            sb_put(b, e[i].key, e[i].key_len);
            sb_str(b, ": ");
            if (!fmt_string(ev, e[i].val, b, depth + 1))
                return false;
        }
        sb_str(b, "}");
        return true;
    }
    default:
        return false;
    }
    sb_str(b, tmp);
    return true;
}

static void put_radix(struct sbuf *b, uint64_t u, unsigned radix, bool upper)
{
    char tmp[72];
    size_t o = sizeof(tmp);
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
        tmp[--o] = digits[u % radix];
        u /= radix;
    } while (u);
    sb_put(b, tmp + o, sizeof(tmp) - o);
}

/* Returns NULL on success, else the error message. */
static const char *fmt_clause(struct cel_eval *ev, char verb, int prec, const struct cel_value *v,
                              struct sbuf *b)
{
    char tmp[400];
    switch (verb) {
    case 's':
        return fmt_string(ev, v, b, 0) ? NULL : "string clause cannot format this value";
    case 'd':
        if (v->kind == CEL_K_INT)
            snprintf(tmp, sizeof(tmp), "%lld", (long long)v->i);
        else if (v->kind == CEL_K_UINT)
            snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v->u);
        else if (v->kind == CEL_K_DOUBLE && special_double(v->d, b))
            return NULL;
        else
            return "decimal clause can only be used on integers";
        sb_str(b, tmp);
        return NULL;
    case 'f':
    case 'e': {
        double d;
        if (v->kind == CEL_K_DOUBLE)
            d = v->d;
        else if (v->kind == CEL_K_INT)
            d = (double)v->i;
        else if (v->kind == CEL_K_UINT)
            d = (double)v->u;
        else
            return verb == 'f' ? "fixed-point clause can only be used on numbers"
                               : "scientific clause can only be used on numbers";
        if (special_double(d, b))
            return NULL;
        snprintf(tmp, sizeof(tmp), verb == 'f' ? "%.*f" : "%.*e", prec < 0 ? 6 : prec, d);
        sb_str(b, tmp);
        return NULL;
    }
    case 'x':
    case 'X':
    case 'o':
    case 'b': {
        unsigned radix = verb == 'o' ? 8 : verb == 'b' ? 2 : 16;
        bool upper = verb == 'X';
        if (v->kind == CEL_K_INT) {
            if (v->i < 0)
                sb_str(b, "-");
            put_radix(b, v->i < 0 ? (uint64_t)0 - (uint64_t)v->i : (uint64_t)v->i, radix, upper);
        } else if (v->kind == CEL_K_UINT) {
            put_radix(b, v->u, radix, upper);
        } else if (v->kind == CEL_K_BOOL && verb == 'b') {
            sb_str(b, v->b ? "1" : "0");
        } else if ((v->kind == CEL_K_STRING || v->kind == CEL_K_BYTES) && radix == 16) {
            for (uint32_t i = 0; i < v->len; i++) {
                snprintf(tmp, sizeof(tmp), upper ? "%02X" : "%02x", (unsigned char)v->s[i]);
                sb_str(b, tmp);
            }
        } else {
            return "integer clause cannot format this value";
        }
        return NULL;
    }
    default:
        return "unrecognized formatting clause";
    }
}

struct cel_value cel_string_format(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING || a[1].kind != CEL_K_LIST)
        return cel_no_overload(ev, call, a, n);
    const char *f = a[0].s;
    size_t len = a[0].len, argi = 0;
    const struct cel_list *args = a[1].list;
    struct sbuf b = {.arena = ev->arena};
    if (!cel_cost(ev, len / 10 + args->n + 1))
        return cel_oom(ev);
    for (size_t i = 0; i < len; i++) {
        if (f[i] != '%') {
            sb_put(&b, f + i, 1);
            continue;
        }
        if (++i >= len)
            return cel_error(ev, call,
                             "could not parse formatting clause: unexpected end of "
                             "format string");
        if (f[i] == '%') {
            sb_str(&b, "%");
            continue;
        }
        int prec = -1;
        if (f[i] == '.') {
            prec = 0;
            while (++i < len && f[i] >= '0' && f[i] <= '9' && prec < 100)
                prec = prec * 10 + (f[i] - '0');
            if (i >= len)
                return cel_error(ev, call, "could not parse formatting clause: missing verb");
        }
        if (argi >= args->n)
            return cel_error(ev, call, "index %zu out of range", argi);
        const char *msg = fmt_clause(ev, f[i], prec, &args->items[argi++], &b);
        if (msg)
            return cel_error(ev, call, "error during formatting: %s (%%%c with %s)", msg, f[i],
                             cel_kind_name(args->items[argi - 1].kind));
    }
    if (b.failed)
        return cel_error(ev, call, "format: result too long or out of memory");
    return cel_str(b.p ? b.p : "", b.n);
}
