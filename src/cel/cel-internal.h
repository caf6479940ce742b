/* SPDX-License-Identifier: Apache-2.0 */
/* What the CEL subsystem shares inside itself: arena, values, AST, types, functions. */
#ifndef GS_CEL_CEL_INTERNAL_H
#define GS_CEL_CEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cel/cel.h"
#include "base/error.h"
#include "config/quantity.h"

#define CEL_MAX_DEPTH          200 /* parser recursion limit (nesting of expressions) */
#define CEL_MAX_SLOTS          64  /* nested comprehension/bind variables in one expression */
#define CEL_MAX_ARGS           16  /* arguments of one call */
#define CEL_MAX_LIST_LEN       1000000
#define CEL_EVAL_REGEX_CACHE   8    /* distinct run-time patterns kept per evaluation */
#define CEL_REGEX_COMPILE_COST 1000 /* cost of compiling a pattern at run time (+ its length) */

/* ---------- arena: bump allocator, freed all at once ---------- */
struct cel_arena_chunk;
struct cel_arena_cleanup {
    void (*fn)(void *);
    void *ptr;
    struct cel_arena_cleanup *next;
};
struct cel_arena {
    char *cur, *end;
    struct cel_arena_chunk *chunks;
    struct cel_arena_cleanup *cleanups;
    size_t total;     /* bytes allocated in chunks */
    size_t max_total; /* 0 = unlimited */
    bool failed;      /* an allocation failed (out of memory or over max_total) */
};
void cel_arena_init(struct cel_arena *a, void *buf, size_t len);
void cel_arena_fini(struct cel_arena *a);
void *cel_arena_alloc(struct cel_arena *a, size_t n); /* 8-aligned, NULL on failure */
char *cel_arena_strndup(struct cel_arena *a, const char *s, size_t n);
char *cel_arena_printf(struct cel_arena *a, const char *fmt, ...) GS_PRINTF(2, 3);
/* Run fn(ptr) at cel_arena_fini (e.g. pcre2_code_free). Returns -ENOMEM on failure. */
int cel_arena_defer(struct cel_arena *a, void (*fn)(void *), void *ptr);

/* ---------- values ---------- */
enum cel_kind {
    CEL_K_NULL = 0,
    CEL_K_BOOL,
    CEL_K_INT,
    CEL_K_UINT,
    CEL_K_DOUBLE,
    CEL_K_STRING,
    CEL_K_BYTES,
    CEL_K_LIST,
    CEL_K_MAP,
    CEL_K_TYPE,
    CEL_K_QUANTITY,
    CEL_K_SEMVER,
    CEL_K_OPTIONAL,
    CEL_K_IP,
    CEL_K_CIDR,
    CEL_K_TIMESTAMP,
    CEL_K_DURATION,
    CEL_K_ERROR,
    CEL_K_COUNT_,
};

struct cel_list;
struct cel_map;
struct cel_semver {
    uint64_t major, minor, patch;
    const char *pre; /* pre-release identifiers joined by '.', "" if none */
    uint32_t pre_len;
};

struct cel_value {
    uint8_t kind;
    uint8_t type_kind; /* CEL_K_TYPE: the kind the type value denotes (CEL_K_COUNT_ = "type") */
    uint32_t len;      /* string/bytes length */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        const char *s; /* string (UTF-8, not NUL-terminated) or bytes */
        const struct cel_list *list;
        const struct cel_map *map;
        struct gs_quantity q;
        const struct cel_semver *semver;
        const struct cel_value *opt; /* CEL_K_OPTIONAL: the value, NULL = optional.none() */
        const struct cel_net *net;   /* CEL_K_IP, CEL_K_CIDR */
        struct {
            int64_t sec;  /* TIMESTAMP: seconds since the epoch; DURATION: seconds */
            int32_t nsec; /* TIMESTAMP: [0, 1e9); DURATION: same sign as sec */
        } t;
        struct {
            const char *msg;
            int32_t pos; /* byte offset in the expression, -1 unknown */
        } err;
    };
};

struct cel_net {
    uint8_t family; /* 4 or 6 */
    uint8_t prefix; /* CIDR prefix length (32/128 for an address) */
    bool is_cidr;
    uint8_t addr[16];
};
void cel_net_format(const struct cel_net *n, char *buf, size_t len); /* "10.0.0.1", "fd00::/8" */
/* Timestamps (RFC 3339, UTC) and durations ("1.5s") as strings; ordering; + and -. */
void cel_time_format(const struct cel_value *v, char *buf, size_t len);
int cel_time_cmp(const struct cel_value *a, const struct cel_value *b);
bool cel_net_equal(const struct cel_net *a, const struct cel_net *b);

struct cel_list {
    size_t n;
    const struct cel_value *items;
};

enum cel_map_impl {
    CEL_MAP_GENERIC = 0,
    CEL_MAP_DEVICE,      /* the DRA `device` object */
    CEL_MAP_ATTR_ROOT,   /* device.attributes: domain -> map */
    CEL_MAP_ATTR_DOMAIN, /* device.attributes[domain]: name -> value */
    CEL_MAP_CAP_ROOT,    /* device.capacity */
    CEL_MAP_CAP_DOMAIN,  /* device.capacity[domain]: name -> quantity */
};

struct cel_map {
    uint8_t impl;
    size_t n; /* generic: entries */
    const struct cel_value *keys, *vals;
    const struct cel_device *dev; /* DRA views */
    const char *domain;           /* ATTR_DOMAIN / CAP_DOMAIN (not NUL-terminated) */
    uint32_t domain_len;
    uint32_t driver_len; /* strlen(dev->driver) */
};

static inline struct cel_value cel_bool(bool b)
{
    return (struct cel_value){.kind = CEL_K_BOOL, .b = b};
}
static inline struct cel_value cel_int(int64_t i)
{
    return (struct cel_value){.kind = CEL_K_INT, .i = i};
}
static inline struct cel_value cel_uint(uint64_t u)
{
    return (struct cel_value){.kind = CEL_K_UINT, .u = u};
}
static inline struct cel_value cel_double(double d)
{
    return (struct cel_value){.kind = CEL_K_DOUBLE, .d = d};
}
static inline struct cel_value cel_null(void)
{
    return (struct cel_value){.kind = CEL_K_NULL};
}
static inline struct cel_value cel_str(const char *s, size_t len)
{
    return (struct cel_value){.kind = CEL_K_STRING, .len = (uint32_t)len, .s = s};
}
static inline struct cel_value cel_bytes(const char *s, size_t len)
{
    return (struct cel_value){.kind = CEL_K_BYTES, .len = (uint32_t)len, .s = s};
}
static inline struct cel_value cel_optional(const struct cel_value *v)
{
    return (struct cel_value){.kind = CEL_K_OPTIONAL, .opt = v};
}
static inline struct cel_value cel_type_of_kind(int k)
{
    return (struct cel_value){.kind = CEL_K_TYPE, .type_kind = (uint8_t)k};
}

const char *cel_kind_name(int kind); /* "int", "list", "null_type", "type", ... */
/* Equality with CEL's heterogeneous numeric semantics. Returns -1 when the comparison itself is an
 * error (never: CEL equality is total, errors are propagated by the caller), else 0/1. */
bool cel_value_equal(const struct cel_value *a, const struct cel_value *b);
/* Ordering: 0 ok (*cmp = -1/0/1), -EINVAL no ordering between these kinds, -EDOM NaN involved. */
int cel_value_compare(const struct cel_value *a, const struct cel_value *b, int *cmp);
/* Map lookup. 1 found, 0 not found. DRA views may fail: returns <0 with *out an error value. */
struct cel_eval;
int cel_map_get(struct cel_eval *ev, const struct cel_map *m, const struct cel_value *key,
                struct cel_value *out);
/* Generic view of any map (DRA views are materialised into the arena). NULL on OOM. */
const struct cel_map *cel_map_generic(struct cel_eval *ev, const struct cel_map *m);
size_t cel_map_size(struct cel_eval *ev, const struct cel_map *m);
/* Count UTF-8 code points; -1 if not valid UTF-8. */
int64_t cel_utf8_len(const char *s, size_t n);
bool cel_utf8_valid(const char *s, size_t n);
/* Format a double as Go's strconv.FormatFloat(d, 'g', -1, 64) does. */
void cel_format_double(double d, char *buf, size_t len);

/* ---------- types (checker) ---------- */
enum cel_tkind {
    CEL_T_DYN = 0,
    CEL_T_NULL,
    CEL_T_BOOL,
    CEL_T_INT,
    CEL_T_UINT,
    CEL_T_DOUBLE,
    CEL_T_STRING,
    CEL_T_BYTES,
    CEL_T_LIST,
    CEL_T_MAP,
    CEL_T_TYPE,
    CEL_T_QUANTITY,
    CEL_T_SEMVER,
    CEL_T_DEVICE,   /* the DRA device object */
    CEL_T_OPTIONAL, /* optional(T): p1 */
    CEL_T_IP,
    CEL_T_CIDR,
    CEL_T_TIMESTAMP,
    CEL_T_DURATION,
    CEL_T_PARAM, /* type parameter in overload declarations (A, B, K, V) */
};
struct cel_type {
    uint8_t kind;
    char param;                     /* CEL_T_PARAM name */
    const struct cel_type *p1, *p2; /* list elem; map key, value */
};
/* Parse "int", "list(string)", "map(string,map(string,dyn))", "A". NULL on syntax error. */
const struct cel_type *cel_type_parse(struct cel_arena *a, const char *spec);
void cel_type_format(const struct cel_type *t, char *buf, size_t len);
extern const struct cel_type cel_type_dyn;

/* ---------- AST ---------- */
enum cel_node_kind {
    CEL_N_LITERAL,
    CEL_N_IDENT,  /* global variable (var index) */
    CEL_N_SLOT,   /* comprehension / bind variable (slot index) */
    CEL_N_SELECT, /* operand.field, or has(operand.field) when test_only */
    CEL_N_INDEX,  /* operand[index] */
    CEL_N_CALL,   /* builtin function */
    CEL_N_AND,
    CEL_N_OR,
    CEL_N_NOT,
    CEL_N_COND, /* a ? b : c */
    CEL_N_LIST,
    CEL_N_MAP,
    CEL_N_COMPREHENSION,
    CEL_N_BIND,      /* cel.bind(slot, init, body) */
    CEL_N_TYPE_NAME, /* identifier that names a type: int, list, ... */
    CEL_N_OPT_ENTRY, /* ?a in a list literal / ?k: v in a map literal: a (or v) is optional */
};

enum cel_macro {
    CEL_MACRO_ALL,
    CEL_MACRO_EXISTS,
    CEL_MACRO_EXISTS_ONE,
    CEL_MACRO_MAP,
    CEL_MACRO_MAP_FILTER, /* map(x, pred, f) */
    CEL_MACRO_FILTER,
    /* two-variable comprehensions (cel-go ext.TwoVarComprehensions); c != NULL: b filters */
    CEL_MACRO_TRANSFORM_LIST,
    CEL_MACRO_TRANSFORM_MAP,
    CEL_MACRO_TRANSFORM_MAP_ENTRY,
};

struct cel_func;
struct cel_node {
    uint8_t kind;
    uint8_t macro;    /* COMPREHENSION */
    bool test_only;   /* SELECT inside has() */
    bool optional;    /* SELECT written a.?b, INDEX written a[?b] */
    bool absolute;    /* IDENT written .name: resolved from the root, not the container */
    bool receiver;    /* CALL written as a.f(...) */
    int32_t pos;      /* byte offset of the operator / name, for messages */
    uint32_t nargs;   /* CALL, LIST: children; MAP: entries */
    int32_t index;    /* IDENT var index; SLOT / COMPREHENSION / BIND slot */
    const char *name; /* IDENT, SELECT field, CALL function name (NUL-terminated) */
    uint32_t name_len;
    const char *name2; /* COMPREHENSION: second variable (value) of a two-variable form, slot
                          index + 1; the first variable is then the index or the key */
    uint32_t name2_len;
    struct cel_value lit;        /* LITERAL, TYPE_NAME */
    struct cel_node **args;      /* CALL (receiver first), LIST items, MAP keys+vals interleaved */
    struct cel_node *a, *b, *c;  /* operands: SELECT/INDEX/NOT a; AND/OR a b; COND a b c;
                                    COMPREHENSION range a, pred/map b, transform c;
                                    BIND init a, body b */
    const struct cel_func *fn;   /* CALL, resolved by the checker */
    const struct cel_type *type; /* checked type */
    void *regex;                 /* matches() with a constant pattern: compiled pcre2 code */
};

/* ---------- lexer ---------- */
enum cel_tok {
    CEL_TOK_EOF = 0,
    CEL_TOK_ERROR,
    CEL_TOK_INT,
    CEL_TOK_UINT,
    CEL_TOK_DOUBLE,
    CEL_TOK_STRING,
    CEL_TOK_BYTES,
    CEL_TOK_IDENT,
    CEL_TOK_TRUE,
    CEL_TOK_FALSE,
    CEL_TOK_NULL,
    CEL_TOK_IN,
    CEL_TOK_LPAREN,
    CEL_TOK_RPAREN,
    CEL_TOK_LBRACKET,
    CEL_TOK_RBRACKET,
    CEL_TOK_LBRACE,
    CEL_TOK_RBRACE,
    CEL_TOK_DOT,
    CEL_TOK_COMMA,
    CEL_TOK_COLON,
    CEL_TOK_QUESTION,
    CEL_TOK_PLUS,
    CEL_TOK_MINUS,
    CEL_TOK_STAR,
    CEL_TOK_SLASH,
    CEL_TOK_PERCENT,
    CEL_TOK_NOT,
    CEL_TOK_EQ,
    CEL_TOK_NE,
    CEL_TOK_LT,
    CEL_TOK_LE,
    CEL_TOK_GT,
    CEL_TOK_GE,
    CEL_TOK_AND,
    CEL_TOK_OR,
};
struct cel_token {
    enum cel_tok type;
    int32_t pos;
    uint32_t len; /* source length; for STRING/BYTES: decoded length */
    union {
        uint64_t u; /* INT (magnitude, sign applied by the parser), UINT */
        double d;
        const char *s;   /* STRING/BYTES decoded (arena), IDENT points into the source */
        const char *msg; /* ERROR */
    };
    bool int_overflow; /* INT literal above 2^63 (only valid as -9223372036854775808) */
    bool quoted;       /* IDENT written as `name` (field selection only) */
};
struct cel_lexer {
    const char *src;
    size_t len, off;
    struct cel_arena *arena;
};
/* Next token. ERROR tokens carry a message. */
void cel_lex_next(struct cel_lexer *lx, struct cel_token *t);
/* Append a code point as UTF-8 (returns bytes written, 0 if invalid). */
size_t cel_utf8_put(char *out, uint32_t cp);

/* ---------- parser ---------- */
struct cel_decl {
    const char *name;
    const struct cel_type *type;
};
struct cel_parse_ctx {
    const char *src;
    size_t len;
    struct cel_arena *arena;
    struct gs_error *err;
    int nslots; /* slots used so far (max depth) */
};
/* Parse into an AST in the arena. Identifiers stay unresolved (CEL_N_IDENT with index -1) except
 * macro variables, which become slots. Returns NULL with err set ("ERROR: <input>:1:5: ..."). */
struct cel_node *cel_parse(struct cel_parse_ctx *pc);
/* "ERROR: <input>:L:C: msg" for a byte offset in src. */
int cel_error_at(struct gs_error *err, const char *src, int32_t pos, int code, const char *fmt, ...)
    GS_PRINTF(5, 6);
void cel_line_col(const char *src, int32_t pos, int *line, int *col);

/* ---------- functions ---------- */
typedef struct cel_value (*cel_fn_impl)(struct cel_eval *ev, const struct cel_node *call,
                                        struct cel_value *args, uint32_t n);
struct cel_func {
    const char *name;
    bool receiver; /* called as x.name(...) */
    int8_t nargs;  /* including receiver */
    cel_fn_impl impl;
    const char *const *overloads; /* "int,int:int" ... NULL-terminated; NULL = any -> dyn */
    bool strict;                  /* errors in args propagate before calling (all but a few) */
};
/* Look a builtin up by name, call style and argument count (NULL if none). */
const struct cel_func *cel_func_lookup(const char *name, size_t name_len, bool receiver,
                                       uint32_t nargs);
bool cel_func_name_known(const char *name, size_t name_len);

/* ---------- evaluation ---------- */
struct cel_program {
    char *source;
    struct cel_arena arena; /* AST, types, constants */
    struct cel_node *root;
    int nslots;
    size_t nvars;
    char **var_names;
    bool checked;
    bool dra;        /* compiled for the DRA environment (var 0 = device) */
    char *container; /* namespace for name resolution ("com.example"), NULL = none */
};

struct cel_eval {
    const struct cel_program *prog;
    const struct cel_value *vars;
    struct cel_value slots[CEL_MAX_SLOTS];
    struct cel_arena *arena;
    uint64_t cost;
    uint64_t cost_limit;
    bool aborted; /* cost limit or out of memory: stop at once */
    const char *abort_msg;
    /* patterns compiled during this evaluation (matches()/find() with a non-literal pattern) */
    struct {
        const char *pat;
        uint32_t len;
        const void *re;
    } rx[CEL_EVAL_REGEX_CACHE];
    int nrx;
};

/* Error value at a node (message formatted into the arena). */
struct cel_value cel_error(struct cel_eval *ev, const struct cel_node *at, const char *fmt, ...)
    GS_PRINTF(3, 4);
struct cel_value cel_no_overload(struct cel_eval *ev, const struct cel_node *call,
                                 const struct cel_value *args, uint32_t n);
struct cel_value cel_oom(struct cel_eval *ev);
/* Add cost; sets ev->aborted past the limit. Returns false when aborted. */
static inline bool cel_cost(struct cel_eval *ev, uint64_t c)
{
    ev->cost += c;
    if (GS_UNLIKELY(ev->cost > ev->cost_limit)) {
        ev->aborted = true;
        if (!ev->abort_msg)
            ev->abort_msg = "operation cancelled: actual cost limit exceeded";
        return false;
    }
    return true;
}
struct cel_value cel_eval_node(struct cel_eval *ev, const struct cel_node *n);

/* Generic program API (the DRA API in cel.h is built on it; tests and the conformance tool use it).
 * expr: `len` bytes (may contain NUL inside literals). decls: global variables; their types need
 * to live only during the call. check=false skips type checking (unknown variables and functions
 * then become run-time errors). */
struct cel_program *cel_compile_env(const char *expr, size_t len, const struct cel_decl *decls,
                                    size_t ndecls, bool check, struct gs_error *err);
/* Same, resolving names inside `container` first (x in container "a.b": a.b.x, a.x, x). */
struct cel_program *cel_compile_ex(const char *expr, size_t len, const struct cel_decl *decls,
                                   size_t ndecls, bool check, const char *container,
                                   struct gs_error *err);
/* Evaluate with variable values in declaration order. The result may point into `arena`.
 * Returns 0 (result may be an error value: *out kind CEL_K_ERROR), or <0 when evaluation was
 * aborted (cost limit, out of memory) with err set. */
int cel_eval_program(const struct cel_program *p, const struct cel_value *vars,
                     struct cel_arena *arena, uint64_t cost_limit, struct cel_value *out,
                     struct gs_error *err);
/* Format an error value as "<msg> (<input>:L:C)". */
int cel_error_report(const struct cel_program *p, const struct cel_value *e, struct gs_error *err);

/* ---------- type checker ---------- */
int cel_check(struct cel_program *p, const struct cel_decl *decls, size_t ndecls,
              struct gs_error *err);
/* Resolve identifiers/functions without type checking (disable_check). */
int cel_resolve(struct cel_program *p, const struct cel_decl *decls, size_t ndecls,
                struct gs_error *err);

/* ---------- regex (PCRE2) ---------- */
/* Compile an RE2-style pattern (JIT-compiled when `jit`). NULL + message on error. Free with
 * cel_regex_free. */
void *cel_regex_compile(const char *pat, size_t len, bool jit, char *msg, size_t msglen);
/* The compiled pattern for a call during evaluation: the literal compiled by the checker, or one
 * compiled now (cached per evaluation, costed). Returns a null-kind value and sets *re, or an
 * error value. */
struct cel_value cel_regex_for_call(struct cel_eval *ev, const struct cel_node *call,
                                    const struct cel_value *pat, const void **re);
void cel_regex_free(void *re);
/* First match at or after byte `off`: 1 with [*mb, *me) set, 0 none, <0 error. */
int cel_regex_find(const void *re, const char *s, size_t len, size_t off, size_t *mb, size_t *me,
                   struct cel_arena *arena);
/* 1 match, 0 no match, <0 error. Match state is allocated from `arena` (no malloc). */
int cel_regex_search(const void *re, const char *s, size_t len, struct cel_arena *arena);

/* ---------- Kubernetes extensions ---------- */
/* Parse a quantity of `len` bytes. Plain integers with an SI or binary suffix ("15Gi", "100",
 * "4k") take a fast path; everything else goes through gs_quantity_parse(). */
int cel_quantity_parse(const char *s, size_t len, struct gs_quantity *out, struct gs_error *err);
/* Parse a semantic version "1.2.3[-pre][+build]" into the arena. 0 or -EINVAL. */
int cel_semver_parse(struct cel_arena *a, const char *s, size_t len, struct cel_semver **out);
int cel_semver_cmp(const struct cel_semver *a, const struct cel_semver *b);

/* ---------- DRA environment ---------- */
/* Set up the `device` value in views[0] with the attributes/capacity roots in views[1], views[2]
 * (no allocation: the views live in the caller's frame for one evaluation). */
struct cel_value cel_dra_device_init(struct cel_map views[3], const struct cel_device *dev);
int cel_dra_map_get(struct cel_eval *ev, const struct cel_map *m, const struct cel_value *key,
                    struct cel_value *out);
const struct cel_map *cel_dra_map_materialize(struct cel_eval *ev, const struct cel_map *m);
extern const char *const cel_dra_device_fields[]; /* driver attributes capacity allowMultiple... */
const struct cel_type *cel_dra_field_type(const char *name, size_t len);

#endif /* GS_CEL_CEL_INTERNAL_H */
