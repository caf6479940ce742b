/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's options: one typed table (flag, environment variable, type, default, bounds,
 * help). --help and --print-config are generated from it. Precedence: flag > environment >
 * default.
 */
#ifndef GS_WEBHOOK_OPTIONS_H
#define GS_WEBHOOK_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

struct wh_options {
    const char *listen;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *kubeconfig;
    const char *device_class;
    const char *driver;
    const char *resource_name;
    const char *resource_mem;
    const char *resource_mem_percentage;
    const char *resource_cores;
    int64_t cert_check_interval_ms;
    int64_t slice_cache_ttl_ms;
    int64_t class_cache_ttl_ms;
    int64_t template_cache_ttl_ms;
    int64_t api_timeout_ms;
    int64_t kube_qps;
    int64_t kube_burst;
    int64_t max_connections;
    const char *log_level;
    bool help;
    bool print_config;
};

/* Defaults, then environment, then argv. -EINVAL with a message naming the option and value. */
int wh_options_parse(struct wh_options *o, int argc, char **argv, struct gs_error *err);
void wh_options_help(FILE *f, const char *argv0);
/* One "name = value" line per option (the effective configuration). */
void wh_options_print(FILE *f, const struct wh_options *o);

#endif /* GS_WEBHOOK_OPTIONS_H */
