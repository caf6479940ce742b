/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's options: one typed table (name, flag, environment variable, type, default, bounds,
 * help). Precedence: flag > environment > default. `--help` prints the table, `--print-config`
 * prints the effective values (name=value, one per line) and exits.
 */
#ifndef GS_PLUGIN_OPTIONS_H
#define GS_PLUGIN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

#define OPT_STR_MAX 1024

struct plugin_options {
    char node_name[256];
    char driver_name[256];
    char kubeconfig[OPT_STR_MAX];
    char registrar_dir[OPT_STR_MAX];
    char plugin_dir[OPT_STR_MAX];
    char cdi_root[OPT_STR_MAX];
    char state_dir[OPT_STR_MAX];
    char host_dir[OPT_STR_MAX];
    char vgpu_lib[OPT_STR_MAX];
    char sysfs_root[OPT_STR_MAX];
    char gpu_selection[32];
    char metrics_addr[256];
    char log_level[16];
    char fault_point[64];
    int64_t healthcheck_port;
    int64_t discovery_interval_s;
    int64_t resync_interval_s;
    int64_t reconcile_interval_s;
    int64_t reconcile_grace_s;
    int64_t grpc_threads;
    int64_t max_grpc_message;
    int64_t kube_qps;
    int64_t kube_burst;
};

enum options_action {
    OPTIONS_RUN = 0,
    OPTIONS_HELP = 1,
    OPTIONS_PRINT_CONFIG = 2,
};

/* Parse argv + environment into *o. Returns the action, or a negative code with err naming the
 * option and the value ("--healthcheck-port: \"x\" is not an integer in 0..65535"). */
int options_parse(int argc, char **argv, struct plugin_options *o, struct gs_error *err);
void options_help(FILE *f, const char *prog);
void options_print(FILE *f, const struct plugin_options *o);

/* Fault points the --fault-point switch accepts (NULL-terminated). */
extern const char *const options_fault_points[];

#endif /* GS_PLUGIN_OPTIONS_H */
