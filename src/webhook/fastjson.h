/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fast JSON parser for the common AdmissionReview: jansson's own parser reads through a
 * character stream with per-byte callbacks and was 55-60 % of a /mutate's CPU (bench/webhook).
 * This one scans the buffer directly and builds the same jansson values.
 *
 * It accepts a strict subset and leaves the rest to gs_json_parse (jansson): it returns NULL,
 * never an error, for anything it does not handle exactly as jansson would — invalid JSON,
 * duplicate keys, bytes >= 0x80 in strings, \u escapes of NUL or surrogates, non-integer or
 * out-of-range numbers, nesting deeper than WH_FASTJSON_MAX_DEPTH. So every document is either
 * parsed here into what jansson would have produced, or handed to jansson, which parses it or
 * reports the error (with its line and column). Fuzzed through tests/fuzz/webhook/fuzz_review.c
 * and compared with jansson by tests/unit/webhook/test_fastjson.c.
 */
#ifndef GS_WEBHOOK_FASTJSON_H
#define GS_WEBHOOK_FASTJSON_H

#include <jansson.h>
#include <stddef.h>

#define WH_FASTJSON_MAX_DEPTH 256

/* A new reference, or NULL: not handled here (see above), or out of memory. */
json_t *wh_fastjson_parse(const char *buf, size_t len);

#endif /* GS_WEBHOOK_FASTJSON_H */
