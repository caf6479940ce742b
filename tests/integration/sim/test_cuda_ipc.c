/* SPDX-License-Identifier: Apache-2.0 */
/* IPC between processes sharing one gpusim state: the opener sees (and writes) the owner's
 * bytes, the memory is counted once, interprocess events order the two, a handle outlives
 * nothing (own handle, exited owner); pointer attributes of every kind of memory. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "abi/cuda_abi_data.h"
#include "sim/sim-state.h"
#include "simtest.h"
#include "tap.h"

typedef CUresult (*get_mem_fn)(CUipcMemHandle *, CUdeviceptr);
typedef CUresult (*open_mem_fn)(CUdeviceptr *, CUipcMemHandle, unsigned int);
typedef CUresult (*close_mem_fn)(CUdeviceptr);
typedef CUresult (*get_ev_fn)(CUipcEventHandle *, CUevent);
typedef CUresult (*open_ev_fn)(CUevent *, CUipcEventHandle);
typedef CUresult (*ptr_attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);

static get_mem_fn get_mem;
static open_mem_fn open_mem;
static close_mem_fn close_mem;
static get_ev_fn get_ev;
static open_ev_fn open_ev;
static ptr_attr_fn ptr_attr;
static htod_fn htod;
static dtoh_fn dtoh;
typedef CUresult (*reg_fn)(void *, size_t, unsigned int);

#define SZ (1 << 20)

/* The opener: exit status = number of failed checks (+100 for setup failures). */
static int child(CUipcMemHandle mh, CUipcEventHandle eh)
{
    CUcontext ctx;
    if (p_cuInit(0) || p_cuCtxCreate_v2(&ctx, 0, 0))
        return 100;
    int bad = 0;
    size_t f0 = 0, f1 = 0, t = 0;
    p_cuMemGetInfo_v2(&f0, &t);
    CUdeviceptr d = 0;
    if (open_mem(&d, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
        return 101;
    p_cuMemGetInfo_v2(&f1, &t);
    bad += f1 != f0; /* opening charges nothing: counted once, to the owner */
    CUevent ev;
    if (open_ev(&ev, eh) != CUDA_SUCCESS)
        return 102;
    bad += p_cuEventSynchronize(ev) != CUDA_SUCCESS;
    static unsigned char buf[SZ];
    dtoh(buf, d, SZ);
    for (size_t i = 0; i < SZ; i++)
        bad += buf[i] != (unsigned char)(i * 3);
    unsigned char mark[16];
    memset(mark, 0xC3, sizeof(mark));
    bad += htod(d + 4096, mark, sizeof(mark)) != CUDA_SUCCESS;
    int type = 0;
    bad += ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d) != CUDA_SUCCESS || type != 2;
    bad += close_mem(d) != CUDA_SUCCESS;
    bad += close_mem(d) != CUDA_ERROR_INVALID_VALUE;
    p_cuCtxDestroy_v2(ctx);
    return bad > 99 ? 99 : bad;
}

/* gpusim's own books, read from its state file: process `pid`'s usage on device 0 (UINT64_MAX
 * when it has no live slot) and the device's usage. */
static void books(pid_t pid, uint64_t *proc_used, uint64_t *dev_used)
{
    *proc_used = UINT64_MAX;
    *dev_used = UINT64_MAX;
    int fd = open(getenv("GPUSIM_STATE"), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    void *m = mmap(NULL, sizeof(struct sim_shared), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    const struct sim_shared *sh = m;
    for (int i = 0; i < SIM_MAX_PROCS; i++)
        if (__atomic_load_n(&sh->procs[i].state, __ATOMIC_ACQUIRE) == SIM_PROC_LIVE &&
            sh->procs[i].pid == (uint32_t)pid)
            *proc_used = __atomic_load_n(&sh->procs[i].mem[0], __ATOMIC_ACQUIRE);
    *dev_used = __atomic_load_n(&sh->dev[0].used_mem, __ATOMIC_ACQUIRE);
    munmap(m, sizeof(struct sim_shared));
}

#define OWN (4u << 20) /* the opener's own allocation */

/* The opener frees what it opened (issue 31): cuMemFree on an opened pointer is refused (the
 * driver frees only what cuMemAlloc* returned), cuIpcCloseMemHandle unmaps it, and neither
 * changes anybody's usage. Exit status: bit 0 cuMemFree not refused, bit 1 usage changed by it,
 * bit 2 close failed, bit 3 usage changed by the close, 100+ setup. Reports its figures on fd. */
static int free_child(CUipcMemHandle mh, int fd)
{
    CUcontext ctx;
    CUdeviceptr own = 0, d = 0;
    if (p_cuInit(0) || p_cuCtxCreate_v2(&ctx, 0, 0) || p_cuMemAlloc_v2(&own, OWN))
        return 100;
    if (open_mem(&d, mh, 0) != CUDA_SUCCESS)
        return 101;
    int bad = 0;
    uint64_t mine0, dev0, mine1, dev1, mine2, dev2;
    books(getpid(), &mine0, &dev0);
    CUresult fr = p_cuMemFree_v2(d);
    books(getpid(), &mine1, &dev1);
    bad |= fr == CUDA_SUCCESS ? 1 : 0;
    bad |= (mine1 != mine0 || dev1 != dev0) ? 2 : 0;
    bad |= close_mem(d) != CUDA_SUCCESS ? 4 : 0;
    books(getpid(), &mine2, &dev2);
    bad |= (mine2 != mine0 || dev2 != dev0) ? 8 : 0;
    dprintf(fd, "free=%d mine=%llu,%llu,%llu dev=%llu,%llu,%llu\n", (int)fr,
            (unsigned long long)mine0, (unsigned long long)mine1, (unsigned long long)mine2,
            (unsigned long long)dev0, (unsigned long long)dev1, (unsigned long long)dev2);
    p_cuMemFree_v2(own);
    p_cuCtxDestroy_v2(ctx);
    return bad;
}

static void opener_frees(CUipcMemHandle mh)
{
    uint64_t owner0, dev0, owner1, dev1;
    books(getpid(), &owner0, &dev0);
    int fds[2];
    if (pipe(fds) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        _exit(free_child(mh, fds[1]));
    }
    close(fds[1]);
    char line[512] = "";
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    line[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 200;
    diag("opener: %s", line);
    ok(code < 100, "the opener ran (status %d)", code);
    ok(code < 100 && !(code & 1), "cuMemFree on an opened IPC pointer is refused");
    ok(code < 100 && !(code & 2), "... and changes neither the opener's usage nor the device's");
    ok(code < 100 && !(code & 4), "cuIpcCloseMemHandle after it unmaps the pointer");
    ok(code < 100 && !(code & 8), "... and changes neither the opener's usage nor the device's");
    books(getpid(), &owner1, &dev1);
    ok(owner1 == owner0 && owner1 >= SZ, "the owner's usage is unchanged (%llu -> %llu bytes)",
       (unsigned long long)owner0, (unsigned long long)owner1);
    is_uint(dev1, dev0, "the device's usage is the owner's again after the opener exits");
}

int main(void)
{
    tap_plan_auto();
    simtest_state();
    simtest_load_cuda();
    void *h = simtest_cuda_handle;
    get_mem = (get_mem_fn)simtest_sym(h, "cuIpcGetMemHandle");
    open_mem = (open_mem_fn)simtest_sym(h, "cuIpcOpenMemHandle_v2");
    close_mem = (close_mem_fn)simtest_sym(h, "cuIpcCloseMemHandle");
    get_ev = (get_ev_fn)simtest_sym(h, "cuIpcGetEventHandle");
    open_ev = (open_ev_fn)simtest_sym(h, "cuIpcOpenEventHandle");
    ptr_attr = (ptr_attr_fn)simtest_sym(h, "cuPointerGetAttribute");
    htod = (htod_fn)simtest_sym(h, "cuMemcpyHtoD_v2");
    dtoh = (dtoh_fn)simtest_sym(h, "cuMemcpyDtoH_v2");
    reg_fn p_cuMemHostRegister_v2 = (reg_fn)simtest_sym(h, "cuMemHostRegister_v2");

    CUcontext ctx;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    CUdeviceptr d;
    p_cuMemAlloc_v2(&d, SZ);
    static unsigned char buf[SZ];
    for (size_t i = 0; i < SZ; i++)
        buf[i] = (unsigned char)(i * 3);
    htod(d, buf, SZ);
    CUipcMemHandle mh;
    is_int(get_mem(&mh, d), CUDA_SUCCESS, "cuIpcGetMemHandle");
    is_int(get_mem(&mh, d + 512), CUDA_ERROR_INVALID_VALUE, "not an allocation's base");
    CUdeviceptr self;
    is_int(open_mem(&self, mh, 0), CUDA_ERROR_INVALID_CONTEXT, "a process cannot open its own");

    CUevent ev, plain;
    is_int(p_cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS,
           "an interprocess event");
    p_cuEventCreate(&plain, 0);
    CUipcEventHandle eh;
    is_int(get_ev(&eh, plain), CUDA_ERROR_INVALID_VALUE, "a plain event has no IPC handle");
    is_int(get_ev(&eh, ev), CUDA_SUCCESS, "cuIpcGetEventHandle");
    CUmodule m;
    CUfunction k;
    p_cuModuleLoadData(&m, "gpusim");
    p_cuModuleGetFunction(&k, m, "sim_busy_20000");
    p_cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    p_cuEventRecord(ev, NULL); /* the child waits for it (20 ms of kernel) */

    size_t f_before = 0, t = 0;
    p_cuMemGetInfo_v2(&f_before, &t);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child(mh, eh));
    int st = 0;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "the opener read the owner's bytes, charged nothing, waited on the event (status %d)",
       WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
    unsigned char mark[16];
    dtoh(mark, d + 4096, sizeof(mark));
    ok(mark[0] == 0xC3 && mark[15] == 0xC3, "the owner sees what the opener wrote");
    size_t f_after = 0;
    p_cuMemGetInfo_v2(&f_after, &t);
    is_uint(f_after, f_before, "device memory unchanged by the opener's open and exit");

    opener_frees(mh);

    /* A handle whose owner has exited opens nothing. */
    int fds[2];
    if (pipe(fds) != 0)
        return 2;
    pid = fork();
    if (pid == 0) {
        CUcontext c2;
        CUdeviceptr d2;
        CUipcMemHandle h2;
        if (p_cuInit(0) || p_cuCtxCreate_v2(&c2, 0, 0) || p_cuMemAlloc_v2(&d2, 4096) ||
            get_mem(&h2, d2))
            _exit(1);
        _exit(write(fds[1], &h2, sizeof(h2)) == sizeof(h2) ? 0 : 1);
    }
    CUipcMemHandle gone;
    ok(read(fds[0], &gone, sizeof(gone)) == sizeof(gone), "handle from a process that exits");
    waitpid(pid, &st, 0);
    CUdeviceptr dg = 0;
    is_int(open_mem(&dg, gone, 0), CUDA_ERROR_INVALID_VALUE, "its owner gone: refused");
    close(fds[0]);
    close(fds[1]);

    /* Pointer attributes. */
    int v = 0;
    CUdeviceptr base = 0;
    size_t rsz = 0;
    is_int(ptr_attr(&v, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100), CUDA_SUCCESS, "type");
    is_int(v, CU_MEMORYTYPE_DEVICE, "device memory");
    ptr_attr(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100);
    ptr_attr(&rsz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100);
    ok(base == d && rsz == SZ, "range of an interior pointer");
    CUcontext pc = NULL;
    ptr_attr(&pc, CU_POINTER_ATTRIBUTE_CONTEXT, d);
    ok(pc == ctx, "its context");
    CUdeviceptr mp;
    p_cuMemAllocManaged(&mp, 4096, CU_MEM_ATTACH_GLOBAL);
    ptr_attr(&v, CU_POINTER_ATTRIBUTE_IS_MANAGED, mp);
    is_int(v, 1, "managed");
    void *hp = NULL;
    is_int(ptr_attr(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, mp), CUDA_SUCCESS,
           "managed memory has a host pointer");
    ok(hp == (void *)(uintptr_t)mp, "the same address");
    is_int(ptr_attr(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d), CUDA_ERROR_INVALID_VALUE,
           "device memory has none");
    static char reg[8192];
    p_cuMemHostRegister_v2(reg, sizeof(reg), 0);
    ptr_attr(&v, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)reg);
    is_int(v, CU_MEMORYTYPE_HOST, "registered host memory");
    is_int(ptr_attr(&v, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)&v),
           CUDA_ERROR_INVALID_VALUE, "an unknown address");
    CUdeviceptr gb = 0;
    size_t gs = 0;
    is_int(p_cuMemGetAddressRange_v2(&gb, &gs, d + 7), CUDA_SUCCESS, "cuMemGetAddressRange_v2");
    ok(gb == d && gs == SZ, "base and size");

    p_cuCtxDestroy_v2(ctx);
    simtest_cleanup();
    return tap_done();
}
