/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu/claim-config.h"

#include <errno.h>
#include <string.h>

#include "gpu/claim.h"
#include "config/limits.h"

void claim_qos_init(struct claim_qos *q)
{
    q->policy = GS_POLICY_UNSET;
    q->priority = GS_PRIORITY_UNSET;
    q->log_level = -1;
}

static const char *const known_fields[] = {"apiVersion", "kind", "computePolicy", "priority",
                                           "logLevel"};

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
                                "computePolicy, priority, logLevel)",
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
    /* FromClass entries first, then FromClaim: the claim's own settings win */
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
            int r = claim_qos_parse_params(json_object_get(op, "parameters"), cname, where, &p->qos,
                                           err);
            if (r < 0)
                return r;
        }
    }
    return 0;
}
