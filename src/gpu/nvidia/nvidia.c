/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA's device backend: discovery (gpu/discovery.c) and health through NVML events, after
 * NVIDIA's DRA driver (k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/device_health.go,
 * registerEventsForDevices and run): one event set for all GPUs, XidCriticalError and
 * DoubleBitEccError registered per GPU (masked by nvmlDeviceGetSupportedEventTypes), a GPU whose
 * events cannot be registered reported as unmonitored, NVML_ERROR_GPU_IS_LOST from the wait
 * answered by probing every GPU. Unlike that driver, a lost GPU is probed again
 * (nvmlDeviceGetHandleByUUID) and reported as answering when it comes back, so the watcher can
 * recover it without a restart; its events are registered again then.
 */
#include "gpu/nvidia/nvidia.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nvml.h"

#define WATCHED_EVENTS (nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError)

struct nv_health {
    struct gpu_nvml nv;
    nvmlEventSet_t set;
    size_t n;
    struct {
        char uuid[GPU_STR_MAX];
        nvmlDevice_t handle; /* NULL while lost or never seen */
        bool registered;
        bool unmonitored_sent;
    } dev[GPU_MAX_DEVICES];
};

static int nv_discover(const char *sysfs_root, struct gpu_inventory *out, struct gs_error *err)
{
    return gpu_discover(sysfs_root, out, err);
}

/* Register the GPU's events; false when it cannot be watched. */
static bool register_dev(struct nv_health *h, size_t i)
{
    nvmlDevice_t d = NULL;
    if (h->nv.nvmlDeviceGetHandleByUUID(h->dev[i].uuid, &d) != NVML_SUCCESS)
        return false;
    h->dev[i].handle = d;
    unsigned long long mask = WATCHED_EVENTS;
    unsigned long long supported = 0;
    if (h->nv.nvmlDeviceGetSupportedEventTypes &&
        h->nv.nvmlDeviceGetSupportedEventTypes(d, &supported) == NVML_SUCCESS)
        mask &= supported;
    if (!mask || h->nv.nvmlDeviceRegisterEvents(d, mask, h->set) != NVML_SUCCESS)
        return false;
    h->dev[i].registered = true;
    return true;
}

static void nv_health_close(void *p)
{
    struct nv_health *h = p;
    if (!h)
        return;
    if (h->set)
        h->nv.nvmlEventSetFree(h->set);
    gpu_nvml_close(&h->nv);
    free(h);
}

static void *nv_health_open(const struct gpu_inventory *inv, struct gs_error *err)
{
    struct nv_health *h = calloc(1, sizeof(*h));
    if (!h) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    if (gpu_nvml_open(&h->nv, GPU_NVML_USE_HEALTH, 0, err) < 0) {
        free(h);
        return NULL;
    }
    nvmlReturn_t r = h->nv.nvmlEventSetCreate(&h->set);
    if (r != NVML_SUCCESS) {
        gpu_nvml_fail(&h->nv, err, "nvmlEventSetCreate", r);
        h->set = NULL;
        nv_health_close(h);
        return NULL;
    }
    h->n = inv->n;
    for (size_t i = 0; i < inv->n; i++) {
        snprintf(h->dev[i].uuid, sizeof(h->dev[i].uuid), "%s", inv->dev[i].uuid);
        (void)register_dev(h, i);
    }
    return h;
}

static size_t push(struct gpu_health_event *out, size_t max, size_t k,
                   enum gpu_health_event_kind kind, size_t dev, uint64_t xid)
{
    if (k < max)
        out[k++] = (struct gpu_health_event){.kind = kind, .dev = dev, .xid = xid};
    return k;
}

static size_t nv_health_probe(void *p, struct gpu_health_event *out, size_t max)
{
    struct nv_health *h = p;
    size_t k = 0;
    for (size_t i = 0; i < h->n; i++) {
        nvmlDevice_t d = NULL;
        nvmlReturn_t r = h->nv.nvmlDeviceGetHandleByUUID(h->dev[i].uuid, &d);
        if (r == NVML_ERROR_GPU_IS_LOST) {
            h->dev[i].handle = NULL;
            h->dev[i].registered = false; /* registered again when it answers */
            k = push(out, max, k, GPU_HEALTH_EV_LOST, i, 0);
            continue;
        }
        if (r != NVML_SUCCESS)
            continue; /* not found, not initialised: nothing to say about its health */
        if (!h->dev[i].registered && !register_dev(h, i) && !h->dev[i].unmonitored_sent) {
            h->dev[i].unmonitored_sent = true;
            k = push(out, max, k, GPU_HEALTH_EV_UNMONITORED, i, 0);
        }
        h->dev[i].handle = d;
        k = push(out, max, k, GPU_HEALTH_EV_ANSWERS, i, 0);
    }
    return k;
}

static size_t nv_health_wait(void *p, unsigned timeout_ms, struct gpu_health_event *out, size_t max)
{
    struct nv_health *h = p;
    if (!max)
        return 0;
    nvmlEventData_t ev;
    memset(&ev, 0, sizeof(ev));
    nvmlReturn_t r = h->nv.nvmlEventSetWait_v2(h->set, &ev, timeout_ms);
    if (r == NVML_ERROR_TIMEOUT)
        return 0;
    if (r == NVML_ERROR_GPU_IS_LOST)
        return nv_health_probe(h, out, max); /* which one: ask each */
    if (r != NVML_SUCCESS)
        return 0;
    size_t dev = h->n;
    for (size_t i = 0; i < h->n; i++)
        if (h->dev[i].handle && h->dev[i].handle == ev.device)
            dev = i;
    if (dev == h->n)
        return 0; /* a GPU not in our inventory (or a MIG instance we do not publish) */
    if (ev.eventType & nvmlEventTypeXidCriticalError)
        return push(out, max, 0, GPU_HEALTH_EV_XID, dev, ev.eventData);
    if (ev.eventType & nvmlEventTypeDoubleBitEccError)
        return push(out, max, 0, GPU_HEALTH_EV_ECC_DBE, dev, 0);
    return 0;
}

static size_t nv_lost_now(unsigned *index, size_t max)
{
    struct gpu_nvml nv;
    struct gs_error err = {0};
    if (gpu_nvml_open(&nv, GPU_NVML_USE_HEALTH, 0, &err) < 0)
        return 0;
    unsigned count = 0;
    size_t k = 0;
    if (nv.nvmlDeviceGetCount_v2(&count) == NVML_SUCCESS) {
        for (unsigned i = 0; i < count && k < max; i++) {
            nvmlDevice_t d = NULL;
            if (nv.nvmlDeviceGetHandleByIndex_v2(i, &d) == NVML_ERROR_GPU_IS_LOST)
                index[k++] = i;
        }
    }
    gpu_nvml_close(&nv);
    return k;
}

const struct gs_device_backend gpu_nvidia_backend = {
    .name = "nvidia",
    .discover = nv_discover,
    .health_open = nv_health_open,
    .health_wait = nv_health_wait,
    .health_probe = nv_health_probe,
    .health_close = nv_health_close,
    .lost_now = nv_lost_now,
};
