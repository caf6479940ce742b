/* SPDX-License-Identifier: Apache-2.0 */
/* libvgpu configuration: HAMi-style sizes, limits files authoritative, env can only tighten.
 * Each scenario runs in a child (the configuration is read once per process). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/limits.h"
#include "tap.h"
#include "vgpu/vgpu-internal.h"

#define MiB   (1ULL << 20)
#define UUID0 "GPU-aaaaaaaa-0000-0000-0000-000000000000"
#define UUID1 "GPU-aaaaaaaa-0000-0000-0000-000000000001"

static char dir[64];

struct expect {
    int ordinal;
    const char *uuid;
    uint64_t memory;
    uint32_t cores;
};

/* Run in a child: apply env, read config, compare; report through the exit status. */
static int scenario(const char *const *env, const struct expect *ex, size_t n)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (const char *const *e = env; *e; e++)
            putenv((char *)*e);
        for (size_t i = 0; i < n; i++) {
            struct vgpu_device_config c;
            vgpu_config_for(ex[i].ordinal, ex[i].uuid, &c);
            if (c.memory_limit != ex[i].memory || c.cores != ex[i].cores) {
                diag("ordinal %d: got memory %llu cores %u, want %llu %u", ex[i].ordinal,
                     (unsigned long long)c.memory_limit, c.cores, (unsigned long long)ex[i].memory,
                     ex[i].cores);
                _exit(1);
            }
        }
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

/* Run in a child: the region path for (ordinal, uuid), the context overhead floor and the
 * directory in use must be as expected. */
static int scenario_region(const char *const *env, const char *uuid, const char *region,
                           uint64_t overhead, const char *limits_dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (const char *const *e = env; *e; e++)
            putenv((char *)*e);
        struct vgpu_device_config c;
        vgpu_config_for(0, uuid, &c);
        if (strcmp(c.region_path, region) != 0 || vgpu_config_context_overhead() != overhead ||
            strcmp(vgpu_config_dir(), limits_dir) != 0) {
            diag("region \"%s\" overhead %llu dir \"%s\"; want \"%s\" %llu \"%s\"", c.region_path,
                 (unsigned long long)vgpu_config_context_overhead(), vgpu_config_dir(), region,
                 (unsigned long long)overhead, limits_dir);
            _exit(1);
        }
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void write_limits(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    tap_plan_auto();
    uint64_t v = 0;
    ok(vgpu_parse_size("8000m", &v) == 0 && v == 8000 * MiB, "8000m = 8000 MiB");
    ok(vgpu_parse_size("4g", &v) == 0 && v == 4096 * MiB, "4g = 4 GiB");
    ok(vgpu_parse_size("4Gi", &v) == 0 && v == 4096 * MiB, "4Gi = 4 GiB");
    ok(vgpu_parse_size("512k", &v) == 0 && v == 512 * 1024, "512k");
    ok(vgpu_parse_size("1048576", &v) == 0 && v == MiB, "plain bytes");
    is_int(vgpu_parse_size("12x", &v), -EINVAL, "12x rejected");
    is_int(vgpu_parse_size("", &v), -EINVAL, "empty rejected");
    is_int(vgpu_parse_size("99999999999999999999g", &v), -ERANGE, "overflow rejected");

    snprintf(dir, sizeof(dir), "/tmp/gs-vgpu-config-XXXXXX");
    ok(mkdtemp(dir) != NULL, "temp limits dir");
    char envdir[128];
    snprintf(envdir, sizeof(envdir), "GPUSLICE_LIMITS_DIR=%s", dir);

    /* env only (HAMi style), empty limits dir */
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_LIMIT_0=8000m", "CUDA_DEVICE_SM_LIMIT=10",
                             "CUDA_DEVICE_MEMORY_LIMIT=2g", NULL};
        struct expect ex[] = {{0, UUID0, 8000 * MiB, 10}, {1, UUID1, 2048 * MiB, 10}};
        is_int(scenario(env, ex, 2), 0, "env only: per-index limit wins over the global one");
    }
    {
        const char *env[] = {envdir, "CUDA_DEVICE_SM_LIMIT=100", "CUDA_DEVICE_SM_LIMIT_1=25", NULL};
        struct expect ex[] = {{0, UUID0, 0, 0}, {1, UUID1, 0, 25}};
        is_int(scenario(env, ex, 2), 0, "env only: SM 100 means no cap; per-index SM limit");
    }
    {
        const char *env[] = {envdir, "CUDA_DEVICE_SM_LIMIT=30",
                             "GPU_CORE_UTILIZATION_POLICY=disable", NULL};
        struct expect ex[] = {{0, UUID0, 0, 0}};
        is_int(scenario(env, ex, 1), 0, "env only: policy disable drops the compute cap");
    }
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_LIMIT=lots", NULL};
        struct expect ex[] = {{0, UUID0, 1, 0}};
        is_int(scenario(env, ex, 1), 0,
               "env only: unparsable limit reads as 1 byte, not unlimited");
    }

    /* the HAMi env shares one region per container; the context overhead floor */
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_LIMIT=1g", NULL};
        is_int(scenario_region(env, UUID0, GS_REGION_PATH_DEFAULT, 0, dir), 0,
               "env only, no SHARED_CACHE: the container's default region " GS_REGION_PATH_DEFAULT);
    }
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_LIMIT=1g",
                             "CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/x.cache",
                             "GPUSLICE_CONTEXT_OVERHEAD=300m", NULL};
        is_int(scenario_region(env, UUID0, "/tmp/x.cache", 300 * MiB, dir), 0,
               "env only: CUDA_DEVICE_MEMORY_SHARED_CACHE names the region; "
               "GPUSLICE_CONTEXT_OVERHEAD=300m");
    }
    {
        const char *env[] = {envdir, "GPUSLICE_CONTEXT_OVERHEAD=much", NULL};
        is_int(scenario_region(env, UUID0, "", 0, dir), 0,
               "no limit: nothing tracked (no region); an unreadable overhead is ignored "
               "(the probe alone)");
    }
    {
        /* The fixed directory holds no limits file on a build machine: the env names it. */
        const char *env[] = {"GPUSLICE_LIMITS_DIR=", NULL};
        is_int(scenario_region(env, UUID0, "", 0, GS_LIMITS_DIR_DEFAULT), 0,
               "GPUSLICE_LIMITS_DIR unset: the fixed directory " GS_LIMITS_DIR_DEFAULT);
    }

    /* a file without a region line: the default region, whatever the environment says */
    write_limits("claim-r.limits", "version 1\nclaim claim-r\n"
                                   "device " UUID0 " memory=1073741824 cores=0\n");
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/mine.cache", NULL};
        is_int(
            scenario_region(env, UUID0, GS_REGION_PATH_DEFAULT, 0, dir), 0,
            "file without a region line: the default region, not CUDA_DEVICE_MEMORY_SHARED_CACHE");
    }
    {
        char p[256];
        snprintf(p, sizeof(p), "%s/claim-r.limits", dir);
        unlink(p);
    }

    /* file only: keyed by UUID, whatever the ordinal */
    write_limits("claim-a.limits", "version 1\nclaim claim-a\nregion /tmp/r-a\n"
                                   "device " UUID1 " memory=4294967296 cores=30\n");
    {
        const char *env[] = {envdir, NULL};
        struct expect ex[] = {{0, UUID1, 4096 * MiB, 30}, {1, UUID0, 1, 1}};
        is_int(scenario(env, ex, 2), 0,
               "file only: limit follows the UUID; a GPU no file grants is refused");
    }
    {
        const char *env[] = {envdir, NULL};
        is_int(scenario_region(env, UUID1, "/tmp/r-a", 0, dir), 0,
               "file only: the file's region; GPUSLICE_LIMITS_DIR read where the fixed directory "
               "holds no limits file");
    }
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_LIMIT=64g", "CUDA_DEVICE_SM_LIMIT=100",
                             "GPU_CORE_UTILIZATION_POLICY=disable", NULL};
        struct expect ex[] = {{0, UUID1, 4096 * MiB, 30}};
        is_int(scenario(env, ex, 1), 0, "file present: env cannot loosen memory or cores");
    }
    {
        const char *env[] = {envdir, "CUDA_DEVICE_MEMORY_LIMIT_0=1g", "CUDA_DEVICE_SM_LIMIT=10",
                             NULL};
        struct expect ex[] = {{0, UUID1, 1024 * MiB, 10}};
        is_int(scenario(env, ex, 1), 0, "file present: env can tighten");
    }
    write_limits("claim-b.limits", "version 1\nclaim claim-b\n"
                                   "device " UUID1 " memory=1073741824 cores=20\n"
                                   "device " UUID0 " memory=0 cores=0\n");
    {
        const char *env[] = {envdir, NULL};
        struct expect ex[] = {{0, UUID1, 5120 * MiB, 50}, {1, UUID0, 0, 0}};
        is_int(scenario(env, ex, 2), 0, "two claims on one GPU add up; uncapped device uncapped");
    }
    write_limits("claim-c.limits",
                 "version 1\nclaim claim-c\ndevice " UUID0 " memory=lots cores=5\n");
    {
        const char *env[] = {envdir, NULL};
        struct expect ex[] = {{1, UUID0, 1, 1}, {0, UUID1, 5120 * MiB, 50}};
        is_int(scenario(env, ex, 2), 0,
               "malformed file: the device it lists is refused, others kept");
    }
    write_limits("claim-d.limits", "garbage\n");
    {
        const char *env[] = {envdir, NULL};
        struct expect ex[] = {{0, UUID1, 1, 1}};
        is_int(scenario(env, ex, 1), 0, "file naming no device: every device refused");
    }
    const char *names[] = {"claim-a.limits", "claim-b.limits", "claim-c.limits", "claim-d.limits"};
    for (size_t i = 0; i < 4; i++) {
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return tap_done();
}
