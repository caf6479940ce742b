/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An nvidia-smi-like table built ONLY from NVML calls (libnvidia-ml.so.1 opened with dlopen),
 * so that with libvgpu preloaded it shows what the container is allowed to see. Used by
 * gpusim-smi and `gpuslice smi`.
 *
 * NVML comes from gpu/nvml.h: "libnvidia-ml.so.1" (the dynamic loader's search: a real driver, or
 * gpusim via LD_LIBRARY_PATH); with `nvml_flags` GPU_NVML_SEARCH_EXE_DIR (gpusim-smi only), then
 * GPUSIM_SMI_NVML (a path), then next to the executable (<exe dir>/libnvidia-ml.so.1,
 * <exe dir>/../lib/gpusim/...). `gpuslice smi` passes 0: on a machine without a driver it says so
 * instead of showing gpusim's devices as if they were real.
 */
#ifndef GS_GPU_SMI_H
#define GS_GPU_SMI_H

#include <stdio.h>

#include "base/error.h"

/* Print the table to out. 0, or a negative code with err naming the NVML call that failed. */
int gpu_smi_print(FILE *out, unsigned nvml_flags, struct gs_error *err);

/*
 * nvidia-smi's --query-gpu=<fields> --format=csv[,noheader][,nounits]: one CSV line per GPU.
 * Fields: index, name, uuid, pci.bus_id, driver_version, compute_cap, memory.total,
 * memory.used, memory.free (MiB), utilization.gpu (%). An unknown field or format option is
 * -EINVAL with err naming it.
 */
int gpu_smi_query(FILE *out, const char *fields, const char *format, unsigned nvml_flags,
                  struct gs_error *err);

#endif /* GS_GPU_SMI_H */
