/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Our own declarations of the subset of NVML (libnvidia-ml.so.1) that gpuslice implements
 * (gpusim) or interposes (libvgpu). Written from the documented ABI (NVML API reference: types,
 * enum values, struct layouts, exported symbol names); no NVIDIA header is vendored.
 *
 * Every function is declared under its exported symbol name (nvmlInit_v2, nvmlDeviceGetCount_v2,
 * ...); the real header's unversioned macros are deliberately not defined. Where NVML exports an
 * older symbol with an older struct (nvmlDeviceGetComputeRunningProcesses v1/v2), both are
 * declared. NVML_PFN(fn) is the function-pointer type of fn.
 */
#ifndef GS_COMMON_NVML_ABI_H
#define GS_COMMON_NVML_ABI_H

#include <assert.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GS_NVML_PFN(fn) __typeof__(&(fn))

/* ---------------------------------------------------------------- return codes */
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

/* ---------------------------------------------------------------- handles, buffer sizes */
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_NAME_BUFFER_SIZE           64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_BUFFER_SIZE           80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80
#define NVML_NVLINK_MAX_LINKS                  18
#define NVML_VALUE_NOT_AVAILABLE               (-1)

/* nvmlInitWithFlags */
#define NVML_INIT_FLAG_NO_GPUS   1
#define NVML_INIT_FLAG_NO_ATTACH 2

/* Versioned structs carry sizeof | version << 24 in their first field. */
#define NVML_STRUCT_VERSION(data, ver)                                                             \
    (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U))

/* ---------------------------------------------------------------- memory */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version; /* set to nvmlMemory_v2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

/* ---------------------------------------------------------------- PCI */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "%04X:%02X:%02X.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId; /* device id << 16 | vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "%08X:%02X:%02X.0" */
} nvmlPciInfo_t;

/* ---------------------------------------------------------------- processes and utilisation */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

/* The struct taken by the _v3 functions (same layout as v2). */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes; NVML_VALUE_NOT_AVAILABLE when unknown */
    unsigned int gpuInstanceId;       /* 0xFFFFFFFF when not MIG */
    unsigned int computeInstanceId;   /* 0xFFFFFFFF when not MIG */
} nvmlProcessInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU timestamp in microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* percent of the sample period during which a kernel executed */
    unsigned int memory; /* percent of the sample period during which memory was read/written */
} nvmlUtilization_t;

/* ---------------------------------------------------------------- enums */
typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

typedef enum nvmlGpuLevel_enum {
    NVML_TOPOLOGY_INTERNAL = 0,
    NVML_TOPOLOGY_SINGLE = 10,
    NVML_TOPOLOGY_MULTIPLE = 20,
    NVML_TOPOLOGY_HOSTBRIDGE = 30,
    NVML_TOPOLOGY_NODE = 40,
    NVML_TOPOLOGY_SYSTEM = 50,
} nvmlGpuTopologyLevel_t;

typedef enum nvmlBrandType_enum {
    NVML_BRAND_UNKNOWN = 0,
    NVML_BRAND_QUADRO = 1,
    NVML_BRAND_TESLA = 2,
    NVML_BRAND_NVS = 3,
    NVML_BRAND_GRID = 4,
    NVML_BRAND_GEFORCE = 5,
    NVML_BRAND_TITAN = 6,
    NVML_BRAND_NVIDIA_VAPPS = 7,
    NVML_BRAND_NVIDIA_VPC = 8,
    NVML_BRAND_NVIDIA_VCS = 9,
    NVML_BRAND_NVIDIA_VWS = 10,
    NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
    NVML_BRAND_QUADRO_RTX = 12,
    NVML_BRAND_NVIDIA_RTX = 13,
    NVML_BRAND_NVIDIA = 14,
    NVML_BRAND_GEFORCE_RTX = 15,
    NVML_BRAND_TITAN_RTX = 16,
} nvmlBrandType_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER    2
#define NVML_DEVICE_ARCH_MAXWELL   3
#define NVML_DEVICE_ARCH_PASCAL    4
#define NVML_DEVICE_ARCH_VOLTA     5
#define NVML_DEVICE_ARCH_TURING    6
#define NVML_DEVICE_ARCH_AMPERE    7
#define NVML_DEVICE_ARCH_ADA       8
#define NVML_DEVICE_ARCH_HOPPER    9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_UNKNOWN   0xffffffff

/* ---------------------------------------------------------------- layout checks (LP64) */
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t layout");
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t layout");
static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t layout");
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t");
static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8, "sample.timeStamp");

/* ---------------------------------------------------------------- prototypes */
nvmlReturn_t nvmlInit(void); /* v1 symbol */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length);

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount); /* v1 symbol */
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device); /* v1 */
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_v2_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type);
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t *pathInfo);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t *isActive);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t *pci);

#ifdef __cplusplus
}
#endif

#endif /* GS_COMMON_NVML_ABI_H */
