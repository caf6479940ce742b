/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one NVML loader of gpuslice's programs. libnvidia-ml.so.1 is opened by soname at run time
 * (never linked); the functions come from the X-macro list gpu/nvml.def; declarations are our own
 * (abi/nvml_abi.h).
 *
 *     struct gpu_nvml nv;
 *     if (gpu_nvml_open(&nv, GPU_NVML_USE_DISCOVERY, 0, &err) < 0) ...   // err names the cause
 *     nv.nvmlDeviceGetCount_v2(&count);
 *     gpu_nvml_close(&nv);
 *
 * Not thread-safe per struct: each thread/caller opens its own (NVML reference-counts
 * nvmlInit_v2/nvmlShutdown itself).
 */
#ifndef GS_GPU_NVML_H
#define GS_GPU_NVML_H

#include "base/error.h"
#include "abi/nvml_abi.h"

/* Users of NVML: which functions each cannot do without (see gpu/nvml.def). */
#define GPU_NVML_USE_DISCOVERY 0x1u /* gpu_discover: the published device model */
#define GPU_NVML_USE_SMI       0x2u /* gpu_smi_print / gpu_smi_query */
#define GPU_NVML_USE_USAGE     0x4u /* memory use and processes per device (monitor) */
#define GPU_NVML_USE_HEALTH    0x8u /* the health watcher: event sets, GPU-lost probes */

/* gpu_nvml_open flags. */
/* After the dynamic loader's search, also try $GPUSIM_SMI_NVML (a path) and the executable's own
 * directory (<exe dir>/libnvidia-ml.so.1, <exe dir>/../lib/gpusim/libnvidia-ml.so.1): for the
 * user-facing tools (gpusim-smi, gpuslice smi) run from an unpacked dist/. Daemons never use it. */
#define GPU_NVML_SEARCH_EXE_DIR 0x1u

struct gpu_nvml {
    void *lib; /* dlopen handle; NULL when closed */
#define GPU_NVML_FN(fn, needed_by) GS_NVML_PFN(fn) fn;
#include "gpu/nvml.def"
#undef GPU_NVML_FN
};

/*
 * Open NVML, resolve the list, call nvmlInit_v2. Returns 0, or with *nv zeroed:
 *   -ENOENT  library not found ("cannot load libnvidia-ml.so.1 (...)", the loader's reason)
 *   -ENOSYS  a function `uses` needs is missing ("libnvidia-ml.so.1 has no nvmlDeviceGetBrand")
 *   -EIO     nvmlInit_v2 failed ("NVML: nvmlInit_v2 failed: <nvmlErrorString>")
 */
int gpu_nvml_open(struct gpu_nvml *nv, unsigned uses, unsigned flags, struct gs_error *err);

/*
 * Where the NVIDIA driver's user-space libraries are, as seen by this process: "/" (default) is
 * the dynamic loader's own search; the GPU Operator's driver container keeps them under
 * /run/nvidia/driver (mounted into the plugin pod at the same path). With a root other than "/",
 * gpu_nvml_open first tries <root>/usr/lib64, <root>/usr/lib/<multiarch>, <root>/usr/lib,
 * <root>/lib64 and <root>/lib/<multiarch>, then the loader's search. Call once at start-up, before
 * any gpu_nvml_open (not thread-safe). -EINVAL (relative path), -ENOENT/-ENOTDIR with the path.
 */
int gpu_nvml_set_driver_root(const char *root, struct gs_error *err);

/* nvmlShutdown + dlclose; no-op on a closed or zeroed struct. */
void gpu_nvml_close(struct gpu_nvml *nv);

/* "NVML: <call> failed: <nvmlErrorString(r)>" into err; returns -EIO. */
int gpu_nvml_fail(const struct gpu_nvml *nv, struct gs_error *err, const char *call,
                  nvmlReturn_t r);

#endif /* GS_GPU_NVML_H */
