/* SPDX-License-Identifier: Apache-2.0 */
/* JSON Patch add/remove with JSON Pointer paths. */
#include "webhook/patch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_MAX 512

/* Next reference token of `*p` (after a '/'), unescaped into tok. 1 = token, 0 = end, <0 bad. */
static int next_token(const char **p, char *tok, size_t len)
{
    if (**p == '\0')
        return 0;
    if (**p != '/')
        return -EINVAL;
    (*p)++;
    size_t o = 0;
    for (; **p && **p != '/'; (*p)++) {
        char c = **p;
        if (c == '~') {
            char n = (*p)[1];
            if (n != '0' && n != '1')
                return -EINVAL;
            c = n == '0' ? '~' : '/';
            (*p)++;
        }
        if (o + 1 >= len)
            return -ENAMETOOLONG;
        tok[o++] = c;
    }
    tok[o] = '\0';
    return 1;
}

static bool array_index(const char *tok, size_t size, bool allow_end, size_t *out)
{
    if (allow_end && strcmp(tok, "-") == 0) {
        *out = size;
        return true;
    }
    if (!*tok || (tok[0] == '0' && tok[1]) || strspn(tok, "0123456789") != strlen(tok))
        return false;
    char *end;
    unsigned long long v = strtoull(tok, &end, 10);
    if (v > size || (!allow_end && v == size))
        return false;
    *out = (size_t)v;
    return true;
}

static int apply_one(json_t *doc, const char *op, const char *path, json_t *value)
{
    char tok[TOKEN_MAX], next[TOKEN_MAX];
    const char *p = path;
    json_t *cur = doc;
    int r = next_token(&p, tok, sizeof(tok));
    if (r <= 0)
        return -EINVAL; /* the whole document is never replaced or removed here */
    for (;;) {
        r = next_token(&p, next, sizeof(next));
        if (r < 0)
            return r;
        if (r == 0)
            break;
        size_t idx;
        if (json_is_object(cur))
            cur = json_object_get(cur, tok);
        else if (json_is_array(cur) && array_index(tok, json_array_size(cur), false, &idx))
            cur = json_array_get(cur, idx);
        else
            return -ENOENT;
        if (!cur)
            return -ENOENT;
        memcpy(tok, next, sizeof(tok));
    }
    bool add = strcmp(op, "add") == 0;
    if (!add && strcmp(op, "remove") != 0)
        return -ENOTSUP;
    if (add && !value)
        return -EINVAL;
    if (add && !(value = json_deep_copy(value)))
        return -ENOMEM;
    if (json_is_object(cur)) {
        if (add)
            return json_object_set_new(cur, tok, value) < 0 ? -ENOMEM : 0;
        return json_object_del(cur, tok) < 0 ? -ENOENT : 0;
    }
    size_t idx;
    if (!json_is_array(cur) || !array_index(tok, json_array_size(cur), add, &idx)) {
        if (add)
            json_decref(value);
        return -ENOENT;
    }
    if (add)
        return json_array_insert_new(cur, idx, value) < 0 ? -ENOMEM : 0;
    return json_array_remove(cur, idx) < 0 ? -ENOENT : 0;
}

int wh_json_patch_apply(json_t *doc, const json_t *patch, struct gs_error *err)
{
    size_t i;
    json_t *o;
    if (!json_is_array(patch))
        return gs_error_set(err, -EINVAL, "JSON Patch: not an array");
    json_array_foreach((json_t *)patch, i, o)
    {
        const char *op = json_string_value(json_object_get(o, "op"));
        const char *path = json_string_value(json_object_get(o, "path"));
        if (!op || !path)
            return gs_error_set(err, -EINVAL, "JSON Patch operation %zu: op or path missing", i);
        int r = apply_one(doc, op, path, json_object_get(o, "value"));
        if (r == -ENOTSUP)
            return gs_error_set(err, -EINVAL,
                                "JSON Patch operation %zu: op \"%.16s\" not supported", i, op);
        if (r < 0)
            return gs_error_set(err, -EINVAL, "JSON Patch operation %zu: %s %.200s: %s", i, op,
                                path, r == -ENOENT ? "no such location" : "bad path");
    }
    return 0;
}
