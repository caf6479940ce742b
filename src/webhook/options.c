/* SPDX-License-Identifier: Apache-2.0 */
/* The option table of gpuslice-webhook. */
#include "webhook/options.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "base/macros.h"
#include "webhook/shape.h"
#include "webhook/vendor.h"

#define OFF(f) offsetof(struct wh_options, f)

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const modes[] = {"dra", "legacy", NULL};             /* enum wh_mode order */
static const char *const type_matches[] = {"substring", "exact", NULL}; /* enum wh_type_match */
static const char *const tls_versions[] = {"1.2", "1.3", NULL};

static const struct gs_option options[] = {
    {.name = "mode",
     .env = "GPUSLICE_WEBHOOK_MODE",
     .type = GS_OPT_ENUM,
     .choices = modes,
     .def = "dra",
     .offset = OFF(mode),
     .help = "dra: translate legacy resources to ResourceClaimTemplates; legacy: keep them and "
             "route the pod to the scheduler extender (--scheduler-name) with HAMi's defaults. "
             "Refuses to start where the other mode's objects exist"},
    {.name = "scheduler-name",
     .env = "GPUSLICE_WEBHOOK_SCHEDULER_NAME",
     .type = GS_OPT_STRING,
     .def = "hami-scheduler",
     .offset = OFF(scheduler_name),
     .help = "legacy mode: schedulerName given to pods with GPU resources"},
    {.name = "default-gpu",
     .env = "GPUSLICE_WEBHOOK_DEFAULT_GPU",
     .type = GS_OPT_INT,
     .def = "1",
     .min = "0",
     .max = "32",
     .offset = OFF(default_gpu),
     .help = "GPUs for a container asking memory or cores without a count (HAMi defaultGPUNum; "
             "0 = such a container asks for no GPU and, in DRA mode, is left as it is, as "
             "HAMi-DRA does)"},
    {.name = "default-gpumem",
     .env = "GPUSLICE_WEBHOOK_DEFAULT_GPUMEM",
     .type = GS_OPT_INT,
     .def = "0",
     .min = "0",
     .max = "16777216",
     .offset = OFF(default_gpumem),
     .help = "legacy mode: MiB for a container asking GPUs without memory (HAMi defaultMem; 0 = "
             "the whole memory: gpumem-percentage 100)"},
    {.name = "default-gpucores",
     .env = "GPUSLICE_WEBHOOK_DEFAULT_GPUCORES",
     .type = GS_OPT_INT,
     .def = "0",
     .min = "0",
     .max = "100",
     .offset = OFF(default_gpucores),
     .help = "legacy mode: percent of compute for a container asking GPUs without cores (HAMi "
             "defaultCores; 100 = exclusive GPUs, 0 = no default)"},
    {.name = "listen",
     .env = "GPUSLICE_WEBHOOK_LISTEN",
     .type = GS_OPT_STRING,
     .def = ":8443",
     .metavar = "[HOST]:PORT",
     .offset = OFF(listen),
     .help = "HTTPS address (empty host = all IPv4 addresses)"},
    {.name = "tls-cert-file",
     .env = "GPUSLICE_WEBHOOK_TLS_CERT_FILE",
     .type = GS_OPT_STRING,
     .def = "/etc/gpuslice-webhook/tls/tls.crt",
     .metavar = "FILE",
     .offset = OFF(tls_cert_file),
     .help = "PEM certificate chain, re-read when the file changes"},
    {.name = "tls-key-file",
     .env = "GPUSLICE_WEBHOOK_TLS_KEY_FILE",
     .type = GS_OPT_STRING,
     .def = "/etc/gpuslice-webhook/tls/tls.key",
     .metavar = "FILE",
     .offset = OFF(tls_key_file),
     .help = "PEM private key, re-read when the file changes"},
    {.name = "kubeconfig",
     .env = "KUBECONFIG",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(kubeconfig),
     .help = "kubeconfig (http:// or https:// server); unset: in-cluster"},
    {.name = "device-class",
     .env = "GPUSLICE_WEBHOOK_DEVICE_CLASS",
     .type = GS_OPT_STRING,
     .def = WH_DEFAULT_DEVICE_CLASS,
     .offset = OFF(device_class),
     .help = "DeviceClass of the generated requests"},
    {.name = "driver",
     .env = "GPUSLICE_WEBHOOK_DRIVER",
     .type = GS_OPT_STRING,
     .def = WH_DEFAULT_DRIVER,
     .offset = OFF(driver),
     .help = "DRA driver: ResourceSlices read, attribute domain of the selectors"},
    {.name = "resource-name",
     .env = "GPUSLICE_WEBHOOK_RESOURCE_NAME",
     .type = GS_OPT_STRING,
     .def = WH_DEFAULT_RES_GPU,
     .offset = OFF(resource_name),
     .help = "legacy resource: number of GPUs"},
    {.name = "resource-mem",
     .env = "GPUSLICE_WEBHOOK_RESOURCE_MEM",
     .type = GS_OPT_STRING,
     .def = WH_DEFAULT_RES_MEM,
     .offset = OFF(resource_mem),
     .help = "legacy resource: GPU memory in MiB"},
    {.name = "resource-mem-percentage",
     .env = "GPUSLICE_WEBHOOK_RESOURCE_MEM_PERCENTAGE",
     .type = GS_OPT_STRING,
     .def = WH_DEFAULT_RES_MEM_PCT,
     .offset = OFF(resource_mem_percentage),
     .help = "legacy resource: percent of a GPU's memory"},
    {.name = "resource-cores",
     .env = "GPUSLICE_WEBHOOK_RESOURCE_CORES",
     .type = GS_OPT_STRING,
     .def = WH_DEFAULT_RES_CORES,
     .offset = OFF(resource_cores),
     .help = "legacy resource: percent of a GPU's compute"},
    {.name = "cert-check-interval",
     .env = "GPUSLICE_WEBHOOK_CERT_CHECK_INTERVAL",
     .type = GS_OPT_DURATION,
     .def = "1s",
     .min = "10ms",
     .max = "1h",
     .offset = OFF(cert_check_interval_ns),
     .help = "how often (at most) the certificate files are checked for changes"},
    {.name = "slice-cache-ttl",
     .env = "GPUSLICE_WEBHOOK_SLICE_CACHE_TTL",
     .type = GS_OPT_DURATION,
     .def = "30s",
     .min = "1ms",
     .max = "24h",
     .offset = OFF(slice_cache_ttl_ns),
     .help = "how long GPU memory sizes read from ResourceSlices are reused"},
    {.name = "class-cache-ttl",
     .env = "GPUSLICE_WEBHOOK_CLASS_CACHE_TTL",
     .type = GS_OPT_DURATION,
     .def = "1m",
     .min = "1ms",
     .max = "24h",
     .offset = OFF(class_cache_ttl_ns),
     .help = "how long the DeviceClass list (extendedResourceName) is reused"},
    {.name = "template-cache-ttl",
     .env = "GPUSLICE_WEBHOOK_TEMPLATE_CACHE_TTL",
     .type = GS_OPT_DURATION,
     .def = "5m",
     .min = "1ms",
     .max = "24h",
     .offset = OFF(template_cache_ttl_ns),
     .help = "how long a ResourceClaimTemplate known to exist is not created again"},
    {.name = "api-timeout",
     .env = "GPUSLICE_WEBHOOK_API_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "3s",
     .min = "100ms",
     .max = "1m",
     .offset = OFF(api_timeout_ns),
     .help = "timeout of one API server request"},
    {.name = "shutdown-delay",
     .env = "GPUSLICE_WEBHOOK_SHUTDOWN_DELAY",
     .type = GS_OPT_DURATION,
     .def = "5s",
     .min = "0s",
     .max = "5m",
     .offset = OFF(shutdown_delay_ns),
     .help = "after SIGTERM, keep serving this long with /readyz failing (a second signal "
             "stops at once)"},
    {.name = "kube-qps",
     .env = "GPUSLICE_KUBE_QPS",
     .type = GS_OPT_INT,
     .def = "50",
     .min = "1",
     .max = "100000",
     .offset = OFF(kube_qps),
     .help = "API server requests per second (token bucket)"},
    {.name = "kube-burst",
     .env = "GPUSLICE_KUBE_BURST",
     .type = GS_OPT_INT,
     .def = "100",
     .min = "1",
     .max = "100000",
     .offset = OFF(kube_burst),
     .help = "API server request burst"},
    {.name = "max-connections",
     .env = "GPUSLICE_WEBHOOK_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "1024",
     .min = "1",
     .max = "65536",
     .offset = OFF(max_connections),
     .help = "concurrent HTTPS connections (one thread each)"},
    {.name = "max-connections-per-client",
     .env = "GPUSLICE_WEBHOOK_MAX_CONNECTIONS_PER_CLIENT",
     .type = GS_OPT_INT,
     .def = "64",
     .min = "1",
     .max = "65536",
     .offset = OFF(max_connections_per_client),
     .help = "concurrent HTTPS connections from one client address (the API server opens "
             "one per admission in flight)"},
    {.name = "idle-timeout",
     .env = "GPUSLICE_WEBHOOK_IDLE_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "1s",
     .max = "10m",
     .offset = OFF(idle_timeout_ns),
     .help = "close a connection that sends nothing for this long: TLS handshake, headers, "
             "body, keep-alive (whole seconds)"},
    {.name = "header-timeout",
     .env = "GPUSLICE_WEBHOOK_HEADER_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "10s",
     .min = "100ms",
     .max = "10m",
     .offset = OFF(header_timeout_ns),
     .help = "a connection must send a whole request head (TLS handshake included) this soon "
             "after its accept or its previous request, or it is closed (slow clients)"},
    {.name = "health-max-connections",
     .env = "GPUSLICE_WEBHOOK_HEALTH_MAX_CONNECTIONS",
     .type = GS_OPT_INT,
     .def = "64",
     .min = "1",
     .max = "1024",
     .offset = OFF(health_max_connections),
     .help = "concurrent connections of --health-listen (its own budget: at most 16 from one "
             "client, a request head within 2s)"},
    {.name = "admission-timeout",
     .env = "GPUSLICE_WEBHOOK_ADMISSION_TIMEOUT",
     .type = GS_OPT_DURATION,
     .def = "8s",
     .min = "100ms",
     .max = "30s",
     .offset = OFF(admission_timeout_ns),
     .help = "deadline of one admission from its arrival, API calls included; past it the pod "
             "is denied (keep it below the webhook's timeoutSeconds, 10s in deploy/webhook)"},
    {.name = "health-listen",
     .env = "GPUSLICE_WEBHOOK_HEALTH_LISTEN",
     .type = GS_OPT_STRING,
     .def = ":8081",
     .metavar = "[HOST]:PORT",
     .offset = OFF(health_listen),
     .help = "plain-HTTP address for /healthz, /readyz and /metrics with its own connection "
             "limits, so probes are answered when the HTTPS port is full (\"\" = none)"},
    {.name = "log-level",
     .env = "GPUSLICE_LOG_LEVEL",
     .type = GS_OPT_ENUM,
     .choices = log_levels,
     .def = "info",
     .offset = OFF(log_level),
     .help = "log verbosity"},
    {.name = "gpu-type-match",
     .env = "GPUSLICE_WEBHOOK_GPU_TYPE_MATCH",
     .type = GS_OPT_ENUM,
     .choices = type_matches,
     .def = "substring",
     .offset = OFF(gpu_type_match),
     .help = "nvidia.com/use-gputype, nouse-gputype against productName: substring (legacy "
             "HAMi: case-insensitive, A100 matches NVIDIA A100-SXM4-80GB) or exact (HAMi-DRA)"},
    {.name = "device-config-file",
     .env = "GPUSLICE_WEBHOOK_DEVICE_CONFIG_FILE",
     .type = GS_OPT_STRING,
     .metavar = "FILE",
     .offset = OFF(device_config_file),
     .help = "HAMi-DRA's device-config.yaml as its chart writes it (nvidia, hygon, ascend "
             "sections, vendors list); unset: NVIDIA from the options only"},
    {.name = "device-vendors",
     .env = "GPUSLICE_WEBHOOK_DEVICE_VENDORS",
     .type = GS_OPT_STRING,
     .metavar = "V,V",
     .offset = OFF(device_vendors),
     .help = "vendors translated: nvidia, hygon, ascend (unset: the file's vendors, else "
             "nvidia)"},
    {.name = "tls-min-version",
     .env = "GPUSLICE_WEBHOOK_TLS_MIN_VERSION",
     .type = GS_OPT_ENUM,
     .choices = tls_versions,
     .def = "1.2",
     .offset = OFF(tls_min_version),
     .help = "oldest TLS version accepted (HAMi-DRA: 1.3; older than 1.2 is never offered)"},
    {.name = "certgen-secret",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_SECRET",
     .type = GS_OPT_STRING,
     .def = "gpuslice-webhook-tls",
     .offset = OFF(certgen_secret),
     .help = "certgen: the Secret (type kubernetes.io/tls) holding tls.crt, tls.key, ca.crt, "
             "ca.key"},
    {.name = "certgen-service",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_SERVICE",
     .type = GS_OPT_STRING,
     .def = "gpuslice-webhook",
     .offset = OFF(certgen_service),
     .help = "certgen: the webhook's Service; the certificate names <service>.<namespace>.svc "
             "and <service>.<namespace>.svc.cluster.local"},
    {.name = "certgen-namespace",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_NAMESPACE",
     .type = GS_OPT_STRING,
     .def = "",
     .offset = OFF(certgen_namespace),
     .help = "certgen: namespace of the Secret and the Service (\"\" = the pod's namespace, "
             "else the kubeconfig's)"},
    {.name = "certgen-webhook-configuration",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_WEBHOOK_CONFIGURATION",
     .type = GS_OPT_STRING,
     .def = "gpuslice-webhook",
     .offset = OFF(certgen_webhook_configuration),
     .help = "certgen: the MutatingWebhookConfiguration whose every webhook gets ca.crt as "
             "its caBundle"},
    {.name = "certgen-renew-before",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_RENEW_BEFORE",
     .type = GS_OPT_DURATION,
     .def = "720h",
     .min = "1h",
     .max = "87600h",
     .offset = OFF(certgen_renew_before_ns),
     .help = "certgen: renew a certificate that expires within this (30 days)"},
    {.name = "certgen-cert-validity",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_CERT_VALIDITY",
     .type = GS_OPT_DURATION,
     .def = "8760h",
     .min = "2h",
     .max = "175200h",
     .offset = OFF(certgen_cert_validity_ns),
     .help = "certgen: lifetime of a new serving certificate (1 year)"},
    {.name = "certgen-ca-validity",
     .env = "GPUSLICE_WEBHOOK_CERTGEN_CA_VALIDITY",
     .type = GS_OPT_DURATION,
     .def = "87600h",
     .min = "2h",
     .max = "175200h",
     .offset = OFF(certgen_ca_validity_ns),
     .help = "certgen: lifetime of a new CA (10 years)"},
    {.name = "memory-sizes",
     .type = GS_OPT_STRING,
     .metavar = "Q,Q,...",
     .offset = OFF(memory_sizes),
     .help = "translate: GPU memory sizes for percentages, e.g. 15Gi,80Gi (the server reads "
             "them from ResourceSlices)"},
    {.name = "namespace",
     .type = GS_OPT_STRING,
     .def = "default",
     .offset = OFF(namespace),
     .help = "translate: namespace of objects that name none"},
};

static const struct gs_config_spec spec = {
    .program = "gpuslice-webhook",
    .usage = "[OPTIONS] [translate FILE... | certgen]",
    .summary = "Mutating admission webhook: pods asking for legacy nvidia.com/gpu* resources get "
               "DRA claims from ResourceClaimTemplates (--mode=legacy: they keep them and are "
               "routed to the scheduler extender). Serves HTTPS /mutate, /healthz, /readyz, "
               "/metrics, and plain-HTTP probes on --health-listen. `translate FILE...` (or -) "
               "prints the manifests rewritten the same way, with their ResourceClaimTemplates, "
               "as one List, without a cluster. `certgen` makes or renews the serving "
               "certificate and its CA in --certgen-secret and gives every webhook of "
               "--certgen-webhook-configuration the CA bundle (a Job without cert-manager).",
    .options = options,
    .n_options = GS_ARRAY_SIZE(options),
    .config_env = "GPUSLICE_WEBHOOK_CONFIG",
};

int wh_options_parse(struct wh_options *o, int argc, char *const *argv, FILE *out, int *first_arg,
                     struct gs_error *err)
{
    int first = argc;
    memset(o, 0, sizeof(*o));
    int r = gs_config_parse(&spec, o, argc, argv, out, &first, err);
    *first_arg = first;
    if (r != 0)
        return r;
    const struct {
        const char *flag, *value;
    } names[] = {{"--device-class", o->device_class},
                 {"--driver", o->driver},
                 {"--resource-name", o->resource_name},
                 {"--resource-mem", o->resource_mem},
                 {"--resource-mem-percentage", o->resource_mem_percentage},
                 {"--resource-cores", o->resource_cores},
                 {"--listen", o->listen},
                 {"--tls-cert-file", o->tls_cert_file},
                 {"--tls-key-file", o->tls_key_file},
                 {"--scheduler-name", o->scheduler_name}};
    for (size_t i = 0; i < GS_ARRAY_SIZE(names); i++)
        if (!names[i].value || !names[i].value[0])
            return gs_error_set(err, -EINVAL, "%s: must not be empty", names[i].flag);
    return 0;
}

void wh_options_free(struct wh_options *o)
{
    gs_config_free(&spec, o);
}

int wh_options_names(const struct wh_options *o, struct wh_names *n, struct wh_vendors *vendors,
                     struct gs_error *err)
{
    wh_names_default(n);
    *vendors = (struct wh_vendors){.nvidia = true};
    int r = o->device_config_file && o->device_config_file[0]
                ? wh_vendors_load(o->device_config_file, o->device_vendors, vendors, err)
                : wh_vendors_build(NULL, o->device_vendors, vendors, err);
    if (r < 0)
        return r;
    const struct wh_nvidia_section *nv = &vendors->nv;
    /* An option left at its default takes the file's value (HAMi-DRA's names). */
#define PICK(opt, def, file) (strcmp(opt, def) == 0 && (file)[0] ? (file) : (opt))
    n->device_class = PICK(o->device_class, WH_DEFAULT_DEVICE_CLASS, nv->device_class);
    n->driver = PICK(o->driver, WH_DEFAULT_DRIVER, nv->driver);
    n->gpu = PICK(o->resource_name, WH_DEFAULT_RES_GPU, nv->count);
    n->mem = PICK(o->resource_mem, WH_DEFAULT_RES_MEM, nv->mem);
    n->mem_pct = PICK(o->resource_mem_percentage, WH_DEFAULT_RES_MEM_PCT, nv->mem_pct);
    n->cores = PICK(o->resource_cores, WH_DEFAULT_RES_CORES, nv->cores);
#undef PICK
    n->type_match = (enum wh_type_match)o->gpu_type_match;
    n->default_count =
        o->default_gpu == 1 && nv->default_gpu >= 0 ? nv->default_gpu : o->default_gpu;
    n->runtime_class = nv->runtime_class[0] ? nv->runtime_class : NULL;
    n->vendors = vendors;
    return 0;
}
