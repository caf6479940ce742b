/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the allocator's object decoders (ResourceSlice, DeviceClass, Node, ResourceClaim and
 * allocated claims) and the allocation of every claim in the input on node "n1", with
 * explanations. Input: YAML or JSON documents, as `gpuslice schedule` reads them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "config/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    json_t *docs = NULL;
    struct gs_error err = {0};
    if (gs_yaml_load_documents(text, size, &docs, &err) < 0) {
        free(text);
        return 0;
    }
    free(text);
    struct alloc_state *st = alloc_state_new();
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        const json_t *st_ = json_object_get(d, "status");
        const json_t *kind = json_object_get(d, "kind");
        bool pending_claim = json_is_string(kind) &&
                             strcmp(json_string_value(kind), "ResourceClaim") == 0 &&
                             !(st_ && json_object_get(st_, "allocation"));
        if (!pending_claim)
            alloc_state_add_object(st, d, &err);
    }
    static const enum alloc_policy policies[] = {ALLOC_POLICY_FIRST_FIT, ALLOC_POLICY_BINPACK,
                                                 ALLOC_POLICY_TOPOLOGY};
    json_array_foreach(docs, i, d)
    {
        const json_t *kind = json_object_get(d, "kind");
        if (!json_is_string(kind) || strcmp(json_string_value(kind), "ResourceClaim") != 0)
            continue;
        struct alloc_options opt = {
            .node = "n1", .policy = policies[i % 3], .explain = true, .max_steps = 2000};
        json_t *alloc = NULL;
        struct alloc_explanation *why = NULL;
        alloc_claim(st, d, &opt, &alloc, &why, &err);
        json_t *j = alloc_explanation_json(why);
        json_decref(j);
        alloc_explanation_free(why);
        json_decref(alloc);
    }
    /* Every claim of the input again, as one pod: searched together. */
    struct alloc_claim_spec *specs[16];
    size_t n = 0;
    json_array_foreach(docs, i, d)
    {
        const json_t *kind = json_object_get(d, "kind");
        if (n < 16 && json_is_string(kind) &&
            strcmp(json_string_value(kind), "ResourceClaim") == 0) {
            specs[n] = alloc_claim_spec_new(d, &err);
            if (specs[n])
                n++;
        }
    }
    if (n) {
        json_t *al[16] = {0};
        struct alloc_explanation *why[16] = {0};
        struct alloc_options opt = {.node = "n1", .policy = ALLOC_POLICY_SPREAD, .max_steps = 2000};
        alloc_claims_allocate(st, (const struct alloc_claim_spec *const *)specs, n, &opt, al, why,
                              &err);
        for (size_t k = 0; k < n; k++) {
            json_decref(al[k]);
            alloc_explanation_free(why[k]);
            alloc_claim_spec_release(specs[k]);
        }
    }
    alloc_state_free(st);
    json_decref(docs);
    return 0;
}
