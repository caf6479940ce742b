/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim libcuda: primary and created contexts, the per-thread context stack, streams, events
 * and synchronisation (which sleeps until the timeline says the work is done). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

#define CTX_STACK_MAX 64

static __thread struct sim_ctx *tls_stack[CTX_STACK_MAX];
static __thread int tls_depth;

void cu_wait_until(uint64_t t)
{
    if (sim_now_ns() >= t)
        return;
    /* Sleep, do not spin; but with a 1 us timer slack for this wait only (the default 50 us
     * would make every synchronisation late by that much, unlike a GPU). The slack is
     * per-thread and restored at once. */
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack > 1000)
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                          .tv_nsec = (long)(t % 1000000000ull)};
    while (sim_now_ns() < t) {
        int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (r != 0 && r != EINTR)
            break;
    }
    if (slack > 1000)
        prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
}

static bool ctx_usable(const struct sim_ctx *c)
{
    return c && c->h.magic == CU_MAGIC && c->h.kind == CU_OBJ_CTX && c->h.alive;
}

struct sim_ctx *cu_ctx_current(CUresult *err)
{
    if (GS_UNLIKELY(__atomic_load_n(&cu_g.init_state, __ATOMIC_ACQUIRE) <= 0)) {
        *err = CUDA_ERROR_NOT_INITIALIZED;
        return NULL;
    }
    struct sim_ctx *c = tls_depth ? tls_stack[tls_depth - 1] : NULL;
    if (GS_UNLIKELY(!c)) {
        *err = CUDA_ERROR_INVALID_CONTEXT;
        return NULL;
    }
    if (GS_UNLIKELY(!ctx_usable(c))) {
        *err = CUDA_ERROR_CONTEXT_IS_DESTROYED;
        return NULL;
    }
    if (GS_UNLIKELY(sim_dev_lost(cu_g.st, c->dev))) {
        /* Fault injection (gpusim-smi lose): after Xid 79 the real driver fails every call of
         * a context on that GPU with CUDA_ERROR_UNKNOWN ("unknown error"). */
        *err = CUDA_ERROR_UNKNOWN;
        return NULL;
    }
    return c;
}

struct sim_stream *cu_stream_resolve(CUstream h, CUresult *err)
{
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct sim_ctx *c = cu_ctx_current(err);
        return c ? &c->null_stream : NULL;
    }
    struct sim_stream *s = (struct sim_stream *)h;
    if (GS_UNLIKELY(!cu_valid(s, CU_OBJ_STREAM) || !ctx_usable(s->ctx))) {
        *err = CUDA_ERROR_INVALID_HANDLE;
        return NULL;
    }
    if (GS_UNLIKELY(sim_dev_lost(cu_g.st, s->ctx->dev))) {
        *err = CUDA_ERROR_UNKNOWN; /* see cu_ctx_current */
        return NULL;
    }
    return s;
}

/* NOLINTNEXTLINE(readability-non-const-parameter): *p is written by __atomic_compare_exchange_n */
static void atomic_max_u64(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

uint64_t cu_enqueue(struct sim_stream *s, uint64_t cost_ns)
{
    struct sim_ctx *c = s->ctx;
    uint64_t now = sim_now_ns();
    sim_lock(cu_g.st);
    uint64_t end = sim_enqueue_locked(cu_g.st, c->dev, now,
                                      __atomic_load_n(&s->tail_ns, __ATOMIC_RELAXED), cost_ns);
    __atomic_store_n(&s->tail_ns, end, __ATOMIC_RELEASE);
    sim_unlock(cu_g.st);
    atomic_max_u64(&c->tail_ns, end);
    return end;
}

/* ------------------------------------------------------------------ activation */
CUresult cu_ctx_activate(struct sim_ctx *c)
{
    uint64_t ov = cu_g.cfg.ctx_overhead;
    if (ov && sim_mem_charge(cu_g.st, c->dev, ov) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->charged = ov;
    cu_ctx_default_limits(c);
    sim_ctx_add(cu_g.st, c->dev, 1);
    return CUDA_SUCCESS;
}

void cu_ctx_deactivate(struct sim_ctx *c)
{
    if (c->charged)
        sim_mem_uncharge(cu_g.st, c->dev, c->charged);
    c->charged = 0;
    sim_ctx_add(cu_g.st, c->dev, -1);
}

/* ------------------------------------------------------------------ primary contexts */
CU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CU_CHECK_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_ctx *c = &cu_g.primary[dev];
    pthread_mutex_lock(&cu_g.lock);
    if (c->refs == 0) {
        CUresult r = cu_ctx_activate(c);
        if (r != CUDA_SUCCESS) {
            pthread_mutex_unlock(&cu_g.lock);
            return r;
        }
        c->h.alive = true;
    }
    c->refs++;
    pthread_mutex_unlock(&cu_g.lock);
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CU_CHECK_INIT();
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_ctx *c = &cu_g.primary[dev];
    pthread_mutex_lock(&cu_g.lock);
    if (c->refs == 0) {
        pthread_mutex_unlock(&cu_g.lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--c->refs == 0) {
        cu_wait_until(__atomic_load_n(&c->tail_ns, __ATOMIC_ACQUIRE));
        cu_ctx_free_owned_locked(c);
        cu_ctx_deactivate(c);
        c->h.alive = false;
    }
    pthread_mutex_unlock(&cu_g.lock);
    return CUDA_SUCCESS;
}

CU_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CU_CHECK_INIT();
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_ctx *c = &cu_g.primary[dev];
    pthread_mutex_lock(&cu_g.lock);
    if (c->refs > 0) {
        cu_wait_until(__atomic_load_n(&c->tail_ns, __ATOMIC_ACQUIRE));
        cu_ctx_free_owned_locked(c);
        cu_ctx_deactivate(c);
        c->refs = 0;
        c->h.alive = false;
    }
    c->flags = 0;
    pthread_mutex_unlock(&cu_g.lock);
    return CUDA_SUCCESS;
}

/* The v1 entry points (CUDA 7.0) behave like the _v2 ones. */
CU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

CU_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}

/*
 * The retain the CUDA runtime does inside the driver through a private interface, out of an
 * interposer's sight (cudaSetDevice -> cuCtxSetCurrent(primary) with no cuDevicePrimaryCtxRetain
 * call to see). Not exported: reachable only as "gpusimInternalPrimaryCtxRetain" through
 * cuGetProcAddress, for gpusim's tests of that pattern. The effect is the public one.
 */
CUresult gpusim_internal_primary_retain(CUcontext *pctx, CUdevice dev)
{
    return cuDevicePrimaryCtxRetain(pctx, dev);
}

CU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CU_CHECK_INIT();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&cu_g.lock);
    *flags = cu_g.primary[dev].flags;
    *active = cu_g.primary[dev].refs > 0;
    pthread_mutex_unlock(&cu_g.lock);
    return CUDA_SUCCESS;
}

CU_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CU_CHECK_INIT();
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.lock);
    cu_g.primary[dev].flags = flags;
    pthread_mutex_unlock(&cu_g.lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ created contexts */
static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CU_CHECK_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    if (tls_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_ctx *c = cu_obj_new(CU_OBJ_CTX, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->ordinal = dev;
    c->dev = cu_g.vis[dev];
    c->flags = flags;
    c->null_stream.h.magic = CU_MAGIC;
    c->null_stream.h.kind = CU_OBJ_STREAM;
    c->null_stream.h.alive = true;
    c->null_stream.ctx = c;
    CUresult r = cu_ctx_activate(c);
    if (r != CUDA_SUCCESS) {
        cu_obj_del(c);
        return r;
    }
    tls_stack[tls_depth++] = c;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

CU_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < numParams; i++)
        if (paramsArray[i].type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
            return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return ctx_create(pctx, flags, dev);
}

CU_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                               unsigned int flags, CUdevice dev)
{
    if (ctxCreateParams) {
        if (ctxCreateParams->cigParams)
            return CUDA_ERROR_NOT_SUPPORTED;
        return cuCtxCreate_v3(pctx, ctxCreateParams->execAffinityParams,
                              ctxCreateParams->numExecAffinityParams, flags, dev);
    }
    return ctx_create(pctx, flags, dev);
}

CU_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CU_CHECK_INIT();
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx_usable(c) || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    cu_wait_until(__atomic_load_n(&c->tail_ns, __ATOMIC_ACQUIRE));
    pthread_mutex_lock(&cu_g.lock);
    cu_ctx_free_owned_locked(c);
    pthread_mutex_unlock(&cu_g.lock);
    cu_ctx_deactivate(c);
    /* Unbind from this thread's stack (other threads see it as destroyed). */
    int kept = 0;
    for (int i = 0; i < tls_depth; i++)
        if (tls_stack[i] != c)
            tls_stack[kept++] = tls_stack[i];
    tls_depth = kept;
    cu_obj_del(c);
    /* Test knob (libvgpu's context-churn test): the handle can be handed out again at once; a
     * slow return widens the window in which another thread reuses it before the caller has
     * booked the destruction (a real driver's return can be descheduled as long). */
    static long delay_us = -1;
    if (__atomic_load_n(&delay_us, __ATOMIC_RELAXED) < 0) {
        const char *e = getenv("GPUSIM_CTX_DESTROY_RETURN_DELAY_US");
        __atomic_store_n(&delay_us, e ? strtol(e, NULL, 10) : 0, __ATOMIC_RELAXED);
    }
    if (delay_us > 0)
        usleep((useconds_t)delay_us);
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CU_CHECK_INIT();
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!ctx_usable(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tls_stack[tls_depth++] = c;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CU_CHECK_INIT();
    if (tls_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct sim_ctx *c = tls_stack[--tls_depth];
    if (pctx)
        *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CU_CHECK_INIT();
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!c) {
        if (tls_depth > 0)
            tls_depth--;
        return CUDA_SUCCESS;
    }
    if (!ctx_usable(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth == 0)
        tls_depth = 1;
    tls_stack[tls_depth - 1] = c;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CU_CHECK_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = tls_depth ? (CUcontext)tls_stack[tls_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxGetDevice(CUdevice *device)
{
    CUresult r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    *device = c->ordinal;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUresult r;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CU_CHECK_INIT();
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!c) {
        CUresult r;
        if (!(c = cu_ctx_current(&r)))
            return r;
    }
    if (!ctx_usable(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxSynchronize(void)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    cu_wait_until(__atomic_load_n(&c->tail_ns, __ATOMIC_ACQUIRE));
    cu_callbacks_wait(__atomic_load_n(&c->cb_seq, __ATOMIC_ACQUIRE));
    cu_pools_trim_at_sync();
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ streams */
static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    CUresult r;
    if (!phStream)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    struct sim_stream *s = cu_obj_new(CU_OBJ_STREAM, sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = c;
    s->flags = flags;
    s->priority = priority;
    *phStream = (CUstream)s;
    return CUDA_SUCCESS;
}

CU_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, 0);
}

CU_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return stream_create(phStream, flags, priority);
}

CU_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CU_CHECK_INIT();
    struct sim_stream *s = (struct sim_stream *)hStream;
    if (!cu_valid(s, CU_OBJ_STREAM) || hStream == CU_STREAM_LEGACY ||
        hStream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Work already queued completes on the timeline; the handle goes now. */
    cu_obj_del(s);
    return CUDA_SUCCESS;
}

CU_API CUresult cuStreamSynchronize(CUstream hStream)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    cu_wait_until(__atomic_load_n(&s->tail_ns, __ATOMIC_ACQUIRE));
    cu_callbacks_wait(__atomic_load_n(&s->cb_seq, __ATOMIC_ACQUIRE));
    cu_pools_trim_at_sync();
    return CUDA_SUCCESS;
}

CU_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return cuStreamSynchronize(hStream);
}

CU_API CUresult cuStreamQuery(CUstream hStream)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    bool done = sim_now_ns() >= __atomic_load_n(&s->tail_ns, __ATOMIC_ACQUIRE) &&
                cu_callbacks_done(__atomic_load_n(&s->cb_seq, __ATOMIC_ACQUIRE));
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CU_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    return cuStreamQuery(hStream);
}

CU_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    struct sim_event *e = (struct sim_event *)hEvent;
    if (!cu_valid(e, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if (Flags != 0 && Flags != 1 /* CU_EVENT_WAIT_EXTERNAL */)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t t;
    if (cu_event_time(e, &t))
        atomic_max_u64(&s->tail_ns, t);
    return CUDA_SUCCESS;
}

CU_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return cuStreamWaitEvent(hStream, hEvent, Flags);
}

/* ------------------------------------------------------------------ events */
CU_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult r;
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    if (Flags &
        ~(unsigned int)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_ctx_current(&r))
        return r;
    uint64_t *slot = NULL;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(slot = cu_ipc_event_slot()))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_event *e = cu_obj_new(CU_OBJ_EVENT, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->flags = Flags;
    e->ipc_t = slot;
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

CU_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    CUresult r;
    struct sim_event *e = (struct sim_event *)hEvent;
    if (!cu_valid(e, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    /* The event completes when the device reaches it: after the work queued before it on the
     * stream and, like a kernel, after the work already queued on the device (a time-sliced GPU
     * runs a context's commands, timestamp writes included, only while that context holds it). */
    uint64_t now = sim_now_ns(), tail = __atomic_load_n(&s->tail_ns, __ATOMIC_ACQUIRE);
    uint64_t dev_tail = __atomic_load_n(&cu_g.st->sh->dev[s->ctx->dev].tail_ns, __ATOMIC_ACQUIRE);
    e->t_ns = GS_MAX(now, GS_MAX(tail, dev_tail));
    e->recorded = true;
    if (e->ipc_t)
        __atomic_store_n(e->ipc_t, e->t_ns, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CU_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return cuEventRecord(hEvent, hStream);
}

CU_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    if (flags & ~1u /* CU_EVENT_RECORD_EXTERNAL */)
        return CUDA_ERROR_INVALID_VALUE;
    return cuEventRecord(hEvent, hStream);
}

CU_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return cuEventRecordWithFlags(hEvent, hStream, flags);
}

CU_API CUresult cuEventQuery(CUevent hEvent)
{
    CU_CHECK_INIT();
    struct sim_event *e = (struct sim_event *)hEvent;
    if (!cu_valid(e, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t t;
    if (!cu_event_time(e, &t))
        return CUDA_SUCCESS;
    return sim_now_ns() >= t ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CU_API CUresult cuEventSynchronize(CUevent hEvent)
{
    CU_CHECK_INIT();
    struct sim_event *e = (struct sim_event *)hEvent;
    if (!cu_valid(e, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t t;
    if (cu_event_time(e, &t))
        cu_wait_until(t);
    cu_pools_trim_at_sync();
    return CUDA_SUCCESS;
}

CU_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CU_CHECK_INIT();
    struct sim_event *a = (struct sim_event *)hStart, *b = (struct sim_event *)hEnd;
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(a, CU_OBJ_EVENT) || !cu_valid(b, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = sim_now_ns();
    if (now < a->t_ns || now < b->t_ns)
        return CUDA_ERROR_NOT_READY;
    double ms = ((double)b->t_ns - (double)a->t_ns) / 1e6;
    *pMilliseconds = (float)ms;
    return CUDA_SUCCESS;
}

CU_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime(pMilliseconds, hStart, hEnd);
}

CU_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
    CU_CHECK_INIT();
    struct sim_event *e = (struct sim_event *)hEvent;
    if (!cu_valid(e, CU_OBJ_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    cu_obj_del(e);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ queries (issue 20) */
CU_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    /* The pre-11.0 entry point refuses to change an active primary context's flags. */
    CU_CHECK_INIT();
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (__atomic_load_n(&cu_g.primary[dev].refs, __ATOMIC_ACQUIRE) > 0)
        return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

/* The pre-4.0 entry points: the same semantics under the old names. */
CU_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return cuCtxCreate_v2(pctx, flags, dev);
}
CU_API CUresult cuCtxDestroy(CUcontext ctx)
{
    return cuCtxDestroy_v2(ctx);
}
CU_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return cuCtxPushCurrent_v2(ctx);
}
CU_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return cuCtxPopCurrent_v2(pctx);
}
CU_API CUresult cuStreamDestroy(CUstream hStream)
{
    return cuStreamDestroy_v2(hStream);
}
CU_API CUresult cuEventDestroy(CUevent hEvent)
{
    return cuEventDestroy_v2(hEvent);
}

/* A context argument: the given one (validated) or, for NULL, the current one. */
static struct sim_ctx *ctx_arg(CUcontext ctx, CUresult *err)
{
    if (!ctx)
        return cu_ctx_current(err);
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!ctx_usable(c)) {
        *err = CUDA_ERROR_INVALID_CONTEXT;
        return NULL;
    }
    return c;
}

/* Whether ctx is one of our contexts, found without dereferencing it (the argument may be
 * garbage: see v13_ctx_arg). */
static bool ctx_known(const void *ctx)
{
    for (int o = 0; o < cu_g.nvis; o++)
        if (ctx == &cu_g.primary[o])
            return true;
    bool found = false;
    pthread_mutex_lock(&cu_g.lock);
    for (const struct cu_obj *o = cu_g.all; o && !found; o = o->all_next)
        found = (const void *)o == ctx;
    pthread_mutex_unlock(&cu_g.lock);
    return found;
}

/*
 * The context argument of the CUDA 13.0 entry points cuCtxGetDevice_v2 / cuCtxSynchronize_v2.
 * A 12.x driver has no such symbols, and programs that probe "<name>_v2" before "<name>" by
 * dlsym (numba <= 0.58) call them with the old, argument-less signature: while gpusim reports
 * a 12.x driver the argument is ignored (the current context, as the 12.x entry point they
 * meant); from 13.0 on it is checked, without ever dereferencing an unknown pointer.
 */
static struct sim_ctx *v13_ctx_arg(CUcontext ctx, CUresult *err)
{
    if (cu_g.cfg.cuda_version < 13000 || !ctx)
        return cu_ctx_current(err);
    if (!ctx_known(ctx)) {
        *err = CUDA_ERROR_INVALID_CONTEXT;
        return NULL;
    }
    return ctx_arg(ctx, err);
}

CU_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    CU_CHECK_INIT();
    CUresult r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = v13_ctx_arg(ctx, &r);
    if (!c)
        return r;
    *device = c->ordinal;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    CU_CHECK_INIT();
    CUresult r;
    struct sim_ctx *c = v13_ctx_arg(ctx, &r);
    if (!c)
        return r;
    cu_wait_until(__atomic_load_n(&c->tail_ns, __ATOMIC_ACQUIRE));
    cu_callbacks_wait(__atomic_load_n(&c->cb_seq, __ATOMIC_ACQUIRE));
    cu_pools_trim_at_sync();
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CU_CHECK_INIT();
    CUresult r;
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = ctx_arg(ctx, &r);
    if (!c)
        return r;
    *ctxId = (unsigned long long)(uintptr_t)c; /* unique while the context lives */
    return CUDA_SUCCESS;
}

/* Priorities: 0 (least) to -5 (greatest), the range data-centre GPUs report. */
CU_API CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUresult r;
    if (!cu_ctx_current(&r))
        return r;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

/* Cache and shared-memory bank preferences: recorded per context, no effect on the model. */
CU_API CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pconfig = (CUfunc_cache)c->cache_config;
    return CUDA_SUCCESS;
}
CU_API CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if ((unsigned)config > 3)
        return CUDA_ERROR_INVALID_VALUE;
    c->cache_config = (int)config;
    return CUDA_SUCCESS;
}
CU_API CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if (!pConfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pConfig = (CUsharedconfig)c->smem_config;
    return CUDA_SUCCESS;
}
CU_API CUresult cuCtxSetSharedMemConfig(CUsharedconfig config)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if ((unsigned)config > 2)
        return CUDA_ERROR_INVALID_VALUE;
    c->smem_config = (int)config;
    return CUDA_SUCCESS;
}

/* Stream queries; NULL / legacy / per-thread name the context's null stream. */
#define STREAM_Q(name, T, expr)                                                                    \
    CU_API CUresult name(CUstream hStream, T *out)                                                 \
    {                                                                                              \
        CUresult r;                                                                                \
        struct sim_stream *s = cu_stream_resolve(hStream, &r);                                     \
        if (!s)                                                                                    \
            return r;                                                                              \
        if (!out)                                                                                  \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        *out = (T)(expr);                                                                          \
        return CUDA_SUCCESS;                                                                       \
    }
STREAM_Q(cuStreamGetPriority, int, s->priority)
STREAM_Q(cuStreamGetPriority_ptsz, int, s->priority)
STREAM_Q(cuStreamGetFlags, unsigned int, s->flags)
STREAM_Q(cuStreamGetFlags_ptsz, unsigned int, s->flags)
STREAM_Q(cuStreamGetCtx, CUcontext, s->ctx)
STREAM_Q(cuStreamGetCtx_ptsz, CUcontext, s->ctx)
STREAM_Q(cuStreamGetId, unsigned long long, (uintptr_t)s)
STREAM_Q(cuStreamGetId_ptsz, unsigned long long, (uintptr_t)s)
STREAM_Q(cuStreamGetDevice, CUdevice, s->ctx->ordinal)
STREAM_Q(cuStreamGetDevice_ptsz, CUdevice, s->ctx->ordinal)

/* 12.5: the stream's context, or its green context (gpusim has none: NULL). */
CU_API CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, void **pGreenCtx)
{
    CUresult r;
    struct sim_stream *s = cu_stream_resolve(hStream, &r);
    if (!s)
        return r;
    if (!pCtx || !pGreenCtx)
        return CUDA_ERROR_INVALID_VALUE;
    *pCtx = (CUcontext)s->ctx;
    *pGreenCtx = NULL;
    return CUDA_SUCCESS;
}
CU_API CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, void **pGreenCtx)
{
    return cuStreamGetCtx_v2(hStream, pCtx, pGreenCtx);
}

/* ------------------------------------------------------------------ peer access */
/* Between two simulated GPUs that cuDeviceCanAccessPeer allows (NVLink or the same NUMA node);
 * the current context gains access to `peer`'s memory. Copies between the devices work either
 * way (unified addresses); this records what the driver's bookkeeping answers. */
CU_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    struct sim_ctx *p = (struct sim_ctx *)peerContext;
    if (!ctx_usable(p))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int can = 0;
    if (p->ordinal == c->ordinal ||
        cuDeviceCanAccessPeer(&can, c->ordinal, p->ordinal) != CUDA_SUCCESS || !can)
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    if (c->peer[p->ordinal])
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    c->peer[p->ordinal] = true;
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    struct sim_ctx *p = (struct sim_ctx *)peerContext;
    if (!ctx_usable(p))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!c->peer[p->ordinal])
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    c->peer[p->ordinal] = false;
    return CUDA_SUCCESS;
}

/* CUdevice_P2PAttribute: 1 performance rank, 2 access supported, 3 native atomics, 4 CUDA
 * arrays (5: the same as 4). */
CU_API CUresult cuDeviceGetP2PAttribute(int *value, int attrib, CUdevice srcDevice,
                                        CUdevice dstDevice)
{
    CU_CHECK_INIT();
    if (!value || attrib < 1 || attrib > 5)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_dev_of(srcDevice) < 0 || cu_dev_of(dstDevice) < 0 || srcDevice == dstDevice)
        return CUDA_ERROR_INVALID_DEVICE;
    int can = 0;
    CUresult r = cuDeviceCanAccessPeer(&can, srcDevice, dstDevice);
    if (r != CUDA_SUCCESS)
        return r;
    *value = attrib == 1 ? 0 : can;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ profiler */
/* No profiler is attached to gpusim: start and stop succeed and record nothing, as the driver
 * does when no profiling tool is present. */
CU_API CUresult cuProfilerStart(void)
{
    CUresult r;
    return cu_ctx_current(&r) ? CUDA_SUCCESS : r;
}
CU_API CUresult cuProfilerStop(void)
{
    CUresult r;
    return cu_ctx_current(&r) ? CUDA_SUCCESS : r;
}
