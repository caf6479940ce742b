/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target, differential: webhook/fastjson.h against jansson (gs_json_parse, the parser
 * it stands in for on the admission path). Invariant: whatever the fast parser accepts, jansson
 * accepts too and the two trees are equal, keys in the same order (compared as jansson's compact
 * serialisation). The fast parser may decline (NULL) anything; then jansson decides alone.
 * Any difference aborts. Issue 19 item 5: fastjson.c stays only with this target in `make fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "webhook/fastjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    json_t *got = wh_fastjson_parse(buf, size);
    if (!got)
        return 0;
    struct gs_error err = {0};
    json_t *ref = gs_json_parse(buf, size, 64u << 20, &err);
    if (!ref)
        abort(); /* accepted what jansson refuses */
    char *a = json_dumps(ref, JSON_COMPACT | JSON_ENCODE_ANY);
    char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!a || !b || !json_equal(ref, got) || strcmp(a, b) != 0)
        abort(); /* a different tree, or the same members in another order */
    free(a);
    free(b);
    json_decref(ref);
    json_decref(got);
    return 0;
}
