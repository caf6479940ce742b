/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/standalone.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/ledger.h"
#include "base/fs.h"
#include "gpuslice/shared_region.h"
#include "config/limits.h"
#include "config/quantity.h"
#include "gpu/slice.h"

static int set_path(char *dst, size_t len, const char *src, const char *what, struct gs_error *err)
{
    int n = snprintf(dst, len, "%s", src);
    if (n < 0 || (size_t)n >= len)
        return gs_error_set(err, -ENAMETOOLONG, "%s: path too long: %s", what, src);
    return 0;
}

static void exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0) {
        snprintf(buf, len, ".");
        return;
    }
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
}

int sa_env_init(struct sa_env *env, const char *state_dir, bool sim, struct gs_error *err)
{
    memset(env, 0, sizeof(*env));
    env->sim = sim;
    const char *s = state_dir && *state_dir ? state_dir : getenv(SA_STATE_ENV);
    int rc;
    if (s && *s) {
        rc = set_path(env->state_dir, sizeof(env->state_dir), s, "--state-dir", err);
    } else if (geteuid() == 0) {
        rc =
            set_path(env->state_dir, sizeof(env->state_dir), "/var/lib/gpuslice", "state dir", err);
    } else {
        const char *xdg = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        char buf[SA_PATH_MAX];
        if (xdg && *xdg)
            snprintf(buf, sizeof(buf), "%s/gpuslice", xdg);
        else
            snprintf(buf, sizeof(buf), "%s/.local/state/gpuslice", home && *home ? home : "/tmp");
        rc = set_path(env->state_dir, sizeof(env->state_dir), buf, "state dir", err);
    }
    if (rc < 0)
        return rc;
    if (gs_mkdir_p(env->state_dir, 0755, NULL) < 0)
        return gs_error_set(err, -errno ? -errno : -EIO, "state dir %s: cannot create: %s",
                            env->state_dir, strerror(errno));

    char dir[SA_PATH_MAX];
    exe_dir(dir, sizeof(dir));
    const char *v = getenv("GPUSLICE_VGPU_LIB");
    char buf[SA_PATH_MAX + 32];
    snprintf(buf, sizeof(buf), "%s/../lib/libvgpu.so", dir);
    if ((rc = set_path(env->vgpu_lib, sizeof(env->vgpu_lib), v && *v ? v : buf, "libvgpu", err)) <
        0)
        return rc;
    v = getenv("GPUSLICE_SIM_DIR");
    snprintf(buf, sizeof(buf), "%s/../lib/gpusim", dir);
    if ((rc = set_path(env->sim_dir, sizeof(env->sim_dir), v && *v ? v : buf, "gpusim", err)) < 0)
        return rc;
    /* Canonical paths: they end up in LD_PRELOAD / LD_LIBRARY_PATH of other processes. */
    char real[PATH_MAX];
    if (realpath(env->vgpu_lib, real))
        snprintf(env->vgpu_lib, sizeof(env->vgpu_lib), "%s", real);
    if (realpath(env->sim_dir, real))
        snprintf(env->sim_dir, sizeof(env->sim_dir), "%s", real);
    if (gethostname(env->node, sizeof(env->node) - 1) != 0 || !env->node[0])
        snprintf(env->node, sizeof(env->node), "localhost");
    return 0;
}

int sa_reexec_with_sim(const struct sa_env *env, char **argv, struct gs_error *err)
{
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t n = strlen(env->sim_dir);
    if (old && strncmp(old, env->sim_dir, n) == 0 && (old[n] == '\0' || old[n] == ':'))
        return 0; /* already on gpusim */
    char buf[SA_PATH_MAX * 2];
    snprintf(buf, sizeof(buf), "%s%s%s", env->sim_dir, old && *old ? ":" : "", old ? old : "");
    if (setenv("LD_LIBRARY_PATH", buf, 1) != 0)
        return gs_error_set(err, -errno, "setenv LD_LIBRARY_PATH: %s", strerror(errno));
    execv("/proc/self/exe", argv);
    return gs_error_set(err, -errno, "re-executing with gpusim (%s): %s", env->sim_dir,
                        strerror(errno));
}

static json_t *device_class(void)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:{s:s}}]}}", "apiVersion", "resource.k8s.io/v1",
                     "kind", "DeviceClass", "metadata", "name", SA_DEVICE_CLASS, "spec",
                     "selectors", "cel", "expression",
                     "device.driver == \"" SA_DRIVER "\" && device.attributes[\"" SA_DRIVER
                     "\"].type == \"hami-gpu\"");
}

int sa_discover(const struct sa_env *env, struct gpu_inventory *inv, json_t **slice, json_t **cls,
                struct gs_error *err)
{
    *slice = *cls = NULL;
    /* gpusim's PCI bus ids are invented: never resolve them against this machine's sysfs. */
    int rc = gpu_discover(env->sim ? "/nonexistent-sysfs" : "/sys", inv, err);
    if (rc < 0) {
        gs_error_prefix(err, "no GPU found (%s): ",
                        env->sim ? "gpusim" : "use --sim to run on the simulated GPU");
        return -ENODEV;
    }
    if (inv->n == 0)
        return gs_error_set(err, -ENODEV, "no GPU found: NVML reports 0 devices%s",
                            env->sim ? "" : " (use --sim to run on the simulated GPU)");
    *slice = gpu_slice_build(inv, SA_DRIVER, env->node, 1, 0);
    *cls = device_class();
    if (!*slice || !*cls) {
        json_decref(*slice);
        json_decref(*cls);
        *slice = *cls = NULL;
        return gs_error_set(err, -ENOMEM, "describing the GPUs: out of memory");
    }
    return 0;
}

void sa_uuid(char out[37])
{
    uint8_t b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        /* getrandom only fails on ancient kernels; fall back to something unique enough. */
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (uint8_t)(rand() ^ getpid() ^ (int)i);
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

int sa_validate_request(const struct sa_request *r, struct gs_error *err)
{
    if (r->cores > 100) /* < 0: not requested */
        return gs_error_set(err, -EINVAL, "--cores: %lld is above the maximum 100",
                            (long long)r->cores);
    if (r->memory == 0)
        return gs_error_set(err, -EINVAL, "--memory: must be more than 0");
    if (r->gpus < 1 || r->gpus > 32)
        return gs_error_set(err, -EINVAL, "--gpus: %lld is outside 1..32", (long long)r->gpus);
    if (r->gpu_type) {
        if (!*r->gpu_type || strlen(r->gpu_type) > 128)
            return gs_error_set(err, -EINVAL, "--gpu-type: must be 1..128 characters");
        for (const char *p = r->gpu_type; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return gs_error_set(err, -EINVAL, "--gpu-type: control characters are not allowed");
    }
    return 0;
}

/* A CEL string literal: double quotes, with backslash and quote escaped (input has no control
 * characters, see sa_validate_request). */
static void cel_quote(char *buf, size_t len, const char *s)
{
    size_t pos = 0;
    buf[pos++] = '"';
    for (; *s && pos + 3 < len; s++) {
        if (*s == '"' || *s == '\\')
            buf[pos++] = '\\';
        buf[pos++] = *s;
    }
    buf[pos++] = '"';
    buf[pos] = '\0';
}

int sa_build_claim(const struct sa_request *r, json_t **claim, struct gs_error *err)
{
    *claim = NULL;
    char uid[37];
    sa_uuid(uid);
    char name[300];
    if (r->name && *r->name)
        snprintf(name, sizeof(name), "%s", r->name);
    else
        snprintf(name, sizeof(name), "slice-%.8s", uid);

    json_t *exactly = json_pack("{s:s, s:s, s:I}", "deviceClassName", SA_DEVICE_CLASS,
                                "allocationMode", "ExactCount", "count", (json_int_t)r->gpus);
    json_t *requests = json_object();
    char q[GS_QUANTITY_STR_MAX];
    if (r->cores >= 0) {
        struct gs_quantity c;
        gs_quantity_from_int64(r->cores, GS_QUANTITY_DECIMAL_SI, &c);
        gs_quantity_format(&c, q, sizeof(q));
        json_object_set_new(requests, "cores", json_string(q));
    }
    if (r->memory > 0) {
        struct gs_quantity m;
        gs_quantity_from_int64(r->memory, GS_QUANTITY_BINARY_SI, &m);
        gs_quantity_format(&m, q, sizeof(q));
        json_object_set_new(requests, "memory", json_string(q));
    }
    if (json_object_size(requests) > 0)
        json_object_set_new(exactly, "capacity", json_pack("{s:o}", "requests", requests));
    else
        json_decref(requests);
    if (r->gpu_type) {
        char lit[300], expr[600];
        char lower[130];
        size_t i = 0;
        for (; r->gpu_type[i] && i < sizeof(lower) - 1; i++)
            lower[i] = (char)((r->gpu_type[i] >= 'A' && r->gpu_type[i] <= 'Z') ? r->gpu_type[i] + 32
                                                                               : r->gpu_type[i]);
        lower[i] = '\0';
        cel_quote(lit, sizeof(lit), lower);
        snprintf(expr, sizeof(expr),
                 "device.attributes[\"" SA_DRIVER "\"].productName.lowerAscii().contains(%s)", lit);
        json_object_set_new(exactly, "selectors",
                            json_pack("[{s:{s:s}}]", "cel", "expression", expr));
    }
    *claim = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:{s:[{s:s, s:o}]}}}", "apiVersion",
                       "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name", name,
                       "namespace", SA_NAMESPACE, "uid", uid, "spec", "devices", "requests", "name",
                       SA_REQUEST, "exactly", exactly);
    if (!*claim)
        return gs_error_set(err, -ENOMEM, "building the claim: out of memory");
    return 0;
}

void sa_slice_dir(const struct sa_env *env, const char *uid, char *buf, size_t len)
{
    snprintf(buf, len, "%s/slices/%s", env->state_dir, uid);
}

int sa_write_slice(const struct sa_env *env, const json_t *claim, const struct gpu_inventory *inv,
                   struct claim_plan *plan, struct gs_error *err)
{
    json_t *md = json_object_get(claim, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *uid = json_string_value(json_object_get(md, "uid"));
    if (!ns || !name || !uid)
        return gs_error_set(err, -EINVAL, "claim without metadata.namespace/name/uid");
    int rc = claim_plan_build(claim, ns, name, uid, SA_DRIVER, env->node, inv, plan, err);
    if (rc < 0)
        return rc;
    char dir[SA_PATH_MAX], limits_dir[SA_PATH_MAX + 16], path[SA_PATH_MAX + 64];
    sa_slice_dir(env, uid, dir, sizeof(dir));
    snprintf(limits_dir, sizeof(limits_dir), "%s/limits", dir);
    if (gs_mkdir_p(limits_dir, 0755, NULL) < 0)
        return gs_error_set(err, -errno, "slice dir %s: %s", limits_dir, strerror(errno));
    struct gs_limits *l = calloc(1, sizeof(*l));
    if (!l)
        return gs_error_set(err, -ENOMEM, "limits: out of memory");
    gs_limits_init(l);
    snprintf(l->claim, sizeof(l->claim), "%s", uid);
    snprintf(l->region_path, sizeof(l->region_path), "%s/region", dir);
    for (size_t i = 0; i < plan->n_devices && rc == 0; i++)
        rc = gs_limits_add_device(l, plan->devices[i].uuid, plan->devices[i].memory_limit,
                                  plan->devices[i].cores, err);
    if (rc == 0)
        rc = gs_limits_path(path, sizeof(path), limits_dir, uid, err);
    if (rc == 0)
        rc = gs_limits_write(path, l, err);
    free(l);
    return rc;
}

/* Live usage of one device from a slice's shared region (read-only, never locks). */
struct region_usage {
    bool present;
    uint64_t used, busy_ns, launches, oom_count, throttled_ns;
};

static void region_read(const char *path, const char *uuid, struct region_usage *u)
{
    memset(u, 0, sizeof(*u));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct gs_region)) {
        close(fd);
        return;
    }
    const struct gs_region *r = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (r == MAP_FAILED)
        return;
    if (r->magic == GS_REGION_MAGIC && r->version == GS_REGION_VERSION && r->size == sizeof(*r) &&
        atomic_load_explicit(&r->init_state, memory_order_acquire) == GS_REGION_READY) {
        uint32_t n = GS_MIN(atomic_load(&r->n_devices), (uint32_t)GS_REGION_MAX_DEVICES);
        for (uint32_t i = 0; i < n; i++) {
            if (strncmp(r->devices[i].uuid, uuid, sizeof(r->devices[i].uuid)) != 0)
                continue;
            u->present = true;
            u->used = atomic_load_explicit(&r->devices[i].used, memory_order_acquire);
            u->busy_ns = atomic_load_explicit(&r->devices[i].busy_ns, memory_order_acquire);
            u->launches = atomic_load_explicit(&r->devices[i].launches, memory_order_acquire);
            u->oom_count = atomic_load_explicit(&r->devices[i].oom_count, memory_order_acquire);
            u->throttled_ns =
                atomic_load_explicit(&r->devices[i].throttled_ns, memory_order_acquire);
            break;
        }
    }
    munmap((void *)r, sizeof(*r));
}

static json_t *gpu_entry(const struct gpu_device *d)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:{s:i, s:I}, s:{s:i, s:I}, s:{s:i, s:I}, s:[]}",
                     "device", d->name, "uuid", d->uuid, "productName", d->product, "minor",
                     (int)d->minor, "capacity", "cores", 100, "memory",
                     (json_int_t)(d->memory_total / GPU_MIB * GPU_MIB), "allocated", "cores", 0,
                     "memory", (json_int_t)0, "free", "cores", 100, "memory",
                     (json_int_t)(d->memory_total / GPU_MIB * GPU_MIB), "slices");
}

static json_t *find_gpu(json_t *gpus, const char *device)
{
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        const char *name = json_string_value(json_object_get(g, "device"));
        if (name && strcmp(name, device) == 0)
            return g;
    }
    return NULL;
}

static void add_int(json_t *obj, const char *outer, const char *key, json_int_t delta)
{
    json_t *o = json_object_get(obj, outer);
    json_int_t v = json_integer_value(json_object_get(o, key));
    json_object_set_new(o, key, json_integer(v + delta));
}

int sa_snapshot(const struct sa_env *env, const struct gpu_inventory *inv, struct ledger *l,
                json_t **out, struct gs_error *err)
{
    *out = NULL;
    json_t *rows = NULL;
    int rc = ledger_list(l, &rows, err);
    if (rc < 0)
        return rc;
    json_t *gpus = json_array();
    json_t *slices = json_array();
    for (size_t i = 0; inv && i < inv->n; i++)
        json_array_append_new(gpus, gpu_entry(&inv->dev[i]));
    struct claim_plan *plan = calloc(1, sizeof(*plan));
    if (!plan) {
        json_decref(rows);
        json_decref(gpus);
        json_decref(slices);
        return gs_error_set(err, -ENOMEM, "out of memory");
    }
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        json_t *claim = json_deep_copy(json_object_get(row, "claim"));
        json_t *alloc = json_object_get(row, "allocation");
        json_object_set_new(claim, "status", json_pack("{s:O}", "allocation", alloc));
        json_t *md = json_object_get(claim, "metadata");
        const char *uid = json_string_value(json_object_get(md, "uid"));
        const char *name = json_string_value(json_object_get(row, "name"));
        json_t *devs = json_array();
        struct gs_error perr = {0};
        int prc = -ENODEV;
        if (inv)
            prc = claim_plan_build(claim, SA_NAMESPACE,
                                   json_string_value(json_object_get(md, "name")), uid, SA_DRIVER,
                                   env->node, inv, plan, &perr);
        char region[SA_PATH_MAX + 16];
        snprintf(region, sizeof(region), "%s/region",
                 json_string_value(json_object_get(row, "sliceDir")));
        for (size_t k = 0; prc == 0 && k < plan->n_devices; k++) {
            const struct claim_device *d = &plan->devices[k];
            struct region_usage u;
            region_read(region, d->uuid, &u);
            json_t *g = find_gpu(gpus, d->device);
            uint64_t mem = d->memory_limit;
            if (!mem) {
                for (size_t j = 0; j < inv->n; j++)
                    if (strcmp(inv->dev[j].name, d->device) == 0)
                        mem = inv->dev[j].memory_total / GPU_MIB * GPU_MIB;
            }
            unsigned cores = d->cores ? d->cores : 100;
            if (g) {
                add_int(g, "allocated", "cores", cores);
                add_int(g, "allocated", "memory", (json_int_t)mem);
                add_int(g, "free", "cores", -(json_int_t)cores);
                add_int(g, "free", "memory", -(json_int_t)mem);
                json_array_append_new(json_object_get(g, "slices"), json_string(name));
            }
            json_array_append_new(
                devs, json_pack("{s:s, s:s, s:{s:i, s:I}, s:{s:b, s:I, s:I, s:I, s:I}}", "device",
                                d->device, "uuid", d->uuid, "limits", "cores", (int)cores, "memory",
                                (json_int_t)mem, "usage", "live", u.present, "memory",
                                (json_int_t)u.used, "busyNs", (json_int_t)u.busy_ns, "launches",
                                (json_int_t)u.launches, "oomCount", (json_int_t)u.oom_count));
        }
        json_t *s = json_pack("{s:I, s:s, s:s?, s:O, s:s, s:I, s:o}", "id",
                              json_integer_value(json_object_get(row, "id")), "name", name, "uid",
                              uid, "owner", json_object_get(row, "owner"), "command",
                              json_string_value(json_object_get(row, "command")), "created",
                              json_integer_value(json_object_get(row, "created")), "devices", devs);
        if (s)
            json_array_append_new(slices, s);
        json_decref(claim);
    }
    free(plan);
    json_decref(rows);
    *out = json_pack("{s:s, s:s, s:o, s:o}", "node", env->node, "stateDir", env->state_dir, "gpus",
                     gpus, "slices", slices);
    return *out ? 0 : gs_error_set(err, -ENOMEM, "out of memory");
}
