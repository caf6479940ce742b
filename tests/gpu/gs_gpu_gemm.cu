/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A cuBLAS GEMM loop for tests/gpu/run.sh (real GPU only, never part of `make test`).
 * Built with nvcc and linked with -lcublas (cuBLAS launches its own kernels, loaded by the
 * library, through the runtime: the path a training or inference job takes under a slice).
 *
 *   gs_gpu_gemm <n> <seconds>
 *       cudaMemGetInfo (the slice's view), three n x n FP16 matrices, cublasGemmEx with FP32
 *       accumulation (tensor cores), 10 GEMMs between syncs for <seconds>. Prints key=value
 *       lines: gemm_mem_total_mib, gemm_mem_free_mib, gemm_count, gemm_wall_s, gemm_tflops.
 *
 * Exit status 0 when every call succeeded, 1 otherwise (the failing call is printed as error=).
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB ((size_t)1 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cuda_failed(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    printf("error=%s:%s\n", what, cudaGetErrorName(e));
    return 1;
}

static int blas_failed(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    printf("error=%s:cublas_status_%d\n", what, (int)s);
    return 1;
}

/* Values in [-1, 1) from a hash of the index: the same data in every run, not all zeros
 * (a GEMM of zeros draws less power and runs faster than real data). */
__global__ void fill(__half *m, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        m[i] = __float2half((float)(h & 0xffff) / 32768.0f - 1.0f);
    }
}

static int run(int n, double seconds)
{
    size_t fr = 0, tot = 0;
    cublasHandle_t h = NULL;
    __half *a = NULL, *b = NULL, *c = NULL;
    const size_t elems = (size_t)n * (size_t)n;
    if (cuda_failed(cudaFree(0), "cudaFree(0)") || blas_failed(cublasCreate(&h), "cublasCreate") ||
        cuda_failed(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo"))
        return 1;
    printf("gemm_mem_total_mib=%zu\n", tot / MIB);
    printf("gemm_mem_free_mib=%zu\n", fr / MIB);
    if (cuda_failed(cudaMalloc((void **)&a, elems * sizeof(*a)), "cudaMalloc(a)") ||
        cuda_failed(cudaMalloc((void **)&b, elems * sizeof(*b)), "cudaMalloc(b)") ||
        cuda_failed(cudaMalloc((void **)&c, elems * sizeof(*c)), "cudaMalloc(c)"))
        return 1;
    fill<<<1024, 256>>>(a, elems, 1);
    fill<<<1024, 256>>>(b, elems, 2);
    if (cuda_failed(cudaDeviceSynchronize(), "fill"))
        return 1;

    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
#define GEMM()                                                                                     \
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16F, n, b, CUDA_R_16F, n, \
                 &beta, c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
    for (int i = 0; i < 5 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = GEMM();
    if (blas_failed(st, "cublasGemmEx(warm-up)") || cuda_failed(cudaDeviceSynchronize(), "warm-up"))
        return 1;

    long count = 0;
    double t0 = now_s();
    while (now_s() - t0 < seconds) {
        for (int i = 0; i < 10 && st == CUBLAS_STATUS_SUCCESS; i++)
            st = GEMM();
        if (blas_failed(st, "cublasGemmEx") || cuda_failed(cudaDeviceSynchronize(), "gemm loop"))
            return 1;
        count += 10;
    }
    double dt = now_s() - t0;
#undef GEMM
    printf("gemm_n=%d\n", n);
    printf("gemm_count=%ld\n", count);
    printf("gemm_wall_s=%.3f\n", dt);
    printf("gemm_tflops=%.2f\n", 2.0 * (double)n * n * n * (double)count / dt / 1e12);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    if (blas_failed(cublasDestroy(h), "cublasDestroy"))
        return 1;
    return cuda_failed(cudaDeviceReset(), "cudaDeviceReset");
}

int main(int argc, char **argv)
{
    char *e1 = NULL, *e2 = NULL;
    long n = argc == 3 ? strtol(argv[1], &e1, 10) : 0;
    long s = argc == 3 ? strtol(argv[2], &e2, 10) : 0;
    if (argc != 3 || *e1 || *e2 || n < 256 || n > 32768 || s < 1 || s > 3600) {
        fprintf(stderr, "usage: gs_gpu_gemm <n 256..32768> <seconds 1..3600>\n");
        return 2;
    }
    int rc = run((int)n, (double)s);
    fflush(stdout);
    return rc;
}
