/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile driver-API client for the libvgpu escape tests (test_escapes.py): each command tries one
 * way past the memory limit, then prints what gpusim itself says (read from its state file, not
 * through any hooked API): phys_used (now) and phys_peak (high-water mark) of device <dev>.
 *
 *   vgpu_escape vmm <iters> <MiB>          cuMemCreate + cuMemMap + cuMemRelease, mapping kept
 *   vgpu_escape vmm_retain <iters> <MiB>   ... + cuMemRetainAllocationHandle + cuMemUnmap
 *   vgpu_escape pooldestroy <iters> <MiB>  cuMemPoolCreate + alloc from it + cuMemPoolDestroy, live
 *   vgpu_escape async <threads> <iters> <max_MiB>  stream-ordered alloc/free storm, one pool
 *   vgpu_escape pitch <threads> <iters> <MiB>      cuMemAllocPitch with 513-byte rows (pitch 1024)
 *   vgpu_escape v1 <MiB>                   the v1 entry points
 * cuMemAlloc/cuMemAllocPitch/cuMemGetInfo vgpu_escape host <MiB> cuMemHostAlloc/cuMemHostRegister
 * (host memory) vgpu_escape dev <ordinal> <count> <MiB>  cuMemAlloc_v2 on one device until refused
 *   vgpu_escape graph <n> <MiB>             n graphs with one allocation node each, launched
 *   vgpu_escape phys [dev]                 only the physical figures
 * Output: key=value lines. Exit 2 on a setup failure, 3 when the driver lacks an entry point.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "abi/cuda_abi.h"
#include "sim/sim-state.h"

#define MiB (1ULL << 20)

static void *lib;

static void die(const char *what, int code)
{
    fprintf(stderr, "vgpu_escape: %s failed (%d)\n", what, code);
    exit(2);
}

/* A driver without the entry point: exit 3 (the test skips what gpusim does not model). */
static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        printf("unsupported=%s\n", name);
        exit(3);
    }
    return p;
}

#define FN(name) ((GS_CU_PFN(name))sym(#name))

/* gpusim's own books, read from its state file without any hooked API. */
static void print_phys(int dev)
{
    const char *path = getenv("GPUSIM_STATE");
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        die("open GPUSIM_STATE", 0);
    void *p = mmap(NULL, sizeof(struct sim_shared), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        die("mmap GPUSIM_STATE", 0);
    const struct sim_shared *sh = p;
    printf("phys_used=%llu phys_peak=%llu\n",
           (unsigned long long)__atomic_load_n(&sh->dev[dev].used_mem, __ATOMIC_ACQUIRE),
           (unsigned long long)__atomic_load_n(&sh->dev[dev].peak_mem, __ATOMIC_ACQUIRE));
    munmap(p, sizeof(struct sim_shared));
}

static CUcontext ctx0;

static void setup(int ordinal)
{
    CUresult r = FN(cuInit)(0);
    if (r)
        die("cuInit", r);
    CUdevice d;
    if ((r = FN(cuDeviceGet)(&d, ordinal)))
        die("cuDeviceGet", r);
    if ((r = FN(cuDevicePrimaryCtxRetain)(&ctx0, d)))
        die("cuDevicePrimaryCtxRetain", r);
    if ((r = FN(cuCtxSetCurrent)(ctx0)))
        die("cuCtxSetCurrent", r);
}

/* Escape 1: release a mapped handle; the driver keeps it until the last unmap. */
static int cmd_vmm(long iters, unsigned long long mib, bool retain)
{
    setup(0);
    CUmemAllocationProp ap;
    memset(&ap, 0, sizeof(ap));
    ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.location.id = 0;
    GS_CU_PFN(cuMemRetainAllocationHandle)
    ret = retain ? FN(cuMemRetainAllocationHandle) : NULL;
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (long i = 0; i < iters; i++) {
        CUmemGenericAllocationHandle h;
        CUresult r = FN(cuMemCreate)(&h, mib * MiB, &ap, 0);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        CUdeviceptr va;
        if ((r = FN(cuMemAddressReserve)(&va, mib * MiB, 0, 0, 0)))
            die("cuMemAddressReserve", r);
        if ((r = FN(cuMemMap)(va, mib * MiB, 0, h, 0)))
            die("cuMemMap", r);
        if ((r = FN(cuMemRelease)(h)))
            die("cuMemRelease", r);
        if (retain) {
            /* take the handle back from the mapping, unmap: the retained handle keeps it */
            CUmemGenericAllocationHandle h2;
            if ((r = ret(&h2, (void *)(uintptr_t)va)))
                die("cuMemRetainAllocationHandle", r);
            if ((r = FN(cuMemUnmap)(va, mib * MiB)))
                die("cuMemUnmap", r);
        }
        ok++;
    }
    printf("ok=%ld first_fail=%d\n", ok, (int)first_fail);
    print_phys(0);
    return 0;
}

/* Escape 2: destroy a pool while its allocations are live. */
static int cmd_pooldestroy(long iters, unsigned long long mib)
{
    setup(0);
    CUstream s;
    FN(cuStreamCreate)(&s, 0);
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    CUdeviceptr *live = calloc((size_t)iters + 1, sizeof(*live));
    for (long i = 0; i < iters; i++) {
        CUmemPoolProps props;
        memset(&props, 0, sizeof(props));
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 0;
        CUmemoryPool pool;
        CUresult r = FN(cuMemPoolCreate)(&pool, &props);
        if (r)
            die("cuMemPoolCreate", r);
        CUresult ra = FN(cuMemAllocFromPoolAsync)(&live[i], mib * MiB, pool, s);
        FN(cuStreamSynchronize)(s);
        if ((r = FN(cuMemPoolDestroy)(pool)))
            die("cuMemPoolDestroy", r);
        if (ra != CUDA_SUCCESS) {
            first_fail = ra;
            break;
        }
        ok++;
    }
    CUdeviceptr p;
    CUresult plain = FN(cuMemAlloc_v2)(&p, mib * MiB);
    printf("ok=%ld first_fail=%d plain_after=%d\n", ok, (int)first_fail, (int)plain);
    print_phys(0);
    /* free the destroyed pools' allocations: then everything goes back */
    if (plain == CUDA_SUCCESS)
        FN(cuMemFree_v2)(p);
    for (long i = 0; i < ok; i++)
        FN(cuMemFreeAsync)(live[i], s);
    FN(cuStreamSynchronize)(s);
    CUresult again = FN(cuMemAlloc_v2)(&p, mib * MiB);
    printf("after_free_alloc=%d\n", (int)again);
    free(live);
    return 0;
}

struct storm {
    long iters;
    unsigned long long max_mib;
    unsigned seed;
    bool pitch;
    CUmemoryPool pool; /* async: the device's pool, keeping freed blocks (threshold max) */
    long ok, refused;
    pthread_barrier_t *start;
};

static void *storm_thread(void *arg)
{
    struct storm *a = arg;
    FN(cuCtxSetCurrent)(ctx0);
    GS_CU_PFN(cuMemAllocAsync) alloc = FN(cuMemAllocAsync);
    GS_CU_PFN(cuMemFreeAsync) fr = FN(cuMemFreeAsync);
    GS_CU_PFN(cuMemAllocPitch_v2) pitch = FN(cuMemAllocPitch_v2);
    GS_CU_PFN(cuMemFree_v2) fr2 = FN(cuMemFree_v2);
    CUstream s;
    FN(cuStreamCreate)(&s, 0);
    CUdeviceptr live[8] = {0};
    pthread_barrier_wait(a->start);
    for (long i = 0; i < a->iters; i++) {
        /* fill the slots (allocation 2 times out of 3), free a random one otherwise */
        int k = rand_r(&a->seed) % 8;
        bool do_free = live[k] && rand_r(&a->seed) % 3 == 0;
        if (!do_free && live[k]) {
            for (int j = 0; j < 8 && live[k]; j++)
                k = (k + 1) % 8;
            do_free = live[k] != 0;
        }
        if (do_free) {
            if (a->pitch)
                fr2(live[k]);
            else
                fr(live[k], s);
            live[k] = 0;
            if (!a->pitch && (i & 3) == 0)
                FN(cuStreamSynchronize)(s);
            if (!a->pitch && (i & 15) == 0)
                FN(cuMemPoolTrimTo)(a->pool, 0); /* the kept free blocks go back now and then */
            continue;
        }
        unsigned long long mib = 1 + (unsigned long long)rand_r(&a->seed) % a->max_mib;
        CUresult r;
        if (a->pitch) {
            size_t p = 0;
            /* 513-byte rows: the driver pads each to 1024 (about twice the asked size) */
            r = pitch(&live[k], &p, 513, (size_t)(mib * MiB / 1024), 4);
        } else {
            r = alloc(&live[k], mib * MiB, s);
        }
        if (r == CUDA_SUCCESS)
            a->ok++;
        else {
            live[k] = 0;
            a->refused++;
        }
    }
    for (int k = 0; k < 8; k++)
        if (live[k]) {
            if (a->pitch)
                fr2(live[k]);
            else
                fr(live[k], s);
        }
    FN(cuStreamSynchronize)(s);
    return NULL;
}

static int cmd_storm(int threads, long iters, unsigned long long max_mib, bool pitch)
{
    setup(0);
    if (threads > 32)
        threads = 32;
    pthread_t t[32];
    struct storm a[32];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    CUmemoryPool pool = NULL;
    if (!pitch) {
        /* freed blocks stay in the pool: threads race for its free blocks and its growth */
        FN(cuDeviceGetMemPool)(&pool, 0);
        cuuint64_t thr = UINT64_MAX;
        FN(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
    }
    for (int i = 0; i < threads; i++) {
        a[i] = (struct storm){.iters = iters,
                              .max_mib = max_mib,
                              .seed = (unsigned)getpid() * 131u + (unsigned)i,
                              .pitch = pitch,
                              .pool = pool,
                              .start = &start};
        pthread_create(&t[i], NULL, storm_thread, &a[i]);
    }
    long ok = 0, refused = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        ok += a[i].ok;
        refused += a[i].refused;
    }
    printf("ok=%ld refused=%ld\n", ok, refused);
    print_phys(0);
    return 0;
}

/* The v1 entry points (32-bit sizes and pointers), as old binaries call them. */
typedef CUresult (*alloc_v1_fn)(unsigned int *dptr, unsigned int bytesize);
typedef CUresult (*pitch_v1_fn)(unsigned int *dptr, unsigned int *pitch, unsigned int w,
                                unsigned int h, unsigned int elem);
typedef CUresult (*free_v1_fn)(unsigned int dptr);
typedef CUresult (*info_v1_fn)(unsigned int *free, unsigned int *total);

static int cmd_v1(unsigned long long mib)
{
    setup(0);
    alloc_v1_fn alloc = (alloc_v1_fn)sym("cuMemAlloc");
    pitch_v1_fn pitch = (pitch_v1_fn)sym("cuMemAllocPitch");
    free_v1_fn fr = (free_v1_fn)sym("cuMemFree");
    info_v1_fn info = (info_v1_fn)sym("cuMemGetInfo");
    unsigned int f = 0, t = 0;
    CUresult r = info(&f, &t);
    printf("info=%d free=%u total=%u\n", (int)r, f, t);
    unsigned int ptrs[4096];
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (int i = 0; i < 4096; i++) {
        unsigned int pp = 0;
        if (i & 1)
            r = alloc(&ptrs[ok], (unsigned)(mib * MiB));
        else
            r = pitch(&ptrs[ok], &pp, 513, (unsigned)(mib * MiB / 1024), 4);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        ok++;
    }
    printf("ok=%ld first_fail=%d\n", ok, (int)first_fail);
    print_phys(0);
    for (long i = 0; i < ok; i++)
        fr(ptrs[i]);
    r = info(&f, &t);
    printf("info_after=%d free_after=%u\n", (int)r, f);
    print_phys(0);
    return 0;
}

typedef CUresult (*host_alloc_fn)(void **pp, size_t bytesize, unsigned int flags);
typedef CUresult (*host_free_fn)(void *p);
typedef CUresult (*host_register_fn)(void *p, size_t bytesize, unsigned int flags);
typedef CUresult (*host_unregister_fn)(void *p);

static int cmd_host(unsigned long long mib)
{
    setup(0);
    host_alloc_fn ha = (host_alloc_fn)sym("cuMemHostAlloc");
    host_free_fn hf = (host_free_fn)sym("cuMemFreeHost");
    host_register_fn hr = (host_register_fn)sym("cuMemHostRegister_v2");
    host_unregister_fn hu = (host_unregister_fn)sym("cuMemHostUnregister");
    void *p = NULL;
    CUresult r1 = ha(&p, mib * MiB, 0);
    void *buf = malloc(mib * MiB);
    CUresult r2 = hr(buf, mib * MiB, 0);
    printf("host_alloc=%d host_register=%d\n", (int)r1, (int)r2);
    print_phys(0);
    CUdeviceptr d;
    printf("dev_alloc=%d\n", (int)FN(cuMemAlloc_v2)(&d, MiB));
    if (r1 == CUDA_SUCCESS)
        printf("host_free=%d\n", (int)hf(p));
    if (r2 == CUDA_SUCCESS)
        printf("host_unregister=%d\n", (int)hu(buf));
    free(buf);
    return 0;
}

/* Graph memory: allocation nodes get physical memory when the graph is launched. */
static int cmd_graph(long graphs, unsigned long long mib)
{
    setup(0);
    CUstream s;
    FN(cuStreamCreate)(&s, 0);
    GS_CU_PFN(cuGraphAddMemAllocNode) add = FN(cuGraphAddMemAllocNode);
    GS_CU_PFN(cuDeviceGraphMemTrim) trim = FN(cuDeviceGraphMemTrim);
    CUdeviceptr *ptrs = calloc((size_t)graphs + 1, sizeof(*ptrs));
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (long i = 0; i < graphs; i++) {
        CUgraph g;
        CUresult r = FN(cuGraphCreate)(&g, 0);
        if (r)
            die("cuGraphCreate", r);
        CUDA_MEM_ALLOC_NODE_PARAMS np;
        memset(&np, 0, sizeof(np));
        np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        np.poolProps.location.id = 0;
        np.bytesize = mib * MiB;
        CUgraphNode node;
        if ((r = add(&node, g, NULL, 0, &np)))
            die("cuGraphAddMemAllocNode", r);
        CUgraphExec x;
        if ((r = FN(cuGraphInstantiateWithFlags)(&x, g, 0)))
            die("cuGraphInstantiateWithFlags", r);
        r = FN(cuGraphLaunch)(x, s);
        FN(cuStreamSynchronize)(s);
        FN(cuGraphExecDestroy)(x);
        FN(cuGraphDestroy)(g);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        ptrs[ok++] = np.dptr; /* stays allocated: no free node */
    }
    printf("ok=%ld first_fail=%d\n", ok, (int)first_fail);
    print_phys(0);
    for (long i = 0; i < ok; i++)
        FN(cuMemFreeAsync)(ptrs[i], s);
    FN(cuStreamSynchronize)(s);
    CUdeviceptr p;
    CUresult kept = FN(cuMemAlloc_v2)(&p, mib * MiB);
    if (kept == CUDA_SUCCESS)
        FN(cuMemFree_v2)(p);
    CUresult tr = trim(0);
    CUresult after = FN(cuMemAlloc_v2)(&p, mib * MiB);
    printf("freed_alloc=%d trim=%d trimmed_alloc=%d\n", (int)kept, (int)tr, (int)after);
    print_phys(0);
    free(ptrs);
    return 0;
}

static int cmd_dev(int ordinal, long count, unsigned long long mib, bool wait)
{
    setup(ordinal);
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (long i = 0; i < count; i++) {
        CUdeviceptr p;
        CUresult r = FN(cuMemAlloc_v2)(&p, mib * MiB);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        ok++;
    }
    printf("ok=%ld first_fail=%d\n", ok, (int)first_fail);
    print_phys(ordinal);
    if (wait) {
        /* hold what we got until the test closes our stdin */
        char buf[64];
        while (fread(buf, 1, sizeof(buf), stdin) > 0)
            ;
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: vgpu_escape vmm|vmm_retain|pooldestroy|async|pitch|v1|host|dev|phys"
                        " ...\n");
        return 2;
    }
    if (strcmp(argv[1], "phys") == 0) {
        print_phys(argc > 2 ? atoi(argv[2]) : 0);
        return 0;
    }
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        die(dlerror(), 0);
    if (strcmp(argv[1], "vmm") == 0 && argc == 4)
        return cmd_vmm(atol(argv[2]), strtoull(argv[3], NULL, 10), false);
    if (strcmp(argv[1], "vmm_retain") == 0 && argc == 4)
        return cmd_vmm(atol(argv[2]), strtoull(argv[3], NULL, 10), true);
    if (strcmp(argv[1], "pooldestroy") == 0 && argc == 4)
        return cmd_pooldestroy(atol(argv[2]), strtoull(argv[3], NULL, 10));
    if (strcmp(argv[1], "async") == 0 && argc == 5)
        return cmd_storm(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10), false);
    if (strcmp(argv[1], "pitch") == 0 && argc == 5)
        return cmd_storm(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10), true);
    if (strcmp(argv[1], "v1") == 0 && argc == 3)
        return cmd_v1(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "host") == 0 && argc == 3)
        return cmd_host(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "graph") == 0 && argc == 4)
        return cmd_graph(atol(argv[2]), strtoull(argv[3], NULL, 10));
    if (strcmp(argv[1], "dev") == 0 && (argc == 5 || argc == 6))
        return cmd_dev(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10),
                       argc == 6 && strcmp(argv[5], "wait") == 0);
    fprintf(stderr, "vgpu_escape: bad arguments\n");
    return 2;
}
