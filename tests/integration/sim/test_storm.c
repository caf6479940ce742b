/* SPDX-License-Identifier: Apache-2.0 */
/* 8 processes x 2 threads allocate, free and launch on one device while the parent SIGKILLs
 * random ones (and starts replacements) for 0.6 s: nothing hangs, the device's
 * accounting never goes above its capacity, and once everyone is gone it is back to 0. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "simtest.h"
#include "tap.h"

#define NPROC 8

static const char *self_exe;

static void *worker(void *arg)
{
    CUcontext ctx = arg;
    CUmodule m;
    CUfunction f;
    p_cuCtxSetCurrent(ctx);
    p_cuModuleLoadData(&m, "gpusim");
    p_cuModuleGetFunction(&f, m, "sim_busy_5");
    CUdeviceptr p[16];
    for (unsigned int i = 0;; i++) {
        for (int k = 0; k < 16; k++)
            if (p_cuMemAlloc_v2(&p[k], (size_t)(1 + (i + k) % 64) * MiB) != CUDA_SUCCESS)
                p[k] = 0;
        p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        for (int k = 0; k < 16; k++)
            if (p[k])
                p_cuMemFree_v2(p[k]);
        if (i % 8 == 0)
            p_cuCtxSynchronize();
        usleep(100); /* contention, not a CPU burner */
    }
    return NULL;
}

static int child_storm(void)
{
    CUcontext ctx;
    if (p_cuInit(0) || p_cuDevicePrimaryCtxRetain(&ctx, 0))
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, ctx);
    worker(ctx); /* never returns: SIGKILL ends us */
    return 0;
}

static pid_t spawn(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self_exe, self_exe, "storm", (char *)NULL);
        _exit(127);
    }
    return pid;
}

int main(int argc, char **argv)
{
    self_exe = argv[0];
    simtest_load_cuda();
    if (argc > 1 && strcmp(argv[1], "storm") == 0)
        return child_storm();
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("GPUSIM_CONTEXT_OVERHEAD");
    simtest_load_nvml();
    p_nvmlInit_v2();
    nvmlDevice_t d;
    p_nvmlDeviceGetHandleByIndex_v2(0, &d);

    pid_t kids[NPROC];
    for (int i = 0; i < NPROC; i++)
        kids[i] = spawn();
    unsigned int seed = 7;
    int kills = 0, over = 0, samples = 0;
    unsigned long long t0 = simtest_now_us();
    /* 0.6 s, and on past it (bounded, +10 s) until 10 processes were killed: a loaded or
     * sanitized build spawns slowly, and the kill count is what the test is about. */
    for (unsigned long long el = 0; el < 600000 || (kills < 10 && el < 10600000);
         el = simtest_now_us() - t0) {
        usleep(20000);
        int i = (int)(rand_r(&seed) % NPROC);
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
        kills++;
        kids[i] = spawn();
        nvmlMemory_t mem;
        if (p_nvmlDeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS) {
            samples++;
            over += mem.used > mem.total;
        }
    }
    for (int i = 0; i < NPROC; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    ok(kills >= 10, "%d processes SIGKILLed while allocating and launching", kills);
    is_int(over, 0, "used never above total in %d samples", samples);
    nvmlMemory_t mem = {0};
    p_nvmlDeviceGetMemoryInfo(d, &mem);
    is_uint(mem.used, 0, "all memory reclaimed once everyone is gone");
    unsigned int n = 0;
    p_nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL);
    is_uint(n, 0, "no process listed");
    is_int(p_cuInit(0), CUDA_SUCCESS, "a new process can start");
    CUcontext ctx;
    p_cuCtxCreate_v2(&ctx, 0, 0);
    CUdeviceptr all;
    is_int(p_cuMemAlloc_v2(&all, 15 * GiB), CUDA_SUCCESS, "and allocate the whole 15 GiB");
    p_cuMemFree_v2(all);
    p_cuCtxDestroy_v2(ctx);
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
