/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu/claim-config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/claim.h"
#include "config/limits.h"

void claim_qos_init(struct claim_qos *q)
{
    q->policy = GS_POLICY_UNSET;
    q->priority = GS_PRIORITY_UNSET;
    q->log_level = -1;
}

static const char *const known_fields[] = {"apiVersion",     "kind",     "computePolicy",
                                           "priority",       "logLevel", "allowedComputePolicies",
                                           "highestPriority"};

int claim_qos_parse_params(const json_t *params, const char *cname, const char *where,
                           struct claim_qos *q, struct gs_error *err)
{
    if (!json_is_object(params))
        return gs_error_set(err, -EINVAL, "claim %s: %s: not an object", cname, where);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof(known_fields) / sizeof(known_fields[0]); i++)
            known = known || strcmp(key, known_fields[i]) == 0;
        if (!known)
            return gs_error_set(err, -EINVAL,
                                "claim %s: %s: unknown field \"%.60s\" (known: apiVersion, kind, "
                                "computePolicy, priority, logLevel, allowedComputePolicies, "
                                "highestPriority)",
                                cname, where, key);
    }
    const char *api = json_string_value(json_object_get(params, "apiVersion"));
    const char *kind = json_string_value(json_object_get(params, "kind"));
    if (!api || strcmp(api, CLAIM_CONFIG_API_VERSION) != 0)
        return gs_error_set(err, -EINVAL, "claim %s: %s.apiVersion: \"%.60s\" is not %s", cname,
                            where, api ? api : "(missing)", CLAIM_CONFIG_API_VERSION);
    if (!kind || strcmp(kind, CLAIM_CONFIG_KIND) != 0)
        return gs_error_set(err, -EINVAL, "claim %s: %s.kind: \"%.60s\" is not %s", cname, where,
                            kind ? kind : "(missing)", CLAIM_CONFIG_KIND);
    struct claim_qos n = *q;
    v = json_object_get(params, "computePolicy");
    if (v) {
        const char *s = json_string_value(v);
        int pol = s ? gs_compute_policy_parse(s) : -EINVAL;
        if (pol < 0)
            return gs_error_set(err, -EINVAL,
                                "claim %s: %s.computePolicy: \"%.60s\" is not hard, "
                                "work-conserving or disabled",
                                cname, where, s ? s : "(not a string)");
        n.policy = pol;
    }
    v = json_object_get(params, "priority");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < GS_PRIORITY_HIGH ||
            json_integer_value(v) > GS_PRIORITY_LOW)
            return gs_error_set(err, -EINVAL,
                                "claim %s: %s.priority: %s is not 0 (high) or 1 (low)", cname,
                                where, json_is_integer(v) ? "out of range" : "not an integer");
        n.priority = (int32_t)json_integer_value(v);
    }
    v = json_object_get(params, "logLevel");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 4)
            return gs_error_set(err, -EINVAL, "claim %s: %s.logLevel: %s is not 0..4", cname, where,
                                json_is_integer(v) ? "out of range" : "not an integer");
        n.log_level = (int32_t)json_integer_value(v);
    }
    *q = n;
    return 0;
}

/*
 * The admin's ceilings over the tenant (issue 31): a DeviceClass config may say which compute
 * policies a claim config may ask (allowedComputePolicies) and the highest priority it may ask
 * (highestPriority: 0 high, 1 low — a claim asking a smaller number asks more). Ceilings of
 * several class entries combine (the policies all allow, the lowest priority any allows).
 */
struct qos_ceilings {
    unsigned policies;        /* bit per enum gs_compute_policy; 0 = no ceiling */
    int32_t highest_priority; /* GS_PRIORITY_UNSET = no ceiling */
    char policies_where[96], priority_where[96];
};

static int parse_ceilings(const json_t *params, const char *cname, const char *where,
                          struct qos_ceilings *c, struct gs_error *err)
{
    const json_t *v = json_object_get(params, "allowedComputePolicies");
    if (v) {
        unsigned mask = 0;
        size_t i;
        const json_t *e;
        if (!json_is_array(v) || json_array_size(v) == 0)
            return gs_error_set(err, -EINVAL,
                                "claim %s: %s.allowedComputePolicies: not a non-empty list", cname,
                                where);
        json_array_foreach(v, i, e)
        {
            const char *name = json_string_value(e);
            int pol = name ? gs_compute_policy_parse(name) : -EINVAL;
            if (pol <= 0)
                return gs_error_set(err, -EINVAL,
                                    "claim %s: %s.allowedComputePolicies[%zu]: \"%.60s\" is not "
                                    "hard, work-conserving or disabled",
                                    cname, where, i, name ? name : "(not a string)");
            mask |= 1U << pol;
        }
        c->policies = c->policies ? c->policies & mask : mask;
        snprintf(c->policies_where, sizeof(c->policies_where), "%s", where);
    }
    v = json_object_get(params, "highestPriority");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < GS_PRIORITY_HIGH ||
            json_integer_value(v) > GS_PRIORITY_LOW)
            return gs_error_set(
                err, -EINVAL, "claim %s: %s.highestPriority: %s is not 0 (high) or 1 (low)", cname,
                where, json_is_integer(v) ? "out of range" : "not an integer");
        int32_t hp = (int32_t)json_integer_value(v);
        if (c->highest_priority == GS_PRIORITY_UNSET || hp > c->highest_priority)
            c->highest_priority = hp;
        snprintf(c->priority_where, sizeof(c->priority_where), "%s", where);
    }
    return 0;
}

static void policy_list(unsigned mask, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int pol = GS_POLICY_HARD; pol <= GS_POLICY_DISABLED; pol++)
        if (mask & (1U << pol))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     gs_compute_policy_name(pol));
}

/* A claim config entry: no ceilings of its own, and what it asks within the class's. */
static int check_claim_entry(const json_t *params, const char *cname, const char *where,
                             const struct qos_ceilings *c, struct gs_error *err)
{
    static const char *const admin_only[] = {"allowedComputePolicies", "highestPriority"};
    for (size_t i = 0; i < sizeof(admin_only) / sizeof(admin_only[0]); i++)
        if (json_object_get(params, admin_only[i]))
            return gs_error_set(err, -EINVAL,
                                "claim %s: %s.%s: a ceiling is set by the DeviceClass's config "
                                "(the admin), not by the claim",
                                cname, where, admin_only[i]);
    const char *pol_s = json_string_value(json_object_get(params, "computePolicy"));
    int pol = pol_s ? gs_compute_policy_parse(pol_s) : -EINVAL;
    if (c->policies && pol > 0 && !(c->policies & (1U << pol))) {
        char allowed[64];
        policy_list(c->policies, allowed, sizeof(allowed));
        return gs_error_set(err, -EINVAL,
                            "claim %s: %s.computePolicy: \"%s\" exceeds the DeviceClass ceiling "
                            "allowedComputePolicies [%s] (%s)",
                            cname, where, pol_s, allowed, c->policies_where);
    }
    const json_t *pr = json_object_get(params, "priority");
    if (c->highest_priority != GS_PRIORITY_UNSET && json_is_integer(pr) &&
        json_integer_value(pr) < c->highest_priority)
        return gs_error_set(
            err, -EINVAL,
            "claim %s: %s.priority: %lld (%s) exceeds the DeviceClass ceiling "
            "highestPriority %d (%s) (%s)",
            cname, where, (long long)json_integer_value(pr),
            json_integer_value(pr) == GS_PRIORITY_HIGH ? "high" : "low", (int)c->highest_priority,
            c->highest_priority == GS_PRIORITY_HIGH ? "high" : "low", c->priority_where);
    return 0;
}

/* Does the entry's `requests` list (absent or empty: every request) name one of our results? */
static bool applies(const json_t *entry, const struct claim_plan *p)
{
    const json_t *reqs = json_object_get(entry, "requests");
    if (!json_is_array(reqs) || json_array_size(reqs) == 0)
        return true;
    size_t i;
    const json_t *r;
    json_array_foreach(reqs, i, r)
    {
        const char *s = json_string_value(r);
        for (size_t k = 0; s && k < p->n_results; k++) {
            size_t n = strlen(p->results[k].request);
            /* "gpu" matches the results of "gpu" and of its subrequests "gpu/..." */
            if (strcmp(s, p->results[k].request) == 0 ||
                (strncmp(s, p->results[k].request, n) == 0 && s[n] == '/'))
                return true;
        }
    }
    return false;
}

int claim_qos_from_claim(const json_t *claim, const char *driver, const char *cname,
                         struct claim_plan *p, struct gs_error *err)
{
    claim_qos_init(&p->qos);
    const json_t *cfg = json_object_get(
        json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"), "devices"),
        "config");
    if (!cfg)
        return 0;
    if (!json_is_array(cfg))
        return gs_error_set(err, -EINVAL,
                            "claim %s: status.allocation.devices.config is not a list", cname);
    /* FromClass entries first, then FromClaim: the claim's own settings win (as NVIDIA's
     * GetOpaqueDeviceConfigs orders them), within the ceilings the class entries set. */
    struct qos_ceilings ceil = {.highest_priority = GS_PRIORITY_UNSET};
    for (int pass = 0; pass < 2; pass++) {
        size_t i;
        const json_t *e;
        json_array_foreach(cfg, i, e)
        {
            const char *src = json_string_value(json_object_get(e, "source"));
            bool from_class = src && strcmp(src, "FromClass") == 0;
            if (from_class != (pass == 0))
                continue;
            const json_t *op = json_object_get(e, "opaque");
            const char *drv = json_string_value(json_object_get(op, "driver"));
            if (!drv || strcmp(drv, driver) != 0 || !applies(e, p))
                continue;
            char where[96];
            snprintf(where, sizeof(where), "config[%zu].opaque.parameters", i);
            const json_t *params = json_object_get(op, "parameters");
            int r = claim_qos_parse_params(params, cname, where, &p->qos, err);
            if (r == 0)
                r = from_class ? parse_ceilings(params, cname, where, &ceil, err)
                               : check_claim_entry(params, cname, where, &ceil, err);
            if (r < 0)
                return r;
        }
    }
    return 0;
}
