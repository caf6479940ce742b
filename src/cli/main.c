/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "base/log.h"

static const struct gs_command commands[] = {
    {"version", "print the version", cmd_version},
    {"run", "run a command on a slice of this machine's GPUs (standalone mode)", cmd_run},
    {"ls", "list GPUs and live slices (standalone mode)", cmd_ls},
    {"top", "live view of GPUs and slices (standalone mode)", cmd_top},
    {"probe", "check a GPU or slice through the CUDA driver API (memory, kernels)", cmd_probe},
    {"smi", "GPU table through NVML only (inside a slice: the slice)", cmd_smi},
    {"schedule", "allocate claims as kube-scheduler does, or say why not", cmd_schedule},
    {"health-clear", "mark a GPU healthy again after a repaired fatal XID (all daemons)",
     cmd_health_clear},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: gpuslice <command> [options] [-- args]\n"
                 "       gpuslice --version | --help\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'gpuslice <command> --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    gs_log_set_component("gpuslice");
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "gpuslice: unknown command '%s' (see 'gpuslice --help')\n", argv[1]);
    return 2;
}
