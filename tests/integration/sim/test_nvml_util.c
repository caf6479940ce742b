/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML per-process utilisation is the busy time of that process's kernels on the timeline:
 * this process runs kernels of N µs (argv[1]) at a ~40 % duty cycle for ~0.8 s while another
 * process loads the same device; nvmlDeviceGetProcessUtilization over exactly that window must
 * report our share within 2 percentage points of (kernels x N µs) / window.
 * This is an accuracy check, not a timing threshold: the expected value is computed from what
 * the program actually launched and the window it actually measured.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "simtest.h"
#include "tap.h"

#define RUN_US 800000ull

static void sleep_us(unsigned long long us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static CUfunction busy_function(unsigned long long us)
{
    CUcontext ctx;
    CUmodule m;
    CUfunction f = NULL;
    char name[64];
    snprintf(name, sizeof(name), "sim_busy_%llu", us);
    if (p_cuInit(0) || p_cuCtxCreate_v2(&ctx, 0, 0) || p_cuModuleLoadData(&m, "gpusim") ||
        p_cuModuleGetFunction(&f, m, name)) {
        fprintf(stderr, "cannot set up CUDA\n");
        exit(2);
    }
    return f;
}

/* Background load: 300 µs kernels at ~20 % until stdin closes. */
static int child_load(void)
{
    CUfunction f = busy_function(300);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        p_cuCtxSynchronize();
        sleep_us(1200);
        char c;
        if (read(0, &c, 1) == 0) /* stdin is non-blocking: EOF means stop */
            break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long long kus = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
    simtest_load_cuda();
    if (argc > 1 && strcmp(argv[1], "load") == 0) {
        fcntl(0, F_SETFL, O_NONBLOCK);
        return child_load();
    }
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    simtest_load_nvml();

    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        return 2;
    pid_t child = fork();
    if (child == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        execl(argv[0], argv[0], "load", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    char ready[8] = "";
    ok(read(from[0], ready, 6) == 6 && strncmp(ready, "ready", 5) == 0, "load process started");

    CUfunction f = busy_function(kus);
    p_nvmlInit_v2();
    nvmlDevice_t d;
    p_nvmlDeviceGetHandleByIndex_v2(0, &d);

    unsigned long long t0 = simtest_now_us(), n = 0;
    while (simtest_now_us() - t0 < RUN_US) {
        p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
        p_cuCtxSynchronize();
        n++;
        sleep_us(kus * 3 / 2);
    }
    nvmlProcessUtilizationSample_t s[16];
    unsigned int cnt = 16;
    unsigned long long before = simtest_now_us();
    nvmlReturn_t r = p_nvmlDeviceGetProcessUtilization(d, s, &cnt, t0);
    unsigned long long after = simtest_now_us();
    is_int(r, NVML_SUCCESS, "nvmlDeviceGetProcessUtilization");
    double lo = 100.0 * (double)(n * kus) / (double)(after - t0);
    double hi = 100.0 * (double)(n * kus) / (double)(before - t0);
    int mine = -1, theirs = -1;
    unsigned long long ts = 0;
    for (unsigned int i = 0; i < cnt; i++) {
        if (s[i].pid == (unsigned int)getpid()) {
            mine = (int)s[i].smUtil;
            ts = s[i].timeStamp;
        } else if (s[i].pid == (unsigned int)child) {
            theirs = (int)s[i].smUtil;
        }
    }
    diag("%llu kernels of %llu us in %llu us: expected %.2f%% (NVML says %d%%, load process %d%%)",
         n, kus, after - t0, (lo + hi) / 2, mine, theirs);
    ok(mine >= 0 && mine >= lo - 2.0 && mine <= hi + 2.0,
       "our SM share %d%% is within 2 points of %.2f%%", mine, (lo + hi) / 2);
    ok(theirs > 0, "the load process has its own sample (%d%%)", theirs);
    ok(mine + theirs <= 100, "shares add up to at most 100%%");
    ok(ts >= before && ts <= after, "sample timestamp is the query time");

    close(to[1]);
    int st;
    waitpid(child, &st, 0);
    close(from[0]);
    unsigned long long stopped = simtest_now_us();

    /* Nothing ran since the sample: no newer samples. */
    cnt = 16;
    is_int(p_nvmlDeviceGetProcessUtilization(d, s, &cnt, after + 1000000), NVML_ERROR_NOT_FOUND,
           "a timestamp in the future has no samples");
    p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    p_cuCtxSynchronize();
    cnt = 0;
    is_int(p_nvmlDeviceGetProcessUtilization(d, NULL, &cnt, stopped), NVML_ERROR_INSUFFICIENT_SIZE,
           "NULL buffer asks for the size");
    is_uint(cnt, 1, "one process ran since the load stopped");
    nvmlUtilization_t u;
    is_int(p_nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS, "nvmlDeviceGetUtilizationRates");
    ok(u.gpu <= 100 && u.memory == 0, "device utilisation %u%% (memory not modelled: 0)", u.gpu);
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
