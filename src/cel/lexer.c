/* SPDX-License-Identifier: Apache-2.0 */
/* CEL lexer: numbers, string/bytes literals with every escape form, identifiers, operators. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "cel/cel-internal.h"
#include "base/macros.h"

size_t cel_utf8_put(char *out, uint32_t cp)
{
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

static void tok_error(struct cel_token *t, int32_t pos, const char *msg)
{
    t->type = CEL_TOK_ERROR;
    t->pos = pos;
    t->msg = msg;
}

static void lex_number(struct cel_lexer *lx, struct cel_token *t)
{
    const char *s = lx->src;
    size_t i = lx->off, start = i;
    t->pos = (int32_t)start;
    if (s[i] == '0' && i + 1 < lx->len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        uint64_t v = 0;
        bool over = false;
        size_t digits = 0;
        while (i < lx->len && gs_hex_digit((unsigned char)s[i]) >= 0) {
            if (v > (UINT64_MAX >> 4))
                over = true;
            v = (v << 4) | (uint64_t)gs_hex_digit((unsigned char)s[i]);
            i++;
            digits++;
        }
        if (!digits)
            return tok_error(t, (int32_t)start, "invalid hexadecimal literal");
        bool is_uint = i < lx->len && (s[i] == 'u' || s[i] == 'U');
        if (is_uint)
            i++;
        lx->off = i;
        if (over)
            return tok_error(t, (int32_t)start, "integer literal out of range");
        t->type = is_uint ? CEL_TOK_UINT : CEL_TOK_INT;
        t->u = v;
        t->int_overflow = !is_uint && v > (uint64_t)INT64_MAX;
        t->len = (uint32_t)(i - start);
        return;
    }
    while (i < lx->len && isdigit((unsigned char)s[i]))
        i++;
    bool is_float = false;
    if (i + 1 < lx->len && s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
        is_float = true;
        i++;
        while (i < lx->len && isdigit((unsigned char)s[i]))
            i++;
    }
    if (i < lx->len && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < lx->len && (s[j] == '+' || s[j] == '-'))
            j++;
        if (j < lx->len && isdigit((unsigned char)s[j])) {
            is_float = true;
            i = j;
            while (i < lx->len && isdigit((unsigned char)s[i]))
                i++;
        }
    }
    char buf[128];
    size_t n = i - start;
    if (n >= sizeof(buf)) {
        lx->off = i;
        return tok_error(t, (int32_t)start, "numeric literal too long");
    }
    memcpy(buf, s + start, n);
    buf[n] = '\0';
    t->len = (uint32_t)n;
    if (is_float) {
        lx->off = i;
        t->type = CEL_TOK_DOUBLE;
        t->d = strtod(buf, NULL);
        return;
    }
    bool is_uint = i < lx->len && (s[i] == 'u' || s[i] == 'U');
    if (is_uint)
        i++;
    lx->off = i;
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(buf[k] - '0'), &v))
            return tok_error(t, (int32_t)start, "integer literal out of range");
    }
    t->type = is_uint ? CEL_TOK_UINT : CEL_TOK_INT;
    t->u = v;
    t->int_overflow = !is_uint && v > (uint64_t)INT64_MAX;
    if (t->int_overflow && v > (uint64_t)INT64_MAX + 1)
        return tok_error(t, (int32_t)start, "integer literal out of range");
}

/* Decode one escape at s[i] (just after the backslash). Appends to out, returns new index or 0. */
static size_t lex_escape(const char *s, size_t i, size_t len, bool bytes, char *out, size_t *o,
                         const char **msg)
{
    if (i >= len) {
        *msg = "unterminated escape sequence";
        return 0;
    }
    char c = s[i];
    switch (c) {
    case 'a':
        out[(*o)++] = '\a';
        return i + 1;
    case 'b':
        out[(*o)++] = '\b';
        return i + 1;
    case 'f':
        out[(*o)++] = '\f';
        return i + 1;
    case 'n':
        out[(*o)++] = '\n';
        return i + 1;
    case 'r':
        out[(*o)++] = '\r';
        return i + 1;
    case 't':
        out[(*o)++] = '\t';
        return i + 1;
    case 'v':
        out[(*o)++] = '\v';
        return i + 1;
    case '\\':
    case '?':
    case '"':
    case '\'':
    case '`':
        out[(*o)++] = c;
        return i + 1;
    default:
        break;
    }
    uint32_t cp = 0;
    int digits = 0, base = 16;
    if (c == 'x' || c == 'X') {
        digits = 2;
        i++;
    } else if (c == 'u') {
        digits = 4;
        i++;
    } else if (c == 'U') {
        digits = 8;
        i++;
    } else if (c >= '0' && c <= '3') {
        digits = 3;
        base = 8;
    } else {
        *msg = "invalid escape sequence";
        return 0;
    }
    if ((c == 'u' || c == 'U') && bytes) {
        *msg = "unicode escape in bytes literal";
        return 0;
    }
    for (int k = 0; k < digits; k++, i++) {
        int v = i < len ? gs_hex_digit((unsigned char)s[i]) : -1;
        if (v < 0 || v >= base) {
            *msg = "invalid escape sequence";
            return 0;
        }
        cp = cp * (uint32_t)base + (uint32_t)v;
    }
    if (bytes) {
        out[(*o)++] = (char)cp;
        return i;
    }
    size_t w = cel_utf8_put(out + *o, cp);
    if (!w) {
        *msg = "invalid unicode code point in escape sequence";
        return 0;
    }
    *o += w;
    return i;
}

static void lex_string(struct cel_lexer *lx, struct cel_token *t, bool raw, bool bytes,
                       size_t prefix)
{
    const char *s = lx->src;
    size_t start = lx->off, i = lx->off + prefix;
    char q = s[i];
    bool triple = i + 2 < lx->len && s[i + 1] == q && s[i + 2] == q;
    i += triple ? 3 : 1;
    t->pos = (int32_t)start;
    /* decoded text is never longer than the source (escapes shrink), +4 for safety */
    char *out = cel_arena_alloc(lx->arena, lx->len - i + 8);
    if (!out) {
        lx->off = lx->len;
        return tok_error(t, (int32_t)start, "out of memory");
    }
    size_t o = 0;
    for (;;) {
        if (i >= lx->len) {
            lx->off = lx->len;
            return tok_error(t, (int32_t)start, "unterminated string literal");
        }
        char c = s[i];
        if (c == q) {
            if (!triple) {
                i++;
                break;
            }
            if (i + 2 < lx->len && s[i + 1] == q && s[i + 2] == q) {
                i += 3;
                break;
            }
        }
        if (!triple && (c == '\n' || c == '\r')) {
            lx->off = i;
            return tok_error(t, (int32_t)start, "newline in string literal");
        }
        if (c == '\\' && !raw) {
            const char *msg = NULL;
            size_t ni = lex_escape(s, i + 1, lx->len, bytes, out, &o, &msg);
            if (!ni) {
                lx->off = i + 1;
                return tok_error(t, (int32_t)i, msg);
            }
            i = ni;
            continue;
        }
        out[o++] = c;
        i++;
    }
    lx->off = i;
    if (!bytes && !cel_utf8_valid(out, o))
        return tok_error(t, (int32_t)start, "invalid UTF-8 in string literal");
    t->type = bytes ? CEL_TOK_BYTES : CEL_TOK_STRING;
    t->s = out;
    t->len = (uint32_t)o;
}

void cel_lex_next(struct cel_lexer *lx, struct cel_token *t)
{
    const char *s = lx->src;
    memset(t, 0, sizeof(*t));
    for (;;) {
        while (lx->off < lx->len &&
               (s[lx->off] == ' ' || s[lx->off] == '\t' || s[lx->off] == '\n' ||
                s[lx->off] == '\r' || s[lx->off] == '\f'))
            lx->off++;
        if (lx->off + 1 < lx->len && s[lx->off] == '/' && s[lx->off + 1] == '/') {
            while (lx->off < lx->len && s[lx->off] != '\n')
                lx->off++;
            continue;
        }
        break;
    }
    size_t i = lx->off;
    t->pos = (int32_t)i;
    if (i >= lx->len) {
        t->type = CEL_TOK_EOF;
        return;
    }
    char c = s[i];
    char c1 = i + 1 < lx->len ? s[i + 1] : '\0';
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)c1)))
        return lex_number(lx, t);
    if (c == '"' || c == '\'')
        return lex_string(lx, t, false, false, 0);
    if (c == '`') {
        /* quoted field name: letters, digits, '_', '.', '-', '/' */
        size_t j = i + 1;
        while (j < lx->len && (isalnum((unsigned char)s[j]) || s[j] == '_' || s[j] == '.' ||
                               s[j] == '-' || s[j] == '/'))
            j++;
        if (j >= lx->len || s[j] != '`' || j == i + 1) {
            lx->off = j;
            return tok_error(t, (int32_t)i, "invalid quoted field name");
        }
        lx->off = j + 1;
        t->type = CEL_TOK_IDENT;
        t->quoted = true;
        t->s = s + i + 1;
        t->len = (uint32_t)(j - i - 1);
        return;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        /* string prefixes: r, b, rb, br (any case) */
        bool r = false, b = false;
        size_t k = i;
        for (int n = 0; n < 2 && k < lx->len; n++, k++) {
            char p = (char)tolower((unsigned char)s[k]);
            if (p == 'r' && !r)
                r = true;
            else if (p == 'b' && !b)
                b = true;
            else
                break;
        }
        if ((r || b) && k < lx->len && (s[k] == '"' || s[k] == '\''))
            return lex_string(lx, t, r, b, k - i);
        size_t j = i;
        while (j < lx->len && (isalnum((unsigned char)s[j]) || s[j] == '_'))
            j++;
        lx->off = j;
        t->len = (uint32_t)(j - i);
        t->s = s + i;
        t->type = CEL_TOK_IDENT;
        if (t->len == 4 && !memcmp(t->s, "true", 4))
            t->type = CEL_TOK_TRUE;
        else if (t->len == 5 && !memcmp(t->s, "false", 5))
            t->type = CEL_TOK_FALSE;
        else if (t->len == 4 && !memcmp(t->s, "null", 4))
            t->type = CEL_TOK_NULL;
        else if (t->len == 2 && !memcmp(t->s, "in", 2))
            t->type = CEL_TOK_IN;
        return;
    }
    lx->off = i + 1;
    t->len = 1;
    switch (c) {
    case '(':
        t->type = CEL_TOK_LPAREN;
        return;
    case ')':
        t->type = CEL_TOK_RPAREN;
        return;
    case '[':
        t->type = CEL_TOK_LBRACKET;
        return;
    case ']':
        t->type = CEL_TOK_RBRACKET;
        return;
    case '{':
        t->type = CEL_TOK_LBRACE;
        return;
    case '}':
        t->type = CEL_TOK_RBRACE;
        return;
    case '.':
        t->type = CEL_TOK_DOT;
        return;
    case ',':
        t->type = CEL_TOK_COMMA;
        return;
    case ':':
        t->type = CEL_TOK_COLON;
        return;
    case '?':
        t->type = CEL_TOK_QUESTION;
        return;
    case '+':
        t->type = CEL_TOK_PLUS;
        return;
    case '-':
        t->type = CEL_TOK_MINUS;
        return;
    case '*':
        t->type = CEL_TOK_STAR;
        return;
    case '/':
        t->type = CEL_TOK_SLASH;
        return;
    case '%':
        t->type = CEL_TOK_PERCENT;
        return;
    default:
        break;
    }
    lx->off = i + 2;
    t->len = 2;
    if (c == '=' && c1 == '=') {
        t->type = CEL_TOK_EQ;
        return;
    }
    if (c == '!' && c1 == '=') {
        t->type = CEL_TOK_NE;
        return;
    }
    if (c == '<' && c1 == '=') {
        t->type = CEL_TOK_LE;
        return;
    }
    if (c == '>' && c1 == '=') {
        t->type = CEL_TOK_GE;
        return;
    }
    if (c == '&' && c1 == '&') {
        t->type = CEL_TOK_AND;
        return;
    }
    if (c == '|' && c1 == '|') {
        t->type = CEL_TOK_OR;
        return;
    }
    lx->off = i + 1;
    t->len = 1;
    if (c == '!') {
        t->type = CEL_TOK_NOT;
        return;
    }
    if (c == '<') {
        t->type = CEL_TOK_LT;
        return;
    }
    if (c == '>') {
        t->type = CEL_TOK_GT;
        return;
    }
    tok_error(t, (int32_t)i, "unexpected character");
}
