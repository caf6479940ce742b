/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What gpusim's NVML files share (nvml.c: init, identity, memory, processes; nvml-device.c: the
 * device queries nvidia-smi -q and DCGM make; nvml-events.c: event sets and fault delivery;
 * nvml-model.c: the per-preset thermal/power/clock model). The exported list: nvml-exports.def.
 */
#ifndef GS_SIM_NVML_INTERNAL_H
#define GS_SIM_NVML_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/macros.h"
#include "abi/nvml_abi.h"
#include "sim/sim-config.h"
#include "sim/sim-state.h"

#define NVML_API GS_EXPORT

struct nvmlDevice_st {
    int index;
};

struct nv_global {
    pthread_mutex_t lock;
    int refs;
    struct sim_config cfg;
    struct sim_state *st;
    struct nvmlDevice_st dev[SIM_MAX_DEVICES];
};
extern struct nv_global nv;

static inline bool nv_ready(void)
{
    return __atomic_load_n(&nv.refs, __ATOMIC_ACQUIRE) > 0;
}

#define NV_CHECK_INIT()                                                                            \
    do {                                                                                           \
        if (GS_UNLIKELY(!nv_ready()))                                                              \
            return NVML_ERROR_UNINITIALIZED;                                                       \
    } while (0)

/* Resolve a handle to a device index: NVML_ERROR_INVALID_ARGUMENT if it is not one of ours,
 * NVML_ERROR_GPU_IS_LOST while the device is lost (fault injection). */
#define NV_DEVICE(handle, idx)                                                                     \
    NV_CHECK_INIT();                                                                               \
    if (!(handle) || (handle) < &nv.dev[0] || (handle) >= &nv.dev[nv.cfg.ndev])                    \
        return NVML_ERROR_INVALID_ARGUMENT;                                                        \
    int idx = (handle)->index;                                                                     \
    if (GS_UNLIKELY(sim_dev_lost(nv.st, idx)))                                                     \
    return NVML_ERROR_GPU_IS_LOST

nvmlReturn_t nv_copy_str(char *dst, unsigned int len, const char *src);
uint64_t nv_realtime_us(void);
void nv_fill_pci(const struct sim_device_cfg *d, nvmlPciInfo_t *pci);
/* Busy share of [now - window, now) in percent (rounded). */
unsigned int nv_busy_percent(int dev, uint64_t window_ns);

/* ------------------------------------------------------------------ model (nvml-model.c) */
struct nv_model {
    unsigned int tdp_mw, min_limit_mw, idle_mw; /* power */
    unsigned int idle_c, load_c;                /* die temperature idle / under full load */
    unsigned int shutdown_c, slowdown_c, gpu_max_c, mem_max_c; /* thresholds (mem 0: none) */
    unsigned int sm_max_mhz, sm_idle_mhz, sm_app_mhz, mem_mhz, mem_idle_mhz, video_max_mhz;
    unsigned int pcie_gen, pcie_width;
    uint64_t bar1_bytes;
    unsigned int encoders, decoders, jpegs, ofas, fans, copy_engines;
    bool remapped_rows; /* Ampere+: row remapping; before: page retirement */
    char vbios[NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE];
    char part[NVML_DEVICE_PART_NUMBER_BUFFER_SIZE];
    char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE];
};

/* The model of device idx (filled once at init from the config: preset or file). */
const struct nv_model *nv_model_of(int idx);
void nv_model_init(const struct sim_config *cfg);

/* Load-dependent readings (see docs/internals/gpusim.md "NVML device model"). */
struct nv_reading {
    unsigned int util_1s;  /* % busy over the last second */
    unsigned int util_10s; /* % busy over the last ten seconds (temperature lags) */
    unsigned int power_mw; /* idle + (TDP - idle) * util_1s */
    unsigned int temp_c;   /* idle + (load - idle) * util_10s */
    unsigned int mem_temp_c;
    unsigned int sm_mhz, mem_mhz, video_mhz;
    unsigned int fan_pct;
    nvmlPstates_t pstate; /* P0 while busy in the last second, else P8 */
    unsigned long long energy_mj;
};
void nv_read(int idx, struct nv_reading *r);

#endif /* GS_SIM_NVML_INTERNAL_H */
