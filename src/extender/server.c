/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP transport of the extender (see server.h). */
#include "extender/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/httpd.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/version.h"
#include "net/tls.h"

struct ext_server {
    struct ext_server_config cfg;
    struct gs_net_server *daemon, *probe;
    size_t token_len;
    atomic_size_t budget_used;  /* bytes reserved by bodies being received */
    pthread_mutex_t parse_lock; /* one body decoded (and served) at a time */
};

/* What a connection's handler is: the verbs listener or the probe one. */
struct listener {
    struct ext_server *s;
    bool probe;
};

struct body {
    char *buf;
    size_t len, cap;
    size_t reserved; /* of s->budget_used */
    unsigned reject; /* 0, 413 or 503: the body is dropped and this status answered */
};

static enum MHD_Result json_reply(struct MHD_Connection *c, unsigned status, json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!s)
        return gs_httpd_text(c, 500, "out of memory\n");
    return gs_httpd_reply(c, status, "application/json", s, strlen(s), true);
}

static enum MHD_Result metrics(struct ext_server *s, struct MHD_Connection *c)
{
    struct ext_stats st;
    ext_service_stats(s->cfg.svc, &st);
    char build[512];
    gs_version_metric(build, sizeof(build));
    char *out = NULL;
    int n = asprintf(&out,
                     "%s"
                     "# HELP gpuslice_extender_requests_total Extender requests by verb.\n"
                     "# TYPE gpuslice_extender_requests_total counter\n"
                     "gpuslice_extender_requests_total{verb=\"filter\"} %" PRIu64 "\n"
                     "gpuslice_extender_requests_total{verb=\"prioritize\"} %" PRIu64 "\n"
                     "gpuslice_extender_requests_total{verb=\"bind\"} %" PRIu64 "\n"
                     "# HELP gpuslice_extender_errors_total Verbs that answered an error.\n"
                     "# TYPE gpuslice_extender_errors_total counter\n"
                     "gpuslice_extender_errors_total{verb=\"filter\"} %" PRIu64 "\n"
                     "gpuslice_extender_errors_total{verb=\"bind\"} %" PRIu64 "\n"
                     "# HELP gpuslice_extender_node_lock_conflicts_total Binds that found the "
                     "node locked (hami.io/mutex.lock) or lost the race to lock it.\n"
                     "# TYPE gpuslice_extender_node_lock_conflicts_total counter\n"
                     "gpuslice_extender_node_lock_conflicts_total %" PRIu64 "\n"
                     "# HELP gpuslice_extender_inventory_reused_total Calls that reused the "
                     "decoded inventory (nodes and placed pods unchanged).\n"
                     "# TYPE gpuslice_extender_inventory_reused_total counter\n"
                     "gpuslice_extender_inventory_reused_total %" PRIu64 "\n"
                     "# HELP gpuslice_extender_filter_seconds_total Time spent in filter.\n"
                     "# TYPE gpuslice_extender_filter_seconds_total counter\n"
                     "gpuslice_extender_filter_seconds_total %.6f\n",
                     build, st.filter, st.prioritize, st.bind, st.filter_errors, st.bind_errors,
                     st.lock_conflicts, st.inventory_hits, (double)st.filter_ns_sum / 1e9);
    if (n < 0)
        return gs_httpd_text(c, 500, "out of memory\n");
    return gs_httpd_reply(c, 200, "text/plain; version=0.0.4", out, (size_t)n, true);
}

/* JSON values in `s` (a count of ',', '[' and '{' outside strings, plus one): what decoding it
 * would allocate is proportional to this, not to the byte count ("[0,0,...]" of 60 MiB is 30
 * million values, over a gigabyte as a tree). */
static size_t json_values(const char *s, size_t n)
{
    size_t v = 1;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == ',' || c == '[' || c == '{') {
            v++;
        }
    }
    return v;
}

static bool reserve(struct ext_server *s, struct body *b, size_t want)
{
    if (want <= b->reserved)
        return true;
    size_t more = want - b->reserved;
    size_t used = atomic_load(&s->budget_used);
    do {
        if (used > EXT_BODY_BUDGET || more > EXT_BODY_BUDGET - used)
            return false;
    } while (!atomic_compare_exchange_weak(&s->budget_used, &used, used + more));
    b->reserved = want;
    return true;
}

static void body_free(struct ext_server *s, struct body *b)
{
    free(b->buf);
    b->buf = NULL, b->len = b->cap = 0;
    atomic_fetch_sub(&s->budget_used, b->reserved);
    b->reserved = 0;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct listener *l = cls;
    struct body *b = *con_cls;
    if (b) {
        body_free(l->s, b);
        free(b);
    }
    *con_cls = NULL;
}

/* "Authorization: Bearer <token>", compared in constant time over the token's length. */
static bool authorized(struct ext_server *s, struct MHD_Connection *c)
{
    if (!s->token_len)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    size_t n = strlen(h);
    unsigned char diff = n != s->token_len;
    for (size_t i = 0; i < s->token_len; i++)
        diff |= (unsigned char)(h[i < n ? i : 0] ^ s->cfg.token[i]);
    return diff == 0;
}

static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen("bearer token required\n"),
                                        (void *)"bearer token required\n", MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(c, 401, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reject(struct MHD_Connection *c, unsigned status)
{
    if (status == 413)
        return gs_httpd_text(c, 413, "request body over 64 MiB\n");
    gs_log(GS_LOG_WARN, "request refused", "reason=busy budget_bytes=%u", EXT_BODY_BUDGET);
    return gs_httpd_text(c, 503, "busy: too many request bodies being received, retry\n");
}

/* First call of a request (headers only): answers now when it can be refused before any body
 * byte is read. Returns MHD_YES with *done false to go on receiving. */
static enum MHD_Result admit(struct listener *l, struct MHD_Connection *c, const char *url,
                             struct body *b, bool *done)
{
    struct ext_server *s = l->s;
    *done = true;
    bool health = strcmp(url, "/healthz") == 0;
    if (l->probe) {
        if (!health && strcmp(url, "/metrics") != 0)
            return gs_httpd_text(c, 404, "not found: /healthz, /metrics\n");
    } else if (!health && !authorized(s, c)) {
        return unauthorized(c);
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || end == cl || *end)
            return gs_httpd_text(c, 400, "Content-Length is not a number\n");
        if (n > EXT_MAX_BODY)
            return reject(c, 413);
        if (l->probe && n)
            return gs_httpd_text(c, 405, "GET only\n");
        if (!reserve(s, b, (size_t)n + 1))
            return reject(c, 503);
    }
    *done = false;
    return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    struct listener *l = cls;
    struct ext_server *s = l->s;
    struct body *b = *con_cls;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            return MHD_NO;
        *con_cls = b;
        bool done;
        enum MHD_Result ret = admit(l, c, url, b, &done);
        if (done)
            b->reject = 1; /* answered: drop what follows */
        return ret;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (b->reject)
            return MHD_YES;
        if (l->probe || b->len + n > EXT_MAX_BODY) {
            b->reject = l->probe ? 405 : 413;
            body_free(s, b);
            return MHD_YES;
        }
        if (!reserve(s, b, b->len + n + 1)) {
            b->reject = 503;
            body_free(s, b);
            return MHD_YES;
        }
        if (b->len + n + 1 > b->cap) {
            size_t cap = b->cap ? b->cap : 65536;
            while (cap < b->len + n + 1)
                cap *= 2;
            if (cap > b->reserved)
                cap = b->reserved;
            char *nb = realloc(b->buf, cap);
            if (!nb)
                return MHD_NO;
            b->buf = nb, b->cap = cap;
        }
        memcpy(b->buf + b->len, upload_data, n);
        b->len += n;
        b->buf[b->len] = '\0';
        return MHD_YES;
    }
    if (b->reject == 1)
        return MHD_YES; /* already answered */
    if (b->reject == 405)
        return gs_httpd_text(c, 405, "GET only\n");
    if (b->reject)
        return reject(c, b->reject);
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/healthz") == 0)
        return get ? gs_httpd_text(c, 200, "ok\n") : gs_httpd_text(c, 405, "GET only\n");
    if (strcmp(url, "/metrics") == 0)
        return get ? metrics(s, c) : gs_httpd_text(c, 405, "GET only\n");
    json_t *(*verb)(struct ext_service *, const json_t *, struct gs_error *) = NULL;
    if (strcmp(url, "/filter") == 0)
        verb = ext_filter;
    else if (strcmp(url, "/prioritize") == 0)
        verb = ext_prioritize;
    else if (strcmp(url, "/bind") == 0)
        verb = ext_bind;
    else
        return gs_httpd_text(c, 404,
                             "not found: /filter, /prioritize, /bind, /healthz, /metrics\n");
    if (strcmp(method, "POST") != 0)
        return gs_httpd_text(c, 405, "POST only\n");
    /* One body decoded and served at a time (the verbs are serialised anyway): the JSON tree of
     * a large body is several times its size, and concurrent ones would add up. */
    if (b->len && json_values(b->buf, b->len) > EXT_MAX_JSON_VALUES) {
        body_free(s, b);
        return gs_httpd_text(c, 413, "request body has more than 4,000,000 JSON values\n");
    }
    pthread_mutex_lock(&s->parse_lock);
    size_t blen = b->len;
    bool large = blen > (1u << 20);
    json_error_t je;
    json_t *args = b->len ? json_loadb(b->buf, b->len, JSON_REJECT_DUPLICATES, &je) : NULL;
    body_free(s, b);
    json_t *out = NULL;
    struct gs_error err = {0};
    if (args)
        out = verb(s->cfg.svc, args, &err);
    json_decref(args);
    if (large) /* hand the decoded tree's pages back: 10,000 full Nodes must not stay */
        malloc_trim(0);
    pthread_mutex_unlock(&s->parse_lock);
    if (!args) {
        char msg[300];
        snprintf(msg, sizeof(msg), "body is not JSON: %s\n", blen ? je.text : "empty body");
        char *m = strdup(msg);
        return m ? gs_httpd_reply(c, 400, "text/plain; charset=utf-8", m, strlen(m), true)
                 : gs_httpd_text(c, 500, "out of memory\n");
    }
    if (!out) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s\n", err.msg);
        char *m = strdup(msg);
        return m ? gs_httpd_reply(c, 400, "text/plain; charset=utf-8", m, strlen(m), true)
                 : gs_httpd_text(c, 500, "out of memory\n");
    }
    return json_reply(c, 200, out);
}

bool ext_addr_is_loopback(const struct sockaddr_storage *addr)
{
    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
               (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
    }
    return false;
}

int ext_server_check_exposure(const struct sockaddr_storage *addr, const char *what, bool tls,
                              bool token, struct gs_error *err)
{
    if (ext_addr_is_loopback(addr) || (tls && token))
        return 0;
    return gs_error_set(err, -EPERM,
                        "%s is not a loopback address: the verbs bind pods and patch nodes, so "
                        "listening there needs --tls-cert-file/--tls-key-file and --token-file "
                        "(%s%s missing)",
                        what, tls ? "" : "TLS", tls || token ? "" : " and token");
}

static struct gs_net_server *start_one(struct listener *l, const char *what,
                                       const struct sockaddr_storage *addr, struct gs_tls *tls,
                                       struct gs_net_budget budget, struct gs_error *err)
{
    struct gs_net_server_config c = {.what = what,
                                     .addr = *addr,
                                     .handler = handle,
                                     .handler_cls = l,
                                     .completed = completed,
                                     .completed_cls = l,
                                     .budget = budget};
    if (tls) {
        c.tls_cert = gs_tls_retrieve;
        c.tls_priorities = GS_TLS_PRIORITIES;
    }
    return gs_net_server_start(&c, err);
}

static struct listener verbs_listener, probe_listener;

struct ext_server *ext_server_start(const struct ext_server_config *cfg, struct gs_error *err)
{
    if (ext_server_check_exposure(&cfg->addr, "--listen", cfg->tls != NULL,
                                  cfg->token && cfg->token[0], err) < 0)
        return NULL;
    struct ext_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->token_len = cfg->token ? strlen(cfg->token) : 0;
    pthread_mutex_init(&s->parse_lock, NULL);
    /* One server per process: the listeners are static so the handlers' cls outlives them. */
    verbs_listener = (struct listener){.s = s};
    probe_listener = (struct listener){.s = s, .probe = true};
    s->daemon = start_one(&verbs_listener, "--listen", &cfg->addr, cfg->tls, cfg->budget, err);
    if (s->daemon && cfg->probe.ss_family)
        s->probe = start_one(&probe_listener, "--probe-listen", &cfg->probe, NULL,
                             gs_net_probe_budget(cfg->probe_max_connections), err);
    if (!s->daemon || (cfg->probe.ss_family && !s->probe)) {
        ext_server_stop(s);
        return NULL;
    }
    return s;
}

unsigned ext_server_port(const struct ext_server *s)
{
    return gs_net_server_port(s->daemon);
}

unsigned ext_server_probe_port(const struct ext_server *s)
{
    return s->probe ? gs_net_server_port(s->probe) : 0;
}

void ext_server_stop(struct ext_server *s)
{
    if (!s)
        return;
    gs_net_server_stop(s->probe);
    gs_net_server_stop(s->daemon);
    pthread_mutex_destroy(&s->parse_lock);
    free(s);
}
