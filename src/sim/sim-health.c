/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim device health: the faults tests inject through the shared state (gpusim-smi
 * inject-xid / lose / recover) and that NVML (events, GPU_IS_LOST) and libcuda (CUDA_ERROR_UNKNOWN
 * on a lost device) report. Writers hold the shared lock; readers use atomic loads, and waiters
 * sleep on the 32-bit health_gen word with a shared futex (the file is MAP_SHARED, so
 * FUTEX_WAIT/FUTEX_WAKE without FUTEX_PRIVATE_FLAG work across processes).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/macros.h"
#include "sim/sim-state.h"

/* Xid 79: "GPU has fallen off the bus" (NVIDIA's Xid catalogue; the kernel driver logs it when
 * the device stops answering on PCIe). */
#define XID_FALLEN_OFF_BUS 79

static uint64_t realtime_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000000ull + (uint64_t)tv.tv_usec;
}

static void bump_and_wake(struct sim_shared *sh)
{
    __atomic_add_fetch(&sh->health_gen, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &sh->health_gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void append_xid_locked(struct sim_shared *sh, int dev, uint64_t xid)
{
    struct sim_dev_state *d = &sh->dev[dev];
    struct sim_xid *e = &sh->xid[dev][d->xid_count % SIM_XID_RING];
    e->time_us = realtime_us();
    e->xid = xid;
    __atomic_store_n(&d->xid_count, d->xid_count + 1, __ATOMIC_RELEASE);
}

static bool valid_dev(const struct sim_state *st, int dev)
{
    return dev >= 0 && dev < st->ndev;
}

int sim_health_inject_xid(struct sim_state *st, int dev, uint64_t xid)
{
    if (!valid_dev(st, dev))
        return -ENODEV;
    sim_lock(st);
    append_xid_locked(st->sh, dev, xid);
    sim_unlock(st);
    bump_and_wake(st->sh);
    return 0;
}

int sim_health_set_lost(struct sim_state *st, int dev, bool lost)
{
    if (!valid_dev(st, dev))
        return -ENODEV;
    sim_lock(st);
    bool was = __atomic_load_n(&st->sh->dev[dev].lost, __ATOMIC_ACQUIRE) != 0;
    if (lost && !was)
        append_xid_locked(st->sh, dev, XID_FALLEN_OFF_BUS);
    __atomic_store_n(&st->sh->dev[dev].lost, lost ? 1u : 0u, __ATOMIC_RELEASE);
    sim_unlock(st);
    bump_and_wake(st->sh);
    return 0;
}

bool sim_dev_lost(const struct sim_state *st, int dev)
{
    return valid_dev(st, dev) && __atomic_load_n(&st->sh->dev[dev].lost, __ATOMIC_ACQUIRE) != 0;
}

uint32_t sim_health_gen(const struct sim_state *st)
{
    return __atomic_load_n(&st->sh->health_gen, __ATOMIC_ACQUIRE);
}

void sim_health_wait(struct sim_state *st, uint32_t gen, unsigned int timeout_ms)
{
    struct timespec ts = {.tv_sec = timeout_ms / 1000,
                          .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
    /* Returns at a wake, at the timeout, on EAGAIN (the word already moved) or EINTR: callers
     * re-check the state and their own deadline. */
    syscall(SYS_futex, &st->sh->health_gen, FUTEX_WAIT, gen, &ts, NULL, 0);
}

uint64_t sim_health_xid_count(const struct sim_state *st, int dev)
{
    return valid_dev(st, dev) ? __atomic_load_n(&st->sh->dev[dev].xid_count, __ATOMIC_ACQUIRE) : 0;
}

int sim_health_xid(struct sim_state *st, int dev, uint64_t seq, struct sim_xid *out,
                   uint64_t *oldest)
{
    if (!valid_dev(st, dev))
        return -ENODEV;
    sim_lock(st);
    uint64_t count = st->sh->dev[dev].xid_count;
    uint64_t first = count > SIM_XID_RING ? count - SIM_XID_RING : 0;
    int r = 0;
    if (seq >= count)
        r = -ENOENT;
    else if (seq < first)
        r = -ESTALE;
    else
        *out = st->sh->xid[dev][seq % SIM_XID_RING];
    sim_unlock(st);
    if (oldest)
        *oldest = first;
    return r;
}
