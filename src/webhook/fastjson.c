/* SPDX-License-Identifier: Apache-2.0 */
/* Direct-scanning JSON parser for a strict subset; anything else is left to jansson. */
#include "webhook/fastjson.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"

struct scan {
    const char *p, *end;
    char *tmp; /* decoded string scratch, grown as needed */
    size_t tmp_cap;
};

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

/* After the opening quote: the decoded string into s->tmp; its length, or -1 (not handled). */
static long scan_string(struct scan *s)
{
    const char *start = s->p;
    /* Fast path: no escape before the closing quote, ASCII only. */
    while (s->p < s->end && *s->p != '"' && *s->p != '\\' && (unsigned char)*s->p >= 0x20 &&
           (unsigned char)*s->p < 0x80)
        s->p++;
    size_t need = (size_t)(s->p - start);
    if (s->p < s->end && *s->p == '"') {
        if (need + 1 > s->tmp_cap) {
            size_t cap = need < 256 ? 512 : need * 2; /* few reallocs per document */
            char *t = realloc(s->tmp, cap);
            if (!t)
                return -1;
            s->tmp = t, s->tmp_cap = cap;
        }
        memcpy(s->tmp, start, need);
        s->p++;
        return (long)need;
    }
    /* Escapes: the decoded text is never longer than the source (\uXXXX -> at most 3 bytes). */
    const char *q = start;
    size_t o = 0;
    for (;;) {
        if (q >= s->end)
            return -1;
        if ((size_t)(q - start) + 8 > s->tmp_cap) {
            size_t cap = (size_t)(s->end - start) + 8;
            char *t = realloc(s->tmp, cap);
            if (!t)
                return -1;
            s->tmp = t, s->tmp_cap = cap;
        }
        unsigned char c = (unsigned char)*q;
        if (c == '"')
            break;
        if (c < 0x20 || c >= 0x80)
            return -1; /* control characters are invalid; UTF-8 validation is jansson's */
        if (c != '\\') {
            s->tmp[o++] = (char)c;
            q++;
            continue;
        }
        if (q + 1 >= s->end)
            return -1;
        char e = q[1];
        q += 2;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            s->tmp[o++] = e;
            break;
        case 'b':
            s->tmp[o++] = '\b';
            break;
        case 'f':
            s->tmp[o++] = '\f';
            break;
        case 'n':
            s->tmp[o++] = '\n';
            break;
        case 'r':
            s->tmp[o++] = '\r';
            break;
        case 't':
            s->tmp[o++] = '\t';
            break;
        case 'u': {
            if (s->end - q < 4)
                return -1;
            int h0 = gs_hex_digit(q[0]), h1 = gs_hex_digit(q[1]), h2 = gs_hex_digit(q[2]),
                h3 = gs_hex_digit(q[3]);
            if (h0 < 0 || h1 < 0 || h2 < 0 || h3 < 0)
                return -1;
            unsigned cp = (unsigned)(h0 << 12 | h1 << 8 | h2 << 4 | h3);
            q += 4;
            if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
                return -1; /* NUL is refused, surrogate pairs are jansson's */
            if (cp < 0x80) {
                s->tmp[o++] = (char)cp;
            } else if (cp < 0x800) {
                s->tmp[o++] = (char)(0xc0 | cp >> 6);
                s->tmp[o++] = (char)(0x80 | (cp & 0x3f));
            } else {
                s->tmp[o++] = (char)(0xe0 | cp >> 12);
                s->tmp[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                s->tmp[o++] = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            return -1;
        }
    }
    s->p = q + 1;
    return (long)o;
}

/* An integer literal (no fraction or exponent) that fits in json_int_t; else NULL. */
static json_t *scan_number(struct scan *s)
{
    const char *q = s->p;
    bool neg = false;
    if (q < s->end && *q == '-')
        neg = true, q++;
    if (q >= s->end || *q < '0' || *q > '9')
        return NULL;
    if (*q == '0' && q + 1 < s->end && q[1] >= '0' && q[1] <= '9')
        return NULL; /* leading zero */
    uint64_t v = 0;
    for (; q < s->end && *q >= '0' && *q <= '9'; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - d) / 10)
            return NULL;
        v = v * 10 + d;
    }
    if (q < s->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return NULL; /* a real: jansson's */
    if ((!neg && v > (uint64_t)INT64_MAX) || (neg && v > (uint64_t)INT64_MAX + 1))
        return NULL;
    s->p = q;
    return json_integer(neg ? (json_int_t)(0 - v) : (json_int_t)v);
}

static json_t *scan_value(struct scan *s, int depth);

static json_t *scan_object(struct scan *s, int depth)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return obj;
    }
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"')
            goto fail;
        s->p++;
        long klen = scan_string(s);
        if (klen < 0)
            goto fail;
        /* The key must outlive the scratch buffer the value's strings reuse. */
        char kbuf[256], *key = (size_t)klen < sizeof(kbuf) ? kbuf : malloc((size_t)klen + 1);
        if (!key)
            goto fail;
        memcpy(key, s->tmp, (size_t)klen);
        key[klen] = '\0';
        bool dup = json_object_getn(obj, key, (size_t)klen) != NULL; /* jansson refuses */
        json_t *v = NULL;
        skip_ws(s);
        if (!dup && s->p < s->end && *s->p == ':') {
            s->p++;
            v = scan_value(s, depth + 1);
        }
        int r = v ? json_object_setn_new_nocheck(obj, key, (size_t)klen, v) : -1;
        if (key != kbuf)
            free(key);
        if (r < 0)
            goto fail;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return obj;
        }
        goto fail;
    }
fail:
    json_decref(obj);
    return NULL;
}

static json_t *scan_array(struct scan *s, int depth)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return arr;
    }
    for (;;) {
        json_t *v = scan_value(s, depth + 1);
        if (!v || json_array_append_new(arr, v) < 0)
            break;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return arr;
        }
        break;
    }
    json_decref(arr);
    return NULL;
}

static bool literal(struct scan *s, const char *word, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

static json_t *scan_value(struct scan *s, int depth)
{
    if (depth > WH_FASTJSON_MAX_DEPTH)
        return NULL;
    skip_ws(s);
    if (s->p >= s->end)
        return NULL;
    switch (*s->p) {
    case '{':
        s->p++;
        return scan_object(s, depth);
    case '[':
        s->p++;
        return scan_array(s, depth);
    case '"': {
        s->p++;
        long n = scan_string(s);
        return n < 0 ? NULL : json_stringn_nocheck(s->tmp, (size_t)n);
    }
    case 't':
        return literal(s, "true", 4) ? json_true() : NULL;
    case 'f':
        return literal(s, "false", 5) ? json_false() : NULL;
    case 'n':
        return literal(s, "null", 4) ? json_null() : NULL;
    default:
        return scan_number(s);
    }
}

json_t *wh_fastjson_parse(const char *buf, size_t len)
{
    if (!buf || !len)
        return NULL;
    struct scan s = {.p = buf, .end = buf + len};
    json_t *v = scan_value(&s, 0);
    skip_ws(&s);
    if (v && s.p != s.end) { /* trailing text: jansson reports it */
        json_decref(v);
        v = NULL;
    }
    free(s.tmp);
    return v;
}
