/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim-smi: print the nvidia-smi-like table of the GPUs NVML reports (see smi.h), or with
 * --query-gpu=... --format=csv[,noheader][,nounits] the nvidia-smi CSV subset. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/version.h"
#include "gpu/nvml.h"
#include "gpu/smi.h"
#include "sim/sim-config.h"
#include "sim/sim-state.h"

static const char usage[] =
    "usage: gpusim-smi [--query-gpu=FIELD[,FIELD...] [--format=csv[,noheader][,nounits]]]\n"
    "       gpusim-smi inject-xid GPU XID | lose GPU | recover GPU | health\n"
    "       gpusim-smi --version | --help\n"
    "Prints the GPUs, their memory use and utilisation and the processes using them, as NVML\n"
    "(libnvidia-ml.so.1) reports them. Query fields: index, name, uuid, pci.bus_id,\n"
    "driver_version, compute_cap, memory.total, memory.used, memory.free, utilization.gpu.\n"
    "Fault injection (the simulated machine of GPUSIM_STATE / GPUSIM_PRESET / GPUSIM_CONFIG):\n"
    "  inject-xid GPU XID  deliver XID (1..1023) to NVML event sets registered on GPU\n"
    "  lose GPU            GPU falls off the bus: XID 79, NVML calls GPU_IS_LOST, CUDA calls\n"
    "                      CUDA_ERROR_UNKNOWN\n"
    "  recover GPU         the GPU answers again\n"
    "  health              one line per GPU: index, lost, XID events so far\n"
    "GPU is an index or a UUID.\n";

/* GPU argument: an index or a UUID of the simulated machine. */
static int parse_gpu(const struct sim_config *cfg, const char *arg, struct gs_error *err)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (*arg && !*end && errno == 0) {
        if (v >= (unsigned long)cfg->ndev)
            return gs_error_set(err, -EINVAL, "GPU \"%s\": the machine has %d GPU(s)", arg,
                                cfg->ndev);
        return (int)v;
    }
    for (int i = 0; i < cfg->ndev; i++)
        if (strcasecmp(cfg->dev[i].uuid, arg) == 0)
            return i;
    return gs_error_set(err, -EINVAL, "GPU \"%s\": not an index or a UUID of this machine", arg);
}

static int fault(int argc, char **argv, struct gs_error *err)
{
    const char *cmd = argv[1];
    int want = strcmp(cmd, "inject-xid") == 0 ? 2 : strcmp(cmd, "health") == 0 ? 0 : 1;
    if (argc - 2 != want)
        return gs_error_set(err, -EINVAL, "%s takes %d argument(s)", cmd, want);
    struct sim_config cfg;
    struct sim_state *st = NULL;
    int r = sim_config_from_env(&cfg, err);
    if (r < 0)
        return r;
    int gpu = 0;
    if (want > 0 && (gpu = parse_gpu(&cfg, argv[2], err)) < 0)
        return gpu;
    unsigned long xid = 0;
    if (want == 2) {
        char *end;
        errno = 0;
        xid = strtoul(argv[3], &end, 10);
        if (!*argv[3] || *end || errno || xid == 0 || xid > 1023)
            return gs_error_set(err, -EINVAL, "XID \"%s\": expected a number from 1 to 1023",
                                argv[3]);
    }
    if ((r = sim_state_open(&cfg, &st, err)) < 0)
        return gs_error_set(err, -EIO, "%s", err->msg);
    if (strcmp(cmd, "inject-xid") == 0)
        r = sim_health_inject_xid(st, gpu, xid);
    else if (strcmp(cmd, "lose") == 0)
        r = sim_health_set_lost(st, gpu, true);
    else if (strcmp(cmd, "recover") == 0)
        r = sim_health_set_lost(st, gpu, false);
    else
        for (int i = 0; i < cfg.ndev; i++)
            printf("%d lost=%d xid_events=%llu\n", i, sim_dev_lost(st, i) ? 1 : 0,
                   (unsigned long long)sim_health_xid_count(st, i));
    sim_state_close(st);
    if (r < 0)
        return gs_error_set(err, r, "%s: %s", cmd, strerror(-r));
    return 0;
}

int main(int argc, char **argv)
{
    const char *query = NULL, *format = NULL;
    if (argc >= 2 && (strcmp(argv[1], "inject-xid") == 0 || strcmp(argv[1], "lose") == 0 ||
                      strcmp(argv[1], "recover") == 0 || strcmp(argv[1], "health") == 0)) {
        struct gs_error err = {0};
        int r = fault(argc, argv, &err);
        if (r < 0) {
            fprintf(stderr, "gpusim-smi: %s\n", err.msg);
            return r == -EINVAL ? 2 : 1;
        }
        return 0;
    }
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
    int r = query ? gpu_smi_query(stdout, query, format, GPU_NVML_SEARCH_EXE_DIR, &err)
                  : gpu_smi_print(stdout, GPU_NVML_SEARCH_EXE_DIR, &err);
    if (r < 0) {
        fprintf(stderr, "gpusim-smi: %s\n", err.msg);
        return r == -EINVAL ? 2 : 1;
    }
    return 0;
}
