/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/version.h"
#include "net/httpd.h"
#include "net/server.h"

/* Upper bounds of the latency buckets, in seconds. */
static const double bucket_le[METRICS_BUCKETS] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
                                                  0.05,   0.1,   0.25,  0.5,   1,    5};

void metrics_observe_prepare_ns(struct metrics *m, uint64_t ns)
{
    if (!m)
        return;
    double s = (double)ns / 1e9;
    for (int i = 0; i < METRICS_BUCKETS; i++)
        if (s <= bucket_le[i])
            atomic_fetch_add(&m->latency_bucket[i], 1);
    atomic_fetch_add(&m->latency_count, 1);
    atomic_fetch_add(&m->latency_sum_ns, ns);
}

struct sbuf {
    char *p;
    size_t len, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) GS_PRINTF(2, 3);
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (!b->p)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        char *np = realloc(b->p, b->cap * 2 + (size_t)n);
        if (!np) {
            free(b->p);
            b->p = NULL;
            return;
        }
        b->p = np;
        b->cap = b->cap * 2 + (size_t)n;
    }
}

char *metrics_render(struct metrics *m, const char *driver, const char *node)
{
    struct sbuf b = {.p = malloc(4096), .cap = 4096};
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
#define COUNTER(name, help, val)                                                                   \
    sb_printf(&b,                                                                                  \
              "# HELP " name " " help "\n# TYPE " name " counter\n" name "{driver=\"%s\"} %llu\n", \
              driver, (unsigned long long)(val))
#define GAUGE(name, help, val)                                                                     \
    sb_printf(&b,                                                                                  \
              "# HELP " name " " help "\n# TYPE " name " gauge\n" name "{driver=\"%s\"} %lld\n",   \
              driver, (long long)(val))
    COUNTER("gpuslice_plugin_prepare_total", "Claims prepared successfully.",
            atomic_load(&m->prepare_total));
    COUNTER("gpuslice_plugin_prepare_errors_total", "Claims whose NodePrepareResources failed.",
            atomic_load(&m->prepare_errors));
    COUNTER("gpuslice_plugin_unprepare_total", "Claims unprepared successfully.",
            atomic_load(&m->unprepare_total));
    COUNTER("gpuslice_plugin_unprepare_errors_total", "Claims whose NodeUnprepareResources failed.",
            atomic_load(&m->unprepare_errors));
    sb_printf(&b, "# HELP gpuslice_plugin_prepare_duration_seconds Time to prepare one claim.\n"
                  "# TYPE gpuslice_plugin_prepare_duration_seconds histogram\n");
    for (int i = 0; i < METRICS_BUCKETS; i++)
        sb_printf(&b,
                  "gpuslice_plugin_prepare_duration_seconds_bucket{driver=\"%s\",le=\"%g\"} %llu\n",
                  driver, bucket_le[i], (unsigned long long)atomic_load(&m->latency_bucket[i]));
    unsigned long long count = atomic_load(&m->latency_count);
    sb_printf(&b,
              "gpuslice_plugin_prepare_duration_seconds_bucket{driver=\"%s\",le=\"+Inf\"} %llu\n",
              driver, count);
    sb_printf(&b, "gpuslice_plugin_prepare_duration_seconds_sum{driver=\"%s\"} %.9f\n", driver,
              (double)atomic_load(&m->latency_sum_ns) / 1e9);
    sb_printf(&b, "gpuslice_plugin_prepare_duration_seconds_count{driver=\"%s\"} %llu\n", driver,
              count);
    GAUGE("gpuslice_plugin_devices_published", "Devices in the published ResourceSlices.",
          atomic_load(&m->devices_published));
    GAUGE("gpuslice_plugin_resourceslices_published", "ResourceSlices of this node.",
          atomic_load(&m->slices_published));
    COUNTER("gpuslice_plugin_resourceslice_writes_total", "ResourceSlice creates/updates/deletes.",
            atomic_load(&m->slice_writes));
    COUNTER("gpuslice_plugin_resourceslice_errors_total", "Failed ResourceSlice API calls.",
            atomic_load(&m->slice_errors));
    sb_printf(&b,
              "# HELP gpuslice_plugin_consumable_capacity_gate_off 1 when the API server dropped "
              "the consumable-capacity fields (feature gate DRAConsumableCapacity off).\n"
              "# TYPE gpuslice_plugin_consumable_capacity_gate_off gauge\n"
              "gpuslice_plugin_consumable_capacity_gate_off{driver=\"%s\",gate="
              "\"DRAConsumableCapacity\"} %d\n",
              driver, atomic_load(&m->gate_off));
    GAUGE("gpuslice_plugin_claims_prepared", "Claims prepared on this node (checkpoint entries).",
          atomic_load(&m->claims_prepared));
    COUNTER("gpuslice_plugin_reconcile_cleaned_total", "Claims or files cleaned by reconcile.",
            atomic_load(&m->reconcile_cleaned));
    GAUGE("gpuslice_plugin_registered", "1 when kubelet accepted the registration.",
          atomic_load(&m->registered));
    char build_info[384];
    gs_version_metric(build_info, sizeof(build_info));
    sb_printf(&b, "%s", build_info);
    (void)node;
#undef COUNTER
#undef GAUGE
    return b.p;
}

struct metrics_http {
    struct gs_net_server *d;
    struct metrics *m;
    char driver[256];
    char node[256];
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **con_cls)
{
    struct metrics_http *h = cls;
    unsigned status = MHD_HTTP_OK;
    char *body = NULL;
    const char *ctype = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        body = strdup("method not allowed\n");
    } else if (strcmp(url, "/metrics") == 0) {
        body = metrics_render(h->m, h->driver, h->node);
        ctype = "text/plain; version=0.0.4; charset=utf-8";
    } else if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0) {
        bool ok = atomic_load(&h->m->serving);
        status = ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        body = strdup(ok ? "ok\n" : "gRPC servers not running\n");
    } else if (strcmp(url, "/readyz") == 0) {
        bool serving = atomic_load(&h->m->serving), reg = atomic_load(&h->m->registered),
             pub = atomic_load(&h->m->published_once);
        bool ok = serving && reg && pub;
        status = ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        char buf[256];
        snprintf(buf, sizeof(buf),
                 ok ? "ok\n" : "not ready: serving=%d registered=%d published=%d\n", serving, reg,
                 pub);
        body = strdup(buf);
    } else {
        status = MHD_HTTP_NOT_FOUND;
        body = strdup("not found\n");
    }
    if (!body)
        return MHD_NO;
    return gs_httpd_reply(conn, status, ctype, body, strlen(body), true);
}

static int parse_addr(const char *addr, struct sockaddr_in *sa, struct gs_error *err)
{
    char host[256] = "";
    const char *colon = strrchr(addr, ':');
    const char *port_s = colon ? colon + 1 : addr;
    if (colon) {
        size_t hl = (size_t)(colon - addr);
        if (hl >= sizeof(host))
            return gs_error_set(err, -EINVAL, "address %s: host too long", addr);
        memcpy(host, addr, hl);
        host[hl] = '\0';
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || port < 0 || port > 65535)
        return gs_error_set(err, -EINVAL, "address \"%s\": port must be 0..65535", addr);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!*host || strcmp(host, "0.0.0.0") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return gs_error_set(err, -EINVAL, "address \"%s\": host must be an IPv4 address", addr);
    return (int)port;
}

struct metrics_http *metrics_http_start(struct metrics *m, const char *addr, const char *driver,
                                        const char *node, const struct gs_net_budget *budget,
                                        struct gs_error *err)
{
    struct sockaddr_in sa;
    int port = parse_addr(addr, &sa, err);
    if (port <= 0)
        return NULL;
    struct metrics_http *h = calloc(1, sizeof(*h));
    if (!h) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    h->m = m;
    snprintf(h->driver, sizeof(h->driver), "%s", driver);
    snprintf(h->node, sizeof(h->node), "%s", node);
    struct gs_net_server_config c = {.what = budget ? "--metrics-addr" : "--healthcheck-port",
                                     .handler = answer,
                                     .handler_cls = h,
                                     .budget = budget ? *budget : gs_net_probe_budget(0)};
    memcpy(&c.addr, &sa, sizeof(sa));
    h->d = gs_net_server_start(&c, err);
    if (!h->d) {
        free(h);
        return NULL;
    }
    return h;
}

void metrics_http_stop(struct metrics_http *h)
{
    if (!h)
        return;
    gs_net_server_stop(h->d);
    free(h);
}
