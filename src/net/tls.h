/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving certificate and key, re-read when the files change (cert-manager rotation).
 *
 * GnuTLS asks for the certificate on every handshake (gs_tls_retrieve, installed through
 * MHD_OPTION_HTTPS_CERT_CALLBACK). At most once per `check_interval_ms` that call stat()s both
 * files; when either changed (device, inode, size or mtime), the pair is loaded and checked (the
 * key must match the first certificate). A pair that fails to load keeps the previous one in
 * service and is retried at the next check. Replaced pairs stay allocated until
 * gs_tls_free(): a session handshaken with one may still point at it (one pair per rotation).
 *
 * Its own static library (libgstls.a, tls_dep) beside libgshttpd: the HTTPS daemons (webhook,
 * monitor, extender) link it; the others never need GnuTLS (test release_linkage).
 */
#ifndef GS_NET_TLS_H
#define GS_NET_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* TLS 1.2 and 1.3 only, GnuTLS' NORMAL cipher suites. */
#define GS_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* --tls-min-version 1.3 (HAMi-DRA's default for its --tls-min-version). */
#define GS_TLS_PRIORITIES_13 "NORMAL:-VERS-ALL:+VERS-TLS1.3"
#define GS_TLS_MAX_FILE      (1u * 1024u * 1024u)
#define GS_TLS_MAX_CHAIN     16

struct gs_tls;

/* Load the pair once; NULL with a message naming the file on failure. `reloads` (pairs loaded,
 * this first one included) and `reload_errors` (changed files that failed to load) are the
 * caller's counters for its metrics, incremented atomically; either may be NULL. */
struct gs_tls *gs_tls_new(const char *cert_file, const char *key_file, uint64_t check_interval_ms,
                          _Atomic uint64_t *reloads, _Atomic uint64_t *reload_errors,
                          struct gs_error *err);
void gs_tls_free(struct gs_tls *t);

/* Check the files now (normally rate-limited): 1 reloaded, 0 unchanged, <0 failed to load. */
int gs_tls_check(struct gs_tls *t, struct gs_error *err);

/* How many pairs have been loaded (1 after gs_tls_new). */
unsigned gs_tls_generation(struct gs_tls *t);

/* gnutls_certificate_retrieve_function2 for the one gs_tls of this process (gs_tls_new sets it). */
int gs_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

#endif /* GS_NET_TLS_H */
