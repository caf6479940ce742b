/* SPDX-License-Identifier: Apache-2.0 */
/*
 * String functions: contains/startsWith/endsWith/matches (standard library) and the cel-go
 * strings extension that Kubernetes enables: lowerAscii, upperAscii, split, join, replace, trim,
 * indexOf, lastIndexOf, substring, charAt. Indexes count code points, as upstream.
 */
#include <string.h>

#include "cel/cel-internal.h"
#include "cel/functions.h"

#define NO_OVERLOAD() cel_no_overload(ev, call, a, n)

/* True if the n arguments have exactly the first n of the nkinds kinds (n > nkinds: false). */
static bool all_kinds(const struct cel_value *a, uint32_t n, const uint8_t *kinds, size_t nkinds)
{
    if (n > nkinds)
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (a[i].kind != kinds[i])
            return false;
    return true;
}
/* Expands to two arguments of all_kinds: the kinds and their count. */
#define KINDS(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})
#define S          CEL_K_STRING
#define I          CEL_K_INT

static bool str_cost(struct cel_eval *ev, size_t len)
{
    return cel_cost(ev, len / 10 + 1);
}

/* Byte length of the UTF-8 sequence starting with c. */
static size_t u8len(unsigned char c)
{
    return c < 0x80             ? 1
           : (c & 0xE0) == 0xC0 ? 2
           : (c & 0xF0) == 0xE0 ? 3
           : (c & 0xF8) == 0xF0 ? 4
                                : 1;
}

/* Byte offset of code point index k (k may equal the count: end of string); -1 out of range. */
static int64_t cp_offset(const char *s, size_t len, int64_t k)
{
    if (k < 0)
        return -1;
    size_t off = 0;
    for (int64_t i = 0; i < k; i++) {
        if (off >= len)
            return -1;
        off += u8len((unsigned char)s[off]);
    }
    return off > len ? -1 : (int64_t)off;
}

static int64_t cp_index_of_offset(const char *s, size_t off)
{
    int64_t k = 0;
    for (size_t i = 0; i < off; i += u8len((unsigned char)s[i]))
        k++;
    return k;
}

static struct cel_value mkstr(struct cel_eval *ev, const char *s, size_t len)
{
    char *p = cel_arena_strndup(ev->arena, s, len);
    if (!p)
        return cel_oom(ev);
    return cel_str(p, len);
}

static struct cel_value fn_contains(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, 2, KINDS(S, S)))
        return NO_OVERLOAD();
    if (!str_cost(ev, a[0].len))
        return cel_oom(ev);
    if (!a[1].len)
        return cel_bool(true);
    return cel_bool(memmem(a[0].s, a[0].len, a[1].s, a[1].len) != NULL);
}

static struct cel_value fn_starts(struct cel_eval *ev, const struct cel_node *call,
                                  struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, 2, KINDS(S, S)))
        return NO_OVERLOAD();
    return cel_bool(a[1].len <= a[0].len && !memcmp(a[0].s, a[1].s, a[1].len));
}

static struct cel_value fn_ends(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, 2, KINDS(S, S)))
        return NO_OVERLOAD();
    return cel_bool(a[1].len <= a[0].len &&
                    !memcmp(a[0].s + a[0].len - a[1].len, a[1].s, a[1].len));
}

static struct cel_value fn_matches(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, 2, KINDS(S, S)))
        return NO_OVERLOAD();
    if (!cel_cost(ev, a[0].len + 1))
        return cel_oom(ev);
    const void *re;
    struct cel_value rerr = cel_regex_for_call(ev, call, &a[1], &re);
    if (rerr.kind != CEL_K_NULL)
        return rerr;
    int r = cel_regex_search(re, a[0].s, a[0].len, ev->arena);
    if (r < 0)
        return cel_error(ev, call, "regular expression match failed");
    return cel_bool(r == 1);
}

static struct cel_value fn_case(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != S)
        return NO_OVERLOAD();
    if (!str_cost(ev, a[0].len))
        return cel_oom(ev);
    bool upper = call->name[0] == 'u';
    char *p = cel_arena_alloc(ev->arena, a[0].len + 1);
    if (!p)
        return cel_oom(ev);
    for (uint32_t i = 0; i < a[0].len; i++) {
        char c = a[0].s[i];
        if (upper && c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        else if (!upper && c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        p[i] = c;
    }
    return cel_str(p, a[0].len);
}

static struct cel_value make_list(struct cel_eval *ev, struct cel_value *items, size_t cnt)
{
    struct cel_list *l = cel_arena_alloc(ev->arena, sizeof(*l));
    if (!l)
        return cel_oom(ev);
    l->n = cnt;
    l->items = items;
    return (struct cel_value){.kind = CEL_K_LIST, .list = l};
}

static struct cel_value fn_split(struct cel_eval *ev, const struct cel_node *call,
                                 struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, n, KINDS(S, S, I)))
        return NO_OVERLOAD();
    int64_t limit = n == 3 ? a[2].i : -1;
    const char *s = a[0].s, *sep = a[1].s;
    size_t len = a[0].len, seplen = a[1].len;
    if (!str_cost(ev, len))
        return cel_oom(ev);
    if (limit == 0)
        return make_list(ev, NULL, 0);
    size_t cap = len + 2;
    struct cel_value *items = cel_arena_alloc(ev->arena, sizeof(*items) * cap);
    if (!items)
        return cel_oom(ev);
    size_t cnt = 0, off = 0;
    if (!seplen) {
        while (off < len && (limit < 0 || (int64_t)cnt < limit - 1)) {
            size_t l = u8len((unsigned char)s[off]);
            if (off + l > len)
                l = len - off;
            items[cnt++] = cel_str(s + off, l);
            off += l;
        }
        if (off < len)
            items[cnt++] = cel_str(s + off, len - off);
        return make_list(ev, items, cnt);
    }
    while (limit < 0 || (int64_t)cnt < limit - 1) {
        const char *hit = memmem(s + off, len - off, sep, seplen);
        if (!hit)
            break;
        items[cnt++] = cel_str(s + off, (size_t)(hit - (s + off)));
        off = (size_t)(hit - s) + seplen;
    }
    items[cnt++] = cel_str(s + off, len - off);
    return make_list(ev, items, cnt);
}

static struct cel_value fn_join(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != CEL_K_LIST || (n == 2 && a[1].kind != S))
        return NO_OVERLOAD();
    const struct cel_list *l = a[0].list;
    size_t seplen = n == 2 ? a[1].len : 0, total = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].kind != S)
            return cel_error(ev, call, "join: list element %zu is %s, not string", i,
                             cel_kind_name(l->items[i].kind));
        total = gs_sat_add_u64(total, l->items[i].len + (i ? seplen : 0));
    }
    if (total > UINT32_MAX)
        return cel_error(ev, call, "join: result too long");
    if (!str_cost(ev, total))
        return cel_oom(ev);
    char *p = cel_arena_alloc(ev->arena, total + 1);
    if (!p)
        return cel_oom(ev);
    size_t o = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (i && seplen) {
            memcpy(p + o, a[1].s, seplen);
            o += seplen;
        }
        if (l->items[i].len)
            memcpy(p + o, l->items[i].s, l->items[i].len);
        o += l->items[i].len;
    }
    return cel_str(p, o);
}

static struct cel_value fn_replace(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, n, KINDS(S, S, S, I)))
        return NO_OVERLOAD();
    int64_t limit = n == 4 ? a[3].i : -1;
    const char *s = a[0].s, *old = a[1].s, *rep = a[2].s;
    size_t len = a[0].len, oldlen = a[1].len, replen = a[2].len;
    if (!str_cost(ev, len))
        return cel_oom(ev);
    /* count matches to size the output */
    size_t count = 0;
    if (!oldlen) {
        count = (size_t)cel_utf8_len(s, len) + 1;
    } else {
        for (const char *p = s; (p = memmem(p, len - (size_t)(p - s), old, oldlen)); p += oldlen)
            count++;
    }
    if (limit >= 0 && (size_t)limit < count)
        count = (size_t)limit;
    uint64_t total = gs_sat_add_u64(len, gs_sat_mul_u64(count, replen));
    if (total > UINT32_MAX)
        return cel_error(ev, call, "replace: result too long");
    if (!str_cost(ev, total))
        return cel_oom(ev);
    char *out = cel_arena_alloc(ev->arena, total + 1);
    if (!out)
        return cel_oom(ev);
    size_t o = 0, off = 0;
    for (size_t k = 0; k < count; k++) {
        size_t at;
        if (!oldlen) {
            at = off;
        } else {
            const char *hit = memmem(s + off, len - off, old, oldlen);
            at = (size_t)(hit - s);
        }
        memcpy(out + o, s + off, at - off);
        o += at - off;
        memcpy(out + o, rep, replen);
        o += replen;
        if (!oldlen) {
            if (at >= len) {
                off = len;
                break;
            }
            size_t l = u8len((unsigned char)s[at]);
            memcpy(out + o, s + at, l);
            o += l;
            off = at + l;
        } else {
            off = at + oldlen;
        }
    }
    memcpy(out + o, s + off, len - off);
    o += len - off;
    return cel_str(out, o);
}

/* unicode.IsSpace for the UTF-8 sequence at s (len bytes available); returns its length or 0 */
static size_t space_len(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    if (c == ' ' || (c >= '\t' && c <= '\r'))
        return 1;
    if (len >= 2 && c == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
        return 2;
    if (len >= 3 && c == 0xE1 && s[1] == 0x9A && s[2] == 0x80)
        return 3;
    if (len >= 3 && c == 0xE2 && s[1] == 0x80 &&
        ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
        return 3;
    if (len >= 3 && c == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
        return 3;
    if (len >= 3 && c == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
        return 3;
    return 0;
}

static struct cel_value fn_trim(struct cel_eval *ev, const struct cel_node *call,
                                struct cel_value *a, uint32_t n)
{
    if (a[0].kind != S)
        return NO_OVERLOAD();
    const unsigned char *s = (const unsigned char *)a[0].s;
    size_t b = 0, e = a[0].len, l;
    while (b < e && (l = space_len(s + b, e - b)))
        b += l;
    while (e > b) {
        size_t start = e - 1;
        while (start > b && (s[start] & 0xC0) == 0x80)
            start--;
        l = space_len(s + start, e - start);
        if (!l || start + l != e)
            break;
        e = start;
    }
    return cel_str(a[0].s + b, e - b);
}

static struct cel_value fn_index_of(struct cel_eval *ev, const struct cel_node *call,
                                    struct cel_value *a, uint32_t n)
{
    if (a[0].kind == CEL_K_LIST)
        return cel_list_index_of(ev, call, a, n);
    if (!all_kinds(a, n, KINDS(S, S, I)))
        return NO_OVERLOAD();
    bool last = call->name[0] == 'l';
    const char *s = a[0].s, *sub = a[1].s;
    size_t len = a[0].len, sublen = a[1].len;
    if (!str_cost(ev, len))
        return cel_oom(ev);
    int64_t cps = cel_utf8_len(s, len);
    if (!last) {
        int64_t start = n == 3 ? a[2].i : 0;
        if (start < 0 || start > cps)
            return cel_error(ev, call, "index out of range: %lld", (long long)start);
        int64_t off = cp_offset(s, len, start);
        if (!sublen)
            return cel_int(start);
        const char *hit = memmem(s + off, len - (size_t)off, sub, sublen);
        if (!hit)
            return cel_int(-1);
        return cel_int(cp_index_of_offset(s, (size_t)(hit - s)));
    }
    int64_t lastpos = n == 3 ? a[2].i : cps;
    if (lastpos < 0 || lastpos > cps)
        return cel_error(ev, call, "index out of range: %lld", (long long)lastpos);
    if (!sublen)
        return cel_int(lastpos);
    /* the match must start at or before code point `lastpos` */
    int64_t limit_off = cp_offset(s, len, lastpos);
    int64_t best = -1;
    for (size_t off = 0; off + sublen <= len && (int64_t)off <= limit_off;
         off += u8len((unsigned char)s[off])) {
        if (!memcmp(s + off, sub, sublen))
            best = (int64_t)off;
    }
    if (best < 0)
        return cel_int(-1);
    return cel_int(cp_index_of_offset(s, (size_t)best));
}

static struct cel_value fn_substring(struct cel_eval *ev, const struct cel_node *call,
                                     struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, n, KINDS(S, I, I)))
        return NO_OVERLOAD();
    int64_t cps = cel_utf8_len(a[0].s, a[0].len);
    int64_t start = a[1].i, end = n == 3 ? a[2].i : cps;
    if (start < 0 || start > cps)
        return cel_error(ev, call, "index out of range: %lld", (long long)start);
    if (end < 0 || end > cps)
        return cel_error(ev, call, "index out of range: %lld", (long long)end);
    if (end < start)
        return cel_error(ev, call, "invalid substring range. start: %lld, end: %lld",
                         (long long)start, (long long)end);
    int64_t b = cp_offset(a[0].s, a[0].len, start), e = cp_offset(a[0].s, a[0].len, end);
    return cel_str(a[0].s + b, (size_t)(e - b));
}

static struct cel_value fn_char_at(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n)
{
    if (!all_kinds(a, 2, KINDS(S, I)))
        return NO_OVERLOAD();
    int64_t cps = cel_utf8_len(a[0].s, a[0].len);
    if (a[1].i < 0 || a[1].i > cps)
        return cel_error(ev, call, "index out of range: %lld", (long long)a[1].i);
    if (a[1].i == cps)
        return cel_str("", 0);
    int64_t b = cp_offset(a[0].s, a[0].len, a[1].i);
    return mkstr(ev, a[0].s + b, u8len((unsigned char)a[0].s[b]));
}

#define OV(...) ((const char *const[]){__VA_ARGS__, NULL})
const struct cel_func cel_string_funcs[] = {
    {"contains", true, 2, fn_contains, OV("string,string:bool"), true},
    {"startsWith", true, 2, fn_starts, OV("string,string:bool"), true},
    {"endsWith", true, 2, fn_ends, OV("string,string:bool"), true},
    {"matches", true, 2, fn_matches, OV("string,string:bool"), true},
    {"matches", false, 2, fn_matches, OV("string,string:bool"), true},
    {"lowerAscii", true, 1, fn_case, OV("string:string"), true},
    {"upperAscii", true, 1, fn_case, OV("string:string"), true},
    {"split", true, 2, fn_split, OV("string,string:list(string)"), true},
    {"split", true, 3, fn_split, OV("string,string,int:list(string)"), true},
    {"join", true, 1, fn_join, OV("list(string):string"), true},
    {"join", true, 2, fn_join, OV("list(string),string:string"), true},
    {"replace", true, 3, fn_replace, OV("string,string,string:string"), true},
    {"replace", true, 4, fn_replace, OV("string,string,string,int:string"), true},
    {"trim", true, 1, fn_trim, OV("string:string"), true},
    {"indexOf", true, 2, fn_index_of, OV("string,string:int", "list(A),A:int"), true},
    {"indexOf", true, 3, fn_index_of, OV("string,string,int:int"), true},
    {"lastIndexOf", true, 2, fn_index_of, OV("string,string:int", "list(A),A:int"), true},
    {"lastIndexOf", true, 3, fn_index_of, OV("string,string,int:int"), true},
    {"substring", true, 2, fn_substring, OV("string,int:string"), true},
    {"substring", true, 3, fn_substring, OV("string,int,int:string"), true},
    {"charAt", true, 2, fn_char_at, OV("string,int:string"), true},
};
const size_t cel_string_funcs_count = GS_ARRAY_SIZE(cel_string_funcs);
