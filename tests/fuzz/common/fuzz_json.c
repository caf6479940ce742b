/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded JSON parse plus path getters. Input: first line is a path, the rest is the document.
 * Every getter must either succeed or fill a message that names a path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/json.h"

#define MAX_DOC (64 * 1024)

static void check(int cond)
{
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < GS_JSON_PATH_MAX ? size : GS_JSON_PATH_MAX);
    size_t plen = nl ? (size_t)(nl - data) : 0;
    char path[GS_JSON_PATH_MAX + 1];
    memcpy(path, data, plen);
    path[plen] = '\0';
    const char *doc = nl ? (const char *)nl + 1 : (const char *)data;
    size_t dlen = nl ? size - plen - 1 : size;

    struct gs_error err = {0};
    json_t *root = gs_json_parse(doc, dlen, MAX_DOC, &err);
    if (!root) {
        check(err.code < 0 && err.msg[0]);
        return 0;
    }
    const char *s;
    int64_t i;
    bool b;
    double d;
    json_t *o;
    struct gs_quantity q;
    int r;
#define CHECKED(call)                                                                              \
    do {                                                                                           \
        gs_error_clear(&err);                                                                      \
        r = (call);                                                                                \
        check(r <= 1);                                                                             \
        if (r < 0)                                                                                 \
            check(err.code == r && err.msg[0]);                                                    \
    } while (0)
    CHECKED(gs_json_lookup(root, path, &o, &err));
    CHECKED(gs_json_get_string(root, path, &s, &err));
    CHECKED(gs_json_get_int(root, path, &i, &err));
    CHECKED(gs_json_get_int_range(root, path, 0, 100, &i, &err));
    CHECKED(gs_json_get_bool(root, path, &b, &err));
    CHECKED(gs_json_get_double(root, path, &d, &err));
    CHECKED(gs_json_get_object(root, path, &o, &err));
    CHECKED(gs_json_get_array(root, path, &o, &err));
    CHECKED(gs_json_get_quantity(root, path, &q, &err));
    CHECKED(gs_json_opt_string(root, path, "d", &s, &err));
    CHECKED(gs_json_opt_int(root, path, 1, &i, &err));
    CHECKED(gs_json_opt_quantity(root, path, NULL, &q, &err));
    json_decref(root);
    return 0;
}
