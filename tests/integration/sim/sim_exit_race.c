/* SPDX-License-Identifier: Apache-2.0 */
/* A program whose monitoring thread is still calling the driver and NVML while main returns
 * (HAMi-core's watcher did this): gpusim's destructors run under it. Exit status 0 unless a
 * call crashed (the test runs it many times and looks for a signal). */
#include <pthread.h>
#include <stdint.h>

#include "simtest.h"

static volatile int started;
static GS_CU_PFN(cuMemcpyHtoD_v2) p_cuMemcpyHtoD_v2;

static void *monitor(void *arg)
{
    (void)arg;
    nvmlDevice_t d;
    p_nvmlDeviceGetHandleByIndex_v2(0, &d);
    CUcontext ctx;
    p_cuDevicePrimaryCtxRetain(&ctx, 0);
    p_cuCtxSetCurrent(ctx);
    for (unsigned long i = 0;; i++) {
        nvmlMemory_t m;
        size_t f, t;
        CUdeviceptr p;
        p_nvmlDeviceGetMemoryInfo(d, &m);
        p_cuMemGetInfo_v2(&f, &t);
        if (p_cuMemAlloc_v2(&p, 4096) == CUDA_SUCCESS) {
            unsigned char b[64] = {1};
            p_cuMemcpyHtoD_v2(p, b, sizeof(b));
            p_cuMemFree_v2(p);
        }
        if (i == 100)
            started = 1;
    }
    return NULL;
}

int main(void)
{
    simtest_load_cuda();
    simtest_load_nvml();
    p_cuMemcpyHtoD_v2 =
        (GS_CU_PFN(cuMemcpyHtoD_v2))simtest_sym(simtest_cuda_handle, "cuMemcpyHtoD_v2");
    if (p_cuInit(0) || p_nvmlInit_v2())
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, monitor, NULL);
    while (!started)
        usleep(100);
    return 0; /* exit() runs the libraries' destructors while the monitor is mid-call */
}
