/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim-specific entry points exported by gpusim's libcuda.so.1 (not part of CUDA). Programs
 * find them with dlsym(handle, "gpusimSetKernelCost") or cuGetProcAddress.
 *
 * Kernel cost: a function named `sim_busy_<N>` (N decimal microseconds, e.g. sim_busy_1000)
 * occupies the device for N µs per launch; any other name costs GPUSIM_DEFAULT_KERNEL_US
 * (default 10 µs). gpusimSetKernelCost overrides the cost of one function handle.
 */
#ifndef GS_SIM_GPUSIM_H
#define GS_SIM_GPUSIM_H

#include "abi/cuda_abi.h"

#define GPUSIM_DEFAULT_KERNEL_US 10ull

/* Set the device time one launch of f costs, in microseconds (0 allowed). */
CUresult gpusimSetKernelCost(CUfunction f, unsigned long long usec);
/* Read it back. */
CUresult gpusimGetKernelCost(CUfunction f, unsigned long long *usec);

#endif /* GS_SIM_GPUSIM_H */
