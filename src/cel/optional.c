/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional values (cel-go's OptionalTypes, enabled in Kubernetes): optional.of,
 * optional.ofNonZeroValue, optional.none, hasValue(), value(), orValue(), or(). The syntax forms
 * a.?b, a[?k], [?x] and {?k: v} are handled by the parser and the evaluator.
 */
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)

static struct cel_value some(struct cel_eval *ev, const struct cel_value *v)
{
    struct cel_value *b = cel_arena_alloc(ev->arena, sizeof(*b));
    if (!b)
        return cel_oom(ev);
    *b = *v;
    return cel_optional(b);
}

static bool is_zero(struct cel_eval *ev, const struct cel_value *v)
{
    switch (v->kind) {
    case CEL_K_NULL:
        return true;
    case CEL_K_BOOL:
        return !v->b;
    case CEL_K_INT:
        return v->i == 0;
    case CEL_K_UINT:
        return v->u == 0;
    case CEL_K_DOUBLE:
        return v->d == 0;
    case CEL_K_STRING:
    case CEL_K_BYTES:
        return v->len == 0;
    case CEL_K_LIST:
        return v->list->n == 0;
    case CEL_K_MAP:
        return cel_map_size(ev, v->map) == 0;
    case CEL_K_QUANTITY:
        return gs_quantity_is_zero(&v->q);
    default:
        return false;
    }
}

static struct cel_value fn_of(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                              uint32_t n)
{
    if (!strcmp(call->name, "optional.ofNonZeroValue") && is_zero(ev, &a[0]))
        return cel_optional(NULL);
    return some(ev, &a[0]);
}

static struct cel_value fn_none(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    return cel_optional(NULL);
}

static struct cel_value fn_has_value(struct cel_eval *ev, const struct cel_node *call,
                                     struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_OPTIONAL)
        return NO_OVERLOAD();
    return cel_bool(a[0].opt != NULL);
}

static struct cel_value fn_value(struct cel_eval *ev, const struct cel_node *call,
                                 struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_OPTIONAL)
        return NO_OVERLOAD();
    if (!a[0].opt)
        return cel_error(ev, call, "optional.none() dereference");
    return *a[0].opt;
}

static struct cel_value fn_or_value(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_OPTIONAL)
        return NO_OVERLOAD();
    return a[0].opt ? *a[0].opt : a[1];
}

static struct cel_value fn_or(struct cel_eval *ev, const struct cel_node *call, struct cel_value *a,
                              uint32_t n)
{
    if (a[0].kind != CEL_K_OPTIONAL || a[1].kind != CEL_K_OPTIONAL)
        return NO_OVERLOAD();
    return a[0].opt ? a[0] : a[1];
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
const struct cel_func cel_optional_funcs[] = {
    {"optional.of", false, 1, fn_of, OV("A:optional(A)"), true},
    {"optional.ofNonZeroValue", false, 1, fn_of, OV("A:optional(A)"), true},
    {"optional.none", false, 0, fn_none, OV(":optional(dyn)"), true},
    {"hasValue", true, 1, fn_has_value, OV("optional(A):bool"), true},
    {"value", true, 1, fn_value, OV("optional(A):A"), true},
    {"orValue", true, 2, fn_or_value, OV("optional(A),A:A"), true},
    {"or", true, 2, fn_or, OV("optional(A),optional(A):optional(A)"), true},
};
const size_t cel_optional_funcs_count = GS_ARRAY_SIZE(cel_optional_funcs);
