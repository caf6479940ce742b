/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "base/fs.h"
#include "config/quantity.h"
#include "tap.h"

struct demo_config {
    char *node_name;
    int64_t cores;
    uint64_t replicas;
    bool verbose;
    bool cdi;
    int64_t resync_ns;
    struct gs_quantity memory;
    int log_level;
    char *socket;
};

static const char *const levels[] = {"error", "warn", "info", "debug", NULL};

static const struct gs_option options[] = {
    {.name = "node-name",
     .env = "GS_TEST_NODE_NAME",
     .type = GS_OPT_STRING,
     .help = "Kubernetes node name",
     .offset = offsetof(struct demo_config, node_name)},
    {.name = "cores",
     .short_flag = 'c',
     .env = "GS_TEST_CORES",
     .type = GS_OPT_INT,
     .def = "100",
     .min = "0",
     .max = "100",
     .help = "SM share in percent",
     .offset = offsetof(struct demo_config, cores)},
    {.name = "replicas",
     .type = GS_OPT_UINT,
     .def = "1",
     .max = "64",
     .metavar = "COUNT",
     .help = "shares per GPU",
     .offset = offsetof(struct demo_config, replicas)},
    {.name = "verbose",
     .short_flag = 'v',
     .type = GS_OPT_BOOL,
     .help = "more logs",
     .offset = offsetof(struct demo_config, verbose)},
    {.name = "cdi",
     .type = GS_OPT_BOOL,
     .def = "true",
     .help = "write CDI specs",
     .offset = offsetof(struct demo_config, cdi)},
    {.name = "resync",
     .type = GS_OPT_DURATION,
     .def = "30s",
     .min = "1s",
     .max = "1h",
     .env = "GS_TEST_RESYNC",
     .help = "resync period",
     .offset = offsetof(struct demo_config, resync_ns)},
    {.name = "memory",
     .short_flag = 'm',
     .type = GS_OPT_QUANTITY,
     .def = "4Gi",
     .min = "1Mi",
     .max = "1Ti",
     .help = "memory limit",
     .offset = offsetof(struct demo_config, memory)},
    {.name = "log-level",
     .type = GS_OPT_ENUM,
     .choices = levels,
     .def = "info",
     .help = "log verbosity",
     .offset = offsetof(struct demo_config, log_level)},
    {.name = "socket",
     .long_flag = "plugin-socket",
     .short_flag = 's',
     .type = GS_OPT_STRING,
     .def = "/var/lib/kubelet/plugins/x.sock",
     .help = "socket path",
     .offset = offsetof(struct demo_config, socket)},
};

static const struct gs_config_spec spec = {
    .program = "demo",
    .usage = "[OPTIONS] [--] COMMAND...",
    .summary = "A demo of the option table.",
    .options = options,
    .n_options = GS_ARRAY_SIZE(options),
    .config_env = "GS_TEST_CONFIG",
    .config_max = 4096,
};

static char outbuf[8192];

/* Run gs_config_parse on a NULL-terminated argv; output captured in outbuf. */
static int run(struct demo_config *c, struct gs_error *err, int *first, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    argv[argc++] = (char *)"demo";
    const char *a;
    while ((a = va_arg(ap, const char *)) && argc < 31)
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    gs_config_free(&spec, c);
    memset(c, 0, sizeof(*c));
    FILE *out = fmemopen(outbuf, sizeof(outbuf), "w");
    int dummy;
    int r = gs_config_parse(&spec, c, argc, argv, out, first ? first : &dummy, err);
    fclose(out);
    return r;
}

static char dir[256];

static const char *write_cfg(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    gs_write_file_atomic(path, text, strlen(text), 0644, NULL);
    return path;
}

static void test_defaults_and_flags(void)
{
    struct demo_config c = {0};
    struct gs_error err = {0};
    char b[64];
    int first = -1;
    is_int(run(&c, &err, &first, NULL), 0, "no arguments");
    ok(c.node_name == NULL, "unset string is NULL");
    is_int(c.cores, 100, "default cores");
    is_uint(c.replicas, 1, "default replicas");
    ok(!c.verbose && c.cdi, "default booleans");
    is_int(c.resync_ns, 30000000000LL, "default duration 30s");
    is_str(gs_quantity_str(&c.memory, b), "4Gi", "default quantity");
    is_int(c.log_level, 2, "default enum info");
    is_str(c.socket, "/var/lib/kubelet/plugins/x.sock", "default string");
    is_int(first, 1, "first positional = argc when none");

    is_int(run(&c, &err, &first, "--cores=30", "-m", "1.5Gi", "--node-name", "n1", "-v", "--no-cdi",
               "--resync", "1m30s", "--log-level=debug", "-s/tmp/p.sock", "--replicas", "+8", "run",
               "--cores=5", NULL),
           0, "flags in every form");
    is_int(c.cores, 30, "--cores=30");
    is_str(gs_quantity_str(&c.memory, b), "1536Mi", "-m 1.5Gi");
    is_str(c.node_name, "n1", "--node-name n1");
    ok(c.verbose, "-v");
    ok(!c.cdi, "--no-cdi");
    is_int(c.resync_ns, 90000000000LL, "--resync 1m30s");
    is_int(c.log_level, 3, "--log-level=debug");
    is_str(c.socket, "/tmp/p.sock", "-s/tmp/p.sock (long flag differs from the name)");
    is_uint(c.replicas, 8, "--replicas +8");
    is_int(first, 14, "parsing stops at the first positional (run)");

    is_int(run(&c, &err, &first, "-c", "5", "--", "--cores=7", NULL), 0, "stops at --");
    is_int(c.cores, 5, "value before --");
    is_int(first, 4, "first positional after --");

    is_int(run(&c, &err, &first, "-vc7", NULL), 0, "clustered short flags");
    ok(c.verbose && c.cores == 7, "-vc7 = -v -c 7");
    is_int(run(&c, &err, &first, "--cores=1", "--cores=2", NULL), 0, "repeated flag");
    is_int(c.cores, 2, "last flag wins");
    is_int(run(&c, &err, &first, "--verbose=false", "--cdi=yes", NULL), 0, "bool with values");
    ok(!c.verbose && c.cdi, "--verbose=false --cdi=yes");
    is_int(run(&c, &err, &first, "-", NULL), 0, "lone dash is positional");
    is_int(first, 1, "lone dash index");
    is_int(run(&c, &err, &first, "--node-name=", NULL), 0, "empty string value");
    is_str(c.node_name, "", "empty string kept");
    gs_config_free(&spec, &c);
}

struct bad_case {
    const char *arg;
    const char *arg2;
    int code;
    const char *msg;
};

static const struct bad_case bad[] = {
    {"--cores=101", NULL, -ERANGE, "--cores: 101 is above the maximum 100"},
    {"--cores=-1", NULL, -ERANGE, "--cores: -1 is below the minimum 0"},
    {"-c", "abc", -EINVAL, "-c: \"abc\" is not an integer"},
    {"--cores=1.5", NULL, -EINVAL, "--cores: \"1.5\" is not an integer"},
    {"--cores=99999999999999999999", NULL, -ERANGE,
     "--cores: 99999999999999999999 is out of range"},
    {"--cores", NULL, -EINVAL, "--cores: missing value"},
    {"--replicas=-1", NULL, -EINVAL, "--replicas: \"-1\" is not a non-negative integer"},
    {"--replicas=65", NULL, -ERANGE, "--replicas: 65 is above the maximum 64"},
    {"--verbose=maybe", NULL, -EINVAL, "--verbose: \"maybe\" is not a boolean (true or false)"},
    {"--no-cdi=1", NULL, -EINVAL, "--no-cdi takes no value"},
    {"--resync=500ms", NULL, -ERANGE, "--resync: 500ms is below the minimum 1s"},
    {"--resync=2h", NULL, -ERANGE, "--resync: 2h is above the maximum 1h"},
    {"--resync=10", NULL, -EINVAL, "--resync: \"10\" is not a duration (e.g. 500ms, 10s, 1m30s)"},
    {"--memory=1Gb", NULL, -EINVAL, "--memory: invalid quantity \"1Gb\""},
    {"--memory=2Ti", NULL, -ERANGE, "--memory: 2Ti is above the maximum 1Ti"},
    {"-m", "1Ki", -ERANGE, "-m: 1Ki is below the minimum 1Mi"},
    {"--log-level=loud", NULL, -EINVAL,
     "--log-level: \"loud\" is not one of error, warn, info, debug"},
    {"--bogus", NULL, -EINVAL, "unknown option --bogus (see --help)"},
    {"-x", NULL, -EINVAL, "unknown option -x (see --help)"},
    {"--no-cores", NULL, -EINVAL, "unknown option --no-cores (see --help)"},
    {"--socket=/x", NULL, -EINVAL, "unknown option --socket (see --help)"},
    {"--help=1", NULL, -EINVAL, "--help takes no value"},
    {"--config", NULL, -EINVAL, "--config: missing value"},
};

static void test_errors(void)
{
    struct demo_config c = {0};
    for (size_t i = 0; i < GS_ARRAY_SIZE(bad); i++) {
        struct gs_error err = {0};
        int r = run(&c, &err, NULL, bad[i].arg, bad[i].arg2, NULL);
        is_int(r, bad[i].code, "%s %s refused", bad[i].arg, bad[i].arg2 ? bad[i].arg2 : "");
        like_str(err.msg, bad[i].msg, "%s message", bad[i].arg);
    }
    gs_config_free(&spec, &c);
}

static void test_sources(void)
{
    struct demo_config c = {0};
    struct gs_error err = {0};
    char b[64];
    const char *yaml = write_cfg("demo.yaml", "# demo\n"
                                              "node-name: from-file\n"
                                              "cores: 40\n"
                                              "memory: 2Gi\n"
                                              "verbose: true\n"
                                              "resync: 5m\n"
                                              "log-level: warn\n"
                                              "replicas: 4\n");
    is_int(run(&c, &err, NULL, "--config", yaml, NULL), 0, "config file");
    is_str(c.node_name, "from-file", "file string");
    is_int(c.cores, 40, "file int");
    is_str(gs_quantity_str(&c.memory, b), "2Gi", "file quantity");
    ok(c.verbose, "file bool");
    is_int(c.resync_ns, 300000000000LL, "file duration");
    is_int(c.log_level, 1, "file enum");
    is_uint(c.replicas, 4, "file uint");

    /* precedence: file < env < flags */
    setenv("GS_TEST_CORES", "50", 1);
    setenv("GS_TEST_NODE_NAME", "from-env", 1);
    is_int(run(&c, &err, NULL, "--config", yaml, NULL), 0, "file + env");
    is_int(c.cores, 50, "env beats file");
    is_str(c.node_name, "from-env", "env string beats file");
    is_int(run(&c, &err, NULL, "--cores=60", "--config", yaml, NULL), 0, "file + env + flag");
    is_int(c.cores, 60, "flag beats env, wherever --config is");
    setenv("GS_TEST_CORES", "200", 1);
    is_int(run(&c, &err, NULL, NULL), -ERANGE, "bad env value");
    is_str(err.msg, "GS_TEST_CORES: 200 is above the maximum 100", "env error names the variable");
    unsetenv("GS_TEST_CORES");
    unsetenv("GS_TEST_NODE_NAME");
    setenv("GS_TEST_RESYNC", "soon", 1);
    is_int(run(&c, &err, NULL, NULL), -EINVAL, "bad env duration");
    like_str(err.msg, "GS_TEST_RESYNC: \"soon\" is not a duration", "env duration message");
    unsetenv("GS_TEST_RESYNC");

    /* config file from the environment */
    setenv("GS_TEST_CONFIG", yaml, 1);
    is_int(run(&c, &err, NULL, NULL), 0, "config file named by env");
    is_int(c.cores, 40, "file from env applied");
    unsetenv("GS_TEST_CONFIG");

    const char *json = write_cfg("demo.json", "{\"cores\": 10, \"memory\": 0.5, \"cdi\": false}");
    is_int(run(&c, &err, NULL, "--config=", NULL), -ENOENT, "empty --config= path");
    is_int(run(&c, &err, NULL, "--config", json, NULL), -ERANGE, "JSON config out of bounds");
    like_str(err.msg, "demo.json: memory: 500m is below the minimum 1Mi", "JSON number quantity");
    json = write_cfg("demo.json", "{\"cores\": 10, \"memory\": 1073741824, \"cdi\": false}");
    is_int(run(&c, &err, NULL, "--config", json, NULL), 0, "JSON config");
    is_int(c.cores, 10, "JSON int");
    is_str(gs_quantity_str(&c.memory, b), "1073741824", "JSON number quantity, DecimalSI");
    ok(!c.cdi, "JSON bool");

    struct {
        const char *text, *msg;
        int code;
    } badfiles[] = {
        {"cores: \"40\"\n", "bad.yaml: cores: expected integer, got string", -EINVAL},
        {"verbose: yes please\n", "bad.yaml: verbose: expected boolean, got string", -EINVAL},
        {"node-name: 12\n", "bad.yaml: node-name: expected string, got number", -EINVAL},
        {"cores: 101\n", "bad.yaml: cores: 101 is above the maximum 100", -ERANGE},
        {"colors: 3\n", "bad.yaml: unknown option \"colors\"", -EINVAL},
        {"plugin-socket: /x\n", "bad.yaml: unknown option \"plugin-socket\"", -EINVAL},
        {"- 1\n- 2\n", "bad.yaml: expected one mapping of option names to values", -EINVAL},
        {"cores: [\n", "bad.yaml: line ", -EINVAL},
        {"memory: {a: 1}\n", "bad.yaml: memory: expected quantity (string or number), got object",
         -EINVAL},
    };
    for (size_t i = 0; i < GS_ARRAY_SIZE(badfiles); i++) {
        const char *p = write_cfg("bad.yaml", badfiles[i].text);
        is_int(run(&c, &err, NULL, "--config", p, NULL), badfiles[i].code, "bad file %zu", i);
        like_str(err.msg, badfiles[i].msg, "bad file %zu message", i);
    }
    char big[5000];
    memset(big, '#', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    const char *p = write_cfg("big.yaml", big);
    is_int(run(&c, &err, NULL, "--config", p, NULL), -EFBIG, "config file over config_max");
    p = write_cfg("empty.yaml", "# nothing set\n");
    is_int(run(&c, &err, NULL, "--config", p, NULL), 0, "comment-only config file");
    is_int(c.cores, 100, "empty file keeps defaults");
    p = write_cfg("null.yaml", "cores: ~\n");
    is_int(run(&c, &err, NULL, "--config", p, NULL), 0, "null value in file");
    is_int(c.cores, 100, "null keeps the default");
    is_int(run(&c, &err, NULL, "--config", "/nonexistent/x.yaml", NULL), -ENOENT,
           "missing config file");
    like_str(err.msg, "/nonexistent/x.yaml", "missing file named");
    gs_config_free(&spec, &c);
}

static void test_output(void)
{
    struct demo_config c = {0};
    struct gs_error err = {0};
    is_int(run(&c, &err, NULL, "--cores=7", "--help", NULL), GS_CONFIG_EXIT, "--help exits");
    like_str(outbuf, "Usage: demo [OPTIONS] [--] COMMAND...\nA demo of the option table.\n",
             "usage and summary");
    like_str(outbuf,
             "  -c, --cores=INT             SM share in percent (default 100) [0..100] "
             "[env GS_TEST_CORES]\n",
             "cores line");
    like_str(outbuf, "      --[no-]cdi              write CDI specs (default true)\n", "bool line");
    like_str(outbuf, "--log-level=error|warn|info|debug", "enum metavar");
    like_str(outbuf, "--replicas=COUNT", "explicit metavar");
    like_str(outbuf, "  -s, --plugin-socket=STRING", "long flag differing from the name");
    like_str(outbuf, "--config=FILE", "config flag listed");
    like_str(outbuf, "[env GS_TEST_CONFIG]", "config env listed");
    like_str(outbuf, "  -h, --help", "help listed");
    is_int(run(&c, &err, NULL, "-h", "--bogus=1", NULL), -EINVAL,
           "syntax errors are reported even with -h");

    is_int(run(&c, &err, NULL, "--cores=7", "-m", "1536Mi", "--node-name", "a \"q\" b",
               "--resync=90s", "--print-config", NULL),
           GS_CONFIG_EXIT, "--print-config exits");
    is_str(outbuf,
           "# demo configuration (defaults < config file < environment < flags)\n"
           "node-name: \"a \\\"q\\\" b\"\n"
           "cores: 7\n"
           "replicas: 1\n"
           "verbose: false\n"
           "cdi: true\n"
           "resync: \"1m30s\"\n"
           "memory: \"1536Mi\"\n"
           "log-level: \"info\"\n"
           "socket: \"/var/lib/kubelet/plugins/x.sock\"\n",
           "effective configuration printed as YAML");
    /* round trip: the printed configuration reads back to the same configuration */
    char first_print[8192];
    snprintf(first_print, sizeof(first_print), "%s", outbuf);
    const char *p = write_cfg("printed.yaml", first_print);
    is_int(run(&c, &err, NULL, "--config", p, "--print-config", NULL), GS_CONFIG_EXIT,
           "printed config loads");
    is_str(outbuf, first_print, "print-config output is a fixed point");
    is_int(run(&c, &err, NULL, "--print-config", NULL), GS_CONFIG_EXIT, "unset string printed");
    like_str(outbuf, "node-name: null\n", "unset string printed as null");
    gs_config_free(&spec, &c);
}

static void test_table_checks(void)
{
    struct demo_config c = {0};
    struct gs_error err = {0};
    struct gs_option dup[] = {options[1], options[1]};
    struct gs_config_spec s = {.program = "x", .options = dup, .n_options = 2};
    is_int(gs_config_defaults(&s, &c, &err), -EINVAL, "duplicate option refused");
    is_str(err.msg, "option table: cores is defined twice", "duplicate message");
    struct gs_option baddef[] = {options[1]};
    baddef[0].def = "1000";
    s.options = baddef;
    s.n_options = 1;
    is_int(gs_config_defaults(&s, &c, &err), -ERANGE, "default outside bounds refused");
    like_str(err.msg, "option table: default of cores: 1000 is above the maximum 100",
             "bad default message");
    struct gs_option reserved[] = {{.name = "help", .type = GS_OPT_BOOL, .help = "x"}};
    s.options = reserved;
    is_int(gs_config_defaults(&s, &c, &err), -EINVAL, "reserved name refused");

    /* gs_config_set */
    s = spec;
    memset(&c, 0, sizeof(c));
    gs_config_defaults(&spec, &c, &err);
    is_int(gs_config_set(&spec, &c, "cores", "12", NULL, &err), 0, "gs_config_set");
    is_int(c.cores, 12, "set value");
    is_int(gs_config_set(&spec, &c, "cores", "120", "api", &err), -ERANGE, "set out of bounds");
    is_str(err.msg, "api: 120 is above the maximum 100", "set message names the source");
    is_int(gs_config_set(&spec, &c, "nope", "1", NULL, &err), -EINVAL, "set unknown");
    gs_config_free(&spec, &c);
    ok(c.socket == NULL && c.node_name == NULL, "free clears strings");
    gs_config_free(&spec, &c);
}

struct dur_case {
    const char *in;
    int64_t ns;
    const char *canonical;
};

static const struct dur_case durs[] = {
    {"0", 0, "0s"},
    {"0s", 0, "0s"},
    {"1ns", 1, "1ns"},
    {"999ns", 999, "999ns"},
    {"1us", 1000, "1us"},
    {"1\xc2\xb5s", 1000, "1us"},
    {"1.5us", 1500, "1.5us"},
    {"500ms", 500000000, "500ms"},
    {"1.25ms", 1250000, "1.25ms"},
    {"10s", 10000000000LL, "10s"},
    {"1.5s", 1500000000, "1.5s"},
    {"90s", 90000000000LL, "1m30s"},
    {"1m30s", 90000000000LL, "1m30s"},
    {"1m", 60000000000LL, "1m0s"},
    {"1h", 3600000000000LL, "1h0m0s"},
    {"1.5h", 5400000000000LL, "1h30m0s"},
    {"2h45m0.5s", 9900500000000LL, "2h45m0.5s"},
    {"1h1ms", 3600001000000LL, "1h0m0.001s"},
    {"-2s", -2000000000LL, "-2s"},
    {"+3m", 180000000000LL, "3m0s"},
    {".5s", 500000000, "500ms"},
    {"1.s", 1000000000, "1s"},
    {"2562047h47m16.854775807s", INT64_MAX, "2562047h47m16.854775807s"},
};

static void test_durations(void)
{
    struct gs_error err = {0};
    for (size_t i = 0; i < GS_ARRAY_SIZE(durs); i++) {
        int64_t ns = -42;
        char b[64];
        is_int(gs_parse_duration(durs[i].in, &ns, &err), 0, "duration %s", durs[i].in);
        is_int(ns, durs[i].ns, "duration %s in ns", durs[i].in);
        gs_format_duration(ns, b, sizeof(b));
        is_str(b, durs[i].canonical, "duration %s formatted", durs[i].in);
    }
    const char *badd[] = {"",       "s",  "10", "1x",  "1 s",  "1s ", "--1s",
                          "1.2.3s", ".s", "ms", "1sm", "1e3s", "-"};
    for (size_t i = 0; i < GS_ARRAY_SIZE(badd); i++) {
        int64_t ns;
        is_int(gs_parse_duration(badd[i], &ns, &err), -EINVAL, "bad duration \"%s\"", badd[i]);
    }
    int64_t ns;
    is_int(gs_parse_duration("2562048h", &ns, &err), -ERANGE, "duration overflow");
    is_int(gs_parse_duration("99999999999999999999999s", &ns, &err), -ERANGE,
           "duration digits overflow");
    like_str(err.msg, "out of range", "overflow message");
    bool b;
    is_int(gs_parse_bool("ON", &b), 0, "bool ON");
    ok(b, "ON is true");
    is_int(gs_parse_bool("0", &b), 0, "bool 0");
    ok(!b, "0 is false");
    is_int(gs_parse_bool("nope", &b), -EINVAL, "bool nope");
}

int main(void)
{
    tap_plan_auto();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/gs-test-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return ok(0, "mkdtemp"), tap_done();
    unsetenv("GS_TEST_CORES");
    unsetenv("GS_TEST_NODE_NAME");
    unsetenv("GS_TEST_CONFIG");
    unsetenv("GS_TEST_RESYNC");
    test_defaults_and_flags();
    test_errors();
    test_sources();
    test_output();
    test_table_checks();
    test_durations();
    gs_rm_rf(dir, NULL);
    return tap_done();
}
