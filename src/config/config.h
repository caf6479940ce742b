/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One typed option table per binary, parsed by common code.
 *
 *   struct plugin_config { char *node_name; int64_t cores; struct gs_quantity memory;
 *                          int64_t resync_ns; bool verbose; int log_level; };
 *   static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
 *   static const struct gs_option options[] = {
 *       {.name = "node-name", .env = "NODE_NAME", .type = GS_OPT_STRING, .help = "...",
 *        .offset = offsetof(struct plugin_config, node_name)},
 *       {.name = "cores", .short_flag = 'c', .type = GS_OPT_INT, .def = "100", .min = "0",
 *        .max = "100", .help = "...", .offset = offsetof(struct plugin_config, cores)},
 *       {.name = "resync", .type = GS_OPT_DURATION, .def = "30s", .min = "1s", ...},
 *       {.name = "log-level", .type = GS_OPT_ENUM, .choices = levels, .def = "info", ...},
 *   };
 *   static const struct gs_config_spec spec = {.program = "gpuslice-kubelet-plugin",
 *       .summary = "...", .options = options, .n_options = GS_ARRAY_SIZE(options)};
 *   int first;
 *   int r = gs_config_parse(&spec, &cfg, argc, argv, stdout, &first, &err);
 *   if (r == GS_CONFIG_EXIT) return 0;     // --help / --print-config / --version was printed
 *   if (r < 0) { fprintf(stderr, "%s\n", err.msg); return 2; }
 *   ... gs_config_free(&spec, &cfg);
 *
 * Precedence: defaults < config file (--config FILE or spec.config_env; YAML or JSON mapping
 * keyed by option name) < environment variables < flags. Flags: --name=value, --name value,
 * -x value, -xvalue, --flag / --no-flag for booleans. Parsing stops at `--` or at the first
 * argument that is not an option; *first_arg is its index (argc if none).
 *
 * Storage by type (the field at `offset` in the binary's config struct):
 *   GS_OPT_STRING char * (owned, strdup'd; NULL when unset)   GS_OPT_INT int64_t
 *   GS_OPT_UINT uint64_t   GS_OPT_BOOL bool   GS_OPT_DURATION int64_t nanoseconds
 *   GS_OPT_QUANTITY struct gs_quantity   GS_OPT_ENUM int (index into choices)
 * Defaults and bounds are written as text in the option's own syntax ("100", "30s", "4Gi").
 * Errors name the source and the value: "--cores: 101 is above the maximum 100",
 * "GS_CORES: \"abc\" is not an integer", "plugin.yaml: cores: expected integer, got string".
 */
#ifndef GS_COMMON_CONFIG_H
#define GS_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

enum gs_option_type {
    GS_OPT_STRING,
    GS_OPT_INT,
    GS_OPT_UINT,
    GS_OPT_BOOL,
    GS_OPT_DURATION,
    GS_OPT_QUANTITY,
    GS_OPT_ENUM,
};

struct gs_option {
    const char *name;      /* key in config files and --print-config; the long flag by default */
    const char *long_flag; /* without "--"; NULL means `name` */
    char short_flag;       /* 0 for none */
    const char *env;       /* environment variable, or NULL */
    enum gs_option_type type;
    const char *def;       /* default as text, NULL: unset (NULL string, 0, false, first) */
    const char *min, *max; /* bounds as text, NULL: unbounded (INT, UINT, DURATION, QUANTITY) */
    const char *const *choices; /* GS_OPT_ENUM: NULL-terminated list */
    const char *metavar;        /* shown in --help, NULL: derived from the type */
    const char *help;
    size_t offset;
};

struct gs_config_spec {
    const char *program;
    const char
        *usage; /* after the program name in --help, e.g. "[OPTIONS] COMMAND"; NULL: "[OPTIONS]" */
    const char *summary; /* one line under the usage */
    const struct gs_option *options;
    size_t n_options;
    const char *config_env; /* environment variable naming a config file, or NULL */
    size_t config_max;      /* largest config file accepted; 0 means 1 MiB */
};

#define GS_CONFIG_EXIT 1

/* The config struct must start zeroed (or hold values set by this module: strings are freed when
 * replaced). */

/* Apply the defaults (and check the table: duplicate names, defaults that do not parse or lie
 * outside their bounds are reported as "option table: ..."). */
int gs_config_defaults(const struct gs_config_spec *spec, void *cfg, struct gs_error *err);

/* Defaults, then file, environment and flags (see above). --help, --print-config and --version
 * (base/version.h) write to `out` and return GS_CONFIG_EXIT. */
int gs_config_parse(const struct gs_config_spec *spec, void *cfg, int argc, char *const *argv,
                    FILE *out, int *first_arg, struct gs_error *err);

/* Set one option from text, as a flag would ("source" names it in messages). */
int gs_config_set(const struct gs_config_spec *spec, void *cfg, const char *name, const char *value,
                  const char *source, struct gs_error *err);

/* Load a YAML/JSON config file keyed by option name (bounded by spec->config_max). */
int gs_config_load_file(const struct gs_config_spec *spec, void *cfg, const char *path,
                        struct gs_error *err);

void gs_config_print_help(const struct gs_config_spec *spec, FILE *out);
/* The effective configuration as YAML that --config reads back. */
void gs_config_print(const struct gs_config_spec *spec, const void *cfg, FILE *out);
/* Free the strings the table owns (fields of type GS_OPT_STRING). Call it after
 * gs_config_parse() whatever it returned: defaults may already have been set. */
void gs_config_free(const struct gs_config_spec *spec, void *cfg);

/* Durations as Go writes them: "500ms", "10s", "1m30s", "1.5h", "-2s"; units ns us (µs) ms s m
 * h; "0" alone is allowed. Result in nanoseconds; -ERANGE beyond int64. */
int gs_parse_duration(const char *s, int64_t *ns, struct gs_error *err);
/* Go's Duration.String() with "us" for microseconds: "1h0m0s", "1m30s", "1.5s", "500ms". */
void gs_format_duration(int64_t ns, char *buf, size_t len);
/* true/false, yes/no, on/off, 1/0 (any case). */
int gs_parse_bool(const char *s, bool *out);

#endif /* GS_COMMON_CONFIG_H */
