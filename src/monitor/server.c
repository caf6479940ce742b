/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/macros.h"
#include "net/httpd.h"
#include "net/listen.h"
#include "net/server.h"
#include "net/tls.h"

struct mon_server {
    struct mon_server_config cfg;
    struct gs_net_server *daemon, *probe;
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

/* The numbers of a listener: the option table's, else the server layer's defaults. */
static struct gs_net_server_config listener(const char *what, MHD_AccessHandlerCallback handler,
                                            void *cls)
{
    return (struct gs_net_server_config){.what = what, .handler = handler, .handler_cls = cls};
}

struct mon_server *mon_server_start(const struct mon_server_config *cfg, struct gs_error *err)
{
    struct gs_net_server_config main = listener("--listen", handle, NULL);
    if (gs_listen_parse("--listen", cfg->listen, &main.addr, err) < 0)
        return NULL;
    struct gs_net_server_config probe = listener("--probe-listen", handle_probe, &probe_cls);
    bool with_probe = cfg->probe_listen && cfg->probe_listen[0];
    if (with_probe && gs_listen_parse("--probe-listen", cfg->probe_listen, &probe.addr, err) < 0)
        return NULL;
    struct mon_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    main.handler_cls = s;
    main.budget = (struct gs_net_budget){
        .max_connections = cfg->connection_limit ? cfg->connection_limit : 64,
        .max_per_client = cfg->per_client_limit ? cfg->per_client_limit : 8,
        .header_timeout_ms = cfg->header_timeout_ms,
        .idle_timeout_s = cfg->idle_timeout_s ? cfg->idle_timeout_s : 10,
    };
    if (cfg->tls) {
        main.tls_cert = gs_tls_retrieve;
        main.tls_priorities = GS_TLS_PRIORITIES;
    }
    s->daemon = gs_net_server_start(&main, err);
    if (s->daemon && with_probe) {
        probe_cls.s = s; /* one server per process */
        probe.budget = gs_net_probe_budget(cfg->probe_connection_limit);
        s->probe = gs_net_server_start(&probe, err);
        if (!s->probe) {
            gs_net_server_stop(s->daemon);
            s->daemon = NULL;
        }
    }
    if (!s->daemon) {
        free(s);
        return NULL;
    }
    return s;
}

unsigned mon_server_port(const struct mon_server *s)
{
    return gs_net_server_port(s->daemon);
}

unsigned mon_server_probe_port(const struct mon_server *s)
{
    return s->probe ? gs_net_server_port(s->probe) : 0;
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
    gs_net_server_stop(s->probe);
    gs_net_server_stop(s->daemon);
    free(s);
}
