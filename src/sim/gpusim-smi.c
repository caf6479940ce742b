/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim-smi: print the nvidia-smi-like table of the GPUs NVML reports (see smi.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "sim/smi.h"

int main(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
        fprintf(help ? stdout : stderr,
                "usage: gpusim-smi\n"
                "Prints the GPUs, their memory use and utilisation and the processes using them,\n"
                "as NVML (libnvidia-ml.so.1) reports them.\n");
        if (!help)
            fprintf(stderr, "gpusim-smi: unexpected argument \"%s\"\n", argv[1]);
        return help ? 0 : 2;
    }
    struct gs_error err = {0};
    if (gs_smi_print(stdout, &err) < 0) {
        fprintf(stderr, "gpusim-smi: %s\n", err.msg);
        return 1;
    }
    return 0;
}
