/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration: the limits directory (authoritative when it holds a limits file) merged with the
 * HAMi-core environment (which can only tighten a file's limits). Read once, at first use.
 *
 * Which directory: the fixed GS_LIMITS_DIR_DEFAULT (/etc/gpuslice/limits.d, mounted read-only
 * by the kubelet plugin's CDI spec) whenever it holds a limits file; only when it holds none is
 * $GPUSLICE_LIMITS_DIR read (`gpuslice run` on a host, tests). A process inside a claim's
 * container therefore cannot point libvgpu at another directory.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/limits.h"
#include "vgpu/vgpu-internal.h"

#define ENV_INDEX_MAX 64

struct file_device {
    char uuid[GS_LIMITS_UUID_MAX];
    uint64_t memory_limit;
    uint32_t cores;
    char region_path[GS_LIMITS_PATH_MAX];
    bool refused; /* named by a malformed file: the safe reading wins over every grant */
};

static struct {
    bool authoritative;  /* some limits file exists */
    bool all_restricted; /* a malformed file that names no device: refuse everywhere */
    size_t n_files;
    size_t n;
    struct file_device dev[GS_LIMITS_MAX_DEVICES];

    uint64_t env_mem; /* CUDA_DEVICE_MEMORY_LIMIT, 0 = none */
    uint64_t env_mem_i[ENV_INDEX_MAX];
    uint32_t env_sm; /* CUDA_DEVICE_SM_LIMIT, 0 = none */
    uint32_t env_sm_i[ENV_INDEX_MAX];
    bool env_sm_i_set[ENV_INDEX_MAX];
    char shared_cache[GS_LIMITS_PATH_MAX];
    bool compute_disabled;
    uint64_t ctx_overhead;        /* GPUSLICE_CONTEXT_OVERHEAD: at least this much per context */
    char dir[GS_LIMITS_PATH_MAX]; /* the limits directory in use */
} cfg;

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

int vgpu_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -EINVAL;
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return -ERANGE;
    }
    uint64_t mult = 1;
    switch (*p) {
    case '\0':
        break;
    case 'k':
    case 'K':
        mult = 1ULL << 10;
        p++;
        break;
    case 'm':
    case 'M':
        mult = 1ULL << 20;
        p++;
        break;
    case 'g':
    case 'G':
        mult = 1ULL << 30;
        p++;
        break;
    default:
        return -EINVAL;
    }
    /* accept "8000m", "8000mi"/"8000Mi" and "8000mb" spellings */
    if (*p == 'i' || *p == 'b' || *p == 'B')
        p++;
    if (*p != '\0')
        return -EINVAL;
    if (__builtin_mul_overflow(v, mult, &v))
        return -ERANGE;
    *out = v;
    return 0;
}

static int parse_percent(const char *s, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || end == s || *end != '\0' || v < 0 || v > 100)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

static struct file_device *file_dev_find(const char *uuid)
{
    for (size_t i = 0; i < cfg.n; i++)
        if (strcmp(cfg.dev[i].uuid, uuid) == 0)
            return &cfg.dev[i];
    return NULL;
}

/* Two claims granting the same GPU to one container add up; 0 (no cap) dominates. */
static void merge_device(const struct gs_limits_device *d, const char *region, bool malformed)
{
    struct file_device *f = file_dev_find(d->uuid);
    if (f && malformed)
        f->refused = true;
    if (!f) {
        if (cfg.n >= GS_LIMITS_MAX_DEVICES) {
            VLOG(VGPU_LOG_ERROR, "limits: more than %d devices across files; %s refused",
                 GS_LIMITS_MAX_DEVICES, d->uuid);
            cfg.all_restricted = true;
            return;
        }
        f = &cfg.dev[cfg.n++];
        snprintf(f->uuid, sizeof(f->uuid), "%s", d->uuid);
        f->memory_limit = d->memory_limit;
        f->cores = d->cores == 100 ? 0 : d->cores;
        f->refused = malformed;
        snprintf(f->region_path, sizeof(f->region_path), "%s", region);
        return;
    }
    if (f->memory_limit != 0)
        f->memory_limit =
            d->memory_limit == 0 ? 0 : gs_sat_add_u64(f->memory_limit, d->memory_limit);
    uint32_t c = d->cores == 100 ? 0 : d->cores;
    if (f->cores != 0)
        f->cores = c == 0 || f->cores + c >= 100 ? 0 : f->cores + c;
    VLOG(VGPU_LOG_INFO, "limits: %s granted by several claims; limits added, region %s kept",
         d->uuid, f->region_path);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Does dir hold at least one limits file (readable or not: a file that cannot be read still
 * makes the directory authoritative, with the safe reading)? */
static bool dir_has_limits(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno != ENOENT && errno != ENOTDIR; /* unreadable: treat as holding limits */
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)))
        found = gs_limits_is_limits_file(e->d_name);
    closedir(d);
    return found;
}

/* The fixed directory wins whenever it holds a limits file; the environment names the
 * directory only where no claim's limits are mounted at the fixed path. */
static const char *pick_dir(void)
{
    const char *fixed = GS_LIMITS_DIR_DEFAULT;
    const char *env = getenv(GS_LIMITS_ENV);
    if (!env || !*env || strcmp(env, fixed) == 0 || dir_has_limits(fixed)) {
        if (env && *env && strcmp(env, fixed) != 0)
            VLOG(VGPU_LOG_WARN, "limits: %s=\"%.200s\" ignored: %s holds limits files",
                 GS_LIMITS_ENV, env, fixed);
        return fixed;
    }
    return env;
}

static void load_dir(void)
{
    const char *dir = pick_dir();
    snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno != ENOENT) {
            /* a directory that exists but cannot be read never reads as "no limits" */
            VLOG(VGPU_LOG_ERROR, "limits: cannot open %s: %s; every device refused", dir,
                 strerror(errno));
            cfg.all_restricted = true;
            cfg.authoritative = true;
        }
        return;
    }
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < GS_ARRAY_SIZE(names)) {
        if (!gs_limits_is_limits_file(e->d_name))
            continue;
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    if (e) {
        /* More files than we keep: a container never holds that many claims. Refuse. */
        VLOG(VGPU_LOG_ERROR, "limits: more than %zu files in %s; every device refused",
             GS_ARRAY_SIZE(names), dir);
        cfg.all_restricted = true;
        cfg.authoritative = true;
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), name_cmp);
    struct gs_limits *l = malloc(sizeof(*l));
    for (size_t i = 0; i < n; i++) {
        char path[GS_LIMITS_PATH_MAX];
        struct gs_error err;
        cfg.authoritative = true;
        cfg.n_files++;
        if (!l || snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path)) {
            cfg.all_restricted = true;
            free(names[i]);
            continue;
        }
        int r = gs_limits_read(path, l, &err);
        if (r < 0)
            VLOG(VGPU_LOG_ERROR,
                 "limits: %s; applying the safe reading (allocations refused on %s)", err.msg,
                 l->all_devices ? "every device" : "the devices it lists");
        if (l->all_devices)
            cfg.all_restricted = true;
        for (size_t k = 0; k < l->n_devices; k++)
            merge_device(&l->devices[k], l->region_path, r < 0);
        free(names[i]);
    }
    free(l);
}

static void load_env(void)
{
    const char *s = getenv("CUDA_DEVICE_MEMORY_LIMIT");
    if (s && *s && vgpu_parse_size(s, &cfg.env_mem) < 0) {
        VLOG(VGPU_LOG_ERROR, "CUDA_DEVICE_MEMORY_LIMIT=\"%.40s\" is not a size; using 1 byte", s);
        cfg.env_mem = GS_LIMITS_MEMORY_REFUSE;
    }
    s = getenv("CUDA_DEVICE_SM_LIMIT");
    if (s && *s && parse_percent(s, &cfg.env_sm) < 0) {
        VLOG(VGPU_LOG_ERROR, "CUDA_DEVICE_SM_LIMIT=\"%.40s\" is not 0..100; using 1", s);
        cfg.env_sm = GS_LIMITS_CORES_REFUSE;
    }
    for (int i = 0; i < ENV_INDEX_MAX; i++) {
        char name[64];
        snprintf(name, sizeof(name), "CUDA_DEVICE_MEMORY_LIMIT_%d", i);
        s = getenv(name);
        if (s && *s && vgpu_parse_size(s, &cfg.env_mem_i[i]) < 0) {
            VLOG(VGPU_LOG_ERROR, "%s=\"%.40s\" is not a size; using 1 byte", name, s);
            cfg.env_mem_i[i] = GS_LIMITS_MEMORY_REFUSE;
        }
        snprintf(name, sizeof(name), "CUDA_DEVICE_SM_LIMIT_%d", i);
        s = getenv(name);
        if (s && *s) {
            cfg.env_sm_i_set[i] = true;
            if (parse_percent(s, &cfg.env_sm_i[i]) < 0) {
                VLOG(VGPU_LOG_ERROR, "%s=\"%.40s\" is not 0..100; using 1", name, s);
                cfg.env_sm_i[i] = GS_LIMITS_CORES_REFUSE;
            }
        }
    }
    s = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
    if (s && *s)
        snprintf(cfg.shared_cache, sizeof(cfg.shared_cache), "%s", s);
    s = getenv("GPUSLICE_CONTEXT_OVERHEAD");
    if (s && *s && vgpu_parse_size(s, &cfg.ctx_overhead) < 0) {
        /* a number that cannot be read never lowers what a context is charged */
        VLOG(VGPU_LOG_ERROR, "GPUSLICE_CONTEXT_OVERHEAD=\"%.40s\" is not a size; ignored", s);
        cfg.ctx_overhead = 0;
    }
    s = getenv("GPU_CORE_UTILIZATION_POLICY");
    if (s && *s) {
        if (strcasecmp(s, "disable") == 0)
            cfg.compute_disabled = true;
        else if (strcasecmp(s, "force") != 0 && strcasecmp(s, "default") != 0)
            VLOG(VGPU_LOG_WARN,
                 "GPU_CORE_UTILIZATION_POLICY=\"%.40s\" is not force/disable/"
                 "default; the cap applies",
                 s);
    }
}

static void load(void)
{
    vgpu_log_init();
    load_env();
    load_dir();
    if (cfg.authoritative && cfg.compute_disabled) {
        VLOG(VGPU_LOG_WARN, "GPU_CORE_UTILIZATION_POLICY=disable ignored: limits files present");
        cfg.compute_disabled = false;
    }
    VLOG(VGPU_LOG_INFO, "config: %zu limits file(s), %zu device(s)%s", cfg.n_files, cfg.n,
         cfg.all_restricted ? ", every device restricted" : "");
}

void vgpu_config_load(void)
{
    pthread_once(&cfg_once, load);
}

bool vgpu_config_authoritative(void)
{
    vgpu_config_load();
    return cfg.authoritative;
}

uint64_t vgpu_config_context_overhead(void)
{
    vgpu_config_load();
    return cfg.ctx_overhead;
}

const char *vgpu_config_dir(void)
{
    vgpu_config_load();
    return cfg.dir;
}

bool vgpu_config_compute_disabled(void)
{
    vgpu_config_load();
    return cfg.compute_disabled;
}

/* Tighter of two memory caps (0 = none). */
static uint64_t min_cap(uint64_t a, uint64_t b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    return GS_MIN(a, b);
}

void vgpu_config_for(int ordinal, const char *uuid, struct vgpu_device_config *out)
{
    vgpu_config_load();
    memset(out, 0, sizeof(*out));
    uint64_t env_mem = cfg.env_mem;
    uint32_t env_sm = cfg.env_sm;
    if (ordinal >= 0 && ordinal < ENV_INDEX_MAX) {
        if (cfg.env_mem_i[ordinal])
            env_mem = cfg.env_mem_i[ordinal];
        if (cfg.env_sm_i_set[ordinal])
            env_sm = cfg.env_sm_i[ordinal];
    }
    if (env_sm == 100)
        env_sm = 0;
    if (cfg.compute_disabled)
        env_sm = 0;

    /* Without a region named by a file or CUDA_DEVICE_MEMORY_SHARED_CACHE, the processes of a
     * container share the fixed default region (as HAMi-core's /tmp/cudevshr.cache): two
     * processes never each get the full limit. */
    const char *shared = cfg.shared_cache[0] ? cfg.shared_cache : GS_REGION_PATH_DEFAULT;
    if (!cfg.authoritative) {
        out->memory_limit = env_mem;
        out->cores = env_sm;
        snprintf(out->region_path, sizeof(out->region_path), "%s",
                 env_mem || env_sm || cfg.shared_cache[0] ? shared : "");
        return;
    }
    out->from_file = true;
    const struct file_device *f = uuid ? file_dev_find(uuid) : NULL;
    if (cfg.all_restricted || !f || f->refused) {
        out->memory_limit = GS_LIMITS_MEMORY_REFUSE;
        out->cores = GS_LIMITS_CORES_REFUSE;
        if (!f)
            VLOG(VGPU_LOG_WARN,
                 "limits: device %s (ordinal %d) is not granted by any limits file; "
                 "allocations on it are refused",
                 uuid ? uuid : "?", ordinal);
    } else {
        /* The environment may tighten, never loosen. */
        out->memory_limit = min_cap(f->memory_limit, env_mem);
        out->cores = (uint32_t)min_cap(f->cores, env_sm);
    }
    /* A file without a region line: the fixed default, never a path from the environment (which
     * could give each process a region of its own). */
    const char *region = f && f->region_path[0] ? f->region_path : GS_REGION_PATH_DEFAULT;
    snprintf(out->region_path, sizeof(out->region_path), "%s", region);
}
