/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "tap.h"

static const char claim[] =
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\n"
    " \"metadata\":{\"name\":\"c1\",\"namespace\":\"ns\",\n"
    "   \"annotations\":{\"nvidia.com/gpu\":\"1\",\"a[b]\":\"x\"},\"generation\":3,\n"
    "   \"deletionTimestamp\":null},\n"
    " \"spec\":{\"devices\":{\"requests\":[\n"
    "   {\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"hami-core-gpu\",\"count\":1,\n"
    "     \"capacity\":{\"requests\":{\"cores\":30,\"memory\":\"4Gi\",\"frac\":0.5,\n"
    "       \"bad\":\"lots\",\"huge\":\"8Ei\",\"flag\":true}}}},\n"
    "   {\"name\":7,\"weight\":1.5,\"enabled\":false}]}}}\n";

static void test_parse(void)
{
    struct gs_error err = {0};
    _cleanup_(gs_json_decrefp) json_t *root = gs_json_parse(claim, strlen(claim), 1 << 20, &err);
    ok(root != NULL, "claim parses");

    json_t *v = gs_json_parse(claim, strlen(claim), 100, &err);
    ok(v == NULL, "oversize body refused");
    is_int(err.code, -E2BIG, "oversize -> -E2BIG");
    like_str(err.msg, "exceeds the limit of 100 bytes", "oversize message names the limit");

    const char *bad = "{\"a\": 1,\n \"b\": [1, 2,, 3]}";
    v = gs_json_parse(bad, strlen(bad), 1024, &err);
    ok(v == NULL, "malformed JSON refused");
    is_int(err.code, -EINVAL, "malformed -> -EINVAL");
    like_str(err.msg, "line 2, column", "malformed message names line and column");

    const char *dup = "{\"a\": 1, \"a\": 2}";
    v = gs_json_parse(dup, strlen(dup), 1024, &err);
    ok(v == NULL, "duplicate key refused");
    like_str(err.msg, "duplicate", "duplicate key reported");

    const char nul[] = "{\"a\": \"x\\u0000y\"}";
    v = gs_json_parse(nul, strlen(nul), 1024, &err);
    ok(v == NULL, "embedded NUL refused");

    v = gs_json_parse("", 0, 1024, &err);
    ok(v == NULL, "empty input refused");
    is_int(err.code, -EINVAL, "empty -> -EINVAL");

    const char trunc[] = "{\"a\": [1, 2";
    v = gs_json_parse(trunc, strlen(trunc), 1024, &err);
    ok(v == NULL, "truncated JSON refused");
    like_str(err.msg, "invalid JSON at line 1", "truncated reports position");

    /* Only `len` bytes are read: trailing garbage beyond len is not looked at. */
    const char part[] = "[1,2]garbage";
    v = gs_json_parse(part, 5, 1024, &err);
    ok(v && json_array_size(v) == 2, "len bounds the input");
    json_decref(v);
    v = gs_json_parse(part, strlen(part), 1024, &err);
    ok(v == NULL, "trailing garbage refused");

    v = gs_json_parse("42", 2, 1024, &err);
    ok(v && json_integer_value(v) == 42, "scalar top-level value accepted");
    json_decref(v);

    /* Deep nesting is refused, not a stack overflow. */
    size_t depth = 100000;
    char *deep = malloc(depth * 2);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    v = gs_json_parse(deep, depth * 2, depth * 2, &err);
    ok(v == NULL, "100000-deep nesting refused");
    like_str(err.msg, "invalid JSON", "deep nesting reported");
    json_decref(v);
    free(deep);
}

static void test_getters(void)
{
    struct gs_error err = {0};
    _cleanup_(gs_json_decrefp) json_t *root = gs_json_parse(claim, strlen(claim), 1 << 20, &err);
    const char *s = NULL;
    int64_t i = 0;
    bool b = false;
    double d = 0;
    json_t *o = NULL;

    is_int(gs_json_get_string(root, "spec.devices.requests[0].name", &s, &err), 0, "get name");
    is_str(s, "gpu", "requests[0].name = gpu");
    is_int(gs_json_get_string(root, "metadata[\"annotations\"][\"nvidia.com/gpu\"]", &s, &err), 0,
           "bracket-quoted keys");
    is_str(s, "1", "annotation with dots and slash");
    is_int(gs_json_get_string(root, "metadata.annotations[\"a[b]\"]", &s, &err), 0,
           "quoted key with brackets");
    is_str(s, "x", "annotation with brackets");
    is_int(gs_json_get_int(root, "metadata.generation", &i, &err), 0, "get int");
    is_int(i, 3, "generation = 3");
    is_int(gs_json_get_bool(root, "spec.devices.requests[1].enabled", &b, &err), 0, "get bool");
    ok(!b, "enabled = false");
    is_int(gs_json_get_double(root, "spec.devices.requests[1].weight", &d, &err), 0, "get real");
    ok(d == 1.5, "weight = 1.5");
    is_int(gs_json_get_double(root, "metadata.generation", &d, &err), 0, "integer as double");
    ok(d == 3.0, "generation as double = 3");
    is_int(gs_json_get_array(root, "spec.devices.requests", &o, &err), 0, "get array");
    is_uint(json_array_size(o), 2, "two requests");
    is_int(gs_json_get_object(root, "spec.devices.requests[0].exactly", &o, &err), 0, "get object");
    is_int(gs_json_get_string(o, "deviceClassName", &s, &err), 0, "getter on a sub-object");
    is_str(s, "hami-core-gpu", "deviceClassName");

    /* missing */
    is_int(gs_json_get_string(root, "spec.devices.requests[0].nope", &s, &err), -ENOENT,
           "missing leaf");
    is_str(err.msg, "spec.devices.requests[0].nope: missing", "missing leaf names the path");
    is_int(gs_json_get_string(root, "spec.nodevices.requests[0].name", &s, &err), -ENOENT,
           "missing intermediate");
    is_str(err.msg, "spec.nodevices: missing", "missing intermediate names where it stopped");
    is_int(gs_json_get_string(root, "spec.devices.requests[5].name", &s, &err), -ENOENT,
           "index out of range");
    is_str(err.msg, "spec.devices.requests[5]: missing (array has 2 elements)",
           "index out of range names the length");
    is_int(gs_json_get_string(root, "metadata.deletionTimestamp", &s, &err), -ENOENT,
           "null is missing");
    is_str(err.msg, "metadata.deletionTimestamp: missing (null)", "null reported");
    is_int(gs_json_get_string(root, "metadata.deletionTimestamp.x", &s, &err), -ENOENT,
           "below null is missing");
    is_str(err.msg, "metadata.deletionTimestamp.x: missing", "below null message");

    /* wrong types */
    is_int(gs_json_get_string(root, "spec.devices.requests[1].name", &s, &err), -EINVAL,
           "number where string expected");
    is_str(err.msg, "spec.devices.requests[1].name: expected string, got number",
           "wrong type message");
    is_int(gs_json_get_int(root, "metadata.name", &i, &err), -EINVAL, "string where int");
    is_str(err.msg, "metadata.name: expected integer, got string", "int wrong type message");
    is_int(gs_json_get_int(root, "spec.devices.requests[1].weight", &i, &err), -EINVAL,
           "real where int");
    is_str(err.msg, "spec.devices.requests[1].weight: expected integer, got number 1.5",
           "real where int message");
    json_t *thirty = gs_json_parse("{\"n\": 30.0}", 11, 64, &err);
    is_int(gs_json_get_int(thirty, "n", &i, &err), -EINVAL, "30.0 is not an integer");
    is_str(err.msg, "n: expected integer, got number 30.0", "30.0 shown as written");
    json_decref(thirty);
    is_int(gs_json_get_bool(root, "metadata.name", &b, &err), -EINVAL, "string where bool");
    is_str(err.msg, "metadata.name: expected boolean, got string", "bool wrong type message");
    is_int(gs_json_get_string(root, "metadata.name.first", &s, &err), -EINVAL,
           "descending into a string");
    is_str(err.msg, "metadata.name: expected object, got string", "intermediate wrong type");
    is_int(gs_json_get_string(root, "spec.devices[0]", &s, &err), -EINVAL, "index on object");
    is_str(err.msg, "spec.devices: expected array, got object", "index on object message");
    is_int(gs_json_get_object(root, "spec.devices.requests", &o, &err), -EINVAL,
           "array where object");
    is_str(err.msg, "spec.devices.requests: expected object, got array", "object wrong type");
    is_int(gs_json_get_array(root, "kind", &o, &err), -EINVAL, "string where array");
    is_str(err.msg, "kind: expected array, got string", "array wrong type");

    /* ranges */
    is_int(gs_json_get_int_range(root, "spec.devices.requests[0].exactly.capacity.requests.cores",
                                 0, 100, &i, &err),
           0, "cores within range");
    is_int(i, 30, "cores = 30");
    is_int(gs_json_get_int_range(root, "spec.devices.requests[0].exactly.capacity.requests.cores",
                                 0, 20, &i, &err),
           -ERANGE, "cores above max");
    is_str(err.msg,
           "spec.devices.requests[0].exactly.capacity.requests.cores: 30 is above the maximum 20",
           "range message names the value and bound");
    is_int(gs_json_get_int_range(root, "metadata.generation", 5, 10, &i, &err), -ERANGE,
           "below min");
    is_str(err.msg, "metadata.generation: 3 is below the minimum 5", "below min message");

    /* malformed paths */
    const char *badpaths[] = {"",      ".a",    "a.",    "a..b",      "a[",
                              "a[x]",  "a[0",   "a[\"b", "a[\"b\"",   "a[0]b",
                              "a.[0]", "a[-1]", "a[]",   "a[\"b\"]c", "a[99999999999999999999999]"};
    for (size_t k = 0; k < GS_ARRAY_SIZE(badpaths); k++) {
        int r = gs_json_get_string(root, badpaths[k], &s, &err);
        if (badpaths[k][0] == '\0') {
            is_int(r, -EINVAL, "empty path addresses the document (an object, not a string)");
            continue;
        }
        is_int(r, -EINVAL, "malformed path \"%s\" refused", badpaths[k]);
        like_str(err.msg, "malformed JSON path", "malformed path \"%s\" reported", badpaths[k]);
    }
    char longpath[GS_JSON_PATH_MAX + 10];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[sizeof(longpath) - 1] = '\0';
    is_int(gs_json_get_string(root, longpath, &s, &err), -EINVAL, "overlong path refused");
    is_int(gs_json_get_string(NULL, "a", &s, &err), -ENOENT, "NULL document");
}

static void test_optional(void)
{
    struct gs_error err = {0};
    _cleanup_(gs_json_decrefp) json_t *root = gs_json_parse(claim, strlen(claim), 1 << 20, &err);
    const char *s = NULL;
    int64_t i = 0;
    bool b = true;
    json_t *o = (json_t *)1;

    is_int(gs_json_opt_string(root, "metadata.name", "dflt", &s, &err), 1, "opt present");
    is_str(s, "c1", "opt present value");
    is_int(gs_json_opt_string(root, "metadata.uid", "dflt", &s, &err), 0, "opt absent");
    is_str(s, "dflt", "opt absent gives default");
    is_int(gs_json_opt_string(root, "status.allocation.x", "d2", &s, &err), 0,
           "opt absent intermediate");
    is_str(s, "d2", "opt absent intermediate default");
    is_int(gs_json_opt_string(root, "metadata.deletionTimestamp", NULL, &s, &err), 0,
           "opt null is absent");
    ok(s == NULL, "opt null gives default NULL");
    is_int(gs_json_opt_string(root, "metadata.generation", "d", &s, &err), -EINVAL,
           "opt wrong type is an error");
    is_str(err.msg, "metadata.generation: expected string, got number", "opt wrong type message");
    is_int(gs_json_opt_string(root, "kind.x", "d", &s, &err), -EINVAL,
           "opt below a string is an error");
    is_int(gs_json_opt_int(root, "metadata.generation", 9, &i, &err), 1, "opt int present");
    is_int(i, 3, "opt int value");
    is_int(gs_json_opt_int(root, "metadata.nope", 9, &i, &err), 0, "opt int absent");
    is_int(i, 9, "opt int default");
    is_int(gs_json_opt_int(root, "metadata.name", 9, &i, &err), -EINVAL, "opt int wrong type");
    is_int(gs_json_opt_bool(root, "spec.devices.requests[1].enabled", true, &b, &err), 1,
           "opt bool present");
    ok(!b, "opt bool value");
    is_int(gs_json_opt_bool(root, "spec.devices.requests[0].enabled", true, &b, &err), 0,
           "opt bool absent");
    ok(b, "opt bool default");
    is_int(gs_json_opt_bool(root, "kind", true, &b, &err), -EINVAL, "opt bool wrong type");
    is_int(gs_json_opt_object(root, "status", &o, &err), 0, "opt object absent");
    ok(o == NULL, "opt object absent -> NULL");
    is_int(gs_json_opt_object(root, "metadata", &o, &err), 1, "opt object present");
    is_int(gs_json_opt_object(root, "kind", &o, &err), -EINVAL, "opt object wrong type");
    is_int(gs_json_opt_array(root, "spec.devices.requests", &o, &err), 1, "opt array present");
    is_int(gs_json_opt_array(root, "spec.devices.config", &o, &err), 0, "opt array absent");
    ok(o == NULL, "opt array absent -> NULL");
    is_int(gs_json_opt_array(root, "kind", &o, &err), -EINVAL, "opt array wrong type");
}

static void test_quantity(void)
{
    struct gs_error err = {0};
    _cleanup_(gs_json_decrefp) json_t *root = gs_json_parse(claim, strlen(claim), 1 << 20, &err);
    const char *base = "spec.devices.requests[0].exactly.capacity.requests.";
    char path[256], buf[GS_QUANTITY_STR_MAX];
    struct gs_quantity q;
#define P(leaf) (snprintf(path, sizeof(path), "%s%s", base, leaf), path)
    is_int(gs_json_get_quantity(root, P("memory"), &q, &err), 0, "quantity from string");
    is_str(gs_quantity_str(&q, buf), "4Gi", "memory = 4Gi");
    is_int(gs_json_get_quantity(root, P("cores"), &q, &err), 0, "quantity from integer");
    is_str(gs_quantity_str(&q, buf), "30", "cores = 30");
    is_int(gs_json_get_quantity(root, P("frac"), &q, &err), 0, "quantity from real");
    is_str(gs_quantity_str(&q, buf), "500m", "0.5 -> 500m");
    is_int(gs_json_get_quantity(root, P("bad"), &q, &err), -EINVAL, "bad quantity string");
    like_str(err.msg, "capacity.requests.bad: invalid quantity \"lots\"",
             "bad quantity names path and value");
    is_int(gs_json_get_quantity(root, P("huge"), &q, &err), -ERANGE, "quantity out of range");
    like_str(err.msg, "requests.huge: invalid quantity \"8Ei\": out of range",
             "range message names path and value");
    is_int(gs_json_get_quantity(root, P("flag"), &q, &err), -EINVAL, "boolean as quantity");
    like_str(err.msg, "requests.flag: expected quantity (string or number), got boolean",
             "boolean quantity message");
    is_int(gs_json_get_quantity(root, P("none"), &q, &err), -ENOENT, "missing quantity");
    struct gs_quantity def;
    gs_quantity_from_int64(100, GS_QUANTITY_DECIMAL_SI, &def);
    is_int(gs_json_opt_quantity(root, P("none"), &def, &q, &err), 0, "opt quantity absent");
    is_str(gs_quantity_str(&q, buf), "100", "opt quantity default");
    is_int(gs_json_opt_quantity(root, P("memory"), &def, &q, &err), 1, "opt quantity present");
    is_str(gs_quantity_str(&q, buf), "4Gi", "opt quantity value");
    is_int(gs_json_opt_quantity(root, P("bad"), &def, &q, &err), -EINVAL, "opt quantity bad");
#undef P
    json_t *r = json_real(0.1);
    is_int(gs_json_quantity_value(r, "x", &q, &err), 0, "0.1 as a JSON number");
    is_str(gs_quantity_str(&q, buf), "100m", "0.1 -> 100m (shortest decimal text)");
    json_t *many = gs_json_parse("[30.0, 1e3, 2.5e-3, 1e-7, 1.5e18]", 33, 64, &err);
    const char *want[] = {"30", "1k", "2500u", "100e-9", "1500P"};
    const int want_fmt[] = {GS_QUANTITY_DECIMAL_SI, GS_QUANTITY_DECIMAL_SI, GS_QUANTITY_DECIMAL_SI,
                            GS_QUANTITY_DECIMAL_EXPONENT, GS_QUANTITY_DECIMAL_SI};
    for (size_t k = 0; k < 5; k++) {
        is_int(gs_json_quantity_value(json_array_get(many, k), "n", &q, &err), 0,
               "JSON real %zu as quantity", k);
        is_int(q.format, want_fmt[k], "JSON real %zu format family", k);
        is_str(gs_quantity_str(&q, buf), want[k], "JSON real %zu canonical", k);
    }
    json_decref(many);
    json_decref(r);
}

int main(void)
{
    tap_plan_auto();
    test_parse();
    test_getters();
    test_optional();
    test_quantity();
    return tap_done();
}
