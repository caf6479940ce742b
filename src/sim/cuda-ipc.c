/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: memory and events shared between processes of one gpusim state (IPC
 * handles), and what a pointer is (cuPointerGetAttribute(s)).
 *
 * A memory handle names the owner (its process slot, pid and start time, so a recycled slot is
 * never mistaken for it) and the allocation's region and offset in the owner's backing file
 * (cuda-copy.c). cuIpcOpenMemHandle maps that file range at a fresh device address of the
 * opener: the opener sees the owner's bytes and writes them; the memory is charged once, to the
 * owner (the opener charges nothing). The handle is refused (CUDA_ERROR_INVALID_VALUE, as for a
 * handle whose memory is gone) when the owner has exited; opening one's own handle is
 * CUDA_ERROR_INVALID_CONTEXT, like the driver.
 *
 * An interprocess event (CU_EVENT_INTERPROCESS) keeps its completion time in a slot of the
 * owner's shared event file `<base>.ev.<slot>.0`; an opened event reads (and records into) the
 * same slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

#define IPC_MAGIC    0x43504947u /* "GIPC" */
#define IPC_EV_SLOTS 4096
#define IPC_EV_BYTES (IPC_EV_SLOTS * sizeof(uint64_t))

struct ipc_mem {
    uint32_t magic;
    int32_t slot;
    uint32_t pid;
    int32_t region;
    uint64_t start_time;
    uint64_t offset;
    uint64_t size;
    int32_t dev;
    uint32_t pad;
    uint64_t base;
};
static_assert(sizeof(struct ipc_mem) <= CU_IPC_HANDLE_SIZE, "IPC memory handle");

struct ipc_event {
    uint32_t magic;
    int32_t slot;
    uint32_t pid;
    uint32_t index;
    uint64_t start_time;
};
static_assert(sizeof(struct ipc_event) <= CU_IPC_HANDLE_SIZE, "IPC event handle");

/* Whether process slot `slot` is live and is the process (pid, start) (shared lock). */
static bool owner_live(int slot, uint32_t pid, uint64_t start)
{
    if (slot < 0 || slot >= SIM_MAX_PROCS)
        return false;
    sim_lock(cu_g.st);
    sim_sweep_locked(cu_g.st, false); /* a process that died (SIGKILL, _exit) is not live */
    const struct sim_proc *p = &cu_g.st->sh->procs[slot];
    bool ok = p->state == SIM_PROC_LIVE && p->pid == pid && p->start_time == start;
    sim_unlock(cu_g.st);
    return ok;
}

static uint64_t my_start_time(void)
{
    int slot = cu_g.st->slot;
    return slot >= 0 ? cu_g.st->sh->procs[slot].start_time : 0;
}

CU_API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult r;
    if (!cu_ctx_current(&r))
        return r;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_mem h = {.magic = IPC_MAGIC};
    r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, dptr);
    int region;
    uint64_t off;
    /* cuMemAlloc / cuMemAllocPitch memory (the driver refuses managed and VMM memory here). */
    if (e && (e->kind == CU_ALLOC_PLAIN || e->kind == CU_ALLOC_PITCH) &&
        cu_region_of(e->key, &region, &off) && cu_backing_fd_locked(region) >= 0) {
        h.slot = cu_g.st->slot;
        h.pid = (uint32_t)getpid();
        h.start_time = my_start_time();
        h.region = region;
        h.offset = off;
        h.size = e->size;
        h.dev = e->dev;
        h.base = e->key;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (r == CUDA_SUCCESS) {
        memset(pHandle, 0, sizeof(*pHandle));
        memcpy(pHandle->reserved, &h, sizeof(h));
    }
    return r;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!pdptr || (Flags & ~(unsigned int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_mem h;
    memcpy(&h, handle.reserved, sizeof(h));
    if (h.magic != IPC_MAGIC || h.region < 0 || h.region > CU_VA_SLOT_LOW || h.dev < 0 ||
        h.dev >= cu_g.st->ndev || h.size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (h.slot == cu_g.st->slot && h.pid == (uint32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT; /* a process cannot open its own handle */
    if (!owner_live(h.slot, h.pid, h.start_time))
        return CUDA_ERROR_INVALID_VALUE;
    char path[PATH_MAX + 64];
    cu_backing_path(path, sizeof(path), h.slot, "mem", h.region);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), start = h.offset - h.offset % ps;
    uint64_t end = gs_sat_add_u64(h.offset, h.size);
    end = gs_sat_add_u64(end, ps - 1);
    end -= end % ps;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || ((uint64_t)sb.st_size < end && ftruncate(fd, (off_t)end) < 0)) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void *m = mmap(NULL, end - start, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
                   (off_t)start);
    close(fd);
    if (m == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_map_entry e = {.size = h.size,
                              .aux = c,
                              .kind = CU_ALLOC_IPC,
                              .dev = h.dev,
                              .flags = Flags,
                              .host = (uint8_t *)m + (h.offset - start)};
    int rc = -EEXIST;
    pthread_mutex_lock(&cu_g.mem_lock);
    for (int tries = 0; tries < 64 && rc == -EEXIST; tries++) {
        e.key = cu_va_alloc_locked(h.dev, h.size, CU_ADDR_ALIGN);
        rc = sim_map_put(&cu_g.allocs, &e);
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (rc < 0) {
        munmap(m, end - start);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pdptr = e.key;
    return CUDA_SUCCESS;
}

CU_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return ipc_open(pdptr, handle, Flags);
}

CU_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return ipc_open(pdptr, handle, Flags);
}

CU_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CUresult r;
    if (!cu_ctx_current(&r))
        return r;
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = sim_map_get(&cu_g.allocs, dptr);
    bool ok = e && e->kind == CU_ALLOC_IPC;
    if (ok)
        cu_alloc_del_locked(dptr, NULL);
    pthread_mutex_unlock(&cu_g.mem_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ events */
static struct {
    pthread_mutex_t lock;
    uint64_t *slots; /* our shared event file, mapped */
    uint32_t used;
    int slot; /* process slot the file is named after */
} evf = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, -1};

void cu_ipc_fork(enum cu_fork_phase phase)
{
    switch (phase) {
    case CU_FORK_PREPARE:
        pthread_mutex_lock(&evf.lock);
        break;
    case CU_FORK_PARENT:
        pthread_mutex_unlock(&evf.lock);
        break;
    case CU_FORK_CHILD:
        /* The child gets a slot (and an event file) of its own at cuInit. */
        pthread_mutex_init(&evf.lock, NULL);
        evf.slots = NULL;
        evf.used = 0;
        evf.slot = -1;
        break;
    }
}

static uint64_t *map_event_file(int slot, bool create)
{
    char path[PATH_MAX + 64];
    cu_backing_path(path, sizeof(path), slot, "ev", 0);
    if (create)
        unlink(path);
    int fd = open(path, create ? O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC : O_RDWR | O_CLOEXEC, 0666);
    if (fd < 0)
        return NULL;
    if (create)
        (void)fchmod(fd, 0666);
    void *m = MAP_FAILED;
    if (!create || ftruncate(fd, (off_t)IPC_EV_BYTES) == 0)
        m = mmap(NULL, IPC_EV_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return m == MAP_FAILED ? NULL : m;
}

uint64_t *cu_ipc_event_slot(void)
{
    uint64_t *p = NULL;
    pthread_mutex_lock(&evf.lock);
    if (evf.slot != cu_g.st->slot) { /* first use, or a forked child */
        evf.slots = map_event_file(cu_g.st->slot, true);
        evf.used = 0;
        evf.slot = cu_g.st->slot;
    }
    if (evf.slots && evf.used < IPC_EV_SLOTS) {
        p = &evf.slots[evf.used++];
        __atomic_store_n(p, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&evf.lock);
    return p;
}

void cu_ipc_exit(void)
{
    pthread_mutex_lock(&evf.lock);
    if (evf.slots && evf.slot >= 0 && evf.slot == cu_g.st->slot) {
        char path[PATH_MAX + 64];
        cu_backing_path(path, sizeof(path), evf.slot, "ev", 0);
        unlink(path);
    }
    pthread_mutex_unlock(&evf.lock);
}

CU_API CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    CU_CHECK_INIT();
    struct sim_event *e = (struct sim_event *)event;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(e, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!(e->flags & CU_EVENT_INTERPROCESS) || !e->ipc_t)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&evf.lock);
    bool own = evf.slots && e->ipc_t >= evf.slots && e->ipc_t < evf.slots + IPC_EV_SLOTS;
    uint32_t index = own ? (uint32_t)(e->ipc_t - evf.slots) : 0;
    pthread_mutex_unlock(&evf.lock);
    if (!own)
        return CUDA_ERROR_INVALID_VALUE; /* an opened event is not re-exported */
    struct ipc_event h = {IPC_MAGIC, cu_g.st->slot, (uint32_t)getpid(), index, my_start_time()};
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &h, sizeof(h));
    return CUDA_SUCCESS;
}

CU_API CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    CUresult r;
    if (!cu_ctx_current(&r))
        return r;
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_event h;
    memcpy(&h, handle.reserved, sizeof(h));
    if (h.magic != IPC_MAGIC || h.index >= IPC_EV_SLOTS)
        return CUDA_ERROR_INVALID_VALUE;
    if (h.slot == cu_g.st->slot && h.pid == (uint32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!owner_live(h.slot, h.pid, h.start_time))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t *m = map_event_file(h.slot, false);
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_event *e = cu_obj_new(CU_OBJ_EVENT, sizeof(*e));
    if (!e) {
        munmap(m, IPC_EV_BYTES);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    e->ipc_t = &m[h.index]; /* the mapping stays for the life of the process */
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ pointer attributes */
enum { MT_HOST = 1, MT_DEVICE = 2 };

struct ptr_info {
    bool found;  /* a gpusim allocation or registered host memory */
    bool device; /* device memory (incl. managed) */
    bool managed;
    bool mapped_host; /* cuMemHostAlloc / cuMemHostRegister */
    int dev;
    uint64_t base, size;
    uint32_t kind;
    struct sim_ctx *ctx;
    uint64_t id;
};

static void ptr_info(uint64_t p, struct ptr_info *o)
{
    memset(o, 0, sizeof(*o));
    pthread_mutex_lock(&cu_g.mem_lock);
    const struct sim_map_entry *e = cu_alloc_find_locked(p);
    if (e) {
        o->found = o->device = true;
        o->managed = e->kind == CU_ALLOC_MANAGED;
        o->dev = e->dev;
        o->base = e->key;
        o->size = e->size;
        o->kind = e->kind;
        o->ctx = (e->kind == CU_ALLOC_PLAIN || e->kind == CU_ALLOC_PITCH ||
                  e->kind == CU_ALLOC_MANAGED || e->kind == CU_ALLOC_IPC)
                     ? e->aux
                     : NULL;
        o->id = e->key;
    } else {
        uint64_t span = cu_host_span_locked(p);
        if (span) {
            o->found = o->mapped_host = true;
            o->dev = -1;
            o->base = p;
            o->size = span;
            o->id = p;
        }
    }
    pthread_mutex_unlock(&cu_g.mem_lock);
}

static int ordinal_of(int dev)
{
    for (int o = 0; o < cu_g.nvis; o++)
        if (cu_g.vis[o] == dev)
            return o;
    return -1;
}

static CUresult attr_get(void *data, CUpointer_attribute a, const struct ptr_info *i, uint64_t p)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *cur = NULL;
    CUresult r;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        if (!i->ctx)
            cur = cu_ctx_current(&r);
        *(CUcontext *)data = (CUcontext)(i->ctx ? i->ctx : cur);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(unsigned int *)data = i->device ? MT_DEVICE : MT_HOST; /* managed: device */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(CUdeviceptr *)data = p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!i->found || (i->device && !i->managed))
            return CUDA_ERROR_INVALID_VALUE; /* device memory has no host address */
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): a device address is a host address here */
        *(void **)data = (void *)(uintptr_t)p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(int *)data = a == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
                           ? 1
                           : (i->kind == CU_ALLOC_PLAIN || i->kind == CU_ALLOC_PITCH);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(unsigned long long *)data = i->id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(int *)data = i->managed;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        if (i->dev >= 0) {
            *(int *)data = ordinal_of(i->dev);
        } else {
            cur = cu_ctx_current(&r);
            *(int *)data = cur ? cur->ordinal : 0;
        }
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(CUdeviceptr *)data = i->base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(size_t *)data = i->size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = i->found;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(int *)data = 3; /* CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(unsigned long long *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        if (!i->found)
            return CUDA_ERROR_INVALID_VALUE;
        if (a == CU_POINTER_ATTRIBUTE_MAPPING_SIZE)
            *(size_t *)data = i->size;
        else
            *(unsigned long long *)data = i->base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return CUDA_ERROR_NOT_SUPPORTED; /* GPUDirect RDMA tokens: no such hardware */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CU_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CU_CHECK_INIT();
    struct ptr_info i;
    ptr_info(ptr, &i);
    return attr_get(data, attribute, &i, ptr);
}

/* Unlike cuPointerGetAttribute, an address gpusim does not know is not an error here: the
 * attributes read as for unregistered host memory (type 0, context NULL...), as documented. */
/* NOLINTNEXTLINE(readability-non-const-parameter): the driver API's own signature */
CU_API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                       void **data, CUdeviceptr ptr)
{
    CU_CHECK_INIT();
    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    struct ptr_info i;
    ptr_info(ptr, &i);
    for (unsigned int k = 0; k < numAttributes; k++) {
        CUpointer_attribute a = attributes[k];
        if (!data[k])
            return CUDA_ERROR_INVALID_VALUE;
        if (!i.found) {
            switch (a) {
            case CU_POINTER_ATTRIBUTE_CONTEXT:
            case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
                *(void **)data[k] = NULL;
                continue;
            case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
            case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
            case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
            case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
                *(unsigned long long *)data[k] = 0;
                continue;
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
                *(int *)data[k] = -2;
                continue;
            default:
                *(int *)data[k] = 0;
                continue;
            }
        }
        CUresult r = attr_get(data[k], a, &i, ptr);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS is settable; copies are synchronous anyway. */
CU_API CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
                                      CUdeviceptr ptr)
{
    CU_CHECK_INIT();
    if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    struct ptr_info i;
    ptr_info(ptr, &i);
    return i.found && i.device ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
