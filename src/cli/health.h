/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU health for the standalone commands (`gpuslice ls`, `gpuslice run`), which run no watcher:
 * one look through the device backend (gpu/health.h gpu_health_lost_now). A lost GPU is left out
 * of discovery, so nothing is placed on it; these say so, naming the GPU and why.
 */
#ifndef GS_CLI_HEALTH_H
#define GS_CLI_HEALTH_H

#include <jansson.h>
#include <stdio.h>

/* [{"index": N, "health": "Unhealthy", "reason": "..."}] for every GPU lost now (new ref). */
json_t *cli_unhealthy_gpus(void);
/* One line per entry: "<prefix>GPU at NVML index N is unhealthy: <reason>". */
void cli_print_unhealthy(FILE *out, const json_t *unhealthy, const char *prefix);

#endif /* GS_CLI_HEALTH_H */
