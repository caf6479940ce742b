/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd HTTPS server: routing, bounded bodies, health, readiness and metrics. */
#include "webhook/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/macros.h"
#include "net/listen.h"
#include "webhook/review.h"

struct probe_srv;

struct wh_server {
    struct wh_server_config cfg;
    struct MHD_Daemon *daemon; /* HTTPS: /mutate and everything else */
    struct probe_srv *health;  /* plain HTTP probes; NULL when not configured */
    atomic_bool draining;
};

struct req_state {
    enum wh_route route;
    bool health; /* arrived on the probe listener */
    uint64_t start_us;
    char *body;
    size_t len, cap;
    bool too_big;
    bool responded;
};

static enum wh_route route_of(const char *url)
{
    if (strcmp(url, "/mutate") == 0)
        return WH_ROUTE_MUTATE;
    if (strcmp(url, "/healthz") == 0)
        return WH_ROUTE_HEALTHZ;
    if (strcmp(url, "/readyz") == 0)
        return WH_ROUTE_READYZ;
    if (strcmp(url, "/metrics") == 0)
        return WH_ROUTE_METRICS;
    return WH_ROUTE_OTHER;
}

/* Queue `body` (malloc'd and handed over, or a static string when `owned` is false). */
static enum MHD_Result reply(struct wh_server *s, struct MHD_Connection *c, struct req_state *st,
                             unsigned status, const char *content_type, char *body, size_t len,
                             bool owned)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    st->responded = true;
    wh_metrics_request(s->cfg.metrics, st->route, status);
    return r;
}

static enum MHD_Result reply_text(struct wh_server *s, struct MHD_Connection *c,
                                  struct req_state *st, unsigned status, const char *text)
{
    return reply(s, c, st, status, "text/plain; charset=utf-8", (char *)text, strlen(text), false);
}

#define TOO_BIG_TEXT "request body exceeds 3145728 bytes (3 MiB)\n"

/* "application/json", optionally with parameters ("; charset=utf-8"), case-insensitive. */
static bool is_json_media_type(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return false;
    ct += sizeof(want) - 1;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* First call for a POST /mutate: refuse from the headers alone (413, 415). MHD_YES = go on. */
static enum MHD_Result check_mutate_headers(struct wh_server *s, struct MHD_Connection *c,
                                            struct req_state *st)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > WH_REVIEW_MAX_BYTES) {
        wh_metrics_outcome(s->cfg.metrics, WH_OUTCOME_REJECTED);
        return reply_text(s, c, st, 413, TOO_BIG_TEXT);
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!is_json_media_type(ct)) {
        char msg[200];
        if (ct)
            snprintf(msg, sizeof(msg),
                     "Content-Type \"%.100s\" is not supported: /mutate accepts application/json\n",
                     ct);
        else
            snprintf(msg, sizeof(msg),
                     "Content-Type is missing: /mutate accepts application/json\n");
        wh_metrics_outcome(s->cfg.metrics, WH_OUTCOME_REJECTED);
        char *body = strdup(msg);
        if (!body)
            return MHD_NO;
        return reply(s, c, st, 415, "text/plain; charset=utf-8", body, strlen(body), true);
    }
    return MHD_YES;
}

static enum MHD_Result handle_mutate(struct wh_server *s, struct MHD_Connection *c,
                                     struct req_state *st, const char *method)
{
    if (strcmp(method, "POST") != 0)
        return reply_text(s, c, st, 405, "/mutate accepts POST only\n");
    if (st->too_big) {
        wh_metrics_outcome(s->cfg.metrics, WH_OUTCOME_REJECTED);
        return reply_text(s, c, st, 413, TOO_BIG_TEXT);
    }
    /* The idle timeout must not close the connection while the admission waits on the API
     * server (that wait has its own deadline); it starts again once the answer is queued. */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    uint64_t deadline_ms =
        s->cfg.admission_timeout_ms ? st->start_us / 1000u + s->cfg.admission_timeout_ms : 0;
    struct wh_admit_reply ar;
    wh_admit_by(s->cfg.admit, st->body ? st->body : "", st->len, deadline_ms, &ar);
    enum MHD_Result r;
    if (ar.body)
        r = reply(s, c, st, ar.status, ar.content_type, TAKE_PTR(ar.body), ar.len, true);
    else
        r = reply_text(s, c, st, 500, "out of memory\n");
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, s->cfg.idle_timeout_s);
    wh_metrics_latency(s->cfg.metrics, gs_now_us() - st->start_us);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls, bool health)
{
    struct wh_server *s = cls;
    struct req_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof(*st));
        if (!st)
            return MHD_NO;
        st->route = route_of(url);
        st->health = health;
        st->start_us = gs_now_us();
        *con_cls = st;
        if (health && st->route == WH_ROUTE_MUTATE)
            st->route = WH_ROUTE_OTHER; /* the probe listener serves probes and metrics only */
        if (st->route == WH_ROUTE_MUTATE && strcmp(method, "POST") == 0)
            return check_mutate_headers(s, c, st);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (st->responded || st->too_big || st->route != WH_ROUTE_MUTATE)
            return MHD_YES;
        if (n > WH_REVIEW_MAX_BYTES - st->len) {
            st->too_big = true;
            free(st->body);
            st->body = NULL;
            st->len = st->cap = 0;
            return MHD_YES;
        }
        if (st->len + n > st->cap) {
            size_t cap = GS_MAX(st->cap * 2, st->len + n);
            cap = GS_MIN(cap, (size_t)WH_REVIEW_MAX_BYTES);
            char *nb = realloc(st->body, cap);
            if (!nb)
                return MHD_NO;
            st->body = nb, st->cap = cap;
        }
        memcpy(st->body + st->len, upload_data, n);
        st->len += n;
        return MHD_YES;
    }
    if (st->responded)
        return MHD_YES;

    bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    switch (st->route) {
    case WH_ROUTE_MUTATE:
        return handle_mutate(s, c, st, method);
    case WH_ROUTE_HEALTHZ:
        if (!is_get)
            return reply_text(s, c, st, 405, "GET only\n");
        return reply_text(s, c, st, 200, "ok\n");
    case WH_ROUTE_READYZ:
        if (!is_get)
            return reply_text(s, c, st, 405, "GET only\n");
        if (atomic_load(&s->draining))
            return reply_text(s, c, st, 500, "shutting down\n");
        return reply_text(s, c, st, 200, "ok\n");
    case WH_ROUTE_METRICS: {
        if (!is_get)
            return reply_text(s, c, st, 405, "GET only\n");
        struct wh_metrics_extra extra = {0};
        if (s->cfg.extra_metrics)
            s->cfg.extra_metrics(s->cfg.extra_user, &extra);
        size_t len;
        char *text = wh_metrics_render(s->cfg.metrics, s->cfg.extra_metrics ? &extra : NULL, &len);
        if (!text)
            return reply_text(s, c, st, 500, "out of memory\n");
        return reply(s, c, st, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, true);
    }
    default:
        return reply_text(s, c, st, 404, "not found\n");
    }
}

static enum MHD_Result handle_main(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    return handle(cls, c, url, method, version, upload_data, upload_data_size, con_cls, false);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct req_state *st = *con_cls;
    if (st) {
        free(st->body);
        free(st);
        *con_cls = NULL;
    }
}

/* Open connections of the HTTPS listener (a gauge on /metrics). */
static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    struct wh_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add_explicit(&s->cfg.metrics->connections_open, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->cfg.metrics->connections_total, 1, memory_order_relaxed);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        atomic_fetch_sub_explicit(&s->cfg.metrics->connections_open, 1, memory_order_relaxed);
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap) GS_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512], q[600];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    /* TLS handshake failures (plain HTTP, scanners) and refused connections (limits) are
     * routine: debug only. */
    gs_debug("http server", "detail=%s", gs_log_quote(q, sizeof(q), msg));
}

/*
 * The probe listener: one thread, poll(), no libmicrohttpd. Slow clients are the threat here
 * (a client that dribbles one header byte a second keeps an idle timeout from ever firing, and
 * a per-address limit also shuts out kubelet when the attacker shares its address, e.g. a
 * hostNetwork pod). So each connection has an absolute deadline from its accept
 * (WH_HEALTH_REQUEST_DEADLINE_MS) for the whole request and answer, and when every slot is
 * taken a new connection evicts the oldest one: a probe, which sends its request at once, is
 * the youngest connection and is answered within its first poll round.
 */
struct probe_conn {
    int fd;
    uint64_t since_ms;
    uint64_t seq; /* accept order: the smallest is evicted first */
    size_t len;   /* request bytes read */
    char *out;    /* answer being written (malloc'd), NULL while reading */
    size_t out_len, out_off;
    char buf[WH_HEALTH_REQUEST_MAX];
};

struct probe_srv {
    struct wh_server *s;
    int lfd, wake[2];
    pthread_t thread;
    uint64_t seq;
    size_t n;
    struct probe_conn conns[WH_HEALTH_CONNECTION_LIMIT];
};

static uint64_t now_ms(void)
{
    return gs_now_ns() / 1000000u;
}

static void probe_close(struct probe_srv *ps, size_t i)
{
    close(ps->conns[i].fd);
    free(ps->conns[i].out);
    ps->conns[i] = ps->conns[--ps->n];
}

/* The answer to one probe request (what the libmicrohttpd handler answers on these routes). */
static void probe_answer(struct wh_server *s, struct probe_conn *c)
{
    char method[16] = "", path[256] = "";
    c->buf[c->len < sizeof(c->buf) ? c->len : sizeof(c->buf) - 1] = '\0';
    if (sscanf(c->buf, "%15s %255s", method, path) != 2)
        method[0] = '\0';
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    bool get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0;
    enum wh_route route = route_of(path);
    unsigned status = 200;
    const char *type = "text/plain; charset=utf-8", *text = NULL;
    char *body = NULL;
    size_t blen = 0;
    if (!method[0]) {
        status = 400, text = "bad request\n";
    } else if (route == WH_ROUTE_MUTATE || route == WH_ROUTE_OTHER) {
        status = 404, text = "not found\n";
    } else if (!get && !head) {
        status = 405, text = "GET only\n";
    } else if (route == WH_ROUTE_HEALTHZ) {
        text = "ok\n";
    } else if (route == WH_ROUTE_READYZ) {
        bool d = atomic_load(&s->draining);
        status = d ? 500 : 200, text = d ? "shutting down\n" : "ok\n";
    } else {
        struct wh_metrics_extra extra = {0};
        if (s->cfg.extra_metrics)
            s->cfg.extra_metrics(s->cfg.extra_user, &extra);
        body = wh_metrics_render(s->cfg.metrics, s->cfg.extra_metrics ? &extra : NULL, &blen);
        if (body)
            type = "text/plain; version=0.0.4; charset=utf-8";
        else
            status = 500, text = "out of memory\n";
    }
    if (text)
        blen = strlen(text);
    wh_metrics_request(s->cfg.metrics, route, status);
    char head_buf[256];
    int hl = snprintf(head_buf, sizeof(head_buf),
                      "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      status,
                      status == 200   ? "OK"
                      : status == 400 ? "Bad Request"
                      : status == 404 ? "Not Found"
                      : status == 405 ? "Method Not Allowed"
                                      : "Internal Server Error",
                      type, blen);
    size_t bl = head ? 0 : blen;
    c->out = malloc((size_t)hl + bl + 1);
    if (c->out) {
        memcpy(c->out, head_buf, (size_t)hl);
        if (bl)
            memcpy(c->out + hl, body ? body : text, bl);
        c->out_len = (size_t)hl + bl, c->out_off = 0;
    }
    free(body);
}

/* Read or write what is ready: false when the connection is done (answered, closed, failed). */
static bool probe_io(struct probe_srv *ps, struct probe_conn *c)
{
    if (!c->out) {
        ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            return false;
        if (r > 0)
            c->len += (size_t)r;
        c->buf[c->len] = '\0';
        if (!strstr(c->buf, "\r\n\r\n") && !strstr(c->buf, "\n\n")) {
            if (c->len + 1 < sizeof(c->buf))
                return true;
            static const char big[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                                      "Content-Length: 0\r\nConnection: close\r\n\r\n";
            (void)!send(c->fd, big, sizeof(big) - 1, MSG_NOSIGNAL);
            return false;
        }
        probe_answer(ps->s, c);
        if (!c->out)
            return false;
    }
    ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (w < 0)
        return errno == EAGAIN || errno == EINTR;
    c->out_off += (size_t)w;
    return c->out_off < c->out_len;
}

/* Accept at most a quarter of the slots per poll round: a connection accepted in this round
 * gets at least three rounds (its request read) before a flood can evict it. */
static void probe_accept(struct probe_srv *ps)
{
    for (unsigned k = 0; k < WH_HEALTH_CONNECTION_LIMIT / 4; k++) {
        int fd = accept4(ps->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: the next poll round retries */
        if (ps->n == WH_HEALTH_CONNECTION_LIMIT) { /* every slot taken: evict the oldest */
            size_t old = 0;
            for (size_t i = 1; i < ps->n; i++)
                if (ps->conns[i].seq < ps->conns[old].seq)
                    old = i;
            probe_close(ps, old);
            gs_debug("probe connection evicted", "reason=%s", "every slot taken");
        }
        struct probe_conn *c = &ps->conns[ps->n++];
        c->fd = fd, c->since_ms = now_ms(), c->seq = ps->seq++, c->len = 0, c->out = NULL;
    }
}

static void *probe_loop(void *arg)
{
    struct probe_srv *ps = arg;
    struct pollfd pfd[WH_HEALTH_CONNECTION_LIMIT + 2];
    for (;;) {
        uint64_t now = now_ms();
        for (size_t i = 0; i < ps->n;) /* absolute deadlines: slow clients go */
            if (now - ps->conns[i].since_ms >= WH_HEALTH_REQUEST_DEADLINE_MS)
                probe_close(ps, i);
            else
                i++;
        int timeout = -1;
        for (size_t i = 0; i < ps->n; i++) {
            int left = (int)(ps->conns[i].since_ms + WH_HEALTH_REQUEST_DEADLINE_MS - now);
            if (timeout < 0 || left < timeout)
                timeout = left;
        }
        pfd[0] = (struct pollfd){.fd = ps->wake[0], .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = ps->lfd, .events = POLLIN};
        size_t n = ps->n;
        for (size_t i = 0; i < n; i++)
            pfd[i + 2] = (struct pollfd){.fd = ps->conns[i].fd,
                                         .events = ps->conns[i].out ? POLLOUT : POLLIN};
        if (poll(pfd, n + 2, timeout) < 0 && errno != EINTR)
            continue;
        if (pfd[0].revents)
            break;
        /* Connections first (newest last: eviction below may reorder the array). */
        for (size_t i = n; i-- > 0;)
            if (pfd[i + 2].revents && !probe_io(ps, &ps->conns[i]))
                probe_close(ps, i);
        if (pfd[1].revents)
            probe_accept(ps);
    }
    while (ps->n)
        probe_close(ps, ps->n - 1);
    return NULL;
}

static struct probe_srv *start_health(struct wh_server *s, struct gs_error *err)
{
    struct sockaddr_storage addr;
    if (gs_listen_parse("--health-listen", s->cfg.health_listen, &addr, err) < 0)
        return NULL;
    struct probe_srv *ps = calloc(1, sizeof(*ps));
    if (!ps) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    ps->s = s;
    ps->wake[0] = ps->wake[1] = -1;
    int one = 1;
    socklen_t alen =
        addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    ps->lfd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ps->lfd < 0 || setsockopt(ps->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(ps->lfd, (struct sockaddr *)&addr, alen) < 0 || listen(ps->lfd, 128) < 0 ||
        pipe2(ps->wake, O_CLOEXEC | O_NONBLOCK) < 0 ||
        pthread_create(&ps->thread, NULL, probe_loop, ps) != 0) {
        gs_error_set(err, -EADDRNOTAVAIL,
                     "cannot serve HTTP probes on %s (address in use or not available?)",
                     s->cfg.health_listen);
        if (ps->lfd >= 0)
            close(ps->lfd);
        if (ps->wake[0] >= 0)
            close(ps->wake[0]), close(ps->wake[1]);
        free(ps);
        return NULL;
    }
    return ps;
}

static void stop_health(struct probe_srv *ps)
{
    if (!ps)
        return;
    (void)!write(ps->wake[1], "x", 1);
    pthread_join(ps->thread, NULL);
    close(ps->lfd);
    close(ps->wake[0]);
    close(ps->wake[1]);
    free(ps);
}

struct wh_server *wh_server_start(const struct wh_server_config *cfg, struct gs_error *err)
{
    struct sockaddr_storage addr;
    int r = gs_listen_parse("--listen", cfg->listen, &addr, err);
    if (r < 0)
        return NULL;
    struct wh_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    if (!s->cfg.connection_limit)
        s->cfg.connection_limit = 1024;
    if (!s->cfg.per_client_limit)
        s->cfg.per_client_limit = 64;
    if (!s->cfg.idle_timeout_s)
        s->cfg.idle_timeout_s = 10;
    unsigned flags = MHD_USE_TLS | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle_main, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_HTTPS_CERT_CALLBACK,
        gs_tls_retrieve, MHD_OPTION_HTTPS_PRIORITIES,
        s->cfg.tls13_only ? GS_TLS_PRIORITIES_13 : GS_TLS_PRIORITIES, MHD_OPTION_CONNECTION_LIMIT,
        s->cfg.connection_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->cfg.per_client_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.idle_timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
        completed, s, MHD_OPTION_NOTIFY_CONNECTION, connection_event, s,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!s->daemon) {
        gs_error_set(err, -EADDRNOTAVAIL,
                     "cannot serve HTTPS on %s (address in use or not available?)", cfg->listen);
        free(s);
        return NULL;
    }
    if (s->cfg.health_listen && s->cfg.health_listen[0] && !(s->health = start_health(s, err))) {
        MHD_stop_daemon(s->daemon);
        free(s);
        return NULL;
    }
    return s;
}

void wh_server_drain(struct wh_server *s)
{
    if (s)
        atomic_store(&s->draining, true);
}

void wh_server_stop(struct wh_server *s)
{
    if (!s)
        return;
    atomic_store(&s->draining, true);
    stop_health(s->health);
    MHD_stop_daemon(s->daemon);
    free(s);
}
