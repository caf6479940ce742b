/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver's release semantics and the allocators added for issue 12, judged by gpusim's
 * physical usage (NVML): VMM memory stays until every handle is released and the last mapping
 * unmapped; a pool destroyed with live allocations returns at once and frees its memory when they
 * are freed; graph memory is allocated at launch and kept until cuDeviceGraphMemTrim; the v1
 * entry points (32-bit ABI); host memory is not device memory; cuMemcpy with unified addressing.
 */
#include "simtest.h"
#include "tap.h"

#define FN(n) static GS_CU_PFN(n) n##_p;
#define SIM_EXTRA(X)                                                                               \
    X(cuMemRetainAllocationHandle)                                                                 \
    X(cuGraphAddMemAllocNode)                                                                      \
    X(cuGraphAddMemFreeNode)                                                                       \
    X(cuDeviceGraphMemTrim)                                                                        \
    X(cuDeviceGetGraphMemAttribute)                                                                \
    X(cuDeviceSetGraphMemAttribute)                                                                \
    X(cuGraphInstantiate)                                                                          \
    X(cuMemAlloc)                                                                                  \
    X(cuMemAllocPitch)                                                                             \
    X(cuMemFree)                                                                                   \
    X(cuMemGetInfo)                                                                                \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemAllocHost_v2)                                                                           \
    X(cuMemFreeHost)                                                                               \
    X(cuMemHostRegister_v2)                                                                        \
    X(cuMemHostUnregister)                                                                         \
    X(cuMemHostGetDevicePointer_v2)                                                                \
    X(cuMemcpy)                                                                                    \
    X(cuMemcpyAsync)
SIM_EXTRA(FN)
#undef FN

static nvmlDevice_t dev0;
static void *host_of_ctx; /* cuMemAllocHost memory left for cuCtxDestroy to free */

static unsigned long long used(void)
{
    nvmlMemory_t m;
    p_nvmlDeviceGetMemoryInfo(dev0, &m);
    return m.used;
}

static CUmemAllocationProp vmm_prop(void)
{
    CUmemAllocationProp p = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    return p;
}

static void test_vmm(void)
{
    CUmemAllocationProp prop = vmm_prop();
    CUmemGenericAllocationHandle h, h2;
    CUdeviceptr va;
    p_cuMemCreate(&h, 8 * MiB, &prop, 0);
    p_cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0);
    is_int(p_cuMemMap(va, 8 * MiB, 0, h, 0), CUDA_SUCCESS, "map the handle at va");
    is_int(p_cuMemMap(va + 8 * MiB, 8 * MiB, 0, h, 0), CUDA_SUCCESS, "and again at va+8 MiB");
    is_int(p_cuMemRelease(h), CUDA_SUCCESS, "release while mapped twice");
    is_uint(used(), 8 * MiB, "the 8 MiB stay while mapped");
    is_int(p_cuMemMap(va, 8 * MiB, 0, h, 0), CUDA_ERROR_INVALID_HANDLE,
           "a released handle cannot be mapped again");
    is_int(p_cuMemUnmap(va, 8 * MiB), CUDA_SUCCESS, "unmap the first mapping");
    is_uint(used(), 8 * MiB, "still held by the second mapping");
    is_int(cuMemRetainAllocationHandle_p(&h2, (void *)(uintptr_t)(va + 8 * MiB + 4096)),
           CUDA_SUCCESS, "cuMemRetainAllocationHandle from an address inside the mapping");
    ok(h2 == h, "gives the same handle");
    is_int(p_cuMemUnmap(va + 8 * MiB, 8 * MiB), CUDA_SUCCESS, "unmap the last mapping");
    is_uint(used(), 8 * MiB, "the retained handle keeps the memory");
    is_int(p_cuMemRelease(h2), CUDA_SUCCESS, "release the retained handle");
    is_uint(used(), 0, "freed at the last release after the last unmap");
    is_int(p_cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE, "one release too many");
    is_int(cuMemRetainAllocationHandle_p(&h2, (void *)(uintptr_t)va), CUDA_ERROR_INVALID_VALUE,
           "retain at an unmapped address");

    /* The attack of issue 12 item 1 as the driver sees it: create, map, release in a loop. */
    CUdeviceptr big;
    p_cuMemAddressReserve(&big, 64 * MiB, 0, 0, 0);
    for (int i = 0; i < 8; i++) {
        p_cuMemCreate(&h, 8 * MiB, &prop, 0);
        p_cuMemMap(big + (uint64_t)i * 8 * MiB, 8 * MiB, 0, h, 0);
        p_cuMemRelease(h);
    }
    is_uint(used(), 64 * MiB, "8 x (create, map, release): 64 MiB physically held");
    is_int(p_cuMemUnmap(big, 64 * MiB), CUDA_SUCCESS, "one unmap over all 8 mappings");
    is_uint(used(), 0, "frees all of them");
    p_cuMemAddressFree(big, 64 * MiB);
    p_cuMemAddressFree(va, 16 * MiB);
}

static void test_pool_destroy(void)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool;
    CUdeviceptr a, b;
    p_cuMemPoolCreate(&pool, &props);
    p_cuMemAllocFromPoolAsync(&a, 10 * MiB, pool, NULL);
    p_cuMemAllocFromPoolAsync(&b, 20 * MiB, pool, NULL);
    is_uint(used(), 30 * MiB, "pool holds 30 MiB");
    is_int(p_cuMemPoolDestroy(pool), CUDA_SUCCESS,
           "cuMemPoolDestroy with live allocations returns at once");
    is_uint(used(), 30 * MiB, "the memory stays while allocations are outstanding");
    is_int(p_cuMemFreeAsync(a, NULL), CUDA_SUCCESS, "free one");
    p_cuStreamSynchronize(NULL);
    is_uint(used(), 20 * MiB, "its granules go back");
    is_int(p_cuMemFree_v2(b), CUDA_SUCCESS, "free the last");
    is_uint(used(), 0, "the destroyed pool's memory is gone with the last allocation");
}

static CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    return p;
}

static cuuint64_t graph_attr(CUgraphMem_attribute a)
{
    cuuint64_t v = 0;
    cuDeviceGetGraphMemAttribute_p(0, a, &v);
    return v;
}

static void test_graph_memory(void)
{
    CUgraph g;
    CUgraphNode na, nf, nb;
    p_cuGraphCreate(&g, 0);
    CUDA_MEM_ALLOC_NODE_PARAMS pa = alloc_params(10 * MiB), pb = alloc_params(30 * MiB);
    is_int(cuGraphAddMemAllocNode_p(&na, g, NULL, 0, &pa), CUDA_SUCCESS,
           "cuGraphAddMemAllocNode 10 MiB");
    ok(pa.dptr != 0, "the address is known at node creation");
    is_int(cuGraphAddMemAllocNode_p(&nb, g, &na, 1, &pb), CUDA_SUCCESS, "and 30 MiB");
    is_int(cuGraphAddMemFreeNode_p(&nf, g, &nb, 1, pa.dptr), CUDA_SUCCESS,
           "a free node for the 10 MiB");
    is_int(cuGraphAddMemFreeNode_p(&nf, g, &nb, 1, pa.dptr), CUDA_ERROR_INVALID_VALUE,
           "freeing it twice in one graph is refused");
    is_int(cuGraphAddMemFreeNode_p(&nf, g, NULL, 0, 12345), CUDA_ERROR_INVALID_VALUE,
           "freeing an address no allocation node returned is refused");
    is_uint(used(), 0, "nothing allocated before launch");
    CUgraphExec x;
    is_int(cuGraphInstantiate_p(&x, g, NULL, NULL, 0), CUDA_SUCCESS, "instantiate");
    is_uint(used(), 0, "nothing allocated at instantiation");
    is_int(p_cuGraphLaunch(x, NULL), CUDA_SUCCESS, "launch");
    is_uint(used(), 40 * MiB, "launch reserves graph memory for both (40 MiB)");
    is_uint(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 30 * MiB,
            "graph memory in use: the 30 MiB not freed in the graph");
    is_uint(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 40 * MiB, "reserved 40 MiB");
    is_int(p_cuGraphLaunch(x, NULL), CUDA_ERROR_INVALID_VALUE,
           "relaunch before its allocation is freed is refused");
    is_uint(used(), 40 * MiB, "and allocates nothing");
    is_int(p_cuMemFreeAsync(pb.dptr, NULL), CUDA_SUCCESS, "free the graph allocation");
    p_cuStreamSynchronize(NULL);
    is_uint(used(), 40 * MiB, "freed graph memory stays reserved for graphs");
    is_int(cuDeviceGraphMemTrim_p(0), CUDA_SUCCESS, "cuDeviceGraphMemTrim");
    is_uint(used(), 0, "trim gives it back to the device");
    is_int(p_cuGraphLaunch(x, NULL), CUDA_SUCCESS, "relaunch after the free");
    is_uint(used(), 40 * MiB, "allocates again at launch");
    is_uint(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 40 * MiB, "high mark");
    cuuint64_t zero = 0;
    is_int(cuDeviceSetGraphMemAttribute_p(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &zero),
           CUDA_ERROR_INVALID_VALUE, "the current values cannot be set");
    p_cuMemFree_v2(pb.dptr);
    cuDeviceGraphMemTrim_p(0);
    is_uint(used(), 0, "cuMemFree + trim: all back");
    is_int(cuDeviceSetGraphMemAttribute_p(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero),
           CUDA_SUCCESS, "reset the high mark");
    is_uint(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 0, "restarts from the current 0");

    /* Graph memory is physical memory: the device's capacity bounds it. */
    CUgraph gbig;
    p_cuGraphCreate(&gbig, 0);
    CUDA_MEM_ALLOC_NODE_PARAMS px = alloc_params(16 * GiB);
    cuGraphAddMemAllocNode_p(&na, gbig, NULL, 0, &px);
    CUgraphExec xbig;
    cuGraphInstantiate_p(&xbig, gbig, NULL, NULL, 0);
    is_int(p_cuGraphLaunch(xbig, NULL), CUDA_ERROR_OUT_OF_MEMORY, "16 GiB graph: OOM at launch");
    is_uint(used(), 0, "nothing left allocated");
    p_cuGraphExecDestroy(xbig);
    p_cuGraphDestroy(gbig);
    p_cuGraphExecDestroy(x);
    p_cuGraphDestroy(g);
}

static void test_v1(void)
{
    CUdeviceptr_v1 p = 0;
    is_int(cuMemAlloc_p(&p, 64 * MiB), CUDA_SUCCESS, "cuMemAlloc (v1) 64 MiB");
    ok(p != 0, "a 32-bit device pointer (0x%x)", p);
    is_uint(used(), 64 * MiB, "charged like cuMemAlloc_v2");
    unsigned int fr = 0, tot = 0;
    is_int(cuMemGetInfo_p(&fr, &tot), CUDA_SUCCESS, "cuMemGetInfo (v1)");
    is_uint(tot, 0xffffffffu, "15 GiB total saturates the 32-bit ABI");
    CUdeviceptr_v1 q = 0;
    unsigned int pitch = 0;
    is_int(cuMemAllocPitch_p(&q, &pitch, 1000, 100, 4), CUDA_SUCCESS, "cuMemAllocPitch (v1)");
    is_uint(pitch, 1024, "pitch 1024");
    is_uint(used(), 64 * MiB + 1024 * 100, "pitch x height charged");
    is_int(cuMemFree_p(q), CUDA_SUCCESS, "cuMemFree (v1)");
    is_int(p_cuMemFree_v2(p), CUDA_SUCCESS, "cuMemFree_v2 frees a v1 pointer too");
    is_uint(used(), 0, "all back");
    is_int(cuMemFree_p(p), CUDA_ERROR_INVALID_VALUE, "double free");
    is_int(cuMemAlloc_p(&p, 0), CUDA_ERROR_INVALID_VALUE, "zero bytes");
}

static void test_host_and_copies(void)
{
    void *h = NULL;
    is_int(cuMemHostAlloc_p(&h, 64 * MiB, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
           CUDA_SUCCESS, "cuMemHostAlloc 64 MiB");
    memset(h, 0x5a, 64 * MiB); /* usable host memory */
    is_uint(used(), 0, "host memory is not device memory");
    is_int(cuMemHostAlloc_p(&h, 1, 0x80), CUDA_ERROR_INVALID_VALUE, "unknown flag refused");
    void *h2 = NULL;
    is_int(cuMemAllocHost_v2_p(&h2, 4096), CUDA_SUCCESS, "cuMemAllocHost_v2");
    CUdeviceptr hd = 0;
    is_int(cuMemHostGetDevicePointer_v2_p(&hd, h2, 0), CUDA_SUCCESS,
           "cuMemHostGetDevicePointer_v2");
    ok(hd == (CUdeviceptr)(uintptr_t)h2, "unified addressing: the same address");
    static char buf[1 << 16];
    is_int(cuMemHostRegister_v2_p(buf, sizeof(buf), CU_MEMHOSTREGISTER_PORTABLE), CUDA_SUCCESS,
           "cuMemHostRegister_v2");
    is_int(cuMemHostRegister_v2_p(buf + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
           "an overlapping registration is refused");
    is_uint(used(), 0, "registration charges nothing");

    /* cuMemcpy: device <- host <- device, and host <- host. */
    CUdeviceptr d;
    p_cuMemAlloc_v2(&d, 4096);
    char src[4096], dst[4096];
    memset(src, 7, sizeof(src));
    memset(dst, 1, sizeof(dst));
    is_int(cuMemcpy_p(d, (CUdeviceptr)(uintptr_t)src, 4096), CUDA_SUCCESS, "cuMemcpy host->device");
    is_int(cuMemcpy_p((CUdeviceptr)(uintptr_t)dst, d, 4096), CUDA_SUCCESS, "cuMemcpy device->host");
    ok(dst[0] == 7 && dst[4095] == 7, "device memory holds what cuMemcpy wrote");
    memset(src, 9, sizeof(src));
    is_int(cuMemcpyAsync_p((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, 4096, NULL),
           CUDA_SUCCESS, "cuMemcpyAsync host->host");
    ok(dst[0] == 9 && dst[4095] == 9, "host to host copies the bytes");
    is_int(cuMemcpy_p(d, (CUdeviceptr)(uintptr_t)src, 8192), CUDA_ERROR_INVALID_VALUE,
           "past the end of the allocation");
    is_int(cuMemcpy_p(d + (1ull << 40), (CUdeviceptr)(uintptr_t)src, 16), CUDA_ERROR_INVALID_VALUE,
           "an unallocated device address");
    p_cuMemFree_v2(d);

    is_int(cuMemHostUnregister_p(buf), CUDA_SUCCESS, "cuMemHostUnregister");
    is_int(cuMemHostUnregister_p(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "twice");
    is_int(cuMemFreeHost_p(h), CUDA_SUCCESS, "cuMemFreeHost");
    is_int(cuMemFreeHost_p(h), CUDA_ERROR_INVALID_VALUE, "twice");
    is_int(cuMemFreeHost_p(buf), CUDA_ERROR_INVALID_VALUE, "memory it did not allocate");
    host_of_ctx = h2; /* left to the context's destruction */
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("GPUSIM_CONTEXT_OVERHEAD");
    simtest_load_cuda();
    simtest_load_nvml();
#define LOAD(n) n##_p = (GS_CU_PFN(n))simtest_sym(simtest_cuda_handle, #n);
    SIM_EXTRA(LOAD)
#undef LOAD
    p_cuInit(0);
    p_nvmlInit_v2();
    p_nvmlDeviceGetHandleByIndex_v2(0, &dev0);
    CUcontext ctx;
    p_cuCtxCreate_v2(&ctx, 0, 0);
    test_vmm();
    test_pool_destroy();
    test_graph_memory();
    test_v1();
    test_host_and_copies();
    p_cuCtxDestroy_v2(ctx);
    is_int(cuMemFreeHost_p(host_of_ctx), CUDA_ERROR_INVALID_VALUE,
           "cuCtxDestroy freed the context's cuMemAllocHost memory");
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
