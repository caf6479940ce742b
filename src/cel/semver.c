/* SPDX-License-Identifier: Apache-2.0 */
/* Semantic versions as Kubernetes' CEL semver library (blang/semver, strict SemVer 2.0.0). */
#include <ctype.h>
#include <string.h>

#include "cel/cel-internal.h"

static bool parse_num(const char *s, size_t len, uint64_t *out)
{
    if (!len || (len > 1 && s[0] == '0'))
        return false; /* no leading zeros */
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
            return false;
    }
    *out = v;
    return true;
}

static bool ident_ok(const char *s, size_t len, bool prerelease)
{
    if (!len)
        return false;
    bool numeric = true;
    for (size_t i = 0; i < len; i++) {
        if (!isalnum((unsigned char)s[i]) && s[i] != '-')
            return false;
        if (!isdigit((unsigned char)s[i]))
            numeric = false;
    }
    if (prerelease && numeric && len > 1 && s[0] == '0')
        return false;
    return true;
}

static bool idents_ok(const char *s, size_t len, bool prerelease)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (!ident_ok(s + start, i - start, prerelease))
                return false;
            start = i + 1;
        }
    }
    return true;
}

int cel_semver_parse(struct cel_arena *a, const char *s, size_t len, struct cel_semver **out)
{
    uint64_t parts[3];
    size_t i = 0;
    for (int k = 0; k < 3; k++) {
        size_t start = i;
        while (i < len && isdigit((unsigned char)s[i]))
            i++;
        if (!parse_num(s + start, i - start, &parts[k]))
            return -EINVAL;
        if (k < 2) {
            if (i >= len || s[i] != '.')
                return -EINVAL;
            i++;
        }
    }
    const char *pre = "";
    size_t pre_len = 0;
    if (i < len && s[i] == '-') {
        size_t start = ++i;
        while (i < len && s[i] != '+')
            i++;
        if (!idents_ok(s + start, i - start, true))
            return -EINVAL;
        pre = s + start;
        pre_len = i - start;
    }
    if (i < len && s[i] == '+') {
        i++;
        if (!idents_ok(s + i, len - i, false))
            return -EINVAL;
        i = len;
    }
    if (i != len)
        return -EINVAL;
    struct cel_semver *v = cel_arena_alloc(a, sizeof(*v));
    if (!v)
        return -ENOMEM;
    v->major = parts[0];
    v->minor = parts[1];
    v->patch = parts[2];
    v->pre = pre_len ? cel_arena_strndup(a, pre, pre_len) : "";
    if (!v->pre)
        return -ENOMEM;
    v->pre_len = (uint32_t)pre_len;
    *out = v;
    return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static bool all_digits(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return len > 0;
}

int cel_semver_cmp(const struct cel_semver *a, const struct cel_semver *b)
{
    int c = cmp_u64(a->major, b->major);
    if (!c)
        c = cmp_u64(a->minor, b->minor);
    if (!c)
        c = cmp_u64(a->patch, b->patch);
    if (c)
        return c;
    if (!a->pre_len || !b->pre_len)
        return a->pre_len ? -1 : b->pre_len ? 1 : 0; /* a release is above its pre-releases */
    size_t i = 0, j = 0;
    while (i < a->pre_len && j < b->pre_len) {
        size_t ie = i, je = j;
        while (ie < a->pre_len && a->pre[ie] != '.')
            ie++;
        while (je < b->pre_len && b->pre[je] != '.')
            je++;
        bool an = all_digits(a->pre + i, ie - i), bn = all_digits(b->pre + j, je - j);
        if (an && bn) {
            /* no leading zeros: longer means larger */
            c = ie - i != je - j ? (ie - i < je - j ? -1 : 1)
                                 : memcmp(a->pre + i, b->pre + j, ie - i);
        } else if (an != bn) {
            c = an ? -1 : 1;
        } else {
            size_t la = ie - i, lb = je - j;
            c = memcmp(a->pre + i, b->pre + j, la < lb ? la : lb);
            if (!c)
                c = la < lb ? -1 : la > lb;
        }
        if (c)
            return c < 0 ? -1 : 1;
        i = ie + 1;
        j = je + 1;
    }
    bool a_more = i < a->pre_len, b_more = j < b->pre_len;
    return a_more ? 1 : b_more ? -1 : 0;
}
