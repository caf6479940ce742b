/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim-smi: print the nvidia-smi-like table of the GPUs NVML reports (see smi.h), or with
 * --query-gpu=... --format=csv[,noheader][,nounits] the nvidia-smi CSV subset. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/version.h"
#include "gpu/smi.h"

static const char usage[] =
    "usage: gpusim-smi [--query-gpu=FIELD[,FIELD...] [--format=csv[,noheader][,nounits]]]\n"
    "       gpusim-smi --version | --help\n"
    "Prints the GPUs, their memory use and utilisation and the processes using them, as NVML\n"
    "(libnvidia-ml.so.1) reports them. Query fields: index, name, uuid, pci.bus_id,\n"
    "driver_version, compute_cap, memory.total, memory.used, memory.free, utilization.gpu.\n";

int main(int argc, char **argv)
{
    const char *query = NULL, *format = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            gs_version_print("gpusim-smi", stdout);
            return 0;
        }
        if (strncmp(argv[i], "--query-gpu=", 12) == 0) {
            query = argv[i] + 12;
        } else if (strncmp(argv[i], "--format=", 9) == 0) {
            format = argv[i] + 9;
        } else {
            fprintf(stderr, "gpusim-smi: unexpected argument \"%s\"\n%s", argv[i], usage);
            return 2;
        }
    }
    if (format && !query) {
        fprintf(stderr, "gpusim-smi: --format needs --query-gpu\n");
        return 2;
    }
    struct gs_error err = {0};
    int r = query ? gpu_smi_query(stdout, query, format, &err) : gpu_smi_print(stdout, &err);
    if (r < 0) {
        fprintf(stderr, "gpusim-smi: %s\n", err.msg);
        return r == -EINVAL ? 2 : 1;
    }
    return 0;
}
