/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice run [options] -- COMMAND [ARGS...]
 *
 * Allocates a slice of this machine's GPUs against the ledger of live slices (the DRA allocator,
 * as kube-scheduler would), writes the slice's limits file, and runs COMMAND with libvgpu preloaded
 * and CUDA_VISIBLE_DEVICES set to the chosen GPUs' UUIDs. Signals are forwarded; the exit status is
 * COMMAND's (128+N when it died of signal N). The slice is released when COMMAND ends, or reclaimed
 * by the next allocation if this runner dies (COMMAND is then killed: PR_SET_PDEATHSIG).
 *
 * Exit codes of its own: 2 bad usage or input, 3 the slice does not fit (or --wait timed out),
 * 4 could not run (no GPU, state dir, exec failure: 127 when COMMAND is not found).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "cli/commands.h"
#include "cli/health.h"
#include "cli/ledger.h"
#include "cli/members.h"
#include "cli/standalone.h"
#include "base/clock.h"
#include "config/config.h"
#include "base/fs.h"
#include "base/log.h"
#include "config/quantity.h"

#define EXIT_USAGE       2
#define EXIT_NOFIT       3
#define EXIT_FAILURE_RUN 4

/* What the child reports through the sync pipe before exec ({stage, errno}). */
enum { SPAWN_EXEC = 1, SPAWN_JOIN = 2 };

struct run_config {
    char *memory;
    char *cores;
    int64_t gpus;
    char *gpu_type;
    int policy;
    char *name;
    bool wait;
    int64_t timeout_ns;
    bool sim;
    bool quiet;
    char *state_dir;
    int compute_policy;
    int priority;
};

static const char *const policies[] = {"binpack", "first-fit", "spread", "topology", NULL};
/* index 0 = not given: the default policy (work-conserving) / priority (low) */
static const char *const compute_policies[] = {"default", "hard", "work-conserving", "disabled",
                                               NULL};
static const char *const priorities[] = {"default", "high", "low", NULL};

static const struct gs_option run_options[] = {
    {.name = "memory",
     .short_flag = 'm',
     .type = GS_OPT_STRING,
     .metavar = "QUANTITY",
     .help = "GPU memory of the slice, a Kubernetes quantity (4Gi, 8000Mi); default: the whole "
             "device",
     .offset = offsetof(struct run_config, memory)},
    {.name = "cores",
     .short_flag = 'c',
     .type = GS_OPT_STRING,
     .metavar = "PERCENT",
     .help = "compute share in percent, 1..100; default: the whole device",
     .offset = offsetof(struct run_config, cores)},
    {.name = "gpus",
     .short_flag = 'g',
     .type = GS_OPT_INT,
     .def = "1",
     .min = "1",
     .max = "32",
     .help = "number of GPUs, each with this memory and compute share",
     .offset = offsetof(struct run_config, gpus)},
    {.name = "gpu-type",
     .type = GS_OPT_STRING,
     .metavar = "SUBSTR",
     .help = "only GPUs whose product name contains SUBSTR (case-insensitive), e.g. T4, A100",
     .offset = offsetof(struct run_config, gpu_type)},
    {.name = "policy",
     .type = GS_OPT_ENUM,
     .choices = policies,
     .def = "binpack",
     .help = "placement: binpack (fill used GPUs first), first-fit (kube-scheduler's order), "
             "spread, topology (NVLink, then PCIe root)",
     .offset = offsetof(struct run_config, policy)},
    {.name = "name",
     .short_flag = 'n',
     .type = GS_OPT_STRING,
     .help = "name of the slice in `gpuslice ls` (default slice-<id>)",
     .offset = offsetof(struct run_config, name)},
    {.name = "wait",
     .short_flag = 'w',
     .type = GS_OPT_BOOL,
     .def = "false",
     .help = "wait until the slice fits instead of failing",
     .offset = offsetof(struct run_config, wait)},
    {.name = "timeout",
     .type = GS_OPT_DURATION,
     .def = "0",
     .min = "0",
     .help = "with --wait: give up after this long (0 = wait forever)",
     .offset = offsetof(struct run_config, timeout_ns)},
    {.name = "sim",
     .env = "GPUSLICE_SIM",
     .type = GS_OPT_BOOL,
     .def = "false",
     .help = "use the simulated GPU (gpusim) instead of the NVIDIA driver",
     .offset = offsetof(struct run_config, sim)},
    {.name = "quiet",
     .short_flag = 'q',
     .type = GS_OPT_BOOL,
     .def = "false",
     .help = "do not print the slice summary line",
     .offset = offsetof(struct run_config, quiet)},
    {.name = "compute-policy",
     .env = "GPUSLICE_COMPUTE_POLICY",
     .type = GS_OPT_ENUM,
     .choices = compute_policies,
     .def = "default",
     .help = "hard: the compute share is a ceiling; work-conserving (the default, HAMi's): the "
             "share applies only while another slice of the GPU with the same or a higher "
             "priority has work pending; disabled: no compute cap",
     .offset = offsetof(struct run_config, compute_policy)},
    {.name = "priority",
     .env = "GPUSLICE_PRIORITY",
     .type = GS_OPT_ENUM,
     .choices = priorities,
     .def = "default",
     .help = "high (HAMi's CUDA_TASK_PRIORITY 0) or low (1, the default): while a high-priority "
             "slice has work pending, low-priority slices of its GPU get at most 5 % of it",
     .offset = offsetof(struct run_config, priority)},
    {.name = "state-dir",
     .env = "GPUSLICE_STATE_DIR",
     .type = GS_OPT_STRING,
     .metavar = "DIR",
     .help = "where the ledger and the slices live (default /var/lib/gpuslice as root, else "
             "$XDG_STATE_HOME/gpuslice)",
     .offset = offsetof(struct run_config, state_dir)},
};

static const struct gs_config_spec run_spec = {
    .program = "gpuslice run",
    .usage = "[OPTIONS] -- COMMAND [ARGS...]",
    .summary = "Run COMMAND on a slice of this machine's GPUs, enforced by libvgpu.",
    .options = run_options,
    .n_options = GS_ARRAY_SIZE(run_options),
};

static enum alloc_policy policy_of(int idx)
{
    static const enum alloc_policy map[] = {ALLOC_POLICY_BINPACK, ALLOC_POLICY_FIRST_FIT,
                                            ALLOC_POLICY_SPREAD, ALLOC_POLICY_TOPOLOGY};
    return map[idx];
}

struct decide_ctx {
    json_t *slice, *cls, *claim;
    const char *node;
    enum alloc_policy policy;
    char *why; /* explanation text of the last refusal (malloc'd) */
};

/* Does an unreadable ledger entry (ledger.h LEDGER_UNREADABLE) hold device `dev`? It holds the
 * devices it names, by name or UUID; one that names none holds every device. */
static bool unreadable_holds(const json_t *u, const json_t *dev)
{
    const json_t *names = json_object_get(u, "devices"), *uuids = json_object_get(u, "uuids");
    if (json_array_size(names) == 0 && json_array_size(uuids) == 0)
        return true;
    const char *name = json_string_value(json_object_get(dev, "name"));
    const char *uuid = json_string_value(
        json_object_get(json_object_get(json_object_get(dev, "attributes"), "uuid"), "string"));
    size_t i;
    const json_t *v;
    json_array_foreach(names, i, v) if (name && json_is_string(v) &&
                                        strcmp(json_string_value(v), name) == 0) return true;
    json_array_foreach(uuids, i, v) if (uuid && json_is_string(v) &&
                                        strcmp(json_string_value(v), uuid) == 0) return true;
    return false;
}

/* The slice without the devices unreadable ledger entries hold: they count as fully allocated
 * (fail closed) until the entry is proven dead and reclaimed. New reference. */
static json_t *usable_slice(const json_t *slice, const json_t *live)
{
    json_t *copy = json_deep_copy(slice);
    json_t *devs = json_object_get(json_object_get(copy, "spec"), "devices");
    for (size_t d = json_array_size(devs); d-- > 0;) {
        size_t i;
        const json_t *e;
        json_array_foreach(live, i, e)
        {
            const json_t *u = json_object_get(e, LEDGER_UNREADABLE);
            if (u && unreadable_holds(u, json_array_get(devs, d))) {
                json_array_remove(devs, d);
                break;
            }
        }
    }
    return copy;
}

/* A slice that does not fit may be for want of a GPU that is lost: name it (cli/health.h). */
static void print_unhealthy(const char *state_dir)
{
    json_t *u = cli_unhealthy_gpus(state_dir);
    cli_print_unhealthy(stderr, u, "gpuslice run: ");
    json_decref(u);
}

static int decide(void *ud, json_t *live, json_t **allocation, struct gs_error *err)
{
    struct decide_ctx *c = ud;
    struct alloc_state *st = alloc_state_new();
    if (!st)
        return gs_error_set(err, -ENOMEM, "allocator: out of memory");
    json_t *slice = usable_slice(c->slice, live);
    int rc = slice ? alloc_state_add_class(st, c->cls, err)
                   : gs_error_set(err, -ENOMEM, "allocator: out of memory");
    if (rc == 0)
        rc = alloc_state_add_slice(st, slice, err);
    json_decref(slice);
    size_t i;
    json_t *claim;
    json_array_foreach(live, i, claim)
    {
        if (rc < 0)
            break;
        if (json_object_get(claim, LEDGER_UNREADABLE))
            continue; /* its devices were taken out of the slice above */
        int r = alloc_state_add_allocated_claim(st, claim, err);
        if (r < 0) {
            /* A row we cannot read must not be ignored: that would over-commit. */
            gs_error_prefix(err, "ledger slice %zu: ", i);
            rc = r;
        }
    }
    struct alloc_explanation *why = NULL;
    if (rc == 0) {
        struct alloc_options opt = {.node = c->node, .policy = c->policy};
        rc = alloc_claim(st, c->claim, &opt, allocation, &why, err);
    }
    free(c->why);
    c->why = NULL;
    if (why) {
        size_t len = 0;
        FILE *f = open_memstream(&c->why, &len);
        if (f) {
            alloc_explanation_print(why, f);
            fclose(f);
        }
        alloc_explanation_free(why);
    }
    alloc_state_free(st);
    return rc;
}

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static void format_bytes(char *buf, size_t len, uint64_t bytes)
{
    struct gs_quantity q;
    gs_quantity_from_int64((int64_t)GS_MIN(bytes, (uint64_t)INT64_MAX), GS_QUANTITY_BINARY_SI, &q);
    gs_quantity_format(&q, buf, len);
}

static void print_summary(const struct run_config *cfg, const json_t *claim,
                          const struct claim_plan *plan)
{
    const char *name =
        json_string_value(json_object_get(json_object_get(claim, "metadata"), "name"));
    for (size_t i = 0; i < plan->n_devices; i++) {
        const struct claim_device *d = &plan->devices[i];
        char mem[GS_QUANTITY_STR_MAX] = "whole";
        if (d->memory_limit)
            format_bytes(mem, sizeof(mem), d->memory_limit);
        fprintf(stderr, "gpuslice: slice %s: %s (%s) cores %u%% memory %s\n", name, d->device,
                d->uuid, d->cores ? d->cores : 100, mem);
    }
    (void)cfg;
}

static int parse_request(const struct run_config *cfg, struct sa_request *r, struct gs_error *err)
{
    memset(r, 0, sizeof(*r));
    r->memory = -1;
    r->cores = -1;
    r->gpus = cfg->gpus;
    r->gpu_type = cfg->gpu_type;
    r->name = cfg->name;
    r->compute_policy = cfg->compute_policy > 0 ? compute_policies[cfg->compute_policy] : NULL;
    r->priority = cfg->priority == 1 ? 0 : cfg->priority == 2 ? 1 : -1;
    if (cfg->memory) {
        struct gs_quantity q;
        struct gs_error qe = {0};
        int qr = gs_quantity_parse(cfg->memory, &q, &qe);
        if (qr == -ERANGE)
            return gs_error_set(err, -EINVAL,
                                "--memory: \"%s\" is too large (at most 8Ei minus one byte)",
                                cfg->memory);
        if (qr < 0)
            return gs_error_set(
                err, -EINVAL, "--memory: \"%s\" is not a quantity (e.g. 4Gi, 8000Mi)", cfg->memory);
        int64_t v;
        if (gs_quantity_value(&q, &v) < 0 || v <= 0)
            return gs_error_set(err, -EINVAL, "--memory: \"%s\" must be more than 0", cfg->memory);
        /* A quantity without a suffix is bytes (Kubernetes' rule), but HAMi users write MiB
         * (nvidia.com/gpumem: 4096): below the slice minimum (1Mi, the ResourceSlice's validRange)
         * say so rather than run a slice nobody meant. */
        if (v < 1024 * 1024) {
            if (strspn(cfg->memory, "0123456789") == strlen(cfg->memory))
                return gs_error_set(err, -EINVAL,
                                    "--memory: \"%s\" is %s bytes, below the 1Mi minimum; a bare "
                                    "number is bytes (did you mean %sMi?)",
                                    cfg->memory, cfg->memory, cfg->memory);
            return gs_error_set(err, -EINVAL, "--memory: \"%s\" is below the 1Mi minimum",
                                cfg->memory);
        }
        r->memory = v;
    }
    if (cfg->cores) {
        char *end;
        errno = 0;
        long long v = strtoll(cfg->cores, &end, 10);
        if (errno || end == cfg->cores || *end)
            return gs_error_set(err, -EINVAL, "--cores: \"%s\" is not an integer percentage",
                                cfg->cores);
        if (v < 0 || v > 100)
            return gs_error_set(err, -EINVAL, "--cores: %lld is outside 1..100", v);
        /* HAMi's CUDA_DEVICE_SM_LIMIT=0 means "no limit", so 0 would silently be the whole GPU:
         * refuse it and say how to ask for that. */
        if (v == 0)
            return gs_error_set(err, -EINVAL,
                                "--cores: 0 would mean no compute limit (HAMi's reading); give "
                                "1..100, or leave --cores out for the whole device");
        r->cores = v;
    }
    if (cfg->name && (!*cfg->name || strlen(cfg->name) > 63 || strpbrk(cfg->name, "/ \t\n")))
        return gs_error_set(err, -EINVAL,
                            "--name: \"%s\" must be 1..63 characters without '/' "
                            "or spaces",
                            cfg->name);
    return sa_validate_request(r, err);
}

static void join_command(char *buf, size_t len, int argc, char **argv)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && pos + 2 < len; i++) {
        int n = snprintf(buf + pos, len - pos, "%s%s", i ? " " : "", argv[i]);
        if (n < 0)
            break;
        pos += (size_t)n;
    }
    if (pos >= len)
        buf[len - 1] = '\0';
}

static int spawn(const struct sa_env *env, const struct claim_plan *plan, const char *uid,
                 const char *cgroup, char **cmd, pid_t *out, struct gs_error *err)
{
    char limits_dir[SA_PATH_MAX + 16], dir[SA_PATH_MAX];
    sa_slice_dir(env, uid, dir, sizeof(dir));
    snprintf(limits_dir, sizeof(limits_dir), "%s/limits", dir);
    char visible[CLAIM_MAX_DEVICES * (GPU_STR_MAX + 1)] = "";
    size_t vis_len = 0;
    for (size_t i = 0; i < plan->n_devices; i++) {
        int n = snprintf(visible + vis_len, sizeof(visible) - vis_len, "%s%.*s", i ? "," : "",
                         (int)GPU_STR_MAX, plan->devices[i].uuid);
        if (n < 0 || (size_t)n >= sizeof(visible) - vis_len)
            return gs_error_set(err, -ENAMETOOLONG, "slice %s: CUDA_VISIBLE_DEVICES is too long",
                                uid);
        vis_len += (size_t)n;
    }
    char preload[SA_PATH_MAX * 2];
    const char *old = getenv("LD_PRELOAD");
    /* The user's own preloads stay first (a sanitizer runtime must be the first DSO). */
    snprintf(preload, sizeof(preload), "%s%s%s", old ? old : "", old && *old ? ":" : "",
             env->vgpu_lib);
    int sync_pipe[2];
    if (pipe2(sync_pipe, O_CLOEXEC) != 0)
        return gs_error_set(err, -errno, "pipe: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(sync_pipe[0]);
        close(sync_pipe[1]);
        return gs_error_set(err, -errno, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(sync_pipe[0]);
        /* The slice dies with its runner: a reclaimed slice must not keep running. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(EXIT_FAILURE_RUN);
        /* Everything the command starts, setsid or not, stays in the slice's cgroup: a cgroup
         * created for it that cannot be joined is an error, never a slice nobody can see. */
        int jr = members_cgroup_join(cgroup);
        if (jr < 0) {
            int msg[2] = {SPAWN_JOIN, -jr};
            if (write(sync_pipe[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
                _exit(EXIT_FAILURE_RUN);
            _exit(EXIT_FAILURE_RUN);
        }
        setenv("GPUSLICE_LIMITS_DIR", limits_dir, 1);
        setenv("LD_PRELOAD", preload, 1);
        setenv("CUDA_VISIBLE_DEVICES", visible, 1);
        setenv("GPUSLICE_SLICE", uid, 1);
        signal(SIGPIPE, SIG_DFL);
        execvp(cmd[0], cmd);
        int msg[2] = {SPAWN_EXEC, errno};
        if (write(sync_pipe[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
            _exit(127);
        _exit(msg[1] == ENOENT ? 127 : 126);
    }
    close(sync_pipe[1]);
    int msg[2] = {0, 0};
    ssize_t n;
    do {
        n = read(sync_pipe[0], msg, sizeof(msg));
    } while (n < 0 && errno == EINTR);
    close(sync_pipe[0]);
    *out = pid;
    if (n == (ssize_t)sizeof(msg)) {
        waitpid(pid, NULL, 0);
        int e = msg[1];
        if (msg[0] == SPAWN_JOIN)
            return gs_error_set(err, -EXIT_FAILURE_RUN,
                                "cannot join the slice's cgroup %s: %s (errno %d); the command "
                                "was not run (GPUSLICE_CGROUP=off runs without a cgroup)",
                                cgroup, strerror(e), e);
        return gs_error_set(err, -e, "%s: %s", cmd[0], strerror(e));
    }
    return 0;
}

/* Whether execvp(3) would find `prog`: a name with a slash is taken as it is, otherwise each
 * directory of $PATH (glibc's default "/bin:/usr/bin" when unset; an empty entry is the current
 * directory, as execvp does). 0, or -errno of the last failure (-ENOENT when found nowhere,
 * -EACCES when found but not executable), checked before anything is allocated. */
static int find_program(const char *prog)
{
    if (!*prog)
        return -ENOENT;
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0 ? 0 : -errno;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    int r = -ENOENT;
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        char cand[PATH_MAX];
        int n = end == p ? snprintf(cand, sizeof(cand), "%s", prog)
                         : snprintf(cand, sizeof(cand), "%.*s/%s", (int)(end - p), p, prog);
        if (n > 0 && (size_t)n < sizeof(cand)) {
            struct stat st;
            if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
                if (access(cand, X_OK) == 0)
                    return 0;
                r = -EACCES;
            }
        }
        if (!*end)
            break;
        p = end;
    }
    return r;
}

int cmd_run(int argc, char **argv)
{
    struct run_config cfg = {0};
    struct gs_error err = {0};
    int first = 0;
    int r = gs_config_parse(&run_spec, &cfg, argc, argv, stdout, &first, &err);
    if (r == GS_CONFIG_EXIT) {
        gs_config_free(&run_spec, &cfg);
        return 0;
    }
    if (r < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        gs_config_free(&run_spec, &cfg);
        return EXIT_USAGE;
    }
    int status = EXIT_FAILURE_RUN;
    struct sa_request req;
    struct sa_env env;
    json_t *slice = NULL, *cls = NULL, *claim = NULL;
    struct ledger *ledger = NULL;
    struct gpu_inventory *inv = NULL;
    struct claim_plan *plan = NULL;
    struct decide_ctx dc = {0};
    int64_t row = -1;
    char dir[SA_PATH_MAX] = "";
    char cgroup[SA_PATH_MAX] = "";

    if (first >= argc) {
        fprintf(stderr, "gpuslice run: no COMMAND given (gpuslice run [OPTIONS] -- COMMAND "
                        "[ARGS...])\n");
        status = EXIT_USAGE;
        goto out;
    }
    if (parse_request(&cfg, &req, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        status = EXIT_USAGE;
        goto out;
    }
    r = find_program(argv[first]);
    if (r < 0) {
        /* execvp's own exit status for a command that cannot run, before any slice exists. */
        fprintf(stderr, "gpuslice run: %s: %s (no slice was allocated)\n", argv[first],
                strerror(-r));
        status = r == -ENOENT ? 127 : 126;
        goto out;
    }
    if (sa_env_init(&env, cfg.state_dir, cfg.sim, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        goto out;
    }
    if (cfg.sim && sa_reexec_with_sim(&env, argv - 1, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        goto out;
    }
    inv = calloc(1, sizeof(*inv));
    plan = calloc(1, sizeof(*plan));
    if (!inv || !plan) {
        fprintf(stderr, "gpuslice run: out of memory\n");
        goto out;
    }
    if (sa_discover(&env, inv, &slice, &cls, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        print_unhealthy(env.state_dir);
        goto out;
    }
    /* GPUs the monitor's watcher calls unhealthy get the plugin's NoSchedule taint: the
     * allocator places nothing on them (cli/health.h). */
    cli_taint_unhealthy(slice, env.state_dir, SA_DRIVER);
    if (sa_build_claim(&req, &claim, &err) < 0 || ledger_open(env.state_dir, &ledger, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        goto out;
    }
    char command[512];
    join_command(command, sizeof(command), argc - first, argv + first);
    const char *uid = json_string_value(json_object_get(json_object_get(claim, "metadata"), "uid"));
    const char *name =
        json_string_value(json_object_get(json_object_get(claim, "metadata"), "name"));
    sa_slice_dir(&env, uid, dir, sizeof(dir));
    struct ledger_entry entry = {
        .name = name, .command = command, .slice_dir = dir, .claim = claim};
    ledger_owner_of(0, &entry.owner);
    dc = (struct decide_ctx){.slice = slice,
                             .cls = cls,
                             .claim = claim,
                             .node = env.node,
                             .policy = policy_of(cfg.policy)};
    uint64_t start = gs_now_ns();
    char last_reason[256] = "";
    for (;;) {
        r = ledger_allocate(ledger, &entry, decide, &dc, &row, &err);
        if (r == 0)
            break;
        if (r != ALLOC_UNSCHEDULABLE) {
            fprintf(stderr, "gpuslice run: %s\n", err.msg);
            if (dc.why)
                fputs(dc.why, stderr);
            status = r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_RUN;
            goto out;
        }
        if (!cfg.wait) {
            if (dc.why)
                fprintf(stderr, "gpuslice run: slice %s does not fit:\n%s", name, dc.why);
            else
                fprintf(stderr, "gpuslice run: slice %s does not fit: %s\n", name, err.msg);
            print_unhealthy(env.state_dir);
            status = EXIT_NOFIT;
            goto out;
        }
        if (cfg.timeout_ns > 0 && gs_now_ns() - start >= (uint64_t)cfg.timeout_ns) {
            fprintf(stderr, "gpuslice run: gave up waiting for slice %s after %.1fs: %s\n", name,
                    (double)(gs_now_ns() - start) / 1e9, err.msg);
            if (dc.why)
                fputs(dc.why, stderr);
            print_unhealthy(env.state_dir);
            status = EXIT_NOFIT;
            goto out;
        }
        if (strcmp(last_reason, err.msg) != 0) {
            fprintf(stderr, "gpuslice run: waiting for slice %s to fit: %s\n", name, err.msg);
            snprintf(last_reason, sizeof(last_reason), "%s", err.msg);
        }
        gs_sleep_ns(250 * 1000 * 1000LL);
    }
    /* The ledger is not kept open while the command runs (hours, maybe): it is opened again to
     * release the slice. */
    ledger_close(ledger);
    ledger = NULL;
    /* The claim as allocated: what the plugin would receive from the API server. */
    json_object_set_new(claim, "status", json_pack("{s:O}", "allocation", entry.allocation));
    json_decref(entry.allocation);
    if (sa_write_slice(&env, claim, inv, plan, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        goto out;
    }
    if (!cfg.quiet)
        print_summary(&cfg, claim, plan);

    struct sigaction sa = {.sa_handler = forward};
    sigemptyset(&sa.sa_mask);
    static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
    for (size_t i = 0; i < GS_ARRAY_SIZE(forwarded); i++)
        sigaction(forwarded[i], &sa, NULL);
    pid_t pid = 0;
    /* Who holds the slice besides this runner: its cgroup (when cgroup v2 is writable) and the
     * region's process slots (cli/members.h). Recorded so a lost ledger row is still known held. */
    int cr = members_cgroup_create(uid, cgroup, sizeof(cgroup));
    if (cr < 0) {
        const char *mode = getenv("GPUSLICE_CGROUP");
        if (cr == -EINVAL)
            fprintf(stderr,
                    "gpuslice run: GPUSLICE_CGROUP=%s: expected off, auto or an absolute "
                    "directory\n",
                    mode);
        else if (cr == -ENAMETOOLONG)
            fprintf(stderr, "gpuslice run: slice cgroup path too long\n");
        else
            fprintf(stderr, "gpuslice run: cannot create the slice's cgroup %s: %s (errno %d)\n",
                    cgroup, strerror(-cr), -cr);
        cgroup[0] = '\0';
        goto out;
    }
    if (members_record(dir, &entry.owner, cgroup, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        goto out;
    }
    if (spawn(&env, plan, uid, cgroup, argv + first, &pid, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        status = err.code == -EXIT_FAILURE_RUN ? EXIT_FAILURE_RUN : err.code == -ENOENT ? 127 : 126;
        goto out;
    }
    child_pid = pid;
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) {
        if (errno != EINTR) {
            ws = 0;
            break;
        }
    }
    child_pid = 0;
    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 1;
out:
    /* Processes the command left behind (a setsid daemon, a child that outlived it) still hold
     * the slice: it stays allocated, and the next allocation reclaims it once they are gone. */
    if (row >= 0 && dir[0]) {
        pid_t example = 0;
        int held = members_count(dir, &example);
        if (held > 0) {
            fprintf(stderr,
                    "gpuslice run: slice %s is still held by %d process%s the command left "
                    "running (pid %d); it stays allocated until they exit\n",
                    json_string_value(json_object_get(json_object_get(claim, "metadata"), "name")),
                    held, held == 1 ? "" : "es", (int)example);
            row = -1;
        }
    }
    if (row >= 0) {
        struct gs_error e2 = {0};
        if ((!ledger && ledger_open(env.state_dir, &ledger, &e2) < 0) ||
            ledger_release_slice(ledger, row, dir, &e2) < 0)
            fprintf(stderr, "gpuslice run: releasing the slice: %s\n", e2.msg);
    }
    if (dir[0] && row >= 0) {
        members_cgroup_remove(cgroup);
        gs_rm_rf(dir, NULL);
    }
    free(dc.why);
    ledger_close(ledger);
    json_decref(slice);
    json_decref(cls);
    json_decref(claim);
    free(inv);
    free(plan);
    gs_config_free(&run_spec, &cfg);
    return status;
}
