/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim NVML: accounting, field values, samples, the newer process-utilisation query, the
 * older-versioned symbols (v1/v2 of PCI info, handles, graphics processes), MPS, topology sets,
 * units (S-class enclosures: none) and excluded devices (none).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/nvml-internal.h"

#define ARG(p)                                                                                     \
    do {                                                                                           \
        if (!(p))                                                                                  \
            return NVML_ERROR_INVALID_ARGUMENT;                                                    \
    } while (0)

/* ------------------------------------------------------------------ accounting */
/* Accounting is modelled for live processes: the process list, their memory and their share of
 * the device since they started. Terminated processes are not kept (the real driver keeps a
 * circular buffer of them). */
NVML_API nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device,
                                                        unsigned int *bufferSize)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(bufferSize);
    *bufferSize = SIM_MAX_PROCS;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetAccountingPids(nvmlDevice_t device, unsigned int *count,
                                                  unsigned int *pids)
{
    NV_DEVICE(device, i);
    ARG(count);
    struct sim_proc_info *procs = calloc(SIM_MAX_PROCS, sizeof(*procs));
    if (!procs)
        return NVML_ERROR_MEMORY;
    int n = sim_procs_on_device(nv.st, i, procs, SIM_MAX_PROCS);
    nvmlReturn_t r = NVML_SUCCESS;
    if (!pids || *count < (unsigned int)n) {
        r = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        for (int k = 0; k < n; k++)
            pids[k] = procs[k].pid;
    }
    *count = (unsigned int)n;
    free(procs);
    return r;
}

NVML_API nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid,
                                                   nvmlAccountingStats_t *stats)
{
    NV_DEVICE(device, i);
    ARG(stats);
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t now = sim_now_ns(), now_us = nv_realtime_us();
    bool found = false;
    uint64_t start_ns = 0, mem = 0;
    uint32_t slot = 0;
    sim_lock(nv.st);
    for (int s = 0; s < SIM_MAX_PROCS; s++) {
        const struct sim_proc *p = &nv.st->sh->procs[s];
        if (p->state == SIM_PROC_LIVE && p->pid == pid && (p->mem[i] || p->ctx[i])) {
            found = true;
            slot = (uint32_t)s;
            mem = p->mem[i];
            start_ns = hz > 0 ? p->start_time * (1000000000ull / (uint64_t)hz) : 0;
            break;
        }
    }
    uint64_t busy = 0;
    if (found) {
        struct sim_pid_busy b[SIM_MAX_PROCS];
        int n =
            sim_busy_by_pid_locked(nv.st, i, GS_MIN(start_ns, now), now, b, SIM_MAX_PROCS, NULL);
        for (int k = 0; k < n; k++)
            if (b[k].slot == slot)
                busy = b[k].busy_ns;
    }
    sim_unlock(nv.st);
    if (!found)
        return NVML_ERROR_NOT_FOUND;
    uint64_t life = now > start_ns ? now - start_ns : 0;
    memset(stats, 0, sizeof(*stats));
    stats->gpuUtilization = life ? (unsigned int)GS_MIN(100, (busy * 100 + life / 2) / life) : 0;
    stats->memoryUtilization = 0;
    stats->maxMemoryUsage = mem; /* current: no per-process high-water mark is kept */
    stats->time = 0;             /* running */
    stats->startTime = now_us - GS_MIN(now_us, life / 1000);
    stats->isRunning = 1;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ field values */
static void fv_ull(nvmlFieldValue_t *v, unsigned long long x)
{
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v->value.ullVal = x;
}

static void fv_uint(nvmlFieldValue_t *v, unsigned int x)
{
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v->value.uiVal = x;
}

NVML_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                               nvmlFieldValue_t *values)
{
    NV_DEVICE(device, i);
    if (valuesCount < 0 || (valuesCount > 0 && !values))
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct nv_model *m = nv_model_of(i);
    struct nv_reading r;
    nv_read(i, &r);
    long long ts = (long long)nv_realtime_us();
    for (int k = 0; k < valuesCount; k++) {
        nvmlFieldValue_t *v = &values[k];
        v->timestamp = ts;
        v->latencyUsec = 0;
        v->nvmlReturn = NVML_SUCCESS;
        switch (v->fieldId) {
        case NVML_FI_DEV_ECC_CURRENT:
        case NVML_FI_DEV_ECC_PENDING:
            fv_uint(v, 1);
            break;
        case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
        case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
        case NVML_FI_DEV_ECC_SBE_AGG_TOTAL:
        case NVML_FI_DEV_ECC_DBE_AGG_TOTAL:
        case NVML_FI_DEV_PCIE_REPLAY_COUNTER:
        case NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS:
        case NVML_FI_DEV_PERF_POLICY_POWER:
        case NVML_FI_DEV_PERF_POLICY_THERMAL:
            fv_ull(v, 0);
            break;
        case NVML_FI_DEV_RETIRED_SBE:
        case NVML_FI_DEV_RETIRED_DBE:
        case NVML_FI_DEV_RETIRED_PENDING:
            if (m->remapped_rows)
                v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            else
                fv_ull(v, 0);
            break;
        case NVML_FI_DEV_REMAPPED_COR:
        case NVML_FI_DEV_REMAPPED_UNC:
        case NVML_FI_DEV_REMAPPED_PENDING:
        case NVML_FI_DEV_REMAPPED_FAILURE:
            if (!m->remapped_rows)
                v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            else
                fv_uint(v, 0);
            break;
        case NVML_FI_DEV_MEMORY_TEMP:
            if (m->mem_max_c == 0)
                v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            else
                fv_uint(v, r.mem_temp_c);
            break;
        case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
            fv_ull(v, r.energy_mj);
            break;
        case NVML_FI_DEV_POWER_AVERAGE:
        case NVML_FI_DEV_POWER_INSTANT:
            fv_uint(v, r.power_mw);
            break;
        case NVML_FI_DEV_NVLINK_LINK_COUNT:
            fv_uint(v, (unsigned int)nv.cfg.dev[i].nlinks);
            break;
        case NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT:
        case NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT:
        case NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT: {
            /* T.Limit: degrees left below the threshold */
            unsigned int th = v->fieldId == NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT ? m->shutdown_c
                              : v->fieldId == NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT
                                  ? m->slowdown_c
                                  : m->gpu_max_c;
            v->valueType = NVML_VALUE_TYPE_SIGNED_INT;
            v->value.siVal = (int)th - (int)r.temp_c;
            break;
        }
        case NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT:
            if (m->mem_max_c == 0) {
                v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            } else {
                v->valueType = NVML_VALUE_TYPE_SIGNED_INT;
                v->value.siVal = (int)m->mem_max_c - (int)r.mem_temp_c;
            }
            break;
        default:
            v->nvmlReturn = v->fieldId >= NVML_FI_MAX || v->fieldId == 0
                                ? NVML_ERROR_INVALID_ARGUMENT
                                : NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceClearFieldValues(nvmlDevice_t device, int valuesCount,
                                                 nvmlFieldValue_t *values)
{
    NV_DEVICE(device, i);
    (void)i;
    if (valuesCount < 0 || (valuesCount > 0 && !values))
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Only counters can be cleared, and gpusim's counters (ECC, replay) are all 0 already. */
    for (int k = 0; k < valuesCount; k++)
        values[k].nvmlReturn = NVML_SUCCESS;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ samples */
/* One sample per call: the current reading, stamped now, if now is past lastSeenTimeStamp. */
NVML_API nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                           unsigned long long lastSeenTimeStamp,
                                           nvmlValueType_t *sampleValType,
                                           unsigned int *sampleCount, nvmlSample_t *samples)
{
    NV_DEVICE(device, i);
    ARG(sampleValType && sampleCount);
    if ((unsigned int)type >= NVML_SAMPLINGTYPE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct nv_model *m = nv_model_of(i);
    if ((type == NVML_ENC_UTILIZATION_SAMPLES && !m->encoders) ||
        (type == NVML_DEC_UTILIZATION_SAMPLES && !m->decoders) ||
        (type == NVML_JPG_UTILIZATION_SAMPLES && !m->jpegs) ||
        (type == NVML_OFA_UTILIZATION_SAMPLES && !m->ofas) || type == NVML_MODULE_POWER_SAMPLES)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!samples) {
        *sampleCount = 1;
        return NVML_SUCCESS; /* the documented size query */
    }
    if (*sampleCount < 1)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned long long now = nv_realtime_us();
    if (lastSeenTimeStamp >= now)
        return NVML_ERROR_NOT_FOUND;
    struct nv_reading r;
    nv_read(i, &r);
    unsigned int v = 0;
    switch (type) {
    case NVML_TOTAL_POWER_SAMPLES:
        v = r.power_mw;
        break;
    case NVML_GPU_UTILIZATION_SAMPLES:
        v = r.util_1s;
        break;
    case NVML_PROCESSOR_CLK_SAMPLES:
        v = r.sm_mhz;
        break;
    case NVML_MEMORY_CLK_SAMPLES:
        v = r.mem_mhz;
        break;
    default:
        v = 0;
    }
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    samples[0].timeStamp = now;
    memset(&samples[0].sampleValue, 0, sizeof(samples[0].sampleValue));
    samples[0].sampleValue.uiVal = v;
    *sampleCount = 1;
    return NVML_SUCCESS;
}

/* nvmlDeviceGetProcessesUtilizationInfo: the versioned form of GetProcessUtilization. */
NVML_API nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                            nvmlProcessesUtilizationInfo_t *info)
{
    NV_CHECK_INIT();
    ARG(info);
    if (info->version != nvmlProcessesUtilizationInfo_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned int n = info->processSamplesCount;
    nvmlProcessUtilizationSample_t *tmp = NULL;
    if (info->procUtilArray && n > 0) {
        tmp = calloc(n, sizeof(*tmp));
        if (!tmp)
            return NVML_ERROR_MEMORY;
    }
    nvmlReturn_t r = nvmlDeviceGetProcessUtilization(device, tmp, &n, info->lastSeenTimeStamp);
    if (r == NVML_SUCCESS && tmp) {
        for (unsigned int k = 0; k < n; k++)
            info->procUtilArray[k] = (nvmlProcessUtilizationInfo_v1_t){
                .timeStamp = tmp[k].timeStamp,
                .pid = tmp[k].pid,
                .smUtil = tmp[k].smUtil,
            };
    }
    if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE)
        info->processSamplesCount = n;
    free(tmp);
    return r;
}

/* ------------------------------------------------------------------ older symbols */
/* The older layouts: v1 = {busId[16], domain, bus, device, pciDeviceId, pciSubSystemId} (36
 * bytes, the v3 struct's first 36), v2 = v1 + 4 reserved words (52 bytes). Only that much of the
 * caller's struct is written. */
static nvmlReturn_t pci_info_prefix(nvmlDevice_t device, void *out, size_t n, size_t zero)
{
    nvmlPciInfo_t full;
    nvmlReturn_t r = nvmlDeviceGetPciInfo_v3(device, &full);
    if (r == NVML_SUCCESS && !out)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS) {
        memcpy(out, &full, n);
        memset((char *)out + n, 0, zero);
    }
    return r;
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_info_prefix(device, pci, 36, 16);
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_info_prefix(device, pci, 36, 0);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    NV_CHECK_INIT();
    ARG(serial && device);
    for (int i = 0; i < nv.cfg.ndev; i++) {
        if (strcmp(nv_model_of(i)->serial, serial) == 0) {
            if (sim_dev_lost(nv.st, i))
                return NVML_ERROR_GPU_IS_LOST;
            *device = &nv.dev[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t no_processes(nvmlDevice_t device, unsigned int *infoCount)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(infoCount);
    *infoCount = 0; /* no graphics work, no MPS server */
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                            unsigned int *infoCount,
                                                            nvmlProcessInfo_v1_t *infos)
{
    (void)infos;
    return no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                               unsigned int *infoCount,
                                                               nvmlProcessInfo_v2_t *infos)
{
    (void)infos;
    return no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    (void)infos;
    return no_processes(device, infoCount);
}

/* ------------------------------------------------------------------ topology sets */
NVML_API nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device,
                                                       nvmlGpuTopologyLevel_t level,
                                                       unsigned int *count,
                                                       nvmlDevice_t *deviceArray)
{
    NV_DEVICE(device, a);
    ARG(count);
    nvmlDevice_t found[SIM_MAX_DEVICES];
    unsigned int n = 0;
    for (int b = 0; b < nv.cfg.ndev; b++) {
        if (b == a)
            continue;
        nvmlGpuTopologyLevel_t l;
        if (nvmlDeviceGetTopologyCommonAncestor(device, &nv.dev[b], &l) == NVML_SUCCESS &&
            l <= level)
            found[n++] = &nv.dev[b];
    }
    if (!deviceArray || *count < n) {
        *count = n;
        return deviceArray || *count == 0 ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    for (unsigned int k = 0; k < n; k++)
        deviceArray[k] = found[k];
    *count = n;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count,
                                                  nvmlDevice_t *deviceArray)
{
    NV_CHECK_INIT();
    ARG(count);
    nvmlDevice_t found[SIM_MAX_DEVICES];
    unsigned int n = 0;
    for (int i = 0; i < nv.cfg.ndev; i++) {
        unsigned long set[16];
        if (nvmlDeviceGetCpuAffinity(&nv.dev[i], 16, set) == NVML_SUCCESS &&
            cpuNumber < 16 * 8 * sizeof(unsigned long) &&
            (set[cpuNumber / (8 * sizeof(unsigned long))] >>
             (cpuNumber % (8 * sizeof(unsigned long)))) &
                1)
            found[n++] = &nv.dev[i];
    }
    if (!deviceArray || *count < n) {
        *count = n;
        return deviceArray || *count == 0 ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    for (unsigned int k = 0; k < n; k++)
        deviceArray[k] = found[k];
    *count = n;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlSystemGetHicVersion(unsigned int *hwbcCount, nvmlHwbcEntry_t *hwbcEntries)
{
    NV_CHECK_INIT();
    (void)hwbcEntries;
    ARG(hwbcCount);
    *hwbcCount = 0; /* no host interface cards */
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ units (S-class): none */
NVML_API nvmlReturn_t nvmlUnitGetCount(unsigned int *unitCount)
{
    NV_CHECK_INIT();
    ARG(unitCount);
    *unitCount = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlUnitGetHandleByIndex(unsigned int index, nvmlUnit_t *unit)
{
    NV_CHECK_INIT();
    (void)index;
    (void)unit;
    return NVML_ERROR_INVALID_ARGUMENT; /* index >= unit count (0) */
}

/* No unit handle can be valid: every unit query is INVALID_ARGUMENT, as for a bad handle. */
#define UNIT_QUERY(fn, ...)                                                                        \
    NVML_API nvmlReturn_t fn(nvmlUnit_t unit, __VA_ARGS__)                                         \
    {                                                                                              \
        NV_CHECK_INIT();                                                                           \
        (void)unit;                                                                                \
        return NVML_ERROR_INVALID_ARGUMENT;                                                        \
    }
UNIT_QUERY(nvmlUnitGetUnitInfo, nvmlUnitInfo_t *info)
UNIT_QUERY(nvmlUnitGetLedState, nvmlLedState_t *state)
UNIT_QUERY(nvmlUnitGetPsuInfo, nvmlPSUInfo_t *psu)
UNIT_QUERY(nvmlUnitGetTemperature, unsigned int type, unsigned int *temp)
UNIT_QUERY(nvmlUnitGetFanSpeedInfo, nvmlUnitFanSpeeds_t *fanSpeeds)
UNIT_QUERY(nvmlUnitGetDevices, unsigned int *deviceCount, nvmlDevice_t *devices)

/* ------------------------------------------------------------------ excluded devices: none */
NVML_API nvmlReturn_t nvmlGetExcludedDeviceCount(unsigned int *deviceCount)
{
    ARG(deviceCount); /* works without nvmlInit, as the real one */
    *deviceCount = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlGetExcludedDeviceInfoByIndex(unsigned int index,
                                                       nvmlExcludedDeviceInfo_t *info)
{
    (void)index;
    (void)info;
    return NVML_ERROR_INVALID_ARGUMENT;
}

NVML_API nvmlReturn_t nvmlGetBlacklistDeviceCount(unsigned int *deviceCount)
{
    return nvmlGetExcludedDeviceCount(deviceCount);
}

NVML_API nvmlReturn_t nvmlGetBlacklistDeviceInfoByIndex(unsigned int index,
                                                        nvmlExcludedDeviceInfo_t *info)
{
    return nvmlGetExcludedDeviceInfoByIndex(index, info);
}
