/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: page-locked host memory. cuMemHostAlloc / cuMemAllocHost hand out real,
 * usable host memory (anonymous mmap) and cuMemHostRegister records a range the program owns;
 * neither is device memory, so nothing is charged to the device. With unified addressing the
 * device pointer of host memory is its host address (cuMemHostGetDevicePointer). Memory from
 * cuMemAllocHost belongs to the context current at allocation and goes with it (cuCtxDestroy),
 * as the driver documents.
 */
#include <errno.h>
#include <sys/mman.h>

#include "sim/cuda-internal.h"

#define HOST_ALLOC_FLAGS                                                                           \
    (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)
#define HOST_REGISTER_FLAGS                                                                        \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |    \
     CU_MEMHOSTREGISTER_READ_ONLY)

/* Whether [p, p+n) overlaps a recorded range (mem_lock held; host ranges are few: a scan). */
static bool host_overlaps_locked(uint64_t p, uint64_t n)
{
    for (size_t i = 0; i < cu_g.hosts.cap; i++) {
        const struct sim_map_entry *e = &cu_g.hosts.e[i];
        if (e->key && p < gs_sat_add_u64(e->key, e->size) && e->key < gs_sat_add_u64(p, n))
            return true;
    }
    return false;
}

/* The recorded range holding p (mem_lock held), or NULL. */
static const struct sim_map_entry *host_range_locked(uint64_t p)
{
    const struct sim_map_entry *e = sim_map_get(&cu_g.hosts, p);
    for (size_t i = 0; !e && i < cu_g.hosts.cap; i++) {
        const struct sim_map_entry *c = &cu_g.hosts.e[i];
        if (c->key && p > c->key && p - c->key < c->size)
            e = c;
    }
    return e;
}

CU_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!pp || bytesize == 0 || (Flags & ~(unsigned int)HOST_ALLOC_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_map_entry e = {.key = (uint64_t)(uintptr_t)p,
                              .size = bytesize,
                              .aux = c,
                              .kind = CU_HOST_ALLOC,
                              .dev = -1,
                              .flags = Flags};
    pthread_mutex_lock(&cu_g.mem_lock);
    int rc = sim_map_put(&cu_g.hosts, &e);
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (rc < 0) {
        munmap(p, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

CU_API CUresult cuMemFreeHost(void *p)
{
    CU_CHECK_INIT();
    struct sim_map_entry e;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *hit = sim_map_get(&cu_g.hosts, (uint64_t)(uintptr_t)p);
    bool ok = p && hit && hit->kind == CU_HOST_ALLOC;
    if (ok)
        sim_map_del(&cu_g.hosts, (uint64_t)(uintptr_t)p, &e);
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, e.size);
    return CUDA_SUCCESS;
}

CU_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    CUresult r = CUDA_SUCCESS; /* cu_ctx_current() sets it only on failure */
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!p || bytesize == 0 || (Flags & ~(unsigned int)HOST_REGISTER_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_map_entry e = {.key = (uint64_t)(uintptr_t)p,
                              .size = bytesize,
                              .aux = c,
                              .kind = CU_HOST_REGISTERED,
                              .dev = -1,
                              .flags = Flags};
    pthread_mutex_lock(&cu_g.mem_lock);
    if (host_overlaps_locked(e.key, bytesize))
        r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (sim_map_put(&cu_g.hosts, &e) < 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

CU_API CUresult cuMemHostUnregister(void *p)
{
    CU_CHECK_INIT();
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *hit = sim_map_get(&cu_g.hosts, (uint64_t)(uintptr_t)p);
    if (!p || !hit || hit->kind != CU_HOST_REGISTERED)
        r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    else
        sim_map_del(&cu_g.hosts, (uint64_t)(uintptr_t)p, NULL);
    pthread_mutex_unlock(&cu_g.mem_lock);
    return r;
}

CU_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CU_CHECK_INIT();
    if (!pdptr || !p || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    bool ok = host_range_locked((uint64_t)(uintptr_t)p) != NULL;
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
    return CUDA_SUCCESS;
}

/* Flags the memory was allocated or registered with. The driver reports CU_MEMHOSTALLOC_* flags
 * for cuMemHostAlloc memory; registered memory is reported with its registration flags. */
CU_API CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CU_CHECK_INIT();
    if (!pFlags || !p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = host_range_locked((uint64_t)(uintptr_t)p);
    unsigned int f = e ? e->flags : 0;
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = f;
    return CUDA_SUCCESS;
}

uint64_t cu_host_span_locked(uint64_t p)
{
    const struct sim_map_entry *e = host_range_locked(p);
    return e ? e->size - (p - e->key) : 0;
}

void cu_host_free_ctx_locked(const struct sim_ctx *c)
{
    for (size_t i = 0; i < cu_g.hosts.cap;) {
        const struct sim_map_entry *e = &cu_g.hosts.e[i];
        if (e->key && e->aux == c) {
            struct sim_map_entry out;
            sim_map_del(&cu_g.hosts, e->key, &out);
            /* NOLINTNEXTLINE(performance-no-int-to-ptr): the key is the mapping's address */
            void *p = (void *)(uintptr_t)out.key;
            if (out.kind == CU_HOST_ALLOC)
                munmap(p, out.size);
            continue; /* backward-shift deletion: look at slot i again */
        }
        i++;
    }
}
