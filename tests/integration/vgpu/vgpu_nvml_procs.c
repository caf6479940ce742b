/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vgpu_nvml_procs: NVML's process lists of device 0 as a program sees them (test_nvml_procs.py),
 * looked up with dlopen + dlsym like nvidia-smi and agents do (libvgpu answers its hooks).
 * Prints key=value lines:
 *   count rc=<r> n=<n>              infos NULL, *infoCount 0 (the count query), _v3
 *   small rc=<r> n=<n>              a buffer one entry too small (when n >= 1), _v3
 *   v3|v2|v1 rc=<r> n=<n> guard=<ok|overwritten> then one line per entry:
 *     proc api=<v3|v2|v1> pid=<pid> mem=<bytes> gi=<gpuInstanceId> ci=<computeInstanceId>
 *     (v1 has no instance ids: gi/ci printed as -), guard: the entry after the room given is
 *     untouched (a v1 caller's array of 16-byte structs is not overrun)
 *   graphics rc=<r> n=<n> / mps rc=<r> n=<n>   the other lists (v3; count query)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nvml_abi.h"

#define ROOM 64

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "vgpu_nvml_procs: dlsym %s: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

int main(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "vgpu_nvml_procs: dlopen libnvidia-ml.so.1: %s\n", dlerror());
        return 2;
    }
    GS_NVML_PFN(nvmlInit_v2) init = (GS_NVML_PFN(nvmlInit_v2))sym(h, "nvmlInit_v2");
    GS_NVML_PFN(nvmlDeviceGetHandleByIndex_v2)
    by_index = (GS_NVML_PFN(nvmlDeviceGetHandleByIndex_v2))sym(h, "nvmlDeviceGetHandleByIndex_v2");
    GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses_v3)
    v3 = (GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses_v3))sym(
        h, "nvmlDeviceGetComputeRunningProcesses_v3");
    GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses_v2)
    v2 = (GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses_v2))sym(
        h, "nvmlDeviceGetComputeRunningProcesses_v2");
    GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses)
    v1 = (GS_NVML_PFN(nvmlDeviceGetComputeRunningProcesses))sym(
        h, "nvmlDeviceGetComputeRunningProcesses");
    GS_NVML_PFN(nvmlDeviceGetGraphicsRunningProcesses_v3)
    gfx = (GS_NVML_PFN(nvmlDeviceGetGraphicsRunningProcesses_v3))sym(
        h, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    GS_NVML_PFN(nvmlDeviceGetMPSComputeRunningProcesses_v3)
    mps = (GS_NVML_PFN(nvmlDeviceGetMPSComputeRunningProcesses_v3))sym(
        h, "nvmlDeviceGetMPSComputeRunningProcesses_v3");

    nvmlReturn_t r = init();
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "vgpu_nvml_procs: nvmlInit_v2: %d\n", (int)r);
        return 2;
    }
    nvmlDevice_t dev;
    r = by_index(0, &dev);
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "vgpu_nvml_procs: nvmlDeviceGetHandleByIndex_v2(0): %d\n", (int)r);
        return 2;
    }

    unsigned int n = 0;
    r = v3(dev, &n, NULL);
    printf("count rc=%d n=%u\n", (int)r, n);
    unsigned int want = n;

    static nvmlProcessInfo_t p3[ROOM + 1];
    if (want >= 1 && want <= ROOM) {
        n = want - 1;
        r = v3(dev, &n, p3);
        printf("small rc=%d n=%u\n", (int)r, n);
    }

    /* Room for exactly `want` entries, a guard entry after them. */
    unsigned int room = want <= ROOM ? want : ROOM;
    memset(p3, 0xAB, sizeof(p3));
    n = room;
    r = v3(dev, &n, p3);
    nvmlProcessInfo_t guard3;
    memset(&guard3, 0xAB, sizeof(guard3));
    printf("v3 rc=%d n=%u guard=%s\n", (int)r, n,
           memcmp(&p3[room], &guard3, sizeof(guard3)) ? "overwritten" : "ok");
    for (unsigned int i = 0; r == NVML_SUCCESS && i < n; i++)
        printf("proc api=v3 pid=%u mem=%llu gi=%u ci=%u\n", p3[i].pid, p3[i].usedGpuMemory,
               p3[i].gpuInstanceId, p3[i].computeInstanceId);

    static nvmlProcessInfo_v2_t p2[ROOM + 1];
    memset(p2, 0xAB, sizeof(p2));
    n = room;
    r = v2(dev, &n, p2);
    nvmlProcessInfo_v2_t guard2;
    memset(&guard2, 0xAB, sizeof(guard2));
    printf("v2 rc=%d n=%u guard=%s\n", (int)r, n,
           memcmp(&p2[room], &guard2, sizeof(guard2)) ? "overwritten" : "ok");
    for (unsigned int i = 0; r == NVML_SUCCESS && i < n; i++)
        printf("proc api=v2 pid=%u mem=%llu gi=%u ci=%u\n", p2[i].pid, p2[i].usedGpuMemory,
               p2[i].gpuInstanceId, p2[i].computeInstanceId);

    static nvmlProcessInfo_v1_t p1[ROOM + 1];
    memset(p1, 0xAB, sizeof(p1));
    n = room;
    r = v1(dev, &n, p1);
    nvmlProcessInfo_v1_t guard1;
    memset(&guard1, 0xAB, sizeof(guard1));
    printf("v1 rc=%d n=%u guard=%s\n", (int)r, n,
           memcmp(&p1[room], &guard1, sizeof(guard1)) ? "overwritten" : "ok");
    for (unsigned int i = 0; r == NVML_SUCCESS && i < n; i++)
        printf("proc api=v1 pid=%u mem=%llu gi=- ci=-\n", p1[i].pid, p1[i].usedGpuMemory);

    n = 0;
    r = gfx(dev, &n, NULL);
    printf("graphics rc=%d n=%u\n", (int)r, n);
    n = 0;
    r = mps(dev, &n, NULL);
    printf("mps rc=%d n=%u\n", (int)r, n);
    return 0;
}
