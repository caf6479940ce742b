/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Line-oriented front end to the CEL library for the conformance runner (conformance.py).
 * Each stdin line is a JSON request:
 *   {"expr": "...", "check": true, "decls": [{"name": "x", "type": "map(string,int)"}],
 *    "bindings": {"x": <typed value>}, "container": "com.example"}
 * and each stdout line the answer: {"value": <typed value>} or {"error": "...", "phase": "compile"|
 * "eval"}. Typed values: {"int": "12"} {"uint": "12"} {"double": 1.5 | "NaN" | "Infinity" |
 * "-Infinity"} {"string": "s"} {"bytes": "<hex>"} {"bool": true} {"null": null} {"list": [...]}
 * {"map": [[k, v], ...]} {"type": "int"} {"quantity": "1Gi"} {"semver": "1.2.3"}.
 */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "cel/cel-internal.h"

#define LINE_MAX_BYTES (1u << 20)
#define MAX_DECLS      32

static int to_value(struct cel_arena *a, const json_t *j, struct cel_value *out, char *why,
                    size_t whylen);

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int to_value(struct cel_arena *a, const json_t *j, struct cel_value *out, char *why,
                    size_t whylen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(j) || json_object_size(j) != 1) {
        snprintf(why, whylen, "typed value must be an object with one key");
        return -EINVAL;
    }
    json_object_foreach((json_t *)j, k, v)
    {
        if (!strcmp(k, "int") && json_is_string(v)) {
            *out = cel_int(strtoll(json_string_value(v), NULL, 10));
        } else if (!strcmp(k, "uint") && json_is_string(v)) {
            *out = cel_uint(strtoull(json_string_value(v), NULL, 10));
        } else if (!strcmp(k, "double")) {
            if (json_is_number(v))
                *out = cel_double(json_number_value(v));
            else if (json_is_string(v))
                *out = cel_double(strtod(json_string_value(v), NULL));
            else
                return -EINVAL;
        } else if (!strcmp(k, "string") && json_is_string(v)) {
            *out = cel_str(json_string_value(v), json_string_length(v));
        } else if (!strcmp(k, "bytes") && json_is_string(v)) {
            size_t n = json_string_length(v) / 2;
            char *b = cel_arena_alloc(a, n + 1);
            const char *h = json_string_value(v);
            if (!b)
                return -ENOMEM;
            for (size_t i = 0; i < n; i++)
                b[i] = (char)(hexval(h[2 * i]) * 16 + hexval(h[2 * i + 1]));
            *out = cel_bytes(b, n);
        } else if (!strcmp(k, "bool") && json_is_boolean(v)) {
            *out = cel_bool(json_is_true(v));
        } else if (!strcmp(k, "null")) {
            *out = cel_null();
        } else if (!strcmp(k, "list") && json_is_array(v)) {
            size_t n = json_array_size(v);
            struct cel_list *l = cel_arena_alloc(a, sizeof(*l));
            struct cel_value *items = cel_arena_alloc(a, sizeof(*items) * (n ? n : 1));
            if (!l || !items)
                return -ENOMEM;
            for (size_t i = 0; i < n; i++)
                if (to_value(a, json_array_get(v, i), &items[i], why, whylen) < 0)
                    return -EINVAL;
            l->n = n;
            l->items = items;
            *out = (struct cel_value){.kind = CEL_K_LIST, .list = l};
        } else if (!strcmp(k, "map") && json_is_array(v)) {
            size_t n = json_array_size(v);
            struct cel_map *m = cel_arena_alloc(a, sizeof(*m));
            struct cel_value *keys = cel_arena_alloc(a, sizeof(*keys) * (n ? n : 1));
            struct cel_value *vals = cel_arena_alloc(a, sizeof(*vals) * (n ? n : 1));
            if (!m || !keys || !vals)
                return -ENOMEM;
            memset(m, 0, sizeof(*m));
            for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(v, i);
                if (to_value(a, json_array_get(e, 0), &keys[i], why, whylen) < 0 ||
                    to_value(a, json_array_get(e, 1), &vals[i], why, whylen) < 0)
                    return -EINVAL;
            }
            m->n = n;
            m->keys = keys;
            m->vals = vals;
            *out = (struct cel_value){.kind = CEL_K_MAP, .map = m};
        } else {
            snprintf(why, whylen, "unsupported typed value '%s'", k);
            return -EINVAL;
        }
    }
    return 0;
}

static json_t *from_value(const struct cel_value *v)
{
    char buf[64];
    switch (v->kind) {
    case CEL_K_NULL:
        return json_pack("{s:n}", "null");
    case CEL_K_BOOL:
        return json_pack("{s:b}", "bool", v->b);
    case CEL_K_INT:
        snprintf(buf, sizeof(buf), "%lld", (long long)v->i);
        return json_pack("{s:s}", "int", buf);
    case CEL_K_UINT:
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v->u);
        return json_pack("{s:s}", "uint", buf);
    case CEL_K_DOUBLE:
        if (isnan(v->d))
            return json_pack("{s:s}", "double", "NaN");
        if (isinf(v->d))
            return json_pack("{s:s}", "double", v->d > 0 ? "Infinity" : "-Infinity");
        return json_pack("{s:f}", "double", v->d);
    case CEL_K_STRING:
        return json_pack("{s:s%}", "string", v->s, (size_t)v->len);
    case CEL_K_BYTES: {
        char *hex = malloc((size_t)v->len * 2 + 1);
        if (!hex)
            return NULL;
        for (uint32_t i = 0; i < v->len; i++)
            snprintf(hex + 2 * i, 3, "%02x", (unsigned char)v->s[i]);
        hex[2 * v->len] = '\0';
        json_t *j = json_pack("{s:s}", "bytes", hex);
        free(hex);
        return j;
    }
    case CEL_K_TYPE:
        return json_pack("{s:s}", "type", cel_kind_name(v->type_kind));
    case CEL_K_LIST: {
        json_t *arr = json_array();
        for (size_t i = 0; i < v->list->n; i++)
            json_array_append_new(arr, from_value(&v->list->items[i]));
        return json_pack("{s:o}", "list", arr);
    }
    case CEL_K_MAP: {
        json_t *arr = json_array();
        for (size_t i = 0; i < v->map->n; i++)
            json_array_append_new(
                arr, json_pack("[oo]", from_value(&v->map->keys[i]), from_value(&v->map->vals[i])));
        return json_pack("{s:o}", "map", arr);
    }
    case CEL_K_QUANTITY:
        gs_quantity_format(&v->q, buf, sizeof(buf));
        return json_pack("{s:s}", "quantity", buf);
    case CEL_K_SEMVER:
        snprintf(buf, sizeof(buf), "%llu.%llu.%llu", (unsigned long long)v->semver->major,
                 (unsigned long long)v->semver->minor, (unsigned long long)v->semver->patch);
        return json_pack("{s:s}", "semver", buf);
    default:
        return json_pack("{s:s}", "error", "unprintable value");
    }
}

static json_t *handle(const json_t *req)
{
    const char *expr = json_string_value(json_object_get(req, "expr"));
    bool check = json_is_true(json_object_get(req, "check"));
    json_t *decls_j = json_object_get(req, "decls");
    json_t *bind_j = json_object_get(req, "bindings");
    if (!expr)
        return json_pack("{s:s,s:s}", "error", "request without expr", "phase", "tool");
    struct cel_arena arena;
    cel_arena_init(&arena, NULL, 0);
    struct cel_decl decls[MAX_DECLS];
    size_t nd = 0;
    json_t *resp = NULL;
    for (size_t i = 0; i < json_array_size(decls_j) && nd < MAX_DECLS; i++) {
        json_t *d = json_array_get(decls_j, i);
        const char *name = json_string_value(json_object_get(d, "name"));
        const char *type = json_string_value(json_object_get(d, "type"));
        const struct cel_type *t = type ? cel_type_parse(&arena, type) : &cel_type_dyn;
        if (!name || !t) {
            resp = json_pack("{s:s,s:s}", "error", "bad declaration", "phase", "tool");
            goto out;
        }
        decls[nd++] = (struct cel_decl){name, t};
    }
    /* bindings without a declaration are declared dyn */
    const char *bk;
    json_t *bv;
    json_object_foreach(bind_j, bk, bv)
    {
        bool declared = false;
        for (size_t i = 0; i < nd; i++)
            declared = declared || !strcmp(decls[i].name, bk);
        if (!declared && nd < MAX_DECLS)
            decls[nd++] = (struct cel_decl){bk, &cel_type_dyn};
    }
    struct gs_error err = {0};
    size_t len = json_string_length(json_object_get(req, "expr"));
    const char *container = json_string_value(json_object_get(req, "container"));
    struct cel_program *p = cel_compile_ex(expr, len, decls, nd, check, container, &err);
    if (!p) {
        resp = json_pack("{s:s,s:s}", "error", err.msg, "phase", "compile");
        goto out;
    }
    struct cel_value vars[MAX_DECLS];
    for (size_t i = 0; i < nd; i++) {
        json_t *b = json_object_get(bind_j, decls[i].name);
        char why[128] = "";
        if (!b) {
            vars[i] = (struct cel_value){.kind = CEL_K_ERROR,
                                         .err = {.msg = "no value bound for variable", .pos = -1}};
            continue;
        }
        if (to_value(&arena, b, &vars[i], why, sizeof(why)) < 0) {
            resp = json_pack("{s:s,s:s}", "error", why[0] ? why : "bad binding", "phase", "tool");
            cel_program_free(p);
            goto out;
        }
    }
    struct cel_value res;
    int r = cel_eval_program(p, vars, &arena, CEL_COST_LIMIT, &res, &err);
    if (r < 0)
        resp = json_pack("{s:s,s:s}", "error", err.msg, "phase", "eval");
    else if (res.kind == CEL_K_ERROR) {
        cel_error_report(p, &res, &err);
        resp = json_pack("{s:s,s:s}", "error", err.msg, "phase", "eval");
    } else {
        resp = json_pack("{s:o}", "value", from_value(&res));
    }
    cel_program_free(p);
out:
    cel_arena_fini(&arena);
    return resp;
}

int main(void)
{
    char *line = malloc(LINE_MAX_BYTES);
    if (!line)
        return 1;
    while (fgets(line, LINE_MAX_BYTES, stdin)) {
        json_error_t jerr;
        json_t *req = json_loads(line, JSON_ALLOW_NUL, &jerr);
        json_t *resp =
            req ? handle(req) : json_pack("{s:s,s:s}", "error", jerr.text, "phase", "tool");
        char *out = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
        printf("%s\n", out ? out : "{\"error\":\"no response\",\"phase\":\"tool\"}");
        fflush(stdout);
        free(out);
        json_decref(resp);
        json_decref(req);
    }
    free(line);
    return 0;
}
