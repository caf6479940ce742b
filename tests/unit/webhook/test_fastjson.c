/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook/fastjson.h against jansson: every document it accepts must equal jansson's parse
 * (json_equal, and the same compact text, key order included); every document jansson refuses
 * it must leave to jansson (NULL). Run over hand-written edge cases and every fixture and fuzz
 * corpus input of the webhook (GS_SOURCE_ROOT).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "tap.h"
#include "webhook/fastjson.h"

static int n_fast, n_left;

/* 1 when consistent; counts whether the fast path took it. */
static int consistent(const char *buf, size_t len)
{
    struct gs_error err = {0};
    json_t *ref = gs_json_parse(buf, len, 64u << 20, &err);
    json_t *got = wh_fastjson_parse(buf, len);
    int ok_ = 1;
    if (got) {
        n_fast++;
        if (!ref) {
            ok_ = 0; /* accepted what jansson refuses */
        } else {
            char *a = json_dumps(ref, JSON_COMPACT | JSON_ENCODE_ANY);
            char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
            ok_ = json_equal(ref, got) && a && b && strcmp(a, b) == 0;
            free(a);
            free(b);
        }
    } else {
        n_left++;
    }
    json_decref(ref);
    json_decref(got);
    return ok_;
}

static void check(const char *doc, int want_fast, const char *name)
{
    int before = n_fast;
    ok(consistent(doc, strlen(doc)) && (n_fast > before) == want_fast, "%s", name);
}

static void walk(const char *dir, int *n, int *bad)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        static char buf[4u << 20];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        (*n)++;
        if (!consistent(buf, len)) {
            (*bad)++;
            diag("inconsistent: %s", path);
        }
    }
    closedir(d);
}

int main(void)
{
    tap_plan_auto();
    check("{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}", 1, "plain document");
    check("  {\"z\":1,\"a\":2}  ", 1, "key order and surrounding whitespace kept");
    check("{\"cmd\":\"a \\u0026\\u0026 b \\u003c\\u003e\"}", 1,
          "\\u escapes of ASCII (Go's HTML "
          "escaping)");
    check("{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", 1, "short escapes");
    check("{\"s\":\"\\u00e9\\u4e2d\"}", 1, "\\u escapes to 2- and 3-byte UTF-8");
    check("[-0,0,-9223372036854775808,9223372036854775807]", 1, "integer range");
    check("\"top\"", 1, "a string at top level (JSON_DECODE_ANY)");
    check("{\"a\":1,\"a\":2}", 0, "duplicate key: jansson's (it refuses)");
    check("{\"s\":\"\\u0000\"}", 0, "\\u0000: jansson's (it refuses)");
    check("{\"s\":\"\\ud83d\\ude00\"}", 0, "surrogate pair: jansson's");
    check("{\"s\":\"\\ud800\"}", 0, "lone surrogate: jansson's (it refuses)");
    check("{\"s\":\"caf\xc3\xa9\"}", 0, "raw UTF-8: jansson's");
    check("{\"s\":\"\xff\"}", 0, "invalid UTF-8: jansson's (it refuses)");
    check("{\"n\":1.5}", 0, "a real: jansson's");
    check("{\"n\":1e3}", 0, "an exponent: jansson's");
    check("{\"n\":9223372036854775808}", 0, "integer overflow: jansson's (it refuses)");
    check("{\"n\":01}", 0, "leading zero: jansson's (it refuses)");
    check("{\"a\":1}x", 0, "trailing text: jansson's (it refuses)");
    check("{\"a\":1,}", 0, "trailing comma: jansson's (it refuses)");
    check("{\"a\" 1}", 0, "missing colon: jansson's (it refuses)");
    check("[1 2]", 0, "missing comma: jansson's (it refuses)");
    check("{\"s\":\"a\tb\"}", 0, "raw control character: jansson's (it refuses)");
    check("{\"s\":\"\\x\"}", 0, "unknown escape: jansson's (it refuses)");
    check("{\"s\":\"\\u12\"}", 0, "short \\u: jansson's (it refuses)");
    check("tru", 0, "truncated literal: jansson's (it refuses)");
    check("", 0, "empty: jansson's (it refuses)");
    check("{\"s\":\"unterminated", 0, "unterminated string: jansson's (it refuses)");
    char deep[2 * 300 + 1];
    memset(deep, '[', 300);
    memset(deep + 300, ']', 300);
    deep[600] = '\0';
    check(deep, 0, "nesting over WH_FASTJSON_MAX_DEPTH: jansson's");
    char key[600] = "{\"";
    memset(key + 2, 'k', 500);
    strcpy(key + 502, "\":1}");
    check(key, 1, "a key longer than the stack buffer");

    const char *root = getenv("GS_SOURCE_ROOT");
    int n = 0, bad = 0;
    char dir[4096];
    const char *dirs[] = {"tests/unit/webhook/fixtures", "tests/fuzz/webhook/corpus/review",
                          "tests/fuzz/webhook/corpus/translate"};
    for (size_t i = 0; root && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(dir, sizeof(dir), "%s/%s", root, dirs[i]);
        walk(dir, &n, &bad);
    }
    if (!root)
        skip("fixtures and fuzz corpora", "GS_SOURCE_ROOT not set");
    else
        ok(n > 100 && bad == 0,
           "%d fixture and corpus files: the same values as jansson (%d "
           "inconsistent)",
           n, bad);
    diag("fast path took %d documents, left %d to jansson", n_fast, n_left);
    return tap_done();
}
