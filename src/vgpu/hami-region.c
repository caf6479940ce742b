/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HAMi-core's region, kept so that libvgpu is a drop-in for HAMi-core under HAMi's vGPU monitor
 * (docs/internals/vgpu.md, "HAMi-core's region"). Follows HAMi-core's
 * src/multiprocess/multiprocess_memory_limit.c: try_create_shrreg (create with mode 0666, size
 * the file, lockf, initialise when initialized_flag is not the magic: versions, switch 1,
 * recent_kernel 2, priority from CUDA_TASK_PRIORITY), init_proc_slot_withlock (a slot per pid,
 * status 1), add/rm_gpu_device_memory_usage (used[dev].total and .data_size), pre_launch_kernel
 * (last_kernel_time in seconds), rate_limiter in multiprocess_utilization_watcher.c
 * (recent_kernel < 0 blocks, then recent_kernel = 2) and get_utilization_switch.
 * It never decides limits: our own configuration does; the region only mirrors it.
 */
#include "vgpu/hami-region.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuslice/hami_region.h"
#include "vgpu/vgpu-internal.h"

static struct gs_hami_region *hr;
static struct gs_hami_proc_slot *my_slot;
static pid_t my_pid;
static _Atomic uint64_t last_kernel_s;

struct gs_hami_region *vgpu_hami_region(void)
{
    return hr;
}

/* lockf(F_TLOCK) for at most 2 s (a stalled holder makes us give up, never wait forever). */
static int lock_bounded(int fd)
{
    for (int i = 0; i < 2000; i++) {
        if (lockf(fd, F_TLOCK, sizeof(struct gs_hami_region)) == 0)
            return 0;
        if (errno != EACCES && errno != EAGAIN && errno != EINTR)
            return -errno;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return -ETIMEDOUT;
}

static void claim_slot(struct gs_hami_region *r, pid_t pid)
{
    int32_t n = atomic_load(&r->proc_num);
    if (n < 0 || n > GS_HAMI_REGION_MAX_PROCS)
        n = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t p = atomic_load(&r->procs[i].pid);
        if (p == pid || p == 0) {
            my_slot = &r->procs[i];
            break;
        }
    }
    if (!my_slot) {
        if (n >= GS_HAMI_REGION_MAX_PROCS)
            return;
        my_slot = &r->procs[n];
        atomic_store(&r->proc_num, n + 1);
    }
    memset((void *)my_slot->used, 0, sizeof(my_slot->used));
    atomic_store(&my_slot->hostpid, 0);
    atomic_store(&my_slot->status, 1);
    atomic_store(&my_slot->pid, pid);
}

/* A forked child is another process: a slot of its own (HAMi-core's child_reinit_flag). */
static void hami_atfork_child(void)
{
    my_slot = NULL;
    my_pid = getpid();
    if (hr)
        claim_slot(hr, my_pid);
}

int vgpu_hami_open(const char *path, int priority)
{
    if (hr)
        return 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0)
        return -errno;
    int r = lock_bounded(fd);
    struct stat st;
    if (r == 0 && fstat(fd, &st) < 0)
        r = -errno;
    if (r == 0 && st.st_size < (off_t)sizeof(struct gs_hami_region) &&
        ftruncate(fd, sizeof(struct gs_hami_region)) < 0)
        r = -errno;
    void *m = MAP_FAILED;
    if (r == 0) {
        m = mmap(NULL, sizeof(struct gs_hami_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            r = -errno;
    }
    if (r == 0) {
        struct gs_hami_region *g = m;
        if (atomic_load(&g->initialized_flag) != GS_HAMI_REGION_MAGIC) {
            g->major_version = GS_HAMI_REGION_MAJOR;
            g->minor_version = GS_HAMI_REGION_MINOR;
            atomic_store(&g->utilization_switch, 1);
            atomic_store(&g->recent_kernel, GS_HAMI_RECENT_KERNEL_LAUNCHED);
            g->priority = priority;
            atomic_store(&g->initialized_flag, GS_HAMI_REGION_MAGIC);
        } else if (g->major_version != GS_HAMI_REGION_MAJOR ||
                   g->minor_version != GS_HAMI_REGION_MINOR) {
            VLOG(VGPU_LOG_ERROR, "%s: HAMi-core region version %u.%u, not %d.%d; not used", path,
                 g->major_version, g->minor_version, GS_HAMI_REGION_MAJOR, GS_HAMI_REGION_MINOR);
            r = -EPROTO;
        }
        if (r == 0) {
            my_pid = getpid();
            claim_slot(g, my_pid);
            atomic_store(&g->owner_pid, 0);
        }
    }
    if (fd >= 0 && lockf(fd, F_ULOCK, sizeof(struct gs_hami_region)) < 0)
        (void)0; /* closing the descriptor drops the lock anyway */
    close(fd);
    if (r < 0) {
        if (m != MAP_FAILED)
            munmap(m, sizeof(struct gs_hami_region));
        VLOG(VGPU_LOG_WARN, "HAMi-core region %s not kept: %s", path, strerror(-r));
        return r;
    }
    __atomic_store_n(&hr, (struct gs_hami_region *)m, __ATOMIC_RELEASE);
    vgpu_region_set_usage_hook(vgpu_hami_note_used);
    pthread_atfork(NULL, NULL, hami_atfork_child);
    return 0;
}

void vgpu_hami_device(int ordinal, const char *uuid, uint64_t memory_limit, uint32_t cores)
{
    struct gs_hami_region *g = hr;
    if (!g || ordinal < 0 || ordinal >= GS_HAMI_REGION_MAX_DEVICES || !uuid)
        return;
    if (strncmp(g->uuids[ordinal], uuid, GS_HAMI_REGION_UUID_LEN) != 0)
        strncpy(g->uuids[ordinal], uuid, GS_HAMI_REGION_UUID_LEN - 1);
    __atomic_store_n(&g->limit[ordinal], memory_limit, __ATOMIC_RELAXED);
    __atomic_store_n(&g->sm_limit[ordinal], (uint64_t)cores, __ATOMIC_RELAXED);
    if (g->device_num < (uint64_t)ordinal + 1)
        g->device_num = (uint64_t)ordinal + 1;
}

void vgpu_hami_note_used(const char *uuid, uint64_t used)
{
    struct gs_hami_region *g = hr;
    if (!g || !my_slot || !uuid)
        return;
    for (int i = 0; i < GS_HAMI_REGION_MAX_DEVICES; i++) {
        if (strncmp(g->uuids[i], uuid, GS_HAMI_REGION_UUID_LEN) == 0) {
            atomic_store_explicit(&my_slot->used[i].data_size, used, memory_order_relaxed);
            atomic_store_explicit(&my_slot->used[i].total, used, memory_order_relaxed);
            return;
        }
    }
}

int vgpu_hami_switch(void)
{
    struct gs_hami_region *g = __atomic_load_n(&hr, __ATOMIC_ACQUIRE);
    return g ? atomic_load_explicit(&g->utilization_switch, memory_order_relaxed) : -1;
}

bool vgpu_hami_blocked(void)
{
    struct gs_hami_region *g = __atomic_load_n(&hr, __ATOMIC_ACQUIRE);
    return g && atomic_load_explicit(&g->recent_kernel, memory_order_relaxed) < 0;
}

void vgpu_hami_launched(void)
{
    struct gs_hami_region *g = __atomic_load_n(&hr, __ATOMIC_ACQUIRE);
    if (!g)
        return;
    int32_t rk = atomic_load_explicit(&g->recent_kernel, memory_order_relaxed);
    /* set 2 only over a non-negative value: a block written meanwhile stays */
    if (rk >= 0 && rk != GS_HAMI_RECENT_KERNEL_LAUNCHED)
        atomic_compare_exchange_strong(&g->recent_kernel, &rk, GS_HAMI_RECENT_KERNEL_LAUNCHED);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    uint64_t s = (uint64_t)ts.tv_sec;
    if (atomic_load_explicit(&last_kernel_s, memory_order_relaxed) != s) {
        atomic_store_explicit(&last_kernel_s, s, memory_order_relaxed);
        atomic_store_explicit(&g->last_kernel_time, s, memory_order_relaxed);
    }
}

/* Normal exit: give the slot back (HAMi-core's exit_handler); a killed process's slot is left
 * to the monitor, as with HAMi-core. */
__attribute__((destructor)) static void hami_at_exit(void)
{
    if (hr && my_slot && atomic_load(&my_slot->pid) == my_pid && my_pid == getpid()) {
        memset((void *)my_slot->used, 0, sizeof(my_slot->used));
        atomic_store(&my_slot->status, 0);
        atomic_store(&my_slot->pid, 0);
    }
}
