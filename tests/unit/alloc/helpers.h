/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the allocator's unit tests: objects from inline YAML, one-call allocation. */
#ifndef GS_TESTS_UNIT_ALLOC_HELPERS_H
#define GS_TESTS_UNIT_ALLOC_HELPERS_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "config/yaml.h"
#include "tap.h"

/* Every document of `yaml` added to a new state; NULL (and a failed test line) on error. */
static inline struct alloc_state *state_from(const char *yaml)
{
    struct gs_error err = {0};
    json_t *docs = NULL;
    if (gs_yaml_load_documents(yaml, strlen(yaml), &docs, &err) < 0) {
        ok(0, "fixture parses: %s", err.msg);
        return NULL;
    }
    struct alloc_state *st = alloc_state_new();
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        if (alloc_state_add_object(st, d, &err) < 0) {
            ok(0, "fixture document %zu loads: %s", i, err.msg);
            alloc_state_free(st);
            json_decref(docs);
            return NULL;
        }
    }
    json_decref(docs);
    return st;
}

static inline json_t *obj_from(const char *yaml)
{
    struct gs_error err = {0};
    json_t *doc = NULL;
    if (gs_yaml_load_one(yaml, strlen(yaml), &doc, &err) < 0) {
        ok(0, "object parses: %s", err.msg);
        return NULL;
    }
    return doc;
}

struct outcome {
    int rc;
    json_t *allocation; /* NULL unless rc == 0 */
    char why[8192];     /* explanation text */
    json_t *why_json;
    char err[GS_ERROR_MSG_MAX];
};

static inline void outcome_fini(struct outcome *o)
{
    json_decref(o->allocation);
    json_decref(o->why_json);
    memset(o, 0, sizeof(*o));
}

/* Allocate the claim given as YAML on `node` with `policy`; explanation always asked for. */
static inline int claim_on(struct alloc_state *st, const char *claim_yaml, const char *node,
                           enum alloc_policy policy, struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    json_t *claim = obj_from(claim_yaml);
    if (!claim || !st)
        return o->rc = -1000;
    struct alloc_options opt = {.node = node, .policy = policy, .explain = true};
    struct alloc_explanation *why = NULL;
    struct gs_error err = {0};
    o->rc = alloc_claim(st, claim, &opt, &o->allocation, &why, &err);
    snprintf(o->err, sizeof(o->err), "%s", err.msg);
    if (why) {
        FILE *f = fmemopen(o->why, sizeof(o->why) - 1, "w");
        if (f) {
            alloc_explanation_print(why, f);
            fclose(f);
        }
        o->why_json = alloc_explanation_json(why);
        alloc_explanation_free(why);
    }
    json_decref(claim);
    return o->rc;
}

/* results[i].<field> of an allocation, "" when absent. */
static inline const char *res_str(const json_t *alloc, size_t i, const char *field)
{
    const json_t *r =
        json_array_get(json_object_get(json_object_get(alloc, "devices"), "results"), i);
    const json_t *v = json_object_get(r, field);
    return json_is_string(v) ? json_string_value(v) : "";
}

static inline size_t res_count(const json_t *alloc)
{
    return json_array_size(json_object_get(json_object_get(alloc, "devices"), "results"));
}

static inline const char *consumed(const json_t *alloc, size_t i, const char *cap)
{
    const json_t *r =
        json_array_get(json_object_get(json_object_get(alloc, "devices"), "results"), i);
    const json_t *v = json_object_get(json_object_get(r, "consumedCapacity"), cap);
    return json_is_string(v) ? json_string_value(v) : "";
}

static inline int is_uuid(const char *s)
{
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!strchr("0123456789abcdef", s[i]))
            return 0;
    }
    return s[14] == '4';
}

#endif /* GS_TESTS_UNIT_ALLOC_HELPERS_H */
