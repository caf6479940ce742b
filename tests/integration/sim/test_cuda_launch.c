/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim kernels: cost by name and by gpusimSetKernelCost, launches of every kind queue on the
 * device timeline, events measure exactly the queued device time, synchronisation waits. */
#include <stdint.h>

#include "simtest.h"
#include "tap.h"

static CUresult (*p_gpusimSetKernelCost)(CUfunction, unsigned long long);
static CUresult (*p_gpusimGetKernelCost)(CUfunction, unsigned long long *);

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
    unsetenv("GPUSIM_DEFAULT_KERNEL_US");
    simtest_load_cuda();
    p_gpusimSetKernelCost = simtest_sym(simtest_cuda_handle, "gpusimSetKernelCost");
    p_gpusimGetKernelCost = simtest_sym(simtest_cuda_handle, "gpusimGetKernelCost");

    is_int(p_cuInit(0), CUDA_SUCCESS, "cuInit");
    CUcontext ctx;
    is_int(p_cuCtxCreate_v2(&ctx, 0, 0), CUDA_SUCCESS, "cuCtxCreate_v2 makes a current context");
    CUcontext cur = NULL;
    p_cuCtxGetCurrent(&cur);
    ok(cur == ctx, "the new context is current");

    CUmodule mod;
    is_int(p_cuModuleLoadData(&mod, "gpusim"), CUDA_SUCCESS, "cuModuleLoadData");
    CUfunction k1ms, klead, k200us, kdefault;
    is_int(p_cuModuleGetFunction(&k1ms, mod, "sim_busy_1000"), CUDA_SUCCESS, "sim_busy_1000");
    p_cuModuleGetFunction(&klead, mod, "sim_busy_200000");
    p_cuModuleGetFunction(&k200us, mod, "sim_busy_200");
    p_cuModuleGetFunction(&kdefault, mod, "saxpy");
    CUfunction again;
    p_cuModuleGetFunction(&again, mod, "sim_busy_1000");
    ok(again == k1ms, "the same name gives the same function handle");
    unsigned long long us = 0;
    p_gpusimGetKernelCost(k1ms, &us);
    is_uint(us, 1000, "sim_busy_1000 costs 1000 us");
    p_gpusimGetKernelCost(kdefault, &us);
    is_uint(us, 10, "any other name costs the default 10 us");
    is_int(p_gpusimSetKernelCost(kdefault, 300), CUDA_SUCCESS, "gpusimSetKernelCost");
    p_gpusimGetKernelCost(kdefault, &us);
    is_uint(us, 300, "cost overridden");

    CUevent e0, e1, e2;
    p_cuEventCreate(&e0, 0);
    p_cuEventCreate(&e1, 0);
    p_cuEventCreate(&e2, 0);

    /* A 200 ms kernel first (long enough that the host is never slower) so the measured work
     * starts exactly when it ends; the events then bracket device time only:
     * 2 x 1 ms + 200 us + 300 us = 2.5 ms. */
    is_int(p_cuLaunchKernel(klead, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS,
           "cuLaunchKernel");
    p_cuEventRecord(e0, NULL);
    is_int(p_cuEventQuery(e0), CUDA_ERROR_NOT_READY, "event behind a 200 ms kernel is not ready");
    is_int(p_cuStreamQuery(NULL), CUDA_ERROR_NOT_READY, "stream busy");
    p_cuLaunchKernel(k1ms, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    CUlaunchConfig cfg = {.gridDimX = 4,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 128,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = NULL};
    is_int(p_cuLaunchKernelEx(&cfg, k1ms, NULL, NULL), CUDA_SUCCESS, "cuLaunchKernelEx");
    is_int(p_cuLaunchCooperativeKernel(k200us, 1, 1, 1, 64, 1, 1, 0, NULL, NULL), CUDA_SUCCESS,
           "cuLaunchCooperativeKernel");
    p_cuLaunchKernel(kdefault, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(e1, NULL);
    double ms = elapsed_ms(e0, e1);
    ok(ms > 2.4999 && ms < 2.5001, "events measure 2.5 ms of queued device time (got %.6f)", ms);
    is_int(p_cuEventQuery(e1), CUDA_SUCCESS, "after cuEventSynchronize the event is complete");
    is_int(p_cuStreamQuery(NULL), CUDA_SUCCESS, "stream idle");

    /* A graph of 10 x 1 ms kernels costs 10 ms. */
    CUgraph g;
    is_int(p_cuGraphCreate(&g, 0), CUDA_SUCCESS, "cuGraphCreate");
    CUgraphNode prev = NULL;
    for (int i = 0; i < 10; i++) {
        CUDA_KERNEL_NODE_PARAMS np = {.func = k1ms,
                                      .gridDimX = 1,
                                      .gridDimY = 1,
                                      .gridDimZ = 1,
                                      .blockDimX = 32,
                                      .blockDimY = 1,
                                      .blockDimZ = 1};
        CUgraphNode n;
        p_cuGraphAddKernelNode(&n, g, prev ? &prev : NULL, prev ? 1 : 0, &np);
        prev = n;
    }
    CUgraphExec ge;
    is_int(p_cuGraphInstantiateWithFlags(&ge, g, 0), CUDA_SUCCESS, "cuGraphInstantiateWithFlags");
    p_cuLaunchKernel(klead, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(e0, NULL);
    is_int(p_cuGraphLaunch(ge, NULL), CUDA_SUCCESS, "cuGraphLaunch");
    p_cuEventRecord(e2, NULL);
    ms = elapsed_ms(e0, e2);
    ok(ms > 9.9999 && ms < 10.0001, "graph of 10 x 1 ms = 10 ms (got %.6f)", ms);
    p_cuGraphExecDestroy(ge);
    p_cuGraphDestroy(g);

    /* Two streams share the device: their kernels serialise (no concurrency on gpusim). */
    CUstream s1, s2;
    p_cuStreamCreate(&s1, 0);
    p_cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    p_cuLaunchKernel(klead, 1, 1, 1, 32, 1, 1, 0, s1, NULL, NULL);
    p_cuEventRecord(e0, s1);
    p_cuLaunchKernel(k1ms, 1, 1, 1, 32, 1, 1, 0, s1, NULL, NULL);
    p_cuLaunchKernel(k1ms, 1, 1, 1, 32, 1, 1, 0, s2, NULL, NULL);
    p_cuEventRecord(e1, s2);
    ms = elapsed_ms(e0, e1);
    ok(ms > 1.9999 && ms < 2.0001, "kernels on two streams run one after the other (%.6f)", ms);
    is_int(p_cuStreamSynchronize(s1), CUDA_SUCCESS, "cuStreamSynchronize");
    is_int(p_cuStreamDestroy_v2(s1), CUDA_SUCCESS, "cuStreamDestroy_v2");
    is_int(p_cuLaunchKernel(k1ms, 1, 1, 1, 32, 1, 1, 0, s1, NULL, NULL), CUDA_ERROR_INVALID_HANDLE,
           "launch on a destroyed stream");
    p_cuStreamDestroy_v2(s2);

    /* Synchronisation sleeps until the work's end. */
    p_cuLaunchKernel(klead, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(e2, NULL);
    is_int(p_cuCtxSynchronize(), CUDA_SUCCESS, "cuCtxSynchronize");
    is_int(p_cuEventQuery(e2), CUDA_SUCCESS, "after cuCtxSynchronize all work is done");

    /* Errors. */
    is_int(p_cuLaunchKernel(k1ms, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE,
           "grid of 0 refused");
    is_int(p_cuLaunchKernel(k1ms, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL),
           CUDA_ERROR_INVALID_VALUE, "2048 threads per block refused");
    CUfunction none;
    is_int(p_cuModuleGetFunction(&none, mod, ""), CUDA_ERROR_NOT_FOUND, "empty name not found");
    is_int(p_cuModuleLoad(&mod, "/nonexistent/kernels.cubin"), CUDA_ERROR_FILE_NOT_FOUND,
           "cuModuleLoad of a missing file");
    CUevent nt;
    p_cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING);
    p_cuEventRecord(nt, NULL);
    float f;
    is_int(p_cuEventElapsedTime(&f, e0, nt), CUDA_ERROR_INVALID_HANDLE,
           "elapsed time with a timing-disabled event");
    p_cuEventDestroy_v2(nt);
    is_int(p_cuEventDestroy_v2(nt), CUDA_ERROR_INVALID_HANDLE, "event destroyed twice");
    p_cuEventDestroy_v2(e0);
    p_cuEventDestroy_v2(e1);
    p_cuEventDestroy_v2(e2);
    is_int(p_cuModuleUnload(mod), CUDA_SUCCESS, "cuModuleUnload");
    is_int(p_cuLaunchKernel(k1ms, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
           CUDA_ERROR_INVALID_HANDLE, "function of an unloaded module");
    is_int(p_cuCtxDestroy_v2(ctx), CUDA_SUCCESS, "cuCtxDestroy_v2");
    CUdeviceptr dp;
    is_int(p_cuMemAlloc_v2(&dp, 16), CUDA_ERROR_INVALID_CONTEXT,
           "no context after destroying the current one");
    simtest_cleanup();
    return tap_done();
}
