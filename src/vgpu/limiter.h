/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compute limiter's core (limiter.c), with its clock, sleep and event functions injectable so
 * that unit tests (tests/unit/vgpu/test_limiter.c) drive it with a fake clock and a fake GPU.
 * The launch hooks use vgpu_limiter_before/after (vgpu-internal.h), which resolve the current
 * device and call vgpu_limiter_begin/end below.
 */
#ifndef GS_VGPU_LIMITER_H
#define GS_VGPU_LIMITER_H

#include <stdint.h>

#include "vgpu/vgpu-internal.h"

/* Everything the limiter asks of the outside world. */
struct vgpu_limiter_ops {
    uint64_t (*now_ns)(void);    /* CLOCK_MONOTONIC, ns */
    uint64_t (*coarse_ns)(void); /* the same clock, cheaper, may lag by a tick (NULL: now_ns) */
    uint64_t (*wall_ns)(void);   /* CLOCK_REALTIME, ns since the epoch (region last_kernel_ns) */
    void (*sleep_ns)(int64_t ns);
    CUresult (*event_create)(CUevent *ev);
    CUresult (*event_record)(CUevent ev, CUstream stream);
    CUresult (*event_query)(CUevent ev); /* CUDA_SUCCESS, CUDA_ERROR_NOT_READY or an error */
    CUresult (*event_sync)(CUevent ev);
    CUresult (*event_elapsed)(float *ms, CUevent start, CUevent end);
    CUresult (*event_destroy)(CUevent ev);
    void *(*ctx_current)(void); /* current context: events are reused only within one */
    uint64_t seed;              /* sampling PRNG seed (0: from the clock) */
};

/* Replace the ops (NULL: the real clock and driver functions) and forget every estimate and
 * record (tests only; no launch may be in flight). */
void vgpu_limiter_set_ops(const struct vgpu_limiter_ops *ops);

/* The core: gate on the device's bucket (rd, cores 1..99), charge the estimate of `key`, and
 * decide whether this launch is measured (then the start event is recorded on `stream`).
 * `dev` indexes process-local per-device state (0..GS_REGION_MAX_DEVICES-1). */
void vgpu_limiter_begin(struct vgpu_launch *l, struct gs_region_device *rd, int dev, uint32_t cores,
                        uint64_t key, CUstream stream);
/* After the driver's launch call returned `launched`: record the end event (measured launches),
 * or refund the charge when nothing was launched. */
void vgpu_limiter_end(struct vgpu_launch *l, CUresult launched);
/* A context is gone (destroyed, reset, last primary release): the events the limiter kept in it
 * went with it. Called by the context hooks after the driver call succeeded. */
void vgpu_limiter_ctx_gone(void *ctx);
/* A context is about to be destroyed (or reset, or released): its measurements in flight are
 * waited for and consumed measured first, so they outlive it. Called by the context hooks
 * before the driver call. */
void vgpu_limiter_ctx_going(void *ctx);
/* Consume completed measurements now (the launch path and the gate do it on their own) and
 * publish the calling thread's counters. */
void vgpu_limiter_poll(void);
/* Publish the calling thread's counters (launches, busy_ns, gpu_busy_ns) to the region now
 * (otherwise at least every millisecond, and at thread and process exit). */
void vgpu_limiter_flush(void);

/* Introspection for tests. */
struct vgpu_limiter_stats {
    int64_t estimate_ns; /* current estimate of the key (0 if unknown) */
    uint32_t samples;    /* measurements of the key consumed so far */
    uint32_t in_flight;  /* records waiting for their events */
    uint32_t held;       /* records consumed but still referenced by a waiter */
    uint64_t measured;   /* measurements consumed, all keys */
    uint64_t waits;      /* times a launch waited for a measurement */
};
void vgpu_limiter_stats(uint64_t key, int dev, struct vgpu_limiter_stats *out);

#endif /* GS_VGPU_LIMITER_H */
