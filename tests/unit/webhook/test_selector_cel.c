/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generated selectors are real CEL with the intended meaning: each one is compiled and
 * evaluated by our DRA CEL engine (src/cel) against devices as a ResourceSlice publishes them.
 * Injection attempts compile to plain string comparisons that match nothing.
 */
#include <string.h>

#include "cel/cel.h"
#include "tap.h"
#include "webhook/selector.h"

#define DRIVER "hami-core-gpu.project-hami.io"

struct dev {
    const char *name, *product, *uuid, *memory;
};

static const struct dev devs[] = {
    {"a100", "NVIDIA A100-SXM4-80GB", "GPU-aaaa", "80Gi"},
    {"t4", "Tesla T4", "GPU-cccc", "15Gi"},
};

/* Evaluate the one selector built from `key: value` on every device; results into got[]. */
static int eval_all(json_t *selectors, bool *got, char *why, size_t why_len)
{
    const char *expr = json_string_value(
        json_object_get(json_object_get(json_array_get(selectors, 0), "cel"), "expression"));
    struct gs_error err = {0};
    struct cel_program *p = expr ? cel_compile(expr, &err) : NULL;
    if (!p) {
        snprintf(why, why_len, "compile %s: %s", expr ? expr : "(none)", err.msg);
        return -1;
    }
    for (size_t i = 0; i < 2; i++) {
        json_t *attrs = json_pack("{s:{s:s},s:{s:s}}", "productName", "string", devs[i].product,
                                  "uuid", "string", devs[i].uuid);
        json_t *cap = json_pack("{s:{s:s},s:{s:s}}", "memory", "value", devs[i].memory, "cores",
                                "value", "100");
        struct cel_device d = {.driver = DRIVER,
                               .attributes = attrs,
                               .capacity = cap,
                               .allow_multiple_allocations = true};
        int r = cel_eval_device(p, &d, &got[i], &err);
        json_decref(attrs);
        json_decref(cap);
        if (r < 0) {
            snprintf(why, why_len, "eval %s on %s: %s", expr, devs[i].name, err.msg);
            cel_program_free(p);
            return -1;
        }
    }
    cel_program_free(p);
    return 0;
}

static void check_as(const char *label, const char *key, const char *value, bool want_a100,
                     bool want_t4)
{
    json_t *ann = json_pack("{s:s}", key, value);
    json_t *sels = json_array();
    struct gs_error err = {0};
    bool got[2] = {false, false};
    char why[600] = "";
    int r = wh_selectors_from_annotations(ann, DRIVER, sels, &err);
    if (r == 0)
        r = eval_all(sels, got, why, sizeof(why));
    if (!ok(r == 0, "%s: %s compiles and evaluates", key, label))
        diag("%s %s", err.msg, why);
    ok(got[0] == want_a100 && got[1] == want_t4, "%s: %s -> A100 %s, T4 %s", key, label,
       want_a100 ? "selected" : "not selected", want_t4 ? "selected" : "not selected");
    json_decref(ann);
    json_decref(sels);
}

static void check(const char *key, const char *value, bool want_a100, bool want_t4)
{
    check_as(value, key, value, want_a100, want_t4);
}

int main(void)
{
    tap_plan_auto();
    check(WH_ANN_USE_TYPE, "A100", true, false);
    check(WH_ANN_USE_TYPE, "a100, H100", true, false);
    check(WH_ANN_USE_TYPE, "t4,a100", true, true);
    check(WH_ANN_NOUSE_TYPE, "tesla T4", true, false);
    check(WH_ANN_USE_UUID, "GPU-aaaa, GPU-bbbb", true, false);
    check(WH_ANN_USE_UUID, "GPU-AAAA", false, false);
    check(WH_ANN_NOUSE_UUID, "GPU-cccc", true, false);
    /* Injection attempts: still one string literal each, matching nothing. */
    check_as("quote-close injection", WH_ANN_USE_TYPE, "a100\") || true || (\"", false, false);
    check_as("backslash, newline and unicode injection", WH_ANN_USE_UUID,
             "x\\\"]) || true || ([\"\n\xc3\xa9\xf0\x9f\x98\x80", false, false);
    check_as("negated injection", WH_ANN_NOUSE_TYPE, "\") || false || (\"", true, true);

    for (size_t i = 0; i < 2; i++) {
        json_t *sels = json_array();
        struct gs_error err = {0};
        bool got[2];
        char why[600] = "";
        int64_t bytes = i == 0 ? 80LL << 30 : 15LL << 30;
        int r = wh_selector_memory_size(DRIVER, bytes, sels, &err);
        if (r == 0)
            r = eval_all(sels, got, why, sizeof(why));
        if (ok(r == 0, "memory-size selector %s compiles and evaluates", devs[i].memory))
            ok(got[i] && !got[1 - i], "memory-size selector %s selects only that size",
               devs[i].memory);
        else
            diag("%s %s", err.msg, why);
        json_decref(sels);
    }
    return tap_done();
}
