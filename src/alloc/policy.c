/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement policies beyond kube-scheduler's first fit, as scores over complete solutions:
 *   binpack   mean utilisation of the chosen devices after allocation (higher first);
 *   spread    the opposite;
 *   topology  fewest distinct nvlinkDomain values, then fewest distinct PCIe roots
 *             (resource.kubernetes.io/pcieRoot) among the chosen devices, then binpack.
 */
#include <errno.h>
#include <string.h>

#include "alloc/alloc-internal.h"

static const struct {
    const char *name;
    enum alloc_policy p;
} policies[] = {
    {"first-fit", ALLOC_POLICY_FIRST_FIT},
    {"binpack", ALLOC_POLICY_BINPACK},
    {"spread", ALLOC_POLICY_SPREAD},
    {"topology", ALLOC_POLICY_TOPOLOGY},
};

int alloc_policy_parse(const char *s, enum alloc_policy *out, struct gs_error *err)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(policies); i++)
        if (s && strcmp(s, policies[i].name) == 0) {
            *out = policies[i].p;
            return 0;
        }
    return gs_error_set(err, -EINVAL,
                        "policy: \"%s\" is not one of first-fit, binpack, spread, topology",
                        s ? s : "");
}

const char *alloc_policy_name(enum alloc_policy p)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(policies); i++)
        if (policies[i].p == p)
            return policies[i].name;
    return "unknown";
}

/* Utilisation of a device after this claim: mean over its capacities of used/value; a device
 * without capacities, or an exclusive one, counts as fully used. */
static double utilisation(const struct alloc_pick *p)
{
    const struct alloc_device *d = p->dev;
    if (!d->shareable || d->n_cap == 0)
        return 1.0;
    double sum = 0;
    for (size_t i = 0; i < d->n_cap; i++) {
        const struct alloc_qty *u = alloc_capacity_used(d, i);
        __int128 used = (u ? u->n : 0) + p->pending[i].n;
        sum += d->cap[i].value.n > 0 ? (double)used / (double)d->cap[i].value.n : 1.0;
    }
    return sum / (double)d->n_cap;
}

static size_t distinct(const struct alloc_pick *picks, size_t n, const char *attr)
{
    const json_t *seen[ALLOC_MAX_RESULTS];
    size_t ns = 0, missing = 0;
    for (size_t i = 0; i < n; i++) {
        char fq[300];
        const char *name = attr;
        if (!strchr(attr, '/')) {
            snprintf(fq, sizeof(fq), "%s/%s", picks[i].dev->slice->driver, attr);
            name = fq;
        }
        const json_t *v = alloc_lookup_attribute(picks[i].dev, name);
        if (!v) {
            missing++;
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < ns && !dup; k++)
            dup = alloc_attr_equal(seen[k], v);
        if (!dup && ns < ALLOC_MAX_RESULTS)
            seen[ns++] = v;
    }
    /* Devices without the attribute are each on their own link/root. */
    return ns + missing;
}

double alloc_policy_score(enum alloc_policy policy, const struct alloc_pick *picks, size_t n)
{
    double u = 0;
    for (size_t i = 0; i < n; i++)
        u += utilisation(&picks[i]);
    if (n)
        u /= (double)n;
    switch (policy) {
    case ALLOC_POLICY_BINPACK:
        return u;
    case ALLOC_POLICY_SPREAD:
        return -u;
    case ALLOC_POLICY_TOPOLOGY: {
        /* Only multi-device solutions have a topology to prefer. */
        if (n < 2)
            return u;
        double nv = (double)distinct(picks, n, "nvlinkDomain");
        double pcie = (double)distinct(picks, n, "resource.kubernetes.io/pcieRoot");
        return -(nv * 1000.0 + pcie * 10.0) + u;
    }
    case ALLOC_POLICY_FIRST_FIT:
    default:
        return 0;
    }
}
