/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certgen: the webhook's CA and serving certificate in a Secret, and every webhook's caBundle
 * (certgen.h). The checks follow what the API server does with the bundle: it verifies the
 * serving certificate against caBundle for the host "<service>.<namespace>.svc"
 * (k8s.io/apiserver pkg/util/webhook: webhookClientConfig -> the Service's DNS name), so the
 * leaf must name that host and chain to a CA in the bundle.
 */
#include "webhook/certgen.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "config/json.h"
#include "kube/kubeconfig.h"

static const struct gs_k8s_resource secrets = {"", "v1", "secrets", true};
static const struct gs_k8s_resource webhook_configs = {"admissionregistration.k8s.io", "v1",
                                                       "mutatingwebhookconfigurations", false};

#define SECRET_TYPE  "kubernetes.io/tls"
#define MAX_PEM      (64u * 1024u)
#define CLOCK_SKEW_S 3600 /* new certificates are valid from an hour ago */

const char *wh_certgen_action_name(enum wh_certgen_action a)
{
    switch (a) {
    case WH_CERTGEN_KEPT:
        return "kept";
    case WH_CERTGEN_CREATED:
        return "created";
    case WH_CERTGEN_LEAF:
        return "renewed-leaf";
    case WH_CERTGEN_NEW_CA:
        return "new-ca";
    }
    return "?";
}

/* ---- PEM material ------------------------------------------------------------------------- */

struct certs {
    gnutls_x509_crt_t *list;
    unsigned n;
};

static void certs_fini(struct certs *c)
{
    for (unsigned i = 0; i < c->n; i++)
        gnutls_x509_crt_deinit(c->list[i]);
    gnutls_free(c->list);
    *c = (struct certs){0};
}

static void keyp(gnutls_x509_privkey_t *k)
{
    if (*k)
        gnutls_x509_privkey_deinit(*k);
}

static void crtp(gnutls_x509_crt_t *c)
{
    if (*c)
        gnutls_x509_crt_deinit(*c);
}

/* The decoded value of data.<key>, NULL if absent or not base64. */
static char *secret_value(json_t *secret, const char *key, size_t *len)
{
    json_t *v = json_object_get(json_object_get(secret, "data"), key);
    char *out = NULL;
    *len = 0;
    if (!json_is_string(v) || json_string_length(v) > 2 * MAX_PEM ||
        gs_base64_decode(json_string_value(v), json_string_length(v), &out, len) < 0)
        return NULL;
    return out;
}

static int parse_certs(const char *pem, size_t len, struct certs *out)
{
    *out = (struct certs){0};
    if (!pem || !len)
        return -ENOENT;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    return gnutls_x509_crt_list_import2(&out->list, &out->n, &d, GNUTLS_X509_FMT_PEM, 0) < 0 ||
                   out->n == 0
               ? -EINVAL
               : 0;
}

static int parse_key(const char *pem, size_t len, gnutls_x509_privkey_t *out)
{
    *out = NULL;
    if (!pem || !len)
        return -ENOENT;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    if (gnutls_x509_privkey_init(out) < 0)
        return -ENOMEM;
    if (gnutls_x509_privkey_import2(*out, &d, GNUTLS_X509_FMT_PEM, NULL, 0) < 0) {
        gnutls_x509_privkey_deinit(*out);
        *out = NULL;
        return -EINVAL;
    }
    return 0;
}

static bool key_matches(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
    unsigned char a[64], b[64];
    size_t la = sizeof(a), lb = sizeof(b);
    return gnutls_x509_crt_get_key_id(crt, 0, a, &la) >= 0 &&
           gnutls_x509_privkey_get_key_id(key, 0, b, &lb) >= 0 && la == lb && memcmp(a, b, la) == 0;
}

static bool is_ca(gnutls_x509_crt_t crt)
{
    unsigned critical = 0;
    return gnutls_x509_crt_get_ca_status(crt, &critical) > 0;
}

static char *to_pem(gnutls_x509_crt_t crt)
{
    gnutls_datum_t d = {0};
    if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d) < 0)
        return NULL;
    char *s = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static char *key_pem(gnutls_x509_privkey_t key)
{
    gnutls_datum_t d = {0};
    if (gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d) <
        0)
        return NULL;
    char *s = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static char *b64(const char *s)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s);
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* ---- making certificates ------------------------------------------------------------------ */

static int new_key(gnutls_x509_privkey_t *out, struct gs_error *err)
{
    int g;
    if ((g = gnutls_x509_privkey_init(out)) < 0 ||
        (g = gnutls_x509_privkey_generate(*out, GNUTLS_PK_ECDSA,
                                          GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0)
        return gs_error_set(err, -EIO, "cannot generate an ECDSA P-256 key: %s",
                            gnutls_strerror(g));
    return 0;
}

struct cert_spec {
    const char *cn;
    bool ca;
    const char *const *dns;
    size_t n_dns;
    time_t now;
    int64_t validity_s;
    gnutls_x509_crt_t issuer; /* NULL = self-signed */
    gnutls_x509_privkey_t issuer_key;
};

static int new_cert(const struct cert_spec *s, gnutls_x509_privkey_t key, gnutls_x509_crt_t *out,
                    struct gs_error *err)
{
    gnutls_x509_crt_t c = NULL;
    unsigned char serial[20], kid[64];
    size_t kid_len = sizeof(kid);
    int g;
    if ((g = gnutls_x509_crt_init(&c)) < 0)
        return gs_error_set(err, -ENOMEM, "cannot make a certificate: %s", gnutls_strerror(g));
    *out = c;
    if ((g = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
        goto fail;
    serial[0] &= 0x7f; /* positive (RFC 5280 4.1.2.2) */
    serial[0] |= 0x01;
    unsigned usage =
        s->ca ? GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN : GNUTLS_KEY_DIGITAL_SIGNATURE;
    if ((g = gnutls_x509_crt_set_version(c, 3)) < 0 ||
        (g = gnutls_x509_crt_set_serial(c, serial, sizeof(serial))) < 0 ||
        (g = gnutls_x509_crt_set_activation_time(c, s->now - CLOCK_SKEW_S)) < 0 ||
        (g = gnutls_x509_crt_set_expiration_time(c, s->now + (time_t)s->validity_s)) < 0 ||
        (g = gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, s->cn,
                                           (unsigned)strlen(s->cn))) < 0 ||
        (g = gnutls_x509_crt_set_key(c, key)) < 0 ||
        (g = gnutls_x509_crt_set_basic_constraints(c, s->ca ? 1 : 0, s->ca ? 0 : -1)) < 0 ||
        (g = gnutls_x509_crt_set_key_usage(c, usage)) < 0 ||
        (g = gnutls_x509_privkey_get_key_id(key, 0, kid, &kid_len)) < 0 ||
        (g = gnutls_x509_crt_set_subject_key_id(c, kid, kid_len)) < 0)
        goto fail;
    if (!s->ca && (g = gnutls_x509_crt_set_key_purpose_oid(c, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0)
        goto fail;
    for (size_t i = 0; i < s->n_dns; i++)
        if ((g = gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_DNSNAME, s->dns[i],
                                                      (unsigned)strlen(s->dns[i]),
                                                      GNUTLS_FSAN_APPEND)) < 0)
            goto fail;
    if (s->issuer) {
        unsigned char akid[64];
        size_t akid_len = sizeof(akid);
        unsigned critical = 0;
        if (gnutls_x509_crt_get_subject_key_id(s->issuer, akid, &akid_len, &critical) >= 0 &&
            (g = gnutls_x509_crt_set_authority_key_id(c, akid, akid_len)) < 0)
            goto fail;
    }
    if ((g = gnutls_x509_crt_sign2(c, s->issuer ? s->issuer : c, s->issuer ? s->issuer_key : key,
                                   GNUTLS_DIG_SHA256, 0)) < 0)
        goto fail;
    return 0;
fail:
    return gs_error_set(err, -EIO, "cannot make the certificate \"%s\": %s", s->cn,
                        gnutls_strerror(g));
}

/* ---- the Secret --------------------------------------------------------------------------- */

struct state {
    struct certs leaf, ca;
    gnutls_x509_privkey_t leaf_key, ca_key;
};

static void state_fini(struct state *s)
{
    certs_fini(&s->leaf);
    certs_fini(&s->ca);
    keyp(&s->leaf_key);
    keyp(&s->ca_key);
}

static void load_state(json_t *secret, struct state *st)
{
    size_t len;
    _cleanup_free_ char *leaf = secret_value(secret, "tls.crt", &len);
    (void)parse_certs(leaf, len, &st->leaf);
    _cleanup_free_ char *leaf_key = secret_value(secret, "tls.key", &len);
    (void)parse_key(leaf_key, len, &st->leaf_key);
    _cleanup_free_ char *ca = secret_value(secret, "ca.crt", &len);
    (void)parse_certs(ca, len, &st->ca);
    _cleanup_free_ char *ca_key = secret_value(secret, "ca.key", &len);
    (void)parse_key(ca_key, len, &st->ca_key);
}

/* Whether the CA the Secret holds can sign a new leaf; why not in why. */
static bool ca_usable(const struct state *st, time_t renew_at, char *why, size_t len)
{
    if (!st->ca.n || !st->ca_key)
        snprintf(why, len, "no CA certificate and key (ca.crt, ca.key)");
    else if (!is_ca(st->ca.list[0]) || !key_matches(st->ca.list[0], st->ca_key))
        snprintf(why, len, "ca.key does not match ca.crt or ca.crt is not a CA");
    else if (gnutls_x509_crt_get_expiration_time(st->ca.list[0]) <= renew_at)
        snprintf(why, len, "the CA expires within the renewal window");
    else
        return true;
    return false;
}

/* Whether the serving pair is good; why not in why. */
static bool leaf_usable(const struct state *st, const char *const *dns, size_t n_dns,
                        time_t renew_at, char *why, size_t len)
{
    if (!st->leaf.n || !st->leaf_key) {
        snprintf(why, len, "no serving certificate and key (tls.crt, tls.key)");
        return false;
    }
    gnutls_x509_crt_t leaf = st->leaf.list[0];
    if (!key_matches(leaf, st->leaf_key)) {
        snprintf(why, len, "tls.key does not match tls.crt");
        return false;
    }
    if (gnutls_x509_crt_get_expiration_time(leaf) <= renew_at) {
        snprintf(why, len, "the serving certificate expires within the renewal window");
        return false;
    }
    for (size_t i = 0; i < n_dns; i++)
        if (!gnutls_x509_crt_check_hostname2(leaf, dns[i], 0)) {
            snprintf(why, len, "the serving certificate does not name %s", dns[i]);
            return false;
        }
    unsigned status = 0;
    if (gnutls_x509_crt_verify(leaf, st->ca.list, st->ca.n, 0, &status) < 0 || status != 0) {
        snprintf(why, len, "the serving certificate was not issued by the CA in ca.crt");
        return false;
    }
    return true;
}

static int put_data(json_t *data, const char *key, const char *pem)
{
    _cleanup_free_ char *v = pem ? b64(pem) : NULL;
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): v _cleanup_ (layers.md Lint) */
    return v ? json_object_set_new(data, key, json_string(v)) : -ENOMEM;
}

/* Writes the new material over `secret` (NULL: creates it). */
static int write_secret(struct gs_k8s_client *k, const struct wh_certgen_config *cfg,
                        json_t *secret, const char *crt, const char *key, const char *ca,
                        const char *ca_key, struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *obj =
        secret ? json_deep_copy(secret)
               : json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}}}", "apiVersion", "v1", "kind",
                           "Secret", "metadata", "name", cfg->secret, "namespace", cfg->namespace,
                           "labels", "app.kubernetes.io/name", "gpuslice-webhook",
                           "app.kubernetes.io/managed-by", "gpuslice-webhook-certgen");
    json_t *data = json_object();
    if (!obj || !data || json_object_set_new(obj, "data", data) < 0 ||
        json_object_set_new(obj, "type", json_string(SECRET_TYPE)) < 0 ||
        put_data(data, "tls.crt", crt) < 0 || put_data(data, "tls.key", key) < 0 ||
        put_data(data, "ca.crt", ca) < 0 || put_data(data, "ca.key", ca_key) < 0)
        return gs_error_set(err, -ENOMEM, "out of memory");
    json_object_del(obj, "stringData");
    int r = secret
                ? gs_k8s_update(k, &secrets, cfg->namespace, cfg->secret, NULL, obj, 0, NULL, err)
                : gs_k8s_create(k, &secrets, cfg->namespace, obj, 0, NULL, err);
    if (r < 0)
        return gs_error_prefix(err, "cannot %s the Secret %s/%s: ", secret ? "update" : "create",
                               cfg->namespace, cfg->secret),
               r;
    return 0;
}

/* Makes what the Secret lacks and writes it; *bundle = the new ca.crt. */
static int ensure_secret(struct gs_k8s_client *k, const struct wh_certgen_config *cfg,
                         struct wh_certgen_result *res, char **bundle, struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *secret = NULL;
    int r = gs_k8s_get(k, &secrets, cfg->namespace, cfg->secret, &secret, err);
    if (r < 0 && r != -ENOENT)
        return gs_error_prefix(err, "cannot read the Secret %s/%s: ", cfg->namespace, cfg->secret),
               r;
    if (secret) {
        const char *type = json_string_value(json_object_get(secret, "type"));
        if (type && strcmp(type, SECRET_TYPE) != 0)
            return gs_error_set(err, -EINVAL,
                                "the Secret %s/%s has type \"%.64s\", not " SECRET_TYPE
                                " (the type cannot be changed: delete the Secret)",
                                cfg->namespace, cfg->secret, type);
    }
    char svc[256], svc_local[280];
    snprintf(svc, sizeof(svc), "%s.%s.svc", cfg->service, cfg->namespace);
    snprintf(svc_local, sizeof(svc_local), "%s.cluster.local", svc);
    const char *const dns[] = {svc, svc_local};
    time_t renew_at = cfg->now + (time_t)cfg->renew_before_s;

    _cleanup_(state_fini) struct state st = {0};
    if (secret)
        load_state(secret, &st);
    char why_ca[160] = "", why_leaf[160] = "";
    bool ca_ok = secret && ca_usable(&st, renew_at, why_ca, sizeof(why_ca));
    if (ca_ok && leaf_usable(&st, dns, GS_ARRAY_SIZE(dns), renew_at, why_leaf, sizeof(why_leaf))) {
        size_t len;
        *bundle = secret_value(secret, "ca.crt", &len);
        res->action = WH_CERTGEN_KEPT;
        return *bundle ? 0 : gs_error_set(err, -ENOMEM, "out of memory");
    }

    _cleanup_(keyp) gnutls_x509_privkey_t ca_key = NULL;
    _cleanup_(crtp) gnutls_x509_crt_t ca_crt = NULL;
    _cleanup_free_ char *ca_pem = NULL;
    _cleanup_free_ char *ca_key_pem = NULL;
    if (ca_ok) {
        res->action = WH_CERTGEN_LEAF;
        snprintf(res->why, sizeof(res->why), "%s", why_leaf);
        size_t len;
        ca_pem = secret_value(secret, "ca.crt", &len);
        ca_key_pem = secret_value(secret, "ca.key", &len);
        if (!ca_pem || !ca_key_pem)
            return gs_error_set(err, -ENOMEM, "out of memory");
    } else {
        res->action = secret ? WH_CERTGEN_NEW_CA : WH_CERTGEN_CREATED;
        snprintf(res->why, sizeof(res->why), "%s", secret ? why_ca : "the Secret does not exist");
        char cn[64];
        snprintf(cn, sizeof(cn), "gpuslice-webhook-ca@%lld", (long long)cfg->now);
        struct cert_spec cs = {
            .cn = cn, .ca = true, .now = cfg->now, .validity_s = cfg->ca_validity_s};
        if ((r = new_key(&ca_key, err)) < 0 || (r = new_cert(&cs, ca_key, &ca_crt, err)) < 0)
            return r;
        _cleanup_free_ char *fresh = to_pem(ca_crt);
        ca_key_pem = key_pem(ca_key);
        if (!fresh || !ca_key_pem)
            /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): both _cleanup_ (layers.md Lint) */
            return gs_error_set(err, -ENOMEM, "cannot encode the CA");
        /* The previous CA stays in the bundle while it is valid: the webhook serves the old
         * leaf until it reloads the new files, and the API server must still trust it. */
        _cleanup_free_ char *old = NULL;
        if (st.ca.n && is_ca(st.ca.list[0]) &&
            gnutls_x509_crt_get_expiration_time(st.ca.list[0]) > cfg->now)
            old = to_pem(st.ca.list[0]);
        size_t n = strlen(fresh) + (old ? strlen(old) : 0) + 1;
        ca_pem = malloc(n);
        if (!ca_pem)
            /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): old _cleanup_ (layers.md Lint) */
            return gs_error_set(err, -ENOMEM, "out of memory");
        snprintf(ca_pem, n, "%s%s", fresh, old ? old : "");
    }
    /* The signing CA: the first of ca.crt with ca.key. */
    _cleanup_(certs_fini) struct certs cas = {0};
    _cleanup_(keyp) gnutls_x509_privkey_t signer_key = NULL;
    if (parse_certs(ca_pem, strlen(ca_pem), &cas) < 0 ||
        parse_key(ca_key_pem, strlen(ca_key_pem), &signer_key) < 0)
        return gs_error_set(err, -EINVAL, "cannot read back the CA");

    _cleanup_(keyp) gnutls_x509_privkey_t leaf_key = NULL;
    _cleanup_(crtp) gnutls_x509_crt_t leaf = NULL;
    struct cert_spec ls = {.cn = svc,
                           .dns = dns,
                           .n_dns = GS_ARRAY_SIZE(dns),
                           .now = cfg->now,
                           .validity_s = cfg->cert_validity_s,
                           .issuer = cas.list[0],
                           .issuer_key = signer_key};
    if ((r = new_key(&leaf_key, err)) < 0 || (r = new_cert(&ls, leaf_key, &leaf, err)) < 0)
        return r;
    _cleanup_free_ char *leaf_pem = to_pem(leaf);
    _cleanup_free_ char *leaf_key_pem = key_pem(leaf_key);
    if (!leaf_pem || !leaf_key_pem)
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): both _cleanup_ (layers.md Lint) */
        return gs_error_set(err, -ENOMEM, "cannot encode the serving certificate");
    if ((r = write_secret(k, cfg, secret, leaf_pem, leaf_key_pem, ca_pem, ca_key_pem, err)) < 0)
        return r;
    *bundle = TAKE_PTR(ca_pem);
    return 0;
}

/* ---- the caBundles ------------------------------------------------------------------------ */

static int patch_bundles(struct gs_k8s_client *k, const struct wh_certgen_config *cfg,
                         const char *bundle, struct wh_certgen_result *res, struct gs_error *err)
{
    _cleanup_(gs_json_decrefp) json_t *mwc = NULL;
    int r = gs_k8s_get(k, &webhook_configs, NULL, cfg->webhook_config, &mwc, err);
    if (r < 0)
        return gs_error_prefix(
                   err, "cannot read the MutatingWebhookConfiguration %s: ", cfg->webhook_config),
               r;
    json_t *hooks = json_object_get(mwc, "webhooks");
    if (!json_is_array(hooks) || json_array_size(hooks) == 0)
        return gs_error_set(err, -EINVAL, "the MutatingWebhookConfiguration %s has no webhooks",
                            cfg->webhook_config);
    _cleanup_free_ char *want = b64(bundle);
    _cleanup_(gs_json_decrefp) json_t *ops = json_array();
    if (!want || !ops)
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): want _cleanup_ (layers.md Lint) */
        return gs_error_set(err, -ENOMEM, "out of memory");
    res->webhooks = (unsigned)json_array_size(hooks);
    size_t i;
    json_t *hook;
    json_array_foreach(hooks, i, hook)
    {
        json_t *cc = json_object_get(hook, "clientConfig");
        const char *have = json_string_value(json_object_get(cc, "caBundle"));
        if (have && strcmp(have, want) == 0)
            continue;
        const char *name = json_string_value(json_object_get(hook, "name"));
        char path[96];
        /* test: the list did not change between our read and the patch (a webhook added or
         * reordered makes the patch fail instead of giving the bundle to the wrong one). */
        snprintf(path, sizeof(path), "/webhooks/%zu/name", i);
        if (name && json_array_append_new(ops, json_pack("{s:s,s:s,s:s}", "op", "test", "path",
                                                         path, "value", name)) < 0)
            return gs_error_set(err, -ENOMEM, "out of memory");
        /* add sets an existing member too (RFC 6902 4.1). */
        json_t *op;
        if (json_is_object(cc)) {
            snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
            op = json_pack("{s:s,s:s,s:s}", "op", "add", "path", path, "value", want);
        } else {
            snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig", i);
            op = json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path", path, "value", "caBundle",
                           want);
        }
        if (json_array_append_new(ops, op) < 0)
            return gs_error_set(err, -ENOMEM, "out of memory");
        res->patched++;
    }
    if (res->patched == 0)
        return 0;
    r = gs_k8s_patch(k, &webhook_configs, NULL, cfg->webhook_config, NULL, GS_K8S_PATCH_JSON, ops,
                     0, NULL, err);
    if (r < 0)
        return gs_error_prefix(err,
                               "cannot patch the caBundle of the MutatingWebhookConfiguration "
                               "%s: ",
                               cfg->webhook_config),
               r;
    return 0;
}

int wh_certgen_run(struct gs_k8s_client *k, const struct wh_certgen_config *c,
                   struct wh_certgen_result *res, struct gs_error *err)
{
    struct wh_certgen_config cfg = *c;
    *res = (struct wh_certgen_result){0};
    if (!cfg.now)
        cfg.now = time(NULL);
    if (cfg.renew_before_s >= cfg.cert_validity_s || cfg.renew_before_s >= cfg.ca_validity_s)
        return gs_error_set(err, -EINVAL,
                            "--certgen-renew-before (%llds) must be shorter than "
                            "--certgen-cert-validity (%llds) and --certgen-ca-validity (%llds)",
                            (long long)cfg.renew_before_s, (long long)cfg.cert_validity_s,
                            (long long)cfg.ca_validity_s);
    _cleanup_free_ char *bundle = NULL;
    int r = ensure_secret(k, &cfg, res, &bundle, err);
    if (r < 0)
        return r;
    return patch_bundles(k, &cfg, bundle, res, err);
}
