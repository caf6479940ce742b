/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `gpuslice-webhook certgen`: the webhook's serving certificate without cert-manager (see
 * docs/internals/webhook.md "certgen"). One run, idempotent:
 *   1. reads the Secret (type kubernetes.io/tls: tls.crt, tls.key, ca.crt, ca.key); keeps it when
 *      the leaf is valid past the renewal window, names the Service's DNS names, matches its key
 *      and verifies against the CA it holds; renews only the leaf when the CA (ca.crt + ca.key)
 *      is still good, so the caBundle stays the same; otherwise makes a new CA and leaf (ECDSA
 *      P-256, GnuTLS) and keeps the previous CA in ca.crt while it is unexpired, so the webhook
 *      that still serves the old leaf is trusted until it reloads the new one;
 *   2. gives every webhook of the MutatingWebhookConfiguration ca.crt as its caBundle (one JSON
 *      patch, a test + add pair per webhook that differs, from the object's current list).
 * A second run writes nothing.
 */
#ifndef GS_WEBHOOK_CERTGEN_H
#define GS_WEBHOOK_CERTGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"
#include "kube/k8s.h"

struct wh_certgen_config {
    const char *namespace;      /* of the Secret and the Service */
    const char *secret;         /* "gpuslice-webhook-tls" */
    const char *service;        /* "gpuslice-webhook" */
    const char *webhook_config; /* MutatingWebhookConfiguration "gpuslice-webhook" */
    int64_t renew_before_s;     /* renew when the leaf (or CA) expires within this */
    int64_t cert_validity_s;    /* lifetime of a new leaf */
    int64_t ca_validity_s;      /* lifetime of a new CA */
    time_t now;                 /* 0 = time(NULL) */
};

enum wh_certgen_action {
    WH_CERTGEN_KEPT = 0,    /* the Secret was good: not written */
    WH_CERTGEN_CREATED = 1, /* no Secret: created with a new CA */
    WH_CERTGEN_LEAF = 2,    /* new leaf from the CA the Secret holds */
    WH_CERTGEN_NEW_CA = 3,  /* new CA and leaf written over the Secret */
};

struct wh_certgen_result {
    enum wh_certgen_action action;
    char why[160];     /* why the Secret was (re)written, "" if kept */
    unsigned webhooks; /* webhooks in the configuration */
    unsigned patched;  /* of which got a new caBundle */
};

const char *wh_certgen_action_name(enum wh_certgen_action a);

/* 0, or a negative code with a message naming the object and the API's status. */
int wh_certgen_run(struct gs_k8s_client *k, const struct wh_certgen_config *cfg,
                   struct wh_certgen_result *res, struct gs_error *err);

#endif /* GS_WEBHOOK_CERTGEN_H */
