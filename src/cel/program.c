/* SPDX-License-Identifier: Apache-2.0 */
/* Compile (parse + check) and evaluate programs; the DRA entry points of cel.h. */
#include <string.h>

#include "cel/cel-internal.h"

#define EVAL_ARENA_STACK 4096
#define EVAL_ARENA_MAX   (64u << 20) /* memory one evaluation may use */
#define AST_MAX_HEIGHT   (CEL_MAX_DEPTH + 50)

static const struct cel_type t_device = {.kind = CEL_T_DEVICE};

/* Height of the AST, computed without recursion (the parser bounds nesting of parentheses and
 * unary operators, but a long chain such as a.b.c... or 1+1+1... is built by loops). */
static int ast_too_deep(const struct cel_node *root, int32_t *pos)
{
    struct item {
        const struct cel_node *n;
        int depth;
    };
    size_t cap = 256, top = 0;
    struct item *stack = malloc(cap * sizeof(*stack));
    if (!stack)
        return -ENOMEM;
    stack[top++] = (struct item){root, 1};
    int rc = 0;
    while (top) {
        struct item it = stack[--top];
        if (it.depth > AST_MAX_HEIGHT) {
            *pos = it.n->pos;
            rc = -E2BIG;
            break;
        }
        const struct cel_node *kids[3] = {it.n->a, it.n->b, it.n->c};
        uint32_t nargs = it.n->kind == CEL_N_MAP ? it.n->nargs * 2 : it.n->nargs;
        if (it.n->kind != CEL_N_CALL && it.n->kind != CEL_N_LIST && it.n->kind != CEL_N_MAP)
            nargs = 0;
        size_t need = top + 3 + nargs;
        if (need > cap) {
            size_t ncap = need * 2;
            struct item *ns = realloc(stack, ncap * sizeof(*stack));
            if (!ns) {
                rc = -ENOMEM;
                break;
            }
            stack = ns;
            cap = ncap;
        }
        for (int k = 0; k < 3; k++)
            if (kids[k])
                stack[top++] = (struct item){kids[k], it.depth + 1};
        for (uint32_t k = 0; k < nargs; k++)
            stack[top++] = (struct item){it.n->args[k], it.depth + 1};
    }
    free(stack);
    return rc;
}

void cel_program_free(struct cel_program *p)
{
    if (!p)
        return;
    cel_arena_fini(&p->arena);
    free(p->container);
    free(p->source);
    free(p);
}

const char *cel_program_source(const struct cel_program *p)
{
    return p->source;
}

struct cel_program *cel_compile_env(const char *expr, size_t len, const struct cel_decl *decls,
                                    size_t ndecls, bool check, struct gs_error *err)
{
    return cel_compile_ex(expr, len, decls, ndecls, check, NULL, err);
}

struct cel_program *cel_compile_ex(const char *expr, size_t len, const struct cel_decl *decls,
                                   size_t ndecls, bool check, const char *container,
                                   struct gs_error *err)
{
    if (!expr) {
        gs_error_set(err, -EINVAL, "expression: missing");
        return NULL;
    }
    if (len > CEL_MAX_EXPRESSION_LEN) {
        gs_error_set(err, -E2BIG, "expression is too long: %zu bytes (limit %d)", len,
                     CEL_MAX_EXPRESSION_LEN);
        return NULL;
    }
    struct cel_program *p = calloc(1, sizeof(*p));
    if (p && (p->source = malloc(len + 1))) {
        memcpy(p->source, expr, len);
        p->source[len] = '\0';
    }
    if (!p || !p->source) {
        free(p);
        gs_error_set(err, -ENOMEM, "out of memory compiling expression");
        return NULL;
    }
    cel_arena_init(&p->arena, NULL, 0);
    p->nvars = ndecls;
    if (container && *container && !(p->container = strdup(container))) {
        cel_program_free(p);
        gs_error_set(err, -ENOMEM, "out of memory compiling expression");
        return NULL;
    }
    struct cel_parse_ctx pc = {.src = p->source, .len = len, .arena = &p->arena, .err = err};
    p->root = cel_parse(&pc);
    if (!p->root) {
        cel_program_free(p);
        return NULL;
    }
    int32_t pos = 0;
    int r = ast_too_deep(p->root, &pos);
    if (r < 0) {
        if (r == -ENOMEM)
            gs_error_set(err, r, "out of memory compiling expression");
        else
            cel_error_at(err, p->source, pos, r, "expression nesting exceeds the limit of %d",
                         AST_MAX_HEIGHT);
        cel_program_free(p);
        return NULL;
    }
    r = check ? cel_check(p, decls, ndecls, err) : cel_resolve(p, decls, ndecls, err);
    if (r < 0 || p->arena.failed) {
        if (r >= 0)
            gs_error_set(err, -ENOMEM, "out of memory compiling expression");
        cel_program_free(p);
        return NULL;
    }
    return p;
}

struct cel_program *cel_compile(const char *expr, struct gs_error *err)
{
    const struct cel_decl decls[] = {{"device", &t_device}};
    if (!expr) {
        gs_error_set(err, -EINVAL, "expression: missing");
        return NULL;
    }
    size_t len = strnlen(expr, CEL_MAX_EXPRESSION_LEN + 1);
    if (len > CEL_MAX_EXPRESSION_LEN) {
        gs_error_set(err, -E2BIG, "expression is too long: more than %d bytes (limit %d)",
                     CEL_MAX_EXPRESSION_LEN, CEL_MAX_EXPRESSION_LEN);
        return NULL;
    }
    struct cel_program *p = cel_compile_env(expr, len, decls, 1, true, err);
    if (!p)
        return NULL;
    const struct cel_type *t = p->root->type;
    if (t && t->kind != CEL_T_BOOL && t->kind != CEL_T_DYN) {
        char buf[64];
        cel_type_format(t, buf, sizeof(buf));
        gs_error_set(err, -EINVAL, "expression must evaluate to bool, not %s", buf);
        cel_program_free(p);
        return NULL;
    }
    p->dra = true;
    return p;
}

int cel_eval_device(const struct cel_program *p, const struct cel_device *dev, bool *out,
                    struct gs_error *err)
{
    if (!p || !p->dra || !dev)
        return gs_error_set(err, -EINVAL, "cel_eval_device: not a DRA program or no device");
    if ((dev->attributes && !json_is_object(dev->attributes)) ||
        (dev->capacity && !json_is_object(dev->capacity)))
        return gs_error_set(err, -EINVAL, "device %s: attributes and capacity must be objects",
                            dev->driver ? dev->driver : "");
    _Alignas(16) char buf[EVAL_ARENA_STACK];
    struct cel_arena arena;
    cel_arena_init(&arena, buf, sizeof(buf));
    arena.max_total = EVAL_ARENA_MAX;
    struct cel_map views[3];
    struct cel_value device = cel_dra_device_init(views, dev);
    struct cel_value res;
    int r = cel_eval_program(p, &device, &arena, CEL_COST_LIMIT, &res, err);
    if (r == 0) {
        if (res.kind == CEL_K_ERROR)
            r = cel_error_report(p, &res, err);
        else if (res.kind != CEL_K_BOOL)
            r = gs_error_set(err, -EINVAL, "expression evaluated to %s, not bool",
                             cel_kind_name(res.kind));
        else
            *out = res.b;
    }
    cel_arena_fini(&arena);
    return r;
}
