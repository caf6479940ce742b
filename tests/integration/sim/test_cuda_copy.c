/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim copies and sets: range checks, time = bytes / bandwidth in stream order (T4: PCIe
 * 12 GB/s, memory 320 GB/s), device memory holds data, copies are not kernels (NVML). */
#include <stdbool.h>
#include <stdint.h>

#include "simtest.h"
#include "tap.h"

#define SYM(n) static GS_CU_PFN(n) p_##n;
SYM(cuMemcpyHtoD_v2)
SYM(cuMemcpyDtoH_v2)
SYM(cuMemcpyDtoD_v2)
SYM(cuMemcpyHtoDAsync_v2)
SYM(cuMemcpyDtoHAsync_v2)
SYM(cuMemcpyDtoDAsync_v2)
SYM(cuMemsetD8_v2)
SYM(cuMemsetD32_v2)
SYM(cuMemsetD32Async)

static double elapsed_ms(CUevent a, CUevent b)
{
    float ms = -1;
    p_cuEventSynchronize(b);
    p_cuEventElapsedTime(&ms, a, b);
    return ms;
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    simtest_load_cuda();
    simtest_load_nvml();
#define LOAD(n) p_##n = (GS_CU_PFN(n))simtest_sym(simtest_cuda_handle, #n);
    LOAD(cuMemcpyHtoD_v2)
    LOAD(cuMemcpyDtoH_v2)
    LOAD(cuMemcpyDtoD_v2)
    LOAD(cuMemcpyHtoDAsync_v2)
    LOAD(cuMemcpyDtoHAsync_v2)
    LOAD(cuMemcpyDtoDAsync_v2)
    LOAD(cuMemsetD8_v2)
    LOAD(cuMemsetD32_v2)
    LOAD(cuMemsetD32Async)
    CUcontext ctx;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    p_nvmlInit_v2();
    unsigned long long t0 = simtest_now_us();

    CUdeviceptr a, b;
    p_cuMemAlloc_v2(&a, 40 * 1000 * 1000);
    p_cuMemAlloc_v2(&b, 40 * 1000 * 1000);
    static unsigned char host[12 * 1000 * 1000];
    for (size_t i = 0; i < sizeof(host); i++)
        host[i] = (unsigned char)(i * 7 + 3);
    is_int(p_cuMemcpyHtoD_v2(a, host, sizeof(host)), CUDA_SUCCESS, "cuMemcpyHtoD_v2");
    is_int(p_cuStreamQuery(NULL), CUDA_SUCCESS, "a synchronous copy has completed on return");
    memset(host, 0xEE, sizeof(host));
    is_int(p_cuMemcpyDtoH_v2(host, a + 1000, 4096), CUDA_SUCCESS, "DtoH from an interior pointer");
    bool same = true;
    for (size_t i = 0; i < 4096; i++)
        same &= host[i] == (unsigned char)((i + 1000) * 7 + 3);
    ok(same && host[4096] == 0xEE,
       "device memory holds what was written (exactly the bytes copied)");
    is_int(p_cuMemcpyHtoD_v2(a + 40 * 1000 * 1000 - 10, host, 11), CUDA_ERROR_INVALID_VALUE,
           "a copy past the end of the allocation");
    is_int(p_cuMemcpyHtoD_v2(0x1234000, host, 1), CUDA_ERROR_INVALID_VALUE, "not a device pointer");
    is_int(p_cuMemcpyDtoD_v2(b, a, 1000), CUDA_SUCCESS, "cuMemcpyDtoD_v2");
    is_int(p_cuMemsetD8_v2(a, 0, 1000), CUDA_SUCCESS, "cuMemsetD8_v2");
    is_int(p_cuMemsetD32_v2(a + 2, 0, 10), CUDA_ERROR_INVALID_VALUE, "misaligned cuMemsetD32");
    is_int(p_cuMemsetD32_v2(a, 0, 10 * 1000 * 1000), CUDA_SUCCESS, "cuMemsetD32_v2 of 40 MB");
    is_int(p_cuMemsetD32_v2(a, 0, 10 * 1000 * 1000 + 1), CUDA_ERROR_INVALID_VALUE,
           "one element too many");

    /* Timing, exact: behind a 2 s kernel the copies start when it ends (the host moves the bytes
     * while the kernel "runs"; event times are the device's). */
    CUmodule m;
    CUfunction lead;
    p_cuModuleLoadData(&m, "gpusim");
    p_cuModuleGetFunction(&lead, m, "sim_busy_2000000");
    CUstream s;
    CUevent e0, e1, e2, e3;
    p_cuStreamCreate(&s, 0);
    p_cuEventCreate(&e0, 0);
    p_cuEventCreate(&e1, 0);
    p_cuEventCreate(&e2, 0);
    p_cuEventCreate(&e3, 0);
    p_cuLaunchKernel(lead, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
    p_cuEventRecord(e0, s);
    p_cuMemcpyHtoDAsync_v2(a, host, 12 * 1000 * 1000, s);
    p_cuEventRecord(e1, s);
    p_cuMemcpyDtoDAsync_v2(b, a, 32 * 1000 * 1000, s);
    p_cuEventRecord(e2, s);
    p_cuMemsetD32Async(a, 7, 8 * 1000 * 1000, s);
    p_cuMemcpyDtoHAsync_v2(host, a, 6 * 1000 * 1000, s);
    p_cuEventRecord(e3, s);
    double ms = elapsed_ms(e0, e1);
    ok(ms > 0.9999 && ms < 1.0001, "12 MB host->device at 12 GB/s: 1 ms (%.6f)", ms);
    ms = elapsed_ms(e1, e2);
    ok(ms > 0.09999 && ms < 0.10001, "32 MB device->device at 320 GB/s: 0.1 ms (%.6f)", ms);
    ms = elapsed_ms(e2, e3);
    ok(ms > 0.5999 && ms < 0.6001, "32 MB set + 6 MB device->host: 0.6 ms (%.6f)", ms);

    /* Copies are not kernels: only the 2 s kernel counts for NVML. */
    nvmlDevice_t d;
    p_nvmlDeviceGetHandleByIndex_v2(0, &d);
    nvmlProcessUtilizationSample_t smp[4];
    unsigned int cnt = 4;
    is_int(p_nvmlDeviceGetProcessUtilization(d, smp, &cnt, t0), NVML_SUCCESS, "utilisation");
    unsigned long long window = simtest_now_us() - t0;
    int expect = (int)(100.0 * 2000000.0 / (double)window + 0.5);
    ok(cnt == 1 && (int)smp[0].smUtil >= expect - 2 && (int)smp[0].smUtil <= expect + 2,
       "SM share %u%% is the kernel's alone (~%d%%)", cnt ? smp[0].smUtil : 0, expect);

    p_cuEventDestroy_v2(e0);
    p_cuEventDestroy_v2(e1);
    p_cuEventDestroy_v2(e2);
    p_cuEventDestroy_v2(e3);
    p_cuStreamDestroy_v2(s);
    p_cuMemFree_v2(a);
    p_cuMemFree_v2(b);
    p_cuCtxDestroy_v2(ctx);
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
