/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML -> jansson on libyaml's event parser, with an explicit stack (no recursion on input
 * nesting) and go-yaml v2 scalar resolution (see yaml.h).
 */
#include "config/yaml.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/json.h"
#include "base/macros.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

enum scalar_kind { K_NULL, K_BOOL, K_INT, K_FLOAT, K_STRING };

struct scalar {
    enum scalar_kind kind;
    bool b;
    long long i;
    double d;
};

struct frame {
    json_t *node;     /* object or array being filled */
    json_t *explicit; /* keys written explicitly (mapping only), for duplicate detection */
    char *anchor;
    char *key;          /* pending key (mapping only) */
    bool merge_pending; /* pending key is `<<` */
    yaml_mark_t key_mark;
    size_t nodes_at_start;
};

struct anchor {
    char *name;
    json_t *value;
    size_t nodes;
    int depth;
};

struct loader {
    struct gs_error *err;
    struct frame stack[GS_YAML_MAX_DEPTH];
    int depth;
    struct anchor *anchors;
    size_t n_anchors, cap_anchors;
    size_t nodes;
    json_t *doc;
    bool doc_set;
};

GS_PRINTF(4, 5) static int fail(struct loader *l, yaml_mark_t m, int code, const char *fmt, ...)
{
    char msg[GS_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gs_error_set(l->err, code, "line %zu, column %zu: %s", m.line + 1, m.column + 1, msg);
}

/* ---- scalar resolution (go-yaml v2 rules) -------------------------------------------------- */

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static bool is_float_syntax(const char *s)
{
    /* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    } else {
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9')
                p++;
        }
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

/* strconv.ParseInt(s, 0, 64) on a string without '_': 1 ok, 0 not an integer, -ERANGE. */
static int parse_go_int(const char *s, long long *out)
{
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
        base = 8;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        base = 2;
        p += 2;
    } else if (p[0] == '0' && p[1] != '\0') {
        base = 8;
        p += 1;
    }
    if (*p == '\0')
        return 0;
    unsigned long long v = 0;
    bool overflow = false;
    for (; *p; p++) {
        int dv;
        if (*p >= '0' && *p <= '9')
            dv = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            dv = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            dv = *p - 'A' + 10;
        else
            return 0;
        if (dv >= base)
            return 0;
        if (__builtin_mul_overflow(v, (unsigned long long)base, &v) ||
            __builtin_add_overflow(v, (unsigned long long)dv, &v))
            overflow = true;
    }
    if (overflow)
        return -ERANGE;
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return -ERANGE;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > LLONG_MAX)
            return -ERANGE; /* go-yaml makes it a uint64; JSON integers here are int64 */
        *out = (long long)v;
    }
    return 1;
}

/* Resolve a plain scalar. Returns 0, or -ERANGE / -EDOM (NaN, Inf) for values JSON cannot hold. */
static int resolve_plain(const char *s, struct scalar *out)
{
    static const char *const t_list[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                         "True", "TRUE", "on",  "On",  "ON",  NULL};
    static const char *const f_list[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                         "False", "FALSE", "off", "Off", "OFF", NULL};
    static const char *const null_list[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const special[] = {".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",
                                          ".INF",  "+.inf", "+.Inf", "+.INF", "-.inf",
                                          "-.Inf", "-.INF", NULL};
    *out = (struct scalar){.kind = K_STRING};
    char c = s[0];
    bool hint = c == '\0' || c == '+' || c == '-' || (c >= '0' && c <= '9') ||
                strchr("yYnNtTfFoO~.", c) != NULL;
    if (!hint)
        return 0;
    if (in_list(s, t_list) || in_list(s, f_list)) {
        out->kind = K_BOOL;
        out->b = in_list(s, t_list);
        return 0;
    }
    if (in_list(s, null_list)) {
        out->kind = K_NULL;
        return 0;
    }
    if (in_list(s, special))
        return -EDOM;
    if (c == '.') {
        if (is_float_syntax(s)) {
            out->kind = K_FLOAT;
            out->d = strtod(s, NULL);
        }
        return 0;
    }
    if (!(c == '+' || c == '-' || (c >= '0' && c <= '9')))
        return 0;
    size_t n = strlen(s);
    char *plain = malloc(n + 1);
    if (!plain)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            plain[k++] = s[i];
    plain[k] = '\0';
    long long iv;
    int r = parse_go_int(plain, &iv);
    if (r == 1) {
        out->kind = K_INT;
        out->i = iv;
        free(plain);
        return 0;
    }
    if (is_float_syntax(plain)) {
        double d = strtod(plain, NULL);
        if (!isinf(d)) { /* Go's ParseFloat fails on overflow: the scalar stays a string */
            out->kind = K_FLOAT;
            out->d = d;
            free(plain);
            return 0;
        }
    }
    free(plain);
    return r == -ERANGE ? -ERANGE : 0;
}

static json_t *scalar_to_json(const struct scalar *sc, const char *text, size_t len)
{
    switch (sc->kind) {
    case K_NULL:
        return json_null();
    case K_BOOL:
        return json_boolean(sc->b);
    case K_INT:
        return json_integer(sc->i);
    case K_FLOAT:
        /* YAML -> JSON text -> decode makes an integral float an integer ("30.0" -> 30). */
        if (sc->d == floor(sc->d) && fabs(sc->d) < 9007199254740992.0)
            return json_integer((json_int_t)sc->d);
        return json_real(sc->d);
    case K_STRING:
    default:
        return json_stringn(text, len);
    }
}

static bool is_std_tag(const char *tag, const char *name)
{
    return tag && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0 &&
           strcmp(tag + strlen(TAG_PREFIX), name) == 0;
}

/* Resolve a scalar event into *sc. */
static int resolve_event(struct loader *l, const yaml_event_t *ev, struct scalar *sc)
{
    const char *text = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;
    size_t len = ev->data.scalar.length;
    if (memchr(text, '\0', len))
        return fail(l, ev->start_mark, -EINVAL, "%s", "string contains a NUL character");
    bool plain = ev->data.scalar.plain_implicit;
    const char *want = NULL;
    if (tag && strcmp(tag, "!") != 0) {
        if (is_std_tag(tag, "int") || is_std_tag(tag, "float") || is_std_tag(tag, "bool") ||
            is_std_tag(tag, "null"))
            want = tag + strlen(TAG_PREFIX);
        plain = want != NULL; /* !!str, !!binary and unknown tags: the text as a string */
    } else if (tag) {
        plain = false; /* the non-specific "!" tag forces a string */
    }
    *sc = (struct scalar){.kind = K_STRING};
    if (!plain)
        return 0;
    int r = resolve_plain(text, sc);
    if (r == -EDOM)
        return fail(l, ev->start_mark, -EINVAL, "%s cannot be represented in JSON", text);
    if (r == -ERANGE)
        return fail(l, ev->start_mark, -ERANGE, "integer %s is out of range", text);
    if (r < 0)
        return fail(l, ev->start_mark, r, "%s", "out of memory");
    if (want) {
        bool okk = (strcmp(want, "int") == 0 && sc->kind == K_INT) ||
                   (strcmp(want, "float") == 0 && (sc->kind == K_FLOAT || sc->kind == K_INT)) ||
                   (strcmp(want, "bool") == 0 && sc->kind == K_BOOL) ||
                   (strcmp(want, "null") == 0 && sc->kind == K_NULL);
        if (!okk)
            return fail(l, ev->start_mark, -EINVAL, "cannot decode `%s` with the tag given", text);
        if (strcmp(want, "float") == 0 && sc->kind == K_INT) {
            sc->kind = K_FLOAT;
            sc->d = (double)sc->i;
        }
    }
    return 0;
}

/* Text of a mapping key (go: string as is, numbers and booleans formatted). */
static int key_text(struct loader *l, yaml_mark_t m, const json_t *v, char **out)
{
    char buf[64];
    const char *s = buf;
    switch (json_typeof(v)) {
    case JSON_STRING:
        s = json_string_value(v);
        break;
    case JSON_INTEGER:
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL: {
        double d = json_real_value(v);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof(buf), "%.*g", prec, d);
            if (strtod(buf, NULL) == d)
                break;
        }
        break;
    }
    case JSON_TRUE:
        s = "true";
        break;
    case JSON_FALSE:
        s = "false";
        break;
    case JSON_NULL:
        return fail(l, m, -EINVAL, "%s", "null mapping key");
    default:
        return fail(l, m, -EINVAL, "mapping key must be a scalar, got %s", gs_json_type_name(v));
    }
    *out = strdup(s);
    return *out ? 0 : fail(l, m, -ENOMEM, "%s", "out of memory");
}

/* ---- tree building ------------------------------------------------------------------------ */

static void count_tree(const json_t *v, int depth, size_t *nodes, int *max_depth)
{
    (*nodes)++;
    if (depth > *max_depth)
        *max_depth = depth;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) count_tree(c, depth + 1, nodes, max_depth);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) count_tree(c, depth + 1, nodes, max_depth);
    }
}

static int add_anchor(struct loader *l, yaml_mark_t m, const char *name, json_t *value)
{
    size_t nodes = 0;
    int d = 0;
    count_tree(value, 0, &nodes, &d);
    for (size_t i = 0; i < l->n_anchors; i++) {
        if (strcmp(l->anchors[i].name, name) == 0) {
            json_decref(l->anchors[i].value);
            l->anchors[i].value = json_incref(value);
            l->anchors[i].nodes = nodes;
            l->anchors[i].depth = d;
            return 0;
        }
    }
    if (l->n_anchors == l->cap_anchors) {
        size_t cap = l->cap_anchors ? l->cap_anchors * 2 : 16;
        struct anchor *na = realloc(l->anchors, cap * sizeof(*na));
        if (!na)
            return fail(l, m, -ENOMEM, "%s", "out of memory");
        l->anchors = na;
        l->cap_anchors = cap;
    }
    char *nm = strdup(name);
    if (!nm)
        return fail(l, m, -ENOMEM, "%s", "out of memory");
    l->anchors[l->n_anchors++] =
        (struct anchor){.name = nm, .value = json_incref(value), .nodes = nodes, .depth = d};
    return 0;
}

static void clear_anchors(struct loader *l)
{
    for (size_t i = 0; i < l->n_anchors; i++) {
        free(l->anchors[i].name);
        json_decref(l->anchors[i].value);
    }
    l->n_anchors = 0;
}

static int count_node(struct loader *l, yaml_mark_t m, size_t n)
{
    l->nodes += n;
    if (l->nodes > GS_YAML_MAX_NODES)
        return fail(l, m, -E2BIG, "more than %s nodes (after expanding aliases)", "1000000");
    return 0;
}

/* Merge `src` (a mapping, or a sequence of mappings where earlier ones win) into `dst`. */
static int merge_into(struct loader *l, yaml_mark_t m, json_t *dst, json_t *src)
{
    if (json_is_object(src)) {
        json_object_update(dst, src);
        return 0;
    }
    if (json_is_array(src)) {
        for (size_t i = json_array_size(src); i-- > 0;) {
            json_t *e = json_array_get(src, i);
            if (!json_is_object(e))
                return fail(l, m, -EINVAL, "%s", "merge key << needs mappings");
            json_object_update(dst, e);
        }
        return 0;
    }
    return fail(l, m, -EINVAL, "%s", "merge key << needs a mapping or a list of mappings");
}

/* Place a finished value (steals the reference) into its parent or as the document root. */
static int place(struct loader *l, yaml_mark_t m, json_t *v)
{
    if (!v)
        return fail(l, m, -ENOMEM, "%s", "out of memory");
    if (l->depth == 0) {
        l->doc = v;
        l->doc_set = true;
        return 0;
    }
    struct frame *f = &l->stack[l->depth - 1];
    if (json_is_array(f->node)) {
        if (json_array_append_new(f->node, v) < 0)
            return fail(l, m, -ENOMEM, "%s", "out of memory");
        return 0;
    }
    if (!f->key && !f->merge_pending) {
        char *k = NULL;
        int r = key_text(l, m, v, &k);
        json_decref(v);
        if (r < 0)
            return r;
        f->key = k;
        f->key_mark = m;
        return 0;
    }
    int r = 0;
    if (f->merge_pending) {
        r = merge_into(l, m, f->node, v);
        json_decref(v);
        f->merge_pending = false;
        return r;
    }
    if (json_object_get(f->explicit, f->key)) {
        r = fail(l, f->key_mark, -EINVAL, "duplicate mapping key \"%s\"", f->key);
        json_decref(v);
    } else if (json_object_set_new(f->node, f->key, v) < 0 ||
               json_object_set_new(f->explicit, f->key, json_true()) < 0) {
        r = fail(l, m, -EINVAL, "invalid mapping key \"%s\"", f->key);
    }
    free(f->key);
    f->key = NULL;
    return r;
}

static int push(struct loader *l, yaml_mark_t m, json_t *node, const yaml_char_t *anchor)
{
    if (!node)
        return fail(l, m, -ENOMEM, "%s", "out of memory");
    if (l->depth >= GS_YAML_MAX_DEPTH) {
        json_decref(node);
        return fail(l, m, -E2BIG, "nesting deeper than %s levels", "256");
    }
    struct frame *f = &l->stack[l->depth];
    *f = (struct frame){.node = node, .nodes_at_start = l->nodes};
    if (json_is_object(node)) {
        f->explicit = json_object();
        if (!f->explicit) {
            json_decref(node);
            return fail(l, m, -ENOMEM, "%s", "out of memory");
        }
    }
    if (anchor) {
        f->anchor = strdup((const char *)anchor);
        if (!f->anchor) {
            json_decref(node);
            json_decref(f->explicit);
            return fail(l, m, -ENOMEM, "%s", "out of memory");
        }
    }
    l->depth++;
    return 0;
}

static int pop(struct loader *l, yaml_mark_t m)
{
    struct frame f = l->stack[--l->depth];
    json_decref(f.explicit);
    int r = 0;
    if (f.key || f.merge_pending) /* cannot happen with a well-formed event stream */
        r = fail(l, m, -EINVAL, "%s", "mapping key without a value");
    free(f.key);
    if (r == 0 && f.anchor)
        r = add_anchor(l, m, f.anchor, f.node);
    free(f.anchor);
    if (r < 0) {
        json_decref(f.node);
        return r;
    }
    return place(l, m, f.node);
}

static bool key_position(const struct loader *l)
{
    if (l->depth == 0)
        return false;
    const struct frame *f = &l->stack[l->depth - 1];
    return json_is_object(f->node) && !f->key && !f->merge_pending;
}

static int on_scalar(struct loader *l, const yaml_event_t *ev)
{
    int r = count_node(l, ev->start_mark, 1);
    if (r < 0)
        return r;
    const char *text = (const char *)ev->data.scalar.value;
    if (key_position(l) && ev->data.scalar.plain_implicit && !ev->data.scalar.tag &&
        strcmp(text, "<<") == 0) {
        l->stack[l->depth - 1].merge_pending = true;
        return 0;
    }
    struct scalar sc = {.kind = K_STRING};
    r = resolve_event(l, ev, &sc);
    if (r < 0)
        return r;
    json_t *v = scalar_to_json(&sc, text, ev->data.scalar.length);
    if (!v)
        return fail(l, ev->start_mark, -EINVAL, "%s", "string is not valid UTF-8");
    if (ev->data.scalar.anchor) {
        r = add_anchor(l, ev->start_mark, (const char *)ev->data.scalar.anchor, v);
        if (r < 0) {
            json_decref(v);
            return r;
        }
    }
    return place(l, ev->start_mark, v);
}

static int on_alias(struct loader *l, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    for (size_t i = l->n_anchors; i-- > 0;) {
        struct anchor *a = &l->anchors[i];
        if (strcmp(a->name, name) != 0)
            continue;
        int r = count_node(l, ev->start_mark, a->nodes);
        if (r < 0)
            return r;
        if (l->depth + a->depth >= GS_YAML_MAX_DEPTH)
            return fail(l, ev->start_mark, -E2BIG, "nesting deeper than %s levels", "256");
        if (key_position(l)) /* an alias used as a key: only scalars make sense */
            return place(l, ev->start_mark, json_incref(a->value));
        return place(l, ev->start_mark, json_deep_copy(a->value));
    }
    return fail(l, ev->start_mark, -EINVAL, "unknown anchor \"%s\"", name);
}

static void loader_reset_stack(struct loader *l)
{
    while (l->depth > 0) {
        struct frame *f = &l->stack[--l->depth];
        json_decref(f->node);
        json_decref(f->explicit);
        free(f->anchor);
        free(f->key);
    }
}

static int load_yaml(const char *text, size_t len, json_t *docs, struct gs_error *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return gs_error_set(err, -ENOMEM, "YAML parser: out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    struct loader *l = calloc(1, sizeof(*l));
    if (!l) {
        yaml_parser_delete(&parser);
        return gs_error_set(err, -ENOMEM, "YAML parser: out of memory");
    }
    l->err = err;
    int r = 0;
    bool done = false;
    while (!done && r == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            yaml_mark_t m = parser.problem_mark;
            if (parser.context)
                r = gs_error_set(err, -EINVAL, "line %zu, column %zu: %s %s", m.line + 1,
                                 m.column + 1, parser.problem ? parser.problem : "syntax error",
                                 parser.context);
            else
                r = gs_error_set(err, -EINVAL, "line %zu, column %zu: %s", m.line + 1, m.column + 1,
                                 parser.problem ? parser.problem : "syntax error");
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            l->doc = NULL;
            l->doc_set = false;
            break;
        case YAML_DOCUMENT_END_EVENT:
            if (l->doc_set && !json_is_null(l->doc)) {
                if (json_array_append_new(docs, l->doc) < 0)
                    r = gs_error_set(err, -ENOMEM, "YAML: out of memory");
            } else {
                json_decref(l->doc);
            }
            l->doc = NULL;
            l->doc_set = false;
            clear_anchors(l);
            break;
        case YAML_SCALAR_EVENT:
            r = on_scalar(l, &ev);
            break;
        case YAML_ALIAS_EVENT:
            r = on_alias(l, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
            r = count_node(l, ev.start_mark, 1);
            if (r == 0)
                r = push(l, ev.start_mark, json_array(), ev.data.sequence_start.anchor);
            break;
        case YAML_MAPPING_START_EVENT:
            r = count_node(l, ev.start_mark, 1);
            if (r == 0)
                r = push(l, ev.start_mark, json_object(), ev.data.mapping_start.anchor);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            r = pop(l, ev.start_mark);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    loader_reset_stack(l);
    if (r < 0)
        json_decref(l->doc);
    clear_anchors(l);
    free(l->anchors);
    free(l);
    yaml_parser_delete(&parser);
    return r;
}

/* A whitespace-separated stream of JSON values. */
static int load_json_stream(const char *text, size_t len, json_t *docs, struct gs_error *err)
{
    size_t pos = 0;
    while (pos < len) {
        while (pos < len && strchr(" \t\r\n", text[pos]) && text[pos] != '\0')
            pos++;
        if (pos >= len)
            break;
        json_error_t jerr;
        json_t *v =
            json_loadb(text + pos, len - pos,
                       JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK, &jerr);
        if (!v)
            return gs_error_set(err, -EINVAL, "invalid JSON at line %d, column %d: %s", jerr.line,
                                jerr.column, jerr.text);
        if (json_is_null(v))
            json_decref(v);
        else if (json_array_append_new(docs, v) < 0)
            return gs_error_set(err, -ENOMEM, "JSON: out of memory");
        if (jerr.position <= 0)
            return gs_error_set(err, -EINVAL, "invalid JSON stream");
        pos += (size_t)jerr.position;
    }
    return 0;
}

int gs_yaml_load_documents(const char *text, size_t len, json_t **out_docs, struct gs_error *err)
{
    *out_docs = NULL;
    if (!text && len)
        return gs_error_set(err, -EINVAL, "YAML: no text");
    if (!text)
        text = "";
    _cleanup_(gs_json_decrefp) json_t *docs = json_array();
    if (!docs)
        return gs_error_set(err, -ENOMEM, "YAML: out of memory");
    size_t i = 0;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && strchr(" \t\r\n", text[i]) && text[i] != '\0')
        i++;
    if (i < len && (text[i] == '{' || text[i] == '[')) {
        struct gs_error jerr = {0};
        int r = load_json_stream(text + i, len - i, docs, &jerr);
        if (r == 0) {
            *out_docs = TAKE_PTR(docs);
            return 0;
        }
        json_array_clear(docs);
        if (load_yaml(text, len, docs, NULL) == 0) {
            *out_docs = TAKE_PTR(docs);
            return 0;
        }
        if (err)
            *err = jerr;
        return r;
    }
    int r = load_yaml(text, len, docs, err);
    if (r < 0)
        return r;
    *out_docs = TAKE_PTR(docs);
    return 0;
}

int gs_yaml_load_one(const char *text, size_t len, json_t **out_doc, struct gs_error *err)
{
    *out_doc = NULL;
    _cleanup_(gs_json_decrefp) json_t *docs = NULL;
    int r = gs_yaml_load_documents(text, len, &docs, err);
    if (r < 0)
        return r;
    if (json_array_size(docs) != 1)
        return gs_error_set(err, -EINVAL, "expected exactly one document, found %zu",
                            json_array_size(docs));
    *out_doc = json_incref(json_array_get(docs, 0));
    return 0;
}

/* ---- emitter (JSON scalars are valid YAML; keys plain when safe) ----------------------------- */

static bool plain_key(const char *k)
{
    if (!*k || strchr("-?:,[]{}#&*!|>'\"%@`0123456789 ", k[0]))
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("._/-", *p)))
            return false;
    static const char *const words[] = {"true", "false", "null", "yes",   "no",   "on",  "off",
                                        "y",    "n",     "True", "False", "Null", "Yes", "No",
                                        "On",   "Off",   "TRUE", "FALSE", "NULL", "YES", "NO",
                                        "ON",   "OFF",   "Y",    "N",     "~"};
    for (size_t i = 0; i < GS_ARRAY_SIZE(words); i++)
        if (strcmp(k, words[i]) == 0)
            return false;
    return true;
}

static void yaml_scalar(FILE *out, const json_t *v)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY);
    fputs(s ? s : "null", out);
    free(s);
}

static void yaml_key(FILE *out, const char *k)
{
    if (plain_key(k))
        fputs(k, out);
    else {
        json_t *s = json_string(k);
        yaml_scalar(out, s);
        json_decref(s);
    }
}

static bool is_collection(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

static void yaml_value(FILE *out, const json_t *v, int indent);

static void yaml_object(FILE *out, const json_t *v, int indent, bool first_inline)
{
    const char *k;
    json_t *x;
    bool first = true;
    json_object_foreach((json_t *)v, k, x)
    {
        if (!(first && first_inline))
            fprintf(out, "%*s", indent, "");
        first = false;
        yaml_key(out, k);
        fputc(':', out);
        if (is_collection(x)) {
            fputc('\n', out);
            yaml_value(out, x, json_is_array(x) ? indent : indent + 2);
        } else {
            fputc(' ', out);
            yaml_scalar(out, x);
            fputc('\n', out);
        }
    }
}

static void yaml_value(FILE *out, const json_t *v, int indent)
{
    if (json_is_object(v) && json_object_size(v)) {
        yaml_object(out, v, indent, false);
        return;
    }
    if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x)
        {
            fprintf(out, "%*s- ", indent, "");
            if (json_is_object(x) && json_object_size(x))
                yaml_object(out, x, indent + 2, true);
            else if (json_is_array(x) && json_array_size(x)) {
                fputc('\n', out);
                yaml_value(out, x, indent + 2);
            } else {
                yaml_scalar(out, x);
                fputc('\n', out);
            }
        }
        return;
    }
    fprintf(out, "%*s", indent, "");
    yaml_scalar(out, v);
    fputc('\n', out);
}

void gs_yaml_dumpf(FILE *out, const json_t *v)
{
    yaml_value(out, v, 0);
}

char *gs_yaml_dumps(const json_t *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    gs_yaml_dumpf(f, v);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
