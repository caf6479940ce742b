/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/cdi.h"

#include <ctype.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpuslice/limits.h"
#include "base/fs.h"

#define SPEC_PREFIX_FMT "k8s.%s-claim_"

void cdi_kind(const struct cdi_config *c, char *buf, size_t len)
{
    snprintf(buf, len, "k8s.%s/claim", c->driver);
}

void cdi_device_id(const struct cdi_config *c, const char *uid, const char *device, char *buf,
                   size_t len)
{
    snprintf(buf, len, "k8s.%s/claim=%s-%s", c->driver, uid, device);
}

void cdi_spec_path(const struct cdi_config *c, const char *uid, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" SPEC_PREFIX_FMT "%s.json", c->cdi_root, c->driver, uid);
}

void cdi_claim_dir(const struct cdi_config *c, const char *uid, char *buf, size_t len)
{
    snprintf(buf, len, "%s/claims/%s", c->host_dir, uid);
}

void cdi_limits_host_path(const struct cdi_config *c, const char *uid, char *buf, size_t len)
{
    snprintf(buf, len, "%s/claims/%s/%s" GS_LIMITS_SUFFIX, c->host_dir, uid, uid);
}

void cdi_region_host_dir(const struct cdi_config *c, const char *uid, char *buf, size_t len)
{
    snprintf(buf, len, "%s/claims/%s/region", c->host_dir, uid);
}

static json_t *mount(const char *host, const char *container, bool ro)
{
    json_t *opts = json_array();
    json_array_append_new(opts, json_string(ro ? "ro" : "rw"));
    json_array_append_new(opts, json_string("nosuid"));
    json_array_append_new(opts, json_string("nodev"));
    json_array_append_new(opts, json_string("bind"));
    return json_pack("{s:s, s:s, s:o}", "hostPath", host, "containerPath", container, "options",
                     opts);
}

static json_t *env_str(const char *fmt, ...) GS_PRINTF(1, 2);
static json_t *env_str(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return json_string(buf);
}

static json_t *device_edits(const struct cdi_config *c, const struct claim_plan *p,
                            const struct claim_device *d)
{
    char path[PATH_MAX], cpath[PATH_MAX];
    json_t *env = json_array(), *mounts = json_array();

    json_array_append_new(env, env_str("%s=%s", GS_LIMITS_ENV, GS_LIMITS_DIR_DEFAULT));
    if (d->memory_limit > 0)
        json_array_append_new(env, env_str("CUDA_DEVICE_MEMORY_LIMIT_%u=%llum", d->env_index,
                                           (unsigned long long)(d->memory_limit / GPU_MIB)));
    if (d->cores > 0 && d->cores < 100)
        json_array_append_new(env, env_str("CUDA_DEVICE_SM_LIMIT_%u=%u", d->env_index, d->cores));

    snprintf(path, sizeof(path), "%s/libvgpu.so", c->host_dir);
    json_array_append_new(mounts, mount(path, CDI_CONTAINER_LIB, true));
    snprintf(path, sizeof(path), "%s/ld.so.preload", c->host_dir);
    json_array_append_new(mounts, mount(path, CDI_CONTAINER_PRELOAD, true));
    cdi_limits_host_path(c, p->uid, path, sizeof(path));
    snprintf(cpath, sizeof(cpath), "%s/%s" GS_LIMITS_SUFFIX, GS_LIMITS_DIR_DEFAULT, p->uid);
    json_array_append_new(mounts, mount(path, cpath, true));
    cdi_region_host_dir(c, p->uid, path, sizeof(path));
    snprintf(cpath, sizeof(cpath), "%s/%s", CDI_CONTAINER_REGION_DIR, p->uid);
    json_array_append_new(mounts, mount(path, cpath, false));

    json_t *edits = json_pack("{s:o, s:o}", "env", env, "mounts", mounts);
    if (c->selection == CDI_SELECT_VOLUME_MOUNTS) {
        snprintf(cpath, sizeof(cpath), "%s/%s", CDI_NVIDIA_DEVICES_DIR, d->uuid);
        json_array_append_new(mounts, mount("/dev/null", cpath, true));
    } else if (c->selection == CDI_SELECT_DEVICE_NODES) {
        json_t *nodes = json_array();
        snprintf(path, sizeof(path), "/dev/nvidia%u", d->minor);
        const char *names[] = {path, "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
        for (size_t i = 0; i < GS_ARRAY_SIZE(names); i++)
            json_array_append_new(nodes, json_pack("{s:s}", "path", names[i]));
        json_object_set_new(edits, "deviceNodes", nodes);
    }
    return edits;
}

json_t *cdi_spec_build(const struct cdi_config *c, const struct claim_plan *p)
{
    char kind[512], name[256];
    bool digit_first = false;
    json_t *devices = json_array();
    cdi_kind(c, kind, sizeof(kind));
    for (size_t i = 0; i < p->n_devices; i++) {
        snprintf(name, sizeof(name), "%s-%s", p->uid, p->devices[i].device);
        if (isdigit((unsigned char)name[0]))
            digit_first = true;
        json_array_append_new(devices, json_pack("{s:s, s:o}", "name", name, "containerEdits",
                                                 device_edits(c, p, &p->devices[i])));
    }
    /* 0.5.0 is the first spec version that allows device names starting with a digit; nothing
     * else we use needs more than 0.3.0. */
    return json_pack("{s:s, s:s, s:o}", "cdiVersion", digit_first ? "0.5.0" : "0.3.0", "kind", kind,
                     "devices", devices);
}

int cdi_spec_write(const struct cdi_config *c, const struct claim_plan *p, struct gs_error *err)
{
    char path[PATH_MAX];
    json_t *spec = cdi_spec_build(c, p);
    if (!spec)
        return gs_error_set(err, -ENOMEM, "out of memory building the CDI spec");
    char *text = json_dumps(spec, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(spec);
    if (!text)
        return gs_error_set(err, -ENOMEM, "out of memory building the CDI spec");
    cdi_spec_path(c, p->uid, path, sizeof(path));
    int r = gs_mkdir_p(c->cdi_root, 0755, err);
    if (r == 0)
        r = gs_write_file_atomic_ex(path, text, strlen(text), 0644, 0, err);
    free(text);
    return r;
}

int cdi_spec_remove(const struct cdi_config *c, const char *uid, struct gs_error *err)
{
    char path[PATH_MAX];
    cdi_spec_path(c, uid, path, sizeof(path));
    if (unlink(path) < 0 && errno != ENOENT)
        return gs_error_set(err, -errno, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

int cdi_spec_uid_from_filename(const struct cdi_config *c, const char *filename, char *uid,
                               size_t len)
{
    char prefix[512];
    snprintf(prefix, sizeof(prefix), SPEC_PREFIX_FMT, c->driver);
    size_t pl = strlen(prefix), fl = strlen(filename);
    if (fl <= pl + 5 || strncmp(filename, prefix, pl) != 0 ||
        strcmp(filename + fl - 5, ".json") != 0)
        return -EINVAL;
    size_t ul = fl - pl - 5;
    if (ul >= len)
        return -ENAMETOOLONG;
    memcpy(uid, filename + pl, ul);
    uid[ul] = '\0';
    return claim_uid_valid(uid) ? 0 : -EINVAL;
}
