/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML/JSON document loader on arbitrary bytes: either an array of documents whose JSON dump
 * loads back to an equal value, or an error with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"
#include "config/yaml.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024)
        return 0;
    json_t *docs = NULL;
    struct gs_error err = {0};
    int r = gs_yaml_load_documents((const char *)data, size, &docs, &err);
    if (r < 0) {
        check(docs == NULL && err.code == r && err.msg[0]);
        return 0;
    }
    check(json_is_array(docs));
    char *dump = json_dumps(docs, JSON_COMPACT | JSON_ENCODE_ANY);
    check(dump != NULL);
    json_t *again = gs_json_parse(dump, strlen(dump), strlen(dump), &err);
    check(again != NULL && json_equal(docs, again));
    json_decref(again);
    free(dump);
    json_decref(docs);
    return 0;
}
