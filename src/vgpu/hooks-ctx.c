/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contexts (docs/internals/vgpu.md, "Contexts"): a context owns device memory — its own overhead
 * and every allocation made while it was current — and the driver frees all of it when the
 * context goes (cuCtxDestroy, cuDevicePrimaryCtxReset, the last cuDevicePrimaryCtxRelease).
 *
 *  - Per-context state is created lazily by whatever call first shows a context: its creation
 *    (cuCtxCreate*, a visible cuDevicePrimaryCtxRetain) or its first sight (cuCtxSetCurrent,
 *    cuCtxPushCurrent, cuCtxGetCurrent, an allocation or launch). The CUDA runtime retains the
 *    primary context through a private interface, so the first thing libvgpu sees of it is
 *    usually cuCtxSetCurrent(primary).
 *  - Each context is charged a FIXED amount of overhead, per device: the larger of
 *    GPUSLICE_CONTEXT_OVERHEAD (bytes) and the amount probed ONCE per process, at its first
 *    context on the device, while the process holds nothing else on it (no other frees can make
 *    the probe read low). The same amount goes back when the context goes; a concurrent free can
 *    never make a context cheaper or give back overhead twice.
 *  - When a context goes, every allocation recorded with it is given back (the driver freed it).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "vgpu/limiter.h"
#include "vgpu/vgpu-internal.h"

struct ctx_state {
    void *ctx;
    int dev;          /* vgpu device index */
    uint32_t id;      /* this context's identity (the handle may be handed out again) */
    uint64_t charged; /* overhead charged for it (with what its limits take, below) */
    uint64_t limit_charged[CU_LIMIT_MALLOC_HEAP_SIZE + 1]; /* of that, per cuCtxSetLimit limit */
};

static struct ctx_state *ctxs;
static size_t n_ctxs, cap_ctxs;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped whenever a context is forgotten: a thread's cached "already seen" is then re-checked
 * (a handle may be reused by a later context). */
static atomic_uint ctx_gen = 1;
static __attribute__((tls_model("initial-exec"))) _Thread_local void *tl_ctx;
static __attribute__((tls_model("initial-exec"))) _Thread_local unsigned tl_gen;
static __attribute__((tls_model("initial-exec"))) _Thread_local int tl_dev;
static __attribute__((tls_model("initial-exec"))) _Thread_local uint32_t tl_id;
/* Context identities: never 0 (0 = none known). */
static atomic_uint next_id = 1;

static uint32_t new_id(void)
{
    uint32_t id;
    do
        id = atomic_fetch_add(&next_id, 1);
    while (GS_UNLIKELY(id == 0));
    return id;
}

/* Per-device overhead amount, probed once (serialised by probe_lock). */
static struct {
    atomic_bool known;
    uint64_t bytes;
} overhead[VGPU_MAX_DEVICES];
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

#define NEED(name)                                                                                 \
    do {                                                                                           \
        if (GS_UNLIKELY(!gs_real_cu.name) &&                                                       \
            (vgpu_depth || !vgpu_cuda_ready() || !gs_real_cu.name))                                \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

#define CALL_REAL(res, name, ...)                                                                  \
    do {                                                                                           \
        vgpu_depth++;                                                                              \
        res = gs_real_cu.name(__VA_ARGS__);                                                        \
        vgpu_depth--;                                                                              \
    } while (0)

/* ------------------------------------------------------------------ driver usage (NVML) */

/* Processes the driver listed on each device before this process had a context there (taken
 * once the driver is initialised): in another pid namespace the driver lists this process under
 * a pid it cannot recognise, but as a NEW entry. */
#define BASELINE_MAX 256
static struct {
    bool taken;
    unsigned n;
    unsigned pids[BASELINE_MAX];
} baseline[VGPU_MAX_DEVICES];

static bool nvml_list(const struct vgpu_device *d, nvmlProcessInfo_t *infos, unsigned *n)
{
    static atomic_bool nvml_init;
    if (!vgpu_nvml_ready() || !gs_real_nvml.nvmlDeviceGetHandleByUUID ||
        !gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3)
        return false;
    if (!atomic_load(&nvml_init)) {
        if (!gs_real_nvml.nvmlInit_v2 || gs_real_nvml.nvmlInit_v2() != NVML_SUCCESS)
            return false;
        atomic_store(&nvml_init, true);
    }
    nvmlDevice_t h;
    if (gs_real_nvml.nvmlDeviceGetHandleByUUID(d->uuid, &h) != NVML_SUCCESS)
        return false;
    unsigned cap = *n;
    if (gs_real_nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, n, infos) != NVML_SUCCESS)
        return false;
    *n = GS_MIN(*n, cap);
    return true;
}

void vgpu_ctx_baseline(const struct vgpu_device *d)
{
    int idx = vgpu_device_index(d);
    nvmlProcessInfo_t infos[BASELINE_MAX];
    unsigned n = GS_ARRAY_SIZE(infos);
    if (idx < 0 || idx >= VGPU_MAX_DEVICES || !nvml_list(d, infos, &n))
        return;
    for (unsigned i = 0; i < n; i++)
        baseline[idx].pids[i] = infos[i].pid;
    baseline[idx].n = n;
    baseline[idx].taken = true;
}

/* This process's usage of device d as the driver reports it; false when it cannot be told.
 * Listed under our own pid: that entry. Otherwise (another pid namespace) the entries that
 * appeared since the baseline are this process and any other that started since: the smallest
 * of them (every new process holds at least its own context) — 0 when none appeared. */
static bool pid_usage(const struct vgpu_device *d, uint64_t *used)
{
    int idx = vgpu_device_index(d);
    nvmlProcessInfo_t infos[256];
    unsigned n = GS_ARRAY_SIZE(infos);
    if (!nvml_list(d, infos, &n))
        return false;
    unsigned pid = (unsigned)getpid();
    for (unsigned i = 0; i < n; i++) {
        if (infos[i].pid == pid) {
            *used = infos[i].usedGpuMemory;
            return true;
        }
    }
    if (!baseline[idx].taken)
        return false; /* not listed, nothing to compare with */
    bool any = false;
    uint64_t least = 0;
    for (unsigned i = 0; i < n; i++) {
        bool old = false;
        for (unsigned k = 0; k < baseline[idx].n && !old; k++)
            old = baseline[idx].pids[k] == infos[i].pid;
        if (old)
            continue;
        least = any ? GS_MIN(least, infos[i].usedGpuMemory) : infos[i].usedGpuMemory;
        any = true;
    }
    *used = least;
    return true;
}

/* ------------------------------------------------------------------ per-context state */

static struct ctx_state *find_locked(const void *ctx)
{
    for (size_t i = 0; i < n_ctxs; i++)
        if (ctxs[i].ctx == ctx)
            return &ctxs[i];
    return NULL;
}

static bool device_has_context_locked(int dev)
{
    for (size_t i = 0; i < n_ctxs; i++)
        if (ctxs[i].dev == dev)
            return true;
    return false;
}

/* Room for one more state (ctx_lock held). */
static bool remember_slot_locked(void)
{
    if (n_ctxs == cap_ctxs) {
        size_t ncap = cap_ctxs ? cap_ctxs * 2 : 16;
        struct ctx_state *n = realloc(ctxs, ncap * sizeof(*n));
        if (!n)
            return false;
        ctxs = n;
        cap_ctxs = ncap;
    }
    return true;
}

/* Remember ctx with its charge under a new identity (*id_out). `created`: the driver has just
 * created it, so a state still held for the same handle belongs to a destroyed context whose
 * destruction is being booked by another thread: it is replaced (its overhead goes back now; its
 * allocations keep their identity and go back with that booking). Otherwise (first sight) false
 * when it is already known (the caller gives its own charge back; *id_out is the known one).
 * No memory for the state: true, the charge stays (fail closed) and *id_out is 0. */
static bool remember(void *ctx, int dev, uint64_t charged, bool created, uint32_t *id_out)
{
    bool added = false;
    uint64_t stale_charge = 0;
    int stale_dev = -1;
    uint32_t id = 0;
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *s = find_locked(ctx);
    if (s && created) {
        stale_charge = s->charged;
        stale_dev = s->dev;
        *s = ctxs[--n_ctxs];
        s = NULL;
    }
    if (!s) {
        if (remember_slot_locked()) {
            id = new_id();
            ctxs[n_ctxs++] =
                (struct ctx_state){.ctx = ctx, .dev = dev, .id = id, .charged = charged};
        } else {
            VLOG(VGPU_LOG_ERROR, "context %p: no memory to track it; its overhead stays charged",
                 ctx);
        }
        added = true; /* without memory the charge is kept (never given back): fail closed */
    } else {
        id = s->id;
    }
    pthread_mutex_unlock(&ctx_lock);
    if (stale_dev >= 0) {
        atomic_fetch_add(&ctx_gen, 1);
        vgpu_uncharge(vgpu_device_at(stale_dev), stale_charge);
    }
    if (id_out)
        *id_out = id;
    return added;
}

uint32_t vgpu_ctx_id(const void *ctx)
{
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *s = find_locked(ctx);
    uint32_t id = s ? s->id : 0;
    pthread_mutex_unlock(&ctx_lock);
    return id;
}

/* The overhead amount of device d, probing it now if unknown: `usage_before` is this process's
 * driver usage before the context came into being (UINT64_MAX: the context already existed,
 * e.g. retained out of sight, so its whole usage now is the overhead). Called with probe_lock
 * held while the amount is unknown. */
static uint64_t probe(const struct vgpu_device *d, uint64_t usage_before, bool before_ok)
{
    int idx = vgpu_device_index(d);
    uint64_t cfg = vgpu_config_context_overhead();
    uint64_t now = 0, amount = 0;
    bool ok = pid_usage(d, &now);
    if (ok && usage_before == UINT64_MAX)
        amount = now;
    else if (ok && before_ok && now > usage_before)
        amount = now - usage_before;
    else if (!ok)
        VLOG(VGPU_LOG_WARN,
             "device %s: this process's usage cannot be told from the driver's list; context "
             "overhead charged is GPUSLICE_CONTEXT_OVERHEAD (%llu bytes)",
             d->uuid, (unsigned long long)cfg);
    overhead[idx].bytes = GS_MAX(amount, cfg);
    atomic_store(&overhead[idx].known, true);
    VLOG(VGPU_LOG_INFO, "device %s: context overhead %llu bytes per context (probed %llu)", d->uuid,
         (unsigned long long)overhead[idx].bytes, (unsigned long long)amount);
    return overhead[idx].bytes;
}

/* A context we did not see being created (first sight): remember it and charge its overhead.
 * It already holds its memory, so the charge is recorded even past the limit (the region must
 * tell the truth; the next allocation is then refused). */
static uint32_t sighted(void *ctx, struct vgpu_device *d)
{
    int idx = vgpu_device_index(d);
    uint32_t id = vgpu_ctx_id(ctx);
    if (id)
        return id;
    uint64_t amount;
    if (!atomic_load(&overhead[idx].known)) {
        pthread_mutex_lock(&probe_lock);
        if (!atomic_load(&overhead[idx].known)) {
            pthread_mutex_lock(&ctx_lock);
            bool first = !device_has_context_locked(idx);
            pthread_mutex_unlock(&ctx_lock);
            /* first context of this process on d: everything the driver holds for us is it */
            amount = first ? probe(d, UINT64_MAX, true) : probe(d, 0, false);
        } else {
            amount = overhead[idx].bytes;
        }
        pthread_mutex_unlock(&probe_lock);
    } else {
        amount = overhead[idx].bytes;
    }
    if (amount && vgpu_charge(d, amount) < 0) {
        vgpu_region_reserve(d->region, d->slot, amount, 0);
        VLOG(VGPU_LOG_WARN,
             "device %s: context %p created out of sight does not fit the limit; its %llu bytes "
             "are charged anyway",
             d->uuid, ctx, (unsigned long long)amount);
    }
    if (!remember(ctx, idx, amount, false, &id))
        vgpu_uncharge(d, amount); /* another thread saw it first */
    return id;
}

struct drain {
    void *ctx;
    uint32_t id;
};

static bool owned_by(const struct vgpu_alloc *a, void *arg)
{
    /* VMM handles (and their mappings) and stream-ordered pool memory belong to no context:
     * the driver keeps them past the context's end. Only this context's allocations: another
     * context may already have been given the same handle. */
    const struct drain *dr = arg;
    return a->ctx == dr->ctx && a->ctx_id == dr->id && !a->pool &&
           (a->kind == VGPU_KIND_DPTR || a->kind == VGPU_KIND_ARRAY || a->kind == VGPU_KIND_MIPMAP);
}

static void give_back(const struct vgpu_alloc *a, void *arg)
{
    (void)arg;
    vgpu_alloc_uncharge(a);
}

/* Take ctx's state out of the table (before the driver is asked to end it: from then on a
 * context the driver creates with the same handle is a new one). False when it had none. */
static bool detach(void *ctx, struct ctx_state *out)
{
    bool had = false;
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *s = find_locked(ctx);
    if (s) {
        *out = *s;
        *s = ctxs[--n_ctxs];
        had = true;
    }
    pthread_mutex_unlock(&ctx_lock);
    atomic_fetch_add(&ctx_gen, 1);
    return had;
}

/* The driver did not end it: the state goes back. If the context was seen again meanwhile (a
 * new state, charged anew), that one stays: ours gives its overhead back and its allocations
 * take the new identity. */
static void reattach(const struct ctx_state *st)
{
    uint32_t now = 0;
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *s = find_locked(st->ctx);
    if (s)
        now = s->id;
    else if (remember_slot_locked())
        ctxs[n_ctxs++] = *st;
    else
        now = UINT32_MAX; /* no memory: the charge stays, nothing is given back */
    pthread_mutex_unlock(&ctx_lock);
    if (now && now != UINT32_MAX) {
        vgpu_uncharge(vgpu_device_at(st->dev), st->charged);
        vgpu_table_retag_ctx(st->ctx, st->id, now);
    }
    atomic_fetch_add(&ctx_gen, 1);
}

/* The context (state st, or none) is gone: the driver freed its memory. Its overhead and the
 * allocations recorded with its identity come back. */
static void gone(void *ctx, const struct ctx_state *st)
{
    vgpu_limiter_ctx_gone(ctx); /* its events went with it */
    if (!st)
        return;
    vgpu_uncharge(vgpu_device_at(st->dev), st->charged);
    struct drain dr = {.ctx = ctx, .id = st->id};
    size_t n = vgpu_table_remove_if(owned_by, give_back, &dr);
    VLOG(VGPU_LOG_DEBUG, "context %p gone: %llu bytes of overhead and %zu allocations given back",
         ctx, (unsigned long long)st->charged, n);
}

/* ctx with identity id is gone (ended by a call that could not be told in advance to end it: the
 * last primary release). Only that identity: a newer context with the handle is untouched. */
static void forget_id(void *ctx, uint32_t id)
{
    if (!ctx || !id)
        return;
    struct ctx_state st = {0};
    bool had = false;
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *s = find_locked(ctx);
    if (s && s->id == id) {
        st = *s;
        *s = ctxs[--n_ctxs];
        had = true;
    }
    pthread_mutex_unlock(&ctx_lock);
    atomic_fetch_add(&ctx_gen, 1);
    if (had) {
        gone(ctx, &st);
    } else {
        struct ctx_state only = {.ctx = ctx, .dev = -1, .id = id};
        gone(ctx, &only); /* its allocations (its state was replaced by a newer context) */
    }
}

static bool ctx_tracking(void)
{
    if (vgpu_depth)
        return false;
    vgpu_devices_init();
    return atomic_load_explicit(&vgpu_any_tracked, memory_order_relaxed);
}

static struct vgpu_device *tracked_dev(CUdevice dev)
{
    struct vgpu_device *d = vgpu_device_of(dev);
    return d && d->region ? d : NULL;
}

/* c is the calling thread's current context: first sight creates its state (cheap when this
 * thread saw it last and no context went since). */
static void *seen(CUcontext c, struct vgpu_device **dev_out, uint32_t *id_out)
{
    if (dev_out)
        *dev_out = NULL;
    if (id_out)
        *id_out = 0;
    if (!c)
        return NULL;
    unsigned gen = atomic_load_explicit(&ctx_gen, memory_order_acquire);
    if (GS_LIKELY(c == tl_ctx && gen == tl_gen)) {
        if (dev_out)
            *dev_out = vgpu_device_at(tl_dev);
        if (id_out)
            *id_out = tl_id;
        return c;
    }
    CUdevice dev;
    if (!gs_real_cu.cuCtxGetDevice)
        return c;
    CUresult r;
    CALL_REAL(r, cuCtxGetDevice, &dev);
    if (r != CUDA_SUCCESS)
        return c; /* destroyed or unusable: the driver's own error follows */
    struct vgpu_device *d = vgpu_device_of(dev);
    uint32_t id = 0;
    if (d && d->region)
        id = sighted(c, d);
    tl_ctx = c;
    tl_gen = gen;
    tl_dev = d ? vgpu_device_index(d) : -1;
    tl_id = id;
    if (dev_out)
        *dev_out = d;
    if (id_out)
        *id_out = id;
    return c;
}

void *vgpu_ctx_current(struct vgpu_device **dev_out, uint32_t *id_out)
{
    if (dev_out)
        *dev_out = NULL;
    if (id_out)
        *id_out = 0;
    if (vgpu_depth || !gs_real_cu.cuCtxGetCurrent)
        return NULL;
    CUcontext c = NULL;
    CUresult r;
    CALL_REAL(r, cuCtxGetCurrent, &c);
    if (r != CUDA_SUCCESS)
        return NULL;
    return seen(c, dev_out, id_out);
}

struct vgpu_device *vgpu_ctx_device(void *ctx)
{
    if (!ctx || vgpu_depth)
        return NULL;
    unsigned gen = atomic_load_explicit(&ctx_gen, memory_order_acquire);
    if (ctx == tl_ctx && gen == tl_gen)
        return vgpu_device_at(tl_dev);
    int idx = -1;
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *st = find_locked(ctx);
    if (st)
        idx = st->dev;
    pthread_mutex_unlock(&ctx_lock);
    if (idx >= 0)
        return vgpu_device_at(idx);
    /* not seen yet (or on an untracked device): make it current for a moment to ask */
    if (!gs_real_cu.cuCtxPushCurrent_v2 || !gs_real_cu.cuCtxPopCurrent_v2 ||
        !gs_real_cu.cuCtxGetDevice)
        return NULL;
    CUresult r;
    CUdevice dev = -1;
    CALL_REAL(r, cuCtxPushCurrent_v2, (CUcontext)ctx);
    if (r != CUDA_SUCCESS)
        return NULL;
    CALL_REAL(r, cuCtxGetDevice, &dev);
    CUcontext popped;
    CUresult rp;
    CALL_REAL(rp, cuCtxPopCurrent_v2, &popped);
    (void)rp;
    if (r != CUDA_SUCCESS)
        return NULL;
    struct vgpu_device *d = vgpu_device_of(dev);
    if (d && d->region)
        sighted(ctx, d);
    return d;
}

size_t vgpu_ctx_count(void)
{
    pthread_mutex_lock(&ctx_lock);
    size_t n = n_ctxs;
    pthread_mutex_unlock(&ctx_lock);
    return n;
}

void vgpu_ctx_atfork_child(void)
{
    /* contexts do not survive fork */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    ctx_lock = fresh;
    probe_lock = fresh; /* another thread may have held them at fork() */
    n_ctxs = 0;
    atomic_fetch_add(&ctx_gen, 1);
}

/* ------------------------------------------------------------------ creation */

/* The context-creating driver call, with the per-context charge around it: reserved before the
 * call when the amount is known, else probed across the first creation on the device. Returns
 * the created context through *out. */
typedef CUresult (*create_fn)(void *arg, CUcontext *out);

static CUresult charged_create(struct vgpu_device *d, create_fn create, void *arg, CUcontext *out,
                               void (*undo)(void *arg, CUcontext c))
{
    int idx = vgpu_device_index(d);
    CUresult r;
    if (atomic_load(&overhead[idx].known)) {
        uint64_t amount = overhead[idx].bytes;
        if (amount && vgpu_charge(d, amount) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        vgpu_depth++;
        r = create(arg, out);
        vgpu_depth--;
        if (r != CUDA_SUCCESS || !remember(*out, idx, amount, true, NULL))
            vgpu_uncharge(d, amount);
        return r;
    }
    /* First context of this process on d: measure what it costs, with nothing else of ours on
     * the device that a concurrent free could shrink. */
    pthread_mutex_lock(&probe_lock);
    if (atomic_load(&overhead[idx].known)) {
        pthread_mutex_unlock(&probe_lock);
        return charged_create(d, create, arg, out, undo);
    }
    uint64_t before = 0;
    bool before_ok = pid_usage(d, &before);
    vgpu_depth++;
    r = create(arg, out);
    vgpu_depth--;
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&probe_lock);
        return r;
    }
    uint64_t amount = probe(d, before, before_ok);
    pthread_mutex_unlock(&probe_lock);
    if (amount && vgpu_charge(d, amount) < 0) {
        vgpu_depth++;
        undo(arg, *out);
        vgpu_depth--;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!remember(*out, idx, amount, true, NULL))
        vgpu_uncharge(d, amount);
    return CUDA_SUCCESS;
}

/* version: 1-4 cuCtxCreate(_vN); the graphics-interop creators below */
enum { CREATE_GL = 10, CREATE_GL_V2, CREATE_VDPAU, CREATE_VDPAU_V2 };

struct create_args {
    int version;
    unsigned int flags;
    CUdevice dev;
    CUexecAffinityParam *params;
    int n_params;
    CUctxCreateParams *create_params;
    VdpDevice vdp;
    VdpGetProcAddress *vdp_proc;
};

static CUresult do_create(void *arg, CUcontext *out)
{
    struct create_args *a = arg;
    switch (a->version) {
    case 1:
        return gs_real_cu.cuCtxCreate(out, a->flags, a->dev);
    case 2:
        return gs_real_cu.cuCtxCreate_v2(out, a->flags, a->dev);
    case 3:
        return gs_real_cu.cuCtxCreate_v3(out, a->params, a->n_params, a->flags, a->dev);
    case CREATE_GL:
        return gs_real_cu.cuGLCtxCreate(out, a->flags, a->dev);
    case CREATE_GL_V2:
        return gs_real_cu.cuGLCtxCreate_v2(out, a->flags, a->dev);
    case CREATE_VDPAU:
        return gs_real_cu.cuVDPAUCtxCreate(out, a->flags, a->dev, a->vdp, a->vdp_proc);
    case CREATE_VDPAU_V2:
        return gs_real_cu.cuVDPAUCtxCreate_v2(out, a->flags, a->dev, a->vdp, a->vdp_proc);
    default:
        return gs_real_cu.cuCtxCreate_v4(out, a->create_params, a->flags, a->dev);
    }
}

static void undo_create(void *arg, CUcontext c)
{
    (void)arg;
    gs_real_cu.cuCtxDestroy_v2(c);
}

static CUresult ctx_create(struct create_args *a, CUcontext *pctx)
{
    struct vgpu_device *d = ctx_tracking() ? tracked_dev(a->dev) : NULL;
    if (!d || !pctx) {
        CUresult r;
        vgpu_depth++;
        r = do_create(a, pctx);
        vgpu_depth--;
        return r;
    }
    return charged_create(d, do_create, a, pctx, undo_create);
}

/* The pre-3.2 name: the same arguments as _v2 (HAMi-core hooks only _v2; a program built
 * against old headers, or asking dlsym()/cuGetProcAddress() for the old name, reaches it). */
GS_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate);
    struct create_args a = {.version = 1, .flags = flags, .dev = dev};
    return ctx_create(&a, pctx);
}

GS_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate_v2);
    struct create_args a = {.version = 2, .flags = flags, .dev = dev};
    return ctx_create(&a, pctx);
}

GS_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate_v3);
    struct create_args a = {
        .version = 3, .flags = flags, .dev = dev, .params = paramsArray, .n_params = numParams};
    return ctx_create(&a, pctx);
}

GS_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                  unsigned int flags, CUdevice dev)
{
    NEED(cuCtxCreate_v4);
    struct create_args a = {
        .version = 4, .flags = flags, .dev = dev, .create_params = ctxCreateParams};
    return ctx_create(&a, pctx);
}

/* The graphics-interop creators (deprecated): contexts charged like cuCtxCreate's. */
GS_EXPORT CUresult cuGLCtxCreate(CUcontext *pCtx, unsigned int Flags, CUdevice device)
{
    NEED(cuGLCtxCreate);
    struct create_args a = {.version = CREATE_GL, .flags = Flags, .dev = device};
    return ctx_create(&a, pCtx);
}

GS_EXPORT CUresult cuGLCtxCreate_v2(CUcontext *pCtx, unsigned int Flags, CUdevice device)
{
    NEED(cuGLCtxCreate_v2);
    struct create_args a = {.version = CREATE_GL_V2, .flags = Flags, .dev = device};
    return ctx_create(&a, pCtx);
}

GS_EXPORT CUresult cuVDPAUCtxCreate(CUcontext *pCtx, unsigned int flags, CUdevice device,
                                    VdpDevice vdpDevice, VdpGetProcAddress *vdpGetProcAddress)
{
    NEED(cuVDPAUCtxCreate);
    struct create_args a = {.version = CREATE_VDPAU,
                            .flags = flags,
                            .dev = device,
                            .vdp = vdpDevice,
                            .vdp_proc = vdpGetProcAddress};
    return ctx_create(&a, pCtx);
}

GS_EXPORT CUresult cuVDPAUCtxCreate_v2(CUcontext *pCtx, unsigned int flags, CUdevice device,
                                       VdpDevice vdpDevice, VdpGetProcAddress *vdpGetProcAddress)
{
    NEED(cuVDPAUCtxCreate_v2);
    struct create_args a = {.version = CREATE_VDPAU_V2,
                            .flags = flags,
                            .dev = device,
                            .vdp = vdpDevice,
                            .vdp_proc = vdpGetProcAddress};
    return ctx_create(&a, pCtx);
}

/* A context destruction (_v2 or the pre-4.0 name). */
static CUresult ctx_destroy(CUresult (*real)(CUcontext), CUcontext ctx)
{
    CUresult r;
    vgpu_limiter_ctx_going(ctx); /* its measurements outlive it */
    if (!ctx || !ctx_tracking()) {
        vgpu_depth++;
        r = real(ctx);
        vgpu_depth--;
        return r;
    }
    /* Its state leaves the books BEFORE the driver ends it: a context another thread creates
     * with the same handle right after is a new one, whose allocations stay charged. */
    struct ctx_state st;
    bool had = detach(ctx, &st);
    vgpu_depth++;
    r = real(ctx);
    vgpu_depth--;
    if (r == CUDA_SUCCESS)
        gone(ctx, had ? &st : NULL);
    else if (had)
        reattach(&st);
    return r;
}

GS_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    NEED(cuCtxDestroy_v2);
    return ctx_destroy(gs_real_cu.cuCtxDestroy_v2, ctx);
}

GS_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    NEED(cuCtxDestroy);
    return ctx_destroy(gs_real_cu.cuCtxDestroy, ctx);
}

/* ------------------------------------------------------------------ primary contexts */

static bool primary_active(CUdevice dev)
{
    unsigned flags = 0;
    int active = 0;
    if (!gs_real_cu.cuDevicePrimaryCtxGetState)
        return true; /* cannot tell: assume it is (never a false "gone") */
    CUresult r;
    CALL_REAL(r, cuDevicePrimaryCtxGetState, dev, &flags, &active);
    return r != CUDA_SUCCESS || active;
}

/* The primary context's handle while it is active (a reference taken and dropped again, so its
 * count is unchanged); NULL when it is not active. */
static CUcontext primary_handle(CUdevice dev)
{
    if (!gs_real_cu.cuDevicePrimaryCtxGetState || !primary_active(dev))
        return NULL;
    CUcontext p = NULL;
    CUresult r;
    CALL_REAL(r, cuDevicePrimaryCtxRetain, &p, dev);
    if (r != CUDA_SUCCESS)
        return NULL;
    CALL_REAL(r, cuDevicePrimaryCtxRelease_v2, dev);
    return p;
}

struct retain_args {
    CUdevice dev;
};

static CUresult do_retain(void *arg, CUcontext *out)
{
    return gs_real_cu.cuDevicePrimaryCtxRetain(out, ((struct retain_args *)arg)->dev);
}

static void undo_retain(void *arg, CUcontext c)
{
    (void)c;
    gs_real_cu.cuDevicePrimaryCtxRelease_v2(((struct retain_args *)arg)->dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    NEED(cuDevicePrimaryCtxRetain);
    struct vgpu_device *d = ctx_tracking() ? tracked_dev(dev) : NULL;
    CUresult r;
    if (!d || !pctx || primary_active(dev)) {
        /* Not tracked, or the primary context exists already (perhaps retained out of sight:
         * charged at its first sight, here if not before). */
        CALL_REAL(r, cuDevicePrimaryCtxRetain, pctx, dev);
        if (r == CUDA_SUCCESS && d && pctx)
            sighted(*pctx, d);
        return r;
    }
    struct retain_args a = {.dev = dev};
    return charged_create(d, do_retain, &a, pctx, undo_retain);
}

/* A primary release (_v2 or the CUDA 7 entry point): the last reference destroys the context and
 * the driver frees its memory. */
static CUresult primary_release(CUresult (*real)(CUdevice), CUdevice dev)
{
    if (!ctx_tracking() || !tracked_dev(dev))
        return real(dev);
    CUcontext p = primary_handle(dev);
    vgpu_limiter_ctx_going(p); /* perhaps its last release: its measurements outlive it */
    uint32_t id = p ? vgpu_ctx_id(p) : 0;
    vgpu_depth++;
    CUresult r = real(dev);
    vgpu_depth--;
    if (r == CUDA_SUCCESS && p && !primary_active(dev))
        forget_id(p, id); /* that context only: a new primary may already have its handle */
    return r;
}

/* A primary reset (_v2 or the CUDA 7 entry point, cudaDeviceReset): everything goes. */
static CUresult primary_reset(CUresult (*real)(CUdevice), CUdevice dev)
{
    if (!ctx_tracking() || !tracked_dev(dev))
        return real(dev);
    CUcontext p = primary_handle(dev);
    vgpu_limiter_ctx_going(p);
    struct ctx_state st;
    bool had = p && detach(p, &st); /* before the driver: see cuCtxDestroy_v2 */
    vgpu_depth++;
    CUresult r = real(dev);
    vgpu_depth--;
    if (r == CUDA_SUCCESS && p)
        gone(p, had ? &st : NULL);
    else if (had)
        reattach(&st);
    return r;
}

GS_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    NEED(cuDevicePrimaryCtxRelease_v2);
    return primary_release(gs_real_cu.cuDevicePrimaryCtxRelease_v2, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    NEED(cuDevicePrimaryCtxRelease);
    return primary_release(gs_real_cu.cuDevicePrimaryCtxRelease, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    NEED(cuDevicePrimaryCtxReset_v2);
    return primary_reset(gs_real_cu.cuDevicePrimaryCtxReset_v2, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    NEED(cuDevicePrimaryCtxReset);
    return primary_reset(gs_real_cu.cuDevicePrimaryCtxReset, dev);
}

/* ------------------------------------------------------------------ first sight */

GS_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    NEED(cuCtxSetCurrent);
    CUresult r;
    CALL_REAL(r, cuCtxSetCurrent, ctx);
    if (r == CUDA_SUCCESS && ctx && ctx_tracking())
        seen(ctx, NULL, NULL);
    return r;
}

GS_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    NEED(cuCtxPushCurrent_v2);
    CUresult r;
    CALL_REAL(r, cuCtxPushCurrent_v2, ctx);
    if (r == CUDA_SUCCESS && ctx && ctx_tracking())
        seen(ctx, NULL, NULL);
    return r;
}

GS_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
    NEED(cuCtxPushCurrent);
    CUresult r;
    CALL_REAL(r, cuCtxPushCurrent, ctx);
    if (r == CUDA_SUCCESS && ctx && ctx_tracking())
        seen(ctx, NULL, NULL);
    return r;
}

/* Pops: the context that becomes current (the one below, if any) is sighted like a pushed one. */
static CUresult ctx_pop(CUresult (*real)(CUcontext *), CUcontext *pctx)
{
    vgpu_depth++;
    CUresult r = real(pctx);
    vgpu_depth--;
    if (r == CUDA_SUCCESS && ctx_tracking()) {
        CUcontext now = NULL;
        CUresult g;
        CALL_REAL(g, cuCtxGetCurrent, &now);
        if (g == CUDA_SUCCESS && now)
            seen(now, NULL, NULL);
    }
    return r;
}

GS_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    NEED(cuCtxPopCurrent_v2);
    return ctx_pop(gs_real_cu.cuCtxPopCurrent_v2, pctx);
}

GS_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    NEED(cuCtxPopCurrent);
    return ctx_pop(gs_real_cu.cuCtxPopCurrent, pctx);
}

GS_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    NEED(cuCtxGetCurrent);
    CUresult r;
    CALL_REAL(r, cuCtxGetCurrent, pctx);
    if (r == CUDA_SUCCESS && pctx && *pctx && ctx_tracking())
        seen(*pctx, NULL, NULL);
    return r;
}

/* ------------------------------------------------------------------ limits (issue 34) */

/* Resident threads assumed when the device cannot say (fail closed: more than any GPU holds). */
#define LIMIT_THREADS_WORST (256u * 2048u)

/* Bytes one unit of `limit` takes on the device of the current context: the stack is reserved
 * for every thread the device can hold at once (SMs x threads per SM), the printf FIFO and the
 * malloc heap once. */
static uint64_t limit_unit(CUlimit limit)
{
    if (limit != CU_LIMIT_STACK_SIZE)
        return 1;
    CUdevice dev = 0;
    int sms = 0, per_sm = 0;
    CUresult r;
    CALL_REAL(r, cuCtxGetDevice, &dev);
    if (r == CUDA_SUCCESS)
        CALL_REAL(r, cuDeviceGetAttribute, &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (r == CUDA_SUCCESS)
        CALL_REAL(r, cuDeviceGetAttribute, &per_sm,
                  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    if (r != CUDA_SUCCESS || sms <= 0 || per_sm <= 0)
        return LIMIT_THREADS_WORST;
    return (uint64_t)sms * (uint64_t)per_sm;
}

/* Books `grow` bytes more (or gives back up to `shrink`) for `limit` of context (ctx, id); returns
 * what was given back, or for a grow whether the context's state took it (false: the caller
 * gives it back at once: no state would ever return it). */
static uint64_t book_limit(void *ctx, uint32_t id, CUlimit limit, uint64_t grow, uint64_t shrink,
                           bool *booked)
{
    uint64_t given = 0;
    *booked = false;
    pthread_mutex_lock(&ctx_lock);
    struct ctx_state *s = find_locked(ctx);
    if (s && s->id == id) {
        if (grow) {
            s->charged = gs_sat_add_u64(s->charged, grow);
            s->limit_charged[limit] = gs_sat_add_u64(s->limit_charged[limit], grow);
            *booked = true;
        } else {
            given = GS_MIN(shrink, s->limit_charged[limit]);
            s->limit_charged[limit] -= given;
            s->charged -= GS_MIN(given, s->charged);
        }
    }
    pthread_mutex_unlock(&ctx_lock);
    return given;
}

/* cuCtxSetLimit: raising the stack size, the printf FIFO or the malloc heap makes the driver
 * reserve device memory for the context (HAMi-core does not hook it: a 10 GiB heap passed its
 * limit). The growth is charged BEFORE the driver is asked (refused with
 * CUDA_ERROR_OUT_OF_MEMORY past the slice, as the driver refuses past the device), lowering
 * gives back what was charged for that limit, and the rest comes back with the context. */
GS_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    NEED(cuCtxSetLimit);
    CUresult r;
    struct vgpu_device *d = NULL;
    uint32_t id = 0;
    void *ctx = NULL;
    size_t old = 0;
    uint64_t unit = 0;
    if ((unsigned int)limit <= CU_LIMIT_MALLOC_HEAP_SIZE && ctx_tracking())
        ctx = vgpu_ctx_current(&d, &id);
    if (ctx && d && d->region && id) {
        CALL_REAL(r, cuCtxGetLimit, &old, limit);
        unit = r == CUDA_SUCCESS ? limit_unit(limit) : 0; /* no old value: the driver refuses */
    }
    if (!unit || value == old) {
        CALL_REAL(r, cuCtxSetLimit, limit, value);
        return r;
    }
    if (value > old) {
        uint64_t grow = gs_sat_mul_u64((uint64_t)(value - old), unit);
        if (vgpu_charge(d, grow) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        CALL_REAL(r, cuCtxSetLimit, limit, value);
        bool booked = false;
        if (r == CUDA_SUCCESS)
            book_limit(ctx, id, limit, grow, 0, &booked);
        if (!booked)
            vgpu_uncharge(d, grow);
        return r;
    }
    CALL_REAL(r, cuCtxSetLimit, limit, value);
    if (r == CUDA_SUCCESS) {
        bool booked = false;
        uint64_t shrink = gs_sat_mul_u64((uint64_t)(old - value), unit);
        vgpu_uncharge(d, book_limit(ctx, id, limit, 0, shrink, &booked));
    }
    return r;
}
