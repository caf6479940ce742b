/* SPDX-License-Identifier: Apache-2.0 */
/* DRA selector environment: the public API the allocator uses (cel.h). */
#include <pthread.h>
#include <string.h>

#include "cel/cel.h"
#include "tap.h"

#define DRIVER "hami-core-gpu.project-hami.io"

static json_t *attrs, *caps;

static void setup(void)
{
    json_error_t e;
    attrs = json_loads("{\"type\": {\"string\": \"hami-gpu\"},"
                       " \"uuid\": {\"string\": \"GPU-1234\"},"
                       " \"minor\": {\"int\": 3},"
                       " \"productName\": {\"string\": \"Tesla T4\"},"
                       " \"cudaComputeCapability\": {\"version\": \"7.5.0\"},"
                       " \"driverVersion\": {\"version\": \"550.54.15\"},"
                       " \"healthy\": {\"bool\": true},"
                       " \"resource.kubernetes.io/pcieRoot\": {\"string\": \"pci0000:00\"},"
                       " \"broken\": {\"float\": 1.5},"
                       " \"badVersion\": {\"version\": \"7.5\"}}",
                       0, &e);
    caps =
        json_loads("{\"memory\": {\"value\": \"15Gi\", \"requestPolicy\": {\"default\": \"15Gi\"}},"
                   " \"cores\": {\"value\": \"100\"},"
                   " \"slots\": {\"value\": 4}, \"ratio\": {\"value\": 0.5},"
                   " \"bad\": {\"value\": \"lots\"}}",
                   0, &e);
}

struct row {
    const char *expr;
    int want;        /* 1 true, 0 false, -1 compile error, -2 runtime error */
    const char *msg; /* substring of the error message, or NULL */
};

static const struct row rows[] = {
    {"device.driver == \"" DRIVER "\" && device.attributes[\"" DRIVER "\"].type == \"hami-gpu\"", 1,
     NULL},
    {"device.driver == \"other.example.com\"", 0, NULL},
    {"device.capacity[\"" DRIVER "\"].memory.compareTo(quantity(\"10Gi\")) >= 0", 1, NULL},
    {"device.capacity[\"" DRIVER "\"].memory.compareTo(quantity(\"16Gi\")) >= 0", 0, NULL},
    {"device.capacity[\"" DRIVER "\"].memory.isGreaterThan(quantity(\"15359Mi\"))", 1, NULL},
    {"device.capacity[\"" DRIVER "\"].memory == quantity(\"15360Mi\")", 1, NULL},
    {"device.capacity[\"" DRIVER "\"].cores.asInteger() == 100", 1, NULL},
    {"device.capacity[\"" DRIVER "\"].slots == quantity(\"4\")", 1, NULL},
    {"device.capacity[\"" DRIVER "\"].ratio == quantity(\"500m\")", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].cudaComputeCapability.isGreaterThan(semver(\"7.0.0\"))", 1,
     NULL},
    {"device.attributes[\"" DRIVER "\"].cudaComputeCapability.isLessThan(semver(\"7.5.0\"))", 0,
     NULL},
    {"device.attributes[\"" DRIVER "\"].cudaComputeCapability.major() == 7", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].driverVersion.compareTo(semver(\"535.0.0\")) > 0", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].minor == 3", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].healthy", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].uuid in [\"GPU-1234\", \"GPU-5678\"]", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].productName.matches(\"^Tesla (T4|V100)$\")", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].productName.lowerAscii().contains(\"t4\")", 1, NULL},
    {"device.attributes[\"resource.kubernetes.io\"].pcieRoot == \"pci0000:00\"", 1, NULL},
    {"has(device.attributes[\"" DRIVER "\"].uuid)", 1, NULL},
    {"has(device.attributes[\"" DRIVER "\"].nvlink)", 0, NULL},
    {"has(device.attributes[\"unknown.example.com\"].x)", 0, NULL},
    {"size(device.attributes[\"unknown.example.com\"]) == 0", 1, NULL},
    {"\"uuid\" in device.attributes[\"" DRIVER "\"]", 1, NULL},
    {"device.attributes.exists(d, d == \"resource.kubernetes.io\")", 1, NULL},
    {"device.capacity[\"" DRIVER "\"].exists(n, n == \"cores\")", 1, NULL},
    {"!device.allowMultipleAllocations", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].?productName.orValue(\"\") == \"Tesla T4\"", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].?nvlink.orValue(\"none\") == \"none\"", 1, NULL},
    {"device.attributes[\"x.io\"].?a.hasValue()", 0, NULL},
    {"cel.bind(a, device.attributes[\"" DRIVER "\"], a.minor > 1 && a.type == \"hami-gpu\")", 1,
     NULL},
    /* runtime errors */
    {"device.attributes[\"" DRIVER "\"].nvlink == \"x\"", -2, "no such key: nvlink (<input>:1:"},
    {"device.capacity[\"" DRIVER "\"].bad.isZero()", -1, "undeclared reference to 'isZero'"},
    {"device.capacity[\"" DRIVER "\"].bad.sign() == 0", -2, "device capacity bad"},
    {"device.attributes[\"" DRIVER "\"].broken == 1", -2,
     "device attribute broken: no int, bool, string or version value (<input>:1:"},
    {"device.attributes[\"" DRIVER "\"].minor", -2, "expression evaluated to int, not bool"},
    {"device.attributes[\"" DRIVER "\"].badVersion.major() == 7", -2, "not a semantic version"},
    {"device.attributes[\"" DRIVER "\"].nvlink == \"x\" || true", 1, NULL},
    {"device.attributes[\"" DRIVER "\"].nvlink == \"x\" && false", 0, NULL},
    {"1 / (device.attributes[\"" DRIVER "\"].minor - 3) == 0", -2, "divide by zero (<input>:1:3)"},
    {"quantity(\"abc\").sign() == 0", -2, "invalid quantity: 'abc'"},
    /* compile errors */
    {"device.drivr == \"x\"", -1, "undefined field 'drivr'"},
    {"devic.driver == \"x\"", -1, "ERROR: <input>:1:1: undeclared reference to 'devic'"},
    {"device.driver == ", -1, "ERROR: <input>:1:18: Syntax error"},
    {"device.driver", -1, "must evaluate to bool, not string"},
    {"device.driver == 1", -1, "found no matching overload for '_==_'"},
    {"device.driver + 1 == \"x\"", -1,
     "found no matching overload for '_+_' applied to '(string, int)'"},
    {"device.attributes[\"" DRIVER "\"].productName.matches(\"(\")", -1,
     "invalid regular expression"},
};

static void test_rows(void)
{
    struct cel_device dev = {.driver = DRIVER, .attributes = attrs, .capacity = caps};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct gs_error err = {0};
        struct cel_program *p = cel_compile(r->expr, &err);
        if (!p) {
            if (!ok(r->want == -1 && (!r->msg || strstr(err.msg, r->msg)), "compile error: %s",
                    r->expr))
                diag("  got compile error '%s', want %d %s", err.msg, r->want,
                     r->msg ? r->msg : "");
            continue;
        }
        bool match = false;
        int rc = cel_eval_device(p, &dev, &match, &err);
        if (r->want == -1) {
            ok(0, "compile error expected: %s", r->expr);
        } else if (r->want == -2) {
            if (!ok(rc < 0 && (!r->msg || strstr(err.msg, r->msg)), "runtime error: %s", r->expr))
                diag("  rc %d, msg '%s', want '%s'", rc, rc < 0 ? err.msg : "", r->msg);
        } else {
            if (!ok(rc == 0 && match == (r->want == 1), "%s => %s", r->expr,
                    r->want ? "true" : "false"))
                diag("  rc %d match %d err '%s'", rc, match, rc < 0 ? err.msg : "");
        }
        cel_program_free(p);
    }
}

static void test_unqualified_driver_domain_only(void)
{
    /* "uuid" lives under the driver's domain, not under another one */
    struct cel_device dev = {.driver = "other.example.com", .attributes = attrs, .capacity = caps};
    struct gs_error err;
    struct cel_program *p = cel_compile("has(device.attributes[\"" DRIVER "\"].uuid)", &err);
    bool m = true;
    is_int(cel_eval_device(p, &dev, &m, &err), 0, "eval with another driver");
    ok(!m, "unqualified names belong to the device's own driver domain");
    cel_program_free(p);
    p = cel_compile("device.attributes[\"other.example.com\"].uuid == \"GPU-1234\"", &err);
    is_int(cel_eval_device(p, &dev, &m, &err), 0, "eval under own domain");
    ok(m, "uuid found under other.example.com");
    cel_program_free(p);
}

static void test_no_attributes(void)
{
    struct cel_device dev = {.driver = DRIVER};
    struct gs_error err;
    struct cel_program *p = cel_compile("device.attributes[\"" DRIVER "\"].minor == 0", &err);
    bool m;
    int rc = cel_eval_device(p, &dev, &m, &err);
    ok(rc < 0 && strstr(err.msg, "no such key: minor"), "no attributes: no such key (%s)", err.msg);
    cel_program_free(p);
}

static void test_limits(void)
{
    struct gs_error err;
    /* 10 KiB: exactly at the limit compiles, one byte more does not */
    size_t n = 10240;
    char *big = malloc(n + 2);
    memset(big, ' ', n + 1);
    memcpy(big, "true", 4);
    big[n] = '\0';
    struct cel_program *p = cel_compile(big, &err);
    ok(p != NULL, "expression of exactly 10240 bytes compiles");
    cel_program_free(p);
    big[n] = ' ';
    big[n + 1] = '\0';
    p = cel_compile(big, &err);
    ok(!p && err.code == -E2BIG && strstr(err.msg, "too long"), "10241 bytes rejected: %s",
       err.msg);
    free(big);

    /* cost: 100^3 iterations of a nested macro exceed 1,000,000 units */
    char expr[2048];
    char list[512] = "[";
    for (int i = 0; i < 100; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? "," : "", i);
    strcat(list, "]");
    snprintf(expr, sizeof(expr), "%s.all(x, %s.all(y, %s.all(z, x + y + z >= 0)))", list, list,
             list);
    p = cel_compile(expr, &err);
    ok(p != NULL, "nested macro compiles");
    struct cel_device dev = {.driver = DRIVER, .attributes = attrs, .capacity = caps};
    bool m;
    int rc = cel_eval_device(p, &dev, &m, &err);
    ok(rc == -E2BIG && strstr(err.msg, "cost limit exceeded"), "cost limit enforced: %s",
       rc < 0 ? err.msg : "no error");
    cel_program_free(p);
    /* the same shape with 10^3 iterations stays under the limit */
    snprintf(expr, sizeof(expr), "%s.all(x, [1,2,3,4,5,6,7,8,9,10].all(y, y >= 0))", list);
    p = cel_compile(expr, &err);
    rc = cel_eval_device(p, &dev, &m, &err);
    ok(rc == 0 && m, "1000 iterations evaluate");
    cel_program_free(p);

    /* deep nesting is a compile error, not a crash */
    char deep[4096];
    size_t o = 0;
    for (int i = 0; i < 1000; i++)
        deep[o++] = '(';
    deep[o++] = '1';
    for (int i = 0; i < 1000; i++)
        deep[o++] = ')';
    deep[o] = '\0';
    p = cel_compile(deep, &err);
    ok(!p && strstr(err.msg, "recursion limit"), "deep nesting rejected: %s", err.msg);
}

struct thread_arg {
    const struct cel_program *p;
    int matches;
};

static void *worker(void *a)
{
    struct thread_arg *t = a;
    struct cel_device dev = {.driver = DRIVER, .attributes = attrs, .capacity = caps};
    for (int i = 0; i < 2000; i++) {
        bool m = false;
        struct gs_error err;
        if (cel_eval_device(t->p, &dev, &m, &err) == 0 && m)
            t->matches++;
    }
    return NULL;
}

static void test_cache_and_threads(void)
{
    struct cel_cache *c = cel_cache_new();
    struct gs_error err;
    const char *e = "device.capacity[\"" DRIVER "\"].memory.compareTo(quantity(\"4Gi\")) >= 0 && "
                    "device.attributes[\"" DRIVER "\"].productName.matches(\"T4\")";
    const struct cel_program *p1 = cel_cache_get(c, e, &err);
    const struct cel_program *p2 = cel_cache_get(c, e, &err);
    ok(p1 && p1 == p2, "same expression returns the same compiled program");
    is_int(cel_cache_size(c), 1, "one entry");
    const struct cel_program *bad = cel_cache_get(c, "device.", &err);
    ok(!bad && strstr(err.msg, "Syntax error"), "compile error from cache: %s", err.msg);
    memset(&err, 0, sizeof(err));
    bad = cel_cache_get(c, "device.", &err);
    ok(!bad && strstr(err.msg, "Syntax error"), "cached compile error keeps its message");
    is_int(cel_cache_size(c), 2, "errors are cached too");
    is_str(cel_program_source(p1), e, "program keeps its source");

    pthread_t th[4];
    struct thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct thread_arg){p1, 0};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += args[i].matches;
    }
    is_int(total, 8000, "4 threads x 2000 concurrent evaluations all match");
    cel_cache_free(c);
    cel_cache_free(NULL);
    cel_program_free(NULL);
}

int main(void)
{
    tap_plan_auto();
    setup();
    test_rows();
    test_unqualified_driver_domain_only();
    test_no_attributes();
    test_limits();
    test_cache_and_threads();
    json_decref(attrs);
    json_decref(caps);
    return tap_done();
}
