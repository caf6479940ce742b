/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "config/json.h"
#include "config/yaml.h"
#include "tap.h"

/* Load one document and return it compactly dumped with sorted keys (caller frees). */
static char *load_dump(const char *text, struct gs_error *err)
{
    json_t *doc = NULL;
    if (gs_yaml_load_one(text, strlen(text), &doc, err) < 0)
        return NULL;
    char *s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(doc);
    return s;
}

struct typing_case {
    const char *yaml;
    const char *json;
};

/* Scalar typing: `v: <scalar>` -> {"v": <json>} */
static const struct typing_case typing[] = {
    {"30", "30"},
    {"\"30\"", "\"30\""},
    {"'30'", "\"30\""},
    {"-7", "-7"},
    {"+7", "7"},
    {"0", "0"},
    {"1_000", "1000"},
    {"0x1F", "31"},
    {"0o17", "15"},
    {"017", "15"},
    {"0b101", "5"},
    {"08", "8"},
    {"9223372036854775807", "9223372036854775807"},
    {"1.5", "1.5"},
    {"-0.25", "-0.25"},
    {".5", "0.5"},
    {"30.0", "30"},
    {"1e3", "1000"},
    {"1.5e-3", "0.0015"},
    {"1e999", "\"1e999\""},
    {"true", "true"},
    {"True", "true"},
    {"FALSE", "false"},
    {"yes", "true"},
    {"No", "false"},
    {"on", "true"},
    {"OFF", "false"},
    {"y", "true"},
    {"n", "false"},
    {"null", "null"},
    {"~", "null"},
    {"", "null"},
    {"NULL", "null"},
    {"\"true\"", "\"true\""},
    {"'null'", "\"null\""},
    {"4Gi", "\"4Gi\""},
    {"500m", "\"500m\""},
    {"1.2.3", "\"1.2.3\""},
    {"2001-12-14", "\"2001-12-14\""},
    {"0x", "\"0x\""},
    {"-x", "\"-x\""},
    {"+.5", "0.5"},
    {"1__0", "10"},
    {"!!str 30", "\"30\""},
    {"!!int \"30\"", "30"},
    {"!!float 3", "3"},
    {"! 30", "\"30\""},
    {"hami-core-gpu.project-hami.io", "\"hami-core-gpu.project-hami.io\""},
    {"|\n  line1\n  line2", "\"line1\\nline2\\n\""},
    {">-\n  folded\n  text", "\"folded text\""},
    {"\"a\\tb\"", "\"a\\tb\""},
    {"[1, \"2\", three]", "[1,\"2\",\"three\"]"},
    {"{a: 1}", "{\"a\":1}"},
};

static void test_typing(void)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(typing); i++) {
        char text[256], want[256];
        snprintf(text, sizeof(text), "v: %s\n", typing[i].yaml);
        snprintf(want, sizeof(want), "{\"v\":%s}", typing[i].json);
        struct gs_error err = {0};
        char *got = load_dump(text, &err);
        if (!got)
            diag("error: %s", err.msg);
        char name[64];
        size_t k = 0;
        for (const char *p = typing[i].yaml; *p && k < sizeof(name) - 3; p++)
            name[k++] = *p == '\n' ? '/' : *p;
        name[k] = '\0';
        is_str(got, want, "scalar %s", name);
        free(got);
    }
}

static void test_documents(void)
{
    struct gs_error err = {0};
    json_t *docs = NULL;
    const char *multi = "---\n"
                        "apiVersion: resource.k8s.io/v1\n"
                        "kind: ResourceClaim\n"
                        "metadata: {name: c1}\n"
                        "---\n"
                        "# only a comment\n"
                        "---\n"
                        "kind: Pod\n"
                        "spec:\n"
                        "  containers:\n"
                        "  - name: app\n"
                        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
                        "...\n"
                        "---\n";
    is_int(gs_yaml_load_documents(multi, strlen(multi), &docs, &err), 0, "multi-document YAML");
    is_uint(json_array_size(docs), 2, "empty documents skipped");
    const char *s = NULL;
    is_int(gs_json_get_string(json_array_get(docs, 0), "metadata.name", &s, &err), 0,
           "first doc name");
    is_str(s, "c1", "first doc name = c1");
    int64_t n = 0;
    is_int(gs_json_get_int(json_array_get(docs, 1),
                           "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]", &n, &err),
           0, "second doc gpu limit");
    is_int(n, 1, "nvidia.com/gpu = 1");
    json_decref(docs);

    is_int(gs_yaml_load_documents("", 0, &docs, &err), 0, "empty text");
    is_uint(json_array_size(docs), 0, "empty text has no documents");
    json_decref(docs);

    const char *js = " {\"kind\": \"A\", \"n\": 1}\n{\"kind\": \"B\"}\n[1,2]";
    is_int(gs_yaml_load_documents(js, strlen(js), &docs, &err), 0, "JSON stream");
    is_uint(json_array_size(docs), 3, "three JSON values");
    is_int(gs_json_get_string(json_array_get(docs, 1), "kind", &s, &err), 0, "second JSON");
    is_str(s, "B", "second JSON kind");
    json_decref(docs);

    const char *jtabs = "{\n\t\"a\": {\n\t\t\"b\": \"30\"\n\t}\n}\n";
    is_int(gs_yaml_load_documents(jtabs, strlen(jtabs), &docs, &err), 0, "JSON with tabs");
    is_int(gs_json_get_string(json_array_get(docs, 0), "a.b", &s, &err), 0, "JSON string kept");
    is_str(s, "30", "JSON \"30\" stays a string");
    json_decref(docs);

    const char *flow = "[a, b]\n";
    is_int(gs_yaml_load_documents(flow, strlen(flow), &docs, &err), 0,
           "YAML flow sequence that is not JSON");
    char *d = json_dumps(docs, JSON_COMPACT);
    is_str(d, "[[\"a\",\"b\"]]", "flow sequence read as YAML");
    free(d);
    json_decref(docs);

    json_t *one = NULL;
    is_int(gs_yaml_load_one("a: 1\n---\nb: 2\n", 14, &one, &err), -EINVAL, "load_one: two docs");
    is_str(err.msg, "expected exactly one document, found 2", "load_one message");
    is_int(gs_yaml_load_one("# nothing\n", 10, &one, &err), -EINVAL, "load_one: none");
    ok(one == NULL, "load_one leaves NULL on error");

    /* The length bounds the input: text after len is not read. */
    const char *part = "a: 1\nb: [";
    is_int(gs_yaml_load_one(part, 5, &one, &err), 0, "len bounds the input");
    json_decref(one);
}

static void test_anchors(void)
{
    struct gs_error err = {0};
    char *got = load_dump("base: &b {cores: 30, memory: 4Gi}\n"
                          "a: *b\n"
                          "c:\n"
                          "  <<: *b\n"
                          "  cores: 50\n"
                          "list: &l [1, 2]\n"
                          "l2: *l\n",
                          &err);
    is_str(got,
           "{\"a\":{\"cores\":30,\"memory\":\"4Gi\"},\"base\":{\"cores\":30,\"memory\":"
           "\"4Gi\"},\"c\":{\"cores\":50,\"memory\":\"4Gi\"},\"l2\":[1,2],\"list\":[1,2]}",
           "anchors, aliases and merge keys expanded");
    free(got);
    got = load_dump("a: &a {x: 1, k: 2}\nb: &b {k: 3, z: 4}\nc: {<<: [*a, *b], w: 0}\n", &err);
    is_str(got,
           "{\"a\":{\"k\":2,\"x\":1},\"b\":{\"k\":3,\"z\":4},\"c\":{\"k\":2,\"w\":0,\"x\":1,"
           "\"z\":4}}",
           "merge list: earlier mappings win");
    free(got);
    got = load_dump("num: &n 7\nm: *n\n", &err);
    is_str(got, "{\"m\":7,\"num\":7}", "scalar anchor");
    free(got);
    got = load_dump("? &k key\n: 1\nother: *k\n", &err);
    is_str(got, "{\"key\":1,\"other\":\"key\"}", "anchor on a key");
    free(got);

    got = load_dump("a: *nope\n", &err);
    ok(got == NULL, "unknown alias refused");
    is_str(err.msg, "line 1, column 4: unknown anchor \"nope\"", "unknown alias message");

    /* billion laughs */
    const char *lol = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                      "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                      "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    json_t *docs = NULL;
    is_int(gs_yaml_load_documents(lol, strlen(lol), &docs, &err), -E2BIG,
           "alias expansion bomb refused");
    like_str(err.msg, "more than 1000000 nodes", "bomb message");
    ok(docs == NULL, "no documents on error");
}

static void test_errors(void)
{
    struct gs_error err = {0};
    char *got;
    got = load_dump("a: 1\na: 2\n", &err);
    ok(got == NULL, "duplicate key refused");
    is_str(err.msg, "line 2, column 1: duplicate mapping key \"a\"", "duplicate key message");
    got = load_dump("a: [1, 2\nb: 3\n", &err);
    ok(got == NULL, "unterminated flow sequence refused");
    like_str(err.msg, "line ", "syntax error names the line");
    is_int(err.code, -EINVAL, "syntax error -EINVAL");
    got = load_dump("a:\n  b: 1\n c: 2\n", &err);
    ok(got == NULL, "bad indentation refused");
    like_str(err.msg, "line 3, column", "bad indentation names line 3");
    got = load_dump("a: .nan\n", &err);
    ok(got == NULL, ".nan refused");
    is_str(err.msg, "line 1, column 4: .nan cannot be represented in JSON", ".nan message");
    got = load_dump("a: -.inf\n", &err);
    ok(got == NULL, "-.inf refused");
    got = load_dump("a: 0x1FFFFFFFFFFFFFFFF\n", &err);
    ok(got == NULL, "huge hex integer refused");
    is_int(err.code, -ERANGE, "huge integer -ERANGE");
    is_str(err.msg, "line 1, column 4: integer 0x1FFFFFFFFFFFFFFFF is out of range",
           "huge integer message");
    got = load_dump("a: 99999999999999999999\n", &err);
    is_str(got, "{\"a\":1e20}", "huge decimal integer becomes a float, as go-yaml v2 does");
    free(got);
    got = load_dump("? [a, b]\n: 1\n", &err);
    ok(got == NULL, "sequence as key refused");
    like_str(err.msg, "mapping key must be a scalar", "complex key message");
    got = load_dump("~: 1\n", &err);
    ok(got == NULL, "null key refused");
    like_str(err.msg, "null mapping key", "null key message");
    got = load_dump("a: !!int abc\n", &err);
    ok(got == NULL, "!!int on text refused");
    like_str(err.msg, "cannot decode `abc`", "tag mismatch message");
    got = load_dump("a: \"x\\0y\"\n", &err);
    ok(got == NULL, "NUL in string refused");
    like_str(err.msg, "NUL", "NUL message");
    got = load_dump("a: \xff\xfe\n", &err);
    ok(got == NULL, "invalid UTF-8 refused");
    got = load_dump("{\"a\": 1, \"a\": 2}", &err);
    ok(got == NULL, "duplicate key in JSON refused");
    like_str(err.msg, "duplicate", "JSON duplicate message");
    got = load_dump("{\"a\": [1, 2}", &err);
    ok(got == NULL, "malformed JSON refused");
    like_str(err.msg, "invalid JSON at line 1", "malformed JSON reports the JSON error");

    /* keys: numbers and booleans become text, YAML 1.1 booleans included (as in Kubernetes) */
    got = load_dump("1: a\ntrue: b\n1.5: c\n0x10: d\nn: e\n\"y\": f\n", &err);
    is_str(got,
           "{\"1\":\"a\",\"1.5\":\"c\",\"16\":\"d\",\"false\":\"e\",\"true\":\"b\",\"y\":\"f\"}",
           "scalar keys as text; plain n is false, quoted \"y\" stays");
    free(got);

    /* deep nesting */
    size_t depth = 300;
    char *deep = malloc(depth * 2 + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[depth * 2] = '\0';
    char *yamldeep = malloc(depth * 2 + 8);
    snprintf(yamldeep, depth * 2 + 8, "a: %s", deep);
    json_t *docs = NULL;
    is_int(gs_yaml_load_documents(yamldeep, strlen(yamldeep), &docs, &err), -E2BIG,
           "300-deep YAML nesting refused");
    like_str(err.msg, "nesting deeper than 256 levels", "depth message");
    free(deep);
    free(yamldeep);
}

/* Kubernetes' own fixtures: each object serialized as YAML and as JSON by the API machinery.
 * Loading the YAML must give exactly the JSON value. */
static void test_reference(void)
{
    static const char *const objs[] = {
        "admission.k8s.io.v1.AdmissionReview",
        "admissionregistration.k8s.io.v1.MutatingWebhookConfiguration",
        "core.v1.Pod",
        "resource.k8s.io.v1.DeviceClass",
        "resource.k8s.io.v1.ResourceClaim",
        "resource.k8s.io.v1.ResourceClaimTemplate",
        "resource.k8s.io.v1.ResourceSlice",
    };
    const char *ref = tap_reference_dir();
    if (!ref) {
        tap_skip_reference("Kubernetes API fixtures (k8s-api-testdata-v1.36) load as YAML = JSON");
        return;
    }
    for (size_t i = 0; i < GS_ARRAY_SIZE(objs); i++) {
        char yp[1024], jp[1024];
        snprintf(yp, sizeof(yp), "%s/k8s-api-testdata-v1.36/%s.yaml", ref, objs[i]);
        snprintf(jp, sizeof(jp), "%s/k8s-api-testdata-v1.36/%s.json", ref, objs[i]);
        struct gs_error err = {0};
        _cleanup_free_ char *ytext = NULL, *jtext = NULL;
        size_t ylen = 0, jlen = 0;
        if (gs_read_file(yp, 1 << 22, &ytext, &ylen, &err) < 0 ||
            gs_read_file(jp, 1 << 22, &jtext, &jlen, &err) < 0) {
            ok(0, "%s: fixture readable in the reference data", objs[i]);
            diag("  %s", err.msg);
            continue;
        }
        json_t *y = NULL;
        int r = gs_yaml_load_one(ytext, ylen, &y, &err);
        json_t *j = gs_json_parse(jtext, jlen, 1 << 22, &err);
        ok(r == 0 && j && json_equal(y, j), "%s: YAML and JSON fixtures load to the same value",
           objs[i]);
        if (r < 0)
            diag("  %s", err.msg);
        json_decref(y);
        json_decref(j);
    }
}

/* The emitter: what it writes reads back as the same value, and looks like kubectl's YAML. */
static void roundtrip(const char *json, const char *name)
{
    json_error_t je;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &je);
    char *text = v ? gs_yaml_dumps(v) : NULL;
    json_t *back = NULL;
    struct gs_error err = {0};
    int r = text ? gs_yaml_load_one(text, strlen(text), &back, &err) : -1;
    ok(r == 0 && json_equal(v, back), "emitter round trip: %s", name);
    if (r != 0 || !json_equal(v, back))
        diag("yaml:\n%s\nerror: %s", text ? text : "(none)", err.msg);
    free(text);
    json_decref(v);
    json_decref(back);
}

static void test_emitter(void)
{
    json_t *v = json_pack("{s:s, s:{s:s, s:{s:s}}, s:[{s:s, s:i}, {s:s}], s:b, s:n, s:[], s:{}}",
                          "apiVersion", "v1", "metadata", "name", "pod-a", "labels", "app", "x",
                          "containers", "name", "c", "port", 80, "name", "d", "ready", 1, "gone",
                          "empty", "none");
    char *text = gs_yaml_dumps(v);
    is_str(text,
           "apiVersion: \"v1\"\n"
           "metadata:\n"
           "  name: \"pod-a\"\n"
           "  labels:\n"
           "    app: \"x\"\n"
           "containers:\n"
           "- name: \"c\"\n"
           "  port: 80\n"
           "- name: \"d\"\n"
           "ready: true\n"
           "gone: null\n"
           "empty: []\n"
           "none: {}\n",
           "emitter: block style, kubectl's sequence indent, JSON scalars");
    free(text);
    json_decref(v);
    roundtrip("{\"yes\": 1, \"123\": \"456\", \"a: b\": \"c # d\", \"\": \"\", \"-x\": \"~\"}",
              "keys YAML would read otherwise (yes, digits, ': ', empty, '-')");
    roundtrip("{\"s\": \"line1\\nline2\\ttab \\\"q\\\" \\\\ \\u00e9 \\u263a\"}",
              "escapes, unicode");
    roundtrip("[[1, [2, []]], {\"a\": [{}, {\"b\": [null]}]}, -0.5, 1e300, 9007199254740993]",
              "nested sequences, empty collections, numbers");
    roundtrip("{\"on\": \"off\", \"null\": \"null\", \"true\": \"false\", \"0x10\": \"0o7\"}",
              "YAML 1.1 booleans and numbers as strings");
    roundtrip("\"just a string\"", "a scalar document");
}

int main(void)
{
    tap_plan_auto();
    test_typing();
    test_documents();
    test_anchors();
    test_errors();
    test_reference();
    test_emitter();
    return tap_done();
}
