/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A CUDA runtime program for tests/gpu/run.sh (real GPU only, never part of `make test`).
 * Built with nvcc (static cudart, so every driver entry point comes through cuGetProcAddress,
 * the path libvgpu has to follow). Prints key=value lines on stdout, one per result.
 *
 *   gs_gpu_runtime boundary <block_mib> <max_mib> <hold_ms>
 *       context + one kernel, cudaMemGetInfo, cudaMalloc(<block_mib>) until refused or
 *       <max_mib> reached (round1), cudaDeviceReset with everything still allocated, the same
 *       again (round2), then everything freed. Before/after each phase it prints hold=<name>
 *       and sleeps <hold_ms> so run.sh can read the device's memory from outside (nvidia-smi):
 *       hold=ctx (context only), hold=full (round1 at the boundary), hold=reset (after
 *       cudaDeviceReset, no context).
 *   gs_gpu_runtime busy <kernel_us> <seconds>
 *       a spin kernel of <kernel_us> (device global timer) on every SM, launched back to back
 *       (a sync every 8 launches) for <seconds>; prints the launches per second of wall time.
 *       Against the same run without libvgpu this is the GPU time share the slice got.
 *
 * Exit status: 0 when every CUDA call that is not expected to fail succeeded, 1 otherwise
 * (an allocation refused at the boundary is expected and reported, not an error).
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int failed(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    printf("error=%s:%s\n", what, cudaGetErrorName(e));
    fflush(stdout);
    return 1;
}

static void hold(const char *name, long ms)
{
    printf("hold=%s\n", name);
    fflush(stdout);
    usleep((useconds_t)ms * 1000u);
}

__device__ static uint64_t global_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Spins for `ns` of device time; `sink` keeps the loop from being optimised away. */
__global__ void spin(uint64_t ns, unsigned long long *sink)
{
    uint64_t t0 = global_ns(), n = 0;
    while (global_ns() - t0 < ns)
        n++;
    if (threadIdx.x == 0 && n == 0)
        atomicAdd(sink, 1ull);
}

static int sm_count(void)
{
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0)
        return 1;
    return n;
}

/* Context, module loaded and a kernel run, so later figures include nothing created lazily. */
static int warm(unsigned long long **sink)
{
    if (failed(cudaFree(0), "cudaFree(0)") ||
        failed(cudaMalloc((void **)sink, sizeof(**sink)), "cudaMalloc(sink)"))
        return 1;
    spin<<<1, 32>>>(1000, *sink);
    return failed(cudaDeviceSynchronize(), "warm kernel");
}

/* cudaMalloc blocks until refused or `max` taken; prints <round>_blocks/_error/_alloc_ns/_free. */
static int fill(const char *round, void **p, long max, size_t block)
{
    long n = 0;
    cudaError_t last = cudaSuccess;
    double t0 = now_s();
    for (; n < max; n++) {
        last = cudaMalloc(&p[n], block);
        if (last != cudaSuccess)
            break;
    }
    double dt = now_s() - t0;
    (void)cudaGetLastError(); /* an out-of-memory answer is not sticky; clear it */
    size_t fr = 0, tot = 0;
    cudaError_t info = cudaMemGetInfo(&fr, &tot);
    printf("%s_blocks=%ld\n", round, n);
    printf("%s_error=%s\n", round, n < max ? cudaGetErrorName(last) : "none");
    printf("%s_alloc_ns=%.0f\n", round, n > 0 ? dt * 1e9 / (double)n : 0.0);
    printf("%s_free_bytes=%zu\n", round, fr);
    fflush(stdout);
    if (failed(info, "cudaMemGetInfo"))
        return -1;
    return (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

static int cmd_boundary(long block_mib, long max_mib, long hold_ms)
{
    const size_t block = (size_t)block_mib * MIB;
    const long max = max_mib / block_mib;
    void **p = (void **)calloc((size_t)max + 1, sizeof(*p));
    unsigned long long *sink = NULL;
    size_t fr = 0, tot = 0;
    if (!p || warm(&sink) || failed(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo"))
        return 1;
    printf("block_bytes=%zu\n", block);
    printf("mem_total_bytes=%zu\n", tot);
    printf("mem_total_mib=%zu\n", tot / MIB);
    printf("ctx_free_bytes=%zu\n", fr);
    printf("ctx_used_bytes=%zu\n", tot - fr);
    printf("expected_blocks=%zu\n", fr / block);
    hold("ctx", hold_ms);

    int n1 = fill("round1", p, max, block);
    if (n1 < 0)
        return 1;
    hold("full", hold_ms);

    /* Everything still allocated: the reset must give it all back. */
    if (failed(cudaDeviceReset(), "cudaDeviceReset"))
        return 1;
    printf("reset=ok\n");
    hold("reset", hold_ms);

    memset(p, 0, ((size_t)max + 1) * sizeof(*p));
    if (warm(&sink) || failed(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo"))
        return 1;
    printf("reset_free_bytes=%zu\n", fr);
    int n2 = fill("round2", p, max, block);
    if (n2 < 0)
        return 1;
    for (int i = 0; i < n2; i++)
        if (failed(cudaFree(p[i]), "cudaFree"))
            return 1;
    if (failed(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo"))
        return 1;
    printf("after_free_free_bytes=%zu\n", fr);
    cudaFree(sink);
    free(p);
    return failed(cudaDeviceReset(), "cudaDeviceReset");
}

static int cmd_busy(long kernel_us, double seconds)
{
    unsigned long long *sink = NULL;
    if (warm(&sink))
        return 1;
    const int grid = sm_count();
    const uint64_t ns = (uint64_t)kernel_us * 1000u;
    for (int i = 0; i < 16; i++)
        spin<<<grid, 128>>>(ns, sink);
    if (failed(cudaDeviceSynchronize(), "warm-up"))
        return 1;
    long n = 0;
    double t0 = now_s(), dt = 0;
    while ((dt = now_s() - t0) < seconds) {
        for (int i = 0; i < 8; i++)
            spin<<<grid, 128>>>(ns, sink);
        if (failed(cudaDeviceSynchronize(), "busy loop"))
            return 1;
        n += 8;
    }
    dt = now_s() - t0;
    printf("busy_grid=%d\n", grid);
    printf("busy_kernel_us=%ld\n", kernel_us);
    printf("busy_launches=%ld\n", n);
    printf("busy_wall_s=%.3f\n", dt);
    printf("busy_rate=%.3f\n", (double)n / dt);
    /* Device time the kernels asked for over wall time (each spins kernel_us at least). */
    printf("busy_nominal_share_pct=%.2f\n", 100.0 * (double)n * (double)kernel_us * 1e-6 / dt);
    fflush(stdout);
    cudaFree(sink);
    return failed(cudaDeviceReset(), "cudaDeviceReset");
}

static long arg(const char *s, long lo, long hi, const char *name)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!end || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "gs_gpu_runtime: %s must be %ld..%ld, got '%s'\n", name, lo, hi, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "boundary") == 0)
        return cmd_boundary(arg(argv[2], 1, 1024, "block_mib"), arg(argv[3], 1, 1 << 22, "max_mib"),
                            arg(argv[4], 0, 60000, "hold_ms"));
    if (argc == 4 && strcmp(argv[1], "busy") == 0)
        return cmd_busy(arg(argv[2], 10, 1000000, "kernel_us"),
                        (double)arg(argv[3], 1, 3600, "seconds"));
    fprintf(stderr, "usage: gs_gpu_runtime boundary <block_mib> <max_mib> <hold_ms>\n"
                    "       gs_gpu_runtime busy <kernel_us> <seconds>\n");
    return 2;
}
