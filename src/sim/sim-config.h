/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim device model: the simulated GPUs of one machine, from a preset (GPUSIM_PRESET) or a
 * config file (GPUSIM_CONFIG, JSON or YAML). See docs/internals/gpusim.md for the file format.
 */
#ifndef GS_SIM_SIM_CONFIG_H
#define GS_SIM_SIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define SIM_MAX_DEVICES     16
#define SIM_MAX_LINKS       18
#define SIM_NAME_MAX        96
#define SIM_UUID_MAX        48
#define SIM_DRIVER_MAX      32
#define SIM_CONFIG_FILE_MAX (1024 * 1024)
#define SIM_DEFAULT_PRESET  "t4"

struct sim_device_cfg {
    char name[SIM_NAME_MAX];
    char uuid[SIM_UUID_MAX]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    unsigned int pci_domain, pci_bus, pci_device;
    unsigned int pci_device_id; /* PCI device id, e.g. 0x1EB8 (vendor 0x10DE implied) */
    unsigned int pci_subsystem_id;
    unsigned int minor;
    int numa_node;
    int pcie_switch;    /* devices with the same switch id share a PCIe switch */
    uint64_t total_mem; /* bytes */
    int sm_count;
    int max_threads_per_sm;
    int cc_major, cc_minor;
    unsigned int arch; /* NVML_DEVICE_ARCH_* */
    int brand;         /* nvmlBrandType_t */
    int clock_khz;
    int mem_clock_khz;
    int bus_width;
    int pcie_gbps; /* host<->device copy bandwidth, GB/s */
    int mem_gbps;  /* device memory bandwidth (device copies, memset), GB/s */
    int l2_bytes;
    int smem_per_sm;
    int smem_per_block_optin;
    int max_blocks_per_sm;
    int nlinks;
    int link_peer[SIM_MAX_LINKS]; /* peer device index of each NVLink, -1 = link down */
};

struct sim_config {
    char origin[64]; /* "preset t4" or "config <file>" (for messages) */
    char key[40];    /* short identity used in the default state-file name */
    char driver_version[SIM_DRIVER_MAX];
    int cuda_version;      /* e.g. 12080 */
    uint64_t ctx_overhead; /* bytes charged per context, default 0 */
    uint64_t hash;         /* identity of the whole model (state files record it) */
    int ndev;
    struct sim_device_cfg dev[SIM_MAX_DEVICES];
};

/* Names of the built-in presets, NULL-terminated. */
extern const char *const sim_preset_names[];

/* Fill cfg from a built-in preset ("t4", "h200x2", "a100x8", ...). */
int sim_config_preset(const char *name, struct sim_config *cfg, struct gs_error *err);

/* Parse a config document (JSON if it starts with '{' after blanks, YAML otherwise). `origin`
 * names the source in messages. */
int sim_config_parse(const char *text, size_t len, const char *origin, struct sim_config *cfg,
                     struct gs_error *err);

/* Read a config file (at most SIM_CONFIG_FILE_MAX bytes) and parse it. */
int sim_config_load_file(const char *path, struct sim_config *cfg, struct gs_error *err);

/* The model this process uses: GPUSIM_CONFIG if set, else GPUSIM_PRESET, else "t4".
 * GPUSIM_CONTEXT_OVERHEAD (bytes or quantity) overrides the per-context overhead. */
int sim_config_from_env(struct sim_config *cfg, struct gs_error *err);

/* 64-bit FNV-1a, used for identities and UUIDs. */
uint64_t sim_fnv1a(const void *data, size_t len, uint64_t seed);

/* Parse "DOMAIN:BUS:DEVICE[.FUNCTION]" (hex, NVML or CUDA form): 0, or -EINVAL / -ERANGE. */
int sim_parse_pci_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
                         unsigned int *device);

/* Format a PCI bus id like NVML's busId ("%08X:%02X:%02X.0"). */
void sim_pci_bus_id(const struct sim_device_cfg *d, char *buf, size_t len);

#endif /* GS_SIM_SIM_CONFIG_H */
