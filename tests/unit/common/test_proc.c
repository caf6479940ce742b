/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    uint64_t self = 0, again = 0, child_t = 0;
    is_int(gs_proc_start_time(getpid(), &self), 0, "own start time");
    ok(self > 0, "start time is positive");
    gs_proc_start_time(getpid(), &again);
    is_uint(again, self, "start time is stable");

    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    is_int(gs_proc_start_time(child, &child_t), 0, "child start time");
    ok(child_t >= self, "child started after us");
    kill(child, SIGKILL);
    uint64_t z;
    int zrc = 0;
    for (int i = 0; i < 200 && (zrc = gs_proc_start_time(child, &z)) == 0; i++)
        usleep(5000);
    is_int(zrc, -ESRCH, "killed but unreaped child (zombie): -ESRCH");
    waitpid(child, NULL, 0);
    uint64_t gone;
    is_int(gs_proc_start_time(child, &gone), -ESRCH, "reaped child: -ESRCH");
    is_int(gs_proc_start_time(0, &gone), -ESRCH, "pid 0 is not a process");
    is_int(gs_proc_start_time(-5, &gone), -ESRCH, "negative pid is not a process");

    char boot[64];
    gs_boot_id(boot, sizeof(boot));
    is_uint(strlen(boot), 36, "boot id is a UUID");
    ok(strchr(boot, '\n') == NULL, "no newline in the boot id");
    char tiny[4];
    gs_boot_id(tiny, sizeof(tiny));
    is_uint(strlen(tiny), 3, "boot id truncated to the buffer");
    return tap_done();
}
