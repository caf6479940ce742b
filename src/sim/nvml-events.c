/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim NVML event sets. A set is process-local: per device, the event types registered and
 * the next XID sequence number to deliver. XID events come from the shared state (injected by
 * gpusim-smi inject-xid / lose, sim-health.c); a set sees the events injected after its
 * registration, each once, in order. nvmlEventSetWait sleeps on the state's health_gen futex, so
 * a fault injected by another process wakes it at once (no polling).
 *
 * Supported types: XidCriticalError (delivered, eventData = the XID), Single/DoubleBitEccError
 * (accepted; gpusim simulates no ECC error, so they never fire).
 */
#include <stdlib.h>
#include <string.h>

#include "sim/nvml-internal.h"

#define EVENT_SET_MAGIC 0x4e56455au /* "NVEZ" */
#define SUPPORTED_EVENTS                                                                           \
    (nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError |                              \
     nvmlEventTypeDoubleBitEccError)

struct nvmlEventSet_st {
    uint32_t magic;
    pthread_mutex_t lock;
    unsigned long long mask[SIM_MAX_DEVICES];
    uint64_t next_xid[SIM_MAX_DEVICES];
};

static bool valid_set(const struct nvmlEventSet_st *s)
{
    return s && s->magic == EVENT_SET_MAGIC;
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                       unsigned long long *eventTypes)
{
    NV_DEVICE(device, i);
    (void)i;
    if (!eventTypes)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = SUPPORTED_EVENTS;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    NV_CHECK_INIT();
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlEventSet_st *s = calloc(1, sizeof(*s));
    if (!s)
        return NVML_ERROR_MEMORY;
    s->magic = EVENT_SET_MAGIC;
    pthread_mutex_init(&s->lock, NULL);
    *set = s;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                               nvmlEventSet_t set)
{
    NV_DEVICE(device, i);
    if (!valid_set(set))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes & ~SUPPORTED_EVENTS)
        return NVML_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&set->lock);
    if (!(set->mask[i] & nvmlEventTypeXidCriticalError))
        set->next_xid[i] = sim_health_xid_count(nv.st, i);
    set->mask[i] |= eventTypes;
    pthread_mutex_unlock(&set->lock);
    return NVML_SUCCESS;
}

/* The next undelivered XID of the set (lock held): true and *data filled, or false. */
static bool next_event_locked(nvmlEventSet_t set, nvmlEventData_t *data)
{
    for (int d = 0; d < nv.cfg.ndev; d++) {
        if (!(set->mask[d] & nvmlEventTypeXidCriticalError))
            continue;
        for (;;) {
            struct sim_xid x;
            uint64_t oldest = 0;
            int r = sim_health_xid(nv.st, d, set->next_xid[d], &x, &oldest);
            if (r == -ESTALE) { /* overwritten before we read it: skip to what is held */
                set->next_xid[d] = oldest;
                continue;
            }
            if (r < 0)
                break;
            set->next_xid[d]++;
            *data = (nvmlEventData_t){
                .device = &nv.dev[d],
                .eventType = nvmlEventTypeXidCriticalError,
                .eventData = x.xid,
                .gpuInstanceId = 0xFFFFFFFFu,
                .computeInstanceId = 0xFFFFFFFFu,
            };
            return true;
        }
    }
    return false;
}

static nvmlReturn_t wait_event(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    NV_CHECK_INIT();
    if (!valid_set(set) || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t deadline = gs_sat_add_u64(sim_now_ns(), (uint64_t)timeoutms * 1000000ull);
    for (;;) {
        uint32_t gen = sim_health_gen(nv.st); /* before looking: a later injection changes it */
        pthread_mutex_lock(&set->lock);
        bool got = next_event_locked(set, data);
        pthread_mutex_unlock(&set->lock);
        if (got)
            return NVML_SUCCESS;
        uint64_t now = sim_now_ns();
        if (now >= deadline)
            return NVML_ERROR_TIMEOUT;
        uint64_t left_ms = (deadline - now + 999999) / 1000000;
        sim_health_wait(nv.st, gen, (unsigned int)GS_MIN(left_ms, 1000000u));
    }
}

NVML_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                          unsigned int timeoutms)
{
    return wait_event(set, data, timeoutms);
}

/* v1: its nvmlEventData_t ended after eventData (24 bytes); only those are written. */
NVML_API nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data,
                                       unsigned int timeoutms)
{
    if (!data)
        return wait_event(set, data, timeoutms);
    nvmlEventData_t full;
    nvmlReturn_t r = wait_event(set, &full, timeoutms);
    if (r == NVML_SUCCESS)
        memcpy(data, &full, offsetof(nvmlEventData_t, gpuInstanceId));
    return r;
}

NVML_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    NV_CHECK_INIT();
    if (!valid_set(set))
        return NVML_ERROR_INVALID_ARGUMENT;
    set->magic = 0;
    pthread_mutex_destroy(&set->lock);
    free(set);
    return NVML_SUCCESS;
}
