/* SPDX-License-Identifier: Apache-2.0 */
/* The gpuslice CLI: one file per subcommand (cmd-<name>.c), dispatched from main.c. */
#ifndef GS_CLI_COMMANDS_H
#define GS_CLI_COMMANDS_H

struct gs_command {
    const char *name;
    const char *summary;
    /* argv[0] is the subcommand name; returns the process exit status. */
    int (*run)(int argc, char **argv);
};

/* Each cmd-<name>.c defines one of these; add it to the table in main.c. */
int cmd_version(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_smi(int argc, char **argv);
int cmd_health_clear(int argc, char **argv);

#endif /* GS_CLI_COMMANDS_H */
