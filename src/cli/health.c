/* SPDX-License-Identifier: Apache-2.0 */
/* GPU health for the standalone commands (see health.h). */
#include "cli/health.h"

#include "gpu/discovery.h"
#include "gpu/health.h"

json_t *cli_unhealthy_gpus(void)
{
    unsigned idx[GPU_MAX_DEVICES];
    size_t n = gpu_health_lost_now(idx, GPU_MAX_DEVICES);
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++)
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
        fprintf(out, "%sGPU at NVML index %lld is unhealthy: %s\n", prefix,
                (long long)json_integer_value(json_object_get(u, "index")),
                json_string_value(json_object_get(u, "reason")));
}
