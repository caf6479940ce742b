/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's options: one typed table (config/config.h: name, flag, environment variable,
 * type, default, bounds, help). Precedence: defaults < config file ($GPUSLICE_PLUGIN_CONFIG or
 * --config) < environment < flags. `--help` prints the table, `--print-config` the effective
 * values.
 */
#ifndef GS_PLUGIN_OPTIONS_H
#define GS_PLUGIN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

enum gpu_selection_choice {
    GPU_SELECTION_VOLUME_MOUNTS = 0,
    GPU_SELECTION_DEVICE_NODES = 1,
    GPU_SELECTION_NONE = 2,
};

struct plugin_options {
    char *node_name;
    char *driver_name;
    char *kubeconfig;
    char *registrar_dir;
    char *plugin_dir;
    char *cdi_root;
    char *state_dir;
    char *host_dir;
    char *vgpu_lib;
    char *sysfs_root;
    char *driver_root;
    char *metrics_addr;
    char *health_nonfatal_xids;
    char *health_ignore_xids;
    char *health_clear_dir;
    bool health;
    int gpu_selection; /* enum gpu_selection_choice */
    int log_level;     /* index: error, warn, info, debug */
    int fault_point;   /* index into options_fault_points; 0 = none */
    int64_t healthcheck_port;
    int64_t discovery_interval_ns;
    int64_t resync_interval_ns;
    int64_t reconcile_interval_ns;
    int64_t reconcile_grace_ns;
    int64_t grpc_threads;
    int64_t max_grpc_message;
    int64_t kube_qps;
    int64_t kube_burst;
    int64_t max_connections, max_connections_per_client, idle_timeout_ns, header_timeout_ns;
};

/* Parse argv + environment (+ config file) into *o (zeroed by the caller). Returns 0 to run,
 * GS_CONFIG_EXIT when --help/--print-config was written to `out`, or a negative code with err
 * naming the option and the value ("--healthcheck-port: 70000 is above the maximum 65535"). */
int options_parse(int argc, char **argv, struct plugin_options *o, FILE *out, struct gs_error *err);
void options_free(struct plugin_options *o);

/* "none" first, then the points of prepare/unprepare (NULL-terminated). */
extern const char *const options_fault_points[];

#endif /* GS_PLUGIN_OPTIONS_H */
