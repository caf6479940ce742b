/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes API client: see k8s.h and docs/internals/k8s-client.md. */
#include "kube/k8s.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "kube/http.h"
#include "base/log.h"
#include "base/macros.h"

#define DEFAULT_QPS           50.0
#define DEFAULT_BURST         100u
#define DEFAULT_ATTEMPTS      5u
#define DEFAULT_BACKOFF_BASE  200u
#define DEFAULT_BACKOFF_MAX   10000u
#define DEFAULT_RETRY_AFTER   60000u
#define DEFAULT_TIMEOUT_MS    30000L
#define DEFAULT_CONNECT_MS    5000L
#define DEFAULT_MAX_RESPONSE  (16u * 1024u * 1024u)
#define DEFAULT_MAX_EVENT     (4u * 1024u * 1024u)
#define DEFAULT_WATCH_TIMEOUT 300u
#define PATH_MAX_LEN          2048
#define ERROR_BODY_MAX        (64u * 1024u)

const struct gs_k8s_resource gs_k8s_resourceslices = {"resource.k8s.io", "v1", "resourceslices",
                                                      false};
const struct gs_k8s_resource gs_k8s_resourceclaims = {"resource.k8s.io", "v1", "resourceclaims",
                                                      true};
const struct gs_k8s_resource gs_k8s_resourceclaimtemplates = {"resource.k8s.io", "v1",
                                                              "resourceclaimtemplates", true};
const struct gs_k8s_resource gs_k8s_deviceclasses = {"resource.k8s.io", "v1", "deviceclasses",
                                                     false};
const struct gs_k8s_resource gs_k8s_pods = {"", "v1", "pods", true};
const struct gs_k8s_resource gs_k8s_nodes = {"", "v1", "nodes", false};

struct gs_k8s_client {
    struct gs_http_client *http;
    char *server;
    char *namespace;
    struct gs_k8s_options o;
    int64_t qps_milli; /* tokens per 1000 s; <0 = unlimited */

    pthread_mutex_t mu; /* guards everything below */
    char *token;        /* current bearer token (static or from token_file) */
    char *token_file;
    struct timespec token_mtime;
    ino_t token_ino;
    off_t token_size;
    bool token_loaded;
    int64_t bucket_micro; /* rate-limit tokens * 10^6 */
    uint64_t bucket_last_ms;
    uint64_t rng;
    struct gs_k8s_stats stats;
};

struct gs_k8s_watch {
    struct gs_k8s_client *c;
    char *base_path; /* without query */
    char *label_selector;
    char *field_selector;
    unsigned timeout_s;
    bool bookmarks;
    struct gs_http_cancel *cancel;
    pthread_mutex_t mu; /* guards rv */
    char rv[128];
};

/* ---- clock, sleep, random ------------------------------------------------------------------- */

static uint64_t now_ms(const struct gs_k8s_client *c)
{
    struct timespec ts;

    if (c->o.now_ms)
        return c->o.now_ms(c->o.clock_user);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The only place the client waits. Returns -ECANCELED if `cancel` fired. */
static int wait_ms(const struct gs_k8s_client *c, uint64_t ms, struct gs_http_cancel *cancel)
{
    if (ms == 0)
        return gs_http_cancel_is_triggered(cancel) ? -ECANCELED : 0;
    if (c->o.sleep_ms) {
        c->o.sleep_ms(c->o.clock_user, ms);
        return gs_http_cancel_is_triggered(cancel) ? -ECANCELED : 0;
    }
    return gs_http_cancel_sleep(cancel, ms);
}

static uint64_t next_random(struct gs_k8s_client *c)
{
    uint64_t x;

    pthread_mutex_lock(&c->mu);
    x = c->rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    pthread_mutex_unlock(&c->mu);
    return x * 0x2545F4914F6CDD1DULL;
}

/* Full jitter: uniform in [0, min(max, base * 2^(attempt-1))]. */
static uint64_t backoff_ms(struct gs_k8s_client *c, unsigned attempt)
{
    uint64_t cap = c->o.backoff_base_ms;

    for (unsigned i = 1; i < attempt && cap < c->o.backoff_max_ms; i++)
        cap = gs_sat_mul_u64(cap, 2);
    cap = GS_MIN(cap, (uint64_t)c->o.backoff_max_ms);
    return next_random(c) % (cap + 1);
}

static void record_backoff(struct gs_k8s_client *c, uint64_t ms)
{
    pthread_mutex_lock(&c->mu);
    c->stats.backoff_wait_ms = gs_sat_add_u64(c->stats.backoff_wait_ms, ms);
    c->stats.last_backoff_ms = ms;
    pthread_mutex_unlock(&c->mu);
}

/* Token bucket: take one token, waiting for it if the bucket is empty. */
static int rate_wait(struct gs_k8s_client *c, struct gs_http_cancel *cancel)
{
    uint64_t now, wait = 0;

    if (c->qps_milli < 0)
        return 0;
    pthread_mutex_lock(&c->mu);
    now = now_ms(c);
    if (now > c->bucket_last_ms) {
        /* qps_milli micro-tokens per millisecond: exact, no remainder lost between calls */
        uint64_t add = gs_sat_mul_u64(now - c->bucket_last_ms, (uint64_t)c->qps_milli);
        int64_t cap = (int64_t)c->o.burst * 1000000;
        c->bucket_micro =
            add >= (uint64_t)(cap - c->bucket_micro) ? cap : c->bucket_micro + (int64_t)add;
        c->bucket_last_ms = now;
    }
    c->bucket_micro -= 1000000;
    if (c->bucket_micro < 0) {
        uint64_t deficit = (uint64_t)(-c->bucket_micro);
        wait = (deficit + (uint64_t)c->qps_milli - 1) / (uint64_t)c->qps_milli;
        c->stats.throttled++;
        c->stats.throttle_wait_ms = gs_sat_add_u64(c->stats.throttle_wait_ms, wait);
    }
    pthread_mutex_unlock(&c->mu);
    return wait_ms(c, wait, cancel);
}

/* ---- token ---------------------------------------------------------------------------------- */

/* A copy of the current token (NULL if none). Re-reads the token file when it changed, or always
 * when `force`. */
static int current_token(struct gs_k8s_client *c, bool force, char **out, struct gs_error *err)
{
    struct stat st;
    int r = 0;

    *out = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->token_file) {
        if (stat(c->token_file, &st) < 0) {
            if (!c->token_loaded) {
                r = gs_error_set(err, -errno, "token file %s: %s", c->token_file,
                                 gs_strerror(errno));
                goto out;
            }
            /* keep using the last token while the file is being replaced */
        } else if (force || !c->token_loaded || st.st_ino != c->token_ino ||
                   st.st_size != c->token_size || st.st_mtim.tv_sec != c->token_mtime.tv_sec ||
                   st.st_mtim.tv_nsec != c->token_mtime.tv_nsec) {
            char *tok = NULL;
            r = gs_kube_read_token_file(c->token_file, &tok, err);
            if (r < 0) {
                if (!c->token_loaded)
                    goto out;
                r = 0; /* keep the previous token */
            } else {
                if (c->token) {
                    explicit_bzero(c->token, strlen(c->token));
                    free(c->token);
                }
                c->token = tok;
                c->token_loaded = true;
                c->token_ino = st.st_ino;
                c->token_size = st.st_size;
                c->token_mtime = st.st_mtim;
                c->stats.token_reloads++;
            }
        }
    }
    if (c->token) {
        *out = strdup(c->token);
        if (!*out)
            r = gs_error_set(err, -ENOMEM, "k8s: out of memory");
    }
out:
    pthread_mutex_unlock(&c->mu);
    return r;
}

static void free_token(char *t)
{
    if (t) {
        explicit_bzero(t, strlen(t));
        free(t);
    }
}

/* ---- client --------------------------------------------------------------------------------- */

struct gs_k8s_client *gs_k8s_client_new(const struct gs_kube_config *cfg, struct gs_error *err)
{
    return gs_k8s_client_new_with(cfg, NULL, err);
}

struct gs_k8s_client *gs_k8s_client_new_with(const struct gs_kube_config *cfg,
                                             const struct gs_k8s_options *opts,
                                             struct gs_error *err)
{
    static const struct gs_k8s_options zero;
    struct gs_http_config hc = {0};
    struct gs_k8s_client *c;
    uint64_t seed = 0;
    double qps;

    if (!cfg || !cfg->server) {
        gs_error_set(err, -EINVAL, "k8s: no API server configured");
        return NULL;
    }
    if (!opts)
        opts = &zero;
    c = calloc(1, sizeof(*c));
    if (!c) {
        gs_error_set(err, -ENOMEM, "k8s: out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->o = *opts;
    if (c->o.burst == 0)
        c->o.burst = DEFAULT_BURST;
    if (c->o.max_attempts == 0)
        c->o.max_attempts = DEFAULT_ATTEMPTS;
    if (c->o.backoff_base_ms == 0)
        c->o.backoff_base_ms = DEFAULT_BACKOFF_BASE;
    if (c->o.backoff_max_ms == 0)
        c->o.backoff_max_ms = DEFAULT_BACKOFF_MAX;
    if (c->o.retry_after_max_ms == 0)
        c->o.retry_after_max_ms = DEFAULT_RETRY_AFTER;
    if (c->o.timeout_ms == 0)
        c->o.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (c->o.connect_timeout_ms == 0)
        c->o.connect_timeout_ms = DEFAULT_CONNECT_MS;
    if (c->o.max_response_bytes == 0)
        c->o.max_response_bytes = DEFAULT_MAX_RESPONSE;
    if (c->o.max_event_bytes == 0)
        c->o.max_event_bytes = DEFAULT_MAX_EVENT;
    c->o.user_agent = NULL; /* only used for the http client below */
    qps = opts->qps == 0 ? DEFAULT_QPS : opts->qps;
    if (qps != qps || qps > 1e9) /* NaN or beyond any API server: no limit */
        qps = -1;
    c->qps_milli = qps < 0 ? -1 : (int64_t)(qps * 1000.0 + 0.5);
    if (c->qps_milli == 0)
        c->qps_milli = 1;
    c->bucket_micro = (int64_t)c->o.burst * 1000000;
    c->bucket_last_ms = now_ms(c);
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    c->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;

    c->server = strdup(cfg->server);
    c->namespace = strdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "default");
    if (cfg->token)
        c->token = strdup(cfg->token);
    if (cfg->token_file)
        c->token_file = strdup(cfg->token_file);
    if (!c->server || !c->namespace || (cfg->token && !c->token) ||
        (cfg->token_file && !c->token_file)) {
        gs_error_set(err, -ENOMEM, "k8s: out of memory");
        gs_k8s_client_free(c);
        return NULL;
    }
    for (size_t n = strlen(c->server); n > 0 && c->server[n - 1] == '/'; n--)
        c->server[n - 1] = '\0';
    if (c->token_file) {
        /* a static token wins only if no file was given; the file is authoritative */
        char *t = NULL;
        free_token(c->token);
        c->token = NULL;
        if (current_token(c, true, &t, err) < 0) {
            gs_k8s_client_free(c);
            return NULL;
        }
        free_token(t);
    }

    hc.ca_file = cfg->ca_file;
    hc.ca_pem = cfg->ca_data;
    hc.ca_pem_len = cfg->ca_data_len;
    hc.insecure_skip_tls_verify = cfg->insecure_skip_tls_verify;
    hc.cert_file = cfg->client_cert_file;
    hc.cert_pem = cfg->client_cert_data;
    hc.cert_pem_len = cfg->client_cert_data_len;
    hc.key_file = cfg->client_key_file;
    hc.key_pem = cfg->client_key_data;
    hc.key_pem_len = cfg->client_key_data_len;
    hc.connect_timeout_ms = c->o.connect_timeout_ms;
    hc.timeout_ms = c->o.timeout_ms;
    hc.max_response_bytes = c->o.max_response_bytes;
    hc.user_agent = opts->user_agent;
    c->http = gs_http_client_new(&hc, err);
    if (!c->http) {
        gs_k8s_client_free(c);
        return NULL;
    }
    return c;
}

void gs_k8s_client_free(struct gs_k8s_client *c)
{
    if (!c)
        return;
    gs_http_client_free(c->http);
    free(c->server);
    free(c->namespace);
    free_token(c->token);
    free(c->token_file);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *gs_k8s_client_namespace(const struct gs_k8s_client *c)
{
    return c->namespace;
}

const char *gs_k8s_client_server(const struct gs_k8s_client *c)
{
    return c->server;
}

void gs_k8s_client_stats(struct gs_k8s_client *c, struct gs_k8s_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    pthread_mutex_unlock(&c->mu);
}

/* ---- errors --------------------------------------------------------------------------------- */

static int code_for_status(long status, const char *reason)
{
    switch (status) {
    case 400:
    case 422:
        return -EINVAL;
    case 401:
        return -EACCES;
    case 403:
        return -EPERM;
    case 404:
        return -ENOENT;
    case 409:
        return reason && strcmp(reason, "AlreadyExists") == 0 ? -EEXIST : -EBUSY;
    case 410:
        return -ESTALE;
    case 413:
        return -E2BIG;
    case 429:
        return -EAGAIN;
    default:
        return status >= 500 ? -EIO : -EPROTO;
    }
}

/* Turn a non-2xx response into a code and a message ("<Status.message> (<code>)"). */
static int status_error(const char *method, const char *path, long status, const char *body,
                        size_t len, struct gs_error *err)
{
    json_auto_t *j = NULL;
    const char *msg = NULL, *reason = NULL;
    char snippet[96];
    size_t n = 0;

    if (body && len)
        j = json_loadb(body, len, 0, NULL);
    if (json_is_object(j)) {
        msg = json_string_value(json_object_get(j, "message"));
        reason = json_string_value(json_object_get(j, "reason"));
    }
    if (msg && *msg)
        return gs_error_set(err, code_for_status(status, reason), "%s (%ld)", msg, status);
    for (size_t i = 0; body && i < len && n < sizeof(snippet) - 1; i++)
        snippet[n++] = (body[i] >= 0x20 && body[i] < 0x7f) ? body[i] : ' ';
    snippet[n] = '\0';
    return gs_error_set(err, code_for_status(status, reason), "%s %.200s: HTTP %ld%s%s", method,
                        path, status, n ? ": " : "", snippet);
}

/* ---- request with retries ------------------------------------------------------------------- */

static char *make_url(const struct gs_k8s_client *c, const char *path)
{
    size_t n = strlen(c->server) + strlen(path) + 1;
    char *u = malloc(n);

    if (u)
        snprintf(u, n, "%s%s", c->server, path);
    return u;
}

static bool transport_retryable(int r, const char *method)
{
    if (r == -ECONNREFUSED)
        return true; /* nothing was sent */
    if (r == -ETIMEDOUT || r == -ECONNRESET)
        return strcmp(method, "POST") != 0;
    return false;
}

struct call {
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    const char *content_type;
    long timeout_ms;         /* 0 = client's, <0 = none */
    gs_http_data_fn on_data; /* streaming */
    void *user;
    struct gs_http_cancel *cancel;
    bool single_attempt;  /* the caller (watch) does its own retrying */
    uint64_t deadline_ms; /* monotonic (now_ms); 0 = none */
};

/* Milliseconds left before k's deadline (UINT64_MAX when it has none; 0 when it has passed). */
static uint64_t call_left_ms(const struct gs_k8s_client *c, const struct call *k)
{
    if (!k->deadline_ms)
        return UINT64_MAX;
    uint64_t now = now_ms(c);
    return now >= k->deadline_ms ? 0 : k->deadline_ms - now;
}

static int deadline_error(const struct call *k, unsigned attempts, struct gs_error *err)
{
    return gs_error_set(err, -ETIMEDOUT, "%s %.200s: deadline exceeded (%u attempt%s)", k->method,
                        k->path, attempts, attempts == 1 ? "" : "s");
}

/* Send with rate limiting and retries. Returns 0 when a final response arrived (any status, in
 * resp), or a negative transport error. */
static int send_call(struct gs_k8s_client *c, const struct call *k, struct gs_http_response *resp,
                     struct gs_error *err)
{
    _cleanup_free_ char *url = make_url(c, k->path);
    char ctype[128];
    const char *headers[3] = {"Accept: application/json", NULL, NULL};
    bool reloaded = false;
    unsigned attempt = 1;
    int r;

    if (!url)
        return gs_error_set(err, -ENOMEM, "k8s: out of memory");
    if (k->body) {
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 k->content_type ? k->content_type : "application/json");
        headers[1] = ctype;
    }
    for (;;) {
        struct gs_http_request req = {
            .method = k->method,
            .url = url,
            .headers = headers,
            .body = k->body,
            .body_len = k->body_len,
            .timeout_ms = k->timeout_ms,
            .on_data = k->on_data,
            .user = k->user,
            .cancel = k->cancel,
        };
        char *token = NULL;
        uint64_t sleep = 0;
        uint64_t left = call_left_ms(c, k);

        if (left == 0)
            return deadline_error(k, attempt - 1, err);
        if (left != UINT64_MAX) {
            long base = k->timeout_ms ? k->timeout_ms : c->o.timeout_ms;
            if (base <= 0 || (uint64_t)base > left)
                req.timeout_ms = (long)GS_MIN(left, (uint64_t)LONG_MAX);
        }
        r = rate_wait(c, k->cancel);
        if (r < 0)
            return gs_error_set(err, r, "%s %.200s: cancelled", k->method, k->path);
        r = current_token(c, false, &token, err);
        if (r < 0)
            /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): url is _cleanup_ (layers.md Lint) */
            return r;
        req.bearer_token = token ? token : "";
        pthread_mutex_lock(&c->mu);
        c->stats.requests++;
        if (attempt > 1)
            c->stats.retries++;
        pthread_mutex_unlock(&c->mu);
        gs_http_response_fini(resp);
        r = gs_http_do(c->http, &req, resp, err);
        free_token(token);

        bool last = k->single_attempt || attempt >= c->o.max_attempts;
        if (r < 0) {
            if (last || !transport_retryable(r, k->method))
                return r;
            sleep = backoff_ms(c, attempt);
            gs_debug("k8s request failed, retrying",
                     "method=%s path=%.200s attempt=%u sleep_ms=%llu", k->method, k->path, attempt,
                     (unsigned long long)sleep);
        } else if (resp->status == 401 && c->token_file && !reloaded && !k->on_data) {
            /* the token may have rotated under an unchanged stat(): re-read it once */
            char *t = NULL;
            reloaded = true;
            if (current_token(c, true, &t, NULL) == 0)
                free_token(t);
            continue;
        } else if (resp->status == 429 || resp->status >= 500) {
            if (last)
                return 0;
            if (resp->retry_after_ms >= 0)
                sleep = GS_MIN((uint64_t)resp->retry_after_ms, (uint64_t)c->o.retry_after_max_ms);
            else
                sleep = backoff_ms(c, attempt);
            gs_debug("k8s request throttled or failed, retrying",
                     "method=%s path=%.200s status=%ld attempt=%u sleep_ms=%llu", k->method,
                     k->path, resp->status, attempt, (unsigned long long)sleep);
        } else {
            return 0;
        }
        if (k->deadline_ms && sleep >= call_left_ms(c, k))
            return deadline_error(k, attempt, err);
        record_backoff(c, sleep);
        if (wait_ms(c, sleep, k->cancel) < 0)
            return gs_error_set(err, -ECANCELED, "%s %.200s: cancelled", k->method, k->path);
        attempt++;
    }
}

static int do_json_with(struct gs_k8s_client *c, const char *method, const char *path,
                        const json_t *body, const char *content_type,
                        const struct gs_k8s_call_opts *opts, json_t **out, long *http_status,
                        struct gs_error *err)
{
    struct gs_http_response resp = {0};
    _cleanup_free_ char *text = NULL;
    struct call k = {.method = method, .path = path, .content_type = content_type};
    int r;

    if (opts) {
        k.deadline_ms = opts->deadline_ms;
        k.cancel = opts->cancel;
    }
    if (out)
        *out = NULL;
    if (http_status)
        *http_status = 0;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text)
            return gs_error_set(err, -EINVAL, "%s %.200s: body cannot be encoded as JSON", method,
                                path);
        k.body = text;
        k.body_len = strlen(text);
    }
    r = send_call(c, &k, &resp, err);
    if (r < 0) {
        if (http_status)
            *http_status = resp.status;
        gs_http_response_fini(&resp);
        return r;
    }
    if (http_status)
        *http_status = resp.status;
    if (resp.status < 200 || resp.status > 299) {
        r = status_error(method, path, resp.status, resp.body, resp.body_len, err);
        gs_http_response_fini(&resp);
        return r;
    }
    if (out && resp.body_len > 0) {
        json_error_t je;
        *out = json_loadb(resp.body, resp.body_len, 0, &je);
        if (!*out)
            r = gs_error_set(err, -EBADMSG, "%s %.200s: response is not JSON: %s (line %d)", method,
                             path, je.text, je.line);
    }
    gs_http_response_fini(&resp);
    return r;
}

static int do_json(struct gs_k8s_client *c, const char *method, const char *path,
                   const json_t *body, const char *content_type, json_t **out, long *http_status,
                   struct gs_error *err)
{
    return do_json_with(c, method, path, body, content_type, NULL, out, http_status, err);
}

uint64_t gs_k8s_now_ms(const struct gs_k8s_client *c)
{
    return now_ms(c);
}

int gs_k8s_request(struct gs_k8s_client *c, const char *method, const char *path,
                   const json_t *body, const char *content_type, json_t **out, long *http_status,
                   struct gs_error *err)
{
    if (!c || !method || !path || path[0] != '/')
        return gs_error_set(err, -EINVAL,
                            "k8s: request needs a client, a method and a path "
                            "starting with '/'");
    return do_json(c, method, path, body, content_type, out, http_status, err);
}

/* ---- paths ---------------------------------------------------------------------------------- */

static bool valid_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

int gs_k8s_path(char *buf, size_t len, const struct gs_k8s_resource *res, const char *ns,
                const char *name, const char *subresource, struct gs_error *err)
{
    int n;

    if (!res || !res->plural || !res->version)
        return gs_error_set(err, -EINVAL, "k8s: no resource given");
    if (res->namespaced && ns && !valid_name(ns))
        return gs_error_set(err, -EINVAL, "k8s: namespace \"%.100s\" is not a valid name", ns);
    if (name && !valid_name(name))
        return gs_error_set(err, -EINVAL, "k8s: %s name \"%.100s\" is not a valid name",
                            res->plural, name);
    if (subresource && (!name || !valid_name(subresource)))
        return gs_error_set(err, -EINVAL, "k8s: subresource \"%.100s\" needs a name", subresource);
    if (res->group && *res->group)
        n = snprintf(buf, len, "/apis/%s/%s", res->group, res->version);
    else
        n = snprintf(buf, len, "/api/%s", res->version);
    if (n >= 0 && (size_t)n < len && res->namespaced && ns)
        n += snprintf(buf + n, len - (size_t)n, "/namespaces/%s", ns);
    if (n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "/%s", res->plural);
    if (n >= 0 && (size_t)n < len && name)
        n += snprintf(buf + n, len - (size_t)n, "/%s", name);
    if (n >= 0 && (size_t)n < len && subresource)
        n += snprintf(buf + n, len - (size_t)n, "/%s", subresource);
    if (n < 0 || (size_t)n >= len)
        return gs_error_set(err, -ENAMETOOLONG, "k8s: path for %s too long", res->plural);
    return 0;
}

/* Append "&key=escaped(value)" (or '?' first) to buf. */
static int add_query(char *buf, size_t len, const char *key, const char *value)
{
    _cleanup_free_ char *v = gs_http_escape(value);
    size_t used = strlen(buf);
    int n;

    if (!v)
        return -ENOMEM;
    n = snprintf(buf + used, len - used, "%c%s=%s", strchr(buf, '?') ? '&' : '?', key, v);
    return n < 0 || (size_t)n >= len - used ? -ENAMETOOLONG : 0;
}

static int query_err(int r, const char *what, struct gs_error *err)
{
    return gs_error_set(err, r, "k8s: %s: %s", what,
                        r == -ENOMEM ? "out of memory" : "request path too long");
}

/* ---- CRUD ----------------------------------------------------------------------------------- */

int gs_k8s_get(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
               const char *name, json_t **out, struct gs_error *err)
{
    return gs_k8s_get_with(c, res, ns, name, NULL, out, err);
}

int gs_k8s_get_with(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                    const char *name, const struct gs_k8s_call_opts *opts, json_t **out,
                    struct gs_error *err)
{
    char path[PATH_MAX_LEN];
    int r;

    if (out)
        *out = NULL;
    if (!name)
        return gs_error_set(err, -EINVAL, "k8s: get %s needs a name", res ? res->plural : "?");
    r = gs_k8s_path(path, sizeof(path), res, ns ? ns : c->namespace, name, NULL, err);
    if (r < 0)
        return r;
    r = do_json_with(c, "GET", path, NULL, NULL, opts, out, NULL, err);
    if (r == 0 && out && !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return gs_error_set(err, -EBADMSG, "GET %s: response is not an object", path);
    }
    return r;
}

/* List at `base` (a collection path without query), joining pages. */
static int list_at(struct gs_k8s_client *c, const char *base,
                   const struct gs_k8s_list_options *opts, json_t **out, char **resource_version,
                   struct gs_error *err)
{
    static const struct gs_k8s_list_options none;
    char path[PATH_MAX_LEN * 2];
    json_auto_t *result = NULL;
    _cleanup_free_ char *cont = NULL;
    char limit[32];
    int r;

    if (out)
        *out = NULL;
    if (resource_version)
        *resource_version = NULL;
    if (!opts)
        opts = &none;
    for (int page = 0;; page++) {
        json_t *resp = NULL, *items, *meta;
        const char *next;

        snprintf(path, sizeof(path), "%s", base);
        if ((opts->label_selector && *opts->label_selector &&
             (r = add_query(path, sizeof(path), "labelSelector", opts->label_selector)) < 0) ||
            (opts->field_selector && *opts->field_selector &&
             (r = add_query(path, sizeof(path), "fieldSelector", opts->field_selector)) < 0))
            return query_err(r, "list", err);
        if (opts->page_size) {
            snprintf(limit, sizeof(limit), "%u", opts->page_size);
            if ((r = add_query(path, sizeof(path), "limit", limit)) < 0 ||
                (cont && (r = add_query(path, sizeof(path), "continue", cont)) < 0))
                return query_err(r, "list", err);
        }
        r = do_json(c, "GET", path, NULL, NULL, &resp, NULL, err);
        if (r < 0)
            return r;
        items = json_object_get(resp, "items");
        meta = json_object_get(resp, "metadata");
        if (!json_is_object(resp) || !(json_is_array(items) || json_is_null(items) || !items)) {
            json_decref(resp);
            return gs_error_set(err, -EBADMSG, "GET %s: response is not a list", path);
        }
        if (!items) {
            items = json_array();
            json_object_set_new(resp, "items", items);
        } else if (json_is_null(items)) {
            items = json_array();
            json_object_set_new(resp, "items", items);
        }
        next = json_string_value(json_object_get(meta, "continue"));
        free(cont);
        cont = next && *next ? strdup(next) : NULL;
        if (next && *next && !cont) {
            json_decref(resp);
            return gs_error_set(err, -ENOMEM, "k8s: out of memory");
        }
        if (!result) {
            result = resp;
        } else {
            if (json_array_extend(json_object_get(result, "items"), items) < 0) {
                json_decref(resp);
                return gs_error_set(err, -ENOMEM, "k8s: out of memory");
            }
            json_decref(resp);
        }
        if (!cont || !opts->page_size)
            break;
        if (page > 100000)
            return gs_error_set(err, -ELOOP, "GET %s: too many pages", base);
    }
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): cont is _cleanup_ (layers.md Lint) */
    json_t *meta = json_object_get(result, "metadata");
    if (json_is_object(meta))
        json_object_del(meta, "continue");
    if (resource_version) {
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
        *resource_version = strdup(rv ? rv : "");
        if (!*resource_version)
            return gs_error_set(err, -ENOMEM, "k8s: out of memory");
    }
    if (out)
        *out = TAKE_PTR(result);
    return 0;
}

int gs_k8s_list(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                const struct gs_k8s_list_options *opts, json_t **out, char **resource_version,
                struct gs_error *err)
{
    char base[PATH_MAX_LEN];
    int r;

    if (out)
        *out = NULL;
    if (resource_version)
        *resource_version = NULL;
    r = gs_k8s_path(base, sizeof(base), res, ns, NULL, NULL, err);
    if (r < 0)
        return r;
    return list_at(c, base, opts, out, resource_version, err);
}

static const char *obj_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static int write_path(struct gs_k8s_client *c, char *path, size_t len,
                      const struct gs_k8s_resource *res, const char *ns, const json_t *obj,
                      const char *name, const char *sub, unsigned flags, struct gs_error *err)
{
    int r;

    if (!ns)
        ns = obj ? obj_str(obj, "namespace") : NULL;
    if (!ns)
        ns = c->namespace;
    r = gs_k8s_path(path, len, res, ns, name, sub, err);
    if (r < 0)
        return r;
    if ((flags & GS_K8S_DRY_RUN) && (r = add_query(path, len, "dryRun", "All")) < 0)
        return query_err(r, "dryRun", err);
    return 0;
}

int gs_k8s_create(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                  const json_t *obj, unsigned flags, json_t **out, struct gs_error *err)
{
    char path[PATH_MAX_LEN];
    int r;

    if (out)
        *out = NULL;
    if (!json_is_object(obj))
        return gs_error_set(err, -EINVAL, "k8s: create %s needs an object",
                            res ? res->plural : "?");
    r = write_path(c, path, sizeof(path), res, ns, obj, NULL, NULL, flags, err);
    if (r < 0)
        return r;
    return do_json(c, "POST", path, obj, NULL, out, NULL, err);
}

int gs_k8s_update(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                  const char *name, const char *subresource, const json_t *obj, unsigned flags,
                  json_t **out, struct gs_error *err)
{
    char path[PATH_MAX_LEN];
    int r;

    if (out)
        *out = NULL;
    if (!json_is_object(obj))
        return gs_error_set(err, -EINVAL, "k8s: update %s needs an object",
                            res ? res->plural : "?");
    if (!name)
        name = obj_str(obj, "name");
    if (!name)
        return gs_error_set(err, -EINVAL, "k8s: update %s: object has no metadata.name",
                            res ? res->plural : "?");
    r = write_path(c, path, sizeof(path), res, ns, obj, name, subresource, flags, err);
    if (r < 0)
        return r;
    return do_json(c, "PUT", path, obj, NULL, out, NULL, err);
}

int gs_k8s_patch(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                 const char *name, const char *subresource, enum gs_k8s_patch_type type,
                 const json_t *patch, unsigned flags, json_t **out, struct gs_error *err)
{
    char path[PATH_MAX_LEN];
    const char *ctype;
    int r;

    if (out)
        *out = NULL;
    if (type == GS_K8S_PATCH_JSON) {
        ctype = "application/json-patch+json";
        if (!json_is_array(patch))
            return gs_error_set(err, -EINVAL, "k8s: a JSON patch must be an array of operations");
    } else if (type == GS_K8S_PATCH_MERGE) {
        ctype = "application/merge-patch+json";
        if (!json_is_object(patch))
            return gs_error_set(err, -EINVAL, "k8s: a merge patch must be an object");
    } else {
        return gs_error_set(err, -EINVAL, "k8s: unknown patch type %d", (int)type);
    }
    if (!name)
        return gs_error_set(err, -EINVAL, "k8s: patch %s needs a name", res ? res->plural : "?");
    r = write_path(c, path, sizeof(path), res, ns, NULL, name, subresource, flags, err);
    if (r < 0)
        return r;
    return do_json(c, "PATCH", path, patch, ctype, out, NULL, err);
}

int gs_k8s_delete(struct gs_k8s_client *c, const struct gs_k8s_resource *res, const char *ns,
                  const char *name, const char *uid, unsigned flags, struct gs_error *err)
{
    char path[PATH_MAX_LEN];
    json_auto_t *opts = NULL;
    int r;

    if (!name)
        return gs_error_set(err, -EINVAL, "k8s: delete %s needs a name", res ? res->plural : "?");
    r = write_path(c, path, sizeof(path), res, ns, NULL, name, NULL, flags, err);
    if (r < 0)
        return r;
    if (uid) {
        opts = json_pack("{s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
                         "preconditions", "uid", uid);
        if (!opts)
            return gs_error_set(err, -ENOMEM, "k8s: out of memory");
    }
    return do_json(c, "DELETE", path, opts, NULL, NULL, NULL, err);
}

/* ---- watch ---------------------------------------------------------------------------------- */

const char *gs_k8s_event_type_name(enum gs_k8s_event_type t)
{
    switch (t) {
    case GS_K8S_EVENT_ADDED:
        return "ADDED";
    case GS_K8S_EVENT_MODIFIED:
        return "MODIFIED";
    case GS_K8S_EVENT_DELETED:
        return "DELETED";
    case GS_K8S_EVENT_BOOKMARK:
        return "BOOKMARK";
    case GS_K8S_EVENT_ERROR:
        return "ERROR";
    }
    return "?";
}

struct gs_k8s_watch *gs_k8s_watch_new(struct gs_k8s_client *c, const struct gs_k8s_resource *res,
                                      const char *ns, const struct gs_k8s_watch_options *opts,
                                      struct gs_error *err)
{
    static const struct gs_k8s_watch_options none;
    char path[PATH_MAX_LEN];
    struct gs_k8s_watch *w;

    if (!c) {
        gs_error_set(err, -EINVAL, "k8s: watch needs a client");
        return NULL;
    }
    if (!opts)
        opts = &none;
    if (gs_k8s_path(path, sizeof(path), res, ns, NULL, NULL, err) < 0)
        return NULL;
    w = calloc(1, sizeof(*w));
    if (!w) {
        gs_error_set(err, -ENOMEM, "k8s: out of memory");
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    w->c = c;
    w->timeout_s = opts->timeout_s ? opts->timeout_s : DEFAULT_WATCH_TIMEOUT;
    w->bookmarks = !opts->no_bookmarks;
    w->base_path = strdup(path);
    w->cancel = gs_http_cancel_new();
    if (opts->label_selector && *opts->label_selector)
        w->label_selector = strdup(opts->label_selector);
    if (opts->field_selector && *opts->field_selector)
        w->field_selector = strdup(opts->field_selector);
    if (!w->base_path || !w->cancel ||
        (opts->label_selector && *opts->label_selector && !w->label_selector) ||
        (opts->field_selector && *opts->field_selector && !w->field_selector)) {
        gs_k8s_watch_free(w);
        gs_error_set(err, -ENOMEM, "k8s: out of memory");
        return NULL;
    }
    return w;
}

void gs_k8s_watch_free(struct gs_k8s_watch *w)
{
    if (!w)
        return;
    gs_http_cancel_free(w->cancel);
    free(w->base_path);
    free(w->label_selector);
    free(w->field_selector);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void gs_k8s_watch_stop(struct gs_k8s_watch *w)
{
    if (w)
        gs_http_cancel_trigger(w->cancel);
}

void gs_k8s_watch_resource_version(struct gs_k8s_watch *w, char *buf, size_t len)
{
    if (!len)
        return;
    pthread_mutex_lock(&w->mu);
    snprintf(buf, len, "%s", w->rv);
    pthread_mutex_unlock(&w->mu);
}

static void set_rv(struct gs_k8s_watch *w, const char *rv)
{
    pthread_mutex_lock(&w->mu);
    snprintf(w->rv, sizeof(w->rv), "%s", rv);
    pthread_mutex_unlock(&w->mu);
}

/* State of one watch stream. */
struct stream {
    struct gs_k8s_watch *w;
    gs_k8s_watch_fn fn;
    void *user;
    struct gs_error *err;
    char *buf;
    size_t len, cap, max;
    long status; /* HTTP status of the stream */
    bool stale;  /* 410 seen */
    int fail;    /* why the stream was aborted by us */
    unsigned events;
    unsigned error_events; /* ERROR events other than 410 */
};

static int handle_event(struct stream *s, const char *line, size_t len)
{
    json_auto_t *ev = NULL;
    json_error_t je;
    const char *type;
    json_t *obj;
    enum gs_k8s_event_type t;

    ev = json_loadb(line, len, 0, &je);
    if (!json_is_object(ev))
        return gs_error_set(s->err, -EBADMSG, "watch %s: event is not a JSON object: %s",
                            s->w->base_path, ev ? "wrong type" : je.text);
    type = json_string_value(json_object_get(ev, "type"));
    obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj))
        return gs_error_set(s->err, -EBADMSG, "watch %s: event without type or object",
                            s->w->base_path);
    if (!strcmp(type, "ADDED"))
        t = GS_K8S_EVENT_ADDED;
    else if (!strcmp(type, "MODIFIED"))
        t = GS_K8S_EVENT_MODIFIED;
    else if (!strcmp(type, "DELETED"))
        t = GS_K8S_EVENT_DELETED;
    else if (!strcmp(type, "BOOKMARK"))
        t = GS_K8S_EVENT_BOOKMARK;
    else if (!strcmp(type, "ERROR"))
        t = GS_K8S_EVENT_ERROR;
    else
        return gs_error_set(s->err, -EBADMSG, "watch %s: unknown event type \"%.40s\"",
                            s->w->base_path, type);
    if (t == GS_K8S_EVENT_ERROR) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        s->error_events++;
        if (code == 410) {
            s->stale = true;
            return gs_error_set(s->err, -ESTALE, "%s (410)",
                                msg ? msg : "resource version too old");
        }
    } else {
        const char *rv = obj_str(obj, "resourceVersion");
        if (rv && *rv)
            set_rv(s->w, rv);
    }
    s->events++;
    int r = s->fn(s->user, t, obj);
    if (r < 0 && (!s->err || s->err->code == 0))
        gs_error_set(s->err, r, "watch %s: stopped by the event handler: %s", s->w->base_path,
                     gs_strerror(r));
    return r < 0 ? r : 0;
}

static int stream_data(void *user, long status, const char *data, size_t len)
{
    struct stream *s = user;

    s->status = status;
    if (status != 200) { /* keep the (bounded) Status body for the error message */
        size_t room = ERROR_BODY_MAX - GS_MIN(s->len, (size_t)ERROR_BODY_MAX);
        len = GS_MIN(len, room);
    }
    while (len > 0) {
        const char *nl = status == 200 ? memchr(data, '\n', len) : NULL;
        size_t take = nl ? (size_t)(nl - data) : len;

        if (take > s->max || s->len > s->max - take)
            return s->fail =
                       gs_error_set(s->err, -E2BIG, "watch %s: event too big (more than %zu bytes)",
                                    s->w->base_path, s->max);
        if (!s->buf || s->len + take + 1 > s->cap) {
            size_t cap = s->cap ? s->cap : 4096;
            char *nb;
            while (cap < s->len + take + 1)
                cap *= 2;
            nb = realloc(s->buf, cap);
            if (!nb)
                return s->fail = gs_error_set(s->err, -ENOMEM, "k8s: out of memory");
            s->buf = nb;
            s->cap = cap;
        }
        memcpy(s->buf + s->len, data, take);
        s->len += take;
        s->buf[s->len] = '\0';
        if (!nl)
            break;
        data += take + 1;
        len -= take + 1;
        if (s->len > 0) {
            int r = handle_event(s, s->buf, s->len);
            s->len = 0;
            if (r < 0)
                return s->stale ? r : (s->fail = r);
        }
    }
    return 0;
}

int gs_k8s_watch_parse(const char *data, size_t len, size_t chunk, size_t max_event,
                       gs_k8s_watch_fn fn, void *user, struct gs_error *err)
{
    struct gs_k8s_watch w = {.base_path = (char *)"(parse)"};
    struct stream s = {.w = &w, .fn = fn, .user = user, .err = err, .max = max_event};
    int r = 0;

    pthread_mutex_init(&w.mu, NULL);
    if (chunk == 0)
        chunk = len ? len : 1;
    while (r == 0 && len > 0) {
        size_t n = GS_MIN(chunk, len);
        r = stream_data(&s, 200, data, n);
        data += n;
        len -= n;
    }
    free(s.buf);
    pthread_mutex_destroy(&w.mu);
    return r;
}

static int watch_path(struct gs_k8s_watch *w, char *path, size_t len)
{
    char num[32], rv[128];
    int r;

    gs_k8s_watch_resource_version(w, rv, sizeof(rv));
    snprintf(path, len, "%s?watch=1", w->base_path);
    snprintf(num, sizeof(num), "%u", w->timeout_s);
    if ((r = add_query(path, len, "timeoutSeconds", num)) < 0)
        return r;
    if (w->bookmarks && (r = add_query(path, len, "allowWatchBookmarks", "true")) < 0)
        return r;
    if (rv[0] && (r = add_query(path, len, "resourceVersion", rv)) < 0)
        return r;
    if (w->label_selector && (r = add_query(path, len, "labelSelector", w->label_selector)) < 0)
        return r;
    if (w->field_selector && (r = add_query(path, len, "fieldSelector", w->field_selector)) < 0)
        return r;
    return 0;
}

int gs_k8s_watch_run(struct gs_k8s_watch *w, const char *resource_version, gs_k8s_watch_fn fn,
                     void *user, struct gs_error *err)
{
    struct gs_k8s_client *c;
    char path[PATH_MAX_LEN * 2];
    unsigned failures = 0;
    int r;

    if (!w || !fn)
        return gs_error_set(err, -EINVAL, "k8s: watch needs a watch and a callback");
    c = w->c;
    set_rv(w, resource_version ? resource_version : "");
    for (;;) {
        struct stream s = {.w = w, .fn = fn, .user = user, .err = err, .max = c->o.max_event_bytes};
        struct gs_http_response resp = {0};
        struct call k = {.method = "GET",
                         .path = path,
                         .on_data = stream_data,
                         .user = &s,
                         .cancel = w->cancel,
                         .single_attempt = true,
                         .timeout_ms = (long)(w->timeout_s + 30u) * 1000L};
        bool transient = false;

        if (gs_http_cancel_is_triggered(w->cancel))
            return gs_error_set(err, -ECANCELED, "watch %s: stopped", w->base_path);
        if ((r = watch_path(w, path, sizeof(path))) < 0)
            return query_err(r, "watch", err);
        gs_error_clear(err);
        r = send_call(c, &k, &resp, err);
        gs_http_response_fini(&resp);
        if (r == -ECANCELED || gs_http_cancel_is_triggered(w->cancel)) {
            free(s.buf);
            return gs_error_set(err, -ECANCELED, "watch %s: stopped", w->base_path);
        }
        if (s.stale) {
            free(s.buf);
            return -ESTALE; /* message set by handle_event */
        }
        if (r == 0 && s.status == 0)
            s.status = resp.status;
        if (s.fail < 0) {
            free(s.buf);
            return s.fail; /* the callback's code, a bad or oversize event */
        }
        if (r < 0) {
            if (r != -ETIMEDOUT && r != -ECONNRESET && r != -ECONNREFUSED) {
                free(s.buf);
                return r;
            }
            transient = true;
        } else if (s.status == 410) {
            status_error("GET", w->base_path, 410, s.buf, s.len, err);
            free(s.buf);
            return -ESTALE;
        } else if (s.status == 429 || s.status >= 500) {
            r = status_error("GET", w->base_path, s.status, s.buf, s.len, err);
            transient = true;
        } else if (s.status != 200) {
            r = status_error("GET", w->base_path, s.status, s.buf, s.len, err);
            free(s.buf);
            return r;
        }
        free(s.buf);
        if (!transient && s.error_events > 0 && s.error_events == s.events) {
            /* only ERROR events: back off before watching again */
            r = gs_error_set(err, -EIO, "watch %s: the server sent only ERROR events",
                             w->base_path);
            transient = true;
        }
        if (!transient) { /* the server ended the stream (timeoutSeconds): watch on */
            failures = 0;
            continue;
        }
        if (s.events > 0)
            failures = 0;
        if (++failures >= c->o.max_attempts)
            return r < 0 ? r : -EIO;
        uint64_t sleep =
            resp.retry_after_ms >= 0 && (s.status == 429 || s.status >= 500)
                ? GS_MIN((uint64_t)resp.retry_after_ms, (uint64_t)c->o.retry_after_max_ms)
                : backoff_ms(c, failures);
        record_backoff(c, sleep);
        gs_debug("watch interrupted, re-watching", "path=%s failures=%u sleep_ms=%llu",
                 w->base_path, failures, (unsigned long long)sleep);
        if (wait_ms(c, sleep, w->cancel) < 0)
            return gs_error_set(err, -ECANCELED, "watch %s: stopped", w->base_path);
    }
}

int gs_k8s_list_watch(struct gs_k8s_watch *w, gs_k8s_list_fn on_list, gs_k8s_watch_fn on_event,
                      void *user, struct gs_error *err)
{
    struct gs_k8s_list_options lo;
    int r;

    if (!w || !on_list || !on_event)
        return gs_error_set(err, -EINVAL, "k8s: list-watch needs a watch and two callbacks");
    lo = (struct gs_k8s_list_options){.label_selector = w->label_selector,
                                      .field_selector = w->field_selector};
    for (;;) {
        json_t *list = NULL;
        char *rv = NULL;

        if (gs_http_cancel_is_triggered(w->cancel))
            return gs_error_set(err, -ECANCELED, "watch %s: stopped", w->base_path);
        r = list_at(w->c, w->base_path, &lo, &list, &rv, err);
        if (r < 0)
            return r;
        r = on_list(user, list);
        json_decref(list);
        if (r < 0) {
            free(rv);
            if (!err || err->code == 0)
                gs_error_set(err, r, "watch %s: stopped by the list handler: %s", w->base_path,
                             gs_strerror(r));
            return r;
        }
        r = gs_k8s_watch_run(w, rv, on_event, user, err);
        free(rv);
        if (r != -ESTALE)
            return r;
        gs_debug("watch expired, relisting", "path=%s", w->base_path);
    }
}
