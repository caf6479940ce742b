/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process lists in a slice (nvml.def: nvmlDevice{Compute,Graphics,MPSCompute}RunningProcesses,
 * every exported version). The driver lists every process on the GPU, the neighbours' included,
 * with host pids; a process in a slice sees instead the processes of its own claim, from the
 * claim's region (a process slot charged on the device), with each pid as the caller's own pid
 * namespace sees it and usedGpuMemory = what libvgpu charged for it there (the slice's memory
 * line is the sum of those charges). Tenants never see each other. Outside a slice (no limits
 * for the device) the driver's answer passes through unchanged. docs/internals/vgpu.md,
 * "Process lists".
 *
 * The infoCount contract follows NVML's documentation of nvmlDeviceGetComputeRunningProcesses_v3
 * (nvml.h): *infoCount in = room in infos, out = entries written; too little room (or infos NULL
 * with *infoCount 0, the count query) answers NVML_ERROR_INSUFFICIENT_SIZE with the count needed,
 * or NVML_SUCCESS and 0 when there is none. The unversioned (v1) symbols take the 16-byte
 * nvmlProcessInfo_v1_t (pid, usedGpuMemory), _v2 and _v3 the 24-byte struct with the MIG ids.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vgpu/vgpu-internal.h"

enum list_kind {
    LIST_COMPUTE = 0,  /* the claim's processes: every one charged on the device */
    LIST_GRAPHICS = 1, /* those of them the driver lists with a graphics context */
    LIST_MPS = 2,      /* those of them the driver lists as MPS clients */
};

typedef nvmlReturn_t (*list_fn)(nvmlDevice_t device, unsigned int *count, void *infos);

#define MAX_LISTED 65536u /* a driver answer larger than this is not believed */

/* Last field of the NSpid line of /proc/<pid>/status (the pid in its innermost namespace), or
 * -1 when unreadable. */
static int innermost_pid(const char *pid_dir)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%s/status", pid_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    ssize_t len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    const char *line = strstr(buf, "\nNSpid:");
    if (!line)
        return -1;
    line += strlen("\nNSpid:");
    int last = -1;
    for (;;) {
        char *end;
        long v = strtol(line, &end, 10);
        if (end == line || v <= 0 || v > 0x7fffffffL)
            break;
        last = (int)v;
        line = end;
    }
    return last;
}

/* The pid under which the caller (pid namespace self_ns, its /proc) sees each process of procs
 * (pids[i], -1 when it cannot see it or the process is gone). A process of the caller's own
 * namespace is its slot's pid; one of another namespace is found by one walk of /proc: the entry
 * whose pid namespace is the slot's and whose innermost pid (NSpid) and start time are the
 * slot's. Only a namespace the caller's contains can be seen (a sibling container's cannot). */
static void visible_pids(const struct vgpu_region_proc_view *procs, int n, uint64_t self_ns,
                         int *pids)
{
    int unresolved = 0;
    for (int i = 0; i < n; i++) {
        pids[i] = -1;
        if (procs[i].pidns != self_ns) {
            unresolved++;
            continue;
        }
        uint64_t st = vgpu_proc_start_time(procs[i].pid);
        if (st && (!procs[i].start_time || st == procs[i].start_time))
            pids[i] = procs[i].pid;
    }
    if (!unresolved || !self_ns)
        return;
    DIR *dir = opendir("/proc");
    if (!dir)
        return;
    struct dirent *e;
    while (unresolved && (e = readdir(dir)) != NULL) {
        char *end;
        long host = strtol(e->d_name, &end, 10);
        if (*end || host <= 0 || host > 0x7fffffffL)
            continue;
        char path[64];
        struct stat ns;
        snprintf(path, sizeof(path), "/proc/%s/ns/pid", e->d_name);
        if (stat(path, &ns) != 0 || (uint64_t)ns.st_ino == self_ns)
            continue;
        int inner = -2;
        for (int i = 0; i < n; i++) {
            if (pids[i] >= 0 || procs[i].pidns != (uint64_t)ns.st_ino || procs[i].pidns == 0)
                continue;
            if (inner == -2)
                inner = innermost_pid(e->d_name);
            if (inner != procs[i].pid)
                continue;
            uint64_t st = vgpu_proc_start_time((int)host);
            if (st && (!procs[i].start_time || st == procs[i].start_time)) {
                pids[i] = (int)host;
                unresolved--;
            }
        }
    }
    closedir(dir);
}

/* The driver's own list (its pids), into *out (malloc'd, *n entries of stride bytes). */
static nvmlReturn_t driver_list(list_fn real, nvmlDevice_t device, size_t stride,
                                unsigned char **out, unsigned int *n)
{
    unsigned char *buf = NULL;
    unsigned int cap = 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned int k = cap;
        nvmlReturn_t r = real(device, &k, buf);
        if (r == NVML_SUCCESS) {
            *out = buf;
            *n = k < cap ? k : cap;
            return NVML_SUCCESS;
        }
        free(buf);
        buf = NULL;
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
        if (k > MAX_LISTED)
            return NVML_ERROR_UNKNOWN;
        cap = k + 16; /* processes may start meanwhile */
        buf = calloc(cap, stride);
        if (!buf)
            return NVML_ERROR_MEMORY;
    }
    free(buf);
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

static bool driver_lists(const unsigned char *list, unsigned int n, size_t stride, int pid)
{
    for (unsigned int k = 0; k < n; k++) {
        unsigned int p;
        memcpy(&p, list + (size_t)k * stride,
               sizeof(p)); /* pid: the first field of every version */
        if ((int)p == pid)
            return true;
    }
    return false;
}

/* A device of a slice: limits apply to it (a claim's region, a memory or compute cap). */
static bool in_slice(const struct vgpu_device *d)
{
    return d && (d->region || d->cfg.memory_limit || d->cfg.cores || d->cfg.region_path[0]);
}

static nvmlReturn_t slice_list(list_fn real, nvmlDevice_t device, unsigned int *infoCount,
                               void *infos, size_t stride, enum list_kind kind)
{
    if (vgpu_depth)
        return real(device, infoCount, infos);
    struct vgpu_device *d = vgpu_nvml_view_device(device);
    if (!in_slice(d))
        return real(device, infoCount, infos); /* not a slice: the driver's answer */
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;

    /* The driver's answer first: a bad handle or a driver error is its own error code; the
     * graphics and MPS lists keep only the claim's processes the driver lists there. */
    unsigned char *listed = NULL;
    unsigned int n_listed = 0;
    nvmlReturn_t r;
    if (kind == LIST_COMPUTE) {
        unsigned int k = 0;
        r = real(device, &k, NULL);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE)
            r = NVML_SUCCESS;
    } else {
        r = driver_list(real, device, stride, &listed, &n_listed);
    }
    if (r != NVML_SUCCESS)
        return r;

    /* A slice whose region cannot be read (fail closed) lists nothing, never the GPU's. */
    struct vgpu_region_proc_view *procs = NULL;
    int *pids = NULL;
    int n = 0;
    if (d->region && d->slot >= 0) {
        procs = calloc(GS_REGION_MAX_PROCS, sizeof(*procs));
        pids = calloc(GS_REGION_MAX_PROCS, sizeof(*pids));
        if (!procs || !pids) {
            free(procs);
            free(pids);
            free(listed);
            return NVML_ERROR_MEMORY;
        }
        n = vgpu_region_procs(d->region, d->slot, procs, GS_REGION_MAX_PROCS);
        visible_pids(procs, n, vgpu_self_pidns(), pids);
    }
    unsigned int m = 0;
    for (int i = 0; i < n; i++) {
        if (pids[i] < 0 ||
            (kind != LIST_COMPUTE && !driver_lists(listed, n_listed, stride, pids[i])))
            continue;
        procs[m].used = procs[i].used;
        pids[m] = pids[i];
        m++;
    }
    free(listed);

    if (!infos || *infoCount < m) {
        r = m ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    } else {
        for (unsigned int k = 0; k < m; k++) {
            nvmlProcessInfo_t pi;
            memset(&pi, 0, sizeof(pi));
            pi.pid = (unsigned int)pids[k];
            pi.usedGpuMemory = procs[k].used;
            pi.gpuInstanceId = 0xFFFFFFFFu; /* slices are not MIG instances */
            pi.computeInstanceId = 0xFFFFFFFFu;
            memcpy((unsigned char *)infos + (size_t)k * stride, &pi, stride);
        }
        r = NVML_SUCCESS;
    }
    *infoCount = m;
    free(procs);
    free(pids);
    return r;
}

/* One exported hook per symbol: the real function behind a common signature, and the export. */
#define LIST_HOOK(name, info_type, kind)                                                           \
    static nvmlReturn_t real_##name(nvmlDevice_t device, unsigned int *count, void *infos)         \
    {                                                                                              \
        return gs_real_nvml.name(device, count, (info_type *)infos);                               \
    }                                                                                              \
    GS_EXPORT nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, info_type *infos)    \
    {                                                                                              \
        if (!gs_real_nvml.name && (vgpu_depth || !vgpu_nvml_ready()))                              \
            return NVML_ERROR_UNINITIALIZED;                                                       \
        if (!gs_real_nvml.name)                                                                    \
            return NVML_ERROR_FUNCTION_NOT_FOUND;                                                  \
        static_assert(sizeof(info_type) <= sizeof(nvmlProcessInfo_t), #info_type);                 \
        return slice_list(real_##name, device, infoCount, infos, sizeof(info_type), kind);         \
    }

LIST_HOOK(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t, LIST_COMPUTE)
LIST_HOOK(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_v2_t, LIST_COMPUTE)
LIST_HOOK(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t, LIST_COMPUTE)
LIST_HOOK(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t, LIST_GRAPHICS)
LIST_HOOK(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t, LIST_GRAPHICS)
LIST_HOOK(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t, LIST_GRAPHICS)
LIST_HOOK(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t, LIST_MPS)
LIST_HOOK(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_v2_t, LIST_MPS)
LIST_HOOK(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t, LIST_MPS)
