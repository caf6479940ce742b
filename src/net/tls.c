/* SPDX-License-Identifier: Apache-2.0 */
/* Certificate/key pair with change detection, handed to GnuTLS per handshake. */
#include "net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/macros.h"

struct pair {
    gnutls_pcert_st pcert[GS_TLS_MAX_CHAIN];
    unsigned n_pcert;
    gnutls_privkey_t key;
    struct pair *older;
};

struct file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct gs_tls {
    char *cert_file, *key_file;
    uint64_t check_interval_ms;
    _Atomic uint64_t *reloads, *reload_errors; /* the caller's counters, or NULL */
    pthread_mutex_t lock;
    struct pair *current; /* newest first; older ones chained for gs_tls_free */
    struct file_id cert_id, key_id;
    _Atomic uint64_t next_check_ms;
    unsigned generation;
};

static struct gs_tls *the_tls; /* for gs_tls_retrieve: GnuTLS gives the callback no user data */

static void pair_free(struct pair *p)
{
    while (p) {
        struct pair *older = p->older;
        for (unsigned i = 0; i < p->n_pcert; i++)
            gnutls_pcert_deinit(&p->pcert[i]);
        gnutls_privkey_deinit(p->key);
        free(p);
        p = older;
    }
}

/* Whole regular file, at most GS_TLS_MAX_FILE bytes; *id is the identity of what was read. */
static int read_file(const char *path, gnutls_datum_t *out, struct file_id *id,
                     struct gs_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct stat st;
    int r = gs_read_file_ex(path, GS_TLS_MAX_FILE, GS_READ_REGULAR, &buf, &len, &st, err);
    if (r < 0)
        return r;
    out->data = (unsigned char *)buf;
    out->size = (unsigned)len;
    *id = (struct file_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    return 0;
}

/* False if path cannot be stat()ed (*id untouched). */
static bool stat_id(const char *path, struct file_id *id)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return false;
    *id = (struct file_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    return true;
}

static bool same_id(const struct file_id *a, const struct file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Does the private key belong to the certificate's public key? */
static bool key_matches(gnutls_pcert_st *cert, gnutls_privkey_t key)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t a = {0}, b = {0};
    bool match = false;
    if (gnutls_pubkey_init(&pub) == 0 && gnutls_pubkey_import_privkey(pub, key, 0, 0) == 0 &&
        gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) == 0 &&
        gnutls_pubkey_export2(cert->pubkey, GNUTLS_X509_FMT_DER, &b) == 0)
        match = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(pub);
    return match;
}

static int load_pair(struct gs_tls *t, struct pair **out, struct file_id *cert_id,
                     struct file_id *key_id, struct gs_error *err)
{
    gnutls_datum_t cert = {0}, key = {0};
    int r = read_file(t->cert_file, &cert, cert_id, err);
    if (r == 0)
        r = read_file(t->key_file, &key, key_id, err);
    struct pair *p = r == 0 ? calloc(1, sizeof(*p)) : NULL;
    if (r == 0 && !p)
        r = gs_error_set(err, -ENOMEM, "out of memory");
    if (r == 0) {
        unsigned n = GS_TLS_MAX_CHAIN;
        int g = gnutls_pcert_list_import_x509_raw(p->pcert, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
        if (g < 0 || n == 0)
            r = gs_error_set(err, -EINVAL, "%s: no PEM certificate (%s)", t->cert_file,
                             gnutls_strerror(g));
        else
            p->n_pcert = n;
    }
    if (r == 0) {
        int g = gnutls_privkey_init(&p->key);
        if (g == 0)
            g = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
        if (g < 0)
            r = gs_error_set(err, -EINVAL, "%s: no PEM private key (%s)", t->key_file,
                             gnutls_strerror(g));
    }
    if (r == 0 && !key_matches(&p->pcert[0], p->key))
        r = gs_error_set(err, -EINVAL, "%s does not match the certificate in %s", t->key_file,
                         t->cert_file);
    if (key.data) {
        memset(key.data, 0, key.size);
        free(key.data);
    }
    free(cert.data);
    if (r != 0) { /* every step above ran only while r == 0 */
        pair_free(p);
        return r;
    }
    *out = p;
    return 0;
}

struct gs_tls *gs_tls_new(const char *cert_file, const char *key_file, uint64_t check_interval_ms,
                          _Atomic uint64_t *reloads, _Atomic uint64_t *reload_errors,
                          struct gs_error *err)
{
    struct gs_tls *t = calloc(1, sizeof(*t));
    if (t)
        pthread_mutex_init(&t->lock, NULL);
    if (!t || !(t->cert_file = strdup(cert_file)) || !(t->key_file = strdup(key_file))) {
        gs_tls_free(t);
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    t->check_interval_ms = check_interval_ms;
    t->reloads = reloads;
    t->reload_errors = reload_errors;
    if (load_pair(t, &t->current, &t->cert_id, &t->key_id, err) < 0) {
        gs_tls_free(t);
        return NULL;
    }
    t->generation = 1;
    if (reloads)
        atomic_fetch_add(reloads, 1);
    atomic_store(&t->next_check_ms, gs_now_ms() + check_interval_ms);
    the_tls = t;
    return t;
}

void gs_tls_free(struct gs_tls *t)
{
    if (!t)
        return;
    if (the_tls == t)
        the_tls = NULL;
    pthread_mutex_destroy(&t->lock);
    pair_free(t->current);
    free(t->cert_file);
    free(t->key_file);
    free(t);
}

unsigned gs_tls_generation(struct gs_tls *t)
{
    pthread_mutex_lock(&t->lock);
    unsigned g = t->generation;
    pthread_mutex_unlock(&t->lock);
    return g;
}

/* Caller holds t->lock. */
static int check_locked(struct gs_tls *t, struct gs_error *err)
{
    struct file_id c, k;
    if (!stat_id(t->cert_file, &c) || !stat_id(t->key_file, &k))
        return 0; /* mid-rotation (symlink swap): keep serving, look again later */
    if (same_id(&c, &t->cert_id) && same_id(&k, &t->key_id))
        return 0;
    struct pair *p = NULL;
    int r = load_pair(t, &p, &c, &k, err);
    if (r != 0) { /* load_pair returns 0 with a pair, or a negative code */
        if (t->reload_errors)
            atomic_fetch_add(t->reload_errors, 1);
        return r;
    }
    p->older = t->current;
    t->current = p;
    t->cert_id = c, t->key_id = k;
    t->generation++;
    if (t->reloads)
        atomic_fetch_add(t->reloads, 1);
    return 1;
}

int gs_tls_check(struct gs_tls *t, struct gs_error *err)
{
    pthread_mutex_lock(&t->lock);
    int r = check_locked(t, err);
    pthread_mutex_unlock(&t->lock);
    if (r > 0) {
        char q[300];
        gs_info("certificate reloaded", "cert=%s generation=%u",
                gs_log_quote(q, sizeof(q), t->cert_file), t->generation);
    }
    return r;
}

int gs_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    struct gs_tls *t = the_tls;
    if (!t)
        return -1;
    uint64_t now = gs_now_ms(), next = atomic_load(&t->next_check_ms);
    if (now >= next &&
        atomic_compare_exchange_strong(&t->next_check_ms, &next, now + t->check_interval_ms)) {
        struct gs_error err = {0};
        if (gs_tls_check(t, &err) < 0) {
            char q[300];
            gs_warn("certificate reload failed; serving the previous pair", "error=%s",
                    gs_log_quote(q, sizeof(q), err.msg));
        }
    }
    pthread_mutex_lock(&t->lock);
    *pcert = t->current->pcert;
    *pcert_length = t->current->n_pcert;
    *pkey = t->current->key;
    pthread_mutex_unlock(&t->lock);
    return 0;
}
