/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim memory: every allocation API, OOM at exactly the physical capacity, invalid and
 * double frees, pools with their reserve, VMM, arrays. One process, preset t4 (15 GiB). */
#include <pthread.h>
#include <stdint.h>

#include "simtest.h"
#include "tap.h"

#define T4_BYTES (15ull * GiB)

static unsigned long long used_now(void)
{
    size_t fr = 0, tot = 0;
    p_cuMemGetInfo_v2(&fr, &tot);
    return tot - fr;
}

static void test_plain_boundary(void)
{
    size_t fr, tot;
    is_int(p_cuMemGetInfo_v2(&fr, &tot), CUDA_SUCCESS, "cuMemGetInfo_v2");
    is_uint(tot, T4_BYTES, "total is 15 GiB (16106127360 bytes)");
    is_uint(fr, T4_BYTES, "nothing used at start");

    /* 15360 allocations of 1 MiB fit exactly; the next one is CUDA_ERROR_OUT_OF_MEMORY. */
    static CUdeviceptr p[15360];
    int okc = 0;
    for (int i = 0; i < 15360; i++)
        okc += p_cuMemAlloc_v2(&p[i], MiB) == CUDA_SUCCESS;
    is_int(okc, 15360, "15360 x 1 MiB succeed");
    CUdeviceptr extra = 0;
    is_int(p_cuMemAlloc_v2(&extra, MiB), CUDA_ERROR_OUT_OF_MEMORY, "allocation 15361 is OOM");
    is_int(p_cuMemAlloc_v2(&extra, 1), CUDA_ERROR_OUT_OF_MEMORY, "even 1 byte is OOM when full");
    p_cuMemGetInfo_v2(&fr, &tot);
    is_uint(fr, 0, "free is 0 when full");
    is_int(p_cuMemFree_v2(p[77]), CUDA_SUCCESS, "free one");
    is_int(p_cuMemAlloc_v2(&p[77], MiB), CUDA_SUCCESS, "then 1 MiB fits again");
    int freed = 0;
    for (int i = 0; i < 15360; i++)
        freed += p_cuMemFree_v2(p[i]) == CUDA_SUCCESS;
    is_int(freed, 15360, "all freed");
    is_uint(used_now(), 0, "used back to 0");

    CUdeviceptr big;
    is_int(p_cuMemAlloc_v2(&big, T4_BYTES), CUDA_SUCCESS, "one 15 GiB allocation fits");
    is_int(p_cuMemAlloc_v2(&extra, 1), CUDA_ERROR_OUT_OF_MEMORY, "and nothing else");
    p_cuMemFree_v2(big);
    is_int(p_cuMemAlloc_v2(&big, T4_BYTES + 1), CUDA_ERROR_OUT_OF_MEMORY, "15 GiB + 1 byte is OOM");
    is_int(p_cuMemAlloc_v2(&big, 0), CUDA_ERROR_INVALID_VALUE, "0 bytes is INVALID_VALUE");
    is_int(p_cuMemAlloc_v2(NULL, 16), CUDA_ERROR_INVALID_VALUE, "NULL dptr is INVALID_VALUE");
}

static void test_frees(void)
{
    CUdeviceptr a, b;
    p_cuMemAlloc_v2(&a, 4096);
    p_cuMemAlloc_v2(&b, 4096);
    ok(a != b && a != 0 && b != 0, "distinct non-null device pointers");
    is_int(p_cuMemFree_v2(a), CUDA_SUCCESS, "free");
    is_int(p_cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE, "double free is INVALID_VALUE");
    is_int(p_cuMemFree_v2(b + 8), CUDA_ERROR_INVALID_VALUE, "interior pointer free is refused");
    is_int(p_cuMemFree_v2(0xdeadbeef000ull), CUDA_ERROR_INVALID_VALUE, "unknown pointer");
    CUdeviceptr base = 0;
    size_t size = 0;
    is_int(p_cuMemGetAddressRange_v2(&base, &size, b + 100), CUDA_SUCCESS, "address range");
    ok(base == b && size == 4096, "range of an interior pointer is the allocation");
    is_int(p_cuMemFree_v2(b), CUDA_SUCCESS, "free b");
    is_uint(used_now(), 0, "nothing left");
}

static void test_pitch_managed(void)
{
    CUdeviceptr p;
    size_t pitch = 0;
    is_int(p_cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4), CUDA_SUCCESS, "cuMemAllocPitch_v2");
    is_uint(pitch, 1024, "pitch rounds 1000 up to 1024");
    is_uint(used_now(), 10240, "charged pitch x height");
    p_cuMemFree_v2(p);
    is_int(p_cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE,
           "element size 3 refused");
    is_int(p_cuMemAllocManaged(&p, 5 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS, "managed");
    is_uint(used_now(), 5 * MiB, "managed memory is charged to the device");
    is_int(p_cuMemFree_v2(p), CUDA_SUCCESS, "free managed");
    is_int(p_cuMemAllocManaged(&p, MiB, 0), CUDA_ERROR_INVALID_VALUE, "managed flags 0 refused");
}

static unsigned long long pool_attr(CUmemoryPool pool, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    p_cuMemPoolGetAttribute(pool, a, &v);
    return v;
}

static void test_pools(void)
{
    CUmemoryPool pool;
    is_int(p_cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS, "default pool");
    CUdeviceptr p;
    is_int(p_cuMemAllocAsync(&p, MiB, NULL), CUDA_SUCCESS, "cuMemAllocAsync 1 MiB");
    is_uint(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * MiB,
            "pool reserves a 2 MiB granule");
    is_uint(pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), MiB, "pool used 1 MiB");
    is_uint(used_now(), 2 * MiB, "the device sees the reserve");
    is_int(p_cuMemFreeAsync(p, NULL), CUDA_SUCCESS, "cuMemFreeAsync");
    is_uint(used_now(), 2 * MiB, "reserve kept until synchronisation");
    p_cuStreamSynchronize(NULL);
    is_uint(used_now(), 0, "released at sync (threshold 0)");
    is_uint(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 2 * MiB, "reserved high mark");

    cuuint64_t thr = 64 * MiB;
    is_int(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr), CUDA_SUCCESS,
           "set release threshold");
    CUdeviceptr q[5];
    for (int i = 0; i < 5; i++)
        p_cuMemAllocAsync(&q[i], 3 * MiB, NULL);
    is_uint(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 16 * MiB,
            "15 MiB used -> 16 MiB reserved");
    for (int i = 0; i < 5; i++)
        p_cuMemFreeAsync(q[i], NULL);
    p_cuCtxSynchronize();
    is_uint(used_now(), 16 * MiB, "below the threshold the reserve stays after sync");
    is_int(p_cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS, "cuMemPoolTrimTo(0)");
    is_uint(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0, "trimmed to 0");
    is_uint(used_now(), 0, "device sees the trim");
    cuuint64_t zero = 0;
    p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero);
    is_int(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS,
           "reset high mark");
    is_uint(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 0, "high mark restarts at 0");
    is_int(p_cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE, "default pool cannot be destroyed");

    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool mine;
    is_int(p_cuMemPoolCreate(&mine, &props), CUDA_SUCCESS, "cuMemPoolCreate");
    is_int(p_cuMemAllocFromPoolAsync(&p, 5 * MiB, mine, NULL), CUDA_SUCCESS,
           "cuMemAllocFromPoolAsync");
    is_uint(used_now(), 6 * MiB, "own pool reserves 6 MiB for 5 MiB");
    is_int(p_cuMemFree_v2(p), CUDA_SUCCESS, "cuMemFree works on pool memory");
    is_int(p_cuMemPoolDestroy(mine), CUDA_SUCCESS, "cuMemPoolDestroy");
    is_uint(used_now(), 0, "destroying the pool releases its reserve");
    is_int(p_cuMemAllocFromPoolAsync(&p, MiB, mine, NULL), CUDA_ERROR_INVALID_VALUE,
           "a destroyed pool is refused");
    props.location.id = 7;
    is_int(p_cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_DEVICE, "pool on a bad device");

    /* OOM through a pool at the physical boundary. */
    CUdeviceptr all;
    is_int(p_cuMemAllocAsync(&all, T4_BYTES, NULL), CUDA_SUCCESS, "15 GiB from the pool");
    is_int(p_cuMemAllocAsync(&p, 1, NULL), CUDA_ERROR_OUT_OF_MEMORY, "pool OOM past it");
    p_cuMemFreeAsync(all, NULL);
    p_cuStreamSynchronize(NULL);
    is_uint(used_now(), 0, "and back");
}

static void test_vmm(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    is_int(p_cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
           CUDA_SUCCESS, "granularity");
    is_uint(gran, 2 * MiB, "granularity is 2 MiB");
    CUmemGenericAllocationHandle h;
    is_int(p_cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE,
           "size not a multiple of the granularity");
    is_int(p_cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS, "cuMemCreate 4 MiB");
    is_uint(used_now(), 4 * MiB, "physical memory charged at create");
    CUdeviceptr va;
    is_int(p_cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS, "reserve 8 MiB");
    is_uint(used_now(), 4 * MiB, "reserving address space charges nothing");
    is_int(p_cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS, "cuMemMap");
    is_int(p_cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_ERROR_ALREADY_MAPPED, "map twice");
    CUmemAccessDesc acc = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0},
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    is_int(p_cuMemSetAccess(va, 4 * MiB, &acc, 1), CUDA_SUCCESS, "cuMemSetAccess");
    is_int(p_cuMemRelease(h), CUDA_SUCCESS, "cuMemRelease while mapped");
    is_uint(used_now(), 4 * MiB, "still charged while mapped");
    is_int(p_cuMemRelease(h), CUDA_ERROR_INVALID_VALUE, "double release");
    is_int(p_cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS, "cuMemUnmap");
    is_uint(used_now(), 0, "unmapping the released handle frees it");
    is_int(p_cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS, "cuMemAddressFree");
    is_int(p_cuMemCreate(&h, 16 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY, "VMM OOM");
}

static void test_arrays(void)
{
    CUDA_ARRAY_DESCRIPTOR d2 = {
        .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUarray a;
    is_int(p_cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS, "cuArrayCreate_v2");
    is_uint(used_now(), 16 * MiB, "1024x1024 float4 = 16 MiB");
    is_int(p_cuArrayDestroy(a), CUDA_SUCCESS, "cuArrayDestroy");
    is_int(p_cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE, "destroy twice");
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 64,
                                  .Height = 64,
                                  .Depth = 64,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                  .NumChannels = 1};
    is_int(p_cuArray3DCreate_v2(&a, &d3), CUDA_SUCCESS, "cuArray3DCreate_v2");
    is_uint(used_now(), 262144, "64^3 bytes");
    p_cuArrayDestroy(a);
    CUDA_ARRAY3D_DESCRIPTOR dm = {
        .Width = 256, .Height = 256, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUmipmappedArray m;
    is_int(p_cuMipmappedArrayCreate(&m, &dm, 9), CUDA_SUCCESS, "cuMipmappedArrayCreate");
    is_uint(used_now(), 4ull * (65536 + 16384 + 4096 + 1024 + 256 + 64 + 16 + 4 + 1),
            "sum of the 9 levels");
    is_int(p_cuMipmappedArrayDestroy(m), CUDA_SUCCESS, "cuMipmappedArrayDestroy");
    is_uint(used_now(), 0, "arrays give memory back");
    d2.NumChannels = 3;
    is_int(p_cuArrayCreate_v2(&a, &d2), CUDA_ERROR_INVALID_VALUE, "3 channels refused");
}

static CUcontext shared_ctx;

static void *thread_main(void *arg)
{
    long fails = 0;
    CUdeviceptr p[64];
    p_cuCtxSetCurrent(shared_ctx);
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 64; i++)
            fails += p_cuMemAlloc_v2(&p[i], (size_t)(i + 1) * 4096) != CUDA_SUCCESS;
        for (int i = 0; i < 64; i++)
            fails += p_cuMemFree_v2(p[i]) != CUDA_SUCCESS;
        CUdeviceptr a;
        fails += p_cuMemAllocAsync(&a, 3 * MiB, NULL) != CUDA_SUCCESS;
        fails += p_cuMemFreeAsync(a, NULL) != CUDA_SUCCESS;
    }
    (void)arg;
    return (void *)fails;
}

static void test_threads(CUcontext ctx)
{
    pthread_t th[4];
    shared_ctx = ctx;
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, NULL);
    long fails = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        fails += (long)r;
    }
    is_int(fails, 0, "4 threads x 200 rounds of alloc/free (plain and async): no failure");
    p_cuCtxSynchronize();
    is_uint(used_now(), 0, "and nothing left charged");
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    unsetenv("GPUSIM_CONFIG");
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("GPUSIM_CONTEXT_OVERHEAD");
    simtest_load_cuda();

    CUdeviceptr p;
    is_int(p_cuMemAlloc_v2(&p, 16), CUDA_ERROR_NOT_INITIALIZED, "before cuInit");
    is_int(p_cuInit(0), CUDA_SUCCESS, "cuInit");
    is_int(p_cuMemAlloc_v2(&p, 16), CUDA_ERROR_INVALID_CONTEXT, "no current context");
    CUcontext ctx;
    is_int(p_cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS, "retain primary context");
    is_int(p_cuCtxSetCurrent(ctx), CUDA_SUCCESS, "make it current");

    test_plain_boundary();
    test_frees();
    test_pitch_managed();
    test_pools();
    test_vmm();
    test_arrays();
    test_threads(ctx);

    is_int(p_cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS, "release primary context");
    simtest_cleanup();
    return tap_done();
}
