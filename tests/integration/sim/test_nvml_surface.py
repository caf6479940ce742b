#!/usr/bin/env python3
"""gpusim's libnvidia-ml.so.1 exports exactly the table src/sim/nvml-exports.def, and the table
covers the device queries nvidia-smi -q and DCGM make (issue 20 item 2). The list below is
written from NVML's public header (nvml.h, as NVIDIA/go-nvml vendors it), one name per query
nvidia-smi -q prints and DCGM's NVML-backed fields read; the versioned symbol is the one the
header maps the plain name to (nvmlEventSetWait -> nvmlEventSetWait_v2 ...)."""
import os
import re
import subprocess
import sys

from gstest import Tap, env_paths

REQUIRED = """
nvmlInit nvmlInit_v2 nvmlInitWithFlags nvmlShutdown nvmlErrorString
nvmlSystemGetDriverVersion nvmlSystemGetNVMLVersion nvmlSystemGetCudaDriverVersion
nvmlSystemGetCudaDriverVersion_v2 nvmlSystemGetProcessName nvmlSystemGetHicVersion
nvmlSystemGetTopologyGpuSet
nvmlDeviceGetCount nvmlDeviceGetCount_v2 nvmlDeviceGetHandleByIndex nvmlDeviceGetHandleByIndex_v2
nvmlDeviceGetHandleByUUID nvmlDeviceGetHandleByPciBusId nvmlDeviceGetHandleByPciBusId_v2
nvmlDeviceGetHandleBySerial
nvmlDeviceGetName nvmlDeviceGetUUID nvmlDeviceGetIndex nvmlDeviceGetMinorNumber nvmlDeviceGetBrand
nvmlDeviceGetArchitecture nvmlDeviceGetCudaComputeCapability
nvmlDeviceGetPciInfo nvmlDeviceGetPciInfo_v2 nvmlDeviceGetPciInfo_v3
nvmlDeviceGetSerial nvmlDeviceGetVbiosVersion nvmlDeviceGetBoardPartNumber nvmlDeviceGetBoardId
nvmlDeviceGetMultiGpuBoard nvmlDeviceGetInforomVersion nvmlDeviceGetInforomImageVersion
nvmlDeviceGetInforomConfigurationChecksum
nvmlDeviceGetTemperature nvmlDeviceGetTemperatureV nvmlDeviceGetTemperatureThreshold
nvmlDeviceGetPowerUsage nvmlDeviceGetPowerManagementMode nvmlDeviceGetPowerManagementLimit
nvmlDeviceGetPowerManagementLimitConstraints nvmlDeviceGetPowerManagementDefaultLimit
nvmlDeviceGetEnforcedPowerLimit nvmlDeviceGetTotalEnergyConsumption nvmlDeviceGetPowerState
nvmlDeviceGetPowerSource
nvmlDeviceGetClockInfo nvmlDeviceGetMaxClockInfo nvmlDeviceGetApplicationsClock
nvmlDeviceGetDefaultApplicationsClock nvmlDeviceGetClock nvmlDeviceGetMaxCustomerBoostClock
nvmlDeviceGetSupportedMemoryClocks nvmlDeviceGetSupportedGraphicsClocks
nvmlDeviceGetAutoBoostedClocksEnabled
nvmlDeviceGetPerformanceState nvmlDeviceGetSupportedPerformanceStates
nvmlDeviceGetDynamicPstatesInfo
nvmlDeviceGetCurrPcieLinkGeneration nvmlDeviceGetMaxPcieLinkGeneration
nvmlDeviceGetGpuMaxPcieLinkGeneration nvmlDeviceGetCurrPcieLinkWidth nvmlDeviceGetMaxPcieLinkWidth
nvmlDeviceGetPcieThroughput nvmlDeviceGetPcieReplayCounter nvmlDeviceGetPcieLinkMaxSpeed
nvmlDeviceGetPcieSpeed nvmlDeviceGetBusType
nvmlDeviceGetEccMode nvmlDeviceGetDefaultEccMode nvmlDeviceGetTotalEccErrors
nvmlDeviceGetDetailedEccErrors nvmlDeviceGetMemoryErrorCounter nvmlDeviceGetRetiredPages
nvmlDeviceGetRetiredPages_v2 nvmlDeviceGetRetiredPagesPendingStatus nvmlDeviceGetRemappedRows
nvmlDeviceGetNumFans nvmlDeviceGetFanSpeed nvmlDeviceGetFanSpeed_v2 nvmlDeviceGetTargetFanSpeed
nvmlDeviceGetMinMaxFanSpeed
nvmlDeviceGetEncoderUtilization nvmlDeviceGetDecoderUtilization nvmlDeviceGetJpgUtilization
nvmlDeviceGetOfaUtilization nvmlDeviceGetEncoderCapacity nvmlDeviceGetEncoderStats
nvmlDeviceGetEncoderSessions nvmlDeviceGetFBCStats nvmlDeviceGetFBCSessions
nvmlDeviceGetCurrentClocksThrottleReasons nvmlDeviceGetCurrentClocksEventReasons
nvmlDeviceGetSupportedClocksThrottleReasons nvmlDeviceGetSupportedClocksEventReasons
nvmlDeviceGetViolationStatus
nvmlDeviceGetBAR1MemoryInfo nvmlDeviceGetMemoryInfo nvmlDeviceGetMemoryInfo_v2
nvmlDeviceGetMemoryBusWidth
nvmlDeviceGetCpuAffinity nvmlDeviceGetCpuAffinityWithinScope nvmlDeviceGetMemoryAffinity
nvmlDeviceGetComputeMode nvmlDeviceGetPersistenceMode nvmlDeviceGetDisplayMode
nvmlDeviceGetDisplayActive nvmlDeviceGetDriverModel nvmlDeviceGetDriverModel_v2
nvmlDeviceGetVirtualizationMode nvmlDeviceGetMigMode nvmlDeviceGetMaxMigDeviceCount
nvmlDeviceIsMigDeviceHandle nvmlDeviceGetGpuInstanceId nvmlDeviceGetComputeInstanceId
nvmlDeviceGetAttributes_v2 nvmlDeviceGetNumGpuCores nvmlDeviceGetGspFirmwareMode
nvmlDeviceGetGspFirmwareVersion
nvmlDeviceGetAccountingMode nvmlDeviceGetAccountingStats nvmlDeviceGetAccountingPids
nvmlDeviceGetAccountingBufferSize
nvmlDeviceGetFieldValues nvmlDeviceClearFieldValues nvmlDeviceGetSamples
nvmlDeviceGetUtilizationRates nvmlDeviceGetProcessUtilization
nvmlDeviceGetProcessesUtilizationInfo
nvmlDeviceGetComputeRunningProcesses nvmlDeviceGetComputeRunningProcesses_v2
nvmlDeviceGetComputeRunningProcesses_v3 nvmlDeviceGetGraphicsRunningProcesses
nvmlDeviceGetGraphicsRunningProcesses_v2 nvmlDeviceGetGraphicsRunningProcesses_v3
nvmlDeviceGetMPSComputeRunningProcesses_v3
nvmlDeviceGetTopologyCommonAncestor nvmlDeviceGetTopologyNearestGpus nvmlDeviceGetNvLinkState
nvmlDeviceGetNvLinkRemotePciInfo_v2
nvmlDeviceGetSupportedEventTypes nvmlEventSetCreate nvmlDeviceRegisterEvents nvmlEventSetWait
nvmlEventSetWait_v2 nvmlEventSetFree
nvmlGetExcludedDeviceCount nvmlGetExcludedDeviceInfoByIndex
nvmlUnitGetCount nvmlUnitGetHandleByIndex nvmlUnitGetUnitInfo nvmlUnitGetLedState
nvmlUnitGetPsuInfo nvmlUnitGetTemperature nvmlUnitGetFanSpeedInfo nvmlUnitGetDevices
""".split()


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True,
                         check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if ln.split()[1:2] in (['T'], ['W'])}


def main():
    t = Tap()
    p = env_paths()
    nvml = exported(os.path.join(p['GS_SIM_DIR'], 'libnvidia-ml.so.1'))
    with open(os.path.join(p['GS_SOURCE_ROOT'], 'src', 'sim', 'nvml-exports.def')) as f:
        table = re.findall(r'^NV\((\w+)\)', f.read(), re.M)
    t.is_eq(sorted(n for n in set(table) if table.count(n) > 1), [], 'each name listed once')
    table = set(table)
    t.is_eq(sorted(nvml - table), [], 'every exported NVML symbol is in nvml-exports.def')
    t.is_eq(sorted(table - nvml), [], 'every nvml-exports.def entry is exported')
    t.is_eq(sorted(set(REQUIRED) - table), [],
            f'the {len(REQUIRED)} queries nvidia-smi -q and DCGM make are all in the table')
    t.is_eq(len(REQUIRED), len(set(REQUIRED)), 'the required list has no repeats')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
