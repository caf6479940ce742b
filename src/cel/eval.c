/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tree-walking evaluator. Values are small structs passed by value; everything an evaluation
 * allocates lives in the caller's arena. Errors are values (CEL_K_ERROR) so that && / || can
 * absorb them as the spec says; exceeding the cost limit aborts the whole evaluation.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cel/cel-internal.h"

struct cel_value cel_oom(struct cel_eval *ev)
{
    ev->aborted = true;
    if (!ev->abort_msg)
        ev->abort_msg = "out of memory during evaluation";
    return (struct cel_value){.kind = CEL_K_ERROR, .err = {.msg = ev->abort_msg, .pos = -1}};
}

struct cel_value cel_error(struct cel_eval *ev, const struct cel_node *at, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    const char *msg = cel_arena_strndup(ev->arena, buf, strlen(buf));
    if (!msg)
        return cel_oom(ev);
    return (struct cel_value){.kind = CEL_K_ERROR, .err = {.msg = msg, .pos = at ? at->pos : -1}};
}

static const char *op_display(const char *name)
{
    /* "_+_" stays as cel-go prints it; receiver methods print their name */
    return name;
}

struct cel_value cel_no_overload(struct cel_eval *ev, const struct cel_node *call,
                                 const struct cel_value *args, uint32_t n)
{
    char sig[160];
    size_t o = 0;
    sig[0] = '\0';
    for (uint32_t i = 0; i < n && o < sizeof(sig) - 1; i++) {
        int w =
            snprintf(sig + o, sizeof(sig) - o, "%s%s", i ? ", " : "", cel_kind_name(args[i].kind));
        if (w < 0)
            break;
        o += (size_t)w;
        if (o >= sizeof(sig))
            o = sizeof(sig) - 1;
    }
    return cel_error(ev, call, "no matching overload for '%s' applied to '(%s)'",
                     op_display(call->name ? call->name : "?"), sig);
}

static struct cel_value aborted_value(struct cel_eval *ev)
{
    return (struct cel_value){.kind = CEL_K_ERROR, .err = {.msg = ev->abort_msg, .pos = -1}};
}

static struct cel_value box(struct cel_eval *ev, const struct cel_value *v)
{
    struct cel_value *b = cel_arena_alloc(ev->arena, sizeof(*b));
    if (!b)
        return cel_oom(ev);
    *b = *v;
    return cel_optional(b);
}

/* Operand of a select/index: an optional operand is unwrapped and makes the result optional
 * (a.?b.c: once a step is optional, the rest of the path is). Returns false with *out set
 * when the operand is an error or optional.none(). */
static bool operand(struct cel_eval *ev, const struct cel_node *n, struct cel_value *obj,
                    bool *wrap, struct cel_value *out)
{
    *obj = cel_eval_node(ev, n->a);
    *wrap = n->optional;
    if (obj->kind == CEL_K_ERROR) {
        *out = *obj;
        return false;
    }
    if (obj->kind == CEL_K_OPTIONAL) {
        if (!obj->opt) {
            *out = *obj;
            return false;
        }
        *obj = *obj->opt;
        *wrap = true;
    }
    return true;
}

static struct cel_value eval_select(struct cel_eval *ev, const struct cel_node *n)
{
    struct cel_value obj, out;
    bool wrap;
    if (!operand(ev, n, &obj, &wrap, &out))
        return n->test_only && out.kind == CEL_K_OPTIONAL ? cel_bool(false) : out;
    if (obj.kind == CEL_K_MAP) {
        struct cel_value key = cel_str(n->name, n->name_len), v;
        int r = cel_map_get(ev, obj.map, &key, &v);
        if (r < 0) {
            if (v.kind == CEL_K_ERROR && v.err.pos < 0)
                v.err.pos = n->pos;
            return v;
        }
        if (n->test_only)
            return cel_bool(r == 1);
        if (r == 0)
            return wrap ? cel_optional(NULL) : cel_error(ev, n, "no such key: %s", n->name);
        return wrap ? box(ev, &v) : v;
    }
    return cel_error(ev, n, "type '%s' does not support field selection", cel_kind_name(obj.kind));
}

/* Integral index from int, uint or integral double; false if not one. */
static bool to_index(const struct cel_value *v, int64_t *out)
{
    switch (v->kind) {
    case CEL_K_INT:
        *out = v->i;
        return true;
    case CEL_K_UINT:
        if (v->u > INT64_MAX)
            *out = INT64_MAX;
        else
            *out = (int64_t)v->u;
        return true;
    case CEL_K_DOUBLE:
        if (v->d != trunc(v->d) || !(v->d >= -9.2e18 && v->d <= 9.2e18))
            return false;
        *out = (int64_t)v->d;
        return true;
    default:
        return false;
    }
}

static struct cel_value eval_index(struct cel_eval *ev, const struct cel_node *n)
{
    struct cel_value obj, out;
    bool wrap;
    if (!operand(ev, n, &obj, &wrap, &out))
        return out;
    struct cel_value idx = cel_eval_node(ev, n->b);
    if (idx.kind == CEL_K_ERROR)
        return idx;
    if (obj.kind == CEL_K_LIST) {
        int64_t i;
        if (!to_index(&idx, &i)) {
            if (idx.kind == CEL_K_DOUBLE)
                return cel_error(ev, n, "invalid list index: %g", idx.d);
            return cel_error(ev, n, "no matching overload for '_[_]' applied to '(list, %s)'",
                             cel_kind_name(idx.kind));
        }
        if (i < 0 || (uint64_t)i >= obj.list->n)
            return wrap ? cel_optional(NULL)
                        : cel_error(ev, n, "index out of bounds: %lld", (long long)i);
        return wrap ? box(ev, &obj.list->items[i]) : obj.list->items[i];
    }
    if (obj.kind == CEL_K_MAP) {
        switch (idx.kind) {
        case CEL_K_INT:
        case CEL_K_UINT:
        case CEL_K_BOOL:
        case CEL_K_STRING:
        case CEL_K_DOUBLE:
            break;
        default:
            return cel_error(ev, n, "no such key");
        }
        struct cel_value v;
        int r = cel_map_get(ev, obj.map, &idx, &v);
        if (r < 0) {
            if (v.kind == CEL_K_ERROR && v.err.pos < 0)
                v.err.pos = n->pos;
            return v;
        }
        if (r == 0 && wrap)
            return cel_optional(NULL);
        if (r == 0) {
            if (idx.kind == CEL_K_STRING)
                return cel_error(ev, n, "no such key: %.*s", (int)GS_MIN(idx.len, 100u), idx.s);
            if (idx.kind == CEL_K_INT)
                return cel_error(ev, n, "no such key: %lld", (long long)idx.i);
            if (idx.kind == CEL_K_UINT)
                return cel_error(ev, n, "no such key: %llu", (unsigned long long)idx.u);
            return cel_error(ev, n, "no such key");
        }
        return wrap ? box(ev, &v) : v;
    }
    return cel_error(ev, n, "no matching overload for '_[_]' applied to '(%s, %s)'",
                     cel_kind_name(obj.kind), cel_kind_name(idx.kind));
}

static struct cel_value eval_logic(struct cel_eval *ev, const struct cel_node *n, bool is_and)
{
    /* && : false wins over errors; || : true wins over errors (commutative). */
    struct cel_value l = cel_eval_node(ev, n->a);
    if (ev->aborted)
        return aborted_value(ev);
    if (l.kind == CEL_K_BOOL && l.b != is_and)
        return l;
    struct cel_value r = cel_eval_node(ev, n->b);
    if (ev->aborted)
        return aborted_value(ev);
    if (r.kind == CEL_K_BOOL && r.b != is_and)
        return r;
    if (l.kind == CEL_K_BOOL && r.kind == CEL_K_BOOL)
        return l;
    if (l.kind == CEL_K_ERROR)
        return l;
    if (r.kind == CEL_K_ERROR)
        return r;
    struct cel_value args[2] = {l, r};
    struct cel_node fake = *n;
    fake.name = is_and ? "_&&_" : "_||_";
    return cel_no_overload(ev, &fake, args, 2);
}

static struct cel_value eval_list(struct cel_eval *ev, const struct cel_node *n)
{
    struct cel_list *l = cel_arena_alloc(ev->arena, sizeof(*l));
    struct cel_value *items =
        cel_arena_alloc(ev->arena, sizeof(*items) * (n->nargs ? n->nargs : 1));
    if (!l || !items)
        return cel_oom(ev);
    size_t cnt = 0;
    for (uint32_t i = 0; i < n->nargs; i++) {
        const struct cel_node *e = n->args[i];
        bool opt_entry = e->kind == CEL_N_OPT_ENTRY;
        struct cel_value v = cel_eval_node(ev, opt_entry ? e->a : e);
        if (v.kind == CEL_K_ERROR)
            return v;
        if (opt_entry) {
            if (v.kind != CEL_K_OPTIONAL)
                return cel_error(ev, e, "optional list element must be optional, got %s",
                                 cel_kind_name(v.kind));
            if (!v.opt)
                continue;
            v = *v.opt;
        }
        items[cnt++] = v;
    }
    l->n = cnt;
    l->items = items;
    return (struct cel_value){.kind = CEL_K_LIST, .list = l};
}

static struct cel_value eval_map(struct cel_eval *ev, const struct cel_node *n)
{
    struct cel_map *m = cel_arena_alloc(ev->arena, sizeof(*m));
    size_t cnt = n->nargs ? n->nargs : 1;
    struct cel_value *keys = cel_arena_alloc(ev->arena, sizeof(*keys) * cnt);
    struct cel_value *vals = cel_arena_alloc(ev->arena, sizeof(*vals) * cnt);
    if (!m || !keys || !vals)
        return cel_oom(ev);
    memset(m, 0, sizeof(*m));
    m->keys = keys;
    m->vals = vals;
    for (uint32_t i = 0; i < n->nargs; i++) {
        const struct cel_node *kn = n->args[2 * i];
        bool opt_entry = kn->kind == CEL_N_OPT_ENTRY;
        struct cel_value k = cel_eval_node(ev, opt_entry ? kn->a : kn);
        if (k.kind == CEL_K_ERROR)
            return k;
        struct cel_value v = cel_eval_node(ev, n->args[2 * i + 1]);
        if (v.kind == CEL_K_ERROR)
            return v;
        if (opt_entry) {
            if (v.kind != CEL_K_OPTIONAL)
                return cel_error(ev, kn, "optional map entry value must be optional, got %s",
                                 cel_kind_name(v.kind));
            if (!v.opt)
                continue;
            v = *v.opt;
        }
        if (k.kind != CEL_K_INT && k.kind != CEL_K_UINT && k.kind != CEL_K_BOOL &&
            k.kind != CEL_K_STRING)
            return cel_error(ev, n->args[2 * i], "unsupported key type: %s", cel_kind_name(k.kind));
        for (size_t j = 0; j < m->n; j++)
            if (cel_value_equal(&keys[j], &k))
                return cel_error(ev, n->args[2 * i], "Failed with repeated key");
        keys[m->n] = k;
        vals[m->n] = v;
        m->n++;
    }
    return (struct cel_value){.kind = CEL_K_MAP, .map = m};
}

/* Growable key/value arrays for comprehension results (arena-backed). */
struct accum {
    struct cel_value *keys, *vals;
    size_t n, cap;
};

static bool accum_push(struct cel_eval *ev, struct accum *a, const struct cel_value *k,
                       const struct cel_value *v)
{
    if (a->n == a->cap) {
        size_t ncap = a->cap ? a->cap * 2 : 8;
        struct cel_value *nk = cel_arena_alloc(ev->arena, sizeof(*nk) * ncap);
        struct cel_value *nv = cel_arena_alloc(ev->arena, sizeof(*nv) * ncap);
        if (!nk || !nv)
            return false;
        if (a->n) {
            memcpy(nk, a->keys, sizeof(*nk) * a->n);
            memcpy(nv, a->vals, sizeof(*nv) * a->n);
        }
        a->keys = nk;
        a->vals = nv;
        a->cap = ncap;
    }
    if (k)
        a->keys[a->n] = *k;
    a->vals[a->n++] = *v;
    return true;
}

static struct cel_value accum_list(struct cel_eval *ev, const struct accum *a)
{
    struct cel_list *l = cel_arena_alloc(ev->arena, sizeof(*l));
    if (!l)
        return cel_oom(ev);
    l->n = a->n;
    l->items = a->vals;
    return (struct cel_value){.kind = CEL_K_LIST, .list = l};
}

static struct cel_value accum_map(struct cel_eval *ev, const struct accum *a)
{
    struct cel_map *m = cel_arena_alloc(ev->arena, sizeof(*m));
    if (!m)
        return cel_oom(ev);
    memset(m, 0, sizeof(*m));
    m->n = a->n;
    m->keys = a->keys;
    m->vals = a->vals;
    return (struct cel_value){.kind = CEL_K_MAP, .map = m};
}

/* One step of a comprehension. Returns true to go on; false with *result set to stop. */
static bool comprehension_step(struct cel_eval *ev, const struct cel_node *n,
                               const struct cel_value *key, const struct cel_value *elem,
                               struct accum *acc, int64_t *ones, struct cel_value *first_err,
                               struct cel_value *result)
{
    struct cel_value v = cel_eval_node(ev, n->b);
    if (ev->aborted) {
        *result = aborted_value(ev);
        return false;
    }
    switch (n->macro) {
    case CEL_MACRO_ALL:
    case CEL_MACRO_EXISTS: {
        bool stop_on = n->macro == CEL_MACRO_EXISTS;
        if (v.kind == CEL_K_BOOL) {
            if (v.b == stop_on) {
                *result = cel_bool(stop_on);
                return false;
            }
        } else if (first_err->kind != CEL_K_ERROR) {
            *first_err = v.kind == CEL_K_ERROR ? v : cel_no_overload(ev, n->b, &v, 1);
        }
        return true;
    }
    case CEL_MACRO_EXISTS_ONE:
        if (v.kind != CEL_K_BOOL) {
            *result = v.kind == CEL_K_ERROR ? v : cel_no_overload(ev, n->b, &v, 1);
            return false;
        }
        *ones += v.b;
        return true;
    case CEL_MACRO_MAP:
        if (v.kind == CEL_K_ERROR) {
            *result = v;
            return false;
        }
        if (!accum_push(ev, acc, NULL, &v)) {
            *result = cel_oom(ev);
            return false;
        }
        return true;
    default:
        break;
    }
    /* filtered forms: b is the predicate when a transform c exists (or for filter) */
    bool has_filter = n->macro == CEL_MACRO_FILTER || n->c;
    struct cel_value out = v;
    if (has_filter) {
        if (v.kind != CEL_K_BOOL) {
            *result = v.kind == CEL_K_ERROR ? v : cel_no_overload(ev, n->b, &v, 1);
            return false;
        }
        if (!v.b)
            return true;
        if (n->macro == CEL_MACRO_FILTER) {
            out = *elem;
        } else {
            out = cel_eval_node(ev, n->c);
            if (ev->aborted) {
                *result = aborted_value(ev);
                return false;
            }
        }
    }
    if (out.kind == CEL_K_ERROR) {
        *result = out;
        return false;
    }
    if (n->macro == CEL_MACRO_TRANSFORM_MAP_ENTRY) {
        if (out.kind != CEL_K_MAP) {
            *result = cel_error(ev, n, "transformMapEntry() must produce a map, got %s",
                                cel_kind_name(out.kind));
            return false;
        }
        const struct cel_map *g = cel_map_generic(ev, out.map);
        if (!g) {
            *result = cel_oom(ev);
            return false;
        }
        for (size_t j = 0; j < g->n; j++) {
            for (size_t k = 0; k < acc->n; k++) {
                if (cel_value_equal(&acc->keys[k], &g->keys[j])) {
                    *result = cel_error(ev, n, "insert failed: key already exists");
                    return false;
                }
            }
            if (!accum_push(ev, acc, &g->keys[j], &g->vals[j])) {
                *result = cel_oom(ev);
                return false;
            }
        }
        return true;
    }
    bool with_key = n->macro == CEL_MACRO_TRANSFORM_MAP;
    if (!accum_push(ev, acc, with_key ? key : NULL, &out)) {
        *result = cel_oom(ev);
        return false;
    }
    return true;
}

static struct cel_value eval_comprehension(struct cel_eval *ev, const struct cel_node *n)
{
    struct cel_value range = cel_eval_node(ev, n->a);
    if (range.kind == CEL_K_ERROR)
        return range;
    const struct cel_value *items, *vals = NULL;
    size_t count;
    bool is_list = range.kind == CEL_K_LIST;
    if (is_list) {
        items = range.list->items;
        count = range.list->n;
    } else if (range.kind == CEL_K_MAP) {
        const struct cel_map *g = cel_map_generic(ev, range.map);
        if (!g)
            return cel_oom(ev);
        items = g->keys;
        vals = g->vals;
        count = g->n;
    } else {
        return cel_error(ev, n, "expression of type '%s' cannot be the range of a comprehension",
                         cel_kind_name(range.kind));
    }
    bool two = n->name2 != NULL;
    struct cel_value *slot = &ev->slots[n->index], *slot2 = two ? slot + 1 : NULL;
    struct cel_value saved = *slot, saved2 = two ? *slot2 : saved;
    struct cel_value first_err = {.kind = CEL_K_NULL}, result = {.kind = CEL_K_NULL};
    struct accum acc = {0};
    int64_t ones = 0;
    bool stopped = false;
    for (size_t i = 0; i < count && !stopped; i++) {
        struct cel_value key = is_list ? cel_int((int64_t)i) : items[i];
        struct cel_value elem = items[i];
        if (two) {
            *slot = key;
            *slot2 = is_list ? items[i] : vals[i];
            elem = *slot2;
        } else {
            *slot = items[i];
        }
        stopped = !comprehension_step(ev, n, &key, &elem, &acc, &ones, &first_err, &result);
    }
    *slot = saved;
    if (two)
        *slot2 = saved2;
    if (stopped)
        return result;
    switch (n->macro) {
    case CEL_MACRO_ALL:
    case CEL_MACRO_EXISTS:
        if (first_err.kind == CEL_K_ERROR)
            return first_err;
        return cel_bool(n->macro == CEL_MACRO_ALL);
    case CEL_MACRO_EXISTS_ONE:
        return cel_bool(ones == 1);
    case CEL_MACRO_TRANSFORM_MAP:
    case CEL_MACRO_TRANSFORM_MAP_ENTRY:
        return accum_map(ev, &acc);
    default:
        return accum_list(ev, &acc);
    }
}

static struct cel_value eval_call(struct cel_eval *ev, const struct cel_node *n)
{
    struct cel_value args[CEL_MAX_ARGS + 1];
    const struct cel_func *fn = n->fn;
    for (uint32_t i = 0; i < n->nargs; i++) {
        args[i] = cel_eval_node(ev, n->args[i]);
        if (ev->aborted)
            return aborted_value(ev);
        if (args[i].kind == CEL_K_ERROR && (!fn || fn->strict))
            return args[i];
    }
    if (!fn)
        return cel_error(ev, n, "no such overload: %s", n->name);
    return fn->impl(ev, n, args, n->nargs);
}

struct cel_value cel_eval_node(struct cel_eval *ev, const struct cel_node *n)
{
    if (!cel_cost(ev, 1))
        return aborted_value(ev);
    switch (n->kind) {
    case CEL_N_LITERAL:
    case CEL_N_TYPE_NAME:
        return n->lit;
    case CEL_N_IDENT:
        return ev->vars[n->index];
    case CEL_N_SLOT:
        return ev->slots[n->index];
    case CEL_N_SELECT:
        return eval_select(ev, n);
    case CEL_N_INDEX:
        return eval_index(ev, n);
    case CEL_N_CALL:
        return eval_call(ev, n);
    case CEL_N_AND:
        return eval_logic(ev, n, true);
    case CEL_N_OR:
        return eval_logic(ev, n, false);
    case CEL_N_NOT: {
        struct cel_value v = cel_eval_node(ev, n->a);
        if (v.kind == CEL_K_BOOL)
            return cel_bool(!v.b);
        if (v.kind == CEL_K_ERROR)
            return v;
        struct cel_node fake = *n;
        fake.name = "!_";
        return cel_no_overload(ev, &fake, &v, 1);
    }
    case CEL_N_COND: {
        struct cel_value c = cel_eval_node(ev, n->a);
        if (c.kind == CEL_K_BOOL)
            return cel_eval_node(ev, c.b ? n->b : n->c);
        if (c.kind == CEL_K_ERROR)
            return c;
        struct cel_node fake = *n;
        fake.name = "_?_:_";
        return cel_no_overload(ev, &fake, &c, 1);
    }
    case CEL_N_LIST:
        return eval_list(ev, n);
    case CEL_N_MAP:
        return eval_map(ev, n);
    case CEL_N_COMPREHENSION:
        return eval_comprehension(ev, n);
    case CEL_N_BIND: {
        struct cel_value *slot = &ev->slots[n->index];
        struct cel_value saved = *slot;
        *slot = cel_eval_node(ev, n->a);
        struct cel_value v = cel_eval_node(ev, n->b);
        *slot = saved;
        return v;
    }
    default:
        return cel_error(ev, n, "internal error: unknown node kind %d", n->kind);
    }
}

int cel_eval_program(const struct cel_program *p, const struct cel_value *vars,
                     struct cel_arena *arena, uint64_t cost_limit, struct cel_value *out,
                     struct gs_error *err)
{
    struct cel_eval ev;
    ev.prog = p;
    ev.vars = vars;
    ev.arena = arena;
    ev.cost = 0;
    ev.cost_limit = cost_limit;
    ev.aborted = false;
    ev.abort_msg = NULL;
    ev.nrx = 0;
    *out = cel_eval_node(&ev, p->root);
    if (ev.aborted)
        return gs_error_set(err, ev.abort_msg && strstr(ev.abort_msg, "cost") ? -E2BIG : -ENOMEM,
                            "%s", ev.abort_msg ? ev.abort_msg : "evaluation aborted");
    return 0;
}

int cel_error_report(const struct cel_program *p, const struct cel_value *e, struct gs_error *err)
{
    if (e->err.pos < 0)
        return gs_error_set(err, -EINVAL, "%s", e->err.msg);
    int line, col;
    cel_line_col(p->source, e->err.pos, &line, &col);
    return gs_error_set(err, -EINVAL, "%s (<input>:%d:%d)", e->err.msg, line, col);
}
