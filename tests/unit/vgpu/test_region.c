/* SPDX-License-Identifier: Apache-2.0 */
/* The shared region: exact boundary, cross-process accounting, SIGKILLed processes swept,
 * a lock held by a dead process never wedges the others. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "vgpu/vgpu-internal.h"

#define MiB  (1ULL << 20)
#define UUID "GPU-11111111-2222-3333-4444-555555555555"

static char path[256];

static void test_boundary(struct vgpu_region *r, int slot)
{
    int fails = 0;
    for (int i = 0; i < 4096; i++)
        if (vgpu_region_reserve(r, slot, MiB, 4096 * MiB) != 0)
            fails++;
    is_int(fails, 0, "4096 reservations of 1 MiB fit a 4096 MiB limit");
    is_int(vgpu_region_reserve(r, slot, MiB, 4096 * MiB), -ENOMEM, "the 4097th is refused");
    is_int(vgpu_region_reserve(r, slot, 1, 4096 * MiB), -ENOMEM, "even one more byte is refused");
    is_uint(vgpu_region_used(r, slot), 4096 * MiB, "used is exactly the limit");
    vgpu_region_release(r, slot, MiB);
    is_int(vgpu_region_reserve(r, slot, MiB, 4096 * MiB), 0, "after a release one fits again");
    vgpu_region_release(r, slot, 4096 * MiB);
    is_uint(vgpu_region_used(r, slot), 0, "all released");
    vgpu_region_release(r, slot, MiB);
    is_uint(vgpu_region_used(r, slot), 0, "release never goes below zero");
    is_int(vgpu_region_reserve(r, slot, UINT64_MAX, 0), 0, "no cap: saturating reserve accepted");
    vgpu_region_release(r, slot, UINT64_MAX);
    is_uint(vgpu_region_used(r, slot), 0, "saturated release back to zero");
}

/* A child reserves, then is SIGKILLed: the sweep gives its usage back. */
static void test_sweep(struct vgpu_region *r, int slot)
{
    int pipefd[2];
    ok(pipe(pipefd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        vgpu_region_atfork_child();
        struct vgpu_region *cr = vgpu_region_open(path);
        int s = vgpu_region_device(cr, UUID, 4096 * MiB, 30);
        int rc = vgpu_region_reserve(cr, s, 100 * MiB, 4096 * MiB);
        (void)!write(pipefd[1], &rc, sizeof(rc));
        pause();
        _exit(0);
    }
    int rc = -1;
    (void)!read(pipefd[0], &rc, sizeof(rc));
    is_int(rc, 0, "child reserved 100 MiB");
    is_uint(vgpu_region_used(r, slot), 100 * MiB, "parent sees the child's usage");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    is_int(vgpu_region_sweep(r, VGPU_SWEEP_FORCE), 1, "sweep reclaims the dead child's slot");
    is_uint(vgpu_region_used(r, slot), 0, "usage back to 0 after the sweep");
    close(pipefd[0]);
    close(pipefd[1]);
}

/* A child dies while holding the region lock: the next locker recovers and recomputes. */
static void test_dead_lock_owner(struct vgpu_region *r, int slot)
{
    struct gs_region *shm = vgpu_region_shm(r);
    is_int(vgpu_region_reserve(r, slot, 10 * MiB, 0), 0, "parent holds 10 MiB");
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&shm->lock);
        atomic_store(&shm->devices[slot].used, 999 * MiB); /* half-done update */
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    is_int(vgpu_region_reserve(r, slot, MiB, 0), 0, "lock of a dead owner does not wedge");
    is_uint(vgpu_region_used(r, slot), 11 * MiB, "usage recomputed from the slots (10 + 1 MiB)");
    vgpu_region_release(r, slot, 11 * MiB);
}

static void test_layout(void)
{
    int fd = open(path, O_RDONLY);
    struct gs_region *ro = mmap(NULL, sizeof(*ro), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    ok(ro != MAP_FAILED, "read-only mapping (monitor view)");
    is_uint(ro->magic, GS_REGION_MAGIC, "magic");
    is_uint(ro->version, GS_REGION_VERSION, "version");
    is_uint(ro->size, sizeof(struct gs_region), "size");
    is_str(ro->devices[0].uuid, UUID, "device keyed by UUID");
    is_uint(atomic_load(&ro->devices[0].memory_limit), 4096 * MiB, "limit published");
    is_uint(atomic_load(&ro->devices[0].cores), 30, "cores published");
    munmap(ro, sizeof(*ro));
}

int main(void)
{
    tap_plan_auto();
    snprintf(path, sizeof(path), "/tmp/gs-region-test-%d", (int)getpid());
    unlink(path);
    struct vgpu_region *r = vgpu_region_open(path);
    ok(r != NULL, "region created");
    if (!r)
        return tap_done();
    int slot = vgpu_region_device(r, UUID, 4096 * MiB, 30);
    is_int(slot, 0, "first device gets slot 0");
    is_int(vgpu_region_device(r, UUID, 4096 * MiB, 30), 0, "same UUID, same slot");
    test_boundary(r, slot);
    test_sweep(r, slot);
    test_dead_lock_owner(r, slot);
    test_layout();
    unlink(path);
    return tap_done();
}
