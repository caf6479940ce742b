/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: `gpuslice-webhook translate` on arbitrary YAML/JSON text. Invariants: never a
 * crash or sanitizer report, and every JSON Patch the translation produces applies to the
 * manifest it was made for (wh_preview_text returns -EPROTO otherwise: abort).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "webhook/preview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct wh_names names;
    static FILE *sink;
    static const int64_t sizes[] = {15LL << 30, 80LL << 30};
    if (!sink) {
        wh_names_default(&names);
        sink = fopen("/dev/null", "w");
        if (!sink)
            abort();
    }
    struct wh_preview_config cfg = {
        .names = &names, .sizes = sizes, .n_sizes = 2, .default_namespace = "default"};
    struct gs_error err = {0};
    int r = wh_preview_text(&cfg, "input", (const char *)data, size, sink, sink, &err);
    if (r == -EPROTO)
        abort();
    return 0;
}
