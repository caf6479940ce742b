/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vgpu_ctx_probe: context lifetimes, first sight and views under libvgpu (test_contexts.py).
 * Judges from gpusim's own books: `phys` is this process's usage as the driver lists it (NVML
 * process list, taken from gpusim past libvgpu, which answers a slice's list from its books).
 *
 *   lifetime reset|destroy|release|hidden <chunk_mib>
 *       allocate a chunk in a context, end the context that way, allocate again in a new one
 *   runtime <chunk_mib>
 *       the CUDA runtime's pattern: the primary context retained out of sight (the driver's
 *       entry point taken from libcuda's symbol table, as the runtime's private interface does),
 *       cuCtxSetCurrent(primary), allocate chunks until refused, cuDevicePrimaryCtxReset_v2,
 *       allocate again, cuDevicePrimaryCtxRelease_v2
 *   race <threads> <attempts>
 *       threads fill the slice and free it again in a loop while the main thread creates
 *       contexts; at the end the threads fill what is left and hold it
 *   preinit     driver calls before cuInit
 *   nvmlonly [index]   NVML memory info (of NVML device index) in a process that never uses
 *                      CUDA
 *   views       cuMemGetInfo_v2 and NVML memory info of device 0
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/cuda_abi.h"
#include "abi/nvml_abi.h"

#define MiB (1ULL << 20)

static void die(const char *what, int code)
{
    fprintf(stderr, "vgpu_ctx_probe: %s (%d)\n", what, code);
    exit(2);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ != 0)                                                                              \
            die(#call, rc_);                                                                       \
    } while (0)

/* ------------------------------------------------------------------ the driver's own symbols */

/* Address of `name` in libcuda.so.1 read from its .dynsym on disk: neither dlsym nor a preload
 * sees the lookup (like the runtime's private interface to the driver). */
static void *raw_symbol(const char *name)
{
    struct link_map *lm = NULL;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return NULL;
    int fd = open(lm->l_name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || (size_t)sb.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    const unsigned char *f = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return NULL;
    void *res = NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff > len ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff)
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !res; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset || st->sh_offset > len ||
            st->sh_size > len - st->sh_offset)
            continue;
        const Elf64_Sym *syms = (const Elf64_Sym *)(f + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < n; k++) {
            if (syms[k].st_name >= st->sh_size || syms[k].st_shndx == SHN_UNDEF)
                continue;
            const char *s = (const char *)(f + st->sh_offset + syms[k].st_name);
            if (strnlen(s, st->sh_size - syms[k].st_name) < st->sh_size - syms[k].st_name &&
                strcmp(s, name) == 0) {
                res = (void *)(lm->l_addr + syms[k].st_value);
                break;
            }
        }
    }
out:
    munmap((void *)f, len);
    return res;
}

#define CU_FNS                                                                                     \
    F(cuInit)                                                                                      \
    F(cuDeviceGet)                                                                                 \
    F(cuDeviceGetCount)                                                                            \
    F(cuCtxCreate_v2)                                                                              \
    F(cuCtxDestroy_v2)                                                                             \
    F(cuCtxSetCurrent)                                                                             \
    F(cuCtxGetCurrent)                                                                             \
    F(cuCtxPopCurrent_v2)                                                                          \
    F(cuDevicePrimaryCtxRetain)                                                                    \
    F(cuDevicePrimaryCtxRelease_v2)                                                                \
    F(cuDevicePrimaryCtxReset_v2)                                                                  \
    F(cuMemAlloc_v2)                                                                               \
    F(cuMemAllocPitch_v2)                                                                          \
    F(cuMemAllocManaged)                                                                           \
    F(cuArrayCreate_v2)                                                                            \
    F(cuMemFree_v2)                                                                                \
    F(cuMemGetInfo_v2)
#define NV_FNS                                                                                     \
    F(nvmlInit_v2)                                                                                 \
    F(nvmlDeviceGetHandleByIndex_v2)                                                               \
    F(nvmlDeviceGetMemoryInfo)                                                                     \
    F(nvmlDeviceGetMemoryInfo_v2)

/* ------------------------------------------------------------------ entry points */

/* Looked up with dlopen + dlsym (libvgpu answers its hooks), so that the `nvmlonly` mode can
 * show that libcuda is never loaded by an NVML-only process. */
static struct {
#define F(n) GS_CU_PFN(n) n;
    CU_FNS
#undef F
} cu;
static struct {
#define F(n) GS_NVML_PFN(n) n;
    NV_FNS
#undef F
} nv;

/* gpusim's own process list: libvgpu answers a slice's list from its books (hooks-nvml-procs.c),
 * so the driver's is taken past libvgpu's dlsym, with the C library's own. */
static GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses_v3) driver_list;

static void load(bool cuda)
{
    void *h = cuda ? dlopen("libcuda.so.1", RTLD_NOW) : NULL;
    if (cuda && !h)
        die("dlopen libcuda.so.1", 0);
    void *hn = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!hn)
        die("dlopen libnvidia-ml.so.1", 0);
#define F(n)                                                                                       \
    if (cuda && !(cu.n = (GS_CU_PFN(n))dlsym(h, #n)))                                              \
        die("dlsym " #n, 0);
    CU_FNS
#undef F
#define F(n)                                                                                       \
    if (!(nv.n = (GS_NVML_PFN(n))dlsym(hn, #n)))                                                   \
        die("dlsym " #n, 0);
    NV_FNS
#undef F
    void *(*libc_dlsym)(void *, const char *) =
        (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!libc_dlsym)
        libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!libc_dlsym ||
        !(driver_list = (GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses_v3))libc_dlsym(
              hn, "nvmlDeviceGetComputeRunningProcesses_v3")))
        die("dlsym nvmlDeviceGetComputeRunningProcesses_v3", 0);
}

/* ------------------------------------------------------------------ gpusim's books */

/* This process's usage of device 0 as the driver lists it. */
static unsigned long long phys(void)
{
    static bool init;
    if (!init) {
        CHECK(nv.nvmlInit_v2());
        init = true;
    }
    nvmlDevice_t h;
    CHECK(nv.nvmlDeviceGetHandleByIndex_v2(0, &h));
    nvmlProcessInfo_t infos[256];
    unsigned n = 256;
    CHECK(driver_list(h, &n, infos));
    for (unsigned i = 0; i < n; i++)
        if (infos[i].pid == (unsigned)getpid())
            return infos[i].usedGpuMemory;
    return 0;
}

static unsigned long long region_used(void)
{
    size_t free = 0, total = 0;
    if (cu.cuMemGetInfo_v2(&free, &total) != CUDA_SUCCESS)
        return ~0ULL;
    return total - free;
}

/* ------------------------------------------------------------------ modes */

static int lifetime(const char *how, size_t chunk)
{
    CHECK(cu.cuInit(0));
    CUdevice dev;
    CHECK(cu.cuDeviceGet(&dev, 0));
    CUcontext ctx = NULL;
    bool hidden = strcmp(how, "hidden") == 0;
    GS_CU_PFN(cuDevicePrimaryCtxRetain) raw_retain = raw_symbol("cuDevicePrimaryCtxRetain");
    if (hidden && !raw_retain)
        die("cuDevicePrimaryCtxRetain not in libcuda's symbol table", 0);
    if (strcmp(how, "destroy") == 0)
        CHECK(cu.cuCtxCreate_v2(&ctx, 0, dev));
    else if (hidden)
        CHECK(raw_retain(&ctx, dev));
    else
        CHECK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cu.cuCtxSetCurrent(ctx));
    CUdeviceptr p;
    int first = cu.cuMemAlloc_v2(&p, chunk);
    /* one of each other kind the context owns: pitch, managed, array (2 MiB each) */
    CUdeviceptr q;
    size_t pitch = 0;
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = 1024, .Height = 512, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    int kinds = cu.cuMemAllocPitch_v2(&q, &pitch, 4096, 512, 4) |
                cu.cuMemAllocManaged(&q, 2 * MiB, CU_MEM_ATTACH_GLOBAL) |
                cu.cuArrayCreate_v2(&arr, &ad);
    printf("first=%d kinds=%d phys_first=%llu used_first=%llu\n", first, kinds, phys(),
           region_used());
    if (strcmp(how, "destroy") == 0)
        CHECK(cu.cuCtxDestroy_v2(ctx));
    else if (strcmp(how, "release") == 0)
        CHECK(cu.cuDevicePrimaryCtxRelease_v2(dev));
    else
        CHECK(cu.cuDevicePrimaryCtxReset_v2(dev));
    printf("phys_gone=%llu\n", phys());
    if (strcmp(how, "destroy") == 0)
        CHECK(cu.cuCtxCreate_v2(&ctx, 0, dev));
    else if (hidden)
        CHECK(raw_retain(&ctx, dev));
    else
        CHECK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cu.cuCtxSetCurrent(ctx));
    int second = cu.cuMemAlloc_v2(&p, chunk);
    printf("second=%d phys_second=%llu used_second=%llu\n", second, phys(), region_used());
    return 0;
}

static int runtime(size_t chunk)
{
    CHECK(cu.cuInit(0));
    CUdevice dev;
    CHECK(cu.cuDeviceGet(&dev, 0));
    GS_CU_PFN(cuDevicePrimaryCtxRetain) raw_retain = raw_symbol("cuDevicePrimaryCtxRetain");
    if (!raw_retain)
        die("cuDevicePrimaryCtxRetain not in libcuda's symbol table", 0);
    CUcontext primary = NULL;
    CHECK(raw_retain(&primary, dev)); /* out of libvgpu's sight */
    CHECK(cu.cuCtxSetCurrent(primary));
    size_t free = 0, total = 0;
    CHECK(cu.cuMemGetInfo_v2(&free, &total));
    printf("start_total=%zu start_free=%zu phys_start=%llu\n", total, free, phys());
    for (int round = 0; round < 2; round++) {
        unsigned n = 0;
        CUdeviceptr p;
        int rc;
        while ((rc = cu.cuMemAlloc_v2(&p, chunk)) == CUDA_SUCCESS && n < 1000000)
            n++;
        CHECK(cu.cuMemGetInfo_v2(&free, &total));
        printf("round=%d allocated=%u refused=%d phys=%llu free=%zu total=%zu\n", round, n, rc,
               phys(), free, total);
        CHECK(cu.cuDevicePrimaryCtxReset_v2(dev));
        printf("round=%d phys_after_reset=%llu\n", round, phys());
        CHECK(raw_retain(&primary, dev));
        CHECK(cu.cuCtxSetCurrent(primary));
    }
    CHECK(cu.cuDevicePrimaryCtxRelease_v2(dev));
    printf("phys_after_release=%llu\n", phys());
    return 0;
}

static atomic_bool stop;
static CUcontext shared_ctx;

/* Allocate 2 blocks of 64 MiB, free them all, again; at the end fill what the limit still allows
 * and keep it (so the driver's usage shows whether the contexts were really charged). */
static void *churn(void *arg)
{
    (void)arg;
    CHECK(cu.cuCtxSetCurrent(shared_ctx));
    CUdeviceptr held[512];
    for (;;) {
        bool last = atomic_load(&stop);
        int n = 0, most = last ? 512 : 2; /* leave room for contexts while churning */
        while (n < most && cu.cuMemAlloc_v2(&held[n], 64 * MiB) == CUDA_SUCCESS)
            n++;
        if (last)
            return NULL;
        for (int i = 0; i < n; i++)
            cu.cuMemFree_v2(held[i]);
    }
}

static int race(int threads, int attempts)
{
    CHECK(cu.cuInit(0));
    CUdevice dev;
    CHECK(cu.cuDeviceGet(&dev, 0));
    CHECK(cu.cuCtxCreate_v2(&shared_ctx, 0, dev));
    pthread_t t[64];
    if (threads > 64)
        threads = 64;
    for (int i = 0; i < threads; i++)
        CHECK(pthread_create(&t[i], NULL, churn, NULL));
    int created = 0, refused = 0;
    for (int i = 0; i < attempts; i++) {
        CUcontext c;
        int rc = cu.cuCtxCreate_v2(&c, 0, dev);
        if (rc == CUDA_SUCCESS) {
            created++;
            CUcontext popped;
            cu.cuCtxPopCurrent_v2(&popped); /* keep it alive, not current */
        } else {
            refused++;
        }
    }
    atomic_store(&stop, true);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("created=%d refused=%d phys=%llu\n", created, refused, phys());
    return 0;
}

static int preinit(void)
{
    CUdeviceptr p;
    size_t free = 0, total = 0;
    CUcontext c = NULL;
    int count = -1;
    printf("alloc=%d getinfo=%d getcurrent=%d setcurrent=%d count=%d\n", cu.cuMemAlloc_v2(&p, MiB),
           cu.cuMemGetInfo_v2(&free, &total), cu.cuCtxGetCurrent(&c), cu.cuCtxSetCurrent(NULL),
           cu.cuDeviceGetCount(&count));
    printf("init=%d\n", cu.cuInit(0));
    return 0;
}

static int nvmlonly(unsigned index)
{
    /* libcuda must stay unloaded: look the entry points up only in NVML */
    CHECK(nv.nvmlInit_v2());
    nvmlDevice_t h;
    CHECK(nv.nvmlDeviceGetHandleByIndex_v2(index, &h));
    nvmlMemory_t m;
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    CHECK(nv.nvmlDeviceGetMemoryInfo(h, &m));
    CHECK(nv.nvmlDeviceGetMemoryInfo_v2(h, &m2));
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    printf("nvml_total=%llu nvml_used=%llu nvml_free=%llu nvml2_total=%llu nvml2_free=%llu "
           "libcuda_loaded=%d\n",
           m.total, m.used, m.free, m2.total, m2.free, cuda != NULL);
    return 0;
}

static int views(void)
{
    CHECK(cu.cuInit(0));
    CUdevice dev;
    CHECK(cu.cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cu.cuCtxSetCurrent(ctx));
    size_t free = 0, total = 0;
    CHECK(cu.cuMemGetInfo_v2(&free, &total));
    CHECK(nv.nvmlInit_v2());
    nvmlDevice_t h;
    CHECK(nv.nvmlDeviceGetHandleByIndex_v2(0, &h));
    nvmlMemory_t m;
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    CHECK(nv.nvmlDeviceGetMemoryInfo(h, &m));
    CHECK(nv.nvmlDeviceGetMemoryInfo_v2(h, &m2));
    printf("cu_total=%zu cu_free=%zu nvml_total=%llu nvml_used=%llu nvml_free=%llu "
           "nvml2_total=%llu nvml2_used=%llu nvml2_free=%llu\n",
           total, free, m.total, m.used, m.free, m2.total, m2.used, m2.free);
    /* what can really be allocated: 1 MiB at a time */
    unsigned n = 0;
    CUdeviceptr p;
    while (n < 100000 && cu.cuMemAlloc_v2(&p, MiB) == CUDA_SUCCESS)
        n++;
    printf("allocatable_mib=%u\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    load(argc < 2 || strcmp(argv[1], "nvmlonly") != 0);
    if (argc == 4 && strcmp(argv[1], "lifetime") == 0)
        return lifetime(argv[2], (size_t)strtoull(argv[3], NULL, 10) * MiB);
    if (argc == 3 && strcmp(argv[1], "runtime") == 0)
        return runtime((size_t)strtoull(argv[2], NULL, 10) * MiB);
    if (argc == 4 && strcmp(argv[1], "race") == 0)
        return race(atoi(argv[2]), atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "preinit") == 0)
        return preinit();
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "nvmlonly") == 0)
        return nvmlonly(argc == 3 ? (unsigned)atoi(argv[2]) : 0);
    if (argc == 2 && strcmp(argv[1], "views") == 0)
        return views();
    fprintf(stderr, "usage: vgpu_ctx_probe lifetime|runtime|race|preinit|nvmlonly|views ...\n");
    return 2;
}
