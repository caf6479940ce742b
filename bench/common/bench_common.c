/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hot paths of the control plane, each against a baseline measured in the same run:
 *   - gs_quantity_parse("15Gi") vs strtoll of the same value in bytes;
 *   - one DRA selector evaluation (the DeviceClass of deploy/plugin on a T4 device) vs strcmp of
 * the two strings the selector compares. Prints ns/op and the ratio; TAP lines only say the figures
 * were measured (no timing asserts).
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel.h"
#include "base/clock.h"
#include "config/quantity.h"
#include "tap.h"

#define ROUNDS 5

static volatile long long sink;

typedef void (*op_fn)(void *ud, long n);

/* Best of ROUNDS runs of n iterations, in ns per iteration. */
static double measure(op_fn fn, void *ud, long n)
{
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t0 = gs_now_ns();
        fn(ud, n);
        double per = (double)(gs_now_ns() - t0) / (double)n;
        if (per < best)
            best = per;
    }
    return best;
}

static void op_strtoll(void *ud, long n)
{
    const char *s = ud;
    for (long i = 0; i < n; i++)
        sink += strtoll(s, NULL, 10);
}

static void op_quantity(void *ud, long n)
{
    const char *s = ud;
    struct gs_quantity q;
    for (long i = 0; i < n; i++) {
        gs_quantity_parse(s, &q, NULL);
        sink += q.mant;
    }
}

struct sel {
    const struct cel_program *prog;
    struct cel_device dev;
};

static void op_strcmp(void *ud, long n)
{
    const struct sel *s = ud;
    for (long i = 0; i < n; i++)
        sink += strcmp(s->dev.driver, "hami-core-gpu.project-hami.io") == 0 &&
                strcmp(json_string_value(
                           json_object_get(json_object_get(s->dev.attributes, "type"), "string")),
                       "hami-gpu") == 0;
}

static void op_cel(void *ud, long n)
{
    const struct sel *s = ud;
    bool out = false;
    for (long i = 0; i < n; i++) {
        cel_eval_device(s->prog, &s->dev, &out, NULL);
        sink += out;
    }
}

static void report(const char *what, double ns, const char *base, double base_ns)
{
    printf("# %-40s %9.1f ns/op   baseline %-28s %7.1f ns/op   ratio %6.1fx\n", what, ns, base,
           base_ns, base_ns > 0 ? ns / base_ns : 0.0);
    ok(ns > 0 && base_ns > 0, "%s measured (%.1f ns/op, %.1fx %s)", what, ns,
       base_ns > 0 ? ns / base_ns : 0.0, base);
}

int main(void)
{
    tap_plan_auto();
    long n = 200000;
    double base = measure(op_strtoll, "16106127360", n);
    double q = measure(op_quantity, "15Gi", n);
    report("gs_quantity_parse(\"15Gi\")", q, "strtoll(\"16106127360\")", base);
    q = measure(op_quantity, "1536Mi", n);
    report("gs_quantity_parse(\"1536Mi\")", q, "strtoll(\"16106127360\")", base);

    struct gs_error err = {0};
    struct cel_cache *cache = cel_cache_new();
    struct sel s = {0};
    s.prog = cel_cache_get(cache,
                           "device.driver == \"hami-core-gpu.project-hami.io\" && "
                           "device.attributes[\"hami-core-gpu.project-hami.io\"].type == "
                           "\"hami-gpu\"",
                           &err);
    json_t *attrs = json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:i}}", "type", "string", "hami-gpu",
                              "uuid", "string", "GPU-76e03115-baf9-4308-9ca7-9acdfa86f53f",
                              "productName", "string", "Tesla T4", "minor", "int", 0);
    json_t *cap =
        json_pack("{s:{s:s}, s:{s:s}}", "cores", "value", "100", "memory", "value", "15Gi");
    s.dev = (struct cel_device){.driver = "hami-core-gpu.project-hami.io",
                                .attributes = attrs,
                                .capacity = cap,
                                .allow_multiple_allocations = true};
    bool match = false;
    if (!s.prog || cel_eval_device(s.prog, &s.dev, &match, &err) < 0 || !match) {
        ok(0, "selector compiles and matches the T4 device: %s", err.msg);
    } else {
        double b = measure(op_strcmp, &s, n);
        double c = measure(op_cel, &s, n);
        report("DeviceClass selector (CEL)", c, "two strcmp", b);
        const struct cel_program *p2 =
            cel_cache_get(cache,
                          "device.capacity[\"hami-core-gpu.project-hami.io\"].memory.compareTo("
                          "quantity(\"10Gi\")) >= 0",
                          &err);
        if (p2) {
            struct sel s2 = s;
            s2.prog = p2;
            c = measure(op_cel, &s2, n);
            report("capacity selector (CEL quantity)", c, "two strcmp", b);
        }
    }
    json_decref(attrs);
    json_decref(cap);
    cel_cache_free(cache);
    return tap_done();
}
