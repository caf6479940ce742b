/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Devices as this process sees them: CUDA ordinal -> UUID (from the driver, so
 * CUDA_VISIBLE_DEVICES re-ordering by index or UUID cannot mis-assign limits) -> limits and the
 * claim's region. And the ONE memory view every query hook reports.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

static struct vgpu_device devices[VGPU_MAX_DEVICES];
static int n_devices;
static int only_device = -1; /* the process sees exactly one device: no context lookup needed */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool devices_done;
atomic_bool vgpu_any_compute_cap;
atomic_bool vgpu_any_tracked;

static void format_uuid(const CUuuid *u, char *buf, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* Dead pids the driver still lists as holding memory (NVML, same pid namespace as ours).
 * -ENOSYS when the driver can never tell (no NVML, or a device answers "not supported" / "no
 * permission": the /proc judgement decides alone, else dead slots would stay forever); -EAGAIN
 * when a listing failed for now (nothing is known to be freed: a later sweep asks again). */
static int driver_holds(const int *pids, bool *holds, int n)
{
    static atomic_bool nvml_init_done;
    if (!vgpu_nvml_ready() || !gs_real_nvml.nvmlDeviceGetCount_v2 ||
        !gs_real_nvml.nvmlDeviceGetHandleByIndex_v2 ||
        !gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3)
        return -ENOSYS;
    if (!atomic_load(&nvml_init_done)) {
        if (!gs_real_nvml.nvmlInit_v2 || gs_real_nvml.nvmlInit_v2() != NVML_SUCCESS)
            return -ENOSYS;
        atomic_store(&nvml_init_done, true);
    }
    unsigned count = 0;
    if (gs_real_nvml.nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return -EAGAIN;
    nvmlProcessInfo_t stack_infos[256];
    for (unsigned i = 0; i < count && i < VGPU_MAX_DEVICES; i++) {
        nvmlDevice_t h;
        if (gs_real_nvml.nvmlDeviceGetHandleByIndex_v2(i, &h) != NVML_SUCCESS)
            return -EAGAIN;
        nvmlProcessInfo_t *infos = stack_infos;
        unsigned k = GS_ARRAY_SIZE(stack_infos);
        nvmlReturn_t r = gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, &k, infos);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE && k > GS_ARRAY_SIZE(stack_infos) && k < 65536) {
            /* more processes than the stack buffer: one retry with room to spare */
            unsigned cap = k + 64;
            infos = calloc(cap, sizeof(*infos));
            if (!infos)
                return -EAGAIN;
            k = cap;
            r = gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, &k, infos);
            if (k > cap)
                k = cap;
        }
        if (r == NVML_SUCCESS)
            for (unsigned j = 0; j < k; j++)
                for (int p = 0; p < n; p++)
                    if ((int)infos[j].pid == pids[p])
                        holds[p] = true;
        if (infos != stack_infos)
            free(infos);
        if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION)
            return -ENOSYS;
        if (r != NVML_SUCCESS)
            return -EAGAIN;
    }
    return 0;
}

/* After fork the child owns no GPU memory (CUDA contexts do not survive fork): it starts with an
 * empty table and claims its own region slot on its first allocation. */
static void atfork_child(void)
{
    for (int i = 0; i < VGPU_MAX_DEVICES; i++)
        atomic_store(&devices[i].credit, 0); /* the parent's, in the parent's region slot */
    /* Every lock of libvgpu (the limiter resets its own): a thread of the parent may have held
     * any of them at the fork, several across a driver call. */
    vgpu_region_atfork_child();
    vgpu_table_reset();
    vgpu_ctx_atfork_child();
    vgpu_pools_atfork_child();
    vgpu_graphs_atfork_child();
    vgpu_vmm_atfork_child();
    vgpu_nvml_atfork_child();
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    devices_lock = fresh;
}

static void setup(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
    vgpu_config_load();
    vgpu_region_set_driver_check(driver_holds);
}

/* Devices are discovered once the application has initialised the driver: libvgpu never calls
 * cuInit itself (before the application's cuInit every call returns the driver's own
 * CUDA_ERROR_NOT_INITIALIZED). Returns false while the driver is not initialised (try again on
 * a later call). */
static bool discover(void)
{
    if (!vgpu_cuda_ready())
        return true; /* no driver at all: nothing will ever be tracked */
    int count = 0;
    if (!gs_real_cu.cuDeviceGetCount)
        return true;
    CUresult cr = gs_real_cu.cuDeviceGetCount(&count);
    if (cr == CUDA_ERROR_NOT_INITIALIZED)
        return false;
    if (cr != CUDA_SUCCESS)
        return true;
    if (count > VGPU_MAX_DEVICES)
        count = VGPU_MAX_DEVICES;
    bool any_cap = false, any_tracked = false;
    for (int i = 0; i < count; i++) {
        CUdevice dev = i;
        if (gs_real_cu.cuDeviceGet && gs_real_cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        if (dev < 0 || dev >= VGPU_MAX_DEVICES) {
            VLOG(VGPU_LOG_WARN, "device ordinal %d has handle %d beyond the table; not tracked", i,
                 dev);
            continue;
        }
        struct vgpu_device *d = &devices[dev];
        CUuuid u;
        CUresult r = CUDA_ERROR_NOT_FOUND;
        if (gs_real_cu.cuDeviceGetUuid_v2)
            r = gs_real_cu.cuDeviceGetUuid_v2(&u, dev);
        if (r != CUDA_SUCCESS && gs_real_cu.cuDeviceGetUuid)
            r = gs_real_cu.cuDeviceGetUuid(&u, dev);
        if (r != CUDA_SUCCESS)
            d->uuid[0] = '\0';
        else
            format_uuid(&u, d->uuid, sizeof(d->uuid));
        d->cu_dev = dev;
        d->ordinal = i;
        vgpu_config_for(i, d->uuid[0] ? d->uuid : NULL, &d->cfg);
        size_t total = 0;
        if (gs_real_cu.cuDeviceTotalMem_v2 &&
            gs_real_cu.cuDeviceTotalMem_v2(&total, dev) == CUDA_SUCCESS)
            d->physical_total = total;
        d->slot = -1;
        /* at most 1/256 of the limit (16 MiB) parked as credit; none under 64 MiB limits */
        d->credit_max = d->cfg.memory_limit >= (64ULL << 20)
                            ? GS_MIN(d->cfg.memory_limit / 256, 16ULL << 20)
                            : 0;
        if (d->cfg.memory_limit || d->cfg.region_path[0]) {
            d->region = d->cfg.region_prepared ? vgpu_region_open_prepared(d->cfg.region_path)
                                               : vgpu_region_open(d->cfg.region_path);
            if (d->region)
                d->slot = vgpu_region_device(d->region, d->uuid, d->cfg.memory_limit, d->cfg.cores);
            if (d->slot < 0) {
                /* Fail closed: the claim's region cannot be used for this device (unmappable,
                 * its lock broken, or no device slot left): every allocation on it is refused. */
                VLOG(VGPU_LOG_ERROR,
                     "device %s: no usable slot in region \"%s\"; allocations on it are refused",
                     d->uuid, d->cfg.region_path[0] ? d->cfg.region_path : "(process)");
                d->region = vgpu_region_refusing();
                d->slot = -1;
            }
            if (d->region && d->cfg.region_path[0])
                vgpu_region_sweep(d->region, VGPU_SWEEP_FORCE); /* what dead processes held */
            vgpu_ctx_baseline(d); /* before this process has a context on it */
            any_tracked = true;
        }
        if (d->cfg.cores)
            any_cap = true;
        d->present = true;
        n_devices = GS_MAX(n_devices, dev + 1);
        VLOG(VGPU_LOG_INFO, "device %d %s: memory limit %llu, cores %u, region %s", i, d->uuid,
             (unsigned long long)d->cfg.memory_limit, d->cfg.cores,
             d->cfg.region_path[0] ? d->cfg.region_path : "(process)");
    }
    int seen = 0;
    for (int i = 0; i < n_devices; i++)
        if (devices[i].present) {
            seen++;
            only_device = i;
        }
    if (seen != 1 || count != 1)
        only_device = -1;
    atomic_store(&vgpu_any_compute_cap, any_cap);
    atomic_store(&vgpu_any_tracked, any_tracked);
    return true;
}

void vgpu_devices_init(void)
{
    if (GS_LIKELY(atomic_load_explicit(&devices_done, memory_order_acquire)))
        return;
    if (vgpu_depth)
        return; /* nested inside a driver call or inside discovery itself */
    pthread_once(&setup_once, setup);
    /* Driver calls made while discovering must not re-enter discovery through our hooks. */
    vgpu_depth++;
    pthread_mutex_lock(&devices_lock);
    if (!atomic_load(&devices_done) && discover())
        atomic_store_explicit(&devices_done, true, memory_order_release);
    pthread_mutex_unlock(&devices_lock);
    vgpu_depth--;
}

bool vgpu_devices_ready(void)
{
    return atomic_load_explicit(&devices_done, memory_order_acquire);
}

struct vgpu_device *vgpu_device_of(CUdevice dev)
{
    vgpu_devices_init();
    if (dev < 0 || dev >= n_devices || !devices[dev].present)
        return NULL;
    return &devices[dev];
}

struct vgpu_device *vgpu_device_current(void)
{
    return vgpu_device_current_ctx(NULL, NULL);
}

struct vgpu_device *vgpu_device_current_ctx(void **ctx_out, uint32_t *ctx_id)
{
    /* The current context is looked at first: this may be the first libvgpu sees of it (the
     * CUDA runtime retains the primary context out of sight), and its overhead is charged
     * before anything is allocated in it. */
    struct vgpu_device *d = NULL;
    void *ctx = vgpu_ctx_current(&d, ctx_id);
    if (ctx_out)
        *ctx_out = ctx;
    /* One visible device (the usual container): every context is on it. If there is no current
     * context the driver call that follows fails and the charge is rolled back. */
    if (only_device >= 0)
        return &devices[only_device];
    if (ctx && d)
        return d;
    return vgpu_device_current_strict();
}

struct vgpu_device *vgpu_device_only(void)
{
    return only_device >= 0 ? &devices[only_device] : NULL;
}

struct vgpu_device *vgpu_device_current_strict(void)
{
    CUdevice dev;
    if (!gs_real_cu.cuCtxGetDevice || gs_real_cu.cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        return NULL;
    return vgpu_device_of(dev);
}

struct vgpu_device *vgpu_device_by_uuid(const char *uuid)
{
    vgpu_devices_init();
    for (int i = 0; i < n_devices; i++)
        if (devices[i].present && strcmp(devices[i].uuid, uuid) == 0)
            return &devices[i];
    return NULL;
}

int vgpu_device_index(const struct vgpu_device *d)
{
    return (int)(d - devices);
}

struct vgpu_device *vgpu_device_at(int index)
{
    if (index < 0 || index >= VGPU_MAX_DEVICES || !devices[index].present)
        return NULL;
    return &devices[index];
}

void vgpu_memory_view(const struct vgpu_device *d, uint64_t phys_total, uint64_t phys_free,
                      struct vgpu_mem_view *v)
{
    uint64_t phys = phys_total ? phys_total : d->physical_total;
    uint64_t total =
        d->cfg.memory_limit ? GS_MIN(d->cfg.memory_limit, phys ? phys : UINT64_MAX) : phys;
    uint64_t used = d->region ? vgpu_region_used(d->region, d->slot) : 0;
    /* this process's credit is charged but free to it */
    used = gs_sat_sub_u64(used, atomic_load_explicit(&d->credit, memory_order_relaxed));
    if (used > total)
        used = total;
    v->total = total;
    v->used = used;
    /* What the slice still allows, but never more than the device really has free (another
     * process outside the claim may hold most of it). */
    v->free = GS_MIN(total - used, phys_free);
}

/* ------------------------------------------------------------------ views without CUDA */

/* NVML-only processes (nvidia-smi, monitoring agents) must not initialise CUDA: their views
 * come from the limits and the claim's region, found by UUID. */
static struct vgpu_device view_devices[VGPU_MAX_DEVICES];
static int n_view_devices;

/* CUDA ordinal of the GPU at NVML index `index` with `uuid`, as CUDA_VISIBLE_DEVICES orders
 * them (entries by index or by UUID prefix); -1 when CUDA would not see it. Without
 * CUDA_VISIBLE_DEVICES the two orders are taken to agree. */
static int view_ordinal(int index, const char *uuid)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd)
        return index;
    int ord = 0;
    for (const char *p = cvd; *p; ord++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char entry[GS_LIMITS_UUID_MAX];
        if (len > 0 && len < sizeof(entry)) {
            memcpy(entry, p, len);
            entry[len] = '\0';
            char *num_end = NULL;
            long n = strtol(entry, &num_end, 10);
            if (num_end && *num_end == '\0' && num_end != entry) {
                if (n == index)
                    return ord;
            } else if (strncmp(entry, "GPU-", 4) == 0 && strncmp(uuid, entry, len) == 0) {
                return ord;
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    return -1;
}

struct vgpu_device *vgpu_device_for_view(const char *uuid, int nvml_index)
{
    if (atomic_load_explicit(&devices_done, memory_order_acquire))
        return vgpu_device_by_uuid(uuid); /* the process uses CUDA: its own devices */
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&devices_lock);
    struct vgpu_device *d = NULL;
    for (int i = 0; i < n_view_devices && !d; i++)
        if (strcmp(view_devices[i].uuid, uuid) == 0)
            d = &view_devices[i];
    if (!d && n_view_devices < VGPU_MAX_DEVICES) {
        d = &view_devices[n_view_devices++];
        snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
        d->ordinal = view_ordinal(nvml_index, uuid);
        d->cu_dev = -1;
        d->slot = -1;
        vgpu_config_for(d->ordinal, uuid, &d->cfg);
        if (d->cfg.memory_limit || d->cfg.region_path[0]) {
            /* an unshared (process-local) region would show nothing: only a claim's region */
            d->region = !d->cfg.region_path[0]   ? NULL
                        : d->cfg.region_prepared ? vgpu_region_open_prepared(d->cfg.region_path)
                                                 : vgpu_region_open(d->cfg.region_path);
            if (d->region)
                d->slot = vgpu_region_device(d->region, d->uuid, d->cfg.memory_limit, d->cfg.cores);
            if (d->slot < 0)
                d->region = NULL;
            else
                vgpu_region_sweep(d->region, VGPU_SWEEP_FORCE);
        }
        d->present = true;
    }
    pthread_mutex_unlock(&devices_lock);
    return d;
}

/* Take size bytes of d's credit; false when there is not that much. */
static inline bool credit_take(struct vgpu_device *d, uint64_t size)
{
    uint64_t c = atomic_load_explicit(&d->credit, memory_order_relaxed);
    while (c >= size)
        if (atomic_compare_exchange_weak_explicit(&d->credit, &c, c - size, memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    return false;
}

/* Give all of d's credit back to the region. */
static void credit_flush(struct vgpu_device *d)
{
    uint64_t c = atomic_exchange_explicit(&d->credit, 0, memory_order_relaxed);
    if (c)
        vgpu_region_release(d->region, d->slot, c);
}

int vgpu_charge(struct vgpu_device *d, uint64_t size)
{
    if (!d || !d->region)
        return 0;
    if (GS_LIKELY(size && credit_take(d, size) && !vgpu_region_refuses(d->region)))
        return 0; /* already charged in our slot: no lock */
    static __attribute__((tls_model("initial-exec"))) _Thread_local unsigned calls;
    if (GS_UNLIKELY((++calls & 1023) == 0))
        vgpu_region_sweep(d->region, VGPU_SWEEP_PERIODIC); /* rate-limited inside */
    int r = vgpu_region_reserve(d->region, d->slot, size, d->cfg.memory_limit);
    if (r == -ENOMEM && atomic_load_explicit(&d->credit, memory_order_relaxed)) {
        /* at the limit: what we parked counts as free for us */
        credit_flush(d);
        r = vgpu_region_reserve(d->region, d->slot, size, d->cfg.memory_limit);
    }
    if (r == -ENOMEM || r == -ENOSPC) {
        /* At the limit: reclaim what dead processes still hold, then try once more. */
        if (vgpu_region_sweep(d->region, VGPU_SWEEP_OOM) > 0)
            r = vgpu_region_reserve(d->region, d->slot, size, d->cfg.memory_limit);
    }
    if (r < 0) {
        atomic_fetch_add(&vgpu_region_dev(d->region, d->slot)->oom_count, 1);
        VLOG(VGPU_LOG_INFO, "device %s: %llu bytes refused (used %llu of %llu)%s", d->uuid,
             (unsigned long long)size, (unsigned long long)vgpu_region_used(d->region, d->slot),
             (unsigned long long)d->cfg.memory_limit,
             r == -ENOSPC ? ": no free process slot in the region" : "");
        return -ENOMEM;
    }
    return 0;
}

void vgpu_uncharge(struct vgpu_device *d, uint64_t size)
{
    if (!d || !d->region || !size)
        return;
    if (GS_UNLIKELY(vgpu_region_refuses(d->region)))
        return; /* a region that refuses takes nothing back (the charge stays) */
    uint64_t c = atomic_load_explicit(&d->credit, memory_order_relaxed);
    for (;;) {
        if (size <= d->credit_max && c <= d->credit_max - size) {
            if (atomic_compare_exchange_weak_explicit(&d->credit, &c, c + size,
                                                      memory_order_relaxed, memory_order_relaxed))
                return; /* parked: still charged in our slot, free to our next allocation */
            continue;
        }
        /* full: give back all but half the cap in one region update (many frees, one lock) */
        uint64_t keep = GS_MIN(c, d->credit_max / 2);
        if (atomic_compare_exchange_weak_explicit(&d->credit, &c, keep, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            vgpu_region_release(d->region, d->slot, gs_sat_add_u64(c - keep, size));
            return;
        }
    }
}

/* Normal exit: parked credit goes back first, so that a slot with nothing else charged is freed
 * at once (region.c's destructor runs after this one). */
__attribute__((destructor)) static void credit_at_exit(void)
{
    for (int i = 0; i < n_devices; i++)
        if (devices[i].present && devices[i].region && !vgpu_region_refuses(devices[i].region))
            credit_flush(&devices[i]);
}
