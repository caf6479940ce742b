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
 *   vgpu_escape poolstorm <threads> <iters> <max_MiB>  the same on the device's default pool
 *                                          (release threshold 0), cuStreamSynchronize at random
 *   vgpu_escape pitch <threads> <iters> <MiB>      cuMemAllocPitch with 513-byte rows (pitch 1024)
 *   vgpu_escape v1 <MiB>                   the v1 entry points
 * cuMemAlloc/cuMemAllocPitch/cuMemGetInfo vgpu_escape host <MiB> cuMemHostAlloc/cuMemHostRegister
 * (host memory) vgpu_escape dev <ordinal> <count> <MiB>  cuMemAlloc_v2 on one device until refused
 *   vgpu_escape graph <n> <MiB>             n graphs with one allocation node each, launched
 *   vgpu_escape asyncdev stream|nocur|pool <count> <MiB>  stream-ordered allocation on device 1
 *                                          while device 0 (or no context) is current
 *   vgpu_escape ctxchurn <iters> <MiB>     contexts created and destroyed by two threads while
 *                                          a third keeps an allocation in each context it makes
 *   vgpu_escape forkstorm <forks>          fork while threads launch, grow pools, map VMM,
 *                                          launch graph memory and churn contexts
 *   vgpu_escape ctxold dlsym|proc <n>      n contexts through the pre-3.2 cuCtxCreate (found by
 *                                          dlsym or cuGetProcAddress(version 3000)), each pushed
 *                                          and popped by the pre-4.0 names; then all destroyed by
 *                                          the pre-4.0 cuCtxDestroy and n created again
 *   vgpu_escape arrayold <MiB>             pre-3.2 cuArrayCreate / cuArray3DCreate until refused
 *   vgpu_escape limits <MiB>               cuCtxSetLimit: malloc heap, printf FIFO and stack (per
 *                                          thread: MiB / resident threads) each raised by <MiB>,
 *                                          then the heap by <MiB>/2 with 600 MiB allocated after,
 *                                          lowered, allocated again; a context created, raised,
 *                                          destroyed
 *   vgpu_escape phys [dev]                 only the physical figures
 * Output: key=value lines. Exit 2 on a setup failure, 3 when the driver lacks an entry point.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
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
    bool random_sync;  /* poolstorm: synchronise at random instead of every 4th free */
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
        if (a->random_sync && rand_r(&a->seed) % 4 == 0)
            FN(cuStreamSynchronize)(s);
        if (do_free) {
            if (a->pitch)
                fr2(live[k]);
            else
                fr(live[k], s);
            live[k] = 0;
            if (!a->pitch && !a->random_sync && (i & 3) == 0)
                FN(cuStreamSynchronize)(s);
            if (!a->pitch && !a->random_sync && (i & 15) == 0)
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

static int cmd_storm(int threads, long iters, unsigned long long max_mib, bool pitch,
                     bool random_sync)
{
    setup(0);
    if (threads > 32)
        threads = 32;
    pthread_t t[32];
    struct storm a[32];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    CUmemoryPool pool = NULL;
    if (!pitch && !random_sync) {
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
                              .random_sync = random_sync,
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

/* Stream-ordered allocation on another device than the current one (issue 21, item 1):
 *   stream: a stream of device 1 while device 0's context is current
 *   nocur:  the same stream with no current context
 *   pool:   a pool located on device 1, a stream of device 0, device 0 current
 * The driver allocates on the stream's (pool's) device: that device's limit must hold. */
static int cmd_asyncdev(const char *mode, long count, unsigned long long mib)
{
    CUresult r = FN(cuInit)(0);
    if (r)
        die("cuInit", r);
    CUcontext c0, c1;
    if ((r = FN(cuDevicePrimaryCtxRetain)(&c0, 0)) || (r = FN(cuDevicePrimaryCtxRetain)(&c1, 1)))
        die("cuDevicePrimaryCtxRetain", r);
    CUstream s;
    CUmemoryPool pool = NULL;
    if (strcmp(mode, "pool") == 0) {
        FN(cuCtxSetCurrent)(c0);
        if ((r = FN(cuStreamCreate)(&s, 0)))
            die("cuStreamCreate", r);
        CUmemPoolProps props;
        memset(&props, 0, sizeof(props));
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 1;
        if ((r = FN(cuMemPoolCreate)(&pool, &props)))
            die("cuMemPoolCreate", r);
    } else {
        FN(cuCtxSetCurrent)(c1);
        if ((r = FN(cuStreamCreate)(&s, 0)))
            die("cuStreamCreate", r);
        FN(cuCtxSetCurrent)(strcmp(mode, "nocur") == 0 ? NULL : c0);
    }
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (long i = 0; i < count; i++) {
        CUdeviceptr p;
        r = pool ? FN(cuMemAllocFromPoolAsync)(&p, mib * MiB, pool, s)
                 : FN(cuMemAllocAsync)(&p, mib * MiB, s);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        ok++;
    }
    printf("ok=%ld first_fail=%d\n", ok, (int)first_fail);
    print_phys(1);
    return 0;
}

/* Context churn (issue 21, item 3): one thread creates and destroys contexts as fast as it can
 * while another creates contexts, allocates <MiB> in each and keeps it. A handle the driver
 * hands out again must not lose the new context's allocations when the old one's destruction
 * is booked. */
struct churn {
    long iters;
    unsigned long long mib;
    atomic_int done;
    long held, refused;
};

static void *churn_destroyer(void *arg)
{
    struct churn *a = arg;
    GS_CU_PFN(cuCtxCreate_v2) create = FN(cuCtxCreate_v2);
    GS_CU_PFN(cuCtxDestroy_v2) destroy = FN(cuCtxDestroy_v2);
    while (!atomic_load(&a->done)) {
        CUcontext c;
        if (create(&c, 0, 0) == CUDA_SUCCESS)
            destroy(c);
    }
    return NULL;
}

static int cmd_ctxchurn(long iters, unsigned long long mib)
{
    CUresult r = FN(cuInit)(0);
    if (r)
        die("cuInit", r);
    GS_CU_PFN(cuCtxCreate_v2) create = FN(cuCtxCreate_v2);
    GS_CU_PFN(cuCtxDestroy_v2) destroy = FN(cuCtxDestroy_v2);
    GS_CU_PFN(cuCtxPopCurrent_v2) pop = FN(cuCtxPopCurrent_v2);
    GS_CU_PFN(cuMemAlloc_v2) alloc = FN(cuMemAlloc_v2);
    struct churn a = {.iters = iters, .mib = mib};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, churn_destroyer, &a);
    for (long i = 0; i < iters && a.held < 64; i++) {
        CUcontext c, top;
        if (create(&c, 0, 0) != CUDA_SUCCESS)
            continue;
        CUdeviceptr p;
        if (alloc(&p, mib * MiB) == CUDA_SUCCESS) {
            a.held++; /* the context and its allocation stay */
            pop(&top);
        } else {
            a.refused++;
            destroy(c);
        }
    }
    atomic_store(&a.done, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("held=%ld refused=%ld\n", a.held, a.refused);
    print_phys(0);
    return 0;
}

typedef CUresult (*ctx_create_v1_fn)(CUcontext *pctx, unsigned int flags, CUdevice dev);
typedef CUresult (*ctx_one_fn)(CUcontext ctx);
typedef CUresult (*ctx_pop_fn)(CUcontext *pctx);

/* The pre-3.2/4.0 context names: one round of up to n creations, every context pushed and popped
 * by the old names; prints the round's figures (then destroys them with the old name). */
static void ctxold_round(const char *tag, ctx_create_v1_fn create, long n)
{
    ctx_one_fn destroy = (ctx_one_fn)sym("cuCtxDestroy");
    ctx_one_fn push = (ctx_one_fn)sym("cuCtxPushCurrent");
    ctx_pop_fn pop = (ctx_pop_fn)sym("cuCtxPopCurrent");
    CUcontext ctxs[256];
    long ok = 0, stack_errors = 0;
    CUresult first_fail = CUDA_SUCCESS;
    for (long i = 0; i < n && i < 256; i++) {
        CUresult r = create(&ctxs[ok], 0, 0);
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        CUcontext top = NULL;
        if (pop(&top) != CUDA_SUCCESS || top != ctxs[ok]) /* cuCtxCreate made it current */
            stack_errors++;
        if (push(ctxs[ok]) != CUDA_SUCCESS || pop(&top) != CUDA_SUCCESS || top != ctxs[ok])
            stack_errors++;
        ok++;
    }
    printf("%s_ok=%ld %s_first_fail=%d %s_stack_errors=%ld\n", tag, ok, tag, (int)first_fail, tag,
           stack_errors);
    print_phys(0);
    long destroy_errors = 0;
    for (long i = 0; i < ok; i++)
        if (destroy(ctxs[i]) != CUDA_SUCCESS)
            destroy_errors++;
    printf("%s_destroy_errors=%ld\n", tag, destroy_errors);
}

static int cmd_ctxold(const char *how, long n)
{
    CUresult r = FN(cuInit)(0);
    if (r)
        die("cuInit", r);
    ctx_create_v1_fn create = NULL;
    if (strcmp(how, "proc") == 0) {
        void *p = NULL;
        r = FN(cuGetProcAddress)("cuCtxCreate", &p, 3000, 0);
        if (r != CUDA_SUCCESS || !p)
            die("cuGetProcAddress(cuCtxCreate, 3000)", r);
        create = (ctx_create_v1_fn)p;
    } else {
        create = (ctx_create_v1_fn)sym("cuCtxCreate");
    }
    ctxold_round("first", create, n);
    ctxold_round("again", create, n);
    /* the graphics-interop creator (gpusim is headless: the driver's refusal, nothing kept) */
    ctx_create_v1_fn gl = (ctx_create_v1_fn)sym("cuGLCtxCreate_v2");
    CUcontext g = NULL;
    printf("gl=%d\n", (int)gl(&g, 0, 0));
    print_phys(0);
    return 0;
}

typedef CUresult (*array_v1_fn)(CUarray *h, const CUDA_ARRAY_DESCRIPTOR_v1 *d);
typedef CUresult (*array3d_v1_fn)(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d);

/* The pre-3.2 array names, alternately, arrays of <MiB> each (float, 1 channel) until refused. */
static int cmd_arrayold(unsigned long long mib)
{
    setup(0);
    array_v1_fn create2d = (array_v1_fn)sym("cuArrayCreate");
    array3d_v1_fn create3d = (array3d_v1_fn)sym("cuArray3DCreate");
    GS_CU_PFN(cuArrayDestroy) destroy = FN(cuArrayDestroy);
    CUarray arrays[4096];
    long ok = 0;
    CUresult first_fail = CUDA_SUCCESS;
    unsigned int texels = (unsigned int)(mib * MiB / 4);
    for (int i = 0; i < 4096; i++) {
        CUresult r;
        if (i & 1) {
            CUDA_ARRAY3D_DESCRIPTOR_v1 d = {1024, texels / 1024 / 4, 4, CU_AD_FORMAT_FLOAT, 1, 0};
            r = create3d(&arrays[ok], &d);
        } else {
            CUDA_ARRAY_DESCRIPTOR_v1 d = {1024, texels / 1024, CU_AD_FORMAT_FLOAT, 1};
            r = create2d(&arrays[ok], &d);
        }
        if (r != CUDA_SUCCESS) {
            first_fail = r;
            break;
        }
        ok++;
    }
    printf("ok=%ld first_fail=%d\n", ok, (int)first_fail);
    print_phys(0);
    for (long i = 0; i < ok; i++)
        destroy(arrays[i]);
    return 0;
}

static int cmd_limits(unsigned long long mib)
{
    setup(0);
    GS_CU_PFN(cuCtxSetLimit) set = FN(cuCtxSetLimit);
    GS_CU_PFN(cuCtxGetLimit) get = FN(cuCtxGetLimit);
    GS_CU_PFN(cuMemAlloc_v2) alloc = FN(cuMemAlloc_v2);
    GS_CU_PFN(cuMemFree_v2) fr = FN(cuMemFree_v2);
    int sms = 0, per_sm = 0;
    FN(cuDeviceGetAttribute)(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    FN(cuDeviceGetAttribute)(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0);
    size_t heap0 = 0, fifo0 = 0, stack0 = 0;
    get(&heap0, CU_LIMIT_MALLOC_HEAP_SIZE);
    get(&fifo0, CU_LIMIT_PRINTF_FIFO_SIZE);
    get(&stack0, CU_LIMIT_STACK_SIZE);
    size_t big = (size_t)(mib * MiB);
    CUresult r = set(CU_LIMIT_MALLOC_HEAP_SIZE, heap0 + big);
    printf("heap=%d\n", (int)r);
    print_phys(0);
    set(CU_LIMIT_MALLOC_HEAP_SIZE, heap0);
    r = set(CU_LIMIT_PRINTF_FIFO_SIZE, fifo0 + big);
    printf("fifo=%d\n", (int)r);
    print_phys(0);
    set(CU_LIMIT_PRINTF_FIFO_SIZE, fifo0);
    size_t per_thread = big / ((size_t)(sms > 0 ? sms : 1) * (size_t)(per_sm > 0 ? per_sm : 1));
    r = set(CU_LIMIT_STACK_SIZE, stack0 + per_thread);
    printf("stack=%d\n", (int)r);
    print_phys(0);
    set(CU_LIMIT_STACK_SIZE, stack0);
    /* a heap of half, then memory beside it */
    r = set(CU_LIMIT_MALLOC_HEAP_SIZE, heap0 + big / 2);
    CUdeviceptr p = 0;
    CUresult a1 = alloc(&p, 600 * MiB);
    if (a1 == CUDA_SUCCESS)
        fr(p);
    CUresult lower = set(CU_LIMIT_MALLOC_HEAP_SIZE, heap0);
    CUresult a2 = alloc(&p, 600 * MiB);
    if (a2 == CUDA_SUCCESS)
        fr(p);
    printf("half=%d alloc_beside=%d lower=%d alloc_after=%d\n", (int)r, (int)a1, (int)lower,
           (int)a2);
    /* a context's limits go with it */
    CUcontext c;
    CUresult cr = FN(cuCtxCreate_v2)(&c, 0, 0);
    CUresult cs = set(CU_LIMIT_MALLOC_HEAP_SIZE, heap0 + big / 2);
    CUresult cd = FN(cuCtxDestroy_v2)(c);
    FN(cuCtxSetCurrent)(ctx0);
    CUresult a3 = alloc(&p, 600 * MiB);
    if (a3 == CUDA_SUCCESS)
        fr(p);
    printf("ctx=%d ctx_heap=%d ctx_destroy=%d alloc_after_ctx=%d\n", (int)cr, (int)cs, (int)cd,
           (int)a3);
    print_phys(0);
    return 0;
}

/* Fork during concurrent launches, pool growth, VMM, graph memory and context churn (issue
 * 21, item 6): every child re-initialises the driver and goes through each of those paths once;
 * a lock a parent's thread held at the fork must not be held in the child. Prints the number of
 * children that did not finish within 30 s (left locked: killed). */
struct fork_worker {
    int kind;
    atomic_int *stop;
};

static CUfunction load_kernel(void)
{
    CUmodule m;
    CUfunction f = NULL;
    if (FN(cuModuleLoadData)(&m, "gpusim") == CUDA_SUCCESS)
        FN(cuModuleGetFunction)(&f, m, "sim_probe_kernel");
    return f;
}

static CUgraphExec graph_with_alloc(CUdeviceptr *dptr, size_t bytes)
{
    CUgraph g;
    CUgraphExec x = NULL;
    if (FN(cuGraphCreate)(&g, 0) != CUDA_SUCCESS)
        return NULL;
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof(np));
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = 0;
    np.bytesize = bytes;
    CUgraphNode node;
    if (FN(cuGraphAddMemAllocNode)(&node, g, NULL, 0, &np) == CUDA_SUCCESS &&
        FN(cuGraphInstantiateWithFlags)(&x, g, 0) != CUDA_SUCCESS)
        x = NULL;
    *dptr = np.dptr;
    return x;
}

/* One pass over every locked path (parent threads loop over their own; a child does all). */
static void every_path(int kind, CUstream s, CUfunction f, unsigned *seed)
{
    CUdeviceptr p;
    if (kind < 0 || kind == 0) { /* stream-ordered pool growth */
        size_t mib = 1 + rand_r(seed) % 8;
        if (FN(cuMemAllocAsync)(&p, mib * MiB, s) == CUDA_SUCCESS)
            FN(cuMemFreeAsync)(p, s);
        FN(cuStreamSynchronize)(s);
    }
    if ((kind < 0 || kind == 1) && f) /* launches (compute-capped: the limiter) */
        FN(cuLaunchKernel)(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
    if (kind < 0 || kind == 2) { /* VMM */
        CUmemAllocationProp ap;
        memset(&ap, 0, sizeof(ap));
        ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        ap.location.id = 0;
        CUmemGenericAllocationHandle h;
        CUdeviceptr va;
        if (FN(cuMemCreate)(&h, 2 * MiB, &ap, 0) == CUDA_SUCCESS) {
            if (FN(cuMemAddressReserve)(&va, 2 * MiB, 0, 0, 0) == CUDA_SUCCESS &&
                FN(cuMemMap)(va, 2 * MiB, 0, h, 0) == CUDA_SUCCESS)
                FN(cuMemUnmap)(va, 2 * MiB);
            FN(cuMemRelease)(h);
        }
    }
    if (kind < 0 || kind == 3) { /* graph memory */
        CUgraphExec x = graph_with_alloc(&p, 2 * MiB);
        if (x) {
            if (FN(cuGraphLaunch)(x, s) == CUDA_SUCCESS) {
                FN(cuStreamSynchronize)(s);
                FN(cuMemFreeAsync)(p, s);
                FN(cuStreamSynchronize)(s);
            }
            FN(cuGraphExecDestroy)(x);
            FN(cuDeviceGraphMemTrim)(0);
        }
    }
    if (kind < 0 || kind == 4) { /* contexts */
        CUcontext c;
        if (FN(cuCtxCreate_v2)(&c, 0, 0) == CUDA_SUCCESS)
            FN(cuCtxDestroy_v2)(c);
        FN(cuCtxSetCurrent)(ctx0);
    }
    if (kind < 0 || kind == 5) { /* plain allocations */
        if (FN(cuMemAlloc_v2)(&p, MiB) == CUDA_SUCCESS)
            FN(cuMemFree_v2)(p);
    }
}

static void *fork_worker(void *arg)
{
    struct fork_worker *w = arg;
    FN(cuCtxSetCurrent)(ctx0);
    CUstream s;
    FN(cuStreamCreate)(&s, 0);
    CUfunction f = w->kind == 1 ? load_kernel() : NULL;
    unsigned seed = (unsigned)w->kind * 7919u;
    while (!atomic_load(w->stop))
        every_path(w->kind, s, f, &seed);
    return NULL;
}

static int cmd_forkstorm(int forks)
{
    setup(0);
    atomic_int stop = 0;
    pthread_t t[12];
    struct fork_worker w[12];
    for (int i = 0; i < 12; i++) {
        w[i] = (struct fork_worker){.kind = i % 6, .stop = &stop};
        pthread_create(&t[i], NULL, fork_worker, &w[i]);
    }
    int hung = 0, failed = 0, forked = 0;
    for (int i = 0; i < forks; i++) {
        usleep(1000 + (unsigned)(i * 7919) % 5000);
        pid_t pid = fork();
        if (pid == 0) {
            /* the child: the driver starts over; every hooked path once, then out */
            alarm(0);
            if (FN(cuInit)(0) == CUDA_SUCCESS &&
                FN(cuDevicePrimaryCtxRetain)(&ctx0, 0) == CUDA_SUCCESS &&
                FN(cuCtxSetCurrent)(ctx0) == CUDA_SUCCESS) {
                CUstream s;
                FN(cuStreamCreate)(&s, 0);
                unsigned seed = 1;
                every_path(-1, s, load_kernel(), &seed);
            }
            _exit(0);
        }
        if (pid < 0) {
            failed++;
            continue;
        }
        forked++;
        int st = 0;
        int waited = 0;
        while (waitpid(pid, &st, WNOHANG) == 0 && waited < 30000) {
            usleep(1000);
            waited++;
        }
        if (waited >= 30000) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            break; /* one is enough to know */
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed++;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 12; i++)
        pthread_join(t[i], NULL);
    printf("forks=%d hung=%d failed=%d\n", forked, hung, failed);
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
        return cmd_storm(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10), false, false);
    if (strcmp(argv[1], "poolstorm") == 0 && argc == 5)
        return cmd_storm(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10), false, true);
    if (strcmp(argv[1], "pitch") == 0 && argc == 5)
        return cmd_storm(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10), true, false);
    if (strcmp(argv[1], "v1") == 0 && argc == 3)
        return cmd_v1(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "host") == 0 && argc == 3)
        return cmd_host(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "graph") == 0 && argc == 4)
        return cmd_graph(atol(argv[2]), strtoull(argv[3], NULL, 10));
    if (strcmp(argv[1], "forkstorm") == 0 && argc == 3)
        return cmd_forkstorm(atoi(argv[2]));
    if (strcmp(argv[1], "ctxchurn") == 0 && argc == 4)
        return cmd_ctxchurn(atol(argv[2]), strtoull(argv[3], NULL, 10));
    if (strcmp(argv[1], "ctxold") == 0 && argc == 4)
        return cmd_ctxold(argv[2], atol(argv[3]));
    if (strcmp(argv[1], "limits") == 0 && argc == 3)
        return cmd_limits(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "arrayold") == 0 && argc == 3)
        return cmd_arrayold(strtoull(argv[2], NULL, 10));
    if (strcmp(argv[1], "asyncdev") == 0 && argc == 5)
        return cmd_asyncdev(argv[2], atol(argv[3]), strtoull(argv[4], NULL, 10));
    if (strcmp(argv[1], "dev") == 0 && (argc == 5 || argc == 6))
        return cmd_dev(atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10),
                       argc == 6 && strcmp(argv[5], "wait") == 0);
    fprintf(stderr, "vgpu_escape: bad arguments\n");
    return 2;
}
