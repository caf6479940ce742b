/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim libcuda: initialisation, versions, errors, devices and their attributes. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cuda-internal.h"

struct cu_process cu_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .mem_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------------------ objects */
void *cu_obj_new(uint32_t kind, size_t size)
{
    pthread_mutex_lock(&cu_g.lock);
    struct cu_obj *o = cu_g.free_list[kind];
    /* Recycle only objects of the same size class (one struct per kind). */
    if (o) {
        cu_g.free_list[kind] = o->free_next;
        struct cu_obj *keep = o->all_next;
        memset(o, 0, size);
        o->all_next = keep;
    } else {
        o = calloc(1, size);
        if (!o) {
            pthread_mutex_unlock(&cu_g.lock);
            return NULL;
        }
        o->all_next = cu_g.all;
        cu_g.all = o;
    }
    o->magic = CU_MAGIC;
    o->kind = kind;
    o->alive = true;
    pthread_mutex_unlock(&cu_g.lock);
    return o;
}

void cu_obj_del_locked(void *p)
{
    struct cu_obj *o = p;
    if (o->alive) {
        o->alive = false;
        o->free_next = cu_g.free_list[o->kind];
        cu_g.free_list[o->kind] = o;
    }
}

void cu_obj_del(void *p)
{
    pthread_mutex_lock(&cu_g.lock);
    cu_obj_del_locked(p);
    pthread_mutex_unlock(&cu_g.lock);
}

/* ------------------------------------------------------------------ init */
static void parse_visible(void)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    cu_g.nvis = 0;
    if (!env) {
        for (int i = 0; i < cu_g.cfg.ndev; i++)
            cu_g.vis[cu_g.nvis++] = i;
        return;
    }
    /* Like the driver: entries are indexes or UUID prefixes; the list ends at the first entry
     * that names no device (or one already listed). */
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", env);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && cu_g.nvis < SIM_MAX_DEVICES;
         tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        size_t n = strlen(tok);
        while (n && isspace((unsigned char)tok[n - 1]))
            tok[--n] = '\0';
        int idx = -1;
        if (strncasecmp(tok, "GPU-", 4) == 0) {
            for (int i = 0; i < cu_g.cfg.ndev; i++) {
                if (strncasecmp(cu_g.cfg.dev[i].uuid, tok, n) == 0) {
                    if (idx >= 0) { /* ambiguous prefix */
                        idx = -1;
                        break;
                    }
                    idx = i;
                }
            }
        } else if (n > 0 && strspn(tok, "0123456789") == n && n < 6) {
            idx = (int)strtol(tok, NULL, 10);
            if (idx >= cu_g.cfg.ndev)
                idx = -1;
        }
        if (idx < 0)
            break;
        bool dup = false;
        for (int k = 0; k < cu_g.nvis; k++)
            dup |= cu_g.vis[k] == idx;
        if (dup)
            break;
        cu_g.vis[cu_g.nvis++] = idx;
    }
}

/* fork() with threads inside the driver: every process-private lock is held across it, in the
 * order the code nests them (cuda-internal.h), so the child never inherits a lock some thread it
 * does not have was holding (glibc's own locks, malloc's included, are glibc's business; the
 * shared state's robust mutex belongs to the parent's thread, which releases it). */
static void before_fork(void)
{
    pthread_mutex_lock(&cu_g.lock);
    pthread_mutex_lock(&cu_g.mem_lock);
    cu_callbacks_fork(CU_FORK_PREPARE);
    cu_ipc_fork(CU_FORK_PREPARE);
    cu_tex_fork(CU_FORK_PREPARE);
}

static void after_fork_parent(void)
{
    cu_tex_fork(CU_FORK_PARENT);
    cu_ipc_fork(CU_FORK_PARENT);
    cu_callbacks_fork(CU_FORK_PARENT);
    pthread_mutex_unlock(&cu_g.mem_lock);
    pthread_mutex_unlock(&cu_g.lock);
}

static void after_fork_child(void)
{
    /* CUDA state does not survive fork(): the child starts over (its own slot) at cuInit. */
    cu_tex_fork(CU_FORK_CHILD);
    cu_ipc_fork(CU_FORK_CHILD);
    cu_callbacks_fork(CU_FORK_CHILD);
    if (cu_g.st)
        sim_state_forget(cu_g.st);
    cu_g.init_state = 0;
    pthread_mutex_init(&cu_g.lock, NULL);
    pthread_mutex_init(&cu_g.mem_lock, NULL);
}

static void do_init(void)
{
    struct gs_error err = {0};
    static bool atfork_done;
    if (!atfork_done) {
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        atfork_done = true;
    }
    if (cu_g.st) { /* a forked child re-initialising: drop the parent's view */
        sim_state_close(cu_g.st);
        cu_g.st = NULL;
        cu_mem_reset();
        memset(cu_g.primary, 0, sizeof(cu_g.primary));
    }
    if (sim_config_from_env(&cu_g.cfg, &err) < 0) {
        dprintf(2, "gpusim: %s\n", err.msg);
        cu_g.init_error = CUDA_ERROR_SYSTEM_NOT_READY;
        goto fail;
    }
    if (sim_state_open(&cu_g.cfg, &cu_g.st, &err) < 0 || sim_proc_register(cu_g.st, &err) < 0) {
        dprintf(2, "gpusim: %s\n", err.msg);
        sim_state_close(cu_g.st);
        cu_g.st = NULL;
        cu_g.init_error = CUDA_ERROR_OPERATING_SYSTEM;
        goto fail;
    }
    cu_backing_sweep();
    parse_visible();
    if (cu_g.nvis == 0) {
        cu_g.init_error = CUDA_ERROR_NO_DEVICE;
        sim_state_close(cu_g.st);
        cu_g.st = NULL;
        goto fail;
    }
    for (int i = 0; i <= CU_VA_SLOT_VMM; i++)
        cu_g.next_va[i] = CU_VA_BASE + (uint64_t)i * CU_VA_PER_DEVICE;
    cu_g.next_va[CU_VA_SLOT_LOW] = CU_VA_LOW_BASE;
    for (int o = 0; o < cu_g.nvis; o++) {
        struct sim_ctx *c = &cu_g.primary[o];
        memset(c, 0, sizeof(*c));
        c->h.magic = CU_MAGIC;
        c->h.kind = CU_OBJ_CTX;
        c->h.alive = false; /* until retained */
        c->ordinal = o;
        c->dev = cu_g.vis[o];
        c->primary = true;
        c->null_stream.h.magic = CU_MAGIC;
        c->null_stream.h.kind = CU_OBJ_STREAM;
        c->null_stream.h.alive = true;
        c->null_stream.ctx = c;
    }
    __atomic_store_n(&cu_g.init_state, 1, __ATOMIC_RELEASE);
    return;
fail:
    __atomic_store_n(&cu_g.init_state, -1, __ATOMIC_RELEASE);
}

CU_API CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_g.lock);
    if (cu_g.init_state == 0)
        do_init();
    CUresult r = cu_g.init_state > 0 ? CUDA_SUCCESS : cu_g.init_error;
    pthread_mutex_unlock(&cu_g.lock);
    return r;
}

/*
 * At exit another thread of the program may still be inside a call (a monitoring thread, a
 * stream callback): the library stays usable until the process is gone. Nothing is unmapped,
 * closed or freed here; our slot and memory go back to the device under the shared lock (a call
 * racing with it fails cleanly: the slot is -1), and our backing files are unlinked (mappings
 * keep their pages). The kernel reclaims the rest with the process.
 */
__attribute__((destructor)) static void cu_unload(void)
{
    if (__atomic_load_n(&cu_g.init_state, __ATOMIC_ACQUIRE) > 0 && cu_g.st) {
        cu_backing_exit();
        cu_ipc_exit();
        sim_state_exit(cu_g.st);
    }
}

CU_API CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_g.init_state > 0) {
        *driverVersion = cu_g.cfg.cuda_version;
        return CUDA_SUCCESS;
    }
    /* Before cuInit: the model's version without starting anything. */
    struct sim_config cfg;
    *driverVersion = sim_config_from_env(&cfg, NULL) == 0 ? cfg.cuda_version : 12080;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ errors */
static const struct {
    CUresult code;
    const char *name;
    const char *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_PROFILER_DISABLED, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "stub library"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_DEVICE_NOT_LICENSED, "CUDA_ERROR_DEVICE_NOT_LICENSED", "device not licensed"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
     "context already current"},
    {CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {CUDA_ERROR_UNMAP_FAILED, "CUDA_ERROR_UNMAP_FAILED", "unmapping of buffer object failed"},
    {CUDA_ERROR_ARRAY_IS_MAPPED, "CUDA_ERROR_ARRAY_IS_MAPPED", "array is mapped"},
    {CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_ALREADY_ACQUIRED, "CUDA_ERROR_ALREADY_ACQUIRED", "resource already acquired"},
    {CUDA_ERROR_NOT_MAPPED, "CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
    {CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
     "resource not mapped as array"},
    {CUDA_ERROR_NOT_MAPPED_AS_POINTER, "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
     "resource not mapped as pointer"},
    {CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE",
     "uncorrectable ECC error encountered"},
    {CUDA_ERROR_UNSUPPORTED_LIMIT, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported"},
    {CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
     "exclusive-thread device already in use by a different thread"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
     "invalid OpenGL or DirectX context"},
    {CUDA_ERROR_NVLINK_UNCORRECTABLE, "CUDA_ERROR_NVLINK_UNCORRECTABLE",
     "uncorrectable NVLink error detected during the execution"},
    {CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
     "PTX JIT compiler library not found"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_JIT_COMPILATION_DISABLED, "CUDA_ERROR_JIT_COMPILATION_DISABLED",
     "PTX JIT compilation was disabled"},
    {CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
     "the provided execution affinity is not supported"},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
     "shared object symbol not found"},
    {CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
     "shared object initialization failed"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation "
     "not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_LOSSY_QUERY, "CUDA_ERROR_LOSSY_QUERY",
     "attempted introspection would be semantically lossy"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
     "launch uses incompatible texturing mode"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
     "peer access has not been enabled"},
    {CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
     "cannot set while device is active in this process"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {CUDA_ERROR_TOO_MANY_PEERS, "CUDA_ERROR_TOO_MANY_PEERS", "peer mapping resources exhausted"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE",
     "operation not supported on global/shared address space"},
    {CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "forward compatibility was attempted on non supported HW"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
     "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "wait operation timed out"},
    {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
     "the graph update was not performed because it included changes which violated "
     "constraints specific to instantiated graph update"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CU_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < GS_ARRAY_SIZE(errors); i++) {
        if (errors[i].code == error) {
            *pStr = errors[i].name;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CU_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < GS_ARRAY_SIZE(errors); i++) {
        if (errors[i].code == error) {
            *pStr = errors[i].text;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ devices */
#define CU_DEVICE_CFG(ordinal, var)                                                                \
    int var##_idx = cu_dev_of(ordinal);                                                            \
    if (var##_idx < 0)                                                                             \
        return CUDA_ERROR_INVALID_DEVICE;                                                          \
    const struct sim_device_cfg *var = &cu_g.cfg.dev[var##_idx]

CU_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CU_CHECK_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= cu_g.nvis)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetCount(int *count)
{
    CU_CHECK_INIT();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = cu_g.nvis;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, d);
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", d->name);
    return CUDA_SUCCESS;
}

static int hexval(char c)
{
    return isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10);
}

CU_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, d);
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    int k = 0;
    for (const char *p = d->uuid + 4; *p && k < 32; p++) {
        if (*p == '-')
            continue;
        if (k % 2 == 0)
            uuid->bytes[k / 2] = (char)(hexval(*p) << 4);
        else
            uuid->bytes[k / 2] = (char)(uuid->bytes[k / 2] | hexval(*p));
        k++;
    }
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

CU_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, d);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = d->total_mem;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, d);
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    *major = d->cc_major;
    *minor = d->cc_minor;
    return CUDA_SUCCESS;
}

#define ATTR_MAX 148 /* CU_DEVICE_ATTRIBUTE_MAX of the CUDA 12.8/13.0 headers */

/*
 * Every other attribute id below ATTR_MAX, by its number (the names are those of
 * CUdevice_attribute), with the value a data-centre GPU of the device's architecture reports.
 * Features are switched by compute capability: 8.0+ (Ampere) adds compressible memory and
 * persisting L2, 9.0+ (Hopper) clusters, tensor maps, multicast and memory sync domains.
 * false for an id outside the enum (the driver's CUDA_ERROR_INVALID_VALUE).
 */
static bool other_attribute(int a, const struct sim_device_cfg *d, int idx, int *v)
{
    int cc = d->cc_major * 10 + d->cc_minor;
    bool ampere = cc >= 80, hopper = cc >= 90;
    if (a < 1 || a >= ATTR_MAX)
        return false;
    switch (a) {
    case 21: /* MAXIMUM_TEXTURE1D_WIDTH */
    case 22: /* MAXIMUM_TEXTURE2D_WIDTH */
    case 56: /* MAXIMUM_SURFACE2D_WIDTH */
        *v = 131072;
        return true;
    case 52: /* MAXIMUM_TEXTURECUBEMAP_WIDTH */
    case 53: /* MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH */
    case 55: /* MAXIMUM_SURFACE1D_WIDTH */
    case 61: /* MAXIMUM_SURFACE1D_LAYERED_WIDTH */
    case 63: /* MAXIMUM_SURFACE2D_LAYERED_WIDTH */
    case 64: /* MAXIMUM_SURFACE2D_LAYERED_HEIGHT */
    case 66: /* MAXIMUM_SURFACECUBEMAP_WIDTH */
    case 67: /* MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH */
    case 73: /* MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH */
    case 74: /* MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT */
        *v = 32768;
        return true;
    case 23: /* MAXIMUM_TEXTURE2D_HEIGHT */
    case 57: /* MAXIMUM_SURFACE2D_HEIGHT */
        *v = 65536;
        return true;
    case 24: /* MAXIMUM_TEXTURE3D_WIDTH */
    case 25: /* MAXIMUM_TEXTURE3D_HEIGHT */
    case 26: /* MAXIMUM_TEXTURE3D_DEPTH */
    case 58: /* MAXIMUM_SURFACE3D_WIDTH */
    case 59: /* MAXIMUM_SURFACE3D_HEIGHT */
    case 60: /* MAXIMUM_SURFACE3D_DEPTH */
        *v = 16384;
        return true;
    case 27: /* MAXIMUM_TEXTURE2D_LAYERED_WIDTH */
    case 28: /* MAXIMUM_TEXTURE2D_LAYERED_HEIGHT */
    case 47: /* MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE */
    case 48: /* MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE */
        *v = a <= 28 ? 32768 : 8192;
        return true;
    case 49: /* MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE */
        *v = 32768;
        return true;
    case 29: /* MAXIMUM_TEXTURE2D_LAYERED_LAYERS */
    case 42: /* MAXIMUM_TEXTURE1D_LAYERED_WIDTH */
    case 43: /* MAXIMUM_TEXTURE1D_LAYERED_LAYERS */
    case 54: /* MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS */
    case 62: /* MAXIMUM_SURFACE1D_LAYERED_LAYERS */
    case 65: /* MAXIMUM_SURFACE2D_LAYERED_LAYERS */
    case 68: /* MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS */
        *v = a == 42 ? 32768 : 2048;
        if (a == 54 || a == 68)
            *v = 2046;
        return true;
    case 30: /* SURFACE_ALIGNMENT */
        *v = 512;
        return true;
    case 44: /* CAN_TEX2D_GATHER */
        *v = 1;
        return true;
    case 45: /* MAXIMUM_TEXTURE2D_GATHER_WIDTH */
    case 46: /* MAXIMUM_TEXTURE2D_GATHER_HEIGHT */
        *v = 32768;
        return true;
    case 51: /* TEXTURE_PITCH_ALIGNMENT */
        *v = 32;
        return true;
    case 69: /* MAXIMUM_TEXTURE1D_LINEAR_WIDTH (deprecated) */
        *v = 268435456;
        return true;
    case 70: /* MAXIMUM_TEXTURE2D_LINEAR_WIDTH */
    case 71: /* MAXIMUM_TEXTURE2D_LINEAR_HEIGHT */
        *v = 131072;
        return true;
    case 72: /* MAXIMUM_TEXTURE2D_LINEAR_PITCH */
        *v = 2097120;
        return true;
    case 77: /* MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH */
        *v = 32768;
        return true;
    case 78:  /* STREAM_PRIORITIES_SUPPORTED */
    case 79:  /* GLOBAL_L1_CACHE_SUPPORTED */
    case 80:  /* LOCAL_L1_CACHE_SUPPORTED */
    case 90:  /* COMPUTE_PREEMPTION_SUPPORTED */
    case 98:  /* CAN_FLUSH_REMOTE_WRITES */
    case 99:  /* HOST_REGISTER_SUPPORTED */
    case 103: /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED */
    case 110: /* GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED */
    case 112: /* SPARSE_CUDA_ARRAY_SUPPORTED */
    case 113: /* READ_ONLY_HOST_REGISTER_SUPPORTED */
    case 114: /* TIMELINE_SEMAPHORE_INTEROP_SUPPORTED */
    case 116: /* GPU_DIRECT_RDMA_SUPPORTED */
    case 121: /* DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED */
    case 122: /* CAN_USE_64_BIT_STREAM_MEM_OPS */
    case 123: /* CAN_USE_STREAM_WAIT_VALUE_NOR */
    case 124: /* DMA_BUF_SUPPORTED */
    case 125: /* IPC_EVENT_SUPPORTED */
    case 129: /* UNIFIED_FUNCTION_POINTERS */
        *v = 1;
        return true;
    case 87: /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: 2 on A100/H100-class parts, 32 on T4 */
        *v = ampere && d->cc_minor == 0 ? 2 : 32;
        return true;
    case 91: /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
        *v = 0;
        return true;
    case 92:    /* CAN_USE_STREAM_MEM_OPS_V1 */
    case 93:    /* CAN_USE_64_BIT_STREAM_MEM_OPS_V1 */
    case 94:    /* CAN_USE_STREAM_WAIT_VALUE_NOR_V1 */
        *v = 0; /* the _V1 stream memory operations were removed in CUDA 12 */
        return true;
    case 96: /* COOPERATIVE_MULTI_DEVICE_LAUNCH (deprecated) */
        *v = 0;
        return true;
    case 107: /* GENERIC_COMPRESSION_SUPPORTED */
        *v = ampere;
        return true;
    case 108: /* MAX_PERSISTING_L2_CACHE_SIZE: 3/4 of L2 */
        *v = ampere ? d->l2_bytes / 4 * 3 : 0;
        return true;
    case 109: /* MAX_ACCESS_POLICY_WINDOW_SIZE */
        *v = ampere ? 134213632 : 0;
        return true;
    case 111: /* RESERVED_SHARED_MEMORY_PER_BLOCK */
        *v = 1024;
        return true;
    case 117: /* GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST
               */
        *v = 1;
        return true;
    case 118: /* GPU_DIRECT_RDMA_WRITES_ORDERING: owner (Ampere+), none before */
        *v = ampere ? 100 : 0;
        return true;
    case 119: /* MEMPOOL_SUPPORTED_HANDLE_TYPES: POSIX file descriptor */
        *v = 1;
        return true;
    case 120: /* CLUSTER_LAUNCH */
    case 127: /* TENSOR_MAP_ACCESS_SUPPORTED */
    case 132: /* MULTICAST_SUPPORTED */
        *v = hopper;
        return true;
    case 126: /* MEM_SYNC_DOMAIN_COUNT */
        *v = hopper ? 4 : 1;
        return true;
    case 128: /* HANDLE_TYPE_FABRIC_SUPPORTED */
        *v = hopper && d->nlinks > 0;
        return true;
    case 130: /* NUMA_CONFIG: none */
    case 133: /* MPS_ENABLED */
        *v = 0;
        return true;
    case 131: /* NUMA_ID */
        *v = -1;
        return true;
    case 134: /* HOST_NUMA_ID */
        *v = d->numa_node;
        return true;
    case 139: /* GPU_PCI_DEVICE_ID: device id << 16 | vendor 0x10de */
        *v = (int)((d->pci_device_id << 16) | 0x10deu);
        return true;
    case 140: /* GPU_PCI_SUBSYSTEM_ID */
        *v = (int)d->pci_subsystem_id;
        return true;
    default:
        /* The rest are Windows, Tegra, CIG, decompression-engine and host-NUMA features that a
         * Linux data-centre GPU without them reports as 0. */
        (void)idx;
        *v = 0;
        return true;
    }
}

CU_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, d);
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    int v;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        v = 64;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
        v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        v = 49152;
        break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
        v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        v = d->clock_khz;
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        v = 512;
        break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        v = d->sm_count;
        break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        v = (int)d->pci_bus;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        v = (int)d->pci_device;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        v = (int)d->pci_domain;
        break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        v = d->mem_clock_khz;
        break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        v = d->bus_width;
        break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        v = d->l2_bytes;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        v = d->max_threads_per_sm;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        v = 2;
        break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        v = d->cc_major;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        v = d->cc_minor;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        v = d->smem_per_sm;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
        v = d_idx;
        break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        v = d->smem_per_block_optin;
        break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        v = d->max_blocks_per_sm;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        v = 1;
        break;
    default:
        if (!other_attribute((int)attrib, d, d_idx, &v))
            return CUDA_ERROR_INVALID_VALUE;
        break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, d);
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%04X:%02X:%02X.0", d->pci_domain, d->pci_bus, d->pci_device);
    return CUDA_SUCCESS;
}

CU_API CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    CU_CHECK_INIT();
    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int dom, bus, d;
    if (sim_parse_pci_bus_id(pciBusId, &dom, &bus, &d) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (int o = 0; o < cu_g.nvis; o++) {
        const struct sim_device_cfg *c = &cu_g.cfg.dev[cu_g.vis[o]];
        if (c->pci_domain == dom && c->pci_bus == bus && c->pci_device == d) {
            *dev = o;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

CU_API CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CU_CHECK_INIT();
    CU_DEVICE_CFG(dev, a);
    CU_DEVICE_CFG(peerDev, b);
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    int ok = 0;
    if (a_idx != b_idx) {
        for (int l = 0; l < a->nlinks; l++)
            ok |= a->link_peer[l] == b_idx;
        ok |= a->numa_node == b->numa_node;
    }
    *canAccessPeer = ok;
    return CUDA_SUCCESS;
}
