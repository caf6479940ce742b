/* SPDX-License-Identifier: Apache-2.0 */
/* GPU health for the standalone commands (see health.h). */
#include "cli/health.h"

#include <stdlib.h>

#include "gpu/discovery.h"
#include "gpu/health.h"
#include "gpu/slice.h"

/* The monitor's exported table, when its writer runs: how many entries. */
static size_t load(const char *state_dir, struct gpu_health_dev **out)
{
    *out = NULL;
    if (!state_dir || !*state_dir)
        return 0;
    struct gpu_health_dev *d = calloc(GPU_MAX_DEVICES, sizeof(*d));
    if (!d)
        return 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/" GPU_HEALTH_FILE, state_dir);
    size_t n = gpu_health_load_file(path, d, GPU_MAX_DEVICES);
    *out = d;
    return n;
}

json_t *cli_unhealthy_gpus(const char *state_dir)
{
    json_t *out = json_array();
    struct gpu_health_dev *d = NULL;
    size_t n = load(state_dir, &d);
    for (size_t i = 0; out && i < n; i++)
        if (!d[i].healthy)
            json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s}", "device", d[i].name,
                                                 "uuid", d[i].uuid, "health", "Unhealthy", "reason",
                                                 d[i].reason));
    free(d);
    if (n)
        return out; /* the monitor's watcher sees losses too */
    unsigned idx[GPU_MAX_DEVICES];
    size_t k = gpu_health_lost_now(idx, GPU_MAX_DEVICES);
    for (size_t i = 0; out && i < k; i++)
        json_array_append_new(out, json_pack("{s:I, s:s, s:s}", "index", (json_int_t)idx[i],
                                             "health", "Unhealthy", "reason",
                                             "lost: it does not answer NVML (GPU_IS_LOST); "
                                             "nothing is placed on it until it does"));
    return out;
}

void cli_print_unhealthy(FILE *out, const json_t *unhealthy, const char *prefix)
{
    size_t i;
    const json_t *u;
    json_array_foreach(unhealthy, i, u)
    {
        const char *dev = json_string_value(json_object_get(u, "device"));
        const char *reason = json_string_value(json_object_get(u, "reason"));
        if (dev)
            fprintf(out, "%sGPU %s (%s) is unhealthy: %s\n", prefix, dev,
                    json_string_value(json_object_get(u, "uuid")), reason ? reason : "");
        else
            fprintf(out, "%sGPU at NVML index %lld is unhealthy: %s\n", prefix,
                    (long long)json_integer_value(json_object_get(u, "index")),
                    reason ? reason : "");
    }
}

size_t cli_taint_unhealthy(json_t *slice, const char *state_dir, const char *driver)
{
    struct gpu_health_dev *d = NULL;
    size_t n = load(state_dir, &d), bad = 0;
    if (n && slice)
        gpu_slice_apply_health(slice, d, n, driver);
    for (size_t i = 0; i < n; i++)
        bad += d[i].healthy ? 0 : 1;
    free(d);
    return bad;
}
