/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: gpusim's config parser (JSON or YAML) never crashes, and either fills a
 * valid model or reports an error message. */
#include <stdint.h>
#include <string.h>

#include "sim/sim-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sim_config cfg;
    struct gs_error err = {0};
    if (sim_config_parse((const char *)data, size, "fuzz", &cfg, &err) == 0) {
        if (cfg.ndev < 1 || cfg.ndev > SIM_MAX_DEVICES)
            __builtin_trap();
        for (int i = 0; i < cfg.ndev; i++)
            if (cfg.dev[i].total_mem == 0 || strncmp(cfg.dev[i].uuid, "GPU-", 4) != 0)
                __builtin_trap();
    } else if (err.msg[0] == '\0') {
        __builtin_trap();
    }
    return 0;
}
