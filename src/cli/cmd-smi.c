/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice smi — an nvidia-smi-like table built only from NVML calls (src/gpu/smi.c), so inside a
 * slice (libvgpu preloaded) it shows the slice, as nvidia-smi does in a HAMi container.
 * `--sim` shows gpusim's devices.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/commands.h"
#include "cli/standalone.h"
#include "config/config.h"
#include "gpu/nvml.h"
#include "gpu/smi.h"

struct smi_config {
    bool sim;
};

static const struct gs_option smi_options[] = {
    {.name = "sim",
     .env = "GPUSLICE_SIM",
     .type = GS_OPT_BOOL,
     .def = "false",
     .help = "show the simulated GPU (gpusim) instead of the NVIDIA driver's",
     .offset = offsetof(struct smi_config, sim)},
};

static const struct gs_config_spec smi_spec = {
    .program = "gpuslice smi",
    .summary = "GPU table through NVML only: inside a slice it shows the slice.",
    .options = smi_options,
    .n_options = GS_ARRAY_SIZE(smi_options),
};

int cmd_smi(int argc, char **argv)
{
    struct smi_config cfg = {0};
    struct gs_error err = {0};
    int first;
    int r = gs_config_parse(&smi_spec, &cfg, argc, argv, stdout, &first, &err);
    if (r == GS_CONFIG_EXIT)
        return 0;
    if (r < 0 || first < argc) {
        if (r >= 0)
            snprintf(err.msg, sizeof(err.msg), "unexpected argument \"%s\"", argv[first]);
        fprintf(stderr, "gpuslice smi: %s\n", err.msg);
        return 2;
    }
    if (cfg.sim) {
        struct sa_env env;
        /* Only the gpusim directory is needed; the state dir is created as for `ls`. */
        if (sa_env_init(&env, NULL, true, &err) < 0 ||
            sa_reexec_with_sim(&env, argv - 1, &err) < 0) {
            fprintf(stderr, "gpuslice smi: %s\n", err.msg);
            return 4;
        }
    }
    /* The loader's search only: without --sim (or a slice of gpusim) no simulated GPU is shown
     * as if it were the machine's. */
    r = gpu_smi_print(stdout, 0, &err);
    if (r == -ENOENT && !cfg.sim) {
        fprintf(stderr,
                "gpuslice smi: %s: no NVIDIA driver on this machine (gpuslice smi --sim "
                "shows the simulated GPU)\n",
                err.msg);
        return 4;
    }
    if (r < 0) {
        fprintf(stderr, "gpuslice smi: %s\n", err.msg);
        return 4;
    }
    return 0;
}
