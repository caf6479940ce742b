/* SPDX-License-Identifier: Apache-2.0 */
/* CEL selectors from legacy annotations; every user value is a quoted CEL string literal. */
#include "webhook/selector.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/macros.h"
#include "config/quantity.h"

static int append(char *buf, size_t cap, const char *s, size_t len)
{
    size_t used = strlen(buf);
    if (len >= cap - used)
        return -ENOSPC;
    memcpy(buf + used, s, len);
    buf[used + len] = '\0';
    return 0;
}

static int append_str(char *buf, size_t cap, const char *s)
{
    return append(buf, cap, s, strlen(s));
}

/* Decode one UTF-8 sequence at s[0..len); returns its length, or 0 when invalid. */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

int wh_cel_quote(char *buf, size_t cap, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    char esc[16];
    int r = append(buf, cap, "\"", 1);
    for (size_t i = 0; r == 0 && i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            return -EINVAL;
        i += n;
        if (cp == '"' || cp == '\\') {
            esc[0] = '\\', esc[1] = (char)cp, esc[2] = '\0';
        } else if (cp < 0x20 || cp == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", (unsigned)cp);
        } else if (cp < 0x80) {
            esc[0] = (char)cp, esc[1] = '\0';
        } else if (cp <= 0xffff) {
            snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
        } else {
            snprintf(esc, sizeof(esc), "\\U%08x", (unsigned)cp);
        }
        r = append_str(buf, cap, esc);
    }
    return r < 0 ? r : append(buf, cap, "\"", 1);
}

/* device.attributes["<driver>"].<attr> */
static int attr_ref(char *buf, size_t cap, const char *driver, const char *attr)
{
    int r = append_str(buf, cap, "device.attributes[");
    if (r == 0)
        r = wh_cel_quote(buf, cap, driver, strlen(driver));
    if (r == 0)
        r = append_str(buf, cap, "].");
    return r == 0 ? append_str(buf, cap, attr) : r;
}

static int push_selector(json_t *selectors, const char *expr)
{
    json_t *sel = json_pack("{s:{s:s}}", "cel", "expression", expr);
    if (!sel || json_array_append_new(selectors, sel) < 0)
        return -ENOMEM;
    return 0;
}

/* Iterate over the comma-separated entries of `list`, trimmed, skipping empty ones. */
static const char *next_entry(const char **cursor, size_t *len)
{
    const char *p = *cursor;
    while (*p) {
        const char *start = p, *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        p = *end ? end + 1 : end;
        while (start < end && isspace((unsigned char)*start))
            start++;
        while (end > start && isspace((unsigned char)end[-1]))
            end--;
        if (end > start) {
            *cursor = p;
            *len = (size_t)(end - start);
            return start;
        }
    }
    *cursor = p;
    return NULL;
}

/* `(<attr> in ["a", "b"])`, negated for nouse: the UUID selectors, and the exact type match. 1 when
 * the list has no entry. */
static int in_list_selector(char *buf, size_t cap, const char *driver, const char *attr,
                            const char *list, bool negate)
{
    const char *cursor = list, *e;
    size_t len;
    bool first = true;
    int r = append_str(buf, cap, negate ? "!(" : "(");
    if (r == 0)
        r = attr_ref(buf, cap, driver, attr);
    if (r == 0)
        r = append_str(buf, cap, " in [");
    while (r == 0 && (e = next_entry(&cursor, &len))) {
        if (!first)
            r = append_str(buf, cap, ", ");
        if (r == 0)
            r = wh_cel_quote(buf, cap, e, len);
        first = false;
    }
    if (r == 0)
        r = append_str(buf, cap, "])");
    return r < 0 ? r : (first ? 1 : 0);
}

/* `(<productName>.lowerAscii().contains("a100") || ...)`, negated for nouse: legacy HAMi's
 * case-insensitive substring (HAMi pkg/device/nvidia checkType: strings.Contains on the upper-cased
 * type). WH_TYPE_MATCH_EXACT: `<productName> in ["A100", ...]`, HAMi-DRA's exact comparison
 * (pkg/webhook/dra/mutating.go addAnnotationSelectors). */
static int type_selector(char *buf, size_t cap, const char *driver, const char *list, bool negate,
                         enum wh_type_match match)
{
    const char *cursor = list, *e;
    size_t len;
    bool first = true;
    char lower[WH_CEL_MAX_LEN];
    if (match == WH_TYPE_MATCH_EXACT)
        return in_list_selector(buf, cap, driver, "productName", list, negate);
    int r = append_str(buf, cap, negate ? "!(" : "(");
    while (r == 0 && (e = next_entry(&cursor, &len))) {
        if (len >= sizeof(lower))
            return -ENOSPC;
        for (size_t i = 0; i < len; i++)
            lower[i] = (char)tolower((unsigned char)e[i]);
        if (!first)
            r = append_str(buf, cap, " || ");
        if (r == 0)
            r = attr_ref(buf, cap, driver, "productName");
        if (r == 0)
            r = append_str(buf, cap, ".lowerAscii().contains(");
        if (r == 0)
            r = wh_cel_quote(buf, cap, lower, len);
        if (r == 0)
            r = append_str(buf, cap, ")");
        first = false;
    }
    if (r == 0)
        r = append_str(buf, cap, ")");
    return r < 0 ? r : (first ? 1 : 0);
}

const struct wh_selector_keys wh_nvidia_selector_keys = {WH_ANN_USE_UUID, WH_ANN_NOUSE_UUID,
                                                         WH_ANN_USE_TYPE, WH_ANN_NOUSE_TYPE};

int wh_selectors_build(const struct wh_selector_keys *keys, const json_t *annotations,
                       const char *driver, enum wh_type_match match, bool fail_closed,
                       json_t *selectors, struct gs_error *err)
{
    const struct {
        const char *key;
        bool uuid, negate;
    } kinds[] = {
        {keys->use_uuid, true, false},
        {keys->nouse_uuid, true, true},
        {keys->use_type, false, false},
        {keys->nouse_type, false, true},
    };
    if (!json_is_object(annotations))
        return 0;
    for (size_t k = 0; k < GS_ARRAY_SIZE(kinds); k++) {
        const json_t *v = kinds[k].key ? json_object_get(annotations, kinds[k].key) : NULL;
        if (!v)
            continue;
        if (!json_is_string(v))
            return gs_error_set(err, -EINVAL, "annotation %s: value is not a string", kinds[k].key);
        const char *list = json_string_value(v);
        if (strlen(list) != json_string_length(v))
            return gs_error_set(err, -EINVAL, "annotation %s: value contains a NUL character",
                                kinds[k].key);
        char expr[WH_CEL_MAX_LEN + 1] = "";
        int r = kinds[k].uuid
                    ? in_list_selector(expr, sizeof(expr), driver, "uuid", list, kinds[k].negate)
                    : type_selector(expr, sizeof(expr), driver, list, kinds[k].negate, match);
        if (r == -ENOSPC) /* the pod's own value: denied as invalid (422), not a server error */
            return gs_error_set(err, -EINVAL,
                                "annotation %s: the selector would be longer than %d bytes, the "
                                "Kubernetes limit for a CEL expression",
                                kinds[k].key, WH_CEL_MAX_LEN);
        if (r == -EINVAL)
            return gs_error_set(err, r, "annotation %s: value is not valid UTF-8", kinds[k].key);
        if (r < 0)
            return gs_error_set(err, r, "annotation %s: %s", kinds[k].key, gs_strerror(r));
        if (r == 1 && fail_closed) {
            /* An allow or deny list that trims to nothing: HAMi-DRA refuses the pod
             * (addAnnotationSelectors "has no usable value") rather than admit it onto any
             * device. */
            char q[80];
            size_t n = 0;
            for (const char *p = list; *p && n + 5 < sizeof(q); p++) {
                unsigned char c = (unsigned char)*p;
                if (c == '"' || c == '\\')
                    q[n++] = '\\', q[n++] = (char)c;
                else if (c < 0x20)
                    n += (size_t)snprintf(q + n, sizeof(q) - n, "\\x%02x", c);
                else
                    q[n++] = (char)c;
            }
            q[n] = '\0';
            return gs_error_set(err, -EINVAL,
                                "annotation %s: \"%s\" selects no device (no entry is left "
                                "after trimming spaces and commas); name at least one %s or "
                                "remove the annotation",
                                kinds[k].key, q, kinds[k].uuid ? "UUID" : "type");
        }
        if (r == 1)
            continue; /* legacy route: only empty entries, no constraint (HAMi's rule) */
        if (push_selector(selectors, expr) < 0)
            return gs_error_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

int wh_selectors_from_annotations(const json_t *annotations, const char *driver, json_t *selectors,
                                  struct gs_error *err)
{
    return wh_selectors_build(&wh_nvidia_selector_keys, annotations, driver,
                              WH_TYPE_MATCH_SUBSTRING, false, selectors, err);
}

int wh_selector_memory_size(const char *driver, int64_t bytes, json_t *selectors,
                            struct gs_error *err)
{
    char expr[512] = "", q[GS_QUANTITY_STR_MAX];
    struct gs_quantity qty;
    gs_quantity_from_int64(bytes, GS_QUANTITY_BINARY_SI, &qty);
    int r = gs_quantity_format(&qty, q, sizeof(q));
    if (r == 0)
        r = append_str(expr, sizeof(expr), "device.capacity[");
    if (r == 0)
        r = wh_cel_quote(expr, sizeof(expr), driver, strlen(driver));
    if (r == 0)
        r = append_str(expr, sizeof(expr), "].memory.compareTo(quantity(");
    if (r == 0)
        r = wh_cel_quote(expr, sizeof(expr), q, strlen(q));
    if (r == 0)
        r = append_str(expr, sizeof(expr), ")) == 0");
    if (r < 0)
        return gs_error_set(err, r, "memory size selector for %lld bytes: %s", (long long)bytes,
                            gs_strerror(r));
    if (push_selector(selectors, expr) < 0)
        return gs_error_set(err, -ENOMEM, "out of memory");
    return 0;
}

void wh_utf8_sanitize(char *s)
{
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (n == 0) {
            s[i] = '?';
            n = 1;
        }
        i += n;
    }
}
