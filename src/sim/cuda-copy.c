/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: device memory holds data. Copies and sets move bytes and take time on their
 * stream: bytes / bandwidth (PCIe bandwidth for host<->device, memory bandwidth for
 * device<->device and sets), after the work already queued on that stream. Copies use the copy
 * engines: they are not kernels, do not occupy the device timeline and do not count in NVML's
 * utilisation. The bytes move when the call is made (stream order is kept because every call on
 * a stream is made in order; kernels compute nothing).
 *
 * Backing: each process keeps one sparse file per address region (a device's allocations, VMM
 * reservations, the 32-bit region) next to the state file, `<state>.mem.<slot>.<region>`; a
 * device address's bytes lie at its offset in its region. An allocation is mapped
 * (MAP_SHARED | MAP_NORESERVE) on its first copy or set, so memory that is never touched costs
 * nothing; freeing unmaps it and punches the pages it covered out of the file. IPC opens map the
 * owner's file. Managed memory is anonymous MAP_NORESERVE memory whose host address is the
 * device pointer (host-visible, as with the driver's unified memory). Arrays keep their texels
 * in a private mapping, rows packed (pitch = width x texel size).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

#define CU_VA_REGIONS (CU_VA_SLOT_LOW + 1)

static struct {
    int fd1[CU_VA_REGIONS];      /* fd + 1 of each region's backing file, 0 = not created */
    uint64_t len[CU_VA_REGIONS]; /* its size */
    int slot;                    /* process slot the files are named after */
} bk;

static uint64_t page_size(void)
{
    static uint64_t ps;
    if (!ps) {
        long v = sysconf(_SC_PAGESIZE);
        ps = v > 0 ? (uint64_t)v : 4096;
    }
    return ps;
}

/* Region and offset of a synthetic device address; false for an address outside them. */
bool cu_region_of(uint64_t a, int *region, uint64_t *off)
{
    if (a >= CU_VA_LOW_BASE && a < CU_VA_LOW_END) {
        *region = CU_VA_SLOT_LOW;
        *off = a - CU_VA_LOW_BASE;
        return true;
    }
    if (a < CU_VA_BASE)
        return false;
    uint64_t r = (a - CU_VA_BASE) / CU_VA_PER_DEVICE;
    if (r > CU_VA_SLOT_VMM)
        return false;
    *region = (int)r;
    *off = (a - CU_VA_BASE) % CU_VA_PER_DEVICE;
    return true;
}

/* /dev/shm/gpusim-<hash of the state path>.mem.<slot>.<region> (tmpfs: pages written are memory,
 * never written back to a disk); next to the state file where /dev/shm is missing. Every process
 * of one gpusim state computes the same names. */
static uint64_t path_hash(void)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the state path */
    for (const char *c = cu_g.st->path; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return h;
}

void cu_backing_path(char *buf, size_t len, int slot, const char *kind, int region)
{
    uint64_t h = path_hash();
    if (access("/dev/shm", W_OK) == 0)
        snprintf(buf, len, "/dev/shm/gpusim-%016llx.%s.%d.%d", (unsigned long long)h, kind, slot,
                 region);
    else
        snprintf(buf, len, "%s.%s.%d.%d", cu_g.st->path, kind, slot, region);
}

/* The region's file, created on first use (mem_lock held); -1 on failure. A file left by a dead
 * process that had our slot is unlinked first (whoever still maps it keeps its pages). */
int cu_backing_fd_locked(int region)
{
    if (bk.fd1[region] && bk.slot == cu_g.st->slot)
        return bk.fd1[region] - 1;
    if (bk.slot != cu_g.st->slot) { /* after fork: the parent's files are not ours */
        for (int i = 0; i < CU_VA_REGIONS; i++)
            if (bk.fd1[i])
                close(bk.fd1[i] - 1);
        memset(&bk, 0, sizeof(bk));
        bk.slot = cu_g.st->slot;
    }
    if (cu_g.st->slot < 0)
        return -1;
    char path[PATH_MAX + 32];
    cu_backing_path(path, sizeof(path), cu_g.st->slot, "mem", region);
    unlink(path);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    (void)fchmod(fd, 0666); /* like the state file: other users' processes may open handles */
    bk.fd1[region] = fd + 1;
    bk.len[region] = 0;
    return fd;
}

uint8_t *cu_backing_map_locked(struct sim_map_entry *e)
{
    if (e->host)
        return e->host;
    int region;
    uint64_t off;
    if (e->kind == CU_ALLOC_RESERVE || !cu_region_of(e->key, &region, &off))
        return NULL;
    int fd = cu_backing_fd_locked(region);
    if (fd < 0)
        return NULL;
    uint64_t ps = page_size(), start = off - off % ps;
    uint64_t end = gs_sat_add_u64(off, e->size ? e->size : 1);
    end = gs_sat_add_u64(end, ps - 1);
    end -= end % ps;
    if (end > bk.len[region]) { /* grow only: an IPC opener may have grown it already */
        struct stat sb;
        if (fstat(fd, &sb) < 0)
            return NULL;
        if ((uint64_t)sb.st_size < end && ftruncate(fd, (off_t)end) < 0)
            return NULL;
        bk.len[region] = GS_MAX(end, (uint64_t)sb.st_size);
    }
    void *m = mmap(NULL, end - start, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
                   (off_t)start);
    if (m == MAP_FAILED)
        return NULL;
    e->host = (uint8_t *)m + (off - start);
    return e->host;
}

void *cu_backing_managed(uint64_t size)
{
    void *m = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* Unmap an entry's host view; for our own memory also drop the pages it alone covered. */
static void backing_release_locked(const struct sim_map_entry *e)
{
    if (!e->host)
        return;
    uint64_t ps = page_size(), h = (uint64_t)(uintptr_t)e->host;
    uint64_t start = h - h % ps, end = gs_sat_add_u64(h, e->size ? e->size : 1);
    end = gs_sat_add_u64(end, ps - 1);
    end -= end % ps;
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): the page-aligned start of our own mapping */
    munmap((void *)(uintptr_t)start, end - start);
    int region;
    uint64_t off;
    if (e->kind == CU_ALLOC_MANAGED || e->kind == CU_ALLOC_IPC ||
        !cu_region_of(e->key, &region, &off) || !bk.fd1[region])
        return;
    uint64_t a = gs_sat_add_u64(off, ps - 1), b = off + e->size;
    a -= a % ps;
    b -= b % ps;
    if (b > a)
        (void)fallocate(bk.fd1[region] - 1, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a,
                        (off_t)(b - a));
}

int cu_alloc_del_locked(uint64_t key, struct sim_map_entry *out)
{
    struct sim_map_entry e;
    if (sim_map_del(&cu_g.allocs, key, &e) < 0)
        return -ENOENT;
    backing_release_locked(&e);
    e.host = NULL;
    if (out)
        *out = e;
    return 0;
}

/* Unlink the backing and event files of slots no live process holds (processes that were
 * killed, or exited without running destructors): called at cuInit, after registering. Files
 * an IPC opener still maps keep their pages until it unmaps them. */
void cu_backing_sweep(void)
{
    char dir[PATH_MAX], prefix[64];
    bool shm = access("/dev/shm", W_OK) == 0;
    if (shm) {
        snprintf(dir, sizeof(dir), "/dev/shm");
        snprintf(prefix, sizeof(prefix), "gpusim-%016llx.", (unsigned long long)path_hash());
    } else {
        const char *slash = strrchr(cu_g.st->path, '/');
        size_t n = slash ? (size_t)(slash - cu_g.st->path) : 1;
        snprintf(dir, sizeof(dir), "%.*s", (int)n, slash ? cu_g.st->path : ".");
        snprintf(prefix, sizeof(prefix), "%.48s.", slash ? slash + 1 : cu_g.st->path);
    }
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t plen = strlen(prefix);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, prefix, plen) != 0)
            continue;
        const char *rest = de->d_name + plen; /* "mem.<slot>.<region>" or "ev.<slot>.0" */
        const char *dot = strchr(rest, '.');
        if (!dot || (strncmp(rest, "mem.", 4) != 0 && strncmp(rest, "ev.", 3) != 0))
            continue;
        int slot = (int)strtol(dot + 1, NULL, 10);
        if (slot < 0 || slot >= SIM_MAX_PROCS || slot == cu_g.st->slot)
            continue;
        sim_lock(cu_g.st);
        bool live = cu_g.st->sh->procs[slot].state == SIM_PROC_LIVE;
        sim_unlock(cu_g.st);
        if (!live)
            (void)unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

void cu_backing_exit(void)
{
    if (!cu_g.st || cu_g.st->slot < 0 || bk.slot != cu_g.st->slot)
        return;
    for (int i = 0; i < CU_VA_REGIONS; i++) {
        if (!bk.fd1[i])
            continue;
        char path[PATH_MAX + 32];
        cu_backing_path(path, sizeof(path), bk.slot, "mem", i);
        unlink(path); /* mappings (ours, IPC openers') keep their pages */
    }
}

struct sim_map_entry *cu_alloc_find_locked(uint64_t p)
{
    struct sim_map_entry *e = sim_map_get(&cu_g.allocs, p);
    for (size_t i = 0; !e && i < cu_g.allocs.cap; i++) {
        struct sim_map_entry *c = &cu_g.allocs.e[i];
        if (c->key && p > c->key && p - c->key < c->size)
            e = c; /* interior pointer: a scan */
    }
    if (e && e->kind == CU_ALLOC_RESERVE)
        return NULL;
    return e;
}

/* ------------------------------------------------------------------ arrays */
uint8_t *cu_array_host(struct sim_array *a)
{
    uint8_t *h = __atomic_load_n(&a->host, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    void *m = mmap(NULL, a->bytes ? a->bytes : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uint8_t *expect = NULL;
    if (!__atomic_compare_exchange_n(&a->host, &expect, (uint8_t *)m, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        munmap(m, a->bytes ? a->bytes : 1);
        return expect;
    }
    return m;
}

void cu_array_release(struct sim_array *a)
{
    if (a->host)
        munmap(a->host, a->bytes ? a->bytes : 1);
    a->host = NULL;
}

/* ------------------------------------------------------------------ time */
/* Queue `bytes` at `gbps` (GB/s = bytes/ns) on the stream; returns when it completes. */
static uint64_t stream_transfer(struct sim_stream *s, uint64_t bytes, int gbps)
{
    uint64_t cost = bytes / (uint64_t)(gbps > 0 ? gbps : 1);
    uint64_t now = sim_now_ns(), cur = __atomic_load_n(&s->tail_ns, __ATOMIC_RELAXED), end;
    do {
        end = gs_sat_add_u64(GS_MAX(now, cur), cost);
    } while (!__atomic_compare_exchange_n(&s->tail_ns, &cur, end, true, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    uint64_t c = __atomic_load_n(&s->ctx->tail_ns, __ATOMIC_RELAXED);
    while (c < end && !__atomic_compare_exchange_n(&s->ctx->tail_ns, &c, end, true,
                                                   __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
    return end;
}

/* ------------------------------------------------------------------ resolving addresses */
enum where { W_HOST, W_DEVICE };

/* A span of bytes the data path may touch: its host view, its device (-1 = host memory) and
 * how many bytes from there on belong to the same allocation. */
struct span {
    uint8_t *p;
    int dev;
    uint64_t avail;
};

/* Resolve a device-side address: an allocation (mapped on first use), or host memory the
 * driver lets a device address name (cuMemHostAlloc/Register, managed). CUDA_ERROR_INVALID_VALUE
 * when the address is none of these or [a, a + n) runs past its allocation. */
static CUresult resolve_dev(uint64_t a, uint64_t n, struct span *out)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    struct sim_map_entry *e = cu_alloc_find_locked(a);
    if (e) {
        uint64_t avail = e->size - (a - e->key);
        uint8_t *h = n <= avail ? cu_backing_map_locked(e) : NULL;
        if (n > avail)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (!h)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            *out = (struct span){h + (a - e->key), e->dev, avail};
            r = CUDA_SUCCESS;
        }
    } else {
        uint64_t avail = cu_host_span_locked(a);
        if (avail && n <= avail) {
            /* NOLINTNEXTLINE(performance-no-int-to-ptr): unified addressing, a host pointer */
            *out = (struct span){(uint8_t *)(uintptr_t)a, -1, avail};
            r = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

/* Unified addressing (cuMemcpy, CU_MEMORYTYPE_UNIFIED): a device address as above, else any
 * address below gpusim's device regions is host memory. */
static CUresult resolve_unified(uint64_t a, uint64_t n, struct span *out)
{
    CUresult r = resolve_dev(a, n, out);
    if (r == CUDA_SUCCESS)
        return r;
    int region;
    uint64_t off;
    if (!a || cu_region_of(a, &region, &off))
        return CUDA_ERROR_INVALID_VALUE;
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): unified addressing, a host pointer */
    *out = (struct span){(uint8_t *)(uintptr_t)a, -1, UINT64_MAX};
    return CUDA_SUCCESS;
}

static int bandwidth(int sdev, int ddev)
{
    int dev = ddev >= 0 ? ddev : sdev;
    if (dev < 0)
        return 0; /* host to host: no device time */
    const struct sim_device_cfg *d = &cu_g.cfg.dev[dev];
    return (sdev >= 0 && ddev >= 0) ? d->mem_gbps : d->pcie_gbps;
}

/* Account the transfer on the stream (from the time of the call, before the bytes move, so the
 * modelled duration does not include the host's memmove); returns when it completes. */
static uint64_t account(struct sim_stream *s, uint64_t bytes, int sdev, int ddev)
{
    int bw = bandwidth(sdev, ddev);
    return bw ? stream_transfer(s, bytes, bw) : __atomic_load_n(&s->tail_ns, __ATOMIC_ACQUIRE);
}

static CUresult finish(uint64_t end, int sdev, int ddev, bool sync)
{
    if (sync || (sdev < 0 && ddev < 0))
        cu_wait_until(end);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ 1D copies */
enum dir { H2D, D2H, D2D, UNI };

static CUresult copy1d(enum dir dir, uint64_t dst, uint64_t src, size_t n, CUstream hStream,
                       bool sync)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    struct span d, sp;
    if (dir == H2D) {
        if (!src)
            return CUDA_ERROR_INVALID_VALUE;
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): the caller's host pointer */
        sp = (struct span){(uint8_t *)(uintptr_t)src, -1, UINT64_MAX};
    } else if ((r = (dir == UNI ? resolve_unified : resolve_dev)(src, n, &sp)) != CUDA_SUCCESS)
        return r;
    if (dir == D2H) {
        if (!dst)
            return CUDA_ERROR_INVALID_VALUE;
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): the caller's host pointer */
        d = (struct span){(uint8_t *)(uintptr_t)dst, -1, UINT64_MAX};
    } else if ((r = (dir == UNI ? resolve_unified : resolve_dev)(dst, n, &d)) != CUDA_SUCCESS)
        return r;
    uint64_t end = account(s, n, sp.dev, d.dev);
    memmove(d.p, sp.p, n);
    return finish(end, sp.dev, d.dev, sync);
}

/* NOLINTBEGIN(performance-no-int-to-ptr): host pointers are device addresses in gpusim */
#define HP(p) ((uint64_t)(uintptr_t)(p))
/* NOLINTEND(performance-no-int-to-ptr): end of the host-pointer macro */

CU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy1d(H2D, dstDevice, HP(srcHost), ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy1d(D2H, HP(dstHost), srcDevice, ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy1d(D2D, dstDevice, srcDevice, ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                     CUstream hStream)
{
    return copy1d(H2D, dstDevice, HP(srcHost), ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    return copy1d(D2H, HP(dstHost), srcDevice, ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    return copy1d(D2D, dstDevice, srcDevice, ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy1d(H2D, dstDevice, HP(srcHost), ByteCount, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy1d(D2H, HP(dstHost), srcDevice, ByteCount, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy1d(D2D, dstDevice, srcDevice, ByteCount, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    return copy1d(H2D, dstDevice, HP(srcHost), ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream)
{
    return copy1d(D2H, HP(dstHost), srcDevice, ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount, CUstream hStream)
{
    return copy1d(D2D, dstDevice, srcDevice, ByteCount, hStream, false);
}
/* The pre-3.2 ABI: 32-bit device pointers and sizes. */
CU_API CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{
    return copy1d(H2D, dstDevice, HP(srcHost), ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    return copy1d(D2H, HP(dstHost), srcDevice, ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                             unsigned int ByteCount)
{
    return copy1d(D2D, dstDevice, srcDevice, ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost,
                                  unsigned int ByteCount, CUstream hStream)
{
    return copy1d(H2D, dstDevice, HP(srcHost), ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                                  CUstream hStream)
{
    return copy1d(D2H, HP(dstHost), srcDevice, ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                                  unsigned int ByteCount, CUstream hStream)
{
    return copy1d(D2D, dstDevice, srcDevice, ByteCount, hStream, false);
}

CU_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy1d(UNI, dst, src, ByteCount, NULL, true);
}
CU_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy1d(UNI, dst, src, ByteCount, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return copy1d(UNI, dst, src, ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                   CUstream hStream)
{
    return copy1d(UNI, dst, src, ByteCount, hStream, false);
}

/* Peer copies: the contexts name the devices; the addresses are unified anyway. */
static CUresult peer_ctx_ok(CUcontext a, CUcontext b)
{
    if (!cu_valid(a, CU_OBJ_CTX) || !cu_valid(b, CU_OBJ_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}
CU_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                             CUcontext srcContext, size_t ByteCount)
{
    CU_CHECK_INIT();
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r ? r : copy1d(D2D, dstDevice, srcDevice, ByteCount, NULL, true);
}
CU_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    CU_CHECK_INIT();
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r ? r : copy1d(D2D, dstDevice, srcDevice, ByteCount, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                  CUstream hStream)
{
    CU_CHECK_INIT();
    CUresult r = peer_ctx_ok(dstContext, srcContext);
    return r ? r : copy1d(D2D, dstDevice, srcDevice, ByteCount, hStream, false);
}
CU_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount, CUstream hStream)
{
    return cuMemcpyPeerAsync(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
}

/* ------------------------------------------------------------------ sets */
static CUresult set2d(uint64_t dst, size_t pitch, uint32_t value, unsigned elem, size_t width,
                      size_t height, CUstream hStream, bool sync)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (dst % elem || (height > 1 && (pitch % elem || pitch < gs_sat_mul_u64(width, elem))))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t row = gs_sat_mul_u64(width, elem);
    uint64_t extent = gs_sat_add_u64(gs_sat_mul_u64(height - 1, pitch), row);
    if (row == UINT64_MAX || extent == UINT64_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    struct span d;
    if ((r = resolve_dev(dst, extent, &d)) != CUDA_SUCCESS)
        return r;
    uint64_t bytes = gs_sat_mul_u64(row, height);
    int bw = d.dev >= 0 ? cu_g.cfg.dev[d.dev].mem_gbps : 0;
    uint64_t end = bw ? stream_transfer(s, bytes, bw) : __atomic_load_n(&s->tail_ns, 0);
    for (size_t y = 0; y < height; y++) {
        uint8_t *p = d.p + y * pitch;
        if (elem == 1) {
            memset(p, (int)(value & 0xff), row);
        } else if (elem == 2) {
            uint16_t v = (uint16_t)value;
            for (size_t i = 0; i < width; i++)
                memcpy(p + 2 * i, &v, 2);
        } else {
            for (size_t i = 0; i < width; i++)
                memcpy(p + 4 * i, &value, 4);
        }
    }
    if (sync)
        cu_wait_until(end);
    return CUDA_SUCCESS;
}

#define SET1(name, T, elem, ptds)                                                                  \
    CU_API CUresult name(CUdeviceptr dstDevice, T v, size_t N)                                     \
    {                                                                                              \
        return set2d(dstDevice, 0, v, elem, N, 1, ptds, true);                                     \
    }
#define SET1A(name, T, elem)                                                                       \
    CU_API CUresult name(CUdeviceptr dstDevice, T v, size_t N, CUstream hStream)                   \
    {                                                                                              \
        return set2d(dstDevice, 0, v, elem, N, 1, hStream, false);                                 \
    }
#define SET2(name, T, elem, ptds)                                                                  \
    CU_API CUresult name(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width, size_t Height) \
    {                                                                                              \
        return set2d(dstDevice, dstPitch, v, elem, Width, Height, ptds, true);                     \
    }
#define SET2A(name, T, elem)                                                                       \
    CU_API CUresult name(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width, size_t Height, \
                         CUstream hStream)                                                         \
    {                                                                                              \
        return set2d(dstDevice, dstPitch, v, elem, Width, Height, hStream, false);                 \
    }
SET1(cuMemsetD8_v2, unsigned char, 1, NULL)
SET1(cuMemsetD16_v2, unsigned short, 2, NULL)
SET1(cuMemsetD32_v2, unsigned int, 4, NULL)
SET1(cuMemsetD8_v2_ptds, unsigned char, 1, CU_STREAM_PER_THREAD)
SET1(cuMemsetD16_v2_ptds, unsigned short, 2, CU_STREAM_PER_THREAD)
SET1(cuMemsetD32_v2_ptds, unsigned int, 4, CU_STREAM_PER_THREAD)
SET1A(cuMemsetD8Async, unsigned char, 1)
SET1A(cuMemsetD16Async, unsigned short, 2)
SET1A(cuMemsetD32Async, unsigned int, 4)
SET1A(cuMemsetD8Async_ptsz, unsigned char, 1)
SET1A(cuMemsetD16Async_ptsz, unsigned short, 2)
SET1A(cuMemsetD32Async_ptsz, unsigned int, 4)
SET2(cuMemsetD2D8_v2, unsigned char, 1, NULL)
SET2(cuMemsetD2D16_v2, unsigned short, 2, NULL)
SET2(cuMemsetD2D32_v2, unsigned int, 4, NULL)
SET2(cuMemsetD2D8_v2_ptds, unsigned char, 1, CU_STREAM_PER_THREAD)
SET2(cuMemsetD2D16_v2_ptds, unsigned short, 2, CU_STREAM_PER_THREAD)
SET2(cuMemsetD2D32_v2_ptds, unsigned int, 4, CU_STREAM_PER_THREAD)
SET2A(cuMemsetD2D8Async, unsigned char, 1)
SET2A(cuMemsetD2D16Async, unsigned short, 2)
SET2A(cuMemsetD2D32Async, unsigned int, 4)
SET2A(cuMemsetD2D8Async_ptsz, unsigned char, 1)
SET2A(cuMemsetD2D16Async_ptsz, unsigned short, 2)
SET2A(cuMemsetD2D32Async_ptsz, unsigned int, 4)

/* The 32-bit ABI. */
CU_API CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
{
    return set2d(dstDevice, 0, uc, 1, N, 1, NULL, true);
}
CU_API CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N)
{
    return set2d(dstDevice, 0, us, 2, N, 1, NULL, true);
}
CU_API CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
{
    return set2d(dstDevice, 0, ui, 4, N, 1, NULL, true);
}
CU_API CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc,
                             unsigned int Width, unsigned int Height)
{
    return set2d(dstDevice, dstPitch, uc, 1, Width, Height, NULL, true);
}
CU_API CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us,
                              unsigned int Width, unsigned int Height)
{
    return set2d(dstDevice, dstPitch, us, 2, Width, Height, NULL, true);
}
CU_API CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui,
                              unsigned int Width, unsigned int Height)
{
    return set2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL, true);
}

/* ------------------------------------------------------------------ 2D / 3D copies */
/* One side of a 3D copy, from a CUDA_MEMCPY3D(_PEER) or CUDA_MEMCPY2D description. */
struct side {
    CUmemorytype type;
    uint64_t addr; /* host or device address of (0, 0, 0) */
    CUarray array;
    size_t x, y, z, pitch, height;
};

/* Host view of the first byte a side touches and the device it lives on; checks that the whole
 * extent (depth slices of height rows of pitch bytes, the last row `width` bytes) lies inside
 * one allocation (device) or array. */
static CUresult side_resolve(const struct side *sd, size_t width, size_t height, size_t depth,
                             uint8_t **base, size_t *pitch, size_t *sheight, int *dev)
{
    size_t p = sd->pitch, h = sd->height;
    if (sd->type == CU_MEMORYTYPE_ARRAY) {
        struct sim_array *a = (struct sim_array *)sd->array;
        if (!cu_valid(a, CU_OBJ_ARRAY))
            return CUDA_ERROR_INVALID_VALUE;
        p = a->row;
        h = a->height;
        if (gs_sat_add_u64(sd->x, width) > a->row || gs_sat_add_u64(sd->y, height) > a->height ||
            gs_sat_add_u64(sd->z, depth) > a->depth)
            return CUDA_ERROR_INVALID_VALUE;
        uint8_t *t = cu_array_host(a);
        if (!t)
            return CUDA_ERROR_OUT_OF_MEMORY;
        *base = t + (sd->z * h + sd->y) * p + sd->x;
        *pitch = p;
        *sheight = h;
        *dev = a->dev;
        return CUDA_SUCCESS;
    }
    if ((height > 1 || depth > 1) && p < width)
        return CUDA_ERROR_INVALID_VALUE; /* rows would overlap */
    if (depth > 1 && h < height)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t first =
        gs_sat_add_u64(gs_sat_mul_u64(gs_sat_add_u64(gs_sat_mul_u64(sd->z, h), sd->y), p), sd->x);
    uint64_t extent = gs_sat_add_u64(
        gs_sat_mul_u64(gs_sat_add_u64(gs_sat_mul_u64(depth - 1, h), height - 1), p), width);
    if (first == UINT64_MAX || extent == UINT64_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t a = gs_sat_add_u64(sd->addr, first);
    struct span s;
    CUresult r;
    if (sd->type == CU_MEMORYTYPE_HOST) {
        if (!sd->addr)
            return CUDA_ERROR_INVALID_VALUE;
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): the caller's host pointer */
        s = (struct span){(uint8_t *)(uintptr_t)a, -1, UINT64_MAX};
    } else if (sd->type == CU_MEMORYTYPE_DEVICE) {
        if ((r = resolve_dev(a, extent, &s)) != CUDA_SUCCESS)
            return r;
    } else if (sd->type == CU_MEMORYTYPE_UNIFIED) {
        if ((r = resolve_unified(a, extent, &s)) != CUDA_SUCCESS)
            return r;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *base = s.p;
    *pitch = p;
    *sheight = h;
    *dev = s.dev;
    return CUDA_SUCCESS;
}

static CUresult copy3d(const struct side *src, const struct side *dst, size_t width, size_t height,
                       size_t depth, CUstream hStream, bool sync)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (width == 0 || height == 0 || depth == 0)
        return CUDA_SUCCESS;
    uint8_t *sb, *db;
    size_t sp, sh, dp, dh;
    int sdev, ddev;
    if ((r = side_resolve(src, width, height, depth, &sb, &sp, &sh, &sdev)) != CUDA_SUCCESS ||
        (r = side_resolve(dst, width, height, depth, &db, &dp, &dh, &ddev)) != CUDA_SUCCESS)
        return r;
    uint64_t bytes = gs_sat_mul_u64(gs_sat_mul_u64(width, height), depth);
    uint64_t end = account(s, bytes, sdev, ddev);
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++)
            memmove(db + (z * dh + y) * dp, sb + (z * sh + y) * sp, width);
    return finish(end, sdev, ddev, sync);
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream hStream, bool sync)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    struct side src = {
        c->srcMemoryType, c->srcMemoryType == CU_MEMORYTYPE_HOST ? HP(c->srcHost) : c->srcDevice,
        c->srcArray,      c->srcXInBytes,
        c->srcY,          0,
        c->srcPitch,      c->Height};
    struct side dst = {
        c->dstMemoryType, c->dstMemoryType == CU_MEMORYTYPE_HOST ? HP(c->dstHost) : c->dstDevice,
        c->dstArray,      c->dstXInBytes,
        c->dstY,          0,
        c->dstPitch,      c->Height};
    return copy3d(&src, &dst, c->WidthInBytes, c->Height, 1, hStream, sync);
}

static CUresult copy3d_desc(const CUDA_MEMCPY3D *c, CUstream hStream, bool sync)
{
    if (!c || c->srcLOD || c->dstLOD || c->reserved0 || c->reserved1)
        return CUDA_ERROR_INVALID_VALUE;
    struct side src = {
        c->srcMemoryType, c->srcMemoryType == CU_MEMORYTYPE_HOST ? HP(c->srcHost) : c->srcDevice,
        c->srcArray,      c->srcXInBytes,
        c->srcY,          c->srcZ,
        c->srcPitch,      c->srcHeight};
    struct side dst = {
        c->dstMemoryType, c->dstMemoryType == CU_MEMORYTYPE_HOST ? HP(c->dstHost) : c->dstDevice,
        c->dstArray,      c->dstXInBytes,
        c->dstY,          c->dstZ,
        c->dstPitch,      c->dstHeight};
    return copy3d(&src, &dst, c->WidthInBytes, c->Height, c->Depth, hStream, sync);
}

static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *c, CUstream hStream, bool sync)
{
    if (!c || c->srcLOD || c->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    struct side src = {
        c->srcMemoryType, c->srcMemoryType == CU_MEMORYTYPE_HOST ? HP(c->srcHost) : c->srcDevice,
        c->srcArray,      c->srcXInBytes,
        c->srcY,          c->srcZ,
        c->srcPitch,      c->srcHeight};
    struct side dst = {
        c->dstMemoryType, c->dstMemoryType == CU_MEMORYTYPE_HOST ? HP(c->dstHost) : c->dstDevice,
        c->dstArray,      c->dstXInBytes,
        c->dstY,          c->dstZ,
        c->dstPitch,      c->dstHeight};
    return copy3d(&src, &dst, c->WidthInBytes, c->Height, c->Depth, hStream, sync);
}

CU_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, NULL, true);
}
CU_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, NULL, true);
}
CU_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy2d(pCopy, hStream, false);
}
CU_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy2d(pCopy, hStream, false);
}
CU_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
    return copy3d_desc(pCopy, NULL, true);
}
CU_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    return copy3d_desc(pCopy, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy3d_desc(pCopy, hStream, false);
}
CU_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy3d_desc(pCopy, hStream, false);
}
CU_API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return copy3d_peer(pCopy, NULL, true);
}
CU_API CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return copy3d_peer(pCopy, CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy3d_peer(pCopy, hStream, false);
}
CU_API CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy3d_peer(pCopy, hStream, false);
}

/* Array copies: 1D ranges of an array's packed texels (offsets in bytes). */
static CUresult array_1d(CUarray arr, size_t off, uint64_t other, CUmemorytype otype, size_t n,
                         bool to_array, CUstream hStream, bool sync)
{
    struct sim_array *a = (struct sim_array *)arr;
    if (!cu_valid(a, CU_OBJ_ARRAY))
        return CUDA_ERROR_INVALID_VALUE;
    if (gs_sat_add_u64(off, n) > a->bytes)
        return CUDA_ERROR_INVALID_VALUE;
    struct side as = {CU_MEMORYTYPE_HOST, 0, NULL, 0, 0, 0, n, 1};
    struct side os = {otype, other, NULL, 0, 0, 0, n, 1};
    uint8_t *t = cu_array_host(a);
    if (!t)
        return CUDA_ERROR_OUT_OF_MEMORY;
    as.addr = HP(t + off);
    CUresult r = to_array ? copy3d(&os, &as, n, 1, 1, hStream, sync)
                          : copy3d(&as, &os, n, 1, 1, hStream, sync);
    return r;
}

CU_API CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                size_t ByteCount)
{
    return array_1d(dstArray, dstOffset, HP(srcHost), CU_MEMORYTYPE_HOST, ByteCount, true, NULL,
                    true);
}
CU_API CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                     size_t ByteCount)
{
    return array_1d(dstArray, dstOffset, HP(srcHost), CU_MEMORYTYPE_HOST, ByteCount, true,
                    CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                     size_t ByteCount, CUstream hStream)
{
    return array_1d(dstArray, dstOffset, HP(srcHost), CU_MEMORYTYPE_HOST, ByteCount, true, hStream,
                    false);
}
CU_API CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    return cuMemcpyHtoAAsync_v2(dstArray, dstOffset, srcHost, ByteCount, hStream);
}
CU_API CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    return array_1d(srcArray, srcOffset, HP(dstHost), CU_MEMORYTYPE_HOST, ByteCount, false, NULL,
                    true);
}
CU_API CUresult cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount)
{
    return array_1d(srcArray, srcOffset, HP(dstHost), CU_MEMORYTYPE_HOST, ByteCount, false,
                    CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount, CUstream hStream)
{
    return array_1d(srcArray, srcOffset, HP(dstHost), CU_MEMORYTYPE_HOST, ByteCount, false, hStream,
                    false);
}
CU_API CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray, size_t srcOffset,
                                          size_t ByteCount, CUstream hStream)
{
    return cuMemcpyAtoHAsync_v2(dstHost, srcArray, srcOffset, ByteCount, hStream);
}
CU_API CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                size_t ByteCount)
{
    return array_1d(dstArray, dstOffset, srcDevice, CU_MEMORYTYPE_DEVICE, ByteCount, true, NULL,
                    true);
}
CU_API CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                     size_t ByteCount)
{
    return array_1d(dstArray, dstOffset, srcDevice, CU_MEMORYTYPE_DEVICE, ByteCount, true,
                    CU_STREAM_PER_THREAD, true);
}
CU_API CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                size_t ByteCount)
{
    return array_1d(srcArray, srcOffset, dstDevice, CU_MEMORYTYPE_DEVICE, ByteCount, false, NULL,
                    true);
}
CU_API CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount)
{
    return array_1d(srcArray, srcOffset, dstDevice, CU_MEMORYTYPE_DEVICE, ByteCount, false,
                    CU_STREAM_PER_THREAD, true);
}
static CUresult atoa(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                     size_t n, CUstream st)
{
    struct sim_array *s = (struct sim_array *)srcArray;
    if (!cu_valid(s, CU_OBJ_ARRAY) || gs_sat_add_u64(srcOffset, n) > s->bytes)
        return CUDA_ERROR_INVALID_VALUE;
    uint8_t *t = cu_array_host(s);
    if (!t)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r =
        array_1d(dstArray, dstOffset, HP(t + srcOffset), CU_MEMORYTYPE_HOST, n, true, st, true);
    return r;
}
CU_API CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                size_t srcOffset, size_t ByteCount)
{
    return atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, NULL);
}
CU_API CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                     size_t srcOffset, size_t ByteCount)
{
    return atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, CU_STREAM_PER_THREAD);
}
