/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim alone is fork-safe (issue 34): children forked while other threads are inside the
 * driver (contexts, memory, host callbacks, interprocess events, texture objects, NVML init)
 * start over at cuInit and go through each of those paths once; none may hang on a copy of a
 * lock that a thread the child does not have was holding. Judged from outside: every child
 * exits 0 within a generous bound (60 s each; the measured slowest is reported), else it is
 * killed and counted as hung. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "abi/cuda_abi_data.h"
#include "simtest.h"
#include "tap.h"

#define THREADS 6
#define FORKS   60

typedef CUresult (*host_fn_fn)(CUstream, CUhostFn, void *);
typedef CUresult (*ev_handle_fn)(CUipcEventHandle *, CUevent);
typedef CUresult (*tex_create_fn)(unsigned long long *, const CUDA_RESOURCE_DESC *,
                                  const CUDA_TEXTURE_DESC *, const CUDA_RESOURCE_VIEW_DESC *);
typedef CUresult (*tex_destroy_fn)(unsigned long long);

static host_fn_fn host_fn;
static ev_handle_fn ev_handle;
static tex_create_fn tex_create;
static tex_destroy_fn tex_destroy;
static atomic_int stop;
static atomic_long rounds;
static CUcontext primary;

static void nothing(void *arg)
{
    (void)arg;
}

/* One pass over every lock-taking path; returns a bitmask of the steps that failed. */
static int pass(int kind)
{
    int bad = 0;
    CUdeviceptr p = 0;
    switch (kind) {
    case 0: { /* contexts (cu_g.lock) */
        CUcontext c;
        if (p_cuCtxCreate_v2(&c, 0, 0) == CUDA_SUCCESS)
            bad |= p_cuCtxDestroy_v2(c) ? 1 : 0;
        else
            bad |= 1;
        p_cuCtxSetCurrent(primary);
        break;
    }
    case 1: /* memory (mem_lock, the shared state) */
        bad |= p_cuMemAlloc_v2(&p, 1 << 20) || p_cuMemFree_v2(p) ? 2 : 0;
        break;
    case 2: /* host callbacks (the callback queue) */
        bad |= host_fn(NULL, nothing, NULL) || p_cuStreamSynchronize(NULL) ? 4 : 0;
        break;
    case 3: { /* interprocess events (the event file) */
        CUevent e;
        CUipcEventHandle h;
        if (p_cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) == 0) {
            bad |= ev_handle(&h, e) ? 8 : 0;
            p_cuEventDestroy_v2(e);
        } else {
            bad |= 8;
        }
        break;
    }
    case 4: { /* texture objects (their list) */
        if (p_cuMemAlloc_v2(&p, 4096)) {
            bad |= 16;
            break;
        }
        CUDA_RESOURCE_DESC r = {.resType = CU_RESOURCE_TYPE_LINEAR};
        r.res.linear.devPtr = p;
        r.res.linear.format = CU_AD_FORMAT_FLOAT;
        r.res.linear.numChannels = 1;
        r.res.linear.sizeInBytes = 4096;
        CUDA_TEXTURE_DESC td = {0};
        unsigned long long t = 0;
        bad |= tex_create(&t, &r, &td, NULL) || tex_destroy(t) ? 16 : 0;
        p_cuMemFree_v2(p);
        break;
    }
    default: /* NVML (its init lock) */
        bad |= p_nvmlInit_v2() || p_nvmlShutdown() ? 32 : 0;
        break;
    }
    return bad;
}

static void *busy(void *arg)
{
    int kind = (int)(intptr_t)arg;
    p_cuCtxSetCurrent(primary);
    while (!atomic_load(&stop)) {
        pass(kind);
        atomic_fetch_add(&rounds, 1);
    }
    return NULL;
}

static int child(void)
{
    CUdevice d;
    if (p_cuInit(0) || p_cuDeviceGet(&d, 0) || p_cuDevicePrimaryCtxRetain(&primary, d) ||
        p_cuCtxSetCurrent(primary))
        return 100;
    int bad = 0;
    for (int k = 0; k < THREADS; k++)
        bad |= pass(k);
    return bad;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    tap_plan_auto();
    const char *san = getenv("GS_SANITIZE");
    if (san && strstr(san, "address")) {
        /* ASan's allocator is not fork-safe while other threads allocate: a child can inherit
         * its lock held and hang in malloc (ASan's lock, not gpusim's; vgpu/escapes skips its
         * fork storm for the same reason). */
        skip("fork with threads inside the driver", "ASan build: its allocator is not fork-safe");
        return tap_done();
    }
    simtest_state();
    simtest_load_cuda();
    simtest_load_nvml();
    void *h = simtest_cuda_handle;
    host_fn = (host_fn_fn)simtest_sym(h, "cuLaunchHostFunc");
    ev_handle = (ev_handle_fn)simtest_sym(h, "cuIpcGetEventHandle");
    tex_create = (tex_create_fn)simtest_sym(h, "cuTexObjectCreate");
    tex_destroy = (tex_destroy_fn)simtest_sym(h, "cuTexObjectDestroy");
    CUdevice d;
    if (p_cuInit(0) || p_cuDeviceGet(&d, 0) || p_cuDevicePrimaryCtxRetain(&primary, d) ||
        p_cuCtxSetCurrent(primary) || p_nvmlInit_v2()) {
        printf("Bail out! setup\n");
        return 2;
    }
    is_int(pass(0) | pass(1) | pass(2) | pass(3) | pass(4) | pass(5), 0,
           "every path works in the parent");
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, busy, (void *)(intptr_t)i);
    while (atomic_load(&rounds) < 100)
        usleep(1000);
    int hung = 0, failed = 0, worst_status = 0;
    double slowest = 0;
    for (int i = 0; i < FORKS; i++) {
        double t0 = now_s();
        pid_t pid = fork();
        if (pid == 0) {
            alarm(120); /* never outlive the test */
            _exit(child());
        }
        int st = 0;
        pid_t w = 0;
        while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now_s() - t0 < 60)
            usleep(2000);
        if (w == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            hung++;
            continue;
        }
        double took = now_s() - t0;
        slowest = took > slowest ? took : slowest;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed++;
            worst_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(1000 * (i % 5));
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    diag("%d forks while %d threads ran %ld passes; slowest child %.3f s", FORKS, THREADS,
         (long)atomic_load(&rounds), slowest);
    is_int(hung, 0, "no child hangs (each given 60 s)");
    is_int(failed, 0, "every child went through every path (last failure status %d)", worst_status);
    p_nvmlShutdown();
    simtest_cleanup();
    return tap_done();
}
