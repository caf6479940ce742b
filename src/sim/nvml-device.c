/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim NVML: the device queries nvidia-smi -q and DCGM make (board strings, thermal, power,
 * clocks, performance state, PCIe, ECC, fans, video engines, clock event reasons, BAR1, CPU
 * affinity, modes, accounting, field values, samples) plus units and excluded devices. Values
 * come from the device model (nvml-model.c) and move with the kernel timeline. Where gpusim has
 * no such hardware (units, MIG, Windows driver models, displays) the answer is what the real
 * NVML gives on a headless Linux data-centre GPU without it (NOT_SUPPORTED, 0 units...).
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

/* ------------------------------------------------------------------ board identity */
NVML_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    NV_DEVICE(device, i);
    return nv_copy_str(serial, length, nv_model_of(i)->serial);
}

NVML_API nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version,
                                                unsigned int length)
{
    NV_DEVICE(device, i);
    return nv_copy_str(version, length, nv_model_of(i)->vbios);
}

NVML_API nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char *partNumber,
                                                   unsigned int length)
{
    NV_DEVICE(device, i);
    return nv_copy_str(partNumber, length, nv_model_of(i)->part);
}

NVML_API nvmlReturn_t nvmlDeviceGetBoardId(nvmlDevice_t device, unsigned int *boardId)
{
    NV_DEVICE(device, i);
    ARG(boardId);
    const struct sim_device_cfg *d = &nv.cfg.dev[i];
    *boardId = (d->pci_domain << 16) | (d->pci_bus << 8) | (d->pci_device << 3);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int *multiGpuBool)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(multiGpuBool);
    *multiGpuBool = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, nvmlInforomObject_t object,
                                                  char *version, unsigned int length)
{
    NV_DEVICE(device, i);
    (void)i;
    static const char *const v[] = {"G183.0200.00.02", "6.0", "N/A", "N/A"};
    if ((unsigned int)object >= NVML_INFOROM_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (object >= NVML_INFOROM_POWER)
        return NVML_ERROR_NOT_SUPPORTED;
    return nv_copy_str(version, length, v[object]);
}

NVML_API nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char *version,
                                                       unsigned int length)
{
    NV_DEVICE(device, i);
    char buf[NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE];
    snprintf(buf, sizeof(buf), "G%03u.0200.00.02",
             (unsigned int)(nv.cfg.dev[i].pci_device_id & 0x3ff));
    return nv_copy_str(version, length, buf);
}

NVML_API nvmlReturn_t nvmlDeviceGetInforomConfigurationChecksum(nvmlDevice_t device,
                                                                unsigned int *checksum)
{
    NV_DEVICE(device, i);
    ARG(checksum);
    *checksum = (unsigned int)(nv_model_of(i)->serial[5] * 2654435761u);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device)
{
    NV_DEVICE(device, i);
    (void)i;
    return NVML_SUCCESS;
}

#define CONST_ENABLE(fn, value)                                                                    \
    NVML_API nvmlReturn_t fn(nvmlDevice_t device, nvmlEnableState_t *out)                          \
    {                                                                                              \
        NV_DEVICE(device, i);                                                                      \
        (void)i;                                                                                   \
        ARG(out);                                                                                  \
        *out = (value);                                                                            \
        return NVML_SUCCESS;                                                                       \
    }
/* Headless data-centre GPUs: no display; persistence mode on (nvidia-persistenced runs on such
 * nodes); power management on; accounting on (so gpusim can model it, see below). */
CONST_ENABLE(nvmlDeviceGetDisplayMode, NVML_FEATURE_DISABLED)
CONST_ENABLE(nvmlDeviceGetDisplayActive, NVML_FEATURE_DISABLED)
CONST_ENABLE(nvmlDeviceGetPersistenceMode, NVML_FEATURE_ENABLED)
CONST_ENABLE(nvmlDeviceGetPowerManagementMode, NVML_FEATURE_ENABLED)
CONST_ENABLE(nvmlDeviceGetAccountingMode, NVML_FEATURE_ENABLED)
CONST_ENABLE(nvmlDeviceGetDefaultEccMode, NVML_FEATURE_ENABLED)

NVML_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(mode);
    *mode = NVML_COMPUTEMODE_DEFAULT;
    return NVML_SUCCESS;
}

/* The Windows driver model does not exist on Linux: NOT_SUPPORTED, as the real NVML. */
/* NOLINTBEGIN(readability-non-const-parameter): NVML's prototype; nothing is written here */
NVML_API nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t device, nvmlDriverModel_t *current,
                                                  nvmlDriverModel_t *pending)
/* NOLINTEND(readability-non-const-parameter): NVML's prototype */
{
    NV_DEVICE(device, i);
    (void)i;
    (void)current;
    (void)pending;
    return NVML_ERROR_NOT_SUPPORTED;
}

NVML_API nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, nvmlDriverModel_t *current,
                                               nvmlDriverModel_t *pending)
{
    return nvmlDeviceGetDriverModel_v2(device, current, pending);
}

NVML_API nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device,
                                                      nvmlGpuVirtualizationMode_t *pVirtualMode)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(pVirtualMode);
    *pVirtualMode = NVML_GPU_VIRTUALIZATION_MODE_NONE;
    return NVML_SUCCESS;
}

/* MIG is not modelled: capable devices (A100, H200) report it disabled; others NOT_SUPPORTED. */
static bool mig_capable(int i)
{
    return nv.cfg.dev[i].arch >= NVML_DEVICE_ARCH_AMPERE &&
           nv.cfg.dev[i].brand != NVML_BRAND_GEFORCE;
}

NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                           unsigned int *pendingMode)
{
    NV_DEVICE(device, i);
    ARG(currentMode && pendingMode);
    if (!mig_capable(i))
        return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = 0;
    *pendingMode = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    NV_DEVICE(device, i);
    ARG(count);
    *count = mig_capable(i) ? 7 : 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(isMigDevice);
    *isMigDevice = 0;
    return NVML_SUCCESS;
}

/* NOLINTBEGIN(readability-non-const-parameter): NVML's prototype; nothing is written here */
NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
/* NOLINTEND(readability-non-const-parameter): NVML's prototype */
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(id);
    return NVML_ERROR_NOT_SUPPORTED; /* not a MIG device handle */
}

/* NOLINTBEGIN(readability-non-const-parameter): NVML's prototype; nothing is written here */
NVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
/* NOLINTEND(readability-non-const-parameter): NVML's prototype */
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(id);
    return NVML_ERROR_NOT_SUPPORTED;
}

NVML_API nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                 nvmlDeviceAttributes_t *attributes)
{
    NV_DEVICE(device, i);
    ARG(attributes);
    const struct nv_model *m = nv_model_of(i);
    /* Whole-GPU handle: the real NVML answers NOT_SUPPORTED unless the handle is a MIG device's;
     * gpusim answers with the whole GPU's figures (what a 7-slice instance would show). */
    *attributes = (nvmlDeviceAttributes_t){
        .multiprocessorCount = (unsigned int)nv.cfg.dev[i].sm_count,
        .sharedCopyEngineCount = m->copy_engines,
        .sharedDecoderCount = m->decoders,
        .sharedEncoderCount = m->encoders,
        .sharedJpegCount = m->jpegs,
        .sharedOfaCount = m->ofas,
        .gpuInstanceSliceCount = mig_capable(i) ? 7 : 1,
        .computeInstanceSliceCount = mig_capable(i) ? 7 : 1,
        .memorySizeMB = nv.cfg.dev[i].total_mem >> 20,
    };
    return NVML_SUCCESS;
}

/* CUDA cores per SM by architecture (Volta/Ampere-100/Hopper 64 FP32 per SM... as NVML counts
 * them: Turing 64, Ampere GA100 64, Ada 128, Hopper 128, Blackwell 128). */
NVML_API nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *numCores)
{
    NV_DEVICE(device, i);
    ARG(numCores);
    unsigned int per_sm = nv.cfg.dev[i].arch >= NVML_DEVICE_ARCH_ADA ? 128 : 64;
    *numCores = per_sm * (unsigned int)nv.cfg.dev[i].sm_count;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device, unsigned int *busWidth)
{
    NV_DEVICE(device, i);
    ARG(busWidth);
    *busWidth = (unsigned int)(nv.cfg.dev[i].bus_width > 0 ? nv.cfg.dev[i].bus_width : 256);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetIrqNum(nvmlDevice_t device, unsigned int *irqNum)
{
    NV_DEVICE(device, i);
    ARG(irqNum);
    *irqNum = 100u + (unsigned int)i;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetModuleId(nvmlDevice_t device, unsigned int *moduleId)
{
    NV_DEVICE(device, i);
    ARG(moduleId);
    *moduleId = (unsigned int)i + 1;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetGspFirmwareMode(nvmlDevice_t device, unsigned int *isEnabled,
                                                   unsigned int *defaultMode)
{
    NV_DEVICE(device, i);
    ARG(isEnabled && defaultMode);
    /* GSP firmware runs by default from Turing on with the 5xx drivers' open modules. */
    *isEnabled = *defaultMode = nv.cfg.dev[i].arch >= NVML_DEVICE_ARCH_TURING;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t device, char *version)
{
    NV_DEVICE(device, i);
    ARG(version);
    if (nv.cfg.dev[i].arch < NVML_DEVICE_ARCH_TURING)
        return NVML_ERROR_NOT_SUPPORTED;
    snprintf(version, 80, "%s", nv.cfg.driver_version);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ thermal */
NVML_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                               nvmlTemperatureSensors_t sensorType,
                                               unsigned int *temp)
{
    NV_DEVICE(device, i);
    ARG(temp);
    if (sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nv_reading r;
    nv_read(i, &r);
    *temp = r.temp_c;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature)
{
    NV_DEVICE(device, i);
    ARG(temperature);
    if (temperature->version != nvmlTemperature_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (temperature->sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nv_reading r;
    nv_read(i, &r);
    temperature->temperature = (int)r.temp_c;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                        nvmlTemperatureThresholds_t thresholdType,
                                                        unsigned int *temp)
{
    NV_DEVICE(device, i);
    ARG(temp);
    const struct nv_model *m = nv_model_of(i);
    unsigned int v;
    switch (thresholdType) {
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        v = m->shutdown_c;
        break;
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        v = m->slowdown_c;
        break;
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX:
        v = m->mem_max_c;
        break;
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
        v = m->gpu_max_c;
        break;
    case NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN:
    case NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR:
    case NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX:
    case NVML_TEMPERATURE_THRESHOLD_GPS_CURR:
        return NVML_ERROR_NOT_SUPPORTED; /* GeForce/workstation features */
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (v == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *temp = v;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ power */
NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    NV_DEVICE(device, i);
    ARG(power);
    struct nv_reading r;
    nv_read(i, &r);
    *power = r.power_mw;
    return NVML_SUCCESS;
}

#define POWER_CONST(fn, field)                                                                     \
    NVML_API nvmlReturn_t fn(nvmlDevice_t device, unsigned int *out)                               \
    {                                                                                              \
        NV_DEVICE(device, i);                                                                      \
        ARG(out);                                                                                  \
        *out = nv_model_of(i)->field;                                                              \
        return NVML_SUCCESS;                                                                       \
    }
POWER_CONST(nvmlDeviceGetPowerManagementLimit, tdp_mw)
POWER_CONST(nvmlDeviceGetPowerManagementDefaultLimit, tdp_mw)
POWER_CONST(nvmlDeviceGetEnforcedPowerLimit, tdp_mw)

NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                   unsigned int *minLimit,
                                                                   unsigned int *maxLimit)
{
    NV_DEVICE(device, i);
    ARG(minLimit && maxLimit);
    *minLimit = nv_model_of(i)->min_limit_mw;
    *maxLimit = nv_model_of(i)->tdp_mw;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                          unsigned long long *energy)
{
    NV_DEVICE(device, i);
    ARG(energy);
    struct nv_reading r;
    nv_read(i, &r);
    *energy = r.energy_mj;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerSource(nvmlDevice_t device, nvmlPowerSource_t *powerSource)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(powerSource);
    *powerSource = NVML_POWER_SOURCE_AC;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    NV_DEVICE(device, i);
    ARG(pState);
    struct nv_reading r;
    nv_read(i, &r);
    *pState = r.pstate;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    return nvmlDeviceGetPerformanceState(device, pState);
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedPerformanceStates(nvmlDevice_t device,
                                                              nvmlPstates_t *pstates,
                                                              unsigned int size)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(pstates);
    static const nvmlPstates_t have[] = {NVML_PSTATE_0, NVML_PSTATE_8};
    if (size < GS_ARRAY_SIZE(have))
        return NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned int k = 0; k < size; k++)
        pstates[k] = k < GS_ARRAY_SIZE(have) ? have[k] : NVML_PSTATE_UNKNOWN;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetDynamicPstatesInfo(nvmlDevice_t device,
                                                      nvmlGpuDynamicPstatesInfo_t *info)
{
    NV_DEVICE(device, i);
    ARG(info);
    struct nv_reading r;
    nv_read(i, &r);
    memset(info, 0, sizeof(*info));
    /* Domains: 0 graphics, 1 frame buffer, 2 video, 3 bus interface (as the header lists them). */
    static const unsigned int inc[4] = {30, 30, 30, 30}, dec[4] = {60, 60, 60, 60};
    for (int k = 0; k < 4; k++) {
        info->utilization[k].bIsPresent = 1;
        info->utilization[k].incThreshold = inc[k];
        info->utilization[k].decThreshold = dec[k];
    }
    info->utilization[0].percentage = r.util_1s;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ clocks */
static nvmlReturn_t clock_of(int i, nvmlClockType_t type, unsigned int sm, unsigned int mem,
                             unsigned int video, unsigned int *out)
{
    (void)i;
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
        *out = sm;
        return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
        *out = mem;
        return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO:
        *out = video;
        return NVML_SUCCESS;
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
}

NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                             unsigned int *clock)
{
    NV_DEVICE(device, i);
    ARG(clock);
    struct nv_reading r;
    nv_read(i, &r);
    return clock_of(i, type, r.sm_mhz, r.mem_mhz, r.video_mhz, clock);
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                unsigned int *clock)
{
    NV_DEVICE(device, i);
    ARG(clock);
    const struct nv_model *m = nv_model_of(i);
    return clock_of(i, type, m->sm_max_mhz, m->mem_mhz, m->video_max_mhz, clock);
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxCustomerBoostClock(nvmlDevice_t device, nvmlClockType_t type,
                                                         unsigned int *clock)
{
    return nvmlDeviceGetMaxClockInfo(device, type, clock);
}

NVML_API nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, nvmlClockType_t type,
                                                     unsigned int *clock)
{
    NV_DEVICE(device, i);
    ARG(clock);
    const struct nv_model *m = nv_model_of(i);
    return clock_of(i, type, m->sm_app_mhz, m->mem_mhz, m->video_max_mhz, clock);
}

NVML_API nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device,
                                                            nvmlClockType_t type,
                                                            unsigned int *clock)
{
    return nvmlDeviceGetApplicationsClock(device, type, clock);
}

NVML_API nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t type,
                                         nvmlClockId_t id, unsigned int *clock)
{
    switch (id) {
    case NVML_CLOCK_ID_CURRENT:
        return nvmlDeviceGetClockInfo(device, type, clock);
    case NVML_CLOCK_ID_APP_CLOCK_TARGET:
    case NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
        return nvmlDeviceGetApplicationsClock(device, type, clock);
    case NVML_CLOCK_ID_CUSTOMER_BOOST_MAX:
        return nvmlDeviceGetMaxClockInfo(device, type, clock);
    default:
        NV_CHECK_INIT();
        return NVML_ERROR_INVALID_ARGUMENT;
    }
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int *count,
                                                         unsigned int *clocksMHz)
{
    NV_DEVICE(device, i);
    ARG(count);
    const struct nv_model *m = nv_model_of(i);
    unsigned int n = m->mem_idle_mhz != m->mem_mhz ? 2 : 1;
    if (!clocksMHz || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    clocksMHz[0] = m->mem_mhz;
    if (n == 2)
        clocksMHz[1] = m->mem_idle_mhz;
    *count = n;
    return NVML_SUCCESS;
}

/* Graphics clocks in 15 MHz steps from the maximum down to the idle clock, highest first. */
NVML_API nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device,
                                                           unsigned int memoryClockMHz,
                                                           unsigned int *count,
                                                           unsigned int *clocksMHz)
{
    NV_DEVICE(device, i);
    ARG(count);
    const struct nv_model *m = nv_model_of(i);
    if (memoryClockMHz != m->mem_mhz && memoryClockMHz != m->mem_idle_mhz)
        return NVML_ERROR_NOT_FOUND;
    unsigned int n = (m->sm_max_mhz - m->sm_idle_mhz) / 15 + 1;
    if (!clocksMHz || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int k = 0; k < n; k++)
        clocksMHz[k] = m->sm_max_mhz - 15 * k;
    *count = n;
    return NVML_SUCCESS;
}

/* NOLINTBEGIN(readability-non-const-parameter): NVML's prototype; nothing is written here */
NVML_API nvmlReturn_t nvmlDeviceGetAutoBoostedClocksEnabled(nvmlDevice_t device,
                                                            nvmlEnableState_t *isEnabled,
                                                            nvmlEnableState_t *defaultIsEnabled)
/* NOLINTEND(readability-non-const-parameter): NVML's prototype */
{
    NV_DEVICE(device, i);
    (void)i;
    (void)isEnabled;
    (void)defaultIsEnabled;
    return NVML_ERROR_NOT_SUPPORTED; /* not on data-centre boards since Volta */
}

#define SUPPORTED_REASONS                                                                          \
    (nvmlClocksEventReasonGpuIdle | nvmlClocksEventReasonApplicationsClocksSetting |               \
     nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwSlowdown |                        \
     nvmlClocksEventReasonSyncBoost | nvmlClocksEventReasonSwThermalSlowdown |                     \
     nvmlClocksThrottleReasonHwThermalSlowdown | nvmlClocksThrottleReasonHwPowerBrakeSlowdown)

NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                             unsigned long long *reasons)
{
    NV_DEVICE(device, i);
    ARG(reasons);
    struct nv_reading r;
    nv_read(i, &r);
    /* Idle: clocks are held down because nothing runs; busy: at full clocks, nothing limits. */
    *reasons = r.util_1s == 0 ? nvmlClocksEventReasonGpuIdle : nvmlClocksEventReasonNone;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                unsigned long long *reasons)
{
    return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                               unsigned long long *reasons)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(reasons);
    *reasons = SUPPORTED_REASONS;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device,
                                                                  unsigned long long *reasons)
{
    return nvmlDeviceGetSupportedClocksEventReasons(device, reasons);
}

NVML_API nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device,
                                                   nvmlPerfPolicyType_t perfPolicyType,
                                                   nvmlViolationTime_t *violTime)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(violTime);
    if ((unsigned int)perfPolicyType >= NVML_PERF_POLICY_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Nothing ever holds a simulated GPU below its clocks. */
    violTime->referenceTime = nv_realtime_us();
    violTime->violationTime = 0;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ PCIe, BAR1, affinity */
#define PCIE_CONST(fn, expr)                                                                       \
    NVML_API nvmlReturn_t fn(nvmlDevice_t device, unsigned int *out)                               \
    {                                                                                              \
        NV_DEVICE(device, i);                                                                      \
        ARG(out);                                                                                  \
        *out = (expr);                                                                             \
        return NVML_SUCCESS;                                                                       \
    }
PCIE_CONST(nvmlDeviceGetCurrPcieLinkGeneration, nv_model_of(i)->pcie_gen)
PCIE_CONST(nvmlDeviceGetMaxPcieLinkGeneration, nv_model_of(i)->pcie_gen)
PCIE_CONST(nvmlDeviceGetGpuMaxPcieLinkGeneration, nv_model_of(i)->pcie_gen)
PCIE_CONST(nvmlDeviceGetCurrPcieLinkWidth, nv_model_of(i)->pcie_width)
PCIE_CONST(nvmlDeviceGetMaxPcieLinkWidth, nv_model_of(i)->pcie_width)
PCIE_CONST(nvmlDeviceGetPcieReplayCounter, 0)

/* Per-lane transfer rate in MT/s per generation (PCIe 1.0 … 6.0): what NVML's speed reports. */
static unsigned int pcie_mts(unsigned int gen)
{
    static const unsigned int mts[] = {0, 2500, 5000, 8000, 16000, 32000, 64000};
    return gen < GS_ARRAY_SIZE(mts) ? mts[gen] : 0;
}
PCIE_CONST(nvmlDeviceGetPcieLinkMaxSpeed, pcie_mts(nv_model_of(i)->pcie_gen))
PCIE_CONST(nvmlDeviceGetPcieSpeed, pcie_mts(nv_model_of(i)->pcie_gen))

NVML_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                  nvmlPcieUtilCounter_t counter,
                                                  unsigned int *value)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(value);
    if ((unsigned int)counter >= NVML_PCIE_UTIL_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* KB/s over the last 20 ms: copies are not kept on a timeline (they occupy streams only), so
     * gpusim reports the idle bus. */
    *value = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetBusType(nvmlDevice_t device, nvmlBusType_t *type)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(type);
    *type = NVML_BUS_TYPE_PCIE;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t *bar1)
{
    NV_DEVICE(device, i);
    ARG(bar1);
    /* The driver maps a few MiB of BAR1 for itself; gpusim keeps nothing else mapped. */
    uint64_t total = nv_model_of(i)->bar1_bytes, used = 2ull << 20;
    bar1->bar1Total = total;
    bar1->bar1Used = used;
    bar1->bar1Free = total - used;
    return NVML_SUCCESS;
}

/* CPUs of NUMA node `node` (sysfs cpulist), else every configured CPU. */
static nvmlReturn_t node_cpus(int node, unsigned int size, unsigned long *set)
{
    const unsigned int bits = 8 * sizeof(unsigned long);
    memset(set, 0, size * sizeof(unsigned long));
    char path[96], buf[4096] = "";
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node < 0 ? 0 : node);
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(buf, sizeof(buf), f))
            buf[0] = '\0';
        fclose(f);
    }
    if (!buf[0] || buf[0] == '\n') {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        snprintf(buf, sizeof(buf), "0-%ld", n > 0 ? n - 1 : 0);
    }
    for (char *p = buf; *p && *p != '\n';) {
        char *end;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtoul(end + 1, &end, 10);
        for (unsigned long c = a; c <= b && c < (unsigned long)size * bits; c++)
            set[c / bits] |= 1ul << (c % bits);
        p = *end == ',' ? end + 1 : end;
    }
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device,
                                                          unsigned int cpuSetSize,
                                                          unsigned long *cpuSet,
                                                          nvmlAffinityScope_t scope)
{
    NV_DEVICE(device, i);
    if (!cpuSet || cpuSetSize == 0 || scope > NVML_AFFINITY_SCOPE_SOCKET)
        return NVML_ERROR_INVALID_ARGUMENT;
    return node_cpus(nv.cfg.dev[i].numa_node, cpuSetSize, cpuSet);
}

NVML_API nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
                                               unsigned long *cpuSet)
{
    return nvmlDeviceGetCpuAffinityWithinScope(device, cpuSetSize, cpuSet,
                                               NVML_AFFINITY_SCOPE_NODE);
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize,
                                                  unsigned long *nodeSet, nvmlAffinityScope_t scope)
{
    NV_DEVICE(device, i);
    if (!nodeSet || nodeSetSize == 0 || scope > NVML_AFFINITY_SCOPE_SOCKET)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(nodeSet, 0, nodeSetSize * sizeof(unsigned long));
    int node = nv.cfg.dev[i].numa_node < 0 ? 0 : nv.cfg.dev[i].numa_node;
    const unsigned int bits = 8 * sizeof(unsigned long);
    if ((unsigned int)node < nodeSetSize * bits)
        nodeSet[node / bits] |= 1ul << (node % bits);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ ECC, retirement, remapping */
NVML_API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                           nvmlEnableState_t *pending)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(current && pending);
    *current = *pending = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

/* No memory errors are simulated: every counter reads 0 (valid arguments checked as NVML). */
static nvmlReturn_t ecc_args(nvmlMemoryErrorType_t t, nvmlEccCounterType_t c)
{
    if ((unsigned int)t >= NVML_MEMORY_ERROR_TYPE_COUNT ||
        (unsigned int)c >= NVML_ECC_COUNTER_TYPE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                  nvmlMemoryErrorType_t errorType,
                                                  nvmlEccCounterType_t counterType,
                                                  unsigned long long *eccCounts)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(eccCounts);
    nvmlReturn_t r = ecc_args(errorType, counterType);
    if (r == NVML_SUCCESS)
        *eccCounts = 0;
    return r;
}

NVML_API nvmlReturn_t nvmlDeviceGetDetailedEccErrors(nvmlDevice_t device,
                                                     nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     nvmlEccErrorCounts_t *eccCounts)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(eccCounts);
    nvmlReturn_t r = ecc_args(errorType, counterType);
    if (r == NVML_SUCCESS)
        memset(eccCounts, 0, sizeof(*eccCounts));
    return r;
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device,
                                                      nvmlMemoryErrorType_t errorType,
                                                      nvmlEccCounterType_t counterType,
                                                      nvmlMemoryLocation_t locationType,
                                                      unsigned long long *count)
{
    NV_DEVICE(device, i);
    ARG(count);
    nvmlReturn_t r = ecc_args(errorType, counterType);
    if (r != NVML_SUCCESS)
        return r;
    if ((unsigned int)locationType >= NVML_MEMORY_LOCATION_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* HBM boards (Ampere+) have no texture-memory/CBU counters; SRAM only from Ampere. */
    bool hbm = nv.cfg.dev[i].arch >= NVML_DEVICE_ARCH_AMPERE;
    if ((hbm && (locationType == NVML_MEMORY_LOCATION_TEXTURE_MEMORY ||
                 locationType == NVML_MEMORY_LOCATION_CBU)) ||
        (!hbm && locationType == NVML_MEMORY_LOCATION_SRAM))
        return NVML_ERROR_NOT_SUPPORTED;
    *count = 0;
    return NVML_SUCCESS;
}

/* NOLINTBEGIN(readability-non-const-parameter): NVML's prototype; nothing is written here */
NVML_API nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device,
                                                   nvmlPageRetirementCause_t cause,
                                                   unsigned int *pageCount,
                                                   unsigned long long *addresses,
                                                   unsigned long long *timestamps)
/* NOLINTEND(readability-non-const-parameter): NVML's prototype */
{
    NV_DEVICE(device, i);
    (void)addresses;
    (void)timestamps;
    ARG(pageCount);
    if ((unsigned int)cause >= NVML_PAGE_RETIREMENT_CAUSE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (nv_model_of(i)->remapped_rows)
        return NVML_ERROR_NOT_SUPPORTED; /* Ampere+ remap rows instead */
    *pageCount = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device,
                                                nvmlPageRetirementCause_t cause,
                                                unsigned int *pageCount,
                                                unsigned long long *addresses)
{
    return nvmlDeviceGetRetiredPages_v2(device, cause, pageCount, addresses, NULL);
}

NVML_API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                             nvmlEnableState_t *isPending)
{
    NV_DEVICE(device, i);
    ARG(isPending);
    if (nv_model_of(i)->remapped_rows)
        return NVML_ERROR_NOT_SUPPORTED;
    *isPending = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                                unsigned int *uncRows, unsigned int *isPending,
                                                unsigned int *failureOccurred)
{
    NV_DEVICE(device, i);
    ARG(corrRows && uncRows && isPending && failureOccurred);
    if (!nv_model_of(i)->remapped_rows)
        return NVML_ERROR_NOT_SUPPORTED;
    *corrRows = *uncRows = *isPending = *failureOccurred = 0;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ fans */
NVML_API nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int *numFans)
{
    NV_DEVICE(device, i);
    ARG(numFans);
    *numFans = nv_model_of(i)->fans;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan,
                                               unsigned int *speed)
{
    NV_DEVICE(device, i);
    ARG(speed);
    if (nv_model_of(i)->fans == 0)
        return NVML_ERROR_NOT_SUPPORTED; /* passively cooled: nvidia-smi prints N/A */
    if (fan >= nv_model_of(i)->fans)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nv_reading r;
    nv_read(i, &r);
    *speed = r.fan_pct;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
    return nvmlDeviceGetFanSpeed_v2(device, 0, speed);
}

NVML_API nvmlReturn_t nvmlDeviceGetTargetFanSpeed(nvmlDevice_t device, unsigned int fan,
                                                  unsigned int *targetSpeed)
{
    return nvmlDeviceGetFanSpeed_v2(device, fan, targetSpeed);
}

NVML_API nvmlReturn_t nvmlDeviceGetMinMaxFanSpeed(nvmlDevice_t device, unsigned int *minSpeed,
                                                  unsigned int *maxSpeed)
{
    NV_DEVICE(device, i);
    ARG(minSpeed && maxSpeed);
    if (nv_model_of(i)->fans == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *minSpeed = 30;
    *maxSpeed = 100;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ video engines, FBC */
/* gpusim has no encoder/decoder work: utilisation 0 over NVML's usual sampling period. Boards
 * without the engine answer NOT_SUPPORTED (A100/H200 have no NVENC, T4 no NVJPG/OFA). */
static nvmlReturn_t engine_util(nvmlDevice_t device, unsigned int engines_off,
                                unsigned int *utilization, unsigned int *period)
{
    NV_DEVICE(device, i);
    ARG(utilization && period);
    const unsigned int *count = (const unsigned int *)((const char *)nv_model_of(i) + engines_off);
    if (*count == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *utilization = 0;
    *period = 167000;
    return NVML_SUCCESS;
}

#define ENGINE_UTIL(fn, field)                                                                     \
    NVML_API nvmlReturn_t fn(nvmlDevice_t device, unsigned int *utilization,                       \
                             unsigned int *samplingPeriodUs)                                       \
    {                                                                                              \
        return engine_util(device, offsetof(struct nv_model, field), utilization,                  \
                           samplingPeriodUs);                                                      \
    }
ENGINE_UTIL(nvmlDeviceGetEncoderUtilization, encoders)
ENGINE_UTIL(nvmlDeviceGetDecoderUtilization, decoders)
ENGINE_UTIL(nvmlDeviceGetJpgUtilization, jpegs)
ENGINE_UTIL(nvmlDeviceGetOfaUtilization, ofas)

NVML_API nvmlReturn_t nvmlDeviceGetEncoderCapacity(nvmlDevice_t device,
                                                   nvmlEncoderType_t encoderQueryType,
                                                   unsigned int *encoderCapacity)
{
    NV_DEVICE(device, i);
    ARG(encoderCapacity);
    if (encoderQueryType > NVML_ENCODER_QUERY_AV1)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (nv_model_of(i)->encoders == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *encoderCapacity = 100; /* percent left: no sessions */
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetEncoderStats(nvmlDevice_t device, unsigned int *sessionCount,
                                                unsigned int *averageFps,
                                                unsigned int *averageLatency)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(sessionCount && averageFps && averageLatency);
    *sessionCount = *averageFps = *averageLatency = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetEncoderSessions(nvmlDevice_t device, unsigned int *sessionCount,
                                                   nvmlEncoderSessionInfo_t *sessionInfos)
{
    NV_DEVICE(device, i);
    (void)i;
    (void)sessionInfos;
    ARG(sessionCount);
    *sessionCount = 0;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetFBCStats(nvmlDevice_t device, nvmlFBCStats_t *fbcStats)
{
    NV_DEVICE(device, i);
    (void)i;
    ARG(fbcStats);
    memset(fbcStats, 0, sizeof(*fbcStats));
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetFBCSessions(nvmlDevice_t device, unsigned int *sessionCount,
                                               nvmlFBCSessionInfo_t *sessionInfo)
{
    NV_DEVICE(device, i);
    (void)i;
    (void)sessionInfo;
    ARG(sessionCount);
    *sessionCount = 0;
    return NVML_SUCCESS;
}
