/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's options: one typed table (config/config.h). Precedence: defaults < config file
 * ($GPUSLICE_MONITOR_CONFIG or --config) < environment < flags. `--help` prints the table,
 * `--print-config` the effective values.
 */
#ifndef GS_MONITOR_OPTIONS_H
#define GS_MONITOR_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

#define MON_DEFAULT_LISTEN "31995"
#define MON_DEFAULT_DRIVER "hami-core-gpu.project-hami.io"

struct mon_options {
    char *listen;
    char *node_name;
    char *kubeconfig;
    char *driver_name;
    char *host_dir;
    char *driver_root;
    char *state_dir;            /* the kubelet plugin's; NULL = /var/lib/kubelet/plugins/<driver> */
    char *standalone_state_dir; /* `gpuslice run`'s; NULL = the standalone mode's default */
    char *tls_cert_file;
    char *tls_key_file;
    char *probe_listen;
    char *proc_root;   /* the auditor's /proc */
    char *cgroup_root; /* the auditor's cgroup v2 mount point (standalone slices) */
    bool legacy_metrics;
    bool health; /* gpu/health-options.h */
    char *health_nonfatal_xids, *health_ignore_xids, *health_clear_dir;
    bool kubernetes;
    bool list_metrics;
    bool audit_kill;
    int log_level; /* index: error, warn, info, debug */
    int64_t refresh_interval_ns;
    int64_t resync_interval_ns;
    int64_t api_timeout_ns;
    int64_t cert_check_interval_ns;
    int64_t max_connections;
    int64_t max_connections_per_client;
    int64_t idle_timeout_ns;
    int64_t header_timeout_ns;
    int64_t probe_max_connections;
};

/* Parse argv + environment (+ config file) into *o. Returns 0 to run, GS_CONFIG_EXIT when
 * --help/--print-config was written to `out`, or a negative code with err naming the option and
 * the value. Also checks that --tls-cert-file and --tls-key-file come together. */
int mon_options_parse(struct mon_options *o, int argc, char *const *argv, FILE *out,
                      struct gs_error *err);
void mon_options_free(struct mon_options *o);

#endif /* GS_MONITOR_OPTIONS_H */
