/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL parser: recursive descent over the grammar of the CEL spec, producing an AST in an arena.
 * Operators become calls named as in cel-go ("_+_", "_==_", "@in", "-_", "_[_]"); macros (has, all,
 * exists, exists_one, map, filter, cel.bind) are expanded here into dedicated nodes.
 */
#include <stdarg.h>
#include <string.h>

#include "cel/cel-internal.h"

struct parser {
    struct cel_lexer lx;
    struct cel_token tok;
    struct cel_parse_ctx *pc;
    int depth;
    bool failed;
};

void cel_line_col(const char *src, int32_t pos, int *line, int *col)
{
    int l = 1, c = 1;
    for (int32_t i = 0; src && i < pos && src[i]; i++) {
        if (src[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)src[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

int cel_error_at(struct gs_error *err, const char *src, int32_t pos, int code, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line = 1, col = 1;
    if (pos >= 0)
        cel_line_col(src, pos, &line, &col);
    return gs_error_set(err, code, "ERROR: <input>:%d:%d: %s", line, col, msg);
}

static struct cel_node *fail(struct parser *p, int32_t pos, const char *fmt, ...) GS_PRINTF(3, 4);
static struct cel_node *fail(struct parser *p, int32_t pos, const char *fmt, ...)
{
    if (p->failed)
        return NULL;
    p->failed = true;
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cel_error_at(p->pc->err, p->pc->src, pos, -EINVAL, "Syntax error: %s", msg);
    return NULL;
}

static void advance(struct parser *p)
{
    cel_lex_next(&p->lx, &p->tok);
}

static struct cel_node *node_new(struct parser *p, enum cel_node_kind kind, int32_t pos)
{
    struct cel_node *n = cel_arena_alloc(p->pc->arena, sizeof(*n));
    if (!n)
        return fail(p, pos, "out of memory");
    memset(n, 0, sizeof(*n));
    n->kind = (uint8_t)kind;
    n->pos = pos;
    n->index = -1;
    return n;
}

static const char *tok_desc(const struct cel_token *t)
{
    switch (t->type) {
    case CEL_TOK_EOF:
        return "end of input";
    case CEL_TOK_IDENT:
        return "identifier";
    case CEL_TOK_INT:
    case CEL_TOK_UINT:
    case CEL_TOK_DOUBLE:
        return "number";
    case CEL_TOK_STRING:
        return "string";
    case CEL_TOK_BYTES:
        return "bytes";
    default:
        return "token";
    }
}

static bool expect(struct parser *p, enum cel_tok type, const char *what)
{
    if (p->failed)
        return false;
    if (p->tok.type == CEL_TOK_ERROR) {
        fail(p, p->tok.pos, "%s", p->tok.msg);
        return false;
    }
    if (p->tok.type != type) {
        int32_t pos = p->tok.pos;
        size_t len = p->tok.len > 20 ? 20 : p->tok.len;
        if (p->tok.type == CEL_TOK_EOF)
            fail(p, pos, "expected %s, found end of input", what);
        else
            fail(p, pos, "expected %s, found %s '%.*s'", what, tok_desc(&p->tok), (int)len,
                 p->lx.src + pos);
        return false;
    }
    advance(p);
    return true;
}

static struct cel_node *parse_expr(struct parser *p);

static struct cel_node *call_node(struct parser *p, const char *name, int32_t pos, uint32_t nargs,
                                  struct cel_node **args)
{
    struct cel_node *n = node_new(p, CEL_N_CALL, pos);
    if (!n)
        return NULL;
    n->name = name;
    n->name_len = (uint32_t)strlen(name);
    n->nargs = nargs;
    n->args = cel_arena_alloc(p->pc->arena, sizeof(struct cel_node *) * (nargs ? nargs : 1));
    if (!n->args)
        return fail(p, pos, "out of memory");
    for (uint32_t i = 0; i < nargs; i++)
        n->args[i] = args[i];
    return n;
}

static struct cel_node *binary(struct parser *p, const char *name, int32_t pos, struct cel_node *a,
                               struct cel_node *b)
{
    struct cel_node *args[2] = {a, b};
    return call_node(p, name, pos, 2, args);
}

/* Parse "(" already consumed ... ")" into a list of nodes. */
static int parse_args(struct parser *p, enum cel_tok close, struct cel_node ***out, uint32_t *nout)
{
    struct cel_node *tmp[CEL_MAX_ARGS];
    uint32_t n = 0;
    if (p->tok.type != close) {
        for (;;) {
            if (n >= CEL_MAX_ARGS) {
                fail(p, p->tok.pos, "too many arguments (max %d)", CEL_MAX_ARGS);
                return -1;
            }
            struct cel_node *a = parse_expr(p);
            if (!a)
                return -1;
            tmp[n++] = a;
            if (p->tok.type != CEL_TOK_COMMA)
                break;
            advance(p);
        }
    }
    if (!expect(p, close, close == CEL_TOK_RPAREN ? "')'" : "']'"))
        return -1;
    *out = cel_arena_alloc(p->pc->arena, sizeof(struct cel_node *) * (n ? n : 1));
    if (!*out) {
        fail(p, p->tok.pos, "out of memory");
        return -1;
    }
    memcpy(*out, tmp, sizeof(struct cel_node *) * n);
    *nout = n;
    return 0;
}

static bool is_simple_ident(const struct cel_node *n)
{
    return n->kind == CEL_N_IDENT;
}

static bool ident_is(const struct cel_node *n, const char *s)
{
    return n->kind == CEL_N_IDENT && n->name_len == strlen(s) && !memcmp(n->name, s, n->name_len);
}

static const char *const reserved[] = {
    "as",  "break", "const",   "continue",  "else",   "for", "function", "if",    "import",
    "let", "loop",  "package", "namespace", "return", "var", "void",     "while", NULL};

static bool is_reserved(const char *s, size_t len)
{
    for (size_t i = 0; reserved[i]; i++)
        if (strlen(reserved[i]) == len && !memcmp(reserved[i], s, len))
            return true;
    return false;
}

/* Receiver-style call target.name(args): macros or a plain call. */
static struct cel_node *member_call(struct parser *p, struct cel_node *target, const char *name,
                                    uint32_t name_len, int32_t pos, struct cel_node **args,
                                    uint32_t nargs)
{
    static const struct {
        const char *name;
        uint32_t nargs;
        uint8_t vars;
        enum cel_macro macro;
    } macros[] = {
        {"all", 2, 1, CEL_MACRO_ALL},
        {"exists", 2, 1, CEL_MACRO_EXISTS},
        {"exists_one", 2, 1, CEL_MACRO_EXISTS_ONE},
        {"map", 2, 1, CEL_MACRO_MAP},
        {"map", 3, 1, CEL_MACRO_MAP_FILTER},
        {"filter", 2, 1, CEL_MACRO_FILTER},
        {"all", 3, 2, CEL_MACRO_ALL},
        {"exists", 3, 2, CEL_MACRO_EXISTS},
        {"existsOne", 3, 2, CEL_MACRO_EXISTS_ONE},
        {"exists_one", 3, 2, CEL_MACRO_EXISTS_ONE},
        {"transformList", 3, 2, CEL_MACRO_TRANSFORM_LIST},
        {"transformList", 4, 2, CEL_MACRO_TRANSFORM_LIST},
        {"transformMap", 3, 2, CEL_MACRO_TRANSFORM_MAP},
        {"transformMap", 4, 2, CEL_MACRO_TRANSFORM_MAP},
        {"transformMapEntry", 3, 2, CEL_MACRO_TRANSFORM_MAP_ENTRY},
        {"transformMapEntry", 4, 2, CEL_MACRO_TRANSFORM_MAP_ENTRY},
    };
    for (size_t i = 0; i < GS_ARRAY_SIZE(macros); i++) {
        if (strlen(macros[i].name) != name_len || memcmp(macros[i].name, name, name_len) != 0 ||
            macros[i].nargs != nargs)
            continue;
        uint8_t nv = macros[i].vars;
        for (uint8_t k = 0; k < nv; k++)
            if (!is_simple_ident(args[k]))
                return fail(p, args[k]->pos, "%s() variable name must be a simple identifier",
                            macros[i].name);
        if (nv == 2 && args[0]->name_len == args[1]->name_len &&
            !memcmp(args[0]->name, args[1]->name, args[0]->name_len))
            return fail(p, args[1]->pos, "%s() variables must have different names: %s",
                        macros[i].name, args[1]->name);
        struct cel_node *n = node_new(p, CEL_N_COMPREHENSION, pos);
        if (!n)
            return NULL;
        n->macro = (uint8_t)macros[i].macro;
        n->a = target;
        n->name = args[0]->name;
        n->name_len = args[0]->name_len;
        if (nv == 2) {
            n->name2 = args[1]->name;
            n->name2_len = args[1]->name_len;
        }
        n->b = args[nv];
        n->c = nargs == nv + 2u ? args[nv + 1] : NULL;
        return n;
    }
    if (ident_is(target, "cel") && name_len == 4 && !memcmp(name, "bind", 4) && nargs == 3) {
        if (!is_simple_ident(args[0]))
            return fail(p, args[0]->pos, "cel.bind() variable name must be a simple identifier");
        struct cel_node *n = node_new(p, CEL_N_BIND, pos);
        if (!n)
            return NULL;
        n->name = args[0]->name;
        n->name_len = args[0]->name_len;
        n->a = args[1];
        n->b = args[2];
        return n;
    }
    struct cel_node *all[CEL_MAX_ARGS + 1];
    if (nargs >= CEL_MAX_ARGS)
        return fail(p, pos, "too many arguments (max %d)", CEL_MAX_ARGS);
    all[0] = target;
    memcpy(all + 1, args, sizeof(struct cel_node *) * nargs);
    struct cel_node *n = call_node(p, "", pos, nargs + 1, all);
    if (!n)
        return NULL;
    n->name = cel_arena_strndup(p->pc->arena, name, name_len);
    if (!n->name)
        return fail(p, pos, "out of memory");
    n->name_len = name_len;
    n->receiver = true;
    return n;
}

/* A list element or map key, optionally marked `?` (optional entry). */
static struct cel_node *parse_opt_entry(struct parser *p)
{
    if (p->tok.type != CEL_TOK_QUESTION)
        return parse_expr(p);
    int32_t pos = p->tok.pos;
    advance(p);
    struct cel_node *inner = parse_expr(p);
    if (!inner)
        return NULL;
    struct cel_node *n = node_new(p, CEL_N_OPT_ENTRY, pos);
    if (n)
        n->a = inner;
    return n;
}

static struct cel_node *parse_primary(struct parser *p)
{
    struct cel_token t = p->tok;
    struct cel_node *n;
    switch (t.type) {
    case CEL_TOK_ERROR:
        return fail(p, t.pos, "%s", t.msg);
    case CEL_TOK_INT:
        if (t.int_overflow)
            return fail(p, t.pos, "integer literal out of range");
        advance(p);
        if (!(n = node_new(p, CEL_N_LITERAL, t.pos)))
            return NULL;
        n->lit = cel_int((int64_t)t.u);
        n->test_only = true; /* bare number: a leading '-' folds into it */
        return n;
    case CEL_TOK_UINT:
        advance(p);
        if (!(n = node_new(p, CEL_N_LITERAL, t.pos)))
            return NULL;
        n->lit = cel_uint(t.u);
        return n;
    case CEL_TOK_DOUBLE:
        advance(p);
        if (!(n = node_new(p, CEL_N_LITERAL, t.pos)))
            return NULL;
        n->lit = cel_double(t.d);
        n->test_only = true;
        return n;
    case CEL_TOK_STRING:
    case CEL_TOK_BYTES:
        advance(p);
        if (!(n = node_new(p, CEL_N_LITERAL, t.pos)))
            return NULL;
        n->lit = t.type == CEL_TOK_STRING ? cel_str(t.s, t.len) : cel_bytes(t.s, t.len);
        return n;
    case CEL_TOK_TRUE:
    case CEL_TOK_FALSE:
        advance(p);
        if (!(n = node_new(p, CEL_N_LITERAL, t.pos)))
            return NULL;
        n->lit = cel_bool(t.type == CEL_TOK_TRUE);
        return n;
    case CEL_TOK_NULL:
        advance(p);
        if (!(n = node_new(p, CEL_N_LITERAL, t.pos)))
            return NULL;
        n->lit = cel_null();
        return n;
    case CEL_TOK_LPAREN:
        advance(p);
        if (!(n = parse_expr(p)))
            return NULL;
        if (n->kind == CEL_N_LITERAL)
            n->test_only = false;
        if (!expect(p, CEL_TOK_RPAREN, "')'"))
            return NULL;
        return n;
    case CEL_TOK_LBRACKET: {
        advance(p);
        struct cel_node **items = NULL;
        uint32_t cap = 0, cnt = 0;
        while (p->tok.type != CEL_TOK_RBRACKET) {
            struct cel_node *e = parse_opt_entry(p);
            if (!e)
                return NULL;
            if (cnt == cap) {
                uint32_t ncap = cap ? cap * 2 : 8;
                struct cel_node **ni =
                    cel_arena_alloc(p->pc->arena, sizeof(struct cel_node *) * ncap);
                if (!ni)
                    return fail(p, t.pos, "out of memory");
                if (cnt)
                    memcpy(ni, items, sizeof(struct cel_node *) * cnt);
                items = ni;
                cap = ncap;
            }
            items[cnt++] = e;
            if (p->tok.type != CEL_TOK_COMMA)
                break;
            advance(p);
        }
        if (!expect(p, CEL_TOK_RBRACKET, "']'"))
            return NULL;
        if (!(n = node_new(p, CEL_N_LIST, t.pos)))
            return NULL;
        n->args = items;
        n->nargs = cnt;
        return n;
    }
    case CEL_TOK_LBRACE: {
        advance(p);
        struct cel_node **items = NULL;
        uint32_t cap = 0, cnt = 0;
        while (p->tok.type != CEL_TOK_RBRACE) {
            struct cel_node *k = parse_opt_entry(p);
            if (!k || !expect(p, CEL_TOK_COLON, "':'"))
                return NULL;
            struct cel_node *v = parse_expr(p);
            if (!v)
                return NULL;
            if (cnt + 2 > cap) {
                uint32_t ncap = cap ? cap * 2 : 8;
                struct cel_node **ni =
                    cel_arena_alloc(p->pc->arena, sizeof(struct cel_node *) * ncap);
                if (!ni)
                    return fail(p, t.pos, "out of memory");
                if (cnt)
                    memcpy(ni, items, sizeof(struct cel_node *) * cnt);
                items = ni;
                cap = ncap;
            }
            items[cnt++] = k;
            items[cnt++] = v;
            if (p->tok.type != CEL_TOK_COMMA)
                break;
            advance(p);
        }
        if (!expect(p, CEL_TOK_RBRACE, "'}'"))
            return NULL;
        if (!(n = node_new(p, CEL_N_MAP, t.pos)))
            return NULL;
        n->args = items;
        n->nargs = cnt / 2;
        return n;
    }
    case CEL_TOK_DOT:
    case CEL_TOK_IDENT: {
        bool leading_dot = t.type == CEL_TOK_DOT;
        if (t.quoted)
            return fail(p, t.pos, "quoted names are only allowed after '.'");
        if (leading_dot) {
            advance(p);
            t = p->tok;
            if (t.type != CEL_TOK_IDENT || t.quoted)
                return fail(p, t.pos, "expected identifier after '.'");
        }
        if (is_reserved(t.s, t.len))
            return fail(p, t.pos, "reserved identifier: %.*s", (int)t.len, t.s);
        advance(p);
        if (p->tok.type == CEL_TOK_LPAREN) {
            advance(p);
            struct cel_node **args;
            uint32_t nargs;
            if (parse_args(p, CEL_TOK_RPAREN, &args, &nargs) < 0)
                return NULL;
            if (t.len == 3 && !memcmp(t.s, "has", 3) && !leading_dot) {
                if (nargs != 1 || args[0]->kind != CEL_N_SELECT)
                    return fail(p, t.pos, "invalid argument to has() macro");
                args[0]->test_only = true;
                return args[0];
            }
            if (!(n = node_new(p, CEL_N_CALL, t.pos)))
                return NULL;
            n->name = cel_arena_strndup(p->pc->arena, t.s, t.len);
            if (!n->name)
                return fail(p, t.pos, "out of memory");
            n->name_len = t.len;
            n->args = args;
            n->nargs = nargs;
            return n;
        }
        if (p->tok.type == CEL_TOK_LBRACE)
            return fail(p, p->tok.pos, "message construction is not supported");
        if (!(n = node_new(p, CEL_N_IDENT, t.pos)))
            return NULL;
        n->absolute = leading_dot;
        n->name = cel_arena_strndup(p->pc->arena, t.s, t.len);
        if (!n->name)
            return fail(p, t.pos, "out of memory");
        n->name_len = t.len;
        return n;
    }
    case CEL_TOK_EOF:
        return fail(p, t.pos, "unexpected end of input");
    default:
        return fail(p, t.pos, "unexpected token '%.*s'", (int)(t.len > 20 ? 20 : t.len),
                    p->lx.src + t.pos);
    }
}

static struct cel_node *parse_member(struct parser *p)
{
    struct cel_node *n = parse_primary(p);
    while (n && !p->failed) {
        if (p->tok.type == CEL_TOK_DOT) {
            advance(p);
            bool optional = p->tok.type == CEL_TOK_QUESTION;
            if (optional)
                advance(p);
            struct cel_token t = p->tok;
            if (t.type != CEL_TOK_IDENT)
                return fail(p, t.pos, "expected field name after '.'");
            advance(p);
            if (p->tok.type == CEL_TOK_LPAREN && !t.quoted && !optional) {
                advance(p);
                struct cel_node **args;
                uint32_t nargs;
                if (parse_args(p, CEL_TOK_RPAREN, &args, &nargs) < 0)
                    return NULL;
                n = member_call(p, n, t.s, t.len, t.pos, args, nargs);
                continue;
            }
            struct cel_node *s = node_new(p, CEL_N_SELECT, t.pos);
            if (!s)
                return NULL;
            s->a = n;
            s->optional = optional;
            s->name = cel_arena_strndup(p->pc->arena, t.s, t.len);
            if (!s->name)
                return fail(p, t.pos, "out of memory");
            s->name_len = t.len;
            n = s;
        } else if (p->tok.type == CEL_TOK_LBRACKET) {
            int32_t pos = p->tok.pos;
            advance(p);
            bool optional = p->tok.type == CEL_TOK_QUESTION;
            if (optional)
                advance(p);
            struct cel_node *idx = parse_expr(p);
            if (!idx || !expect(p, CEL_TOK_RBRACKET, "']'"))
                return NULL;
            struct cel_node *s = node_new(p, CEL_N_INDEX, pos);
            if (!s)
                return NULL;
            s->optional = optional;
            s->a = n;
            s->b = idx;
            n = s;
        } else {
            break;
        }
    }
    return n;
}

static struct cel_node *parse_unary(struct parser *p)
{
    if (p->tok.type == CEL_TOK_NOT || p->tok.type == CEL_TOK_MINUS) {
        struct cel_token t = p->tok;
        if (++p->depth > CEL_MAX_DEPTH)
            return fail(p, t.pos, "expression recursion limit exceeded");
        advance(p);
        if (t.type == CEL_TOK_MINUS && p->tok.type == CEL_TOK_INT && p->tok.int_overflow) {
            /* -9223372036854775808 */
            struct cel_token lit = p->tok;
            advance(p);
            struct cel_node *n = node_new(p, CEL_N_LITERAL, t.pos);
            if (!n)
                return NULL;
            n->lit = cel_int(INT64_MIN);
            (void)lit;
            struct cel_node *m = n;
            p->depth--;
            if (p->tok.type == CEL_TOK_DOT || p->tok.type == CEL_TOK_LBRACKET)
                return fail(p, p->tok.pos, "integer literal out of range");
            return m;
        }
        struct cel_node *operand = parse_unary(p);
        p->depth--;
        if (!operand)
            return NULL;
        if (t.type == CEL_TOK_MINUS) {
            if (operand->kind == CEL_N_LITERAL && operand->test_only) {
                if (operand->lit.kind == CEL_K_INT) {
                    operand->lit.i = -operand->lit.i;
                    operand->test_only = false;
                    operand->pos = t.pos;
                    return operand;
                }
                if (operand->lit.kind == CEL_K_DOUBLE) {
                    operand->lit.d = -operand->lit.d;
                    operand->test_only = false;
                    operand->pos = t.pos;
                    return operand;
                }
            }
            return call_node(p, "-_", t.pos, 1, &operand);
        }
        struct cel_node *n = node_new(p, CEL_N_NOT, t.pos);
        if (!n)
            return NULL;
        n->a = operand;
        return n;
    }
    return parse_member(p);
}

static struct cel_node *parse_mul(struct parser *p)
{
    struct cel_node *n = parse_unary(p);
    while (n && (p->tok.type == CEL_TOK_STAR || p->tok.type == CEL_TOK_SLASH ||
                 p->tok.type == CEL_TOK_PERCENT)) {
        struct cel_token t = p->tok;
        advance(p);
        struct cel_node *r = parse_unary(p);
        if (!r)
            return NULL;
        n = binary(p,
                   t.type == CEL_TOK_STAR    ? "_*_"
                   : t.type == CEL_TOK_SLASH ? "_/_"
                                             : "_%_",
                   t.pos, n, r);
    }
    return n;
}

static struct cel_node *parse_add(struct parser *p)
{
    struct cel_node *n = parse_mul(p);
    while (n && (p->tok.type == CEL_TOK_PLUS || p->tok.type == CEL_TOK_MINUS)) {
        struct cel_token t = p->tok;
        advance(p);
        struct cel_node *r = parse_mul(p);
        if (!r)
            return NULL;
        n = binary(p, t.type == CEL_TOK_PLUS ? "_+_" : "_-_", t.pos, n, r);
    }
    return n;
}

static const char *relop(enum cel_tok t)
{
    switch (t) {
    case CEL_TOK_EQ:
        return "_==_";
    case CEL_TOK_NE:
        return "_!=_";
    case CEL_TOK_LT:
        return "_<_";
    case CEL_TOK_LE:
        return "_<=_";
    case CEL_TOK_GT:
        return "_>_";
    case CEL_TOK_GE:
        return "_>=_";
    case CEL_TOK_IN:
        return "@in";
    default:
        return NULL;
    }
}

static struct cel_node *parse_rel(struct parser *p)
{
    struct cel_node *n = parse_add(p);
    const char *op;
    while (n && (op = relop(p->tok.type))) {
        int32_t pos = p->tok.pos;
        advance(p);
        struct cel_node *r = parse_add(p);
        if (!r)
            return NULL;
        n = binary(p, op, pos, n, r);
    }
    return n;
}

static struct cel_node *parse_and(struct parser *p)
{
    struct cel_node *n = parse_rel(p);
    while (n && p->tok.type == CEL_TOK_AND) {
        int32_t pos = p->tok.pos;
        advance(p);
        struct cel_node *r = parse_rel(p);
        if (!r)
            return NULL;
        struct cel_node *a = node_new(p, CEL_N_AND, pos);
        if (!a)
            return NULL;
        a->a = n;
        a->b = r;
        n = a;
    }
    return n;
}

static struct cel_node *parse_or(struct parser *p)
{
    struct cel_node *n = parse_and(p);
    while (n && p->tok.type == CEL_TOK_OR) {
        int32_t pos = p->tok.pos;
        advance(p);
        struct cel_node *r = parse_and(p);
        if (!r)
            return NULL;
        struct cel_node *o = node_new(p, CEL_N_OR, pos);
        if (!o)
            return NULL;
        o->a = n;
        o->b = r;
        n = o;
    }
    return n;
}

static struct cel_node *parse_expr(struct parser *p)
{
    if (++p->depth > CEL_MAX_DEPTH)
        return fail(p, p->tok.pos, "expression recursion limit exceeded");
    struct cel_node *n = parse_or(p);
    if (n && p->tok.type == CEL_TOK_QUESTION) {
        int32_t pos = p->tok.pos;
        advance(p);
        struct cel_node *t = parse_or(p);
        if (!t || !expect(p, CEL_TOK_COLON, "':'"))
            return NULL;
        struct cel_node *f = parse_expr(p);
        if (!f)
            return NULL;
        struct cel_node *c = node_new(p, CEL_N_COND, pos);
        if (!c)
            return NULL;
        c->a = n;
        c->b = t;
        c->c = f;
        n = c;
    }
    p->depth--;
    return p->failed ? NULL : n;
}

struct cel_node *cel_parse(struct cel_parse_ctx *pc)
{
    struct parser p = {.pc = pc};
    p.lx.src = pc->src;
    p.lx.len = pc->len;
    p.lx.arena = pc->arena;
    advance(&p);
    struct cel_node *n = parse_expr(&p);
    if (!n)
        return NULL;
    if (p.tok.type != CEL_TOK_EOF) {
        if (p.tok.type == CEL_TOK_ERROR)
            return fail(&p, p.tok.pos, "%s", p.tok.msg);
        return fail(&p, p.tok.pos, "unexpected %s '%.*s' after expression", tok_desc(&p.tok),
                    (int)(p.tok.len > 20 ? 20 : p.tok.len), pc->src + p.tok.pos);
    }
    return n;
}
