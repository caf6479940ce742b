/* SPDX-License-Identifier: Apache-2.0 */
#include "base/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n;
    do {
        n = read(fd, buf, len - 1);
    } while (n < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (n < 0)
        return -saved;
    buf[n] = '\0';
    return n;
}

int gs_proc_start_time(pid_t pid, uint64_t *out)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return -ESRCH;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    ssize_t n = read_small(path, buf, sizeof(buf));
    if (n < 0)
        return n == -ENOENT ? -ESRCH : (int)n;
    char *p = strrchr(buf, ')');
    if (!p)
        return -EIO;
    /* A zombie (or dead) process has exited: its resources are gone, only its pid remains. */
    if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
        return -ESRCH;
    /* After ')' come " S ppid ...": field 3 is the state, field 22 nineteen fields later. */
    for (int field = 2; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -EIO;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p + 1, &end, 10);
    if (errno || end == p + 1)
        return -EIO;
    *out = v;
    return 0;
}

int gs_boot_id(char *buf, size_t len)
{
    if (len == 0)
        return 0;
    ssize_t n = read_small("/proc/sys/kernel/random/boot_id", buf, len);
    if (n <= 0) {
        snprintf(buf, len, "unknown");
        return 0;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}
