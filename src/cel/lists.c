/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes list and regex libraries (k8s.io/apiserver/pkg/cel/library lists.go, regex.go) and
 * cel-go's sets extension: isSorted, sum, min, max, indexOf/lastIndexOf on lists, find, findAll,
 * sets.contains, sets.equivalent, sets.intersects; strings.quote and reverse.
 */
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)

static bool orderable(int kind)
{
    return kind == CEL_K_INT || kind == CEL_K_UINT || kind == CEL_K_DOUBLE ||
           kind == CEL_K_STRING || kind == CEL_K_BYTES || kind == CEL_K_BOOL;
}

static struct cel_value fn_is_sorted(struct cel_eval *ev, const struct cel_node *call,
                                     struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_LIST)
        return NO_OVERLOAD();
    const struct cel_list *l = a[0].list;
    if (!cel_cost(ev, l->n / 10 + 1))
        return cel_oom(ev);
    for (size_t i = 1; i < l->n; i++) {
        int c;
        if (!orderable(l->items[i].kind) ||
            cel_value_compare(&l->items[i - 1], &l->items[i], &c) == -EINVAL)
            return cel_error(ev, call, "isSorted: elements %zu and %zu cannot be compared", i - 1,
                             i);
        if (c > 0)
            return cel_bool(false);
    }
    return cel_bool(true);
}

static struct cel_value fn_sum(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_LIST)
        return NO_OVERLOAD();
    const struct cel_list *l = a[0].list;
    if (!l->n)
        return cel_int(0);
    int kind = l->items[0].kind;
    struct cel_value acc = l->items[0];
    if (kind != CEL_K_INT && kind != CEL_K_UINT && kind != CEL_K_DOUBLE)
        return cel_error(ev, call, "sum: list of %s cannot be summed", cel_kind_name(kind));
    for (size_t i = 1; i < l->n; i++) {
        const struct cel_value *x = &l->items[i];
        if (x->kind != kind)
            return cel_error(ev, call, "sum: mixed element types %s and %s", cel_kind_name(kind),
                             cel_kind_name(x->kind));
        if (kind == CEL_K_INT && __builtin_add_overflow(acc.i, x->i, &acc.i))
            return cel_error(ev, call, "integer overflow");
        if (kind == CEL_K_UINT && __builtin_add_overflow(acc.u, x->u, &acc.u))
            return cel_error(ev, call, "integer overflow");
        if (kind == CEL_K_DOUBLE)
            acc.d += x->d;
    }
    return acc;
}

static struct cel_value fn_min_max(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_LIST)
        return NO_OVERLOAD();
    const struct cel_list *l = a[0].list;
    bool want_max = call->name[1] == 'a';
    if (!l->n)
        return cel_error(ev, call, "%s called on empty list", want_max ? "max" : "min");
    struct cel_value best = l->items[0];
    for (size_t i = 1; i < l->n; i++) {
        int c;
        if (!orderable(l->items[i].kind) || cel_value_compare(&l->items[i], &best, &c) == -EINVAL)
            return cel_error(ev, call, "%s: elements cannot be compared", call->name);
        if ((want_max && c > 0) || (!want_max && c < 0))
            best = l->items[i];
    }
    return best;
}

/* indexOf / lastIndexOf on a list (strings.c forwards here for list receivers) */
struct cel_value cel_list_index_of(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_LIST || n != 2)
        return NO_OVERLOAD();
    const struct cel_list *l = a[0].list;
    if (!cel_cost(ev, l->n / 10 + 1))
        return cel_oom(ev);
    bool last = call->name[0] == 'l';
    for (size_t k = 0; k < l->n; k++) {
        size_t i = last ? l->n - 1 - k : k;
        if (cel_value_equal(&l->items[i], &a[1]))
            return cel_int((int64_t)i);
    }
    return cel_int(-1);
}

static struct cel_value fn_find(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING || a[1].kind != CEL_K_STRING ||
        (n == 3 && a[2].kind != CEL_K_INT))
        return NO_OVERLOAD();
    if (!cel_cost(ev, a[0].len + 1))
        return cel_oom(ev);
    const void *re;
    struct cel_value rerr = cel_regex_for_call(ev, call, &a[1], &re);
    if (rerr.kind != CEL_K_NULL)
        return rerr;
    bool all = call->name[4] == 'A'; /* findAll */
    int64_t limit = n == 3 ? a[2].i : -1;
    size_t cap = all ? 8 : 1, cnt = 0, off = 0;
    struct cel_value *items = cel_arena_alloc(ev->arena, sizeof(*items) * cap);
    if (!items)
        return cel_oom(ev);
    while (off <= a[0].len && (limit < 0 || (int64_t)cnt < limit)) {
        size_t mb, me;
        int r = cel_regex_find(re, a[0].s, a[0].len, off, &mb, &me, ev->arena);
        if (r < 0)
            return cel_error(ev, call, "regular expression match failed");
        if (r == 0)
            break;
        if (!all)
            return cel_str(a[0].s + mb, me - mb);
        if (cnt == cap) {
            struct cel_value *ni = cel_arena_alloc(ev->arena, sizeof(*ni) * cap * 2);
            if (!ni)
                return cel_oom(ev);
            memcpy(ni, items, sizeof(*ni) * cnt);
            items = ni;
            cap *= 2;
        }
        items[cnt++] = cel_str(a[0].s + mb, me - mb);
        off = me > mb ? me : me + 1;
    }
    if (!all)
        return cel_str("", 0);
    struct cel_list *l = cel_arena_alloc(ev->arena, sizeof(*l));
    if (!l)
        return cel_oom(ev);
    l->n = cnt;
    l->items = items;
    return (struct cel_value){.kind = CEL_K_LIST, .list = l};
}

static bool list_has(const struct cel_list *l, const struct cel_value *v)
{
    for (size_t i = 0; i < l->n; i++)
        if (cel_value_equal(&l->items[i], v))
            return true;
    return false;
}

static bool contains_all(const struct cel_list *a, const struct cel_list *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (!list_has(a, &b->items[i]))
            return false;
    return true;
}

static struct cel_value fn_sets(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_LIST || a[1].kind != CEL_K_LIST)
        return NO_OVERLOAD();
    const struct cel_list *x = a[0].list, *y = a[1].list;
    if (!cel_cost(ev, (x->n * y->n) / 10 + 1))
        return cel_oom(ev);
    switch (call->name[5]) { /* "sets.contains", "sets.equivalent", "sets.intersects" */
    case 'c':
        return cel_bool(contains_all(x, y));
    case 'e':
        return cel_bool(contains_all(x, y) && contains_all(y, x));
    default:
        for (size_t i = 0; i < y->n; i++)
            if (list_has(x, &y->items[i]))
                return cel_bool(true);
        return cel_bool(false);
    }
}

static struct cel_value fn_reverse(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    char *out = cel_arena_alloc(ev->arena, a[0].len + 1);
    if (!out)
        return cel_oom(ev);
    const unsigned char *s = (const unsigned char *)a[0].s;
    size_t len = a[0].len, o = len;
    for (size_t i = 0; i < len;) {
        size_t l = s[i] < 0x80 ? 1 : (s[i] & 0xE0) == 0xC0 ? 2 : (s[i] & 0xF0) == 0xE0 ? 3 : 4;
        if (i + l > len)
            l = len - i;
        o -= l;
        memcpy(out + o, s + i, l);
        i += l;
    }
    return cel_str(out, len);
}

static struct cel_value fn_quote(struct cel_eval *ev, const struct cel_node *call,
                                 struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    size_t cap = (size_t)a[0].len * 2 + 3;
    char *out = cel_arena_alloc(ev->arena, cap);
    if (!out)
        return cel_oom(ev);
    size_t o = 0;
    out[o++] = '"';
    for (uint32_t i = 0; i < a[0].len; i++) {
        char c = a[0].s[i], e = 0;
        switch (c) {
        case '\a':
            e = 'a';
            break;
        case '\b':
            e = 'b';
            break;
        case '\f':
            e = 'f';
            break;
        case '\n':
            e = 'n';
            break;
        case '\r':
            e = 'r';
            break;
        case '\t':
            e = 't';
            break;
        case '\v':
            e = 'v';
            break;
        case '\\':
            e = '\\';
            break;
        case '"':
            e = '"';
            break;
        default:
            break;
        }
        if (e) {
            out[o++] = '\\';
            out[o++] = e;
        } else {
            out[o++] = c;
        }
    }
    out[o++] = '"';
    return cel_str(out, o);
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
const struct cel_func cel_list_funcs[] = {
    {"isSorted", true, 1, fn_is_sorted, OV("list(A):bool"), true},
    {"sum", true, 1, fn_sum, OV("list(int):int", "list(uint):uint", "list(double):double"), true},
    {"min", true, 1, fn_min_max, OV("list(A):A"), true},
    {"max", true, 1, fn_min_max, OV("list(A):A"), true},
    {"find", true, 2, fn_find, OV("string,string:string"), true},
    {"findAll", true, 2, fn_find, OV("string,string:list(string)"), true},
    {"findAll", true, 3, fn_find, OV("string,string,int:list(string)"), true},
    {"sets.contains", false, 2, fn_sets, OV("list(A),list(A):bool"), true},
    {"sets.equivalent", false, 2, fn_sets, OV("list(A),list(A):bool"), true},
    {"sets.intersects", false, 2, fn_sets, OV("list(A),list(A):bool"), true},
    {"reverse", true, 1, fn_reverse, OV("string:string"), true},
    {"strings.quote", false, 1, fn_quote, OV("string:string"), true},
    {"format", true, 2, cel_string_format, OV("string,list(A):string"), true},
};
const size_t cel_list_funcs_count = GS_ARRAY_SIZE(cel_list_funcs);
