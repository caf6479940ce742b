/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU health for the standalone commands (`gpuslice ls`, `gpuslice run`), which run no watcher.
 * Two sources: the health table the monitor exports to <state-dir>/health.json while it runs
 * (gpu/health.h gpu_health_load_file: fatal XIDs, ECC errors, losses), else one look through the
 * device backend (gpu_health_lost_now: lost GPUs only). Discovery leaves a lost GPU out; a GPU with
 * a fatal fault gets the plugin's NoSchedule taint in the slice `gpuslice run` allocates from, so
 * nothing is placed on either, and these say which GPU and why.
 */
#ifndef GS_CLI_HEALTH_H
#define GS_CLI_HEALTH_H

#include <jansson.h>
#include <stdio.h>

/* [{"device"|"index", "uuid"?, "health": "Unhealthy", "reason"}] for every unhealthy GPU (new
 * ref). */
json_t *cli_unhealthy_gpus(const char *state_dir);
/* One line per entry: "<prefix>GPU <name> (<uuid>) is unhealthy: <reason>". */
void cli_print_unhealthy(FILE *out, const json_t *unhealthy, const char *prefix);
/* Taint the slice's devices from the monitor's health file (gpu_slice_apply_health); how many
 * GPUs the file calls unhealthy. */
size_t cli_taint_unhealthy(json_t *slice, const char *state_dir, const char *driver);

#endif /* GS_CLI_HEALTH_H */
