/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_claim(): decode, search, commit, explain. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc-internal.h"

/* Claim-level reason for an error that stopped allocation. */
static const char *error_reason(int code, const char *msg)
{
    if (strstr(msg, "CEL"))
        return "CelError";
    if (strstr(msg, "could not retrieve device class"))
        return "ClassNotFound";
    if (strstr(msg, "is invalid") || strstr(msg, "currently invalid"))
        return "PoolInvalid";
    if (strstr(msg, "being updated"))
        return "PoolIncomplete";
    if (strstr(msg, "constraint would not be satisfied"))
        return "ConstraintMismatch";
    if (code == ALLOC_SEARCH_LIMIT)
        return "SearchLimit";
    return code == -EINVAL ? "InvalidClaim" : "Error";
}

struct alloc_claim_spec *alloc_claim_spec_new(const json_t *claim, struct gs_error *err)
{
    struct alloc_claim_spec *spec = NULL;
    if (alloc_decode_claim(claim, &spec, err) < 0)
        return NULL;
    return spec;
}

void alloc_claim_spec_release(struct alloc_claim_spec *claim)
{
    alloc_claim_spec_free(claim);
}

int alloc_claim(struct alloc_state *st, const json_t *claim, const struct alloc_options *opt,
                json_t **allocation, struct alloc_explanation **explanation, struct gs_error *err)
{
    struct gs_error local = {0};
    if (!err)
        err = &local;
    gs_error_clear(err);
    if (allocation)
        *allocation = NULL;
    if (explanation)
        *explanation = NULL;
    struct alloc_claim_spec *spec = alloc_claim_spec_new(claim, err);
    if (!spec)
        return err->code ? err->code : -ENOMEM;
    int r = alloc_claim_spec_allocate(st, spec, opt, allocation, explanation, err);
    alloc_claim_spec_free(spec);
    return r;
}

int alloc_claim_spec_allocate(struct alloc_state *st, const struct alloc_claim_spec *spec,
                              const struct alloc_options *opt, json_t **allocation,
                              struct alloc_explanation **explanation, struct gs_error *err)
{
    return alloc_claims_allocate(st, &spec, 1, opt, allocation, explanation, err);
}

static void explain_one(struct alloc_state *st, const struct alloc_claim_spec *spec,
                        const struct alloc_options *opt, int r, const struct gs_error *err,
                        struct alloc_explanation **out)
{
    char key[1100];
    snprintf(key, sizeof(key), "%s/%s", spec->ns, spec->name);
    struct alloc_explanation *e = alloc_explanation_new(key, opt->node);
    if (!e)
        return;
    e->allocated = r == 0;
    if (r == 0)
        e->reason = "Allocated";
    else if (r == ALLOC_UNSCHEDULABLE && !strstr(err->msg, "being updated"))
        e->reason = "Unschedulable";
    else
        e->reason = error_reason(r, err->msg);
    if (r != 0)
        snprintf(e->message, sizeof(e->message), "%s", err->msg);
    alloc_explain_claim(st, spec, opt->node, r, e);
    *out = e;
}

int alloc_claims_allocate(struct alloc_state *st, const struct alloc_claim_spec *const *specs,
                          size_t n_specs, const struct alloc_options *opt, json_t **allocations,
                          struct alloc_explanation **explanations, struct gs_error *err)
{
    struct gs_error local = {0};
    /* Nobody reads the message of an unschedulable node: skip formatting it. */
    bool quiet = !err && !explanations;
    if (!err)
        err = &local;
    gs_error_clear(err);
    for (size_t i = 0; i < n_specs; i++) {
        if (allocations)
            allocations[i] = NULL;
        if (explanations)
            explanations[i] = NULL;
    }
    if (!opt || !opt->node || !*opt->node)
        return gs_error_set(err, -EINVAL, "alloc_claim: a node name is required");
    if (n_specs == 0)
        return 0;
    /* Small groups (a claim, a pod's few claims) use the stack. */
    struct alloc_result *res_s[8] = {0};
    size_t n_s[8] = {0};
    json_t *al_s[8] = {0};
    struct alloc_allocated_claim *old_s[8] = {0};
    bool heap = n_specs > 8;
    struct alloc_result **res = heap ? calloc(n_specs, sizeof(struct alloc_result *)) : res_s;
    size_t *n = heap ? calloc(n_specs, sizeof(size_t)) : n_s;
    json_t **al = heap ? calloc(n_specs, sizeof(json_t *)) : al_s;
    struct alloc_allocated_claim **old =
        heap ? calloc(n_specs, sizeof(struct alloc_allocated_claim *)) : old_s;
    if (!res || !n || !al || !old) {
        if (heap) {
            free(res);
            free(n);
            free(al);
            free(old);
        }
        return gs_error_set(err, -ENOMEM, "out of memory");
    }
    /* Claims the state already holds are allocated afresh: their devices count as free during
     * the search, and their old allocations come back if the search fails. */
    for (size_t i = 0; i < n_specs; i++)
        old[i] = alloc_state_take_claim(st, specs[i]->ns, specs[i]->name);
    int r = alloc_search(st, specs, n_specs, opt, res, n, al, err);
    if (r == ALLOC_UNSCHEDULABLE && !err->code && quiet)
        err->code = r;
    else if (r == ALLOC_UNSCHEDULABLE && !err->code) {
        if (n_specs == 1)
            gs_error_set(err, r, "claim %s/%s: cannot allocate all requests on node %s",
                         specs[0]->ns, specs[0]->name, opt->node);
        else
            gs_error_set(err, r,
                         "claims %s/%s and %zu more: cannot allocate them together on "
                         "node %s",
                         specs[0]->ns, specs[0]->name, n_specs - 1, opt->node);
    }
    /* Explain before committing, so the claims' own allocations are not counted as in use. */
    if (explanations && (r != 0 || opt->explain))
        for (size_t i = 0; i < n_specs; i++)
            explain_one(st, specs[i], opt, r, err, &explanations[i]);
    if (r != 0 || opt->trial) {
        for (size_t i = 0; i < n_specs; i++)
            alloc_state_restore_claim(st, old[i]);
    } else {
        for (size_t i = 0; i < n_specs; i++)
            alloc_allocated_claim_free(old[i]);
        size_t committed = 0;
        int c = 0;
        for (; committed < n_specs; committed++) {
            c = alloc_state_commit(st, specs[committed]->ns, specs[committed]->name, res[committed],
                                   n[committed]);
            if (c < 0)
                break;
            res[committed] = NULL; /* owned by the state now */
        }
        if (c < 0) {
            for (size_t i = 0; i < committed; i++)
                alloc_state_release_claim(st, specs[i]->ns, specs[i]->name);
            if (explanations)
                for (size_t i = 0; i < n_specs; i++) {
                    alloc_explanation_free(explanations[i]);
                    explanations[i] = NULL;
                }
            r = gs_error_set(err, c, "out of memory");
        }
    }
    for (size_t i = 0; i < n_specs; i++) {
        if (res[i]) {
            for (size_t k = 0; k < n[i]; k++)
                alloc_result_fini(&res[i][k]);
            free(res[i]);
        }
        if (r == 0 && allocations)
            allocations[i] = al[i];
        else
            json_decref(al[i]);
    }
    if (heap) {
        free(res);
        free(n);
        free(al);
        free(old);
    }
    return r;
}
