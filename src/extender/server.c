/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP transport of the extender (see server.h). */
#include "extender/server.h"

#include <errno.h>
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

struct ext_server {
    struct ext_service *svc;
    struct MHD_Daemon *daemon;
};

struct body {
    char *buf;
    size_t len, cap;
    bool too_big;
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
    ext_service_stats(s->svc, &st);
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

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct body *b = *con_cls;
    if (b) {
        free(b->buf);
        free(b);
    }
    *con_cls = NULL;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    struct ext_server *s = cls;
    struct body *b = *con_cls;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (b->too_big || b->len + n > EXT_MAX_BODY) {
            b->too_big = true;
            return MHD_YES;
        }
        if (b->len + n + 1 > b->cap) {
            size_t cap = b->cap ? b->cap : 65536;
            while (cap < b->len + n + 1)
                cap *= 2;
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
    if (b->too_big)
        return gs_httpd_text(c, 413, "request body over 64 MiB\n");
    json_error_t je;
    json_t *args = b->len ? json_loadb(b->buf, b->len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!args) {
        char msg[300];
        snprintf(msg, sizeof(msg), "body is not JSON: %s\n", b->len ? je.text : "empty body");
        size_t l = strlen(msg);
        char *m = strdup(msg);
        return m ? gs_httpd_reply(c, 400, "text/plain; charset=utf-8", m, l, true)
                 : gs_httpd_text(c, 500, "out of memory\n");
    }
    struct gs_error err = {0};
    json_t *out = verb(s->svc, args, &err);
    json_decref(args);
    if (!out) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s\n", err.msg);
        char *m = strdup(msg);
        return m ? gs_httpd_reply(c, 400, "text/plain; charset=utf-8", m, strlen(m), true)
                 : gs_httpd_text(c, 500, "out of memory\n");
    }
    return json_reply(c, 200, out);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) GS_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512], q[600];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t l = strlen(msg);
    if (l && msg[l - 1] == '\n')
        msg[l - 1] = '\0';
    gs_log(GS_LOG_WARN, "http", "error=%s", gs_log_quote(q, sizeof(q), msg));
}

struct ext_server *ext_server_start(struct ext_service *svc, const struct sockaddr_storage *addr,
                                    struct gs_error *err)
{
    struct ext_server *s = calloc(1, sizeof(*s));
    if (!s) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    s->svc = svc;
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
    if (addr->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
                                 mhd_log, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                                 MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_TIMEOUT,
                                 60u, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!s->daemon) {
        free(s);
        gs_error_set(err, -EADDRINUSE, "cannot listen (address in use or not available)");
        return NULL;
    }
    return s;
}

unsigned ext_server_port(const struct ext_server *s)
{
    return gs_httpd_port(s->daemon);
}

void ext_server_stop(struct ext_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
