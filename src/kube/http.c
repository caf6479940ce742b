/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP client on libcurl: see http.h and docs/internals/k8s-client.md. */
#include "kube/http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/clock.h"
#include "base/macros.h"

#define POOL_MAX           8
#define DEFAULT_USER_AGENT "gpuslice/0.1"

struct gs_http_cancel {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    atomic_bool triggered;
    CURLM *active; /* the multi handle of the request in flight, under mu */
};

struct handle {
    CURL *easy;
    CURLM *multi;
};

struct gs_http_client {
    char *ca_file;
    char *ca_pem;
    size_t ca_pem_len;
    bool insecure;
    char *cert_file;
    char *cert_pem;
    size_t cert_pem_len;
    char *key_file;
    char *key_pem;
    size_t key_pem_len;
    char *bearer_token;
    char *unix_socket;
    char *user_agent;
    long connect_timeout_ms;
    long timeout_ms;
    size_t max_response;

    pthread_mutex_t mu; /* guards the pool */
    struct handle pool[POOL_MAX];
    size_t n_pool;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_ALL);
}

/* ---- cancellation -------------------------------------------------------------------------- */

struct gs_http_cancel *gs_http_cancel_new(void)
{
    struct gs_http_cancel *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    gs_cond_init_monotonic(&c->cond);
    atomic_init(&c->triggered, false);
    return c;
}

void gs_http_cancel_free(struct gs_http_cancel *c)
{
    if (!c)
        return;
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void gs_http_cancel_trigger(struct gs_http_cancel *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->triggered, true);
    if (c->active)
        curl_multi_wakeup(c->active);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

void gs_http_cancel_reset(struct gs_http_cancel *c)
{
    if (c)
        atomic_store(&c->triggered, false);
}

bool gs_http_cancel_is_triggered(const struct gs_http_cancel *c)
{
    return c && atomic_load(&((struct gs_http_cancel *)c)->triggered);
}

int gs_http_cancel_sleep(struct gs_http_cancel *c, uint64_t ms)
{
    struct timespec deadline;
    int rc = 0;

    if (!c) {
        struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                              .tv_nsec = (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        return 0;
    }
    deadline = gs_timespec_in_ns(gs_sat_mul_u64(ms, GS_NSEC_PER_MSEC));
    pthread_mutex_lock(&c->mu);
    while (!atomic_load(&c->triggered)) {
        if (pthread_cond_timedwait(&c->cond, &c->mu, &deadline) == ETIMEDOUT)
            break;
    }
    if (atomic_load(&c->triggered))
        rc = -ECANCELED;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- client --------------------------------------------------------------------------------- */

static int dup_opt(char **dst, const char *src)
{
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -ENOMEM;
}

static int dup_blob(char **dst, size_t *dst_len, const char *src, size_t len)
{
    if (!src)
        return 0;
    if (len == 0)
        len = strlen(src);
    *dst = malloc(len + 1);
    if (!*dst)
        return -ENOMEM;
    memcpy(*dst, src, len);
    (*dst)[len] = '\0';
    *dst_len = len;
    return 0;
}

static bool has_crlf(const char *s)
{
    return s && strpbrk(s, "\r\n") != NULL;
}

struct gs_http_client *gs_http_client_new(const struct gs_http_config *cfg, struct gs_error *err)
{
    static const struct gs_http_config zero;
    struct gs_http_client *c;
    int r = 0;

    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK) {
        gs_error_set(err, -EIO, "http: curl_global_init failed: %s", curl_easy_strerror(global_rc));
        return NULL;
    }
    if (!cfg)
        cfg = &zero;
    if (has_crlf(cfg->bearer_token)) {
        gs_error_set(err, -EINVAL, "http: bearer token contains a line break");
        return NULL;
    }
    if (has_crlf(cfg->user_agent)) {
        gs_error_set(err, -EINVAL, "http: user agent contains a line break");
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        gs_error_set(err, -ENOMEM, "http: out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    r |= dup_opt(&c->ca_file, cfg->ca_file);
    r |= dup_blob(&c->ca_pem, &c->ca_pem_len, cfg->ca_pem, cfg->ca_pem_len);
    r |= dup_opt(&c->cert_file, cfg->cert_file);
    r |= dup_blob(&c->cert_pem, &c->cert_pem_len, cfg->cert_pem, cfg->cert_pem_len);
    r |= dup_opt(&c->key_file, cfg->key_file);
    r |= dup_blob(&c->key_pem, &c->key_pem_len, cfg->key_pem, cfg->key_pem_len);
    r |= dup_opt(&c->bearer_token, cfg->bearer_token);
    r |= dup_opt(&c->unix_socket, cfg->unix_socket);
    r |= dup_opt(&c->user_agent, cfg->user_agent ? cfg->user_agent : DEFAULT_USER_AGENT);
    if (r) {
        gs_http_client_free(c);
        gs_error_set(err, -ENOMEM, "http: out of memory");
        return NULL;
    }
    c->insecure = cfg->insecure_skip_tls_verify;
    c->connect_timeout_ms =
        cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : GS_HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
    c->timeout_ms = cfg->timeout_ms == 0 ? GS_HTTP_DEFAULT_TIMEOUT_MS : cfg->timeout_ms;
    c->max_response =
        cfg->max_response_bytes ? cfg->max_response_bytes : GS_HTTP_DEFAULT_MAX_RESPONSE;
    return c;
}

static void secure_free(char *p, size_t len)
{
    if (!p)
        return;
    explicit_bzero(p, len);
    free(p);
}

void gs_http_client_free(struct gs_http_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_pool; i++) {
        curl_multi_cleanup(c->pool[i].multi);
        curl_easy_cleanup(c->pool[i].easy);
    }
    free(c->ca_file);
    free(c->ca_pem);
    free(c->cert_file);
    free(c->cert_pem);
    free(c->key_file);
    secure_free(c->key_pem, c->key_pem_len);
    secure_free(c->bearer_token, c->bearer_token ? strlen(c->bearer_token) : 0);
    free(c->unix_socket);
    free(c->user_agent);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int handle_get(struct gs_http_client *c, struct handle *h)
{
    pthread_mutex_lock(&c->mu);
    if (c->n_pool > 0) {
        *h = c->pool[--c->n_pool];
        pthread_mutex_unlock(&c->mu);
        curl_easy_reset(h->easy);
        return 0;
    }
    pthread_mutex_unlock(&c->mu);
    h->easy = curl_easy_init();
    h->multi = curl_multi_init();
    if (!h->easy || !h->multi) {
        curl_easy_cleanup(h->easy);
        curl_multi_cleanup(h->multi);
        return -ENOMEM;
    }
    return 0;
}

static void handle_put(struct gs_http_client *c, struct handle *h)
{
    pthread_mutex_lock(&c->mu);
    if (c->n_pool < POOL_MAX) {
        c->pool[c->n_pool++] = *h;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    pthread_mutex_unlock(&c->mu);
    curl_multi_cleanup(h->multi);
    curl_easy_cleanup(h->easy);
}

/* ---- one transfer --------------------------------------------------------------------------- */

struct xfer {
    CURL *easy;
    char *buf;
    size_t len, cap, max;
    bool too_big;
    gs_http_data_fn on_data;
    void *user;
    int cb_rc;
    struct gs_http_response *resp;
};

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct xfer *x = userdata;
    size_t n = size * nmemb; /* curl guarantees size == 1 */

    if (x->on_data) {
        long status = 0;
        int r;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        r = x->on_data(x->user, status, ptr, n);
        if (r < 0) {
            x->cb_rc = r;
            return 0;
        }
        return n;
    }
    if (n > x->max || x->len > x->max - n) {
        x->too_big = true;
        return 0;
    }
    if (x->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        char *nb;
        while (cap < x->len + n + 1)
            cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        nb = realloc(x->buf, cap);
        if (!nb) {
            x->cb_rc = -ENOMEM;
            return 0;
        }
        x->buf = nb;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, ptr, n);
    x->len += n;
    x->buf[x->len] = '\0';
    return n;
}

static int64_t parse_retry_after(const char *v)
{
    char *end;
    long long secs;

    while (*v == ' ' || *v == '\t')
        v++;
    if (*v >= '0' && *v <= '9') {
        errno = 0;
        secs = strtoll(v, &end, 10);
        if (errno || secs < 0)
            return -1;
        while (*end == ' ' || *end == '\t')
            end++;
        if (*end)
            return -1;
        return secs > INT64_MAX / 1000 ? INT64_MAX : (int64_t)secs * 1000;
    }
    time_t t = curl_getdate(v, NULL);
    if (t < 0)
        return -1;
    time_t now = time(NULL);
    return t > now ? (int64_t)(t - now) * 1000 : 0;
}

static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct xfer *x = userdata;
    size_t n = size * nmemb;
    char line[512];
    size_t l = GS_MIN(n, sizeof(line) - 1);
    char *colon;

    memcpy(line, ptr, l);
    line[l] = '\0';
    while (l > 0 && (line[l - 1] == '\r' || line[l - 1] == '\n'))
        line[--l] = '\0';
    if (strncmp(line, "HTTP/", 5) == 0) { /* a new response (after 100 Continue): start over */
        x->resp->retry_after_ms = -1;
        x->resp->content_type[0] = '\0';
        return n;
    }
    colon = strchr(line, ':');
    if (!colon)
        return n;
    *colon = '\0';
    if (strcasecmp(line, "Retry-After") == 0) {
        x->resp->retry_after_ms = parse_retry_after(colon + 1);
    } else if (strcasecmp(line, "Content-Type") == 0) {
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        snprintf(x->resp->content_type, sizeof(x->resp->content_type), "%s", v);
    }
    return n;
}

static int map_curl_error(CURLcode cc)
{
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return -ECONNREFUSED;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED:
        return -EPROTO;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        return -ECONNRESET;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return -EINVAL;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    default:
        return -EIO;
    }
}

static void blob_opt(CURL *e, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob b = {.data = (void *)data, .len = len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &b);
}

static int setup(struct gs_http_client *c, CURL *e, const struct gs_http_request *req,
                 struct curl_slist **hdrs, char *errbuf, struct xfer *x, struct gs_error *err)
{
    const char *method = req->method ? req->method : "GET";
    const char *token = req->bearer_token ? req->bearer_token : c->bearer_token;
    long timeout = req->timeout_ms ? req->timeout_ms : c->timeout_ms;
    struct curl_slist *l = NULL, *t;

    if (has_crlf(token))
        return gs_error_set(err, -EINVAL, "http: bearer token contains a line break");
    if (has_crlf(method) || strpbrk(method, " \t"))
        return gs_error_set(err, -EINVAL, "http: bad method \"%s\"", method);

    curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout > 0 ? timeout : 0L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (c->unix_socket)
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);

    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    if (req->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
        strcmp(method, "PATCH") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
    }

    /* TLS */
    if (c->ca_pem) {
        blob_opt(e, CURLOPT_CAINFO_BLOB, c->ca_pem, c->ca_pem_len);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
    } else if (c->ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
    }
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (c->cert_pem) {
        blob_opt(e, CURLOPT_SSLCERT_BLOB, c->cert_pem, c->cert_pem_len);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (c->cert_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (c->key_pem) {
        blob_opt(e, CURLOPT_SSLKEY_BLOB, c->key_pem, c->key_pem_len);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (c->key_file) {
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }

    /* headers */
    t = curl_slist_append(l, "Expect:");
    if (!t)
        goto nomem;
    l = t;
    if (token && *token) {
        size_t n = strlen(token) + 32;
        char *h = malloc(n);
        if (!h)
            goto nomem;
        snprintf(h, n, "Authorization: Bearer %s", token);
        t = curl_slist_append(l, h);
        explicit_bzero(h, n);
        free(h);
        if (!t)
            goto nomem;
        l = t;
    }
    for (const char *const *p = req->headers; p && *p; p++) {
        if (has_crlf(*p)) {
            curl_slist_free_all(l);
            return gs_error_set(err, -EINVAL, "http: header \"%.40s\" contains a line break", *p);
        }
        t = curl_slist_append(l, *p);
        if (!t)
            goto nomem;
        l = t;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, l);
    *hdrs = l;
    return 0;
nomem:
    curl_slist_free_all(l);
    return gs_error_set(err, -ENOMEM, "http: out of memory");
}

/* Run the transfer on the handle's multi so that a cancel token can wake it. */
static int perform(struct handle *h, struct gs_http_cancel *cancel, CURLcode *out)
{
    int running = 1, rc = 0;
    CURLMsg *msg;
    int left;

    if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK)
        return -ENOMEM;
    if (cancel) {
        pthread_mutex_lock(&cancel->mu);
        cancel->active = h->multi;
        pthread_mutex_unlock(&cancel->mu);
    }
    *out = CURLE_OK;
    for (;;) {
        if (cancel && atomic_load(&cancel->triggered)) {
            rc = -ECANCELED;
            break;
        }
        if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
            rc = -EIO;
            break;
        }
        if (!running)
            break;
        if (curl_multi_poll(h->multi, NULL, 0, 1000, NULL) != CURLM_OK) {
            rc = -EIO;
            break;
        }
    }
    while ((msg = curl_multi_info_read(h->multi, &left)))
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == h->easy)
            *out = msg->data.result;
    if (cancel) {
        pthread_mutex_lock(&cancel->mu);
        cancel->active = NULL;
        pthread_mutex_unlock(&cancel->mu);
    }
    curl_multi_remove_handle(h->multi, h->easy);
    return rc;
}

int gs_http_do(struct gs_http_client *c, const struct gs_http_request *req,
               struct gs_http_response *resp, struct gs_error *err)
{
    const char *method;
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    struct xfer x = {0};
    struct handle h = {0};
    CURLcode cc;
    int r;

    if (!c || !req || !req->url || !resp)
        return gs_error_set(err, -EINVAL, "http: missing client, request, URL or response");
    method = req->method ? req->method : "GET";
    memset(resp, 0, sizeof(*resp));
    resp->retry_after_ms = -1;
    if (strncmp(req->url, "http://", 7) != 0 && strncmp(req->url, "https://", 8) != 0)
        return gs_error_set(err, -EINVAL, "http: URL \"%.200s\" is not http:// or https://",
                            req->url);
    if (handle_get(c, &h) < 0)
        return gs_error_set(err, -ENOMEM, "http: out of memory");

    x.max = req->max_response_bytes ? req->max_response_bytes : c->max_response;
    x.easy = h.easy;
    x.on_data = req->on_data;
    x.user = req->user;
    x.resp = resp;
    r = setup(c, h.easy, req, &hdrs, errbuf, &x, err);
    if (r < 0)
        goto out;

    r = perform(&h, req->cancel, &cc);
    if (r == -ECANCELED) {
        gs_error_set(err, r, "%s %.200s: cancelled", method, req->url);
        goto out;
    }
    if (r < 0) {
        gs_error_set(err, r, "%s %.200s: curl multi interface failed", method, req->url);
        goto out;
    }
    curl_easy_getinfo(h.easy, CURLINFO_RESPONSE_CODE, &resp->status);
    if (cc != CURLE_OK) {
        if (x.too_big) {
            r = gs_error_set(err, -E2BIG, "%s %.200s: response too big (more than %zu bytes)",
                             method, req->url, x.max);
        } else if (x.cb_rc < 0) {
            r = x.cb_rc;
            if (!err || err->code == 0)
                gs_error_set(err, r, "%s %.200s: %s", method, req->url, gs_strerror(r));
        } else {
            r = map_curl_error(cc);
            gs_error_set(err, r, "%s %.200s: %s", method, req->url,
                         errbuf[0] ? errbuf : curl_easy_strerror(cc));
        }
        goto out;
    }
    if (!x.on_data) {
        if (!x.buf) {
            x.buf = calloc(1, 1);
            if (!x.buf) {
                r = gs_error_set(err, -ENOMEM, "http: out of memory");
                goto out;
            }
        }
        resp->body = TAKE_PTR(x.buf);
        resp->body_len = x.len;
    }
    r = 0;
out:
    free(x.buf);
    /* The handle keeps a pointer to the list; drop it before freeing. */
    curl_easy_setopt(h.easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    handle_put(c, &h);
    if (r < 0) {
        free(resp->body);
        resp->body = NULL;
        resp->body_len = 0;
    }
    return r;
}

void gs_http_response_fini(struct gs_http_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}

char *gs_http_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s), j = 0;
    char *out;

    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    out = malloc(n * 3 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            out[j++] = (char)ch;
        } else {
            out[j++] = '%';
            out[j++] = hex[ch >> 4];
            out[j++] = hex[ch & 15];
        }
    }
    out[j] = '\0';
    return out;
}
