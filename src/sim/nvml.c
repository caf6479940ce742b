/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libnvidia-ml: NVML over the same device model and shared state as gpusim's libcuda.
 * NVML sees every device (CUDA_VISIBLE_DEVICES does not apply, as with the real NVML) and does
 * not register itself as a process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "sim/nvml-internal.h"

/* Utilisation window NVML uses when no lastSeenTimeStamp is given, and for GetUtilizationRates */
#define UTIL_WINDOW_NS 1000000000ull

struct nv_global nv = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t nv_realtime_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000000ull + (uint64_t)tv.tv_usec;
}

/* ------------------------------------------------------------------ init */
/* fork() while another thread is inside nvmlInit/nvmlShutdown: the lock is held across it and
 * made new in the child (issue 34), which keeps the parent's view of the shared state (NVML,
 * unlike CUDA, survives fork). Per-set event locks are the set owner's (one thread each). */
static void nv_before_fork(void)
{
    pthread_mutex_lock(&nv.lock);
}

static void nv_after_fork_parent(void)
{
    pthread_mutex_unlock(&nv.lock);
}

static void nv_after_fork_child(void)
{
    pthread_mutex_init(&nv.lock, NULL);
}

static void nv_register_fork(void)
{
    pthread_atfork(nv_before_fork, nv_after_fork_parent, nv_after_fork_child);
}

NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
    if (flags & ~(unsigned int)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH))
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_once(&fork_once, nv_register_fork);
    pthread_mutex_lock(&nv.lock);
    if (nv.refs == 0) {
        struct gs_error err = {0};
        if (sim_config_from_env(&nv.cfg, &err) < 0 || sim_state_open(&nv.cfg, &nv.st, &err) < 0) {
            dprintf(2, "gpusim: %s\n", err.msg);
            pthread_mutex_unlock(&nv.lock);
            return NVML_ERROR_UNKNOWN;
        }
        for (int i = 0; i < SIM_MAX_DEVICES; i++)
            nv.dev[i].index = i;
        nv_model_init(&nv.cfg);
    }
    __atomic_add_fetch(&nv.refs, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&nv.lock);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

NVML_API nvmlReturn_t nvmlInit(void)
{
    return nvmlInitWithFlags(0);
}

NVML_API nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&nv.lock);
    if (nv.refs == 0) {
        pthread_mutex_unlock(&nv.lock);
        return NVML_ERROR_UNINITIALIZED;
    }
    if (__atomic_sub_fetch(&nv.refs, 1, __ATOMIC_RELEASE) == 0) {
        sim_state_close(nv.st);
        nv.st = NULL;
    }
    pthread_mutex_unlock(&nv.lock);
    return NVML_SUCCESS;
}

/* No destructor: a monitoring thread may still be inside a query while the process exits, so the
 * state stays mapped until the process is gone (the kernel drops the mapping and the byte lock
 * with it). nvmlShutdown unmaps, as the application asked. */

NVML_API const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
        return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
        return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
        return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
        return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
        return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_MEMORY:
        return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
        return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
        return "ECC is not supported on vGPU";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
        return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED:
        return "Deprecated";
    case NVML_ERROR_NOT_READY:
        return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND:
        return "GPU not found";
    case NVML_ERROR_INVALID_STATE:
        return "Invalid state";
    case NVML_ERROR_UNKNOWN:
        return "Unknown Error";
    }
    return "Unknown Error";
}

/* ------------------------------------------------------------------ system */
nvmlReturn_t nv_copy_str(char *dst, unsigned int len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    NV_CHECK_INIT();
    return nv_copy_str(version, length, nv.cfg.driver_version);
}

NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    NV_CHECK_INIT();
    char buf[64];
    snprintf(buf, sizeof(buf), "%d.%s", nv.cfg.cuda_version / 1000, nv.cfg.driver_version);
    return nv_copy_str(version, length, buf);
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    NV_CHECK_INIT();
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = nv.cfg.cuda_version;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

NVML_API nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    NV_CHECK_INIT();
    if (!name || length == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* The path recorded by the process itself (works across pid namespaces), else /proc. */
    char comm[SIM_COMM_MAX] = "";
    sim_lock(nv.st);
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        const struct sim_proc *p = &nv.st->sh->procs[i];
        if (p->state == SIM_PROC_LIVE && p->pid == pid) {
            memcpy(comm, p->comm, sizeof(comm));
            comm[sizeof(comm) - 1] = '\0';
            break;
        }
    }
    sim_unlock(nv.st);
    if (!comm[0]) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%u/exe", pid);
        ssize_t n = readlink(path, comm, sizeof(comm) - 1);
        if (n <= 0)
            return NVML_ERROR_NOT_FOUND;
        comm[n] = '\0';
    }
    snprintf(name, length, "%s", comm);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ handles */
NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    NV_CHECK_INIT();
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned int)nv.cfg.ndev;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    NV_CHECK_INIT();
    if (!device || index >= (unsigned int)nv.cfg.ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (sim_dev_lost(nv.st, (int)index))
        return NVML_ERROR_GPU_IS_LOST;
    *device = &nv.dev[index];
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    NV_CHECK_INIT();
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < nv.cfg.ndev; i++) {
        if (strcasecmp(nv.cfg.dev[i].uuid, uuid) == 0) {
            if (sim_dev_lost(nv.st, i))
                return NVML_ERROR_GPU_IS_LOST;
            *device = &nv.dev[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    NV_CHECK_INIT();
    if (!pciBusId || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int dom, bus, dv;
    if (sim_parse_pci_bus_id(pciBusId, &dom, &bus, &dv) < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < nv.cfg.ndev; i++) {
        const struct sim_device_cfg *d = &nv.cfg.dev[i];
        if (d->pci_domain == dom && d->pci_bus == bus && d->pci_device == dv) {
            if (sim_dev_lost(nv.st, i))
                return NVML_ERROR_GPU_IS_LOST;
            *device = &nv.dev[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* ------------------------------------------------------------------ identity */
NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    NV_DEVICE(device, i);
    return nv_copy_str(name, length, nv.cfg.dev[i].name);
}

NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    NV_DEVICE(device, i);
    return nv_copy_str(uuid, length, nv.cfg.dev[i].uuid);
}

NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    NV_DEVICE(device, i);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned int)i;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    NV_DEVICE(device, i);
    if (!minorNumber)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = nv.cfg.dev[i].minor;
    return NVML_SUCCESS;
}

void nv_fill_pci(const struct sim_device_cfg *d, nvmlPciInfo_t *pci)
{
    memset(pci, 0, sizeof(*pci));
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", d->pci_domain & 0xffff,
             d->pci_bus, d->pci_device);
    sim_pci_bus_id(d, pci->busId, sizeof(pci->busId));
    pci->domain = d->pci_domain;
    pci->bus = d->pci_bus;
    pci->device = d->pci_device;
    pci->pciDeviceId = (d->pci_device_id << 16) | 0x10DE;
    pci->pciSubSystemId = d->pci_subsystem_id;
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    NV_DEVICE(device, i);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    nv_fill_pci(&nv.cfg.dev[i], pci);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                         int *minor)
{
    NV_DEVICE(device, i);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *major = nv.cfg.dev[i].cc_major;
    *minor = nv.cfg.dev[i].cc_minor;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    NV_DEVICE(device, i);
    if (!arch)
        return NVML_ERROR_INVALID_ARGUMENT;
    *arch = nv.cfg.dev[i].arch;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    NV_DEVICE(device, i);
    if (!type)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = (nvmlBrandType_t)nv.cfg.dev[i].brand;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ memory and processes */
NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    NV_DEVICE(device, i);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t used, total;
    sim_mem_info(nv.st, i, &used, &total);
    memory->total = total;
    memory->used = GS_MIN(used, total);
    memory->free = total - memory->used;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    NV_DEVICE(device, i);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    uint64_t used, total;
    sim_mem_info(nv.st, i, &used, &total);
    memory->total = total;
    memory->reserved = 0;
    memory->used = GS_MIN(used, total);
    memory->free = total - memory->used;
    return NVML_SUCCESS;
}

/* Shared body of the three GetComputeRunningProcesses versions. */
static nvmlReturn_t running(int dev, unsigned int *infoCount, void *infos, size_t stride,
                            bool with_instances)
{
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct sim_proc_info *procs = calloc(SIM_MAX_PROCS, sizeof(*procs));
    if (!procs)
        return NVML_ERROR_MEMORY;
    int n = sim_procs_on_device(nv.st, dev, procs, SIM_MAX_PROCS);
    nvmlReturn_t r = NVML_SUCCESS;
    if ((unsigned int)n > *infoCount || (n > 0 && !infos)) {
        r = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        for (int k = 0; k < n; k++) {
            char *base = (char *)infos + (size_t)k * stride;
            nvmlProcessInfo_t pi = {.pid = procs[k].pid,
                                    .usedGpuMemory = procs[k].mem,
                                    .gpuInstanceId = 0xFFFFFFFFu,
                                    .computeInstanceId = 0xFFFFFFFFu};
            memcpy(base, &pi,
                   with_instances ? sizeof(nvmlProcessInfo_t) : sizeof(nvmlProcessInfo_v1_t));
        }
    }
    *infoCount = (unsigned int)n;
    free(procs);
    return r;
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_t *infos)
{
    NV_DEVICE(device, i);
    return running(i, infoCount, infos, sizeof(nvmlProcessInfo_t), true);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_v2_t *infos)
{
    NV_DEVICE(device, i);
    return running(i, infoCount, infos, sizeof(nvmlProcessInfo_v2_t), true);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                           unsigned int *infoCount,
                                                           nvmlProcessInfo_v1_t *infos)
{
    NV_DEVICE(device, i);
    return running(i, infoCount, infos, sizeof(nvmlProcessInfo_v1_t), false);
}

NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                               unsigned int *infoCount,
                                                               nvmlProcessInfo_t *infos)
{
    NV_DEVICE(device, i);
    (void)i;
    (void)infos;
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *infoCount = 0; /* gpusim runs no graphics work */
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ utilisation */
static unsigned int percent(uint64_t busy, uint64_t window);

unsigned int nv_busy_percent(int dev, uint64_t window_ns)
{
    uint64_t now = sim_now_ns(), a = now > window_ns ? now - window_ns : 0;
    sim_lock(nv.st);
    uint64_t busy = sim_busy_total_locked(nv.st, dev, a, now, NULL);
    sim_unlock(nv.st);
    return percent(busy, now - a);
}

static unsigned int percent(uint64_t busy, uint64_t window)
{
    if (window == 0)
        return 0;
    uint64_t p = (busy * 100 + window / 2) / window;
    return (unsigned int)GS_MIN(p, 100);
}

NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                    nvmlUtilization_t *utilization)
{
    NV_DEVICE(device, i);
    if (!utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t now = sim_now_ns(), a = now > UTIL_WINDOW_NS ? now - UTIL_WINDOW_NS : 0;
    sim_lock(nv.st);
    uint64_t busy = sim_busy_total_locked(nv.st, i, a, now, NULL);
    sim_unlock(nv.st);
    utilization->gpu = percent(busy, now - a);
    utilization->memory = 0; /* memory bandwidth is not modelled */
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                      nvmlProcessUtilizationSample_t *utilization,
                                                      unsigned int *processSamplesCount,
                                                      unsigned long long lastSeenTimeStamp)
{
    NV_DEVICE(device, i);
    if (!processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* One sample per process over the window (lastSeenTimeStamp, now]: the share of that
     * window its kernels occupied the device. Timestamps are CPU time in microseconds. */
    uint64_t now_us = nv_realtime_us(), now = sim_now_ns();
    uint64_t window_ns;
    if (lastSeenTimeStamp == 0)
        window_ns = UTIL_WINDOW_NS;
    else if (lastSeenTimeStamp >= now_us)
        return NVML_ERROR_NOT_FOUND;
    else
        window_ns = gs_sat_mul_u64(now_us - lastSeenTimeStamp, 1000);
    uint64_t a = now > window_ns ? now - window_ns : 0;
    struct sim_pid_busy busy[SIM_MAX_PROCS];
    bool complete;
    sim_lock(nv.st);
    int n = sim_busy_by_pid_locked(nv.st, i, a, now, busy, SIM_MAX_PROCS, &complete);
    sim_unlock(nv.st);
    if (n == 0)
        return NVML_ERROR_NOT_FOUND;
    if (!utilization || *processSamplesCount < (unsigned int)n) {
        *processSamplesCount = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int k = 0; k < n; k++) {
        utilization[k] = (nvmlProcessUtilizationSample_t){
            .pid = busy[k].pid,
            .timeStamp = now_us,
            .smUtil = percent(busy[k].busy_ns, now - a),
            .memUtil = 0,
            .encUtil = 0,
            .decUtil = 0,
        };
    }
    *processSamplesCount = (unsigned int)n;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ topology */
NVML_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                          nvmlDevice_t device2,
                                                          nvmlGpuTopologyLevel_t *pathInfo)
{
    NV_DEVICE(device1, a);
    NV_DEVICE(device2, b);
    if (!pathInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct sim_device_cfg *x = &nv.cfg.dev[a], *y = &nv.cfg.dev[b];
    if (a == b)
        *pathInfo = NVML_TOPOLOGY_INTERNAL;
    else if (x->pcie_switch == y->pcie_switch)
        *pathInfo = NVML_TOPOLOGY_SINGLE;
    else if (x->numa_node == y->numa_node)
        *pathInfo = NVML_TOPOLOGY_NODE;
    else
        *pathInfo = NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                               nvmlEnableState_t *isActive)
{
    NV_DEVICE(device, i);
    if (!isActive || link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct sim_device_cfg *d = &nv.cfg.dev[i];
    if (d->nlinks == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *isActive = (link < (unsigned int)d->nlinks && d->link_peer[link] >= 0) ? NVML_FEATURE_ENABLED
                                                                            : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                          nvmlPciInfo_t *pci)
{
    NV_DEVICE(device, i);
    if (!pci || link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct sim_device_cfg *d = &nv.cfg.dev[i];
    if (d->nlinks == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned int)d->nlinks || d->link_peer[link] < 0)
        return NVML_ERROR_NOT_FOUND;
    nv_fill_pci(&nv.cfg.dev[d->link_peer[link]], pci);
    return NVML_SUCCESS;
}
