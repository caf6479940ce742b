/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: one /mutate body through the whole admission path (AdmissionReview decode,
 * pod translation with a fixed cluster view, JSON Patch and response encoding). Invariants: never
 * a crash or sanitizer report; HTTP 200 answers are AdmissionReview JSON with a response.uid;
 * other answers are 400 or 413 with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "webhook/admit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memory_sizes(void *user, uint64_t deadline_ms, int64_t *sizes, size_t max, size_t *n,
                        struct gs_error *err)
{
    static const int64_t known[] = {15LL << 30, 80LL << 30, 40LL << 30};
    for (size_t i = 0; i < 3 && i < max; i++)
        sizes[i] = known[i];
    *n = 3;
    return 0;
}

static int ensure(void *user, const json_t *templates, uint64_t deadline_ms, struct gs_error *err)
{
    /* Every template must carry a namespace and a generated name. */
    size_t i;
    json_t *tpl;
    json_array_foreach((json_t *)templates, i, tpl)
    {
        const json_t *meta = json_object_get(tpl, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (!name || strncmp(name, "gpuslice-", 9) != 0 || !json_object_get(meta, "namespace"))
            abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct wh_names names;
    static int init;
    if (!init) {
        wh_names_default(&names);
        gs_log_set_level(GS_LOG_ERROR); /* one line per admission is noise here */
        init = 1;
    }
    struct wh_cluster_ops ops = {.memory_sizes = memory_sizes};
    struct wh_admit_ctx ctx = {.names = &names, .ops = &ops, .ensure_templates = ensure};
    struct wh_admit_reply reply;
    wh_admit(&ctx, (const char *)data, size, &reply);
    if (!reply.body)
        abort();
    if (reply.status == 200) {
        json_t *root = json_loads(reply.body, 0, NULL);
        if (!json_is_string(json_object_get(json_object_get(root, "response"), "uid")))
            abort();
        json_decref(root);
    } else if (reply.status != 400 && reply.status != 413) {
        abort();
    } else if (reply.len < 2) {
        abort(); /* a message is required */
    }
    wh_admit_reply_fini(&reply);
    return 0;
}
