/* SPDX-License-Identifier: Apache-2.0 */
#include "config/config.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fs.h"
#include "config/json.h"
#include "base/macros.h"
#include "config/quantity.h"
#include "base/version.h"
#include "config/yaml.h"

#define DEFAULT_CONFIG_MAX (1u << 20)

/* ---- scalar parsers ----------------------------------------------------------------------- */

int gs_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < GS_ARRAY_SIZE(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

int gs_parse_duration(const char *s, int64_t *ns, struct gs_error *err)
{
    static const struct {
        const char *unit;
        int64_t ns;
    } units[] = {
        {"ns", 1},       {"us", 1000},      {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000},
        {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000},  {"h", 3600000000000},
    };
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    if (strcmp(p, "0") == 0) {
        *ns = 0;
        return 0;
    }
    if (*p == '\0')
        goto bad;
    __int128 total = 0;
    while (*p) {
        /* number: digits [ . digits ] with at least one digit */
        __int128 whole = 0, frac = 0, scale = 1;
        bool digits = false;
        while (*p >= '0' && *p <= '9') {
            whole = whole * 10 + (*p++ - '0');
            digits = true;
            if (whole > (__int128)INT64_MAX * 10)
                goto range;
        }
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                if (scale < (__int128)1000000000000000000LL) { /* finer than 1e-18 is noise */
                    frac = frac * 10 + (*p - '0');
                    scale *= 10;
                }
                p++;
                digits = true;
            }
        }
        if (!digits)
            goto bad;
        size_t ulen = 0;
        int64_t unit = 0;
        for (size_t i = 0; i < GS_ARRAY_SIZE(units); i++) {
            size_t l = strlen(units[i].unit);
            /* "m" must not match the start of "ms": take the longest unit that matches */
            if (l > ulen && strncmp(p, units[i].unit, l) == 0) {
                ulen = l;
                unit = units[i].ns;
            }
        }
        if (!ulen)
            goto bad;
        p += ulen;
        total += whole * unit + frac * unit / scale;
        if (total > (__int128)INT64_MAX)
            goto range;
    }
    *ns = neg ? -(int64_t)total : (int64_t)total;
    return 0;
bad:
    return gs_error_set(err, -EINVAL, "\"%s\" is not a duration (e.g. 500ms, 10s, 1m30s)", s);
range:
    return gs_error_set(err, -ERANGE, "duration \"%s\" is out of range", s);
}

/* Append the fraction v / 10^digits with trailing zeros removed. */
static size_t put_frac(char *buf, size_t len, uint64_t whole, uint64_t frac, int digits)
{
    size_t o = (size_t)snprintf(buf, len, "%" PRIu64, whole);
    if (frac && o < len) {
        char f[24];
        snprintf(f, sizeof(f), "%0*" PRIu64, digits, frac);
        size_t fl = strlen(f);
        while (fl > 0 && f[fl - 1] == '0')
            f[--fl] = '\0';
        o += (size_t)snprintf(buf + o, len - o, ".%s", f);
    }
    return o;
}

void gs_format_duration(int64_t ns, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (ns == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    size_t o = 0;
    uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        o += (size_t)snprintf(buf, len, "-");
    if (o >= len)
        return;
    if (u < 1000) {
        snprintf(buf + o, len - o, "%" PRIu64 "ns", u);
    } else if (u < 1000000) {
        o += put_frac(buf + o, len - o, u / 1000, u % 1000, 3);
        if (o < len)
            snprintf(buf + o, len - o, "us");
    } else if (u < 1000000000) {
        o += put_frac(buf + o, len - o, u / 1000000, u % 1000000, 6);
        if (o < len)
            snprintf(buf + o, len - o, "ms");
    } else {
        uint64_t secs = u / 1000000000, sub = u % 1000000000;
        uint64_t h = secs / 3600, m = (secs / 60) % 60, s = secs % 60;
        if (h)
            o += (size_t)snprintf(buf + o, len - o, "%" PRIu64 "h", h);
        if (o < len && (h || m))
            o += (size_t)snprintf(buf + o, len - o, "%" PRIu64 "m", m);
        if (o < len)
            o += put_frac(buf + o, len - o, s, sub, 9);
        if (o < len)
            snprintf(buf + o, len - o, "s");
    }
}

static int parse_int(const char *s, bool is_unsigned, int64_t *i, uint64_t *u)
{
    const char *p = s;
    bool neg = false;
    if (*p == '+' || (*p == '-' && !is_unsigned)) {
        neg = *p == '-';
        p++;
    }
    if (*p < '0' || *p > '9')
        return -EINVAL;
    uint64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return -ERANGE;
    }
    if (is_unsigned) {
        *u = v;
        return 0;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return -ERANGE;
        *i = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > INT64_MAX)
            return -ERANGE;
        *i = (int64_t)v;
    }
    return 0;
}

/* ---- typed values ------------------------------------------------------------------------- */

union value {
    int64_t i;
    uint64_t u;
    bool b;
    struct gs_quantity q;
    int e;
};

static const char *flag_name(const struct gs_option *o)
{
    return o->long_flag ? o->long_flag : o->name;
}

/* Parse `text` as option `o`'s type. `src` names the source in messages. */
static int parse_value(const struct gs_option *o, const char *text, const char *src, union value *v,
                       struct gs_error *err)
{
    int r;
    struct gs_error sub = {0};
    switch (o->type) {
    case GS_OPT_STRING:
        return 0;
    case GS_OPT_INT:
    case GS_OPT_UINT:
        r = parse_int(text, o->type == GS_OPT_UINT, &v->i, &v->u);
        if (r == -ERANGE)
            return gs_error_set(err, r, "%s: %s is out of range", src, text);
        if (r < 0)
            return gs_error_set(err, r, "%s: \"%s\" is not %s", src, text,
                                o->type == GS_OPT_UINT ? "a non-negative integer" : "an integer");
        return 0;
    case GS_OPT_BOOL:
        if (gs_parse_bool(text, &v->b) < 0)
            return gs_error_set(err, -EINVAL, "%s: \"%s\" is not a boolean (true or false)", src,
                                text);
        return 0;
    case GS_OPT_DURATION:
        r = gs_parse_duration(text, &v->i, &sub);
        if (r < 0)
            return gs_error_set(err, r, "%s: %s", src, sub.msg);
        return 0;
    case GS_OPT_QUANTITY:
        r = gs_quantity_parse(text, &v->q, &sub);
        if (r < 0)
            return gs_error_set(err, r, "%s: %s", src, sub.msg);
        return 0;
    case GS_OPT_ENUM:
        for (int k = 0; o->choices && o->choices[k]; k++) {
            if (strcmp(o->choices[k], text) == 0) {
                v->e = k;
                return 0;
            }
        }
        {
            char list[160] = "";
            size_t n = 0;
            for (int k = 0; o->choices && o->choices[k] && n < sizeof(list); k++)
                n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", k ? ", " : "",
                                      o->choices[k]);
            return gs_error_set(err, -EINVAL, "%s: \"%s\" is not one of %s", src, text, list);
        }
    }
    return gs_error_set(err, -EINVAL, "%s: unknown option type", src);
}

/* -1, 0, 1 comparing two parsed values of the option's type. */
static int cmp_value(const struct gs_option *o, const union value *a, const union value *b)
{
    switch (o->type) {
    case GS_OPT_INT:
    case GS_OPT_DURATION:
        return a->i < b->i ? -1 : a->i > b->i;
    case GS_OPT_UINT:
        return a->u < b->u ? -1 : a->u > b->u;
    case GS_OPT_QUANTITY:
        return gs_quantity_cmp(&a->q, &b->q);
    default:
        return 0;
    }
}

static int check_bounds(const struct gs_option *o, const char *text, const char *src,
                        const union value *v, struct gs_error *err)
{
    union value bound;
    if (o->min) {
        if (parse_value(o, o->min, "option table", &bound, err) < 0)
            return err ? err->code : -EINVAL;
        if (cmp_value(o, v, &bound) < 0)
            return gs_error_set(err, -ERANGE, "%s: %s is below the minimum %s", src, text, o->min);
    }
    if (o->max) {
        if (parse_value(o, o->max, "option table", &bound, err) < 0)
            return err ? err->code : -EINVAL;
        if (cmp_value(o, v, &bound) > 0)
            return gs_error_set(err, -ERANGE, "%s: %s is above the maximum %s", src, text, o->max);
    }
    return 0;
}

static void *field(void *cfg, const struct gs_option *o)
{
    return (char *)cfg + o->offset;
}

/* Parse, check and store. text == NULL resets to "unset" (NULL string, zero). */
static int apply(const struct gs_option *o, void *cfg, const char *text, const char *src,
                 struct gs_error *err)
{
    union value v = {0};
    if (text) {
        int r = parse_value(o, text, src, &v, err);
        if (r == 0)
            r = check_bounds(o, text, src, &v, err);
        if (r < 0)
            return r;
    }
    switch (o->type) {
    case GS_OPT_STRING: {
        char **p = field(cfg, o);
        char *copy = NULL;
        if (text && !(copy = strdup(text)))
            return gs_error_set(err, -ENOMEM, "%s: out of memory", src);
        free(*p);
        *p = copy;
        break;
    }
    case GS_OPT_INT:
    case GS_OPT_DURATION:
        *(int64_t *)field(cfg, o) = v.i;
        break;
    case GS_OPT_UINT:
        *(uint64_t *)field(cfg, o) = v.u;
        break;
    case GS_OPT_BOOL:
        *(bool *)field(cfg, o) = v.b;
        break;
    case GS_OPT_QUANTITY:
        *(struct gs_quantity *)field(cfg, o) = v.q;
        break;
    case GS_OPT_ENUM:
        *(int *)field(cfg, o) = v.e;
        break;
    }
    return 0;
}

static const struct gs_option *find_name(const struct gs_config_spec *spec, const char *name,
                                         size_t len)
{
    for (size_t i = 0; i < spec->n_options; i++) {
        const char *f = flag_name(&spec->options[i]);
        if (strlen(f) == len && strncmp(f, name, len) == 0)
            return &spec->options[i];
    }
    return NULL;
}

static const struct gs_option *find_key(const struct gs_config_spec *spec, const char *key)
{
    for (size_t i = 0; i < spec->n_options; i++)
        if (strcmp(spec->options[i].name, key) == 0)
            return &spec->options[i];
    return NULL;
}

static const struct gs_option *find_short(const struct gs_config_spec *spec, char c)
{
    for (size_t i = 0; i < spec->n_options; i++)
        if (spec->options[i].short_flag == c)
            return &spec->options[i];
    return NULL;
}

/* ---- public entry points ------------------------------------------------------------------ */

int gs_config_defaults(const struct gs_config_spec *spec, void *cfg, struct gs_error *err)
{
    for (size_t i = 0; i < spec->n_options; i++) {
        const struct gs_option *o = &spec->options[i];
        if (!o->name || !o->help)
            return gs_error_set(err, -EINVAL, "option table: option %zu has no name or help", i);
        for (size_t j = 0; j < i; j++) {
            const struct gs_option *p = &spec->options[j];
            if (strcmp(p->name, o->name) == 0 || strcmp(flag_name(p), flag_name(o)) == 0 ||
                (o->short_flag && p->short_flag == o->short_flag))
                return gs_error_set(err, -EINVAL, "option table: %s is defined twice", o->name);
        }
        if (strcmp(flag_name(o), "help") == 0 || strcmp(flag_name(o), "config") == 0 ||
            strcmp(flag_name(o), "print-config") == 0 || strcmp(flag_name(o), "version") == 0 ||
            o->short_flag == 'h')
            return gs_error_set(err, -EINVAL, "option table: %s is reserved", o->name);
        if (o->type == GS_OPT_ENUM && (!o->choices || !o->choices[0]))
            return gs_error_set(err, -EINVAL, "option table: %s has no choices", o->name);
        char src[96];
        snprintf(src, sizeof(src), "option table: default of %s", o->name);
        const char *def = o->def;
        if (!def && o->type == GS_OPT_ENUM)
            def = o->choices[0];
        if (def) {
            int r = apply(o, cfg, def, src, err);
            if (r < 0)
                return r;
        } else {
            apply(o, cfg, NULL, src, err);
        }
    }
    return 0;
}

int gs_config_set(const struct gs_config_spec *spec, void *cfg, const char *name, const char *value,
                  const char *source, struct gs_error *err)
{
    const struct gs_option *o = find_key(spec, name);
    if (!o)
        return gs_error_set(err, -EINVAL, "unknown option \"%s\"", name);
    return apply(o, cfg, value, source ? source : name, err);
}

int gs_config_load_file(const struct gs_config_spec *spec, void *cfg, const char *path,
                        struct gs_error *err)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r = gs_read_file(path, spec->config_max ? spec->config_max : DEFAULT_CONFIG_MAX, &text,
                         &len, err);
    if (r < 0)
        return r;
    _cleanup_(gs_json_decrefp) json_t *docs = NULL;
    r = gs_yaml_load_documents(text, len, &docs, err);
    if (r < 0) {
        gs_error_prefix(err, "%s: ", path);
        return r;
    }
    if (json_array_size(docs) == 0)
        return 0; /* an empty file sets nothing */
    json_t *doc = json_array_get(docs, 0);
    if (json_array_size(docs) > 1 || !json_is_object(doc))
        return gs_error_set(err, -EINVAL, "%s: expected one mapping of option names to values",
                            path);
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        const struct gs_option *o = find_key(spec, key);
        if (!o)
            return gs_error_set(err, -EINVAL, "%s: unknown option \"%s\"", path, key);
        if (json_is_null(v))
            continue;
        char src[GS_ERROR_MSG_MAX / 2];
        snprintf(src, sizeof(src), "%s: %s", path, key);
        char text_v[64];
        const char *t = NULL;
        const char *want = NULL;
        switch (o->type) {
        case GS_OPT_STRING:
        case GS_OPT_DURATION:
        case GS_OPT_ENUM:
            if (json_is_string(v))
                t = json_string_value(v);
            else
                want = "string";
            break;
        case GS_OPT_INT:
        case GS_OPT_UINT:
            if (json_is_integer(v)) {
                snprintf(text_v, sizeof(text_v), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                t = text_v;
            } else {
                want = "integer";
            }
            break;
        case GS_OPT_BOOL:
            if (json_is_boolean(v))
                t = json_is_true(v) ? "true" : "false";
            else
                want = "boolean";
            break;
        case GS_OPT_QUANTITY: {
            struct gs_quantity q;
            struct gs_error sub = {0};
            if (!json_is_string(v) && !json_is_number(v)) {
                want = "quantity (string or number)";
                break;
            }
            if (json_is_string(v)) {
                t = json_string_value(v);
                break;
            }
            r = gs_json_quantity_value(v, key, &q, &sub);
            if (r < 0)
                return gs_error_set(err, r, "%s: %s", path, sub.msg);
            gs_quantity_format(&q, text_v, sizeof(text_v));
            t = text_v;
            break;
        }
        }
        if (want)
            return gs_error_set(err, -EINVAL, "%s: expected %s, got %s", src, want,
                                gs_json_type_name(v));
        r = apply(o, cfg, t, src, err);
        if (r < 0)
            return r;
    }
    return 0;
}

enum flag_kind { FLAG_OPTION, FLAG_HELP, FLAG_PRINT, FLAG_CONFIG, FLAG_VERSION };

struct flag {
    enum flag_kind kind;
    const struct gs_option *opt;
    const char *value; /* NULL: boolean flag without a value */
    char src[80];      /* "--cores" / "-c" */
};

/*
 * Tokenise argv[*i]: fills *f and advances *i past the flag and its value. Returns 1 for a flag,
 * 0 at the end of the options (first_arg set), <0 on error.
 */
static int next_flag(const struct gs_config_spec *spec, int argc, char *const *argv, int *i,
                     int *short_pos, struct flag *f, int *first_arg, struct gs_error *err)
{
    static char bool_true[] = "true", bool_false[] = "false";
    *f = (struct flag){.kind = FLAG_OPTION};
    if (*i >= argc) {
        *first_arg = argc;
        return 0;
    }
    const char *a = argv[*i];
    if (*short_pos == 0) {
        if (strcmp(a, "--") == 0) {
            *first_arg = *i + 1;
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0') {
            *first_arg = *i;
            return 0;
        }
    }
    if (*short_pos == 0 && a[1] == '-') {
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        snprintf(f->src, sizeof(f->src), "--%.*s", (int)GS_MIN(nlen, 60), name);
        (*i)++;
        if ((nlen == 4 && strncmp(name, "help", 4) == 0) ||
            (nlen == 12 && strncmp(name, "print-config", 12) == 0) ||
            (nlen == 7 && strncmp(name, "version", 7) == 0)) {
            if (eq)
                return gs_error_set(err, -EINVAL, "%s takes no value", f->src);
            f->kind = name[0] == 'h' ? FLAG_HELP : name[0] == 'v' ? FLAG_VERSION : FLAG_PRINT;
            return 1;
        }
        if (nlen == 6 && strncmp(name, "config", 6) == 0) {
            f->kind = FLAG_CONFIG;
        } else {
            f->opt = find_name(spec, name, nlen);
            if (!f->opt && nlen > 3 && strncmp(name, "no-", 3) == 0) {
                const struct gs_option *o = find_name(spec, name + 3, nlen - 3);
                if (o && o->type == GS_OPT_BOOL) {
                    if (eq)
                        return gs_error_set(err, -EINVAL, "%s takes no value", f->src);
                    f->opt = o;
                    f->value = bool_false;
                    return 1;
                }
            }
            if (!f->opt)
                return gs_error_set(err, -EINVAL, "unknown option %s (see --help)", f->src);
        }
        if (eq) {
            f->value = eq + 1;
        } else if (f->kind == FLAG_OPTION && f->opt->type == GS_OPT_BOOL) {
            f->value = bool_true;
        } else {
            if (*i >= argc)
                return gs_error_set(err, -EINVAL, "%s: missing value", f->src);
            f->value = argv[(*i)++];
        }
        return 1;
    }
    /* short flags, possibly clustered: -vq, -c30, -c 30 */
    if (*short_pos == 0)
        *short_pos = 1;
    char c = a[*short_pos];
    snprintf(f->src, sizeof(f->src), "-%c", c);
    const char *rest = a + *short_pos + 1;
    if (c == 'h') {
        f->kind = FLAG_HELP;
    } else {
        f->opt = find_short(spec, c);
        if (!f->opt)
            return gs_error_set(err, -EINVAL, "unknown option %s (see --help)", f->src);
    }
    if (f->kind == FLAG_HELP || f->opt->type == GS_OPT_BOOL) {
        if (f->kind == FLAG_OPTION)
            f->value = bool_true;
        if (*rest) {
            (*short_pos)++;
        } else {
            *short_pos = 0;
            (*i)++;
        }
        return 1;
    }
    *short_pos = 0;
    (*i)++;
    if (*rest) {
        f->value = rest;
    } else {
        if (*i >= argc)
            return gs_error_set(err, -EINVAL, "%s: missing value", f->src);
        f->value = argv[(*i)++];
    }
    return 1;
}

int gs_config_parse(const struct gs_config_spec *spec, void *cfg, int argc, char *const *argv,
                    FILE *out, int *first_arg, struct gs_error *err)
{
    int first = argc;
    int r = gs_config_defaults(spec, cfg, err);
    if (r < 0)
        return r;

    /* Pass 1: find --config (and check the syntax of every flag). */
    const char *config_path = spec->config_env ? getenv(spec->config_env) : NULL;
    if (config_path && !*config_path)
        config_path = NULL;
    bool help = false, print = false, version = false;
    struct flag f;
    int i = 1, sp = 0;
    while ((r = next_flag(spec, argc, argv, &i, &sp, &f, &first, err)) > 0) {
        if (f.kind == FLAG_CONFIG)
            config_path = f.value;
        else if (f.kind == FLAG_HELP)
            help = true;
        else if (f.kind == FLAG_PRINT)
            print = true;
        else if (f.kind == FLAG_VERSION)
            version = true;
    }
    if (r < 0)
        return r;
    if (first_arg)
        *first_arg = first;
    if (help) {
        gs_config_print_help(spec, out);
        return GS_CONFIG_EXIT;
    }
    if (version) {
        gs_version_print(spec->program, out);
        return GS_CONFIG_EXIT;
    }

    if (config_path) {
        r = gs_config_load_file(spec, cfg, config_path, err);
        if (r < 0)
            return r;
    }
    for (size_t k = 0; k < spec->n_options; k++) {
        const struct gs_option *o = &spec->options[k];
        const char *v = o->env ? getenv(o->env) : NULL;
        if (!v)
            continue;
        r = apply(o, cfg, v, o->env, err);
        if (r < 0)
            return r;
    }
    /* Pass 2: apply the flags in order (the last one wins). */
    i = 1;
    sp = 0;
    while ((r = next_flag(spec, argc, argv, &i, &sp, &f, &first, err)) > 0) {
        if (f.kind != FLAG_OPTION)
            continue;
        r = apply(f.opt, cfg, f.value, f.src, err);
        if (r < 0)
            return r;
    }
    if (r < 0)
        return r;
    if (print) {
        gs_config_print(spec, cfg, out);
        return GS_CONFIG_EXIT;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------------- */

static const char *metavar(const struct gs_option *o, char *buf, size_t len)
{
    if (o->metavar)
        return o->metavar;
    switch (o->type) {
    case GS_OPT_STRING:
        return "STRING";
    case GS_OPT_INT:
        return "INT";
    case GS_OPT_UINT:
        return "N";
    case GS_OPT_DURATION:
        return "DURATION";
    case GS_OPT_QUANTITY:
        return "QUANTITY";
    case GS_OPT_ENUM: {
        size_t n = 0;
        buf[0] = '\0';
        for (int k = 0; o->choices[k] && n < len; k++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? "|" : "", o->choices[k]);
        return buf;
    }
    case GS_OPT_BOOL:
    default:
        return "";
    }
}

static void help_line(FILE *out, char short_flag, const char *flag, const char *meta,
                      const char *help)
{
    char left[128];
    if (short_flag)
        snprintf(left, sizeof(left), "  -%c, --%s%s%s", short_flag, flag, *meta ? "=" : "", meta);
    else
        snprintf(left, sizeof(left), "      --%s%s%s", flag, *meta ? "=" : "", meta);
    if (strlen(left) < 30)
        fprintf(out, "%-30s%s\n", left, help);
    else
        fprintf(out, "%s\n%-30s%s\n", left, "", help);
}

void gs_config_print_help(const struct gs_config_spec *spec, FILE *out)
{
    fprintf(out, "Usage: %s %s\n", spec->program, spec->usage ? spec->usage : "[OPTIONS]");
    if (spec->summary)
        fprintf(out, "%s\n", spec->summary);
    fprintf(out, "\nOptions:\n");
    for (size_t i = 0; i < spec->n_options; i++) {
        const struct gs_option *o = &spec->options[i];
        char mbuf[128], flag[96], text[512];
        if (o->type == GS_OPT_BOOL)
            snprintf(flag, sizeof(flag), "[no-]%s", flag_name(o));
        else
            snprintf(flag, sizeof(flag), "%s", flag_name(o));
        size_t n = (size_t)snprintf(text, sizeof(text), "%s", o->help);
        const char *def = o->def;
        if (!def && o->type == GS_OPT_ENUM)
            def = o->choices[0];
        if (def && n < sizeof(text))
            n += (size_t)snprintf(text + n, sizeof(text) - n, " (default %s)", def);
        if ((o->min || o->max) && n < sizeof(text))
            n += (size_t)snprintf(text + n, sizeof(text) - n, " [%s..%s]", o->min ? o->min : "",
                                  o->max ? o->max : "");
        if (o->env && n < sizeof(text))
            snprintf(text + n, sizeof(text) - n, " [env %s]", o->env);
        help_line(out, o->short_flag, flag, metavar(o, mbuf, sizeof(mbuf)), text);
    }
    char cfg_help[160];
    snprintf(cfg_help, sizeof(cfg_help),
             "read options from a YAML or JSON file keyed by option name%s%s%s",
             spec->config_env ? " [env " : "", spec->config_env ? spec->config_env : "",
             spec->config_env ? "]" : "");
    help_line(out, 0, "config", "FILE", cfg_help);
    help_line(out, 0, "print-config", "", "print the effective configuration as YAML and exit");
    help_line(out, 0, "version", "", "print the version and commit and exit");
    help_line(out, 'h', "help", "", "show this help and exit");
    fprintf(out, "\nPrecedence: defaults < --config file < environment < flags.\n");
}

static void print_json_string(FILE *out, const char *s)
{
    json_t *j = json_string(s);
    char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fprintf(out, "%s", d ? d : "null");
    free(d);
    json_decref(j);
}

void gs_config_print(const struct gs_config_spec *spec, const void *cfg, FILE *out)
{
    fprintf(out, "# %s configuration (defaults < config file < environment < flags)\n",
            spec->program);
    for (size_t i = 0; i < spec->n_options; i++) {
        const struct gs_option *o = &spec->options[i];
        const void *p = (const char *)cfg + o->offset;
        char buf[GS_QUANTITY_STR_MAX];
        fprintf(out, "%s: ", o->name);
        switch (o->type) {
        case GS_OPT_STRING: {
            const char *s = *(char *const *)p;
            if (s)
                print_json_string(out, s);
            else
                fprintf(out, "null");
            break;
        }
        case GS_OPT_INT:
            fprintf(out, "%" PRId64, *(const int64_t *)p);
            break;
        case GS_OPT_UINT:
            fprintf(out, "%" PRIu64, *(const uint64_t *)p);
            break;
        case GS_OPT_BOOL:
            fprintf(out, "%s", *(const bool *)p ? "true" : "false");
            break;
        case GS_OPT_DURATION:
            gs_format_duration(*(const int64_t *)p, buf, sizeof(buf));
            print_json_string(out, buf);
            break;
        case GS_OPT_QUANTITY:
            print_json_string(out, gs_quantity_str((const struct gs_quantity *)p, buf));
            break;
        case GS_OPT_ENUM: {
            int e = *(const int *)p;
            int n = 0;
            while (o->choices[n])
                n++;
            print_json_string(out, e >= 0 && e < n ? o->choices[e] : "");
            break;
        }
        }
        fprintf(out, "\n");
    }
}

void gs_config_free(const struct gs_config_spec *spec, void *cfg)
{
    for (size_t i = 0; i < spec->n_options; i++) {
        const struct gs_option *o = &spec->options[i];
        if (o->type == GS_OPT_STRING) {
            char **p = field(cfg, o);
            free(*p);
            *p = NULL;
        }
    }
}
