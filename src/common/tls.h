/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving certificate and key, re-read when the files change (cert-manager rotation).
 *
 * GnuTLS asks for the certificate on every handshake (wh_tls_retrieve, installed through
 * MHD_OPTION_HTTPS_CERT_CALLBACK). At most once per `check_interval_ms` that call stat()s both
 * files; when either changed (device, inode, size or mtime), the pair is loaded and checked (the
 * key must match the first certificate). A pair that fails to load keeps the previous one in
 * service and is retried at the next check. Replaced pairs stay allocated until
 * wh_tls_free(): a session handshaken with one may still point at it (one pair per rotation).
 */
#ifndef GS_WEBHOOK_TLS_H
#define GS_WEBHOOK_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "webhook/metrics.h"

/* TLS 1.2 and 1.3 only, GnuTLS' NORMAL cipher suites. */
#define WH_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define WH_TLS_MAX_FILE   (1u * 1024u * 1024u)
#define WH_TLS_MAX_CHAIN  16

struct wh_tls;

/* Load the pair once; NULL with a message naming the file on failure. `metrics` may be NULL. */
struct wh_tls *wh_tls_new(const char *cert_file, const char *key_file, uint64_t check_interval_ms,
                          struct wh_metrics *metrics, struct gs_error *err);
void wh_tls_free(struct wh_tls *t);

/* Check the files now (normally rate-limited): 1 reloaded, 0 unchanged, <0 failed to load. */
int wh_tls_check(struct wh_tls *t, struct gs_error *err);

/* How many pairs have been loaded (1 after wh_tls_new). */
unsigned wh_tls_generation(struct wh_tls *t);

/* gnutls_certificate_retrieve_function2 for the one wh_tls of this process (wh_tls_new sets it). */
int wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

#endif /* GS_WEBHOOK_TLS_H */
