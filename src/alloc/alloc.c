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
    return code == -EINVAL ? "InvalidClaim" : "Error";
}

struct alloc_claim_spec *alloc_claim_spec_new(const json_t *claim, struct gs_error *err)
{
    struct alloc_claim_spec *spec = NULL;
    if (alloc_decode_claim(claim, &spec, err) < 0)
        return NULL;
    if (spec->n_req == 0) {
        gs_error_set(err, -EINVAL, "ResourceClaim %s: spec.devices.requests: no requests",
                     spec->name);
        alloc_claim_spec_free(spec);
        return NULL;
    }
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
    struct gs_error local = {0};
    if (!err)
        err = &local;
    gs_error_clear(err);
    if (allocation)
        *allocation = NULL;
    if (explanation)
        *explanation = NULL;
    if (!opt || !opt->node || !*opt->node)
        return gs_error_set(err, -EINVAL, "alloc_claim: a node name is required");
    struct alloc_result *res = NULL;
    size_t n = 0;
    json_t *al = NULL;
    /* A claim the state already holds is allocated afresh: its devices count as free during
     * the search, and its old allocation comes back if the search fails. */
    struct alloc_allocated_claim *old = alloc_state_take_claim(st, spec->ns, spec->name);
    int r = alloc_search(st, spec, opt, &res, &n, &al, err);
    if (r == ALLOC_UNSCHEDULABLE && !err->code)
        gs_error_set(err, r, "claim %s/%s: cannot allocate all requests on node %s", spec->ns,
                     spec->name, opt->node);
    /* Explain before committing, so the claim's own allocation is not counted as in use. */
    if (explanation && (r != 0 || opt->explain)) {
        char key[1100];
        snprintf(key, sizeof(key), "%s/%s", spec->ns, spec->name);
        struct alloc_explanation *e = alloc_explanation_new(key, opt->node);
        if (e) {
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
            *explanation = e;
        }
    }
    if (r != 0)
        alloc_state_restore_claim(st, old);
    else
        alloc_allocated_claim_free(old);
    if (r == 0) {
        int c = alloc_state_commit(st, spec->ns, spec->name, res, n);
        if (c < 0) {
            for (size_t i = 0; i < n; i++)
                alloc_result_fini(&res[i]);
            free(res);
            json_decref(al);
            if (explanation) {
                alloc_explanation_free(*explanation);
                *explanation = NULL;
            }
            return gs_error_set(err, c, "out of memory");
        }
    }
    if (r == 0) {
        if (allocation)
            *allocation = al;
        else
            json_decref(al);
    }
    return r;
}
