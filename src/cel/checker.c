/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Name resolution and type checking. Resolution binds identifiers to declared variables (longest
 * qualified name first, as cel-go), macro/bind variables to slots and calls to builtin functions.
 * Checking infers a type per node with `dyn` as the escape hatch: a call is rejected only when no
 * overload can match the argument types known at compile time.
 */
#include <stdarg.h>
#include <string.h>

#include "cel/cel-internal.h"

const struct cel_type cel_type_dyn = {.kind = CEL_T_DYN};

struct scope_var {
    const char *name;
    uint32_t len;
    int slot;
    const struct cel_type *type;
};

struct checker {
    struct cel_program *p;
    const struct cel_decl *decls;
    size_t ndecls;
    bool check;
    struct gs_error *err;
    struct scope_var scope[CEL_MAX_SLOTS];
    int nscope;
    bool failed;
};

/* ---------- types ---------- */

static const struct {
    const char *name;
    enum cel_tkind kind;
} prim_names[] = {
    {"dyn", CEL_T_DYN},           {"null_type", CEL_T_NULL},
    {"bool", CEL_T_BOOL},         {"int", CEL_T_INT},
    {"uint", CEL_T_UINT},         {"double", CEL_T_DOUBLE},
    {"string", CEL_T_STRING},     {"bytes", CEL_T_BYTES},
    {"type", CEL_T_TYPE},         {"quantity", CEL_T_QUANTITY},
    {"semver", CEL_T_SEMVER},     {"device", CEL_T_DEVICE},
    {"list", CEL_T_LIST},         {"map", CEL_T_MAP},
    {"optional", CEL_T_OPTIONAL}, {"ip", CEL_T_IP},
    {"cidr", CEL_T_CIDR},         {"timestamp", CEL_T_TIMESTAMP},
    {"duration", CEL_T_DURATION},
};

static struct cel_type *type_new(struct cel_arena *a, enum cel_tkind k)
{
    struct cel_type *t = cel_arena_alloc(a, sizeof(*t));
    if (t) {
        memset(t, 0, sizeof(*t));
        t->kind = (uint8_t)k;
    }
    return t;
}

static const struct cel_type *type_parse_at(struct cel_arena *a, const char **sp)
{
    const char *s = *sp;
    while (*s == ' ')
        s++;
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || s[n] == '_')
        n++;
    if (!n)
        return NULL;
    struct cel_type *t = NULL;
    if (n == 1 && s[0] >= 'A' && s[0] <= 'Z') {
        t = type_new(a, CEL_T_PARAM);
        if (t)
            t->param = s[0];
        *sp = s + 1;
        return t;
    }
    for (size_t i = 0; i < GS_ARRAY_SIZE(prim_names); i++) {
        if (strlen(prim_names[i].name) == n && !memcmp(prim_names[i].name, s, n)) {
            t = type_new(a, prim_names[i].kind);
            break;
        }
    }
    if (!t)
        return NULL;
    s += n;
    if (t->kind == CEL_T_LIST || t->kind == CEL_T_MAP || t->kind == CEL_T_OPTIONAL) {
        if (*s != '(') {
            t->p1 = &cel_type_dyn;
            t->p2 = t->kind == CEL_T_MAP ? &cel_type_dyn : NULL;
        } else {
            s++;
            t->p1 = type_parse_at(a, &s);
            if (!t->p1)
                return NULL;
            if (t->kind == CEL_T_MAP) {
                if (*s != ',')
                    return NULL;
                s++;
                t->p2 = type_parse_at(a, &s);
                if (!t->p2)
                    return NULL;
            }
            if (*s != ')')
                return NULL;
            s++;
        }
    }
    *sp = s;
    return t;
}

const struct cel_type *cel_type_parse(struct cel_arena *a, const char *spec)
{
    const char *s = spec;
    const struct cel_type *t = type_parse_at(a, &s);
    return t && !*s ? t : NULL;
}

void cel_type_format(const struct cel_type *t, char *buf, size_t len)
{
    if (!len)
        return;
    buf[0] = '\0';
    if (!t) {
        snprintf(buf, len, "?");
        return;
    }
    for (size_t i = 0; i < GS_ARRAY_SIZE(prim_names); i++) {
        if (prim_names[i].kind != t->kind)
            continue;
        if (t->kind == CEL_T_LIST || t->kind == CEL_T_OPTIONAL) {
            char e[96];
            cel_type_format(t->p1, e, sizeof(e));
            snprintf(buf, len, "%s(%s)", prim_names[i].name, e);
        } else if (t->kind == CEL_T_MAP) {
            char k[64], v[96];
            cel_type_format(t->p1, k, sizeof(k));
            cel_type_format(t->p2, v, sizeof(v));
            snprintf(buf, len, "map(%s, %s)", k, v);
        } else if (t->kind == CEL_T_QUANTITY) {
            snprintf(buf, len, "kubernetes.Quantity");
        } else if (t->kind == CEL_T_SEMVER) {
            snprintf(buf, len, "kubernetes.Semver");
        } else if (t->kind == CEL_T_TIMESTAMP || t->kind == CEL_T_DURATION) {
            snprintf(buf, len, "google.protobuf.%s",
                     t->kind == CEL_T_TIMESTAMP ? "Timestamp" : "Duration");
        } else if (t->kind == CEL_T_IP || t->kind == CEL_T_CIDR) {
            snprintf(buf, len, t->kind == CEL_T_IP ? "net.IP" : "net.CIDR");
        } else {
            snprintf(buf, len, "%s", prim_names[i].name);
        }
        return;
    }
    if (t->kind == CEL_T_PARAM)
        snprintf(buf, len, "%c", t->param);
}

struct binding {
    char param;
    const struct cel_type *type;
};
struct bindings {
    struct binding b[8];
    int n;
};

static const struct cel_type *bound(struct bindings *bs, char p)
{
    for (int i = 0; i < bs->n; i++)
        if (bs->b[i].param == p)
            return bs->b[i].type;
    return NULL;
}

static bool types_equal(const struct cel_type *a, const struct cel_type *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == CEL_T_LIST || a->kind == CEL_T_OPTIONAL)
        return types_equal(a->p1, b->p1);
    if (a->kind == CEL_T_MAP)
        return types_equal(a->p1, b->p1) && types_equal(a->p2, b->p2);
    return true;
}

/* Can an argument of type `arg` be passed where `param` is declared? Binds type parameters. */
static bool assignable(const struct cel_type *param, const struct cel_type *arg,
                       struct bindings *bs)
{
    if (param->kind == CEL_T_PARAM) {
        const struct cel_type *b = bound(bs, param->param);
        if (!b) {
            if (bs->n < (int)GS_ARRAY_SIZE(bs->b))
                bs->b[bs->n++] = (struct binding){param->param, arg};
            return true;
        }
        if (b->kind == CEL_T_DYN || arg->kind == CEL_T_DYN)
            return true;
        return assignable(b, arg, bs);
    }
    if (param->kind == CEL_T_DYN || arg->kind == CEL_T_DYN)
        return true;
    if (param->kind != arg->kind)
        return false;
    if (param->kind == CEL_T_LIST || param->kind == CEL_T_OPTIONAL)
        return assignable(param->p1, arg->p1, bs);
    if (param->kind == CEL_T_MAP)
        return assignable(param->p1, arg->p1, bs) && assignable(param->p2, arg->p2, bs);
    return true;
}

static const struct cel_type *substitute(struct cel_arena *a, const struct cel_type *t,
                                         struct bindings *bs)
{
    if (t->kind == CEL_T_PARAM) {
        const struct cel_type *b = bound(bs, t->param);
        return b ? b : &cel_type_dyn;
    }
    if (t->kind == CEL_T_LIST || t->kind == CEL_T_MAP || t->kind == CEL_T_OPTIONAL) {
        struct cel_type *n = type_new(a, t->kind);
        if (!n)
            return &cel_type_dyn;
        n->p1 = substitute(a, t->p1, bs);
        n->p2 = t->p2 ? substitute(a, t->p2, bs) : NULL;
        return n;
    }
    return t;
}

/* ---------- errors ---------- */

static void fail(struct checker *c, int32_t pos, const char *fmt, ...) GS_PRINTF(3, 4);
static void fail(struct checker *c, int32_t pos, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = true;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cel_error_at(c->err, c->p->source, pos, -EINVAL, "%s", msg);
}

static struct cel_type *prim(struct checker *c, enum cel_tkind k)
{
    struct cel_type *t = type_new(&c->p->arena, k);
    if (!t) {
        fail(c, 0, "out of memory");
        return (struct cel_type *)&cel_type_dyn;
    }
    return t;
}

static const struct cel_type *value_type(struct checker *c, const struct cel_value *v)
{
    switch (v->kind) {
    case CEL_K_NULL:
        return prim(c, CEL_T_NULL);
    case CEL_K_BOOL:
        return prim(c, CEL_T_BOOL);
    case CEL_K_INT:
        return prim(c, CEL_T_INT);
    case CEL_K_UINT:
        return prim(c, CEL_T_UINT);
    case CEL_K_DOUBLE:
        return prim(c, CEL_T_DOUBLE);
    case CEL_K_STRING:
        return prim(c, CEL_T_STRING);
    case CEL_K_BYTES:
        return prim(c, CEL_T_BYTES);
    case CEL_K_TYPE:
        return prim(c, CEL_T_TYPE);
    default:
        return &cel_type_dyn;
    }
}

/* ---------- resolution ---------- */

static int find_decl(struct checker *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->ndecls; i++)
        if (strlen(c->decls[i].name) == len && !memcmp(c->decls[i].name, name, len))
            return (int)i;
    return -1;
}

/* A declaration for `name` as seen from the container: "a.b" tries a.b.name, a.name, name. */
static int find_decl_scoped(struct checker *c, const char *name, size_t len, bool absolute)
{
    const char *cont = c->p->container;
    if (absolute || !cont)
        return find_decl(c, name, len);
    char buf[768];
    size_t cl = strlen(cont);
    for (;;) {
        if (cl + 1 + len < sizeof(buf)) {
            memcpy(buf, cont, cl);
            buf[cl] = '.';
            memcpy(buf + cl + 1, name, len);
            buf[cl + 1 + len] = '\0';
            int d = find_decl(c, buf, cl + 1 + len);
            if (d >= 0)
                return d;
        }
        while (cl > 0 && cont[cl - 1] != '.')
            cl--;
        if (cl == 0)
            break;
        cl--; /* drop the '.' */
    }
    return find_decl(c, name, len);
}

static const struct scope_var *find_local(struct checker *c, const char *name, size_t len)
{
    for (int i = c->nscope - 1; i >= 0; i--)
        if (c->scope[i].len == len && !memcmp(c->scope[i].name, name, len))
            return &c->scope[i];
    return NULL;
}

static const struct {
    const char *name;
    int kind;
} type_idents[] = {
    {"int", CEL_K_INT},   {"uint", CEL_K_UINT},     {"double", CEL_K_DOUBLE},
    {"bool", CEL_K_BOOL}, {"string", CEL_K_STRING}, {"bytes", CEL_K_BYTES},
    {"list", CEL_K_LIST}, {"map", CEL_K_MAP},       {"null_type", CEL_K_NULL},
    {"type", CEL_K_TYPE},
};

static void check_node(struct checker *c, struct cel_node *n);

/* a.b.c where `a` is not a local: bind the longest dotted prefix that names a declaration. */
static bool resolve_qualified(struct checker *c, struct cel_node *n)
{
    struct cel_node *chain[64];
    int depth = 0;
    struct cel_node *cur = n;
    while (cur->kind == CEL_N_SELECT && depth < 63) {
        chain[depth++] = cur;
        cur = cur->a;
    }
    if (cur->kind != CEL_N_IDENT || cur->index >= 0 ||
        (!cur->absolute && find_local(c, cur->name, cur->name_len)))
        return false;
    chain[depth] = cur; /* chain[depth] = root ident, chain[0] = n */
    char name[512];
    /* try folding i selects above the root into one name, longest first */
    for (int i = depth; i >= 1; i--) {
        size_t o = 0;
        bool fits = true;
        for (int j = depth; j >= depth - i; j--) {
            const struct cel_node *part = chain[j];
            if (o + part->name_len + 2 >= sizeof(name)) {
                fits = false;
                break;
            }
            if (j != depth)
                name[o++] = '.';
            memcpy(name + o, part->name, part->name_len);
            o += part->name_len;
        }
        if (!fits)
            continue;
        int d = find_decl_scoped(c, name, o, cur->absolute);
        if (d < 0)
            continue;
        struct cel_node *target = chain[depth - i];
        if (target->test_only)
            continue; /* has(a.b.c) still tests the field of a.b */
        target->kind = CEL_N_IDENT;
        target->index = d;
        target->a = NULL;
        target->type = c->decls[d].type;
        return target == n;
    }
    return false;
}

static void resolve_ident(struct checker *c, struct cel_node *n)
{
    const struct scope_var *v = n->absolute ? NULL : find_local(c, n->name, n->name_len);
    if (v) {
        n->kind = CEL_N_SLOT;
        n->index = v->slot;
        n->type = v->type;
        return;
    }
    int d = find_decl_scoped(c, n->name, n->name_len, n->absolute);
    if (d >= 0) {
        n->index = d;
        n->type = c->decls[d].type;
        return;
    }
    for (size_t i = 0; i < GS_ARRAY_SIZE(type_idents); i++) {
        if (strlen(type_idents[i].name) == n->name_len &&
            !memcmp(type_idents[i].name, n->name, n->name_len)) {
            n->kind = CEL_N_TYPE_NAME;
            n->lit = cel_type_of_kind(type_idents[i].kind);
            n->type = prim(c, CEL_T_TYPE);
            return;
        }
    }
    if (!c->check) {
        /* unchecked: an unknown name is an error only if it is evaluated */
        const char *msg = cel_arena_printf(&c->p->arena, "undeclared reference to '%s'", n->name);
        if (!msg)
            return fail(c, n->pos, "out of memory");
        n->kind = CEL_N_LITERAL;
        n->lit = (struct cel_value){.kind = CEL_K_ERROR, .err = {.msg = msg, .pos = n->pos}};
        n->type = &cel_type_dyn;
        return;
    }
    fail(c, n->pos, "undeclared reference to '%s' (in container '')", n->name);
}

static bool is_kind(const struct cel_type *t, enum cel_tkind k)
{
    return t->kind == k;
}

static bool is_dyn(const struct cel_type *t)
{
    return t->kind == CEL_T_DYN;
}

static const struct cel_type *optional_of(struct checker *c, const struct cel_type *t)
{
    struct cel_type *o = prim(c, CEL_T_OPTIONAL);
    if (o->kind == CEL_T_OPTIONAL)
        o->p1 = t;
    return o;
}

static void check_select(struct checker *c, struct cel_node *n)
{
    if (resolve_qualified(c, n))
        return;
    check_node(c, n->a);
    if (c->failed)
        return;
    const struct cel_type *t = n->a->type;
    const struct cel_type *res = &cel_type_dyn;
    bool wrap = n->optional;
    if (is_kind(t, CEL_T_OPTIONAL)) {
        t = t->p1;
        wrap = true;
    }
    if (c->check) {
        if (is_kind(t, CEL_T_MAP)) {
            if (!is_dyn(t->p1) && !is_kind(t->p1, CEL_T_STRING)) {
                char buf[128];
                cel_type_format(t, buf, sizeof(buf));
                return fail(c, n->pos, "type '%s' does not support field selection", buf);
            }
            res = t->p2;
        } else if (is_kind(t, CEL_T_DEVICE)) {
            res = cel_dra_field_type(n->name, n->name_len);
            if (!res)
                return fail(c, n->pos, "undefined field '%s'", n->name);
        } else if (!is_dyn(t)) {
            char buf[128];
            cel_type_format(t, buf, sizeof(buf));
            return fail(c, n->pos, "type '%s' does not support field selection", buf);
        }
    }
    n->type = n->test_only ? prim(c, CEL_T_BOOL) : wrap ? optional_of(c, res) : res;
}

static void check_index_types(struct checker *c, struct cel_node *n, const struct cel_type *t,
                              const struct cel_type *i);

static void check_index(struct checker *c, struct cel_node *n)
{
    check_node(c, n->a);
    check_node(c, n->b);
    if (c->failed)
        return;
    const struct cel_type *t = n->a->type, *i = n->b->type;
    bool wrap = n->optional;
    if (is_kind(t, CEL_T_OPTIONAL)) {
        t = t->p1;
        wrap = true;
    }
    n->type = &cel_type_dyn;
    if (!c->check) {
        if (wrap)
            n->type = optional_of(c, &cel_type_dyn);
        return;
    }
    check_index_types(c, n, t, i);
    if (wrap && !c->failed)
        n->type = optional_of(c, n->type);
}

static void check_index_types(struct checker *c, struct cel_node *n, const struct cel_type *t,
                              const struct cel_type *i)
{
    if (is_kind(t, CEL_T_LIST)) {
        if (!is_dyn(i) && !is_kind(i, CEL_T_INT) && !is_kind(i, CEL_T_UINT)) {
            char buf[64];
            cel_type_format(i, buf, sizeof(buf));
            return fail(c, n->pos, "found no matching overload for '_[_]' applied to '(list, %s)'",
                        buf);
        }
        n->type = t->p1;
    } else if (is_kind(t, CEL_T_MAP)) {
        struct bindings bs = {.n = 0};
        if (!assignable(t->p1, i, &bs) &&
            !((is_kind(t->p1, CEL_T_INT) || is_kind(t->p1, CEL_T_UINT) ||
               is_kind(t->p1, CEL_T_DOUBLE)) &&
              (is_kind(i, CEL_T_INT) || is_kind(i, CEL_T_UINT) || is_kind(i, CEL_T_DOUBLE)))) {
            char kb[64], ib[64];
            cel_type_format(t->p1, kb, sizeof(kb));
            cel_type_format(i, ib, sizeof(ib));
            return fail(c, n->pos,
                        "found no matching overload for '_[_]' applied to '(map(%s, ...), %s)'", kb,
                        ib);
        }
        n->type = t->p2;
    } else if (!is_dyn(t)) {
        char buf[64];
        cel_type_format(t, buf, sizeof(buf));
        return fail(c, n->pos, "found no matching overload for '_[_]' applied to '(%s, ...)'", buf);
    }
}

/* Parse "int,int:int" into param types and result. */
static int parse_overload(struct cel_arena *a, const char *ov, const struct cel_type **params,
                          int max, const struct cel_type **result)
{
    int np = 0;
    const char *s = ov;
    if (*s == ':') { /* no parameters */
        s++;
        *result = type_parse_at(a, &s);
        return *result && !*s ? 0 : -EINVAL;
    }
    for (;;) {
        const struct cel_type *t = type_parse_at(a, &s);
        if (!t || np >= max)
            return -EINVAL;
        params[np++] = t;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s != ':')
            return -EINVAL;
        s++;
        break;
    }
    *result = type_parse_at(a, &s);
    return *result && !*s ? np : -EINVAL;
}

/* quantity('15Gi') / semver('1.2.3') / ip('10.0.0.1') / cidr('10.0.0.0/8') with a literal argument:
 * evaluate once, at compile time. A literal that does not parse stays a call and fails at run time,
 * as upstream. */
static void fold_constant(struct checker *c, struct cel_node *n)
{
    if (n->receiver || n->nargs != 1 || n->args[0]->kind != CEL_N_LITERAL ||
        (strcmp(n->fn->name, "quantity") != 0 && strcmp(n->fn->name, "semver") != 0 &&
         strcmp(n->fn->name, "ip") != 0 && strcmp(n->fn->name, "cidr") != 0))
        return;
    struct cel_eval ev = {.prog = c->p, .arena = &c->p->arena, .cost_limit = CEL_COST_LIMIT};
    struct cel_value arg = n->args[0]->lit;
    struct cel_value v = n->fn->impl(&ev, n, &arg, 1);
    if (v.kind == CEL_K_ERROR || ev.aborted)
        return;
    n->kind = CEL_N_LITERAL;
    n->lit = v;
    n->nargs = 0;
}

/* ns.fn(args) where `ns` is no variable: a namespaced global function (sets.contains, ...). */
static void resolve_namespaced(struct checker *c, struct cel_node *n)
{
    const struct cel_node *ns = n->args[0];
    if (!n->receiver || ns->kind != CEL_N_IDENT || ns->index >= 0 ||
        find_local(c, ns->name, ns->name_len) || find_decl(c, ns->name, ns->name_len) >= 0)
        return;
    char q[128];
    int len = snprintf(q, sizeof(q), "%s.%s", ns->name, n->name);
    if (len < 0 || (size_t)len >= sizeof(q))
        return;
    const struct cel_func *f = cel_func_lookup(q, (size_t)len, false, n->nargs - 1);
    if (!f)
        return;
    n->args++;
    n->nargs--;
    n->receiver = false;
    n->name = f->name;
    n->name_len = (uint32_t)strlen(f->name);
}

static void check_call(struct checker *c, struct cel_node *n)
{
    resolve_namespaced(c, n);
    for (uint32_t i = 0; i < n->nargs && !c->failed; i++)
        check_node(c, n->args[i]);
    if (c->failed)
        return;
    const struct cel_func *fn = cel_func_lookup(n->name, n->name_len, n->receiver, n->nargs);
    if (!fn && !c->check) {
        n->type = &cel_type_dyn; /* unchecked: "no such overload" at run time */
        return;
    }
    if (!fn) {
        if (cel_func_name_known(n->name, n->name_len))
            return fail(c, n->pos, "found no matching overload for '%s' with %u argument%s",
                        n->name, n->nargs, n->nargs == 1 ? "" : "s");
        return fail(c, n->pos, "undeclared reference to '%s' (in container '')", n->name);
    }
    n->fn = fn;
    n->type = &cel_type_dyn;
    if (!c->check || !fn->overloads)
        goto regex;
    const struct cel_type *result = NULL;
    bool any = false, mixed = false;
    for (size_t k = 0; fn->overloads[k]; k++) {
        const struct cel_type *params[CEL_MAX_ARGS + 1], *res = NULL;
        int np = parse_overload(&c->p->arena, fn->overloads[k], params, CEL_MAX_ARGS + 1, &res);
        if (np != (int)n->nargs)
            continue;
        struct bindings bs = {.n = 0};
        bool ok = true;
        for (uint32_t i = 0; i < n->nargs && ok; i++)
            ok = assignable(params[i], n->args[i]->type, &bs);
        if (!ok)
            continue;
        res = substitute(&c->p->arena, res, &bs);
        if (!any)
            result = res;
        else if (!types_equal(result, res))
            mixed = true;
        any = true;
    }
    if (!any) {
        char sig[200];
        size_t o = 0;
        sig[0] = '\0';
        for (uint32_t i = 0; i < n->nargs && o < sizeof(sig) - 1; i++) {
            char t[80];
            cel_type_format(n->args[i]->type, t, sizeof(t));
            int w = snprintf(sig + o, sizeof(sig) - o, "%s%s", i ? ", " : "", t);
            if (w < 0)
                break;
            o = GS_MIN(o + (size_t)w, sizeof(sig) - 1);
        }
        return fail(c, n->pos, "found no matching overload for '%s' applied to '(%s)'", n->name,
                    sig);
    }
    n->type = mixed ? &cel_type_dyn : result;
    fold_constant(c, n);
regex:
    /* matches() with a constant pattern: compile once, here */
    if (!strcmp(fn->name, "matches") || !strcmp(fn->name, "find") || !strcmp(fn->name, "findAll")) {
        const struct cel_node *pat = n->args[1];
        if (pat->kind == CEL_N_LITERAL && pat->lit.kind == CEL_K_STRING) {
            char msg[128];
            void *re = cel_regex_compile(pat->lit.s, pat->lit.len, true, msg, sizeof(msg));
            if (!re)
                return fail(c, pat->pos, "invalid regular expression: %s", msg);
            if (cel_arena_defer(&c->p->arena, cel_regex_free, re) < 0) {
                cel_regex_free(re);
                return fail(c, pat->pos, "out of memory");
            }
            n->regex = re;
        }
    }
}

static const struct cel_type *common_type(struct checker *c, struct cel_node **items, uint32_t n,
                                          uint32_t stride)
{
    if (!n)
        return &cel_type_dyn;
    const struct cel_type *t = items[0]->type;
    for (uint32_t i = stride; i < n * stride; i += stride)
        if (!types_equal(t, items[i]->type))
            return &cel_type_dyn;
    return t;
}

static void push_var(struct checker *c, struct cel_node *n, const struct cel_type *t)
{
    if (c->nscope >= CEL_MAX_SLOTS)
        return fail(c, n->pos, "too many nested comprehensions (max %d)", CEL_MAX_SLOTS);
    c->scope[c->nscope] = (struct scope_var){n->name, n->name_len, c->nscope, t};
    n->index = c->nscope;
    c->nscope++;
    if (c->nscope > c->p->nslots)
        c->p->nslots = c->nscope;
}

static void require_optional(struct checker *c, const struct cel_node *n)
{
    if (c->check && !c->failed && !is_dyn(n->type) && !is_kind(n->type, CEL_T_OPTIONAL)) {
        char buf[64];
        cel_type_format(n->type, buf, sizeof(buf));
        fail(c, n->pos, "optional entry requires an optional value, got %s", buf);
    }
}

static void require_bool(struct checker *c, const struct cel_node *n, const char *what)
{
    if (c->check && !c->failed && !is_dyn(n->type) && !is_kind(n->type, CEL_T_BOOL)) {
        char buf[64];
        cel_type_format(n->type, buf, sizeof(buf));
        fail(c, n->pos, "found no matching overload for '%s' applied to '(%s)'", what, buf);
    }
}

static void check_comprehension(struct checker *c, struct cel_node *n)
{
    check_node(c, n->a);
    if (c->failed)
        return;
    const struct cel_type *r = n->a->type, *elem = &cel_type_dyn, *second = &cel_type_dyn;
    if (is_kind(r, CEL_T_LIST) || is_kind(r, CEL_T_MAP)) {
        elem = r->p1;
        if (n->name2) {
            elem = is_kind(r, CEL_T_LIST) ? prim(c, CEL_T_INT) : r->p1;
            second = is_kind(r, CEL_T_LIST) ? r->p1 : r->p2;
        }
    } else if (c->check && !is_dyn(r)) {
        char buf[64];
        cel_type_format(r, buf, sizeof(buf));
        return fail(c, n->a->pos, "expression of type '%s' cannot be range of a comprehension",
                    buf);
    }
    push_var(c, n, elem);
    if (c->failed)
        return;
    int first_slot = n->index;
    if (n->name2) {
        struct cel_node tmp = {.name = n->name2, .name_len = n->name2_len, .pos = n->pos};
        push_var(c, &tmp, second);
        if (c->failed)
            return;
    }
    n->index = first_slot;
    check_node(c, n->b);
    if (n->c)
        check_node(c, n->c);
    c->nscope -= n->name2 ? 2 : 1;
    if (c->failed)
        return;
    const struct cel_node *xf = n->c ? n->c : n->b; /* transform of the two-variable forms */
    switch (n->macro) {
    case CEL_MACRO_TRANSFORM_LIST: {
        if (n->c)
            require_bool(c, n->b, "transformList");
        struct cel_type *t = prim(c, CEL_T_LIST);
        t->p1 = xf->type;
        n->type = t;
        return;
    }
    case CEL_MACRO_TRANSFORM_MAP: {
        if (n->c)
            require_bool(c, n->b, "transformMap");
        struct cel_type *t = prim(c, CEL_T_MAP);
        t->p1 = elem;
        t->p2 = xf->type;
        n->type = t;
        return;
    }
    case CEL_MACRO_TRANSFORM_MAP_ENTRY:
        if (n->c)
            require_bool(c, n->b, "transformMapEntry");
        if (c->check && !is_dyn(xf->type) && !is_kind(xf->type, CEL_T_MAP))
            return fail(c, xf->pos, "transformMapEntry() must produce a map");
        n->type = is_kind(xf->type, CEL_T_MAP) ? xf->type : prim(c, CEL_T_MAP);
        if (!n->type->p1) {
            struct cel_type *t = prim(c, CEL_T_MAP);
            t->p1 = t->p2 = &cel_type_dyn;
            n->type = t;
        }
        return;
    default:
        break;
    }
    switch (n->macro) {
    case CEL_MACRO_ALL:
    case CEL_MACRO_EXISTS:
    case CEL_MACRO_EXISTS_ONE:
        require_bool(c, n->b, n->macro == CEL_MACRO_ALL ? "all" : "exists");
        n->type = prim(c, CEL_T_BOOL);
        break;
    case CEL_MACRO_MAP: {
        struct cel_type *t = prim(c, CEL_T_LIST);
        t->p1 = n->b->type;
        n->type = t;
        break;
    }
    case CEL_MACRO_MAP_FILTER: {
        require_bool(c, n->b, "map");
        struct cel_type *t = prim(c, CEL_T_LIST);
        t->p1 = xf->type; /* map(x, p, f): the parser always sets c, the transform f */
        n->type = t;
        break;
    }
    default: {
        require_bool(c, n->b, "filter");
        struct cel_type *t = prim(c, CEL_T_LIST);
        t->p1 = elem;
        n->type = t;
        break;
    }
    }
}

static void check_node(struct checker *c, struct cel_node *n)
{
    if (c->failed)
        return;
    switch (n->kind) {
    case CEL_N_LITERAL:
        n->type = value_type(c, &n->lit);
        return;
    case CEL_N_TYPE_NAME:
        n->type = prim(c, CEL_T_TYPE);
        return;
    case CEL_N_IDENT:
        if (n->index < 0)
            resolve_ident(c, n);
        return;
    case CEL_N_SLOT:
        return;
    case CEL_N_SELECT:
        check_select(c, n);
        return;
    case CEL_N_INDEX:
        check_index(c, n);
        return;
    case CEL_N_CALL:
        check_call(c, n);
        return;
    case CEL_N_AND:
    case CEL_N_OR:
        check_node(c, n->a);
        check_node(c, n->b);
        if (c->failed)
            return;
        require_bool(c, n->a, n->kind == CEL_N_AND ? "_&&_" : "_||_");
        require_bool(c, n->b, n->kind == CEL_N_AND ? "_&&_" : "_||_");
        n->type = prim(c, CEL_T_BOOL);
        return;
    case CEL_N_NOT:
        check_node(c, n->a);
        if (c->failed)
            return;
        require_bool(c, n->a, "!_");
        n->type = prim(c, CEL_T_BOOL);
        return;
    case CEL_N_COND:
        check_node(c, n->a);
        check_node(c, n->b);
        check_node(c, n->c);
        if (c->failed)
            return;
        require_bool(c, n->a, "_?_:_");
        n->type = types_equal(n->b->type, n->c->type) ? n->b->type : &cel_type_dyn;
        return;
    case CEL_N_OPT_ENTRY:
        check_node(c, n->a);
        if (!c->failed)
            n->type = n->a->type;
        return;
    case CEL_N_LIST: {
        bool opt_entries = false;
        for (uint32_t i = 0; i < n->nargs; i++) {
            check_node(c, n->args[i]);
            if (n->args[i]->kind == CEL_N_OPT_ENTRY) {
                opt_entries = true;
                require_optional(c, n->args[i]);
            }
        }
        if (c->failed)
            return;
        struct cel_type *t = prim(c, CEL_T_LIST);
        t->p1 = opt_entries ? &cel_type_dyn : common_type(c, n->args, n->nargs, 1);
        n->type = t;
        return;
    }
    case CEL_N_MAP: {
        bool opt_entries = false;
        for (uint32_t i = 0; i < 2 * n->nargs; i++)
            check_node(c, n->args[i]);
        for (uint32_t i = 0; i < n->nargs && !c->failed; i++) {
            if (n->args[2 * i]->kind == CEL_N_OPT_ENTRY) {
                opt_entries = true;
                require_optional(c, n->args[2 * i + 1]);
            }
        }
        if (c->failed)
            return;
        struct cel_type *t = prim(c, CEL_T_MAP);
        t->p1 = common_type(c, n->args, n->nargs, 2);
        t->p2 = n->nargs && !opt_entries ? common_type(c, n->args + 1, n->nargs, 2) : &cel_type_dyn;
        if (c->check) {
            for (uint32_t i = 0; i < n->nargs; i++) {
                const struct cel_type *k = n->args[2 * i]->type;
                if (!is_dyn(k) && !is_kind(k, CEL_T_INT) && !is_kind(k, CEL_T_UINT) &&
                    !is_kind(k, CEL_T_BOOL) && !is_kind(k, CEL_T_STRING)) {
                    char buf[64];
                    cel_type_format(k, buf, sizeof(buf));
                    return fail(c, n->args[2 * i]->pos, "unsupported map key type: %s", buf);
                }
            }
        }
        n->type = t;
        return;
    }
    case CEL_N_COMPREHENSION:
        check_comprehension(c, n);
        return;
    case CEL_N_BIND:
        check_node(c, n->a);
        if (c->failed)
            return;
        push_var(c, n, n->a->type);
        if (c->failed)
            return;
        check_node(c, n->b);
        c->nscope--;
        if (!c->failed)
            n->type = n->b->type;
        return;
    default:
        fail(c, n->pos, "internal error: unknown node kind %d", n->kind);
        return;
    }
}

static int run(struct cel_program *p, const struct cel_decl *decls, size_t ndecls, bool check,
               struct gs_error *err)
{
    struct checker c = {.p = p, .decls = decls, .ndecls = ndecls, .check = check, .err = err};
    check_node(&c, p->root);
    if (c.failed)
        return err && err->code ? err->code : -EINVAL;
    p->checked = check;
    return 0;
}

int cel_check(struct cel_program *p, const struct cel_decl *decls, size_t ndecls,
              struct gs_error *err)
{
    return run(p, decls, ndecls, true, err);
}

int cel_resolve(struct cel_program *p, const struct cel_decl *decls, size_t ndecls,
                struct gs_error *err)
{
    return run(p, decls, ndecls, false, err);
}
