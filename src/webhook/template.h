/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ResourceClaimTemplate the webhook creates for a legacy shape: named by the SHA-256 of its
 * claim spec (webhook/shape.h builds the spec), annotated with the full hash.
 */
#ifndef GS_WEBHOOK_TEMPLATE_H
#define GS_WEBHOOK_TEMPLATE_H

#include <jansson.h>
#include <stddef.h>

/* Annotation on every template: the full SHA-256 of its claim spec, so a template of the same
 * name that the webhook did not make for this shape is told apart on 409. */
#define WH_ANN_SPEC_HASH "gpuslice.io/claim-spec-sha256"

/* Lowercase hex SHA-256 (64 digits + NUL) over the compact, key-sorted JSON of `claim_spec`. */
int wh_claim_spec_hash(const json_t *claim_spec, char hex[65]);
/* "gpuslice-<first 20 hex digits of wh_claim_spec_hash>". */
int wh_template_name(const json_t *claim_spec, char *buf, size_t len);

/* The ResourceClaimTemplate object (new reference), or NULL on ENOMEM. */
json_t *wh_template_object(const char *name, const char *ns, const json_t *claim_spec);
/* The same with the spec's hash already computed (wh_claim_spec_hash): one hash per shape. */
json_t *wh_template_object_hashed(const char *name, const char *ns, const json_t *claim_spec,
                                  const char hex[65]);

#endif /* GS_WEBHOOK_TEMPLATE_H */
