/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks and process identity (pid + start time + pid namespace) for dead-process detection. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "vgpu/vgpu-internal.h"

uint64_t vgpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Start time of a live process (base/proc.c: zombies count as gone); 0 if the process is gone. */
uint64_t vgpu_proc_start_time(int pid)
{
    uint64_t v = 0;
    if (gs_proc_start_time((pid_t)pid, &v) < 0)
        return 0;
    return v ? v : 1;
}

uint64_t vgpu_self_pidns(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}
