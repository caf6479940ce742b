/* SPDX-License-Identifier: Apache-2.0 */
/* CEL string quoting and annotation selectors: no annotation value can inject CEL. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/selector.h"

static const char *quote(const char *s, size_t len, int *rc)
{
    static char buf[256];
    buf[0] = '\0';
    *rc = wh_cel_quote(buf, sizeof(buf), s, len);
    return buf;
}

#define Q(lit, want)                                                                               \
    do {                                                                                           \
        int rc_;                                                                                   \
        const char *got_ = quote(lit, sizeof(lit) - 1, &rc_);                                      \
        is_int(rc_, 0, "quote %s: ok", #lit);                                                      \
        is_str(got_, want, "quote %s", #lit);                                                      \
    } while (0)

#define BAD(lit, why)                                                                              \
    do {                                                                                           \
        int rc_;                                                                                   \
        quote(lit, sizeof(lit) - 1, &rc_);                                                         \
        is_int(rc_, -EINVAL, "invalid UTF-8 refused: %s", why);                                    \
    } while (0)

static json_t *ann(const char *k1, const char *v1)
{
    return json_pack("{s:s}", k1, v1);
}

static const char *first_expr(json_t *sels)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(sels, 0), "cel"), "expression"));
}

int main(void)
{
    tap_plan_auto();
    Q("A100", "\"A100\"");
    Q("a\"b", "\"a\\\"b\"");
    Q("a\\b", "\"a\\\\b\"");
    Q("\") || true || (\"", "\"\\\") || true || (\\\"\"");
    Q("l1\nl2\t\x7f", "\"l1\\x0al2\\x09\\x7f\"");
    Q("\xc3\xa9", "\"\\u00e9\"");
    Q("\xe2\x82\xac", "\"\\u20ac\"");
    Q("\xf0\x9f\x98\x80", "\"\\U0001f600\"");
    Q("a\0b", "\"a\\x00b\"");
    Q("", "\"\"");
    BAD("\xff", "0xff");
    BAD("\xc0\xaf", "overlong /");
    BAD("\xed\xa0\x80", "UTF-16 surrogate");
    BAD("\xe2\x82", "truncated sequence");
    BAD("\xf4\x90\x80\x80", "above U+10FFFF");
    {
        char small[6] = "";
        is_int(wh_cel_quote(small, sizeof(small), "abcdef", 6), -ENOSPC, "too small: -ENOSPC");
    }

    struct gs_error err = {0};
    json_t *sels = json_array();
    json_t *a = ann(WH_ANN_USE_UUID, " GPU-1 ,, GPU-2 ");
    is_int(wh_selectors_from_annotations(a, "d.example.com", sels, &err), 0, "uuid list");
    is_str(first_expr(sels),
           "(device.attributes[\"d.example.com\"].uuid in [\"GPU-1\", \"GPU-2\"])",
           "uuid entries trimmed, empty ones skipped");
    json_decref(a);
    json_array_clear(sels);

    a = ann(WH_ANN_NOUSE_TYPE, "T4");
    is_int(wh_selectors_from_annotations(a, "d", sels, &err), 0, "nouse type");
    is_str(first_expr(sels),
           "!(device.attributes[\"d\"].productName.lowerAscii().contains(\"t4\"))",
           "nouse-gputype negated, lower-cased");
    json_decref(a);
    json_array_clear(sels);

    a = ann(WH_ANN_USE_TYPE, " , ");
    is_int(wh_selectors_from_annotations(a, "d", sels, &err), 0, "only empty entries");
    is_int(json_array_size(sels), 0, "no selector for an empty list");
    json_decref(a);

    a = json_pack("{s:i}", WH_ANN_USE_UUID, 5);
    is_int(wh_selectors_from_annotations(a, "d", sels, &err), -EINVAL, "non-string annotation");
    is_str(err.msg, "annotation nvidia.com/use-gpuuuid: value is not a string", "message");
    json_decref(a);

    char *big = malloc(20001);
    memset(big, 'x', 20000);
    big[20000] = '\0';
    a = ann(WH_ANN_USE_TYPE, big);
    is_int(wh_selectors_from_annotations(a, "d", sels, &err), -EINVAL,
           "over the CEL limit: -EINVAL (the pod is invalid: 422)");
    like_str(err.msg, "longer than 10240 bytes", "message names the limit");
    json_decref(a);
    free(big);

    is_int(wh_selectors_from_annotations(NULL, "d", sels, &err), 0, "no annotations: ok");
    is_int(wh_selector_memory_size("d", 15LL << 30, sels, &err), 0, "memory selector");
    is_str(first_expr(sels), "device.capacity[\"d\"].memory.compareTo(quantity(\"15Gi\")) == 0",
           "memory size selector");
    json_decref(sels);

    char msg[] = "ok \xe2\x82 cut \xff end \xc3\xa9";
    wh_utf8_sanitize(msg);
    is_str(msg, "ok ?? cut ? end \xc3\xa9", "sanitize replaces invalid bytes only");
    return tap_done();
}
