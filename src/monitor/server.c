/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/macros.h"
#include "net/httpd.h"
#include "net/listen.h"
#include "net/tls.h"

struct mon_server {
    struct mon_server_config cfg;
    struct MHD_Daemon *daemon, *probe;
    struct mon_scrape_stats stats;
    atomic_bool draining;
    atomic_bool scrape_failed; /* the last /metrics could not be built */
};

/* The probe listener's handler gets this (a distinct cls) instead of the server. */
struct probe_cls {
    struct mon_server *s;
};
static struct probe_cls probe_cls;

static enum MHD_Result health(struct mon_server *s, struct MHD_Connection *c, const char *url,
                              bool get);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    struct mon_server *s = cls;
    if (!*con_cls) { /* first call: headers only */
        *con_cls = s;
        return MHD_YES;
    }
    if (*upload_data_size) { /* no route takes a body: drop it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/metrics") == 0) {
        if (!get)
            return gs_httpd_text(c, 405, "GET only\n");
        const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
        enum mon_format fmt = mon_expo_negotiate(accept);
        char *body = NULL;
        size_t len = 0;
        int r = mon_collect(s->cfg.catalog, &s->cfg.collect, &s->stats, fmt, &body, &len);
        if (r < 0) {
            char q[128];
            gs_error_log("scrape failed", "claims=%zu error=%s", s->cfg.catalog->n_claims,
                         gs_log_quote(q, sizeof(q), gs_strerror(r)));
            atomic_store(&s->scrape_failed, true);
            return gs_httpd_text(c, 500, "cannot build the exposition (see the monitor's log)\n");
        }
        atomic_store(&s->scrape_failed, false);
        enum MHD_Result ret = gs_httpd_reply(
            c, 200,
            fmt == MON_FORMAT_OPENMETRICS ? MON_CONTENT_TYPE_OPENMETRICS : MON_CONTENT_TYPE_TEXT,
            body, len, true);
        if (ret != MHD_YES) {
            gs_error_log("scrape not sent", "bytes=%zu", len);
            atomic_store(&s->scrape_failed, true);
        }
        return ret;
    }
    return health(s, c, url, get);
}

static enum MHD_Result health(struct mon_server *s, struct MHD_Connection *c, const char *url,
                              bool get)
{
    if (strcmp(url, "/healthz") == 0)
        return get ? gs_httpd_text(c, 200, "ok\n") : gs_httpd_text(c, 405, "GET only\n");
    if (strcmp(url, "/readyz") == 0) {
        if (!get)
            return gs_httpd_text(c, 405, "GET only\n");
        if (atomic_load(&s->draining))
            return gs_httpd_text(c, 503, "shutting down\n");
        if (!atomic_load(&s->cfg.catalog->ready))
            return gs_httpd_text(c, 503, "first refresh not completed\n");
        if (atomic_load(&s->scrape_failed))
            return gs_httpd_text(c, 503, "the last /metrics could not be built (see the log)\n");
        return gs_httpd_text(c, 200, "ok\n");
    }
    return gs_httpd_text(c, 404, "not found: /metrics, /healthz, /readyz\n");
}

static enum MHD_Result handle_probe(void *cls, struct MHD_Connection *c, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    struct probe_cls *p = cls;
    if (!*con_cls) {
        *con_cls = p;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/healthz") != 0 && strcmp(url, "/readyz") != 0)
        return gs_httpd_text(c, 404, "not found: /healthz, /readyz (probe listener)\n");
    return health(p->s, c, url, get);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) GS_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512], q[600];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    gs_debug("http server", "detail=%s", gs_log_quote(q, sizeof(q), msg));
}

struct mon_server *mon_server_start(const struct mon_server_config *cfg, struct gs_error *err)
{
    struct sockaddr_storage addr;
    if (gs_listen_parse("--listen", cfg->listen, &addr, err) < 0)
        return NULL;
    struct mon_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    /* poll(), not select(): a connection's descriptor may lie past FD_SETSIZE. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned limit = cfg->connection_limit ? cfg->connection_limit : 64;
    unsigned per_ip = cfg->per_client_limit ? cfg->per_client_limit : 8;
    unsigned idle = cfg->idle_timeout_s ? cfg->idle_timeout_s : 10;
    if (cfg->tls)
        s->daemon = MHD_start_daemon(
            flags | MHD_USE_TLS, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_HTTPS_CERT_CALLBACK,
            gs_tls_retrieve, MHD_OPTION_HTTPS_PRIORITIES, GS_TLS_PRIORITIES,
            MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
            MHD_OPTION_CONNECTION_TIMEOUT, idle, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
            MHD_OPTION_END);
    else
        s->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, limit,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_CONNECTION_TIMEOUT, idle,
            MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (s->daemon && cfg->probe_listen && cfg->probe_listen[0]) {
        struct sockaddr_storage pa;
        if (gs_listen_parse("--probe-listen", cfg->probe_listen, &pa, err) < 0) {
            MHD_stop_daemon(s->daemon);
            free(s);
            return NULL;
        }
        probe_cls.s = s; /* one server per process */
        unsigned pflags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                          MHD_USE_POLL | MHD_USE_ERROR_LOG;
        if (pa.ss_family == AF_INET6)
            pflags |= MHD_USE_IPv6;
        s->probe = MHD_start_daemon(
            pflags, 0, NULL, NULL, handle_probe, &probe_cls, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&pa, MHD_OPTION_CONNECTION_LIMIT, 16u,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, 4u, MHD_OPTION_CONNECTION_TIMEOUT, 5u,
            MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
        if (!s->probe) {
            gs_error_set(err, -EADDRNOTAVAIL, "cannot serve probes on %s", cfg->probe_listen);
            MHD_stop_daemon(s->daemon);
            free(s);
            return NULL;
        }
    }
    if (!s->daemon) {
        gs_error_set(err, -EADDRNOTAVAIL, "cannot serve on %s (address in use or not available?)",
                     cfg->listen);
        free(s);
        return NULL;
    }
    return s;
}

unsigned mon_server_port(const struct mon_server *s)
{
    return gs_httpd_port(s->daemon);
}

unsigned mon_server_probe_port(const struct mon_server *s)
{
    return s->probe ? gs_httpd_port(s->probe) : 0;
}

void mon_server_drain(struct mon_server *s)
{
    if (s)
        atomic_store(&s->draining, true);
}

void mon_server_stop(struct mon_server *s)
{
    if (!s)
        return;
    atomic_store(&s->draining, true);
    if (s->probe)
        MHD_stop_daemon(s->probe);
    MHD_stop_daemon(s->daemon);
    free(s);
}
