/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one NVML loader (gpu/nvml.h) against a stub libnvidia-ml.so.1 that has only the "usage"
 * functions: what each use requires, what stays optional, and the three errors.
 * LD_LIBRARY_PATH points at the stub (meson), so dlopen("libnvidia-ml.so.1") finds it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/discovery.h"
#include "gpu/nvml.h"
#include "gpu/smi.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    struct gpu_nvml nv;
    struct gs_error err = {0};

    is_int(gpu_nvml_open(&nv, GPU_NVML_USE_USAGE, 0, &err), 0,
           "usage: the stub has every function it needs");
    ok(nv.nvmlDeviceGetComputeRunningProcesses_v3 != NULL, "usage: processes resolved");
    ok(nv.nvmlDeviceGetBrand == NULL, "an optional function absent stays NULL");
    unsigned count = 99;
    is_int(nv.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS, "calls go to the library");
    is_int(count, 0, "the stub's answer");
    gpu_nvml_close(&nv);
    ok(nv.lib == NULL, "closed");
    gpu_nvml_close(&nv); /* no-op on a closed struct */

    memset(&err, 0, sizeof(err));
    is_int(gpu_nvml_open(&nv, GPU_NVML_USE_DISCOVERY, 0, &err), -ENOSYS,
           "discovery: a function it needs is missing -> -ENOSYS");
    is_str(err.msg, "libnvidia-ml.so.1 has no nvmlSystemGetDriverVersion",
           "the message names the first missing function of the list");
    ok(nv.lib == NULL && nv.nvmlInit_v2 == NULL, "nothing left open or half-resolved");

    struct gpu_inventory *inv = calloc(1, sizeof(*inv));
    memset(&err, 0, sizeof(err));
    is_int(gpu_discover("/nonexistent", inv, &err), -ENOSYS, "gpu_discover reports it");
    free(inv);

    memset(&err, 0, sizeof(err));
    is_int(gpu_smi_print(stdout, 0, &err), -ENOSYS, "the smi table too (it needs the PCI info)");
    is_str(err.msg, "libnvidia-ml.so.1 has no nvmlSystemGetDriverVersion", "same message");

    setenv("NVML_STUB_INIT_FAIL", "1", 1);
    memset(&err, 0, sizeof(err));
    is_int(gpu_nvml_open(&nv, GPU_NVML_USE_USAGE, 0, &err), -EIO, "nvmlInit_v2 failing -> -EIO");
    is_str(err.msg, "NVML: nvmlInit_v2 failed: stub: driver not loaded",
           "the message carries nvmlErrorString");
    unsetenv("NVML_STUB_INIT_FAIL");

    return tap_done();
}
