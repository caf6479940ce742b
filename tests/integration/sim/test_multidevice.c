/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim with two devices (h200x2): memory and timelines are per device, CUDA ordinals follow
 * CUDA_VISIBLE_DEVICES while NVML keeps the physical order, peers over NVLink. */
#include <stdint.h>

#include "simtest.h"
#include "tap.h"

static double elapsed_ms(CUevent a, CUevent b)
{
    float ms = -1;
    p_cuEventSynchronize(b);
    p_cuEventElapsedTime(&ms, a, b);
    return ms;
}

static unsigned long long nvml_used(unsigned int idx)
{
    nvmlDevice_t d;
    nvmlMemory_t m = {0};
    p_nvmlDeviceGetHandleByIndex_v2(idx, &d);
    p_nvmlDeviceGetMemoryInfo(d, &m);
    return m.used;
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "h200x2", 1);
    unsetenv("GPUSIM_CONFIG");
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1); /* CUDA ordinal 0 is the second H200 */
    unsetenv("GPUSIM_CONTEXT_OVERHEAD");
    simtest_load_cuda();
    simtest_load_nvml();
    is_int(p_cuInit(0), CUDA_SUCCESS, "cuInit");
    is_int(p_nvmlInit_v2(), NVML_SUCCESS, "nvmlInit_v2");

    int n = 0;
    p_cuDeviceGetCount(&n);
    is_int(n, 2, "two devices");
    char bus[32];
    p_cuDeviceGetPCIBusId(bus, sizeof(bus), 0);
    is_str(bus, "0000:2A:00.0", "ordinal 0 is the physical GPU 1");
    int peer = -1;
    p_cuDeviceCanAccessPeer(&peer, 0, 1);
    is_int(peer, 1, "NVLink peers can access each other");

    CUcontext c0, c1;
    p_cuCtxCreate_v2(&c0, 0, 0);
    CUdeviceptr big;
    is_int(p_cuMemAlloc_v2(&big, 100 * GiB), CUDA_SUCCESS, "100 GiB on ordinal 0");
    size_t fr, tot;
    p_cuMemGetInfo_v2(&fr, &tot);
    is_uint(tot - fr, 100 * GiB, "ordinal 0 sees it");
    p_cuCtxCreate_v2(&c1, 0, 1);
    p_cuMemGetInfo_v2(&fr, &tot);
    is_uint(tot - fr, 0, "ordinal 1 (physical 0) is empty");
    is_uint(tot, 143771 * MiB, "143771 MiB");
    is_uint(nvml_used(1), 100 * GiB, "NVML (physical order): GPU 1 holds 100 GiB");
    is_uint(nvml_used(0), 0, "GPU 0 holds nothing");
    CUdeviceptr more;
    is_int(p_cuMemAlloc_v2(&more, 100 * GiB), CUDA_SUCCESS, "another 100 GiB fits on the other");

    /* Timelines are per device: a 200 ms kernel on ordinal 0 does not delay ordinal 1. */
    CUmodule m0, m1;
    CUfunction klead_0, k1_1, klead_1;
    p_cuCtxSetCurrent(c0);
    p_cuModuleLoadData(&m0, "gpusim");
    p_cuModuleGetFunction(&klead_0, m0, "sim_busy_200000");
    p_cuCtxSetCurrent(c1);
    p_cuModuleLoadData(&m1, "gpusim");
    p_cuModuleGetFunction(&k1_1, m1, "sim_busy_1000");
    p_cuModuleGetFunction(&klead_1, m1, "sim_busy_200000");
    CUevent a, b;
    p_cuEventCreate(&a, 0);
    p_cuEventCreate(&b, 0);
    p_cuCtxSetCurrent(c0);
    p_cuLaunchKernel(klead_0, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    p_cuCtxSetCurrent(c1);
    p_cuEventRecord(a, NULL);
    is_int(p_cuEventQuery(a), CUDA_SUCCESS, "ordinal 1 is idle while ordinal 0 runs 200 ms");
    p_cuCtxSetCurrent(c0);
    is_int(p_cuStreamQuery(NULL), CUDA_ERROR_NOT_READY, "ordinal 0 is busy");
    p_cuCtxSetCurrent(c1);
    p_cuLaunchKernel(klead_1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(a, NULL);
    p_cuLaunchKernel(k1_1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(b, NULL);
    double ms = elapsed_ms(a, b);
    ok(ms > 0.9999 && ms < 1.0001, "events on ordinal 1 measure its 1 ms kernel exactly (%.6f)",
       ms);
    p_cuCtxSetCurrent(c0);
    p_cuCtxSynchronize();
    p_cuEventDestroy_v2(a);
    p_cuEventDestroy_v2(b);

    p_cuCtxSetCurrent(c0);
    p_cuMemFree_v2(big);
    p_cuCtxSetCurrent(c1);
    p_cuMemFree_v2(more);
    is_uint(nvml_used(0) + nvml_used(1), 0, "all freed");
    p_cuCtxDestroy_v2(c1);
    p_cuCtxDestroy_v2(c0);
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
