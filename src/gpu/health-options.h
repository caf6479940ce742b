/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The health watcher's options, the same name, flag and environment variable in every binary
 * that watches GPUs (the kubelet plugin, the device plugin, the monitor, gpuslice):
 *
 *     static const struct gs_option table[] = {
 *         ...
 *         GPU_HEALTH_OPTIONS(OFF(health), OFF(health_nonfatal_xids), OFF(health_ignore_xids),
 *                            OFF(health_clear_dir)),
 *     };
 *
 * Fields: bool, char *, char *, char *. Defaults: on; NVIDIA's non-fatal list; none ignored;
 * /var/run/gpuslice/health-clear.
 */
#ifndef GS_GPU_HEALTH_OPTIONS_H
#define GS_GPU_HEALTH_OPTIONS_H

#include "config/config.h"
#include "gpu/health.h"

#define GPU_HEALTH_CLEAR_DIR "/var/run/gpuslice/health-clear"

#define GPU_HEALTH_OPTIONS(off_enabled, off_nonfatal, off_ignore, off_clear)                       \
    {.name = "health",                                                                             \
     .env = "GPUSLICE_HEALTH",                                                                     \
     .type = GS_OPT_BOOL,                                                                          \
     .def = "true",                                                                                \
     .offset = (off_enabled),                                                                      \
     .help = "Watch GPU health (NVML XID/ECC events, lost GPUs); false = every GPU healthy."},     \
        {.name = "health-nonfatal-xids",                                                           \
         .env = "GPUSLICE_HEALTH_NONFATAL_XIDS",                                                   \
         .type = GS_OPT_STRING,                                                                    \
         .def = GPU_HEALTH_NONFATAL,                                                               \
         .offset = (off_nonfatal),                                                                 \
         .help = "XIDs that leave a GPU healthy (informational); NVIDIA's application-error "      \
                 "list by default. Any other XID makes the GPU unhealthy."},                       \
        {.name = "health-ignore-xids",                                                             \
         .env = "GPUSLICE_HEALTH_IGNORE_XIDS",                                                     \
         .type = GS_OPT_STRING,                                                                    \
         .def = "",                                                                                \
         .offset = (off_ignore),                                                                   \
         .help = "XIDs to ignore entirely (comma-separated)."},                                    \
    {                                                                                              \
        .name = "health-clear-dir", .env = "GPUSLICE_HEALTH_CLEAR_DIR", .type = GS_OPT_STRING,     \
        .def = GPU_HEALTH_CLEAR_DIR, .offset = (off_clear),                                        \
        .help = "Operator clears: touch <dir>/<GPU name, UUID or all> to mark it healthy "         \
                "after a fatal XID; empty = off."                                                  \
    }

#endif /* GS_GPU_HEALTH_OPTIONS_H */
