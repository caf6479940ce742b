/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML loader (see nvml.h): dlopen by soname, dlsym of the gpu/nvml.def list, nvmlInit_v2. */
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NVML_SONAME "libnvidia-ml.so.1"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "lib"
#endif

/* gpu_nvml_set_driver_root; "" means "/" (the loader's search only). */
static char driver_root[PATH_MAX];

int gpu_nvml_set_driver_root(const char *root, struct gs_error *err)
{
    if (!root || !*root || strcmp(root, "/") == 0) {
        driver_root[0] = '\0';
        return 0;
    }
    if (root[0] != '/')
        return gs_error_set(err, -EINVAL, "driver root \"%s\" is not an absolute path", root);
    struct stat st;
    if (stat(root, &st) < 0)
        return gs_error_set(err, -errno, "driver root %s: %s", root, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gs_error_set(err, -ENOTDIR, "driver root %s: not a directory", root);
    if (strlen(root) >= sizeof(driver_root))
        return gs_error_set(err, -ENAMETOOLONG, "driver root %.64s...: path too long", root);
    snprintf(driver_root, sizeof(driver_root), "%s", root);
    size_t n = strlen(driver_root);
    while (n > 1 && driver_root[n - 1] == '/')
        driver_root[--n] = '\0';
    return 0;
}

/* The driver root's library directories, in the order the NVIDIA container toolkit searches. */
static void *open_in_driver_root(char *why, size_t len)
{
    static const char *const dirs[] = {"/usr/lib64", "/usr/lib/" MULTIARCH, "/usr/lib", "/lib64",
                                       "/lib/" MULTIARCH};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s%s/" NVML_SONAME, driver_root, dirs[i]);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    snprintf(why, len,
             "not in driver root %s (usr/lib64, usr/lib/" MULTIARCH
             ", usr/lib, lib64, lib/" MULTIARCH "); ",
             driver_root);
    return NULL;
}

static void *open_lib(unsigned flags, char *why, size_t len)
{
    size_t used = 0;
    if (driver_root[0]) {
        void *h = open_in_driver_root(why, len);
        if (h)
            return h;
        used = strlen(why);
    }
    void *h = dlopen(NVML_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h)
        return h;
    const char *e = dlerror();
    snprintf(why + used, len - used, "%s", e ? e : "not found");
    if (!(flags & GPU_NVML_SEARCH_EXE_DIR))
        return NULL;
    const char *env = getenv("GPUSIM_SMI_NVML");
    if (env && *env && (h = dlopen(env, RTLD_NOW | RTLD_LOCAL)))
        return h;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    const char *dir = dirname(exe);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/" NVML_SONAME, dir);
    if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return h;
    snprintf(path, sizeof(path), "%s/../lib/gpusim/" NVML_SONAME, dir);
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

int gpu_nvml_fail(const struct gpu_nvml *nv, struct gs_error *err, const char *call, nvmlReturn_t r)
{
    const char *s = nv->nvmlErrorString ? nv->nvmlErrorString(r) : NULL;
    return gs_error_set(err, -EIO, "NVML: %s failed: %s", call, s ? s : "unknown error");
}

int gpu_nvml_open(struct gpu_nvml *nv, unsigned uses, unsigned flags, struct gs_error *err)
{
    char why[256] = "";
    memset(nv, 0, sizeof(*nv));
    void *lib = open_lib(flags, why, sizeof(why));
    if (!lib)
        return gs_error_set(err, -ENOENT, "cannot load " NVML_SONAME " (%s%s)", why,
                            flags & GPU_NVML_SEARCH_EXE_DIR
                                ? "; no NVIDIA driver or gpusim found: set LD_LIBRARY_PATH or "
                                  "GPUSIM_SMI_NVML"
                                : "");
#define GPU_NVML_FN(fn, needed_by)                                                                 \
    nv->fn = (GS_NVML_PFN(fn))dlsym(lib, #fn);                                                     \
    if (!nv->fn && ((needed_by)&uses)) {                                                           \
        memset(nv, 0, sizeof(*nv));                                                                \
        dlclose(lib);                                                                              \
        return gs_error_set(err, -ENOSYS, NVML_SONAME " has no %s", #fn);                          \
    }
#include "gpu/nvml.def"
#undef GPU_NVML_FN
    nvmlReturn_t r = nv->nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        int code = gpu_nvml_fail(nv, err, "nvmlInit_v2", r);
        memset(nv, 0, sizeof(*nv));
        dlclose(lib);
        return code;
    }
    nv->lib = lib;
    return 0;
}

void gpu_nvml_close(struct gpu_nvml *nv)
{
    if (!nv->lib)
        return;
    nv->nvmlShutdown();
    dlclose(nv->lib);
    memset(nv, 0, sizeof(*nv));
}
