/* SPDX-License-Identifier: Apache-2.0 */
/* JSON Patch add/remove with JSON Pointer paths (the subset the webhook emits). */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "webhook/patch.h"

static char *apply(const char *doc_json, const char *patch_json, int *rc, char *msg, size_t len)
{
    json_t *doc = json_loads(doc_json, 0, NULL), *patch = json_loads(patch_json, 0, NULL);
    struct gs_error err = {0};
    *rc = wh_json_patch_apply(doc, patch, &err);
    snprintf(msg, len, "%s", err.msg);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    json_decref(patch);
    return text;
}

#define OK(doc, patch, want, name)                                                                 \
    do {                                                                                           \
        int rc_;                                                                                   \
        char msg_[256];                                                                            \
        char *got_ = apply(doc, patch, &rc_, msg_, sizeof(msg_));                                  \
        is_int(rc_, 0, "%s: applies", name);                                                       \
        is_str(got_, want, "%s", name);                                                            \
        free(got_);                                                                                \
    } while (0)

#define BAD(doc, patch, want_msg, name)                                                            \
    do {                                                                                           \
        int rc_;                                                                                   \
        char msg_[256];                                                                            \
        free(apply(doc, patch, &rc_, msg_, sizeof(msg_)));                                         \
        is_int(rc_, -EINVAL, "%s: refused", name);                                                 \
        is_str(msg_, want_msg, "%s: message", name);                                               \
    } while (0)

int main(void)
{
    tap_plan_auto();
    OK("{\"a\":{}}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":1}]", "{\"a\":{\"b\":1}}",
       "add an object member");
    OK("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":3}]", "{\"a\":[1,2,3]}",
       "append with -");
    OK("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0}]", "{\"a\":[0,1,2]}",
       "insert at an index");
    OK("{\"l\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"1\"}}",
       "[{\"op\":\"remove\",\"path\":\"/l/nvidia.com~1gpu\"}]", "{\"l\":{\"cpu\":\"1\"}}",
       "remove a member with ~1 in its name");
    OK("{\"a~b\":1,\"c\":2}", "[{\"op\":\"remove\",\"path\":\"/a~0b\"}]", "{\"c\":2}", "~0 is ~");
    OK("{\"a\":[1,2,3]}", "[{\"op\":\"remove\",\"path\":\"/a/1\"}]", "{\"a\":[1,3]}",
       "remove an array element");
    OK("{\"s\":{\"c\":[{\"r\":{}}]}}",
       "[{\"op\":\"add\",\"path\":\"/s/c/0/r/claims\",\"value\":[{\"name\":\"g\"}]},"
       "{\"op\":\"add\",\"path\":\"/s/c/0/r/claims/-\",\"value\":{\"name\":\"h\"}}]",
       "{\"s\":{\"c\":[{\"r\":{\"claims\":[{\"name\":\"g\"},{\"name\":\"h\"}]}}]}}",
       "added value is a copy (a later op appends into it)");
    BAD("{}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":1}]",
        "JSON Patch operation 0: op \"replace\" not supported", "replace");
    BAD("{}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":1}]",
        "JSON Patch operation 0: add /a/b: no such location", "missing parent");
    BAD("{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/01\"}]",
        "JSON Patch operation 0: remove /a/01: no such location", "leading zero index");
    BAD("{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/1\"}]",
        "JSON Patch operation 0: remove /a/1: no such location", "index past the end");
    BAD("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/a~2\"}]",
        "JSON Patch operation 0: remove /a~2: bad path", "bad escape");
    BAD("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"\"}]",
        "JSON Patch operation 0: remove : bad path", "whole document");
    BAD("{}", "{}", "JSON Patch: not an array", "not an array");
    BAD("{}", "[{\"path\":\"/a\"}]", "JSON Patch operation 0: op or path missing", "no op");
    return tap_done();
}
