/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/expo.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/macros.h"

struct series {
    uint32_t off, len; /* labels (or, for a histogram, its rendered lines) in the arena */
    double value;
};

struct family {
    struct mon_family_def def;
    struct series *s;
    size_t n, cap;
};

struct mon_expo {
    size_t max;
    char *arena;
    size_t alen, acap;
    struct family *f;
    size_t nf, capf;
    size_t samples;
    size_t text_hint;
    int error;
};

void mon_labels_init(struct mon_labels *l)
{
    l->len = 0;
    l->overflow = false;
    l->buf[0] = '\0';
}

static void lput(struct mon_labels *l, char c)
{
    if (l->len + 1 >= sizeof(l->buf)) {
        l->overflow = true;
        return;
    }
    l->buf[l->len++] = c;
    l->buf[l->len] = '\0';
}

/* Byte by byte, bounded: used when the worst case might not fit (sets `overflow`). */
static void labels_add_slow(struct mon_labels *l, const char *name, const char *value)
{
    if (l->len)
        lput(l, ',');
    for (const char *p = name; *p; p++)
        lput(l, *p);
    lput(l, '=');
    lput(l, '"');
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"') {
            lput(l, '\\');
            lput(l, *p);
        } else if (*p == '\n') {
            lput(l, '\\');
            lput(l, 'n');
        } else {
            lput(l, *p);
        }
    }
    lput(l, '"');
}

void mon_labels_add(struct mon_labels *l, const char *name, const char *value)
{
    if (!value)
        value = "";
    size_t nlen = strlen(name), vlen = strlen(value);
    /* Worst case: separator, name, =", every value byte escaped, ", NUL. */
    if (l->overflow || l->len + 1 + nlen + 3 + 2 * vlen + 1 > sizeof(l->buf)) {
        labels_add_slow(l, name, value);
        return;
    }
    char *o = l->buf + l->len;
    if (l->len)
        *o++ = ',';
    memcpy(o, name, nlen);
    o += nlen;
    *o++ = '=';
    *o++ = '"';
    for (const char *p = value; *p; p++) {
        char c = *p;
        if (c == '\\' || c == '"') {
            *o++ = '\\';
            *o++ = c;
        } else if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else {
            *o++ = c;
        }
    }
    *o++ = '"';
    *o = '\0';
    l->len = (size_t)(o - l->buf);
}

/* Decimal digits of v into buf (at least 21 bytes), NUL-terminated; returns the length. */
static size_t u64_text(unsigned long long v, char *buf)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

void mon_labels_add_u(struct mon_labels *l, const char *name, unsigned long long value)
{
    char v[24];
    u64_text(value, v);
    mon_labels_add(l, name, v);
}

struct mon_expo *mon_expo_new(size_t max_bytes)
{
    struct mon_expo *e = calloc(1, sizeof(*e));
    if (e)
        e->max = max_bytes ? max_bytes : MON_EXPO_MAX_BYTES;
    return e;
}

void mon_expo_free(struct mon_expo *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nf; i++)
        free(e->f[i].s);
    free(e->f);
    free(e->arena);
    free(e);
}

int mon_expo_reserve(struct mon_expo *e, size_t arena_bytes, size_t text_bytes)
{
    arena_bytes = GS_MIN(arena_bytes, e->max);
    if (arena_bytes > e->acap) {
        char *na = realloc(e->arena, arena_bytes);
        if (!na)
            return -ENOMEM;
        e->arena = na;
        e->acap = arena_bytes;
    }
    e->text_hint = GS_MIN(text_bytes, e->max);
    return 0;
}

size_t mon_expo_arena_bytes(const struct mon_expo *e)
{
    return e->alen;
}

int mon_expo_family(struct mon_expo *e, const struct mon_family_def *def)
{
    if (e->nf == e->capf) {
        size_t cap = e->capf ? e->capf * 2 : 64;
        struct family *nf = realloc(e->f, cap * sizeof(*nf));
        if (!nf)
            return e->error = -ENOMEM;
        e->f = nf;
        e->capf = cap;
    }
    e->f[e->nf] = (struct family){.def = *def};
    return (int)e->nf++;
}

/* Copy `len` bytes into the arena; returns the offset or -1 (error remembered). */
static long arena_put(struct mon_expo *e, const char *p, size_t len)
{
    if (e->alen + len > e->max) {
        e->error = -E2BIG;
        return -1;
    }
    if (e->alen + len > e->acap) {
        size_t cap = GS_MAX(e->acap * 2, e->alen + len + 4096);
        cap = GS_MIN(cap, e->max);
        char *na = realloc(e->arena, cap);
        if (!na) {
            e->error = -ENOMEM;
            return -1;
        }
        e->arena = na;
        e->acap = cap;
    }
    memcpy(e->arena + e->alen, p, len);
    long off = (long)e->alen;
    e->alen += len;
    return off;
}

static void push(struct mon_expo *e, int family, const char *text, size_t len, double value)
{
    if (family < 0 || (size_t)family >= e->nf) {
        e->error = -EINVAL;
        return;
    }
    struct family *f = &e->f[family];
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct series *ns = realloc(f->s, cap * sizeof(*ns));
        if (!ns) {
            e->error = -ENOMEM;
            return;
        }
        f->s = ns;
        f->cap = cap;
    }
    long off = arena_put(e, text, len);
    if (off < 0)
        return;
    f->s[f->n++] = (struct series){.off = (uint32_t)off, .len = (uint32_t)len, .value = value};
    e->samples++;
}

void mon_expo_add(struct mon_expo *e, int family, const struct mon_labels *l, double value)
{
    if (isnan(value))
        return;
    if (l->overflow) {
        e->error = -EINVAL;
        return;
    }
    push(e, family, l->buf, l->len, value);
}

void mon_expo_format_value(double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0 && len >= 24) {
        /* Integral (bytes, counts): exact decimal without printf's floating-point path. */
        if (v < 0) {
            buf[0] = '-';
            u64_text((unsigned long long)-v, buf + 1);
        } else {
            u64_text((unsigned long long)v, buf);
        }
    } else if (fabs(v) < 1e9 && len >= 32 && (double)llround(v * 1000.0) / 1000.0 == v) {
        /* Thousandths (ratios of whole percents, ms): v is exactly k/1000 rounded, so the
         * decimal k/1000 parses back to v; no printf floating-point path. */
        long long k = llround(v * 1000.0);
        size_t o = 0;
        if (k < 0) {
            buf[o++] = '-';
            k = -k;
        }
        o += u64_text((unsigned long long)(k / 1000), buf + o);
        int frac = (int)(k % 1000);
        if (frac) {
            buf[o++] = '.';
            char d[3] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                         (char)('0' + frac % 10)};
            int nd = d[2] != '0' ? 3 : d[1] != '0' ? 2 : 1;
            for (int i = 0; i < nd; i++)
                buf[o++] = d[i];
        }
        buf[o] = '\0';
    } else {
        snprintf(buf, len, "%.15g", v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, len, "%.17g", v);
    }
}

void mon_expo_add_histogram(struct mon_expo *e, int family, const struct mon_labels *l,
                            const double *bounds, const uint64_t *cumulative, size_t n_bounds,
                            uint64_t count, double sum)
{
    if (family < 0 || (size_t)family >= e->nf || l->overflow) {
        e->error = -EINVAL;
        return;
    }
    const char *name = e->f[family].def.name;
    const char *sep = l->len ? "," : "";
    size_t cap = (n_bounds + 3) * (strlen(name) + l->len + 64);
    char *text = malloc(cap);
    if (!text) {
        e->error = -ENOMEM;
        return;
    }
    size_t n = 0;
    char v[64];
    for (size_t i = 0; i <= n_bounds; i++) {
        if (i < n_bounds)
            mon_expo_format_value(bounds[i], v, sizeof(v));
        else
            snprintf(v, sizeof(v), "+Inf");
        n += (size_t)snprintf(text + n, cap - n, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, l->buf,
                              sep, v, (unsigned long long)(i < n_bounds ? cumulative[i] : count));
    }
    const char *lo = l->len ? "{" : "", *lc = l->len ? "}" : "";
    n += (size_t)snprintf(text + n, cap - n, "%s_count%s%s%s %llu\n", name, lo, l->buf, lc,
                          (unsigned long long)count);
    mon_expo_format_value(sum, v, sizeof(v));
    n += (size_t)snprintf(text + n, cap - n, "%s_sum%s%s%s %s\n", name, lo, l->buf, lc, v);
    push(e, family, text, GS_MIN(n, cap), 0);
    free(text);
}

size_t mon_expo_samples(const struct mon_expo *e)
{
    return e->samples;
}

/* ---- rendering --------------------------------------------------------------------------------
 */

struct out {
    char *p;
    size_t len, cap, max;
    int error;
};

static void out_put(struct out *o, const char *s, size_t n)
{
    if (o->error)
        return;
    if (o->len + n + 1 > o->max) {
        o->error = -E2BIG;
        return;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = GS_MAX(o->cap * 2, o->len + n + 65536);
        cap = GS_MIN(cap, o->max);
        char *np = realloc(o->p, cap);
        if (!np) {
            o->error = -ENOMEM;
            return;
        }
        o->p = np;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void out_str(struct out *o, const char *s)
{
    out_put(o, s, strlen(s));
}

/* Sort by labels and fold repeated label sets into one sample (sum or minimum). */
static void merge(struct mon_expo *e, struct family *f)
{
    if (f->def.merge == MON_MERGE_NONE || f->n < 2)
        return;
    /* Bottom-up merge sort by label text (qsort has no context argument for the arena). */
    struct series *s = f->s;
    size_t n = f->n;
    struct series *tmp = malloc(n * sizeof(*tmp));
    if (!tmp) {
        e->error = -ENOMEM;
        return;
    }
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = GS_MIN(lo + width, n), hi = GS_MIN(lo + 2 * width, n);
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const struct series *x = &s[i], *y = &s[j];
                size_t m = GS_MIN(x->len, y->len);
                int c = memcmp(e->arena + x->off, e->arena + y->off, m);
                if (!c)
                    c = x->len < y->len ? -1 : x->len > y->len;
                tmp[k++] = c <= 0 ? s[i++] : s[j++];
            }
            while (i < mid)
                tmp[k++] = s[i++];
            while (j < hi)
                tmp[k++] = s[j++];
        }
        memcpy(s, tmp, n * sizeof(*s));
    }
    free(tmp);
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        if (w > 0 && s[w - 1].len == s[r].len &&
            memcmp(e->arena + s[w - 1].off, e->arena + s[r].off, s[r].len) == 0) {
            if (f->def.merge == MON_MERGE_SUM)
                s[w - 1].value += s[r].value;
            else if (s[r].value < s[w - 1].value)
                s[w - 1].value = s[r].value;
            continue;
        }
        s[w++] = s[r];
    }
    f->n = w;
}

int mon_expo_render(struct mon_expo *e, enum mon_format fmt, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    if (e->error)
        return e->error;
    struct out o = {.max = e->max};
    if (e->text_hint && (o.p = malloc(e->text_hint)) != NULL)
        o.cap = e->text_hint;
    bool om = fmt == MON_FORMAT_OPENMETRICS;
    char line[512], v[64];
    for (size_t i = 0; i < e->nf; i++) {
        struct family *f = &e->f[i];
        merge(e, f);
        if (e->error)
            break;
        if (f->n == 0)
            continue;
        const char *name = f->def.name, *type = "gauge", *suffix = "";
        switch (f->def.type) {
        case MON_GAUGE:
            break;
        case MON_COUNTER:
            type = "counter";
            suffix = "_total";
            break;
        case MON_INFO:
            type = om ? "info" : "gauge";
            suffix = "_info";
            break;
        case MON_HISTOGRAM:
            type = "histogram";
            break;
        }
        /* OpenMetrics names the family without the sample suffix; 0.0.4 names the sample. */
        snprintf(line, sizeof(line), "# HELP %s%s %s\n# TYPE %s%s %s\n", name, om ? "" : suffix,
                 f->def.help, name, om ? "" : suffix, type);
        out_str(&o, line);
        for (size_t k = 0; k < f->n; k++) {
            const struct series *s = &f->s[k];
            if (f->def.type == MON_HISTOGRAM) {
                out_put(&o, e->arena + s->off, s->len);
                continue;
            }
            out_str(&o, name);
            out_str(&o, suffix);
            if (s->len) {
                out_put(&o, "{", 1);
                out_put(&o, e->arena + s->off, s->len);
                out_put(&o, "}", 1);
            }
            mon_expo_format_value(s->value, v, sizeof(v));
            out_put(&o, " ", 1);
            out_str(&o, v);
            out_put(&o, "\n", 1);
        }
    }
    if (om)
        out_str(&o, "# EOF\n");
    if (!e->error && !o.error && !o.p)
        out_put(&o, "", 0);
    int err = e->error ? e->error : o.error;
    if (err) {
        free(o.p);
        return err;
    }
    *text = o.p;
    *len = o.len;
    return 0;
}

/* ---- content negotiation ----------------------------------------------------------------------
 */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

enum mon_format mon_expo_negotiate(const char *accept)
{
    if (!accept)
        return MON_FORMAT_TEXT;
    const char *p = accept;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *type = skip_ws(p, end), *type_end = semi ? semi : end;
        while (type_end > type && (type_end[-1] == ' ' || type_end[-1] == '\t'))
            type_end--;
        static const char om[] = "application/openmetrics-text";
        bool is_om = (size_t)(type_end - type) == sizeof(om) - 1 &&
                     strncasecmp(type, om, sizeof(om) - 1) == 0;
        bool ok_version = true, q_zero = false;
        for (const char *q = semi; is_om && q && q < end;) {
            q = skip_ws(q + 1, end);
            const char *pe = memchr(q, ';', (size_t)(end - q));
            if (!pe)
                pe = end;
            if (strncasecmp(q, "version=", 8) == 0)
                ok_version = (size_t)(pe - q - 8) >= 5 && strncmp(q + 8, "1.0.0", 5) == 0;
            else if (strncasecmp(q, "q=", 2) == 0)
                q_zero = strtod(q + 2, NULL) <= 0.0;
            q = pe < end ? pe : NULL;
        }
        if (is_om && ok_version && !q_zero)
            return MON_FORMAT_OPENMETRICS;
        p = *end ? end + 1 : end;
    }
    return MON_FORMAT_TEXT;
}
