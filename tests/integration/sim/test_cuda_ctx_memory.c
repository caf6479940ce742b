/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contexts own their memory, like the driver: cuCtxDestroy, cuDevicePrimaryCtxReset_v2 and the
 * last cuDevicePrimaryCtxRelease_v2 free the context's cuMemAlloc / pitch / managed allocations,
 * arrays, modules and streams -- gpusim's physical usage (NVML) shows it -- while memory that
 * belongs to no context (cuMemCreate, cuMemAllocAsync / pools) stays until freed explicitly, as
 * the driver API documents for cuCtxDestroy.
 */
#include <pthread.h>

#include "simtest.h"
#include "tap.h"

static GS_CU_PFN(cuDevicePrimaryCtxReset_v2) p_reset;
static nvmlDevice_t dev0;

static unsigned long long used(void)
{
    nvmlMemory_t m;
    p_nvmlDeviceGetMemoryInfo(dev0, &m);
    return m.used;
}

static void created_context(void)
{
    CUcontext a, b;
    is_int(p_cuCtxCreate_v2(&a, 0, 0), CUDA_SUCCESS, "create context A");
    CUdeviceptr plain, pitch, managed, async;
    size_t pitch_bytes;
    is_int(p_cuMemAlloc_v2(&plain, 100 * MiB), CUDA_SUCCESS, "A: cuMemAlloc 100 MiB");
    is_int(p_cuMemAllocPitch_v2(&pitch, &pitch_bytes, 1024 * 1024, 10, 4), CUDA_SUCCESS,
           "A: cuMemAllocPitch 10 MiB");
    is_int(p_cuMemAllocManaged(&managed, 20 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS,
           "A: cuMemAllocManaged 20 MiB");
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1}; /* 4 MiB */
    CUarray arr;
    is_int(p_cuArrayCreate_v2(&arr, &ad), CUDA_SUCCESS, "A: 4 MiB array");
    is_int(p_cuMemAllocAsync(&async, 8 * MiB, NULL), CUDA_SUCCESS, "A: cuMemAllocAsync 8 MiB");
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle vmm;
    is_int(p_cuMemCreate(&vmm, 2 * MiB, &prop, 0), CUDA_SUCCESS, "A: cuMemCreate 2 MiB");
    CUstream s;
    p_cuStreamCreate(&s, 0);
    is_uint(used(), 144 * MiB, "NVML: 100 + 10 + 20 + 4 + 8 + 2 MiB in use");

    is_int(p_cuCtxDestroy_v2(a), CUDA_SUCCESS, "cuCtxDestroy(A)");
    is_uint(used(), 10 * MiB,
            "after cuCtxDestroy only the pool (8 MiB) and the VMM handle (2 MiB) remain");
    is_int(p_cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE, "A's stream went with it");
    is_int(p_cuArrayDestroy(arr), CUDA_ERROR_INVALID_HANDLE, "A's array went with it");

    is_int(p_cuCtxCreate_v2(&b, 0, 0), CUDA_SUCCESS, "create context B");
    is_int(p_cuMemFree_v2(plain), CUDA_ERROR_INVALID_VALUE, "A's cuMemAlloc pointer is gone");
    is_int(p_cuMemFree_v2(managed), CUDA_ERROR_INVALID_VALUE, "A's managed pointer is gone");
    is_int(p_cuMemFreeAsync(async, NULL), CUDA_SUCCESS,
           "the pool allocation made under A is still valid (belongs to no context)");
    p_cuCtxSynchronize();
    is_int(p_cuMemRelease(vmm), CUDA_SUCCESS, "the VMM handle made under A is still valid");
    is_uint(used(), 0, "everything given back");

    /* Destroying another context leaves B's memory alone. */
    CUcontext c;
    CUdeviceptr keep;
    p_cuMemAlloc_v2(&keep, 30 * MiB);
    p_cuCtxCreate_v2(&c, 0, 0);
    CUdeviceptr gone;
    p_cuMemAlloc_v2(&gone, 5 * MiB);
    p_cuCtxDestroy_v2(c);
    is_uint(used(), 30 * MiB, "destroying C frees C's 5 MiB, not B's 30 MiB");
    is_int(p_cuMemFree_v2(keep), CUDA_SUCCESS, "B's pointer is still valid");
    p_cuCtxDestroy_v2(b);
}

static void primary_context(void)
{
    CUcontext prim;
    CUdeviceptr p;
    p_cuDevicePrimaryCtxRetain(&prim, 0);
    p_cuCtxSetCurrent(prim);
    is_int(p_cuMemAlloc_v2(&p, 60 * MiB), CUDA_SUCCESS, "primary: 60 MiB");
    CUDA_ARRAY3D_DESCRIPTOR md = {
        .Width = 256, .Height = 256, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4};
    CUmipmappedArray mip;
    is_int(p_cuMipmappedArrayCreate(&mip, &md, 1), CUDA_SUCCESS, "primary: 256 KiB mipmap");
    is_uint(used(), 60 * MiB + 256 * 1024, "in use");
    is_int(p_reset(0), CUDA_SUCCESS, "cuDevicePrimaryCtxReset_v2");
    is_uint(used(), 0, "reset frees the primary context's allocations");
    is_int(p_cuMipmappedArrayDestroy(mip), CUDA_ERROR_INVALID_HANDLE, "and its arrays");

    /* The scenario of issue 11 on the raw driver: 60 MiB, reset, 60 MiB again, twice over. */
    for (int i = 0; i < 2; i++) {
        p_cuDevicePrimaryCtxRetain(&prim, 0);
        p_cuCtxSetCurrent(prim);
        CUdeviceptr q;
        is_int(p_cuMemAlloc_v2(&q, 60 * MiB), CUDA_SUCCESS, "60 MiB after a reset (round %d)", i);
        is_uint(used(), 60 * MiB, "only the new 60 MiB in use (round %d)", i);
        p_reset(0);
    }

    /* The last release destroys the primary context (and its memory); an earlier one not. */
    p_cuDevicePrimaryCtxRetain(&prim, 0);
    p_cuDevicePrimaryCtxRetain(&prim, 0);
    p_cuCtxSetCurrent(prim);
    p_cuMemAlloc_v2(&p, 40 * MiB);
    p_cuDevicePrimaryCtxRelease_v2(0);
    is_uint(used(), 40 * MiB, "one of two releases keeps the memory");
    is_int(p_cuMemFree_v2(p), CUDA_SUCCESS, "and the pointer");
    p_cuMemAlloc_v2(&p, 40 * MiB);
    p_cuDevicePrimaryCtxRelease_v2(0);
    is_uint(used(), 0, "the last release frees it");
    is_int(p_cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE, "the pointer is gone");
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
    p_reset = simtest_sym(simtest_cuda_handle, "cuDevicePrimaryCtxReset_v2");
    p_cuInit(0);
    p_nvmlInit_v2();
    p_nvmlDeviceGetHandleByIndex_v2(0, &dev0);
    created_context();
    primary_context();
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
