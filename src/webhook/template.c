/* SPDX-License-Identifier: Apache-2.0 */
/* The ResourceClaimTemplate named by the SHA-256 of its claim spec. Apart from shape.c so that
 * the legacy translation the extender shares does not bring GnuTLS (the hash) with it. */
#include "webhook/template.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/shape.h"

int wh_claim_spec_hash(const json_t *claim_spec, char hex[65])
{
    char *text = json_dumps(claim_spec, JSON_COMPACT | JSON_SORT_KEYS);
    unsigned char digest[32];
    if (!text)
        return -ENOMEM;
    int r = gnutls_hash_fast(GNUTLS_DIG_SHA256, text, strlen(text), digest);
    free(text);
    if (r < 0)
        return -EIO;
    for (size_t i = 0; i < sizeof(digest); i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

int wh_template_name(const json_t *claim_spec, char *buf, size_t len)
{
    char hex[65];
    int r = wh_claim_spec_hash(claim_spec, hex);
    if (r < 0)
        return r;
    if (len < sizeof(WH_TEMPLATE_PREFIX) + 20)
        return -ENOSPC;
    snprintf(buf, len, "%s%.20s", WH_TEMPLATE_PREFIX, hex);
    return 0;
}

json_t *wh_template_object(const char *name, const char *ns, const json_t *claim_spec)
{
    char hex[65];
    if (wh_claim_spec_hash(claim_spec, hex) < 0)
        return NULL;
    return wh_template_object_hashed(name, ns, claim_spec, hex);
}

json_t *wh_template_object_hashed(const char *name, const char *ns, const json_t *claim_spec,
                                  const char hex[65])
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:{s:s}},s:{s:O}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceClaimTemplate", "metadata", "name",
                     name, "namespace", ns, "labels", "app.kubernetes.io/managed-by",
                     "gpuslice-webhook", "annotations", WH_ANN_SPEC_HASH, hex, "spec", "spec",
                     claim_spec);
}
