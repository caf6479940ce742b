/* SPDX-License-Identifier: Apache-2.0 */
/* The option table of gpuslice-webhook. */
#include "webhook/options.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/macros.h"
#include "webhook/shape.h"

enum opt_type { OPT_STRING, OPT_INT, OPT_BOOL };

struct opt {
    const char *flag; /* without the leading "--" */
    const char *env;
    enum opt_type type;
    size_t offset;
    const char *def;
    int64_t min, max;
    const char *help;
};

#define S(field) OPT_STRING, offsetof(struct wh_options, field)
#define I(field) OPT_INT, offsetof(struct wh_options, field)
#define B(field) OPT_BOOL, offsetof(struct wh_options, field)

static const struct opt table[] = {
    {"listen", "GS_WEBHOOK_LISTEN", S(listen), ":8443", 0, 0,
     "HTTPS address, [host]:port (empty host = all IPv4 addresses)"},
    {"tls-cert-file", "GS_WEBHOOK_TLS_CERT_FILE", S(tls_cert_file),
     "/etc/gpuslice-webhook/tls/tls.crt", 0, 0,
     "PEM certificate chain; re-read when the file changes"},
    {"tls-key-file", "GS_WEBHOOK_TLS_KEY_FILE", S(tls_key_file),
     "/etc/gpuslice-webhook/tls/tls.key", 0, 0, "PEM private key; re-read when the file changes"},
    {"kubeconfig", "KUBECONFIG", S(kubeconfig), "", 0, 0,
     "kubeconfig file (http:// or https:// server); empty = in-cluster service account"},
    {"device-class", "GS_WEBHOOK_DEVICE_CLASS", S(device_class), WH_DEFAULT_DEVICE_CLASS, 0, 0,
     "DeviceClass of the generated requests"},
    {"driver", "GS_WEBHOOK_DRIVER", S(driver), WH_DEFAULT_DRIVER, 0, 0,
     "DRA driver name: ResourceSlices to read, attribute domain of selectors"},
    {"resource-name", "GS_WEBHOOK_RESOURCE_NAME", S(resource_name), WH_DEFAULT_RES_GPU, 0, 0,
     "legacy resource: number of GPUs"},
    {"resource-mem", "GS_WEBHOOK_RESOURCE_MEM", S(resource_mem), WH_DEFAULT_RES_MEM, 0, 0,
     "legacy resource: GPU memory in MiB"},
    {"resource-mem-percentage", "GS_WEBHOOK_RESOURCE_MEM_PERCENTAGE", S(resource_mem_percentage),
     WH_DEFAULT_RES_MEM_PCT, 0, 0, "legacy resource: percent of a GPU's memory"},
    {"resource-cores", "GS_WEBHOOK_RESOURCE_CORES", S(resource_cores), WH_DEFAULT_RES_CORES, 0, 0,
     "legacy resource: percent of a GPU's compute"},
    {"cert-check-interval-ms", "GS_WEBHOOK_CERT_CHECK_INTERVAL_MS", I(cert_check_interval_ms),
     "1000", 10, 3600000, "how often (at most) the certificate files are checked for changes"},
    {"slice-cache-ttl-ms", "GS_WEBHOOK_SLICE_CACHE_TTL_MS", I(slice_cache_ttl_ms), "30000", 1,
     86400000, "how long the GPU memory sizes read from ResourceSlices are reused"},
    {"class-cache-ttl-ms", "GS_WEBHOOK_CLASS_CACHE_TTL_MS", I(class_cache_ttl_ms), "60000", 1,
     86400000, "how long the DeviceClass list (extendedResourceName) is reused"},
    {"template-cache-ttl-ms", "GS_WEBHOOK_TEMPLATE_CACHE_TTL_MS", I(template_cache_ttl_ms),
     "300000", 1, 86400000, "how long a ResourceClaimTemplate known to exist is not re-created"},
    {"api-timeout-ms", "GS_WEBHOOK_API_TIMEOUT_MS", I(api_timeout_ms), "3000", 100, 60000,
     "timeout of one API server request"},
    {"kube-qps", "GS_WEBHOOK_KUBE_QPS", I(kube_qps), "50", 1, 100000,
     "API server requests per second (token bucket)"},
    {"kube-burst", "GS_WEBHOOK_KUBE_BURST", I(kube_burst), "100", 1, 100000,
     "API server request burst"},
    {"max-connections", "GS_WEBHOOK_MAX_CONNECTIONS", I(max_connections), "1024", 1, 65536,
     "concurrent HTTPS connections (one thread each)"},
    {"log-level", "GS_LOG_LEVEL", S(log_level), "info", 0, 0, "error, warn, info or debug"},
    {"help", NULL, B(help), "false", 0, 0, "print this help and exit"},
    {"print-config", NULL, B(print_config), "false", 0, 0,
     "print the effective configuration and exit"},
};

static int set_value(struct wh_options *o, const struct opt *op, const char *value,
                     const char *source, struct gs_error *err)
{
    void *p = (char *)o + op->offset;
    switch (op->type) {
    case OPT_STRING:
        *(const char **)p = value;
        return 0;
    case OPT_BOOL:
        if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
            *(bool *)p = true;
        else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
            *(bool *)p = false;
        else
            return gs_error_set(err, -EINVAL, "%s --%s: \"%s\" is not true or false", source,
                                op->flag, value);
        return 0;
    case OPT_INT: {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno)
            return gs_error_set(err, -EINVAL, "%s --%s: \"%s\" is not an integer", source,
                                op->flag, value);
        if (v < op->min || v > op->max)
            return gs_error_set(err, -EINVAL, "%s --%s: %lld is outside %" PRId64 "-%" PRId64,
                                source, op->flag, v, op->min, op->max);
        *(int64_t *)p = v;
        return 0;
    }
    }
    return -EINVAL;
}

int wh_options_parse(struct wh_options *o, int argc, char **argv, struct gs_error *err)
{
    int r;
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++)
        if ((r = set_value(o, &table[i], table[i].def, "default", err)) < 0)
            return r;
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        const char *v = table[i].env ? getenv(table[i].env) : NULL;
        if (v && (r = set_value(o, &table[i], v, table[i].env, err)) < 0)
            return r;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strncmp(arg, "--", 2) != 0)
            return gs_error_set(err, -EINVAL, "unexpected argument \"%s\" (see --help)", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *op = NULL;
        for (size_t i = 0; i < GS_ARRAY_SIZE(table) && !op; i++)
            if (strlen(table[i].flag) == nlen && strncmp(table[i].flag, name, nlen) == 0)
                op = &table[i];
        if (!op)
            return gs_error_set(err, -EINVAL, "unknown option \"--%.*s\" (see --help)",
                                (int)GS_MIN(nlen, 64), name);
        const char *value = eq ? eq + 1 : NULL;
        if (!value && op->type == OPT_BOOL)
            value = "true";
        if (!value) {
            if (a + 1 >= argc)
                return gs_error_set(err, -EINVAL, "option --%s needs a value", op->flag);
            value = argv[++a];
        }
        if ((r = set_value(o, op, value, "option", err)) < 0)
            return r;
    }
    const char *names[] = {o->device_class, o->driver, o->resource_name, o->resource_mem,
                           o->resource_mem_percentage, o->resource_cores};
    for (size_t i = 0; i < GS_ARRAY_SIZE(names); i++)
        if (!names[i][0])
            return gs_error_set(err, -EINVAL,
                                "--device-class, --driver and the --resource-* names must not "
                                "be empty");
    return 0;
}

void wh_options_help(FILE *f, const char *argv0)
{
    fprintf(f,
            "Usage: %s [options]\n"
            "Mutating admission webhook: pods asking for legacy nvidia.com/gpu* resources get\n"
            "DRA claims from ResourceClaimTemplates instead. Serves HTTPS /mutate, /healthz,\n"
            "/readyz and /metrics.\n\nOptions (environment variable in brackets):\n",
            argv0);
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        const struct opt *op = &table[i];
        fprintf(f, "  --%-26s %s", op->flag, op->help);
        if (op->type != OPT_BOOL)
            fprintf(f, " (default \"%s\")", op->def);
        if (op->env)
            fprintf(f, " [%s]", op->env);
        fputc('\n', f);
    }
}

void wh_options_print(FILE *f, const struct wh_options *o)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(table); i++) {
        const struct opt *op = &table[i];
        const void *p = (const char *)o + op->offset;
        if (op->type == OPT_BOOL)
            continue;
        if (op->type == OPT_STRING)
            fprintf(f, "%s = \"%s\"\n", op->flag, *(const char *const *)p);
        else
            fprintf(f, "%s = %" PRId64 "\n", op->flag, *(const int64_t *)p);
    }
}
