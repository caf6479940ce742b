/* SPDX-License-Identifier: Apache-2.0 */
/* CEL standard functions: operators, size, conversions, type(), dyn(); and the function table. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)

static struct cel_value overflow(struct cel_eval *ev, const struct cel_node *call)
{
    return cel_error(ev, call, "integer overflow");
}

static struct cel_value concat(struct cel_eval *ev, const struct cel_node *call,
                               const struct cel_value *x, const struct cel_value *y)
{
    if (x->kind == CEL_K_LIST) {
        size_t total = x->list->n + y->list->n;
        if (!cel_cost(ev, total / 10 + 1))
            return cel_oom(ev);
        if (!y->list->n)
            return *x;
        if (!x->list->n)
            return *y;
        struct cel_list *l = cel_arena_alloc(ev->arena, sizeof(*l));
        struct cel_value *items = cel_arena_alloc(ev->arena, sizeof(*items) * total);
        if (!l || !items)
            return cel_oom(ev);
        memcpy(items, x->list->items, sizeof(*items) * x->list->n);
        memcpy(items + x->list->n, y->list->items, sizeof(*items) * y->list->n);
        l->n = total;
        l->items = items;
        return (struct cel_value){.kind = CEL_K_LIST, .list = l};
    }
    size_t total = (size_t)x->len + y->len;
    if (total > UINT32_MAX)
        return cel_error(ev, call, "string too long");
    if (!cel_cost(ev, total / 10 + 1))
        return cel_oom(ev);
    char *s = cel_arena_alloc(ev->arena, total + 1);
    if (!s)
        return cel_oom(ev);
    if (x->len)
        memcpy(s, x->s, x->len);
    if (y->len)
        memcpy(s + x->len, y->s, y->len);
    struct cel_value r = *x;
    r.s = s;
    r.len = (uint32_t)total;
    return r;
}

static bool is_time(const struct cel_value *v)
{
    return v->kind == CEL_K_TIMESTAMP || v->kind == CEL_K_DURATION;
}

static struct cel_value fn_add(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (is_time(&a[0]) || is_time(&a[1]))
        return cel_time_arith(ev, call, &a[0], &a[1], false);
    if (a[0].kind != a[1].kind)
        return NO_OVERLOAD();
    switch (a[0].kind) {
    case CEL_K_INT: {
        int64_t r;
        if (__builtin_add_overflow(a[0].i, a[1].i, &r))
            return overflow(ev, call);
        return cel_int(r);
    }
    case CEL_K_UINT: {
        uint64_t r;
        if (__builtin_add_overflow(a[0].u, a[1].u, &r))
            return overflow(ev, call);
        return cel_uint(r);
    }
    case CEL_K_DOUBLE:
        return cel_double(a[0].d + a[1].d);
    case CEL_K_STRING:
    case CEL_K_BYTES:
    case CEL_K_LIST:
        return concat(ev, call, &a[0], &a[1]);
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_sub(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (is_time(&a[0]) || is_time(&a[1]))
        return cel_time_arith(ev, call, &a[0], &a[1], true);
    if (a[0].kind != a[1].kind)
        return NO_OVERLOAD();
    switch (a[0].kind) {
    case CEL_K_INT: {
        int64_t r;
        if (__builtin_sub_overflow(a[0].i, a[1].i, &r))
            return overflow(ev, call);
        return cel_int(r);
    }
    case CEL_K_UINT: {
        uint64_t r;
        if (__builtin_sub_overflow(a[0].u, a[1].u, &r))
            return overflow(ev, call);
        return cel_uint(r);
    }
    case CEL_K_DOUBLE:
        return cel_double(a[0].d - a[1].d);
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_mul(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (a[0].kind != a[1].kind)
        return NO_OVERLOAD();
    switch (a[0].kind) {
    case CEL_K_INT: {
        int64_t r;
        if (__builtin_mul_overflow(a[0].i, a[1].i, &r))
            return overflow(ev, call);
        return cel_int(r);
    }
    case CEL_K_UINT: {
        uint64_t r;
        if (__builtin_mul_overflow(a[0].u, a[1].u, &r))
            return overflow(ev, call);
        return cel_uint(r);
    }
    case CEL_K_DOUBLE:
        return cel_double(a[0].d * a[1].d);
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_div(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (a[0].kind != a[1].kind)
        return NO_OVERLOAD();
    switch (a[0].kind) {
    case CEL_K_INT:
        if (a[1].i == 0)
            return cel_error(ev, call, "divide by zero");
        if (a[0].i == INT64_MIN && a[1].i == -1)
            return overflow(ev, call);
        return cel_int(a[0].i / a[1].i);
    case CEL_K_UINT:
        if (a[1].u == 0)
            return cel_error(ev, call, "divide by zero");
        return cel_uint(a[0].u / a[1].u);
    case CEL_K_DOUBLE:
        return cel_double(a[0].d / a[1].d);
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_mod(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (a[0].kind != a[1].kind)
        return NO_OVERLOAD();
    switch (a[0].kind) {
    case CEL_K_INT:
        if (a[1].i == 0)
            return cel_error(ev, call, "modulus by zero");
        if (a[0].i == INT64_MIN && a[1].i == -1)
            return overflow(ev, call);
        return cel_int(a[0].i % a[1].i);
    case CEL_K_UINT:
        if (a[1].u == 0)
            return cel_error(ev, call, "modulus by zero");
        return cel_uint(a[0].u % a[1].u);
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_neg(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    if (a[0].kind == CEL_K_INT) {
        if (a[0].i == INT64_MIN)
            return overflow(ev, call);
        return cel_int(-a[0].i);
    }
    if (a[0].kind == CEL_K_DOUBLE)
        return cel_double(-a[0].d);
    return NO_OVERLOAD();
}

static struct cel_value fn_eq(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                              uint32_t n)
{
    if ((a[0].kind == CEL_K_LIST || a[0].kind == CEL_K_MAP) && !cel_cost(ev, 1))
        return cel_oom(ev);
    if (a[0].kind == CEL_K_MAP && a[1].kind == CEL_K_MAP) {
        const struct cel_map *x = cel_map_generic(ev, a[0].map), *y = cel_map_generic(ev, a[1].map);
        if (!x || !y)
            return cel_oom(ev);
        struct cel_value gx = {.kind = CEL_K_MAP, .map = x}, gy = {.kind = CEL_K_MAP, .map = y};
        bool eq = cel_value_equal(&gx, &gy);
        return cel_bool(call->name[1] == '=' ? eq : !eq);
    }
    bool eq = cel_value_equal(&a[0], &a[1]);
    return cel_bool(call->name[1] == '=' ? eq : !eq); /* "_==_" vs "_!=_" */
}

static struct cel_value compare(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n, int *cmp, bool *nan)
{
    int r = cel_value_compare(&a[0], &a[1], cmp);
    *nan = r == -EDOM;
    if (r == -EINVAL)
        return NO_OVERLOAD();
    return cel_null();
}

#define CMP_FN(fname, expr)                                                                        \
    static struct cel_value fname(struct cel_eval *ev, const struct cel_node *call,                \
                                  struct cel_value *a, uint32_t n)                                 \
    {                                                                                              \
        int c = 0;                                                                                 \
        bool nan;                                                                                  \
        struct cel_value e = compare(ev, call, a, n, &c, &nan);                                    \
        if (e.kind == CEL_K_ERROR)                                                                 \
            return e;                                                                              \
        return cel_bool(!nan && (expr));                                                           \
    }
CMP_FN(fn_lt, c < 0)
CMP_FN(fn_le, c <= 0)
CMP_FN(fn_gt, c > 0)
CMP_FN(fn_ge, c >= 0)

static struct cel_value fn_in(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                              uint32_t n)
{
    if (a[1].kind == CEL_K_LIST) {
        const struct cel_list *l = a[1].list;
        if (!cel_cost(ev, l->n / 10 + 1))
            return cel_oom(ev);
        for (size_t i = 0; i < l->n; i++)
            if (cel_value_equal(&a[0], &l->items[i]))
                return cel_bool(true);
        return cel_bool(false);
    }
    if (a[1].kind == CEL_K_MAP) {
        switch (a[0].kind) {
        case CEL_K_INT:
        case CEL_K_UINT:
        case CEL_K_BOOL:
        case CEL_K_STRING:
        case CEL_K_DOUBLE:
            break;
        default:
            return cel_bool(false);
        }
        struct cel_value v;
        int r = cel_map_get(ev, a[1].map, &a[0], &v);
        if (r < 0)
            return v;
        return cel_bool(r == 1);
    }
    return NO_OVERLOAD();
}

static struct cel_value fn_size(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    switch (a[0].kind) {
    case CEL_K_STRING:
        return cel_int(cel_utf8_len(a[0].s, a[0].len));
    case CEL_K_BYTES:
        return cel_int(a[0].len);
    case CEL_K_LIST:
        return cel_int((int64_t)a[0].list->n);
    case CEL_K_MAP: {
        const struct cel_map *g = cel_map_generic(ev, a[0].map);
        if (!g)
            return cel_oom(ev);
        return cel_int((int64_t)g->n);
    }
    default:
        return NO_OVERLOAD();
    }
}

/* ---- conversions ---- */

static bool str_to_cbuf(const struct cel_value *v, char *buf, size_t len)
{
    if (v->len >= len)
        return false;
    memcpy(buf, v->s, v->len);
    buf[v->len] = '\0';
    return strlen(buf) == v->len;
}

static struct cel_value fn_int(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    switch (a[0].kind) {
    case CEL_K_INT:
        return a[0];
    case CEL_K_UINT:
        if (a[0].u > INT64_MAX)
            return cel_error(ev, call, "range error: %llu does not fit int",
                             (unsigned long long)a[0].u);
        return cel_int((int64_t)a[0].u);
    case CEL_K_DOUBLE: {
        double d = a[0].d;
        if (isnan(d) || d <= -9223372036854775808.0 || d >= 9223372036854775808.0)
            return cel_error(ev, call, "range error: double %g does not fit int", d);
        return cel_int((int64_t)d);
    }
    case CEL_K_STRING: {
        char buf[32], *end;
        if (!str_to_cbuf(&a[0], buf, sizeof(buf)) || !buf[0] || isspace((unsigned char)buf[0]))
            return cel_error(ev, call, "cannot convert string '%.*s' to int",
                             (int)GS_MIN(a[0].len, 64u), a[0].s);
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (*end || errno)
            return cel_error(ev, call, "cannot convert string '%s' to int", buf);
        return cel_int(v);
    }
    case CEL_K_TIMESTAMP:
        return cel_int(a[0].t.sec);
    case CEL_K_QUANTITY: {
        int64_t v;
        if (gs_quantity_to_int64_exact(&a[0].q, &v) < 0)
            return cel_error(ev, call, "quantity is not an exact integer");
        return cel_int(v);
    }
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_uint(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    switch (a[0].kind) {
    case CEL_K_UINT:
        return a[0];
    case CEL_K_INT:
        if (a[0].i < 0)
            return cel_error(ev, call, "range error: %lld does not fit uint", (long long)a[0].i);
        return cel_uint((uint64_t)a[0].i);
    case CEL_K_DOUBLE: {
        double d = a[0].d;
        if (isnan(d) || d < 0 || d >= 18446744073709551616.0)
            return cel_error(ev, call, "range error: double %g does not fit uint", d);
        return cel_uint((uint64_t)d);
    }
    case CEL_K_STRING: {
        char buf[32], *end;
        if (!str_to_cbuf(&a[0], buf, sizeof(buf)) || !isdigit((unsigned char)buf[0]))
            return cel_error(ev, call, "cannot convert string '%.*s' to uint",
                             (int)GS_MIN(a[0].len, 64u), a[0].s);
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (*end || errno)
            return cel_error(ev, call, "cannot convert string '%s' to uint", buf);
        return cel_uint(v);
    }
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_double(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n)
{
    switch (a[0].kind) {
    case CEL_K_DOUBLE:
        return a[0];
    case CEL_K_INT:
        return cel_double((double)a[0].i);
    case CEL_K_UINT:
        return cel_double((double)a[0].u);
    case CEL_K_STRING: {
        char buf[128], *end;
        if (!str_to_cbuf(&a[0], buf, sizeof(buf)) || !buf[0] || isspace((unsigned char)buf[0]))
            return cel_error(ev, call, "cannot convert string '%.*s' to double",
                             (int)GS_MIN(a[0].len, 64u), a[0].s);
        double d = strtod(buf, &end);
        if (*end)
            return cel_error(ev, call, "cannot convert string '%s' to double", buf);
        return cel_double(d);
    }
    default:
        return NO_OVERLOAD();
    }
}

static struct cel_value fn_string(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n)
{
    char buf[64];
    switch (a[0].kind) {
    case CEL_K_STRING:
        return a[0];
    case CEL_K_BYTES:
        if (!cel_utf8_valid(a[0].s, a[0].len))
            return cel_error(ev, call, "invalid UTF-8 in bytes, cannot convert to string");
        return cel_str(a[0].s, a[0].len);
    case CEL_K_INT:
        snprintf(buf, sizeof(buf), "%lld", (long long)a[0].i);
        break;
    case CEL_K_UINT:
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)a[0].u);
        break;
    case CEL_K_DOUBLE:
        cel_format_double(a[0].d, buf, sizeof(buf));
        break;
    case CEL_K_BOOL:
        snprintf(buf, sizeof(buf), "%s", a[0].b ? "true" : "false");
        break;
    case CEL_K_QUANTITY:
        if (gs_quantity_format(&a[0].q, buf, sizeof(buf)) < 0)
            return cel_error(ev, call, "cannot format quantity");
        break;
    case CEL_K_IP:
    case CEL_K_CIDR:
        cel_net_format(a[0].net, buf, sizeof(buf));
        break;
    case CEL_K_TIMESTAMP:
    case CEL_K_DURATION:
        cel_time_format(&a[0], buf, sizeof(buf));
        break;
    case CEL_K_SEMVER: {
        const struct cel_semver *v = a[0].semver;
        snprintf(buf, sizeof(buf), "%llu.%llu.%llu%s%.*s", (unsigned long long)v->major,
                 (unsigned long long)v->minor, (unsigned long long)v->patch, v->pre_len ? "-" : "",
                 (int)v->pre_len, v->pre);
        break;
    }
    default:
        return NO_OVERLOAD();
    }
    size_t len = strlen(buf);
    char *s = cel_arena_strndup(ev->arena, buf, len);
    if (!s)
        return cel_oom(ev);
    return cel_str(s, len);
}

static struct cel_value fn_bytes(struct cel_eval *ev, const struct cel_node *call,
                                 struct cel_value *a, uint32_t n)
{
    if (a[0].kind == CEL_K_BYTES)
        return a[0];
    if (a[0].kind == CEL_K_STRING)
        return cel_bytes(a[0].s, a[0].len);
    return NO_OVERLOAD();
}

static struct cel_value fn_bool(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind == CEL_K_BOOL)
        return a[0];
    if (a[0].kind != CEL_K_STRING)
        return NO_OVERLOAD();
    static const char *const t[] = {"1", "t", "true", "TRUE", "True"};
    static const char *const f[] = {"0", "f", "false", "FALSE", "False"};
    for (size_t i = 0; i < GS_ARRAY_SIZE(t); i++) {
        if (a[0].len == strlen(t[i]) && !memcmp(a[0].s, t[i], a[0].len))
            return cel_bool(true);
        if (a[0].len == strlen(f[i]) && !memcmp(a[0].s, f[i], a[0].len))
            return cel_bool(false);
    }
    return cel_error(ev, call, "cannot convert string '%.*s' to bool", (int)GS_MIN(a[0].len, 64u),
                     a[0].s);
}

static struct cel_value fn_type(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    return cel_type_of_kind(a[0].kind);
}

static struct cel_value fn_dyn(struct cel_eval *ev, const struct cel_node *call,
                               struct cel_value *a, uint32_t n)
{
    return a[0];
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
static const char *const arith_ov[] = {"int,int:int", "uint,uint:uint", "double,double:double",
                                       NULL};
static const char *const cmp_ov[] = {"bool,bool:bool",
                                     "timestamp,timestamp:bool",
                                     "duration,duration:bool",
                                     "int,int:bool",
                                     "uint,uint:bool",
                                     "double,double:bool",
                                     "string,string:bool",
                                     "bytes,bytes:bool",
                                     "int,uint:bool",
                                     "int,double:bool",
                                     "uint,int:bool",
                                     "uint,double:bool",
                                     "double,int:bool",
                                     "double,uint:bool",
                                     NULL};

static const struct cel_func std_funcs[] = {
    {"_+_", false, 2, fn_add,
     OV("int,int:int", "uint,uint:uint", "double,double:double", "string,string:string",
        "bytes,bytes:bytes", "list(A),list(A):list(A)", "timestamp,duration:timestamp",
        "duration,timestamp:timestamp", "duration,duration:duration"),
     true},
    {"_-_", false, 2, fn_sub,
     OV("int,int:int", "uint,uint:uint", "double,double:double", "timestamp,timestamp:duration",
        "timestamp,duration:timestamp", "duration,duration:duration"),
     true},
    {"_*_", false, 2, fn_mul, arith_ov, true},
    {"_/_", false, 2, fn_div, arith_ov, true},
    {"_%_", false, 2, fn_mod, OV("int,int:int", "uint,uint:uint"), true},
    {"-_", false, 1, fn_neg, OV("int:int", "double:double"), true},
    {"_==_", false, 2, fn_eq, OV("A,A:bool"), true},
    {"_!=_", false, 2, fn_eq, OV("A,A:bool"), true},
    {"_<_", false, 2, fn_lt, cmp_ov, true},
    {"_<=_", false, 2, fn_le, cmp_ov, true},
    {"_>_", false, 2, fn_gt, cmp_ov, true},
    {"_>=_", false, 2, fn_ge, cmp_ov, true},
    {"@in", false, 2, fn_in, OV("A,list(B):bool", "A,map(B,C):bool"), true},
    {"size", false, 1, fn_size, OV("string:int", "bytes:int", "list(A):int", "map(A,B):int"), true},
    {"size", true, 1, fn_size, OV("string:int", "bytes:int", "list(A):int", "map(A,B):int"), true},
    {"int", false, 1, fn_int,
     OV("int:int", "uint:int", "double:int", "string:int", "timestamp:int"), true},
    {"uint", false, 1, fn_uint, OV("int:uint", "uint:uint", "double:uint", "string:uint"), true},
    {"double", false, 1, fn_double,
     OV("int:double", "uint:double", "double:double", "string:double"), true},
    {"string", false, 1, fn_string,
     OV("int:string", "uint:string", "double:string", "string:string", "bytes:string",
        "bool:string", "quantity:string", "semver:string", "ip:string", "cidr:string",
        "timestamp:string", "duration:string"),
     true},
    {"bytes", false, 1, fn_bytes, OV("string:bytes", "bytes:bytes"), true},
    {"bool", false, 1, fn_bool, OV("bool:bool", "string:bool"), true},
    {"type", false, 1, fn_type, OV("A:type"), true},
    {"dyn", false, 1, fn_dyn, OV("A:dyn"), true},
};

static const struct cel_func *lookup_in(const struct cel_func *t, size_t n, const char *name,
                                        size_t name_len, bool receiver, uint32_t nargs)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].receiver == receiver && (uint32_t)t[i].nargs == nargs &&
            strlen(t[i].name) == name_len && !memcmp(t[i].name, name, name_len))
            return &t[i];
    return NULL;
}

const struct cel_func *cel_func_lookup(const char *name, size_t name_len, bool receiver,
                                       uint32_t nargs)
{
    const struct cel_func *f =
        lookup_in(std_funcs, GS_ARRAY_SIZE(std_funcs), name, name_len, receiver, nargs);
    if (!f)
        f = lookup_in(cel_string_funcs, cel_string_funcs_count, name, name_len, receiver, nargs);
    if (!f)
        f = lookup_in(cel_k8s_funcs, cel_k8s_funcs_count, name, name_len, receiver, nargs);
    if (!f)
        f = lookup_in(cel_list_funcs, cel_list_funcs_count, name, name_len, receiver, nargs);
    if (!f)
        f = lookup_in(cel_optional_funcs, cel_optional_funcs_count, name, name_len, receiver,
                      nargs);
    if (!f)
        f = lookup_in(cel_net_funcs, cel_net_funcs_count, name, name_len, receiver, nargs);
    if (!f)
        f = lookup_in(cel_time_funcs, cel_time_funcs_count, name, name_len, receiver, nargs);
    return f;
}

static bool name_in(const struct cel_func *t, size_t n, const char *name, size_t name_len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(t[i].name) == name_len && !memcmp(t[i].name, name, name_len))
            return true;
    return false;
}

bool cel_func_name_known(const char *name, size_t name_len)
{
    return name_in(std_funcs, GS_ARRAY_SIZE(std_funcs), name, name_len) ||
           name_in(cel_string_funcs, cel_string_funcs_count, name, name_len) ||
           name_in(cel_k8s_funcs, cel_k8s_funcs_count, name, name_len) ||
           name_in(cel_list_funcs, cel_list_funcs_count, name, name_len) ||
           name_in(cel_optional_funcs, cel_optional_funcs_count, name, name_len) ||
           name_in(cel_net_funcs, cel_net_funcs_count, name, name_len) ||
           name_in(cel_time_funcs, cel_time_funcs_count, name, name_len);
}
