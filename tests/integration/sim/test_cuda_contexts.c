/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim contexts and ordering: the per-thread context stack, primary-context state, context
 * overhead through NVML's process list, cuStreamWaitEvent ordering across streams. */
#include <pthread.h>
#include <stdint.h>

#include "simtest.h"
#include "tap.h"

static GS_CU_PFN(cuStreamWaitEvent) p_cuStreamWaitEvent;
static GS_CU_PFN(cuDevicePrimaryCtxSetFlags_v2) p_cuDevicePrimaryCtxSetFlags_v2;
static GS_CU_PFN(cuDevicePrimaryCtxReset_v2) p_cuDevicePrimaryCtxReset_v2;
static GS_CU_PFN(cuCtxGetFlags) p_cuCtxGetFlags;

static CUcontext other_thread_saw = (CUcontext)1;

static void *thread_main(void *arg)
{
    (void)arg;
    p_cuCtxGetCurrent(&other_thread_saw);
    return NULL;
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("GPUSIM_CONTEXT_OVERHEAD", "100Mi", 1);
    simtest_load_cuda();
    simtest_load_nvml();
    p_cuStreamWaitEvent = simtest_sym(simtest_cuda_handle, "cuStreamWaitEvent");
    p_cuDevicePrimaryCtxSetFlags_v2 =
        simtest_sym(simtest_cuda_handle, "cuDevicePrimaryCtxSetFlags_v2");
    p_cuDevicePrimaryCtxReset_v2 = simtest_sym(simtest_cuda_handle, "cuDevicePrimaryCtxReset_v2");
    p_cuCtxGetFlags = simtest_sym(simtest_cuda_handle, "cuCtxGetFlags");
    p_cuInit(0);
    p_nvmlInit_v2();
    nvmlDevice_t d;
    p_nvmlDeviceGetHandleByIndex_v2(0, &d);

    /* Primary context state. */
    unsigned int flags = 99;
    int active = 1;
    p_cuDevicePrimaryCtxGetState(0, &flags, &active);
    ok(flags == 0 && active == 0, "primary context inactive at start");
    is_int(p_cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS,
           "set primary flags");
    CUcontext prim, prim2;
    p_cuDevicePrimaryCtxRetain(&prim, 0);
    p_cuDevicePrimaryCtxRetain(&prim2, 0);
    ok(prim == prim2, "retaining twice gives the same context");
    p_cuDevicePrimaryCtxGetState(0, &flags, &active);
    ok(flags == CU_CTX_SCHED_BLOCKING_SYNC && active == 1, "active with its flags");
    nvmlMemory_t m;
    p_nvmlDeviceGetMemoryInfo(d, &m);
    is_uint(m.used, 100 * MiB, "one context: 100 MiB overhead (retained twice, charged once)");
    p_cuDevicePrimaryCtxRelease_v2(0);
    p_cuDevicePrimaryCtxGetState(0, &flags, &active);
    is_int(active, 1, "still active after one of two releases");
    p_cuDevicePrimaryCtxRelease_v2(0);
    p_cuDevicePrimaryCtxGetState(0, &flags, &active);
    is_int(active, 0, "inactive after the last release");
    p_nvmlDeviceGetMemoryInfo(d, &m);
    is_uint(m.used, 0, "overhead given back");
    is_int(p_cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT, "release too many");
    p_cuDevicePrimaryCtxRetain(&prim, 0);
    is_int(p_cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS, "reset");
    p_cuDevicePrimaryCtxGetState(0, &flags, &active);
    ok(flags == 0 && active == 0, "reset deactivates and clears the flags");

    /* Context stack. */
    CUcontext a, b, cur, popped;
    is_int(p_cuCtxCreate_v4(&a, NULL, CU_CTX_SCHED_YIELD, 0), CUDA_SUCCESS, "cuCtxCreate_v4");
    p_cuCtxGetFlags(&flags);
    is_uint(flags, CU_CTX_SCHED_YIELD, "its flags");
    p_cuCtxCreate_v2(&b, 0, 0);
    p_cuCtxGetCurrent(&cur);
    ok(cur == b, "the newest context is current");
    unsigned int np = 4;
    nvmlProcessInfo_t pi[4];
    p_nvmlDeviceGetComputeRunningProcesses_v3(d, &np, pi);
    ok(np == 1 && pi[0].pid == (unsigned int)getpid() && pi[0].usedGpuMemory == 200 * MiB,
       "NVML lists us with two contexts' overhead (200 MiB)");
    is_int(p_cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS, "pop");
    ok(popped == b, "popped the top");
    p_cuCtxGetCurrent(&cur);
    ok(cur == a, "the one below is current again");
    p_cuCtxPushCurrent_v2(b);
    p_cuCtxGetCurrent(&cur);
    ok(cur == b, "push makes it current");
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    ok(other_thread_saw == NULL, "another thread has no current context");
    p_cuCtxDestroy_v2(b);
    p_cuCtxGetCurrent(&cur);
    ok(cur == a, "destroying the current context unbinds it");
    is_int(p_cuCtxPushCurrent_v2(b), CUDA_ERROR_INVALID_CONTEXT, "a destroyed context");
    CUdevice dev = -1;
    p_cuCtxGetDevice(&dev);
    is_int(dev, 0, "cuCtxGetDevice");

    /* Stream ordering: s2 waits for an event recorded after a 200 ms kernel on s1. */
    CUmodule mod;
    CUfunction klead, k1;
    p_cuModuleLoadData(&mod, "gpusim");
    p_cuModuleGetFunction(&klead, mod, "sim_busy_200000");
    p_cuModuleGetFunction(&k1, mod, "sim_busy_1000");
    CUstream s1, s2;
    CUevent ev, e_end, e_start;
    p_cuStreamCreate(&s1, 0);
    p_cuStreamCreate(&s2, 0);
    p_cuEventCreate(&ev, 0);
    p_cuEventCreate(&e_start, 0);
    p_cuEventCreate(&e_end, 0);
    p_cuLaunchKernel(klead, 1, 1, 1, 1, 1, 1, 0, s1, NULL, NULL);
    p_cuEventRecord(ev, s1);
    is_int(p_cuStreamWaitEvent(s2, ev, 0), CUDA_SUCCESS, "cuStreamWaitEvent");
    p_cuEventRecord(e_start, s2);
    p_cuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL);
    p_cuEventRecord(e_end, s2);
    float ms = -1;
    p_cuEventSynchronize(e_end);
    p_cuEventElapsedTime(&ms, ev, e_start);
    ok(ms == 0.0f, "s2's work starts when the awaited event completes (%.6f ms later)", ms);
    p_cuEventElapsedTime(&ms, e_start, e_end);
    ok(ms > 0.9999f && ms < 1.0001f, "and takes its 1 ms (%.6f)", ms);
    /* An event on an idle stream completes when the device reaches it, not before the work
     * queued ahead of it on the device: events around a kernel measure the kernel, not the wait
     * behind other work (a time-sliced GPU writes the timestamp when it runs the context). */
    p_cuLaunchKernel(klead, 1, 1, 1, 1, 1, 1, 0, s1, NULL, NULL);
    p_cuEventRecord(e_start, s2);
    p_cuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL);
    p_cuEventRecord(e_end, s2);
    p_cuEventSynchronize(e_end);
    p_cuEventElapsedTime(&ms, e_start, e_end);
    ok(ms > 0.9999f && ms < 1.0001f,
       "events around a kernel queued behind 200 ms of other work measure its 1 ms (%.6f)", ms);
    p_cuEventDestroy_v2(ev);
    p_cuEventDestroy_v2(e_start);
    p_cuEventDestroy_v2(e_end);
    p_cuStreamDestroy_v2(s1);
    p_cuStreamDestroy_v2(s2);
    p_cuModuleUnload(mod);
    p_cuCtxDestroy_v2(a);
    p_nvmlDeviceGetMemoryInfo(d, &m);
    is_uint(m.used, 0, "no context left, no overhead");
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
