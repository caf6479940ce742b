/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the CEL front end (lexer, parser, checker) and, for what compiles, the evaluator with a
 * small cost limit: both the generic environment (unchecked) and the DRA environment (checked).
 */
#include <stdint.h>
#include <string.h>

#include "cel/cel-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *attrs, *caps;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CEL_MAX_EXPRESSION_LEN + 16)
        return 0;
    if (!attrs) {
        attrs =
            json_pack("{s:{s:s},s:{s:i},s:{s:s},s:{s:b}}", "type", "string", "hami-gpu", "minor",
                      "int", 0, "cudaComputeCapability", "version", "7.5.0", "healthy", "bool", 1);
        caps = json_pack("{s:{s:s},s:{s:s}}", "memory", "value", "15Gi", "cores", "value", "100");
    }
    struct gs_error err;
    /* generic environment, unchecked: unknown names become runtime errors */
    struct cel_program *p = cel_compile_env((const char *)data, size, NULL, 0, false, &err);
    if (p) {
        struct cel_arena arena;
        cel_arena_init(&arena, NULL, 0);
        arena.max_total = 16u << 20;
        struct cel_value v;
        if (cel_eval_program(p, NULL, &arena, 20000, &v, &err) == 0 && v.kind == CEL_K_ERROR)
            cel_error_report(p, &v, &err);
        cel_arena_fini(&arena);
        cel_program_free(p);
    }
    /* DRA environment, checked, as the allocator uses it */
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    p = cel_compile(s, &err);
    if (p) {
        struct cel_device dev = {
            .driver = "hami-core-gpu.project-hami.io", .attributes = attrs, .capacity = caps};
        bool m;
        cel_eval_device(p, &dev, &m, &err);
        cel_program_free(p);
    }
    free(s);
    return 0;
}
