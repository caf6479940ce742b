/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks and process identity (pid + start time + pid namespace) for dead-process detection. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/vgpu-internal.h"

uint64_t vgpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Field 22 of /proc/<pid>/stat (start time in clock ticks after boot); 0 if the process is gone. */
uint64_t vgpu_proc_start_time(int pid)
{
    char path[64];
    char buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* comm may contain spaces and parentheses: fields start after the LAST ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    /* after ')' come fields 3.. ; start time is field 22 -> the 20th token after ')' */
    int field = 2;
    unsigned long long v = 0;
    char *save = NULL;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 3 && tok[0] == 'Z')
            return 0; /* zombie: its memory is gone with it */
        if (field == 22) {
            if (sscanf(tok, "%llu", &v) != 1)
                return 0;
            return v ? v : 1;
        }
    }
    return 0;
}

uint64_t vgpu_self_pidns(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}
