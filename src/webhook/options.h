/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's options: one typed table (config/config.h) — flag, environment variable, type,
 * default, bounds, help. --help, --print-config and --config FILE come from it. Precedence:
 * defaults < config file (--config or $GPUSLICE_WEBHOOK_CONFIG) < environment < flags.
 */
#ifndef GS_WEBHOOK_OPTIONS_H
#define GS_WEBHOOK_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "base/error.h"

struct wh_options {
    int mode; /* enum wh_mode: index into "dra", "legacy" */
    char *scheduler_name;
    int64_t default_gpu;
    int64_t default_gpumem;
    int64_t default_gpucores;
    char *listen;
    char *tls_cert_file;
    char *tls_key_file;
    char *kubeconfig; /* NULL: $KUBECONFIG, else in-cluster */
    char *device_class;
    char *driver;
    char *resource_name;
    char *resource_mem;
    char *resource_mem_percentage;
    char *resource_cores;
    int64_t cert_check_interval_ns;
    int64_t slice_cache_ttl_ns;
    int64_t class_cache_ttl_ns;
    int64_t template_cache_ttl_ns;
    int64_t api_timeout_ns;
    int64_t shutdown_delay_ns;
    int64_t kube_qps;
    int64_t kube_burst;
    int64_t max_connections;
    int64_t max_connections_per_client;
    int64_t idle_timeout_ns;
    int64_t header_timeout_ns;
    int64_t health_max_connections;
    int64_t admission_timeout_ns;
    char *health_listen;      /* "" = no probe listener */
    int log_level;            /* index into "error", "warn", "info", "debug" */
    char *memory_sizes;       /* translate: GPU memory sizes for percentages, "15Gi,80Gi" */
    char *namespace;          /* translate: namespace of objects without one */
    int gpu_type_match;       /* enum wh_type_match: "substring", "exact" */
    char *device_config_file; /* HAMi-DRA's device-config.yaml (NULL = none) */
    char *device_vendors;     /* "nvidia,hygon,ascend" (NULL = the file's vendors) */
    int tls_min_version;      /* index into "1.2", "1.3" */
    /* certgen (certgen.h) */
    char *certgen_secret;
    char *certgen_service;
    char *certgen_namespace; /* "" = the client's namespace */
    char *certgen_webhook_configuration;
    int64_t certgen_renew_before_ns;
    int64_t certgen_cert_validity_ns;
    int64_t certgen_ca_validity_ns;
};

struct wh_names;
struct wh_vendors;
/* The translation's names and rules from the options and --device-config-file: `vendors` is
 * filled and pointed at by names->vendors; the file's nvidia section fills what the options
 * leave at their defaults. 0 or a negative code with a message. */
int wh_options_names(const struct wh_options *o, struct wh_names *names, struct wh_vendors *vendors,
                     struct gs_error *err);

/* 0, GS_CONFIG_EXIT (--help / --print-config written to `out`), or a negative code with a
 * message naming the option, its source and the value. *first_arg: index of the first
 * argument that is not an option (argc if none): "translate" and its files. */
int wh_options_parse(struct wh_options *o, int argc, char *const *argv, FILE *out, int *first_arg,
                     struct gs_error *err);
void wh_options_free(struct wh_options *o);

#endif /* GS_WEBHOOK_OPTIONS_H */
