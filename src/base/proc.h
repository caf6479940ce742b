/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process identity from /proc, libc only (safe to compile into libvgpu and gpusim).
 * A pid alone is reused by the kernel; pid + start time (+ boot id across reboots) is not.
 */
#ifndef GS_COMMON_PROC_H
#define GS_COMMON_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Start time of `pid` in clock ticks after boot (field 22 of /proc/<pid>/stat; the command name
 * may hold spaces and parentheses, so fields are counted from the last ')').
 * 0, -ESRCH when the process does not exist or has exited (zombie), -EIO when the file cannot be
 * parsed. */
int gs_proc_start_time(pid_t pid, uint64_t *out);

/* /proc/sys/kernel/random/boot_id without the newline; "unknown" if unreadable. Returns 0. */
int gs_boot_id(char *buf, size_t len);

#endif /* GS_COMMON_PROC_H */
