/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice ls [-o table|json]   — GPUs (capacity, allocated, free) and live slices with usage.
 * gpuslice top [--interval DUR] — the same, refreshed until Ctrl-C, with utilisation.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/health.h"
#include "cli/ledger.h"
#include "cli/standalone.h"
#include "base/clock.h"
#include "config/config.h"
#include "config/quantity.h"

struct ls_config {
    int output;
    bool sim;
    char *state_dir;
    int64_t interval_ns;
    int64_t iterations;
};

static const char *const outputs[] = {"table", "json", "slice", NULL};

#define COMMON_OPTIONS                                                                             \
    {.name = "sim",                                                                                \
     .env = "GPUSLICE_SIM",                                                                        \
     .type = GS_OPT_BOOL,                                                                          \
     .def = "false",                                                                               \
     .help = "describe the simulated GPU (gpusim) instead of the NVIDIA driver's",                 \
     .offset = offsetof(struct ls_config, sim)},                                                   \
    {                                                                                              \
        .name = "state-dir", .env = "GPUSLICE_STATE_DIR", .type = GS_OPT_STRING, .metavar = "DIR", \
        .help = "where the ledger and the slices live",                                            \
        .offset = offsetof(struct ls_config, state_dir)                                            \
    }

static const struct gs_option ls_options[] = {
    {.name = "output",
     .short_flag = 'o',
     .type = GS_OPT_ENUM,
     .choices = outputs,
     .def = "table",
     .help = "table for people, json for scripts (stable, see docs), slice: the ResourceSlice "
             "the kubelet plugin would publish for this machine",
     .offset = offsetof(struct ls_config, output)},
    COMMON_OPTIONS,
};

static const struct gs_option top_options[] = {
    {.name = "interval",
     .short_flag = 'd',
     .type = GS_OPT_DURATION,
     .def = "1s",
     .min = "100ms",
     .help = "refresh interval",
     .offset = offsetof(struct ls_config, interval_ns)},
    {.name = "iterations",
     .short_flag = 'n',
     .type = GS_OPT_INT,
     .def = "0",
     .min = "0",
     .help = "stop after this many refreshes (0 = until Ctrl-C)",
     .offset = offsetof(struct ls_config, iterations)},
    COMMON_OPTIONS,
};

static const struct gs_config_spec ls_spec = {
    .program = "gpuslice ls",
    .summary = "List this machine's GPUs and the live slices on them.",
    .options = ls_options,
    .n_options = GS_ARRAY_SIZE(ls_options),
};

static const struct gs_config_spec top_spec = {
    .program = "gpuslice top",
    .summary = "Live view of the GPUs and slices, refreshed until Ctrl-C.",
    .options = top_options,
    .n_options = GS_ARRAY_SIZE(top_options),
};

static void fmt_bytes(char *buf, size_t len, json_int_t bytes)
{
    if (bytes < 0)
        bytes = 0;
    snprintf(buf, len, "%lldMiB", (long long)(bytes / (1024 * 1024)));
}

/* One display line: control characters become spaces, long commands are cut with "...". */
static const char *one_line(char *buf, size_t len, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < len; i++)
        buf[i] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
    buf[i] = '\0';
    if (s && s[i] && len > 4)
        memcpy(buf + len - 4, "...", 4);
    return buf;
}

static json_int_t jint(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_integer_value(v);
}

static void bar(char *buf, size_t width, double frac)
{
    if (frac < 0)
        frac = 0;
    if (frac > 1)
        frac = 1;
    size_t fill = (size_t)(frac * (double)width + 0.5);
    for (size_t i = 0; i < width; i++)
        buf[i] = i < fill ? '#' : '.';
    buf[width] = '\0';
}

/* prev: the previous snapshot (for utilisation), or NULL. */
static void print_table(FILE *out, const json_t *snap, const json_t *prev, double dt_s, bool bars)
{
    const json_t *gpus = json_object_get(snap, "gpus");
    const json_t *slices = json_object_get(snap, "slices");
    fprintf(out, "%-12s %-22s %-18s %-26s %s\n", "GPU", "PRODUCT", "CORES alloc/cap",
            "MEMORY alloc/cap", "SLICES");
    size_t i;
    const json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char cores[32], mem[64], a[32], c[32];
        snprintf(cores, sizeof(cores), "%lld/%lld%%", (long long)jint(g, "allocated", "cores"),
                 (long long)jint(g, "capacity", "cores"));
        fmt_bytes(a, sizeof(a), jint(g, "allocated", "memory"));
        fmt_bytes(c, sizeof(c), jint(g, "capacity", "memory"));
        snprintf(mem, sizeof(mem), "%s / %s", a, c);
        char names[256] = "";
        size_t k;
        const json_t *n;
        json_array_foreach(json_object_get(g, "slices"), k, n)
        {
            if (k)
                strncat(names, ",", sizeof(names) - strlen(names) - 1);
            strncat(names, json_string_value(n), sizeof(names) - strlen(names) - 1);
        }
        fprintf(out, "%-12s %-22s %-18s %-26s %s\n",
                json_string_value(json_object_get(g, "device")),
                json_string_value(json_object_get(g, "productName")), cores, mem,
                names[0] ? names : "-");
        if (bars) {
            char b1[21], b2[21];
            double cc = (double)jint(g, "capacity", "cores");
            double cm = (double)jint(g, "capacity", "memory");
            bar(b1, 20, cc > 0 ? (double)jint(g, "allocated", "cores") / cc : 0);
            bar(b2, 20, cm > 0 ? (double)jint(g, "allocated", "memory") / cm : 0);
            fprintf(out, "%-12s %-22s [%s] cores [%s] memory\n", "", "", b1, b2);
        }
    }
    fprintf(out, "\n%-16s %-8s %-12s %-6s %-10s %-18s %-6s %s\n", "SLICE", "OWNER", "DEVICE",
            "CORES", "MEMORY", "USED", "UTIL", "COMMAND");
    if (json_array_size(slices) == 0)
        fprintf(out, "(no slices)\n");
    const json_t *s;
    json_array_foreach(slices, i, s)
    {
        const json_t *devs = json_object_get(s, "devices");
        size_t k;
        const json_t *d;
        json_array_foreach(devs, k, d)
        {
            char lim[32], used[64], util[16] = "-";
            fmt_bytes(lim, sizeof(lim), jint(d, "limits", "memory"));
            char u[32];
            fmt_bytes(u, sizeof(u), jint(d, "usage", "memory"));
            snprintf(used, sizeof(used), "%s",
                     json_is_true(json_object_get(json_object_get(d, "usage"), "live")) ? u : "-");
            if (prev && dt_s > 0) {
                /* Same slice id and device in the previous snapshot: busy time delta. */
                size_t pi;
                const json_t *ps;
                json_array_foreach(json_object_get(prev, "slices"), pi, ps)
                {
                    if (jint(ps, "id", NULL) != jint(s, "id", NULL))
                        continue;
                    const json_t *pd = json_array_get(json_object_get(ps, "devices"), k);
                    if (!pd)
                        continue;
                    double busy =
                        (double)(jint(d, "usage", "busyNs") - jint(pd, "usage", "busyNs"));
                    snprintf(util, sizeof(util), "%.0f%%", busy / 1e9 / dt_s * 100.0);
                }
            }
            char cores[16];
            snprintf(cores, sizeof(cores), "%lld%%", (long long)jint(d, "limits", "cores"));
            char cmd[64];
            fprintf(
                out, "%-16s %-8lld %-12s %-6s %-10s %-18s %-6s %s\n",
                k ? "" : json_string_value(json_object_get(s, "name")),
                (long long)jint(s, "owner", "pid"), json_string_value(json_object_get(d, "device")),
                cores, lim, used, util,
                k ? ""
                  : one_line(cmd, sizeof(cmd), json_string_value(json_object_get(s, "command"))));
        }
        if (json_array_size(devs) == 0)
            fprintf(out, "%-16s %-8lld %-12s %-6s %-10s %-18s %-6s %s\n",
                    json_string_value(json_object_get(s, "name")),
                    (long long)jint(s, "owner", "pid"), "?", "-", "-", "-", "-",
                    json_string_value(json_object_get(s, "command")));
    }
}

static int setup(const struct gs_config_spec *spec, struct ls_config *cfg, int argc, char **argv,
                 struct sa_env *env, struct gpu_inventory **inv, struct ledger **l,
                 json_t **slice_out, int *status)
{
    struct gs_error err = {0};
    int first;
    int r = gs_config_parse(spec, cfg, argc, argv, stdout, &first, &err);
    if (r == GS_CONFIG_EXIT) {
        *status = 0;
        return -1;
    }
    if (r < 0 || first < argc) {
        if (r >= 0)
            snprintf(err.msg, sizeof(err.msg), "unexpected argument \"%s\"", argv[first]);
        fprintf(stderr, "%s: %s\n", spec->program, err.msg);
        *status = 2;
        return -1;
    }
    *status = 4;
    if (sa_env_init(env, cfg->state_dir, cfg->sim, &err) < 0 ||
        (cfg->sim && sa_reexec_with_sim(env, argv - 1, &err) < 0)) {
        fprintf(stderr, "%s: %s\n", spec->program, err.msg);
        return -1;
    }
    *inv = calloc(1, sizeof(**inv));
    if (!*inv)
        return -1;
    json_t *slice = NULL, *cls = NULL;
    if (sa_discover(env, *inv, &slice, &cls, &err) < 0) {
        fprintf(stderr, "%s: warning: %s\n", spec->program, err.msg);
        free(*inv);
        *inv = NULL;
    }
    if (slice_out)
        *slice_out = slice;
    else
        json_decref(slice);
    json_decref(cls);
    if (ledger_open(env->state_dir, l, &err) < 0) {
        fprintf(stderr, "%s: %s\n", spec->program, err.msg);
        free(*inv);
        *inv = NULL;
        if (slice_out) {
            json_decref(*slice_out); /* handed out above: the caller gets nothing on failure */
            *slice_out = NULL;
        }
        return -1;
    }
    return 0;
}

int cmd_ls(int argc, char **argv)
{
    struct ls_config cfg = {0};
    struct sa_env env;
    struct gpu_inventory *inv = NULL;
    struct ledger *l = NULL;
    int status;
    json_t *slice = NULL;
    if (setup(&ls_spec, &cfg, argc, argv, &env, &inv, &l, &slice, &status) < 0) {
        gs_config_free(&ls_spec, &cfg);
        return status;
    }
    struct gs_error err = {0};
    json_t *snap = NULL;
    json_t *unhealthy = cli_unhealthy_gpus(env.state_dir);
    status = 0;
    if (cfg.output == 2) {
        if (!slice) {
            fprintf(stderr, "gpuslice ls: no GPU discovered, no ResourceSlice to show\n");
            status = 4;
        } else {
            json_dumpf(slice, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
        }
    } else if (sa_snapshot(&env, inv, l, &snap, &err) < 0) {
        fprintf(stderr, "gpuslice ls: %s\n", err.msg);
        status = 4;
    } else if (cfg.output == 1) {
        if (json_array_size(unhealthy))
            json_object_set(snap, "unhealthy", unhealthy);
        json_dumpf(snap, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        fputc('\n', stdout);
    } else {
        print_table(stdout, snap, NULL, 0, false);
        if (json_array_size(unhealthy)) {
            fputc('\n', stdout);
            cli_print_unhealthy(stdout, unhealthy, "");
        }
    }
    json_decref(unhealthy);
    json_decref(snap);
    json_decref(slice);
    ledger_close(l);
    free(inv);
    gs_config_free(&ls_spec, &cfg);
    return status;
}

static volatile sig_atomic_t top_stop;

static void on_stop(int sig)
{
    (void)sig;
    top_stop = 1;
}

int cmd_top(int argc, char **argv)
{
    struct ls_config cfg = {0};
    struct sa_env env;
    struct gpu_inventory *inv = NULL;
    struct ledger *l = NULL;
    int status;
    if (setup(&top_spec, &cfg, argc, argv, &env, &inv, &l, NULL, &status) < 0) {
        gs_config_free(&top_spec, &cfg);
        return status;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    bool tty = isatty(STDOUT_FILENO);
    json_t *prev = NULL;
    uint64_t prev_ns = 0;
    status = 0;
    for (int64_t it = 0; !top_stop && (cfg.iterations == 0 || it < cfg.iterations); it++) {
        struct gs_error err = {0};
        json_t *snap = NULL;
        if (sa_snapshot(&env, inv, l, &snap, &err) < 0) {
            fprintf(stderr, "gpuslice top: %s\n", err.msg);
            status = 4;
            break;
        }
        uint64_t now = gs_now_ns();
        if (tty)
            fputs("\033[H\033[2J", stdout);
        time_t t = time(NULL);
        char ts[32];
        strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&t));
        fprintf(stdout, "gpuslice top — %s — %s (Ctrl-C to quit)\n\n", env.node, ts);
        print_table(stdout, snap, prev, prev ? (double)(now - prev_ns) / 1e9 : 0, true);
        fflush(stdout);
        json_decref(prev);
        prev = snap;
        prev_ns = now;
        if (cfg.iterations && it + 1 >= cfg.iterations)
            break;
        uint64_t until = gs_now_ns() + (uint64_t)cfg.interval_ns;
        while (!top_stop && gs_now_ns() < until)
            gs_sleep_ms(50);
    }
    json_decref(prev);
    ledger_close(l);
    free(inv);
    gs_config_free(&top_spec, &cfg);
    return status;
}
