/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA's device backend (gpu/device.h): discovery and health through NVML. */
#ifndef GS_GPU_NVIDIA_NVIDIA_H
#define GS_GPU_NVIDIA_NVIDIA_H

#include "gpu/device.h"

extern const struct gs_device_backend gpu_nvidia_backend;

#endif /* GS_GPU_NVIDIA_NVIDIA_H */
