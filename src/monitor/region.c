/* SPDX-License-Identifier: Apache-2.0 */
#include "monitor/region.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macros.h"

/* Only the header and the device array are read; process slots are libvgpu's business. */
#define MAP_BYTES offsetof(struct gs_region, procs)

static const char *const status_names[MON_REGION_N_STATUS] = {
    [MON_REGION_OK] = "ok",
    [MON_REGION_MISSING] = "missing",
    [MON_REGION_UNREADABLE] = "unreadable",
    [MON_REGION_TRUNCATED] = "truncated",
    [MON_REGION_BAD_MAGIC] = "bad_magic",
    [MON_REGION_BAD_VERSION] = "bad_version",
    [MON_REGION_BAD_SIZE] = "bad_size",
    [MON_REGION_UNINIT] = "uninitialised",
};

const char *mon_region_status_name(enum mon_region_status s)
{
    return (unsigned)s < MON_REGION_N_STATUS ? status_names[s] : "unknown";
}

void mon_region_init(struct mon_region *r, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    snprintf(r->path, sizeof(r->path), "%s", path);
}

static void unmap(struct mon_region *r)
{
    if (r->map)
        munmap((void *)r->map, r->map_len);
    if (r->fd >= 0)
        close(r->fd);
    r->map = NULL;
    r->fd = -1;
}

void mon_region_fini(struct mon_region *r)
{
    unmap(r);
}

/* Record the cause in err (named by the macro's message) and return the status. */
#define FAIL(status, code, ...)                                                                    \
    __extension__({                                                                                \
        if (err)                                                                                   \
            gs_error_set(err, (code), __VA_ARGS__);                                                \
        (status);                                                                                  \
    })

/* (Re)open when not open or when the path now names another file. */
static enum mon_region_status ensure_open(struct mon_region *r, bool recheck_path,
                                          struct gs_error *err)
{
    if (r->map && !recheck_path)
        return MON_REGION_OK;
    struct stat st;
    if (stat(r->path, &st) != 0) {
        unmap(r);
        if (errno == ENOENT)
            return FAIL(MON_REGION_MISSING, -ENOENT, "shared region %s: no such file", r->path);
        return FAIL(MON_REGION_UNREADABLE, -errno, "shared region %s: %s", r->path,
                    strerror(errno));
    }
    if (r->map && st.st_dev == r->dev && st.st_ino == r->ino)
        return MON_REGION_OK;
    unmap(r);
    int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return FAIL(errno == ENOENT ? MON_REGION_MISSING : MON_REGION_UNREADABLE, -errno,
                    "shared region %s: %s", r->path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return FAIL(MON_REGION_UNREADABLE, -EINVAL, "shared region %s: not a regular file",
                    r->path);
    }
    if ((uint64_t)st.st_size < sizeof(struct gs_region)) {
        close(fd);
        return FAIL(MON_REGION_TRUNCATED, -EBADMSG,
                    "shared region %s: %llu bytes, a region has %zu", r->path,
                    (unsigned long long)st.st_size, sizeof(struct gs_region));
    }
    void *m = mmap(NULL, MAP_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        close(fd);
        return FAIL(MON_REGION_UNREADABLE, -e, "shared region %s: cannot map: %s", r->path,
                    strerror(e));
    }
    r->fd = fd;
    r->map = m;
    r->map_len = MAP_BYTES;
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    return MON_REGION_OK;
}

/* SIGBUS guard: a region file truncated (by anyone with write access: the containers mount it
 * read-write) while mapped makes a read past its new end fault. The faulting read longjmps back
 * and the region is reported truncated; a SIGBUS anywhere else gets the previous disposition. */
static _Thread_local sigjmp_buf *bus_jmp;
static struct sigaction old_bus;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    if (bus_jmp)
        siglongjmp(*bus_jmp, 1);
    sigaction(sig, &old_bus, NULL); /* not ours: the faulting access repeats under it */
}

static void guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &old_bus);
}

void mon_region_guard(void)
{
    pthread_once(&guard_once, guard_install);
}

struct header {
    uint64_t magic;
    uint32_t version, size, init_state, n_devices;
};

/* Copy the header, and the devices when the header is one we read. Runs under the SIGBUS guard. */
static void copy_region(const struct gs_region *g, struct header *h, struct mon_region_device *out,
                        uint32_t max, uint32_t *n)
{
    h->magic = g->magic;
    h->version = g->version;
    h->size = g->size;
    h->init_state = atomic_load_explicit(&g->init_state, memory_order_acquire);
    h->n_devices = atomic_load_explicit(&g->n_devices, memory_order_acquire);
    if (h->magic != GS_REGION_MAGIC || h->version < GS_REGION_VERSION_MIN_READ ||
        h->version > GS_REGION_VERSION || h->size != sizeof(struct gs_region) ||
        h->init_state != GS_REGION_READY)
        return;
    uint32_t nd = GS_MIN(h->n_devices, (uint32_t)GS_REGION_MAX_DEVICES);
    bool v2 = h->version >= 2;
    for (uint32_t i = 0; i < nd && *n < max; i++) {
        const struct gs_region_device *d = &g->devices[i];
        struct mon_region_device *o = &out[*n];
        /* The UUID is written once under the lock before n_devices is published; copy bounded. */
        memcpy(o->uuid, d->uuid, sizeof(o->uuid));
        o->uuid[sizeof(o->uuid) - 1] = '\0';
        if (!o->uuid[0])
            continue;
        o->used = atomic_load_explicit(&d->used, memory_order_acquire);
        o->memory_limit = atomic_load_explicit(&d->memory_limit, memory_order_acquire);
        o->cores = atomic_load_explicit(&d->cores, memory_order_acquire);
        o->busy_ns = atomic_load_explicit(&d->busy_ns, memory_order_acquire);
        o->launches = atomic_load_explicit(&d->launches, memory_order_acquire);
        o->throttled_ns = atomic_load_explicit(&d->throttled_ns, memory_order_acquire);
        o->oom_count = atomic_load_explicit(&d->oom_count, memory_order_acquire);
        /* gpu_busy_ns/last_kernel_ns are kept only while the device has a compute cap. */
        o->has_v2 = v2 && o->cores > 0 && o->cores < 100;
        o->gpu_busy_ns =
            o->has_v2 ? atomic_load_explicit(&d->gpu_busy_ns, memory_order_acquire) : 0;
        o->last_kernel_ns =
            o->has_v2 ? atomic_load_explicit(&d->last_kernel_ns, memory_order_acquire) : 0;
        (*n)++;
    }
}

enum mon_region_status mon_region_read(struct mon_region *r, struct mon_region_device *out,
                                       uint32_t max, uint32_t *n, bool recheck_path,
                                       struct gs_error *err)
{
    *n = 0;
    enum mon_region_status s = ensure_open(r, recheck_path, err);
    if (s != MON_REGION_OK)
        return s;
    if (recheck_path) {
        /* The refresher also checks the size, so a shrunk file is named and counted even when
         * the part a read touches still lies within it. */
        struct stat st;
        if (fstat(r->fd, &st) != 0 || (uint64_t)st.st_size < sizeof(struct gs_region)) {
            unsigned long long size = (unsigned long long)st.st_size;
            unmap(r);
            return FAIL(MON_REGION_TRUNCATED, -EBADMSG,
                        "shared region %s: %llu bytes, a region has %zu", r->path, size,
                        sizeof(struct gs_region));
        }
    }
    struct header h = {0};
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0)) {
        bus_jmp = NULL;
        *n = 0;
        unmap(r);
        return FAIL(MON_REGION_TRUNCATED, -EBADMSG,
                    "shared region %s: the file shrank under the mapping", r->path);
    }
    bus_jmp = &jb;
    copy_region(r->map, &h, out, max, n);
    bus_jmp = NULL;
    if (h.magic != GS_REGION_MAGIC)
        return FAIL(MON_REGION_BAD_MAGIC, -EBADMSG,
                    "shared region %s: magic 0x%016llx is not GSREGION", r->path,
                    (unsigned long long)h.magic);
    if (h.version < GS_REGION_VERSION_MIN_READ || h.version > GS_REGION_VERSION)
        return FAIL(MON_REGION_BAD_VERSION, -EPROTO,
                    "shared region %s: layout version %u, this monitor reads %d..%d", r->path,
                    h.version, GS_REGION_VERSION_MIN_READ, GS_REGION_VERSION);
    if (h.size != sizeof(struct gs_region))
        return FAIL(MON_REGION_BAD_SIZE, -EBADMSG,
                    "shared region %s: header says %u bytes, expected %zu", r->path, h.size,
                    sizeof(struct gs_region));
    if (h.init_state != GS_REGION_READY)
        return FAIL(MON_REGION_UNINIT, -EAGAIN, "shared region %s: not initialised yet", r->path);
    return MON_REGION_OK;
}

const struct mon_region_device *mon_region_find(const struct mon_region_device *devs, uint32_t n,
                                                const char *uuid)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(devs[i].uuid, uuid) == 0)
            return &devs[i];
    return NULL;
}
