/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU discovery: NVML (libnvidia-ml.so.1 opened by soname, never linked) plus sysfs for the PCI
 * topology. Devices are ordered by minor number; device names are "hami-gpu-<minor>".
 */
#ifndef GS_GPU_DISCOVERY_H
#define GS_GPU_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define GPU_MAX_DEVICES 256
#define GPU_STR_MAX     128
#define GPU_MIB         (1024ULL * 1024ULL)

struct gpu_device {
    unsigned minor;
    unsigned index;               /* NVML index */
    char name[64];                /* "hami-gpu-<minor>" */
    char uuid[GPU_STR_MAX];       /* "GPU-..." */
    char product[GPU_STR_MAX];    /* "Tesla T4" */
    char brand[32];               /* "Tesla", "NVIDIA", ... */
    char architecture[32];        /* "Turing" */
    char compute_capability[32];  /* semver "7.5.0" */
    char driver_version[64];      /* semver "550.54.15" */
    char cuda_driver_version[32]; /* semver "12.4.0" */
    char nvml_bus_id[64];         /* NVML form "00000000:3B:00.0" */
    char pci_bus_id[32];          /* sysfs form "0000:3b:00.0"; "" when not in sysfs */
    char pcie_root[64];           /* "pci0000:00"; "" when unresolvable */
    int numa_node;                /* -1 = unknown */
    unsigned nvlink_domain;       /* smallest minor of the NVLink-connected set */
    uint64_t memory_total;        /* bytes, as NVML reports */
};

struct gpu_inventory {
    size_t n;
    struct gpu_device dev[GPU_MAX_DEVICES];
};

/* Discover through NVML. `sysfs_root` is "/sys" in production (tests point it elsewhere).
 * Returns 0 (possibly with n == 0 when NVML reports no GPUs) or a negative code with err set
 * ("libnvidia-ml.so.1: cannot open shared object file ..."). */
int gpu_discover(const char *sysfs_root, struct gpu_inventory *out, struct gs_error *err);

/* Turn a version string into semver MAJOR.MINOR.PATCH (leading zeros dropped, missing parts 0):
 * "535.104.05" -> "535.104.5", "550.54" -> "550.54.0". -EINVAL when not numeric dots. */
int gpu_semver(const char *in, char *out, size_t len);

/* Standard PCI attributes from sysfs for an NVML bus id: pci_bus_id ("0000:3b:00.0") and
 * pcie_root ("pci0000:00"), numa node (-1 if unknown). Fields stay "" when unresolvable. */
void gpu_resolve_pci(const char *sysfs_root, struct gpu_device *d);

#endif /* GS_GPU_DISCOVERY_H */
