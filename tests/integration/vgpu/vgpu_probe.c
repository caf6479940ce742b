/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Driver-API program for the libvgpu integration tests. Linked against nothing: it dlopens
 * libcuda.so.1 / libnvidia-ml.so.1 and resolves entry points in one of three ways
 * (GS_PROBE_RESOLVE): "dlsym" (dlsym on the dlopen handle: libvgpu's dlsym interposition),
 * "global" (RTLD_DEFAULT, what a program linked against libcuda gets) or "getproc"
 * (cuGetProcAddress_v2 with CUDA 12.8, base names as the runtime asks them).
 * Prints key=value lines; the Python drivers assert on them.
 *
 *   vgpu_probe boundary <count> <bytes>     cuMemAlloc_v2 until refused, report, free all
 *   vgpu_probe apis <MiB>                   every allocation API against a limit of <MiB>
 *   vgpu_probe views                        cuMemGetInfo/cuDeviceTotalMem/NVML per device
 *   vgpu_probe hold <MiB> <ms>              allocate then sleep
 *   vgpu_probe storm <threads> <ms> <max_MiB>  alloc/free loop (killed by the test)
 *   vgpu_probe launch <us> <ms> [queue]     launch sim_busy_<us> for <ms>, <queue> launches
 *                                           between syncs (default: about 1 ms of work)
 *   vgpu_probe launchx ex|coop|graph <us> <ms>  the other launch paths (graph: 2 nodes)
 *   vgpu_probe watch <ms>                   max physical usage of device 0 via NVML
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda_abi.h"
#include "abi/nvml_abi.h"

#define MiB (1ULL << 20)

#define CU_FUNCS(X)                                                                                \
    X(cuInit, "cuInit")                                                                            \
    X(cuDeviceGetCount, "cuDeviceGetCount")                                                        \
    X(cuDeviceGet, "cuDeviceGet")                                                                  \
    X(cuDeviceGetUuid, "cuDeviceGetUuid")                                                          \
    X(cuDeviceTotalMem_v2, "cuDeviceTotalMem")                                                     \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                                        \
    X(cuCtxSetCurrent, "cuCtxSetCurrent")                                                          \
    X(cuCtxSynchronize, "cuCtxSynchronize")                                                        \
    X(cuMemGetInfo_v2, "cuMemGetInfo")                                                             \
    X(cuMemAlloc_v2, "cuMemAlloc")                                                                 \
    X(cuMemAllocPitch_v2, "cuMemAllocPitch")                                                       \
    X(cuMemAllocManaged, "cuMemAllocManaged")                                                      \
    X(cuMemFree_v2, "cuMemFree")                                                                   \
    X(cuMemAllocAsync, "cuMemAllocAsync")                                                          \
    X(cuMemFreeAsync, "cuMemFreeAsync")                                                            \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")                                          \
    X(cuMemPoolCreate, "cuMemPoolCreate")                                                          \
    X(cuMemPoolDestroy, "cuMemPoolDestroy")                                                        \
    X(cuMemPoolTrimTo, "cuMemPoolTrimTo")                                                          \
    X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute")                                              \
    X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute")                                              \
    X(cuDeviceGetMemPool, "cuDeviceGetMemPool")                                                    \
    X(cuStreamCreate, "cuStreamCreate")                                                            \
    X(cuStreamSynchronize, "cuStreamSynchronize")                                                  \
    X(cuMemCreate, "cuMemCreate")                                                                  \
    X(cuMemRelease, "cuMemRelease")                                                                \
    X(cuArrayCreate_v2, "cuArrayCreate")                                                           \
    X(cuArrayDestroy, "cuArrayDestroy")                                                            \
    X(cuModuleLoadData, "cuModuleLoadData")                                                        \
    X(cuModuleGetFunction, "cuModuleGetFunction")                                                  \
    X(cuLaunchKernel, "cuLaunchKernel")

struct cu {
#define X(name, base) GS_CU_PFN(name) name;
    CU_FUNCS(X)
#undef X
};

static struct cu cu;
static GS_NVML_PFN(nvmlInit_v2) p_nvmlInit_v2;
static GS_NVML_PFN(nvmlDeviceGetHandleByUUID) p_nvmlDeviceGetHandleByUUID;
static GS_NVML_PFN(nvmlDeviceGetMemoryInfo) p_nvmlDeviceGetMemoryInfo;
static GS_NVML_PFN(nvmlDeviceGetMemoryInfo_v2) p_nvmlDeviceGetMemoryInfo_v2;

static void die(const char *what, int code)
{
    fprintf(stderr, "vgpu_probe: %s failed (%d)\n", what, code);
    exit(2);
}

static void resolve(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        die(dlerror(), 0);
    const char *mode = getenv("GS_PROBE_RESOLVE");
    if (!mode)
        mode = "dlsym";
    void *src = strcmp(mode, "global") == 0 ? RTLD_DEFAULT : h;
    if (strncmp(mode, "getproc", 7) == 0) {
        /* getproc: cuGetProcAddress_v2 at 12.8; getproc13: _v2 at 13.0; getproc1: the v1 entry
         * point at 12.0 */
        int version = strcmp(mode, "getproc13") == 0  ? 13000
                      : strcmp(mode, "getproc1") == 0 ? 12000
                                                      : 12080;
        bool v1 = strcmp(mode, "getproc1") == 0;
        GS_CU_PFN(cuGetProcAddress_v2)
        gpa2 = (GS_CU_PFN(cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
        GS_CU_PFN(cuGetProcAddress)
        gpa1 = (GS_CU_PFN(cuGetProcAddress))dlsym(h, "cuGetProcAddress");
        if (!gpa2 || !gpa1)
            die("dlsym cuGetProcAddress", 0);
        GS_CU_PFN(cuInit) init = (GS_CU_PFN(cuInit))dlsym(h, "cuInit");
        init(0);
#define X(name, base)                                                                              \
    {                                                                                              \
        CUdriverProcAddressQueryResult st;                                                         \
        CUresult r_ =                                                                              \
            v1 ? gpa1(base, (void **)&cu.name, version, CU_GET_PROC_ADDRESS_DEFAULT)               \
               : gpa2(base, (void **)&cu.name, version, CU_GET_PROC_ADDRESS_DEFAULT, &st);         \
        if (r_ != CUDA_SUCCESS || !cu.name)                                                        \
            die("cuGetProcAddress " base, r_);                                                     \
    }
        CU_FUNCS(X)
#undef X
    } else {
#define X(name, base)                                                                              \
    cu.name = (GS_CU_PFN(name))dlsym(src, #name);                                                  \
    if (!cu.name)                                                                                  \
        die("dlsym " #name, 0);
        CU_FUNCS(X)
#undef X
    }
    void *n = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (n) {
        void *ns = strcmp(mode, "global") == 0 ? RTLD_DEFAULT : n;
        p_nvmlInit_v2 = (GS_NVML_PFN(nvmlInit_v2))dlsym(ns, "nvmlInit_v2");
        p_nvmlDeviceGetHandleByUUID =
            (GS_NVML_PFN(nvmlDeviceGetHandleByUUID))dlsym(ns, "nvmlDeviceGetHandleByUUID");
        p_nvmlDeviceGetMemoryInfo =
            (GS_NVML_PFN(nvmlDeviceGetMemoryInfo))dlsym(ns, "nvmlDeviceGetMemoryInfo");
        p_nvmlDeviceGetMemoryInfo_v2 =
            (GS_NVML_PFN(nvmlDeviceGetMemoryInfo_v2))dlsym(ns, "nvmlDeviceGetMemoryInfo_v2");
    }
}

static CUcontext probe_ctx;

static void setup(int ordinal)
{
    CUresult r = cu.cuInit(0);
    if (r)
        die("cuInit", r);
    CUdevice d;
    if ((r = cu.cuDeviceGet(&d, ordinal)))
        die("cuDeviceGet", r);
    CUcontext ctx;
    if ((r = cu.cuDevicePrimaryCtxRetain(&ctx, d)))
        die("cuDevicePrimaryCtxRetain", r);
    if ((r = cu.cuCtxSetCurrent(ctx)))
        die("cuCtxSetCurrent", r);
    probe_ctx = ctx;
}

static uint64_t used_now(void)
{
    size_t f = 0, t = 0;
    cu.cuMemGetInfo_v2(&f, &t);
    return t - f;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int cmd_boundary(long count, unsigned long long size)
{
    setup(0);
    CUdeviceptr *p = calloc((size_t)count + 1, sizeof(*p));
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (long i = 0; i <= count; i++) {
        CUresult r = cu.cuMemAlloc_v2(&p[ok], size);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        ok++;
    }
    size_t f = 0, t = 0;
    cu.cuMemGetInfo_v2(&f, &t);
    printf("allocated=%ld first_fail=%d free=%zu total=%zu\n", ok, (int)first_fail, f, t);
    CUresult again = cu.cuMemAlloc_v2(&p[count], size);
    printf("retry=%d\n", (int)again);
    if (again == CUDA_SUCCESS)
        cu.cuMemFree_v2(p[count]);
    for (long i = 0; i < ok; i++)
        cu.cuMemFree_v2(p[i]);
    cu.cuMemGetInfo_v2(&f, &t);
    printf("after_free_used=%zu\n", t - f);
    CUresult bogus = cu.cuMemFree_v2((CUdeviceptr)0x1234);
    printf("untracked_free=%d\n", (int)bogus);
    free(p);
    return 0;
}

/* Every API: fill 3/4 of the limit with it, check that 1/2 more is refused by plain alloc,
 * release, check usage back to what it was. */
static int cmd_apis(unsigned long long limit_mib)
{
    setup(0);
    const uint64_t lim = limit_mib * MiB;
    const uint64_t big = lim / 4 * 3, half = lim / 2;
    CUdeviceptr p, q;
    CUresult r;

    /* plain */
    r = cu.cuMemAlloc_v2(&p, big);
    printf("alloc=%d used=%llu\n", r, (unsigned long long)used_now());
    printf("alloc_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    cu.cuMemFree_v2(p);
    printf("alloc_freed_used=%llu\n", (unsigned long long)used_now());

    /* pitch: 1000 bytes wide rows are padded; the charge is pitch x height */
    size_t pitch = 0;
    r = cu.cuMemAllocPitch_v2(&p, &pitch, 1000, (size_t)(big / 1024), 4);
    printf("pitch=%d pitch_bytes=%zu used=%llu\n", r, pitch, (unsigned long long)used_now());
    printf("pitch_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    cu.cuMemFree_v2(p);
    printf("pitch_freed_used=%llu\n", (unsigned long long)used_now());

    /* managed */
    r = cu.cuMemAllocManaged(&p, big, CU_MEM_ATTACH_GLOBAL);
    printf("managed=%d used=%llu\n", r, (unsigned long long)used_now());
    printf("managed_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    cu.cuMemFree_v2(p);
    printf("managed_freed_used=%llu\n", (unsigned long long)used_now());

    /* stream-ordered, default pool: pool keeps memory until sync/trim */
    CUstream s;
    cu.cuStreamCreate(&s, 0);
    r = cu.cuMemAllocAsync(&p, big, s);
    printf("async=%d used=%llu\n", r, (unsigned long long)used_now());
    printf("async_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    cu.cuMemFreeAsync(p, s);
    cu.cuStreamSynchronize(s);
    CUmemoryPool dp = NULL;
    cu.cuDeviceGetMemPool(&dp, 0);
    cu.cuMemPoolTrimTo(dp, 0);
    cuuint64_t reserved = 0;
    cu.cuMemPoolGetAttribute(dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
    printf("async_freed_used=%llu pool_reserved=%llu\n", (unsigned long long)used_now(),
           (unsigned long long)reserved);

    /* explicit pool with a release threshold: freed blocks stay reserved (and charged) until
     * trimmed */
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    r = cu.cuMemPoolCreate(&pool, &props);
    cuuint64_t thr = UINT64_MAX;
    cu.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
    r = cu.cuMemAllocFromPoolAsync(&p, big, pool, s);
    printf("pool=%d used=%llu\n", r, (unsigned long long)used_now());
    cu.cuMemFreeAsync(p, s);
    cu.cuStreamSynchronize(s);
    cu.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
    printf("pool_kept_used=%llu pool_reserved=%llu\n", (unsigned long long)used_now(),
           (unsigned long long)reserved);
    printf("pool_kept_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    r = cu.cuMemAllocFromPoolAsync(&p, big / 2, pool, s);
    printf("pool_reuse=%d used=%llu\n", r, (unsigned long long)used_now());
    cu.cuMemFreeAsync(p, s);
    cu.cuStreamSynchronize(s);
    cu.cuMemPoolTrimTo(pool, 0);
    printf("pool_trimmed_used=%llu\n", (unsigned long long)used_now());
    cu.cuMemPoolDestroy(pool);

    /* VMM: charged once per physical handle */
    CUmemAllocationProp ap;
    memset(&ap, 0, sizeof(ap));
    ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.location.id = 0;
    CUmemGenericAllocationHandle hnd;
    r = cu.cuMemCreate(&hnd, big, &ap, 0);
    printf("vmm=%d used=%llu\n", r, (unsigned long long)used_now());
    printf("vmm_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    cu.cuMemRelease(hnd);
    printf("vmm_freed_used=%llu\n", (unsigned long long)used_now());

    /* arrays: width x height x channels x element size */
    CUDA_ARRAY_DESCRIPTOR ad = {.Width = 1024,
                                .Height = (size_t)(big / 4096),
                                .Format = CU_AD_FORMAT_FLOAT,
                                .NumChannels = 1};
    CUarray arr;
    r = cu.cuArrayCreate_v2(&arr, &ad);
    printf("array=%d used=%llu\n", r, (unsigned long long)used_now());
    printf("array_over=%d\n", cu.cuMemAlloc_v2(&q, half));
    cu.cuArrayDestroy(arr);
    printf("array_freed_used=%llu\n", (unsigned long long)used_now());
    return 0;
}

static int cmd_views(void)
{
    cu.cuInit(0);
    int n = 0;
    cu.cuDeviceGetCount(&n);
    if (p_nvmlInit_v2)
        p_nvmlInit_v2();
    for (int i = 0; i < n; i++) {
        CUdevice d;
        cu.cuDeviceGet(&d, i);
        CUcontext ctx;
        cu.cuDevicePrimaryCtxRetain(&ctx, d);
        cu.cuCtxSetCurrent(ctx);
        CUuuid u;
        cu.cuDeviceGetUuid(&u, d);
        const unsigned char *b = (const unsigned char *)u.bytes;
        char uuid[64];
        snprintf(uuid, sizeof(uuid),
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        size_t f = 0, t = 0, tm = 0;
        cu.cuMemGetInfo_v2(&f, &t);
        cu.cuDeviceTotalMem_v2(&tm, d);
        printf("dev=%d uuid=%s cu_total=%zu cu_free=%zu total_mem=%zu", i, uuid, t, f, tm);
        nvmlDevice_t nd;
        if (p_nvmlDeviceGetHandleByUUID && p_nvmlDeviceGetHandleByUUID(uuid, &nd) == NVML_SUCCESS) {
            nvmlMemory_t m;
            nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
            p_nvmlDeviceGetMemoryInfo(nd, &m);
            p_nvmlDeviceGetMemoryInfo_v2(nd, &m2);
            printf(" nvml_total=%llu nvml_used=%llu nvml_free=%llu nvml2_total=%llu nvml2_used=%llu"
                   " nvml2_free=%llu",
                   m.total, m.used, m.free, m2.total, m2.used, m2.free);
        }
        /* allocate 1 MiB on this device to show where the usage lands */
        CUdeviceptr p;
        CUresult r = cu.cuMemAlloc_v2(&p, MiB);
        cu.cuMemGetInfo_v2(&f, &t);
        printf(" alloc1=%d used_after=%zu\n", r, t - f);
        if (r == CUDA_SUCCESS)
            cu.cuMemFree_v2(p);
    }
    return 0;
}

static int cmd_hold(unsigned long long mib, long ms)
{
    setup(0);
    CUdeviceptr p;
    CUresult r = cu.cuMemAlloc_v2(&p, mib * MiB);
    printf("hold=%d\n", (int)r);
    fflush(stdout);
    usleep((useconds_t)ms * 1000);
    return 0;
}

struct storm_arg {
    long ms;
    unsigned long long max_mib;
    unsigned seed;
    long allocs;
};

static void *storm_thread(void *arg)
{
    struct storm_arg *a = arg;
    CUdeviceptr live[8] = {0};
    uint64_t end = now_ms() + (uint64_t)a->ms;
    unsigned seed = a->seed;
    cu.cuCtxSetCurrent(probe_ctx);
    long ok = 0;
    while (now_ms() < end) {
        int i = rand_r(&seed) % 8;
        if (live[i]) {
            cu.cuMemFree_v2(live[i]);
            live[i] = 0;
        } else {
            size_t sz = (size_t)(1 + rand_r(&seed) % a->max_mib) * MiB;
            if (cu.cuMemAlloc_v2(&live[i], sz) != CUDA_SUCCESS)
                live[i] = 0;
            else
                ok++;
        }
        usleep(200);
    }
    a->allocs = ok;
    for (int i = 0; i < 8; i++)
        if (live[i])
            cu.cuMemFree_v2(live[i]);
    return NULL;
}

static int cmd_storm(int threads, long ms, unsigned long long max_mib)
{
    setup(0);
    pthread_t t[16];
    struct storm_arg a[16];
    if (threads > 16)
        threads = 16;
    for (int i = 0; i < threads; i++) {
        a[i] = (struct storm_arg){
            .ms = ms, .max_mib = max_mib, .seed = (unsigned)getpid() * 31u + (unsigned)i};
        pthread_create(&t[i], NULL, storm_thread, &a[i]);
    }
    long allocs = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        allocs += a[i].allocs;
    }
    printf("storm_done allocs=%ld\n", allocs);
    return 0;
}

static int cmd_launch(unsigned us, long ms, int queue)
{
    setup(0);
    CUmodule mod;
    CUresult r = cu.cuModuleLoadData(&mod, "gpusim");
    if (r)
        die("cuModuleLoadData", r);
    char name[64];
    snprintf(name, sizeof(name), "sim_busy_%u", us);
    CUfunction f;
    if ((r = cu.cuModuleGetFunction(&f, mod, name)))
        die("cuModuleGetFunction", r);
    uint64_t start = now_ms(), end = start + (uint64_t)ms;
    long n = 0;
    /* completions per 100 ms bucket, printed as one list */
    static long bucket[10000];
    /* short kernels are queued a few at a time so the loop can saturate the device */
    int batch = queue > 0 ? queue : us >= 1000 ? 1 : (int)(1000 / (us ? us : 1));
    while (now_ms() < end) {
        for (int i = 0; i < batch; i++)
            if ((r = cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)))
                die("cuLaunchKernel", r);
        cu.cuCtxSynchronize();
        n += batch;
        uint64_t b = (now_ms() - start) / 100;
        if (b < 10000)
            bucket[b] += batch;
    }
    printf("launches=%ld wall_ms=%llu\n", n, (unsigned long long)(now_ms() - start));
    printf("buckets=");
    for (long b = 0; b < ms / 100; b++)
        printf("%s%ld", b ? "," : "", bucket[b]);
    printf("\n");
    return 0;
}

/* The other launch paths: cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch (a graph of
 * two sim_busy_<us> nodes). Resolved like the rest (dlsym on the driver, or the global scope). */
static int cmd_launchx(const char *variant, unsigned us, long ms)
{
    setup(0);
    const char *mode = getenv("GS_PROBE_RESOLVE");
    void *src = mode && strcmp(mode, "global") == 0
                    ? RTLD_DEFAULT
                    : dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    GS_CU_PFN(cuLaunchKernelEx) ex = (GS_CU_PFN(cuLaunchKernelEx))dlsym(src, "cuLaunchKernelEx");
    GS_CU_PFN(cuLaunchCooperativeKernel)
    coop = (GS_CU_PFN(cuLaunchCooperativeKernel))dlsym(src, "cuLaunchCooperativeKernel");
    GS_CU_PFN(cuGraphCreate) gcreate = (GS_CU_PFN(cuGraphCreate))dlsym(src, "cuGraphCreate");
    GS_CU_PFN(cuGraphAddKernelNode)
    gadd = (GS_CU_PFN(cuGraphAddKernelNode))dlsym(src, "cuGraphAddKernelNode");
    GS_CU_PFN(cuGraphInstantiateWithFlags)
    ginst = (GS_CU_PFN(cuGraphInstantiateWithFlags))dlsym(src, "cuGraphInstantiateWithFlags");
    GS_CU_PFN(cuGraphLaunch) glaunch = (GS_CU_PFN(cuGraphLaunch))dlsym(src, "cuGraphLaunch");
    if (!ex || !coop || !gcreate || !gadd || !ginst || !glaunch)
        die("dlsym launch variants", 0);
    CUmodule mod;
    CUresult r = cu.cuModuleLoadData(&mod, "gpusim");
    if (r)
        die("cuModuleLoadData", r);
    char name[64];
    snprintf(name, sizeof(name), "sim_busy_%u", us);
    CUfunction f;
    if ((r = cu.cuModuleGetFunction(&f, mod, name)))
        die("cuModuleGetFunction", r);
    CUgraphExec exec = NULL;
    if (strcmp(variant, "graph") == 0) {
        CUgraph g;
        CUgraphNode a, b;
        CUDA_KERNEL_NODE_PARAMS kp = {.func = f,
                                      .gridDimX = 1,
                                      .gridDimY = 1,
                                      .gridDimZ = 1,
                                      .blockDimX = 1,
                                      .blockDimY = 1,
                                      .blockDimZ = 1};
        if ((r = gcreate(&g, 0)) || (r = gadd(&a, g, NULL, 0, &kp)) ||
            (r = gadd(&b, g, &a, 1, &kp)) || (r = ginst(&exec, g, 0)))
            die("graph setup", r);
    }
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 1,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    uint64_t start = now_ms(), end = start + (uint64_t)ms;
    long n = 0;
    while (now_ms() < end) {
        if (strcmp(variant, "ex") == 0)
            r = ex(&cfg, f, NULL, NULL);
        else if (strcmp(variant, "coop") == 0)
            r = coop(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL);
        else
            r = glaunch(exec, NULL);
        if (r)
            die("launch", r);
        cu.cuCtxSynchronize();
        n++;
    }
    printf("launches=%ld wall_ms=%llu\n", n, (unsigned long long)(now_ms() - start));
    return 0;
}

/* Poll the physical usage of device 0 through NVML (run WITHOUT libvgpu): max seen. */
static int cmd_watch(long ms)
{
    if (!p_nvmlInit_v2 || p_nvmlInit_v2() != NVML_SUCCESS)
        die("nvmlInit_v2", 0);
    GS_NVML_PFN(nvmlDeviceGetHandleByIndex_v2)
    byidx = (GS_NVML_PFN(nvmlDeviceGetHandleByIndex_v2))dlsym(RTLD_DEFAULT,
                                                              "nvmlDeviceGetHandleByIndex_v2");
    nvmlDevice_t d;
    if (!byidx || byidx(0, &d) != NVML_SUCCESS)
        die("nvmlDeviceGetHandleByIndex_v2", 0);
    unsigned long long max = 0, samples = 0;
    uint64_t end = now_ms() + (uint64_t)ms;
    printf("watching\n");
    while (now_ms() < end) {
        nvmlMemory_t m;
        if (p_nvmlDeviceGetMemoryInfo(d, &m) == NVML_SUCCESS) {
            if (m.used > max)
                max = m.used;
            samples++;
        }
        usleep(500);
    }
    printf("max_used=%llu samples=%llu\n", max, samples);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: vgpu_probe boundary|apis|views|hold|storm|launch ...\n");
        return 2;
    }
    resolve();
    if (strcmp(argv[1], "boundary") == 0 && argc == 4)
        return cmd_boundary(atol(argv[2]), strtoull(argv[3], NULL, 10));
    if (strcmp(argv[1], "apis") == 0 && argc == 3)
        return cmd_apis(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "views") == 0)
        return cmd_views();
    if (strcmp(argv[1], "hold") == 0 && argc == 4)
        return cmd_hold(strtoull(argv[2], NULL, 10), atol(argv[3]));
    if (strcmp(argv[1], "storm") == 0 && argc == 5)
        return cmd_storm(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10));
    if (strcmp(argv[1], "launchx") == 0 && argc == 5)
        return cmd_launchx(argv[2], (unsigned)atoi(argv[3]), atol(argv[4]));
    if (strcmp(argv[1], "watch") == 0 && argc == 3)
        return cmd_watch(atol(argv[2]));
    if (strcmp(argv[1], "launch") == 0 && (argc == 4 || argc == 5))
        return cmd_launch((unsigned)atoi(argv[2]), atol(argv[3]), argc == 5 ? atoi(argv[4]) : 0);
    fprintf(stderr, "vgpu_probe: bad arguments\n");
    return 2;
}
