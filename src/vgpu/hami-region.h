/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HAMi-core's shared region (include/gpuslice/hami_region.h) kept by libvgpu in environment mode
 * at CUDA_DEVICE_MEMORY_SHARED_CACHE, so that HAMi's vGPU monitor reads our usage and its
 * feedback (utilization_switch, recent_kernel) reaches our limiter (hami-region.c).
 * Without that variable, or with limits files present, there is no HAMi region: every function
 * below is then a no-op answering "none".
 */
#ifndef GS_VGPU_HAMI_REGION_H
#define GS_VGPU_HAMI_REGION_H

#include <stdbool.h>
#include <stdint.h>

/* Open (create and initialise if need be) and map the region at `path`; called once from the
 * configuration with HAMi's priority (CUDA_TASK_PRIORITY, default 1). 0 or -errno. */
int vgpu_hami_open(const char *path, int priority);
/* The mapped region, NULL when none (tests read it at HAMi-core's offsets). */
struct gs_hami_region *vgpu_hami_region(void);

/* A device this process uses: CUDA ordinal, UUID, limits (written to uuids/limit/sm_limit). */
void vgpu_hami_device(int ordinal, const char *uuid, uint64_t memory_limit, uint32_t cores);
/* This process's charged device memory on the device with this UUID changed to `used` bytes. */
void vgpu_hami_note_used(const char *uuid, uint64_t used);
/* HAMi's utilization_switch (1: the cap applies, 0: it does not), -1 when there is no region. */
int vgpu_hami_switch(void);
/* True while HAMi's monitor blocks launches (recent_kernel < 0). */
bool vgpu_hami_blocked(void);
/* A capped launch passed the gate: recent_kernel = 2 (unless blocked), last_kernel_time. */
void vgpu_hami_launched(void);

#endif /* GS_VGPU_HAMI_REGION_H */
