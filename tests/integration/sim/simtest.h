/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for gpusim's driver-API tests: dlopen libcuda.so.1 / libnvidia-ml.so.1 from
 * GS_SIM_DIR (linking nothing), resolve the entry points by name, and give each test its own
 * GPUSIM_STATE file in a private temporary directory.
 */
#ifndef GS_TESTS_SIMTEST_H
#define GS_TESTS_SIMTEST_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda_abi.h"
#include "abi/nvml_abi.h"

#define CU_FUNCS(X)                                                                                \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuGetErrorName)                                                                              \
    X(cuGetErrorString)                                                                            \
    X(cuGetProcAddress)                                                                            \
    X(cuGetProcAddress_v2)                                                                         \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGetName)                                                                             \
    X(cuDeviceGetUuid)                                                                             \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDeviceTotalMem_v2)                                                                         \
    X(cuDeviceGetPCIBusId)                                                                         \
    X(cuDeviceGetByPCIBusId)                                                                       \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease_v2)                                                                \
    X(cuDevicePrimaryCtxGetState)                                                                  \
    X(cuCtxCreate_v2)                                                                              \
    X(cuCtxCreate_v4)                                                                              \
    X(cuCtxDestroy_v2)                                                                             \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxGetDevice)                                                                              \
    X(cuCtxSynchronize)                                                                            \
    X(cuCtxPushCurrent_v2)                                                                         \
    X(cuCtxPopCurrent_v2)                                                                          \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy_v2)                                                                          \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamQuery)                                                                               \
    X(cuEventCreate)                                                                               \
    X(cuEventRecord)                                                                               \
    X(cuEventQuery)                                                                                \
    X(cuEventSynchronize)                                                                          \
    X(cuEventElapsedTime)                                                                          \
    X(cuEventDestroy_v2)                                                                           \
    X(cuMemGetInfo_v2)                                                                             \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemAllocPitch_v2)                                                                          \
    X(cuMemAllocManaged)                                                                           \
    X(cuMemFree_v2)                                                                                \
    X(cuMemAllocAsync)                                                                             \
    X(cuMemFreeAsync)                                                                              \
    X(cuMemAllocFromPoolAsync)                                                                     \
    X(cuMemPoolCreate)                                                                             \
    X(cuMemPoolDestroy)                                                                            \
    X(cuMemPoolGetAttribute)                                                                       \
    X(cuMemPoolSetAttribute)                                                                       \
    X(cuMemPoolTrimTo)                                                                             \
    X(cuDeviceGetDefaultMemPool)                                                                   \
    X(cuMemGetAllocationGranularity)                                                               \
    X(cuMemCreate)                                                                                 \
    X(cuMemRelease)                                                                                \
    X(cuMemAddressReserve)                                                                         \
    X(cuMemAddressFree)                                                                            \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemSetAccess)                                                                              \
    X(cuArrayCreate_v2)                                                                            \
    X(cuArray3DCreate_v2)                                                                          \
    X(cuArrayDestroy)                                                                              \
    X(cuMipmappedArrayCreate)                                                                      \
    X(cuMipmappedArrayDestroy)                                                                     \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleLoad)                                                                                \
    X(cuModuleGetFunction)                                                                         \
    X(cuModuleUnload)                                                                              \
    X(cuLaunchKernel)                                                                              \
    X(cuLaunchKernelEx)                                                                            \
    X(cuLaunchCooperativeKernel)                                                                   \
    X(cuGraphCreate)                                                                               \
    X(cuGraphAddKernelNode)                                                                        \
    X(cuGraphInstantiateWithFlags)                                                                 \
    X(cuGraphLaunch)                                                                               \
    X(cuGraphExecDestroy)                                                                          \
    X(cuGraphDestroy)                                                                              \
    X(cuMemGetAddressRange_v2)                                                                     \
    X(cuDeviceCanAccessPeer)

#define NVML_FUNCS(X)                                                                              \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlShutdown)                                                                                \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetHandleByUUID)                                                                   \
    X(nvmlDeviceGetHandleByPciBusId_v2)                                                            \
    X(nvmlDeviceGetName)                                                                           \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetIndex)                                                                          \
    X(nvmlDeviceGetMinorNumber)                                                                    \
    X(nvmlDeviceGetPciInfo_v3)                                                                     \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMemoryInfo_v2)                                                                  \
    X(nvmlDeviceGetComputeRunningProcesses_v3)                                                     \
    X(nvmlDeviceGetComputeRunningProcesses)                                                        \
    X(nvmlDeviceGetProcessUtilization)                                                             \
    X(nvmlDeviceGetUtilizationRates)                                                               \
    X(nvmlDeviceGetCudaComputeCapability)                                                          \
    X(nvmlDeviceGetArchitecture)                                                                   \
    X(nvmlDeviceGetBrand)                                                                          \
    X(nvmlSystemGetDriverVersion)                                                                  \
    X(nvmlSystemGetCudaDriverVersion_v2)                                                           \
    X(nvmlDeviceGetTopologyCommonAncestor)                                                         \
    X(nvmlDeviceGetNvLinkState)                                                                    \
    X(nvmlDeviceGetNvLinkRemotePciInfo_v2)                                                         \
    X(nvmlErrorString)                                                                             \
    X(nvmlSystemGetProcessName)

#define SIMTEST_DECL(n) static GS_CU_PFN(n) p_##n;
CU_FUNCS(SIMTEST_DECL)
NVML_FUNCS(SIMTEST_DECL)
#undef SIMTEST_DECL

static void *simtest_cuda_handle, *simtest_nvml_handle;
static char simtest_dir[256];

static inline void *simtest_open(const char *lib)
{
    const char *dir = getenv("GS_SIM_DIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", lib);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(2);
    }
    return h;
}

static inline void *simtest_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

/* A private GPUSIM_STATE (unless one is already set, e.g. by a parent test process). */
static inline void simtest_state(void)
{
    if (getenv("GPUSIM_STATE"))
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(simtest_dir, sizeof(simtest_dir), "%s/gpusim-test-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(simtest_dir)) {
        perror("mkdtemp");
        exit(2);
    }
    char path[320];
    snprintf(path, sizeof(path), "%s/state", simtest_dir);
    setenv("GPUSIM_STATE", path, 1);
}

static inline void simtest_cleanup(void)
{
    if (simtest_dir[0]) {
        char path[320];
        snprintf(path, sizeof(path), "%s/state", simtest_dir);
        unlink(path);
        rmdir(simtest_dir);
        simtest_dir[0] = '\0';
    }
}

static inline void simtest_load_cuda(void)
{
    simtest_cuda_handle = simtest_open("libcuda.so.1");
#define SIMTEST_LOAD(n) p_##n = (GS_CU_PFN(n))simtest_sym(simtest_cuda_handle, #n);
    CU_FUNCS(SIMTEST_LOAD)
#undef SIMTEST_LOAD
}

static inline void simtest_load_nvml(void)
{
    simtest_nvml_handle = simtest_open("libnvidia-ml.so.1");
#define SIMTEST_LOAD(n) p_##n = (GS_CU_PFN(n))simtest_sym(simtest_nvml_handle, #n);
    NVML_FUNCS(SIMTEST_LOAD)
#undef SIMTEST_LOAD
}

static inline unsigned long long simtest_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000ull;
}

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

#endif /* GS_TESTS_SIMTEST_H */
