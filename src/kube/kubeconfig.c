/* SPDX-License-Identifier: Apache-2.0 */
/* kubeconfig files and in-cluster configuration: see kubeconfig.h. */
#include "kube/kubeconfig.h"

#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/macros.h"
#include "config/yaml.h"

/* ---- small helpers -------------------------------------------------------------------------- */

int gs_kube_read_token_file(const char *path, char **out, struct gs_error *err)
{
    char *buf = NULL;
    size_t len = 0, start = 0;
    int r = gs_read_file(path, GS_KUBE_TOKEN_MAX_BYTES, &buf, &len, err);

    if (r < 0)
        return gs_error_prefix(err, "token file "), r;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                       buf[len - 1] == '\t'))
        buf[--len] = '\0';
    while (start < len && (buf[start] == ' ' || buf[start] == '\t' || buf[start] == '\n'))
        start++;
    if (start == len) {
        free(buf);
        return gs_error_set(err, -EINVAL, "token file %s: empty", path);
    }
    if (strpbrk(buf + start, "\r\n")) {
        explicit_bzero(buf, len);
        free(buf);
        return gs_error_set(err, -EINVAL, "token file %s: token contains a line break", path);
    }
    if (start)
        memmove(buf, buf + start, len - start + 1);
    *out = buf;
    return 0;
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int gs_base64_decode(const char *in, size_t in_len, char **out, size_t *out_len)
{
    _cleanup_free_ char *buf = malloc(in_len / 4 * 3 + 4);
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    bool pad = false;

    if (!buf)
        return -ENOMEM;
    for (size_t i = 0; i < in_len; i++) {
        unsigned char c = (unsigned char)in[i];
        int v;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad = true;
            continue;
        }
        v = b64val(c);
        if (v < 0 || pad)
            /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): buf is _cleanup_ (layers.md Lint) */
            return -EINVAL;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (bits >= 6) /* a lone trailing character carries no full byte */
        return -EINVAL;
    buf[n] = '\0';
    *out_len = n;
    *out = TAKE_PTR(buf);
    return 0;
}

static json_t *parse_yaml(const char *text, size_t len, const char *name, struct gs_error *err)
{
    json_t *j = NULL;
    int r;

    if (len == 0 || strspn(text, " \t\r\n") == len) {
        gs_error_set(err, -EINVAL, "kubeconfig %s: empty document", name);
        return NULL;
    }
    r = gs_yaml_load_one(text, len, &j, err);
    if (r < 0) {
        gs_error_prefix(err, "kubeconfig %s: ", name);
        return NULL;
    }
    return j;
}

/* ---- kubeconfig ----------------------------------------------------------------------------- */

struct ctx {
    const char *name;     /* for messages */
    const char *base_dir; /* for relative paths */
    struct gs_error *err;
};

/* Optional string field: 0 and *out = NULL if absent, -EINVAL if not a string. */
static int get_str(struct ctx *x, json_t *obj, const char *where, const char *key, const char **out)
{
    json_t *v = json_object_get(obj, key);

    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return gs_error_set(x->err, -EINVAL, "kubeconfig %s: %s.%s: expected a string", x->name,
                            where, key);
    *out = json_string_value(v);
    return 0;
}

static int get_bool(struct ctx *x, json_t *obj, const char *where, const char *key, bool *out)
{
    json_t *v = json_object_get(obj, key);
    const char *s;
    int r;

    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    r = get_str(x, obj, where, key, &s);
    if (r < 0)
        return r;
    if (!s)
        return 0;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        *out = true;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        *out = false;
    else
        return gs_error_set(x->err, -EINVAL, "kubeconfig %s: %s.%s: \"%s\" is not true or false",
                            x->name, where, key, s);
    return 0;
}

/* Find the entry `name` in a named list ("clusters", "contexts", "users"); returns the inner object
 * (entry[inner]) or NULL with err set. */
static json_t *find_named(struct ctx *x, json_t *root, const char *list, const char *inner,
                          const char *what, const char *name)
{
    json_t *arr = json_object_get(root, list), *e;
    size_t i;

    if (arr && !json_is_array(arr)) {
        gs_error_set(x->err, -EINVAL, "kubeconfig %s: %s: expected a list", x->name, list);
        return NULL;
    }
    json_array_foreach(arr, i, e)
    {
        json_t *n = json_object_get(e, "name");
        if (json_is_string(n) && strcmp(json_string_value(n), name) == 0) {
            json_t *v = json_object_get(e, inner);
            if (!json_is_object(v)) {
                gs_error_set(x->err, -EINVAL, "kubeconfig %s: %s \"%s\" has no %s", x->name, what,
                             name, inner);
                return NULL;
            }
            return v;
        }
    }
    gs_error_set(x->err, -ENOENT, "kubeconfig %s: %s \"%s\" not found", x->name, what, name);
    return NULL;
}

static int set_path(struct ctx *x, const char *field, const char *value, char **out)
{
    if (!value || !*value)
        return 0;
    if (value[0] == '/' || !x->base_dir) {
        *out = strdup(value);
    } else {
        size_t n = strlen(x->base_dir) + strlen(value) + 2;
        *out = malloc(n);
        if (*out)
            snprintf(*out, n, "%s/%s", x->base_dir, value);
    }
    if (!*out)
        return gs_error_set(x->err, -ENOMEM, "kubeconfig %s: out of memory", x->name);
    if (access(*out, R_OK) < 0)
        return gs_error_set(x->err, -errno, "kubeconfig %s: %s: cannot read %s: %s", x->name, field,
                            *out, gs_strerror(errno));
    return 0;
}

static int set_data(struct ctx *x, const char *field, const char *value, char **out,
                    size_t *out_len)
{
    int r;

    if (!value || !*value)
        return 0;
    r = gs_base64_decode(value, strlen(value), out, out_len);
    if (r == -ENOMEM)
        return gs_error_set(x->err, r, "kubeconfig %s: out of memory", x->name);
    if (r < 0)
        return gs_error_set(x->err, r, "kubeconfig %s: %s: not valid base64 (\"%.24s%s\")", x->name,
                            field, value, strlen(value) > 24 ? "..." : "");
    return 0;
}

int gs_kube_config_parse(const char *text, size_t len, const char *base_dir, const char *name,
                         const char *context, struct gs_kube_config *out, struct gs_error *err)
{
    struct ctx x = {.name = name ? name : "(inline)", .base_dir = base_dir, .err = err};
    struct gs_kube_config cfg = {0};
    json_auto_t *root = NULL;
    const char *cur, *cluster_name, *user_name, *ns, *server, *s;
    json_t *ctxo, *cluster, *user = NULL;
    char where[300];
    int r;

    memset(out, 0, sizeof(*out));
    root = parse_yaml(text, len, x.name, err);
    if (!root)
        return err && err->code ? err->code : -EINVAL;
    if (!json_is_object(root))
        return gs_error_set(err, -EINVAL, "kubeconfig %s: not a mapping", x.name);

    if (context && *context) {
        cur = context;
    } else {
        r = get_str(&x, root, "(root)", "current-context", &cur);
        if (r < 0)
            return r;
        if (!cur || !*cur)
            return gs_error_set(err, -EINVAL, "kubeconfig %s: current-context is not set", x.name);
    }
    ctxo = find_named(&x, root, "contexts", "context", "context", cur);
    if (!ctxo)
        return err ? err->code : -EINVAL;
    snprintf(where, sizeof(where), "contexts[%s].context", cur);
    if ((r = get_str(&x, ctxo, where, "cluster", &cluster_name)) < 0 ||
        (r = get_str(&x, ctxo, where, "user", &user_name)) < 0 ||
        (r = get_str(&x, ctxo, where, "namespace", &ns)) < 0)
        return r;
    if (!cluster_name || !*cluster_name)
        return gs_error_set(err, -EINVAL, "kubeconfig %s: context \"%s\" names no cluster", x.name,
                            cur);
    cluster = find_named(&x, root, "clusters", "cluster", "cluster", cluster_name);
    if (!cluster)
        return err ? err->code : -EINVAL;
    if (user_name && *user_name) {
        user = find_named(&x, root, "users", "user", "user", user_name);
        if (!user)
            return err ? err->code : -EINVAL;
    }

    snprintf(where, sizeof(where), "clusters[%s].cluster", cluster_name);
    if ((r = get_str(&x, cluster, where, "server", &server)) < 0)
        return r;
    if (!server || !*server)
        return gs_error_set(err, -EINVAL, "kubeconfig %s: cluster \"%s\" has no server", x.name,
                            cluster_name);
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return gs_error_set(err, -EINVAL,
                            "kubeconfig %s: cluster \"%s\": server \"%s\" is not an http:// or "
                            "https:// URL",
                            x.name, cluster_name, server);
    cfg.server = strdup(server);
    if (!cfg.server)
        goto nomem;
    for (size_t n = strlen(cfg.server); n > 0 && cfg.server[n - 1] == '/'; n--)
        cfg.server[n - 1] = '\0';
    if ((r = get_bool(&x, cluster, where, "insecure-skip-tls-verify",
                      &cfg.insecure_skip_tls_verify)) < 0)
        goto fail;
    if ((r = get_str(&x, cluster, where, "certificate-authority-data", &s)) < 0 ||
        (r = set_data(&x, "certificate-authority-data", s, &cfg.ca_data, &cfg.ca_data_len)) < 0)
        goto fail;
    if (!cfg.ca_data) {
        if ((r = get_str(&x, cluster, where, "certificate-authority", &s)) < 0 ||
            (r = set_path(&x, "certificate-authority", s, &cfg.ca_file)) < 0)
            goto fail;
    }

    if (user) {
        snprintf(where, sizeof(where), "users[%s].user", user_name);
        if ((r = get_str(&x, user, where, "token", &s)) < 0)
            goto fail;
        if (s && *s) {
            if (strpbrk(s, "\r\n")) {
                r = gs_error_set(err, -EINVAL, "kubeconfig %s: %s.token contains a line break",
                                 x.name, where);
                goto fail;
            }
            cfg.token = strdup(s);
            if (!cfg.token)
                goto nomem;
        }
        if ((r = get_str(&x, user, where, "tokenFile", &s)) < 0 ||
            (r = set_path(&x, "tokenFile", s, &cfg.token_file)) < 0)
            goto fail;
        if ((r = get_str(&x, user, where, "client-certificate-data", &s)) < 0 ||
            (r = set_data(&x, "client-certificate-data", s, &cfg.client_cert_data,
                          &cfg.client_cert_data_len)) < 0)
            goto fail;
        if (!cfg.client_cert_data &&
            ((r = get_str(&x, user, where, "client-certificate", &s)) < 0 ||
             (r = set_path(&x, "client-certificate", s, &cfg.client_cert_file)) < 0))
            goto fail;
        if ((r = get_str(&x, user, where, "client-key-data", &s)) < 0 ||
            (r = set_data(&x, "client-key-data", s, &cfg.client_key_data,
                          &cfg.client_key_data_len)) < 0)
            goto fail;
        if (!cfg.client_key_data && ((r = get_str(&x, user, where, "client-key", &s)) < 0 ||
                                     (r = set_path(&x, "client-key", s, &cfg.client_key_file)) < 0))
            goto fail;
        if ((cfg.client_cert_data || cfg.client_cert_file) !=
            (cfg.client_key_data || cfg.client_key_file)) {
            r = gs_error_set(err, -EINVAL,
                             "kubeconfig %s: user \"%s\": a client certificate needs a client key "
                             "and the other way round",
                             x.name, user_name);
            goto fail;
        }
        bool has_auth = cfg.token || cfg.token_file || cfg.client_cert_data || cfg.client_cert_file;
        if (!has_auth) {
            const char *unsupported = json_object_get(user, "exec")            ? "exec"
                                      : json_object_get(user, "auth-provider") ? "auth-provider"
                                      : json_object_get(user, "username")      ? "username"
                                                                               : NULL;
            if (unsupported) {
                r = gs_error_set(err, -ENOTSUP,
                                 "kubeconfig %s: user \"%s\": \"%s\" authentication is not "
                                 "supported (use a token, tokenFile or client certificate)",
                                 x.name, user_name, unsupported);
                goto fail;
            }
        }
    }
    cfg.namespace = strdup(ns && *ns ? ns : "default");
    cfg.source = strdup(x.name);
    if (!cfg.namespace || !cfg.source)
        goto nomem;
    *out = cfg;
    return 0;
nomem:
    r = gs_error_set(err, -ENOMEM, "kubeconfig %s: out of memory", x.name);
fail:
    gs_kube_config_fini(&cfg);
    return r;
}

int gs_kube_config_load_file(const char *path, const char *context, struct gs_kube_config *out,
                             struct gs_error *err)
{
    _cleanup_free_ char *text = NULL, *dir = NULL;
    size_t len = 0;
    int r;

    memset(out, 0, sizeof(*out));
    r = gs_read_file(path, GS_KUBECONFIG_MAX_BYTES, &text, &len, err);
    if (r < 0)
        return gs_error_prefix(err, "kubeconfig "), r;
    dir = strdup(path);
    if (!dir)
        return gs_error_set(err, -ENOMEM, "kubeconfig %s: out of memory", path);
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): dir is _cleanup_ (layers.md Lint) */
    return gs_kube_config_parse(text, len, dirname(dir), path, context, out, err);
}

static bool valid_port(const char *p)
{
    char *end;
    long v;

    if (!p || !*p)
        return false;
    errno = 0;
    v = strtol(p, &end, 10);
    return !errno && !*end && v > 0 && v < 65536;
}

int gs_kube_config_load_incluster(const char *sa_dir, struct gs_kube_config *out,
                                  struct gs_error *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct gs_kube_config cfg = {0};
    char path[4096];
    size_t n;
    int r;

    memset(out, 0, sizeof(*out));
    if (!sa_dir || !*sa_dir)
        sa_dir = getenv("GPUSLICE_SERVICEACCOUNT_DIR");
    if (!sa_dir || !*sa_dir)
        sa_dir = GS_KUBE_SERVICEACCOUNT_DIR;
    if (strlen(sa_dir) > sizeof(path) - 16)
        return gs_error_set(err, -ENAMETOOLONG, "in-cluster config: directory name too long");
    if (!host || !*host || !port || !*port)
        return gs_error_set(err, -ENOENT,
                            "in-cluster config: KUBERNETES_SERVICE_HOST and "
                            "KUBERNETES_SERVICE_PORT must be set (not running in a pod? use "
                            "--kubeconfig)");
    if (!valid_port(port))
        return gs_error_set(err, -EINVAL,
                            "in-cluster config: KUBERNETES_SERVICE_PORT \"%s\" is "
                            "not a port number",
                            port);
    if (strpbrk(host, "/?#@ \t\r\n[]"))
        return gs_error_set(err, -EINVAL,
                            "in-cluster config: KUBERNETES_SERVICE_HOST \"%s\" is "
                            "not a host name or address",
                            host);
    n = strlen(host) + strlen(port) + 16;
    cfg.server = malloc(n);
    if (!cfg.server)
        goto nomem;
    if (strchr(host, ':')) /* IPv6 literal */
        snprintf(cfg.server, n, "https://[%s]:%s", host, port);
    else
        snprintf(cfg.server, n, "https://%s:%s", host, port);

    snprintf(path, sizeof(path), "%s/token", sa_dir);
    if (access(path, R_OK) < 0) {
        r = gs_error_set(err, -errno, "in-cluster config: cannot read token %s: %s", path,
                         gs_strerror(errno));
        goto fail;
    }
    cfg.token_file = strdup(path);
    snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
    if (access(path, R_OK) < 0) {
        r = gs_error_set(err, -errno, "in-cluster config: cannot read CA %s: %s", path,
                         gs_strerror(errno));
        goto fail;
    }
    cfg.ca_file = strdup(path);
    snprintf(path, sizeof(path), "%s/namespace", sa_dir);
    {
        char *ns = NULL;
        size_t len = 0;
        if (gs_read_file(path, 253 + 1, &ns, &len, NULL) == 0) {
            while (len > 0 && (ns[len - 1] == '\n' || ns[len - 1] == ' ' || ns[len - 1] == '\r'))
                ns[--len] = '\0';
            if (len > 0)
                cfg.namespace = ns;
            else
                free(ns);
        }
    }
    if (!cfg.namespace)
        cfg.namespace = strdup("default");
    cfg.source = strdup("in-cluster");
    if (!cfg.token_file || !cfg.ca_file || !cfg.namespace || !cfg.source)
        goto nomem;
    *out = cfg;
    return 0;
nomem:
    r = gs_error_set(err, -ENOMEM, "in-cluster config: out of memory");
fail:
    gs_kube_config_fini(&cfg);
    return r;
}

int gs_kube_config_load(const char *path, struct gs_kube_config *out, struct gs_error *err)
{
    const char *env = getenv("KUBECONFIG");

    if (path && *path)
        return gs_kube_config_load_file(path, NULL, out, err);
    if (env && *env) {
        _cleanup_free_ char *first = strdup(env);
        char *colon;
        if (!first)
            return gs_error_set(err, -ENOMEM, "kubeconfig: out of memory");
        colon = strchr(first, ':');
        if (colon)
            *colon = '\0';
        if (*first)
            return gs_kube_config_load_file(first, NULL, out, err);
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): first is _cleanup_ (layers.md Lint) */
    return gs_kube_config_load_incluster(NULL, out, err);
}

static void free_secret(char *p, size_t len)
{
    if (!p)
        return;
    explicit_bzero(p, len);
    free(p);
}

void gs_kube_config_fini(struct gs_kube_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_file);
    free(cfg->ca_data);
    free_secret(cfg->token, cfg->token ? strlen(cfg->token) : 0);
    free(cfg->token_file);
    free(cfg->client_cert_file);
    free(cfg->client_cert_data);
    free(cfg->client_key_file);
    free_secret(cfg->client_key_data, cfg->client_key_data_len);
    free(cfg->namespace);
    free(cfg->source);
    memset(cfg, 0, sizeof(*cfg));
}

static int copy_str(char **dst, const char *src)
{
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -ENOMEM;
}

static int copy_mem(char **dst, const char *src, size_t len)
{
    if (!src)
        return 0;
    *dst = malloc(len + 1);
    if (!*dst)
        return -ENOMEM;
    memcpy(*dst, src, len);
    (*dst)[len] = '\0';
    return 0;
}

int gs_kube_config_copy(struct gs_kube_config *dst, const struct gs_kube_config *src)
{
    int r = 0;

    memset(dst, 0, sizeof(*dst));
    dst->insecure_skip_tls_verify = src->insecure_skip_tls_verify;
    dst->ca_data_len = src->ca_data_len;
    dst->client_cert_data_len = src->client_cert_data_len;
    dst->client_key_data_len = src->client_key_data_len;
    r |= copy_str(&dst->server, src->server);
    r |= copy_str(&dst->ca_file, src->ca_file);
    r |= copy_mem(&dst->ca_data, src->ca_data, src->ca_data_len);
    r |= copy_str(&dst->token, src->token);
    r |= copy_str(&dst->token_file, src->token_file);
    r |= copy_str(&dst->client_cert_file, src->client_cert_file);
    r |= copy_mem(&dst->client_cert_data, src->client_cert_data, src->client_cert_data_len);
    r |= copy_str(&dst->client_key_file, src->client_key_file);
    r |= copy_mem(&dst->client_key_data, src->client_key_data, src->client_key_data_len);
    r |= copy_str(&dst->namespace, src->namespace);
    r |= copy_str(&dst->source, src->source);
    if (r) {
        gs_kube_config_fini(dst);
        return -ENOMEM;
    }
    return 0;
}
