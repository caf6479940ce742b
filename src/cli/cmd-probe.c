/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice probe — look at the GPU the way a workload does, through the CUDA driver API
 * (libcuda.so.1 opened at run time, never linked): what cuMemGetInfo reports, how much memory can
 * actually be allocated (in --step allocations until CUDA_ERROR_OUT_OF_MEMORY or --max), and
 * optionally how long --kernels launches take (on gpusim a function named sim_busy_<us> occupies
 * the device for that long). Used by `make demo` and by users to check their slice.
 *
 * Exit status: 0 when the probe ran (an out-of-memory answer is a result, not a failure),
 * 2 bad usage, 4 the driver could not be loaded or initialised.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "base/clock.h"
#include "config/config.h"
#include "abi/cuda_abi.h"
#include "config/quantity.h"

struct probe_config {
    int64_t device;
    char *step;
    char *max;
    int64_t hold_ns;
    int64_t kernels;
    int64_t kernel_us;
    bool free_between;
};

static const struct gs_option probe_options[] = {
    {.name = "device",
     .short_flag = 'd',
     .type = GS_OPT_INT,
     .def = "0",
     .min = "0",
     .max = "1023",
     .help = "CUDA device ordinal (after CUDA_VISIBLE_DEVICES)",
     .offset = offsetof(struct probe_config, device)},
    {.name = "step",
     .type = GS_OPT_STRING,
     .def = "1Mi",
     .metavar = "QUANTITY",
     .help = "size of each allocation",
     .offset = offsetof(struct probe_config, step)},
    {.name = "max",
     .type = GS_OPT_STRING,
     .metavar = "QUANTITY",
     .help = "stop after allocating this much (default: until out of memory; 0 = no allocation)",
     .offset = offsetof(struct probe_config, max)},
    {.name = "hold",
     .type = GS_OPT_DURATION,
     .def = "0",
     .min = "0",
     .help = "keep the memory allocated this long before freeing it",
     .offset = offsetof(struct probe_config, hold_ns)},
    {.name = "kernels",
     .short_flag = 'k',
     .type = GS_OPT_INT,
     .def = "0",
     .min = "0",
     .max = "100000000",
     .help = "launch this many kernels and report the time they took",
     .offset = offsetof(struct probe_config, kernels)},
    {.name = "kernel-us",
     .type = GS_OPT_INT,
     .def = "1000",
     .min = "1",
     .max = "10000000",
     .help = "device time of each kernel on gpusim (function sim_busy_<us>)",
     .offset = offsetof(struct probe_config, kernel_us)},
};

static const struct gs_config_spec probe_spec = {
    .program = "gpuslice probe",
    .summary = "Check a GPU (or slice) through the CUDA driver API: memory view, allocatable "
               "memory, kernel time.",
    .options = probe_options,
    .n_options = GS_ARRAY_SIZE(probe_options),
};

struct cuda {
    void *h;
    __typeof__(cuInit) *init;
    __typeof__(cuDeviceGet) *device_get;
    __typeof__(cuDeviceGetName) *device_get_name;
    __typeof__(cuDeviceGetUuid) *device_get_uuid;
    __typeof__(cuDevicePrimaryCtxRetain) *ctx_retain;
    __typeof__(cuDevicePrimaryCtxRelease_v2) *ctx_release;
    __typeof__(cuCtxSetCurrent) *ctx_set_current;
    __typeof__(cuCtxSynchronize) *ctx_sync;
    __typeof__(cuMemGetInfo_v2) *mem_get_info;
    __typeof__(cuMemAlloc_v2) *mem_alloc;
    __typeof__(cuMemFree_v2) *mem_free;
    __typeof__(cuModuleLoadData) *module_load;
    __typeof__(cuModuleGetFunction) *module_get_function;
    __typeof__(cuLaunchKernel) *launch;
    __typeof__(cuGetErrorName) *error_name;
};

static int load(struct cuda *c)
{
    c->h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!c->h) {
        fprintf(stderr, "gpuslice probe: cannot load the CUDA driver: %s\n", dlerror());
        return -1;
    }
#define SYM(field, name)                                                                           \
    do {                                                                                           \
        *(void **)&c->field = dlsym(c->h, name);                                                   \
        if (!c->field) {                                                                           \
            fprintf(stderr, "gpuslice probe: libcuda.so.1 has no %s\n", name);                     \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
    SYM(init, "cuInit");
    SYM(device_get, "cuDeviceGet");
    SYM(device_get_name, "cuDeviceGetName");
    SYM(device_get_uuid, "cuDeviceGetUuid");
    SYM(ctx_retain, "cuDevicePrimaryCtxRetain");
    SYM(ctx_release, "cuDevicePrimaryCtxRelease_v2");
    SYM(ctx_set_current, "cuCtxSetCurrent");
    SYM(ctx_sync, "cuCtxSynchronize");
    SYM(mem_get_info, "cuMemGetInfo_v2");
    SYM(mem_alloc, "cuMemAlloc_v2");
    SYM(mem_free, "cuMemFree_v2");
    SYM(module_load, "cuModuleLoadData");
    SYM(module_get_function, "cuModuleGetFunction");
    SYM(launch, "cuLaunchKernel");
    SYM(error_name, "cuGetErrorName");
#undef SYM
    return 0;
}

static const char *ename(const struct cuda *c, CUresult r)
{
    const char *s = NULL;
    if (c->error_name(r, &s) != CUDA_SUCCESS || !s)
        return "CUDA_ERROR_UNKNOWN";
    return s;
}

static int parse_bytes(const char *flag, const char *s, int64_t *out)
{
    struct gs_quantity q;
    struct gs_error e = {0};
    int r = gs_quantity_parse(s, &q, &e);
    if (r == -ERANGE || (r == 0 && gs_quantity_value(&q, out) == -ERANGE)) {
        fprintf(stderr, "gpuslice probe: --%s: \"%s\" is too large (at most 8Ei minus one byte)\n",
                flag, s);
        return -1;
    }
    if (r < 0 || gs_quantity_value(&q, out) < 0 || *out < 0) {
        fprintf(stderr, "gpuslice probe: --%s: \"%s\" is not a quantity of bytes (e.g. 1Mi)\n",
                flag, s);
        return -1;
    }
    return 0;
}

int cmd_probe(int argc, char **argv)
{
    struct probe_config cfg = {0};
    struct gs_error err = {0};
    int first;
    int r = gs_config_parse(&probe_spec, &cfg, argc, argv, stdout, &first, &err);
    if (r == GS_CONFIG_EXIT || r < 0 || first < argc) {
        if (r < 0)
            fprintf(stderr, "gpuslice probe: %s\n", err.msg);
        else if (r != GS_CONFIG_EXIT)
            fprintf(stderr, "gpuslice probe: unexpected argument \"%s\"\n", argv[first]);
        gs_config_free(&probe_spec, &cfg);
        return r == GS_CONFIG_EXIT ? 0 : 2;
    }
    int status = 2;
    int64_t step = 0, max = -1;
    CUdeviceptr *ptrs = NULL;
    size_t n_ptrs = 0, cap = 0;
    struct cuda c = {0};
    if (parse_bytes("step", cfg.step, &step) < 0 ||
        (cfg.max && parse_bytes("max", cfg.max, &max) < 0))
        goto out;
    if (step <= 0) {
        fprintf(stderr, "gpuslice probe: --step: must be more than 0\n");
        goto out;
    }
    status = 4;
    if (load(&c) < 0)
        goto out;
    CUresult cr = c.init(0);
    CUdevice dev;
    CUcontext ctx;
    if (cr == CUDA_SUCCESS)
        cr = c.device_get(&dev, (int)cfg.device);
    if (cr == CUDA_SUCCESS)
        cr = c.ctx_retain(&ctx, dev);
    if (cr == CUDA_SUCCESS)
        cr = c.ctx_set_current(ctx);
    if (cr != CUDA_SUCCESS) {
        fprintf(stderr, "gpuslice probe: device %lld: %s\n", (long long)cfg.device, ename(&c, cr));
        goto out;
    }
    char name[256] = "?";
    CUuuid uuid = {0};
    c.device_get_name(name, sizeof(name), dev);
    c.device_get_uuid(&uuid, dev);
    const unsigned char *u = (const unsigned char *)uuid.bytes;
    size_t free_b = 0, total_b = 0;
    c.mem_get_info(&free_b, &total_b);
    printf("probe: device %lld %s "
           "(GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x)"
           " cuMemGetInfo: free %zuMiB total %zuMiB\n",
           (long long)cfg.device, name, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
           u[10], u[11], u[12], u[13], u[14], u[15], free_b >> 20, total_b >> 20);
    fflush(stdout);
    status = 0;
    if (max != 0) {
        int64_t got = 0;
        CUresult last = CUDA_SUCCESS;
        while (max < 0 || got + step <= max) {
            CUdeviceptr p;
            last = c.mem_alloc(&p, (size_t)step);
            if (last != CUDA_SUCCESS)
                break;
            if (n_ptrs == cap) {
                cap = cap ? cap * 2 : 1024;
                CUdeviceptr *np = realloc(ptrs, cap * sizeof(*np));
                if (!np) {
                    c.mem_free(p);
                    fprintf(stderr, "gpuslice probe: out of host memory\n");
                    status = 4;
                    goto out;
                }
                ptrs = np;
            }
            ptrs[n_ptrs++] = p;
            got += step;
        }
        char sq[GS_QUANTITY_STR_MAX];
        struct gs_quantity q;
        gs_quantity_from_int64(step, GS_QUANTITY_BINARY_SI, &q);
        gs_quantity_format(&q, sq, sizeof(sq));
        if (last != CUDA_SUCCESS)
            printf("probe: allocated %lldMiB in %zu allocations of %s; next allocation: %s\n",
                   (long long)(got >> 20), n_ptrs, sq, ename(&c, last));
        else
            printf("probe: allocated %lldMiB in %zu allocations of %s (--max reached)\n",
                   (long long)(got >> 20), n_ptrs, sq);
        c.mem_get_info(&free_b, &total_b);
        printf("probe: cuMemGetInfo now: free %zuMiB total %zuMiB\n", free_b >> 20, total_b >> 20);
        fflush(stdout);
    }
    if (cfg.kernels > 0) {
        CUmodule mod;
        CUfunction fn;
        char fname[64];
        snprintf(fname, sizeof(fname), "sim_busy_%lld", (long long)cfg.kernel_us);
        static const char image[] = "gpusim"; /* gpusim's sim-only any-name image (gpusim.md) */
        cr = c.module_load(&mod, image);
        if (cr == CUDA_SUCCESS)
            cr = c.module_get_function(&fn, mod, fname);
        if (cr != CUDA_SUCCESS) {
            fprintf(stderr, "gpuslice probe: kernels need gpusim (%s: %s)\n", fname, ename(&c, cr));
            status = 4;
            goto out;
        }
        uint64_t t0 = gs_now_ns();
        for (int64_t i = 0; i < cfg.kernels && cr == CUDA_SUCCESS; i++)
            cr = c.launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (cr == CUDA_SUCCESS)
            cr = c.ctx_sync();
        double secs = (double)(gs_now_ns() - t0) / 1e9;
        double busy = (double)cfg.kernels * (double)cfg.kernel_us / 1e6;
        printf("probe: %lld kernels of %lldus took %.2fs: device share %.0f%%%s%s\n",
               (long long)cfg.kernels, (long long)cfg.kernel_us, secs,
               secs > 0 ? busy / secs * 100.0 : 0.0, cr == CUDA_SUCCESS ? "" : " — ",
               cr == CUDA_SUCCESS ? "" : ename(&c, cr));
        fflush(stdout);
    }
    if (cfg.hold_ns > 0)
        gs_sleep_ns((uint64_t)cfg.hold_ns);
out:
    for (size_t i = 0; i < n_ptrs; i++)
        c.mem_free(ptrs[i]);
    free(ptrs);
    gs_config_free(&probe_spec, &cfg);
    return status;
}
