/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: code. Modules (cuModuleLoad*, per context) and libraries (cuLibraryLoad*,
 * context-independent, loaded before any context exists by the CUDA runtime) take the images nvcc
 * makes -- fatbinary, cubin, PTX (sim-image.c) -- and refuse anything else with
 * CUDA_ERROR_INVALID_IMAGE. Functions and kernels exist by the names the image declares; their
 * cost comes from the name (cuda-launch.c). Also function/kernel attributes, occupancy, the
 * module loading mode and context limits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "sim/cuda-internal.h"

/* The one text gpusim takes without names: a test image that declares every kernel name
 * (gpusim-only; the real driver refuses it). */
#define ANY_NAME_IMAGE "gpusim"

/* ------------------------------------------------------------------ images */
static CUresult image_parse(const void *image, size_t len, struct sim_image *img, bool *any)
{
    struct gs_error err = {0};
    *any = false;
    /* strncmp stops at the first difference: never reads past a shorter image */
    if (len == SIZE_MAX && strncmp(image, ANY_NAME_IMAGE, sizeof(ANY_NAME_IMAGE)) == 0) {
        memset(img, 0, sizeof(*img));
        *any = true;
        return CUDA_SUCCESS;
    }
    int r = sim_image_parse(image, len, img, &err);
    if (r < 0) {
        sim_image_fini(img);
        return r == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
    }
    *any = img->names_unknown;
    return CUDA_SUCCESS;
}

/* The whole file (a regular one of at most SIM_IMAGE_MAX bytes, not empty) in *buf, with the
 * driver's answers: no such file, not an image (too big, empty, not a regular file), no memory. */
static CUresult read_file(const char *path, unsigned char **buf, size_t *len)
{
    char *data = NULL;
    int r = gs_read_file_ex(path, SIM_IMAGE_MAX, GS_READ_REGULAR, &data, len, NULL, NULL);
    if (r == -ENOENT || r == -ENOTDIR)
        return CUDA_ERROR_FILE_NOT_FOUND;
    if (r == -ENOMEM)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (r == -EFBIG || r == -EINVAL || r == -EISDIR || (r == 0 && *len == 0)) {
        free(data);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    if (r < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *buf = (unsigned char *)data;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ modules */
static CUresult module_make(struct sim_module **out, struct sim_ctx *ctx, const void *image,
                            size_t len)
{
    struct sim_image img;
    bool any;
    CUresult r = image_parse(image, len, &img, &any);
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t *gp = img.n ? calloc(img.n, sizeof(*gp)) : NULL;
    struct sim_module *m = (img.n && !gp) ? NULL : cu_obj_new(CU_OBJ_MODULE, sizeof(*m));
    if (!m) {
        free(gp);
        sim_image_fini(&img);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = ctx;
    m->img = img;
    m->any_name = any;
    m->global_ptr = gp;
    *out = m;
    return CUDA_SUCCESS;
}

void cu_module_drop_globals_locked(struct sim_module *m)
{
    for (size_t i = 0; m->global_ptr && i < m->img.n; i++)
        if (m->global_ptr[i])
            cu_alloc_del_locked(m->global_ptr[i], NULL);
    free(m->global_ptr);
    m->global_ptr = NULL;
    sim_image_fini(&m->img);
}

/* false if m was already gone (checked under the lock: one unload wins). */
static bool module_free(struct sim_module *m)
{
    pthread_mutex_lock(&cu_g.lock);
    if (!cu_valid(m, CU_OBJ_MODULE)) {
        pthread_mutex_unlock(&cu_g.lock);
        return false;
    }
    struct sim_func *f = m->funcs;
    m->funcs = NULL;
    for (; f; f = f->next)
        cu_obj_del_locked(f);
    pthread_mutex_lock(&cu_g.mem_lock);
    cu_module_drop_globals_locked(m);
    pthread_mutex_unlock(&cu_g.mem_lock);
    cu_obj_del_locked(m);
    pthread_mutex_unlock(&cu_g.lock);
    return true;
}

static CUresult module_load(CUmodule *module, const void *image, size_t len)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    struct sim_module *m;
    if ((r = module_make(&m, c, image, len)) != CUDA_SUCCESS)
        return r;
    *module = (CUmodule)m;
    return CUDA_SUCCESS;
}

CU_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    CU_CHECK_INIT();
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *buf = NULL;
    size_t len = 0;
    CUresult r = read_file(fname, &buf, &len);
    if (r == CUDA_SUCCESS)
        r = module_load(module, buf, len);
    free(buf);
    return r;
}

CU_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CU_CHECK_INIT();
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module, image, SIZE_MAX);
}

/* The options are ignored (no JIT); the prototype is the driver's. */
CU_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                   /* NOLINTNEXTLINE(readability-non-const-parameter): API's type */
                                   CUjit_option *options, void **optionValues)
{
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadData(module, image);
}

CU_API CUresult cuModuleUnload(CUmodule hmod)
{
    CU_CHECK_INIT();
    struct sim_module *m = (struct sim_module *)hmod;
    if (!cu_valid(m, CU_OBJ_MODULE) || m->lib)
        return CUDA_ERROR_INVALID_HANDLE;
    return module_free(m) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The function `name` of m (created on first use); NULL with *r set if the image has none. */
static struct sim_func *module_function(struct sim_module *m, const char *name, CUresult *r)
{
    if (name[0] == '\0' || strlen(name) >= sizeof(((struct sim_func *)0)->name) ||
        (!m->any_name && !sim_image_find(&m->img, name, true))) {
        *r = CUDA_ERROR_NOT_FOUND;
        return NULL;
    }
    pthread_mutex_lock(&cu_g.lock);
    for (struct sim_func *f = m->funcs; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            pthread_mutex_unlock(&cu_g.lock);
            return f;
        }
    }
    pthread_mutex_unlock(&cu_g.lock);
    struct sim_func *f = cu_obj_new(CU_OBJ_FUNC, sizeof(*f));
    if (!f) {
        *r = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->cost_ns = cu_cost_of_name(name);
    f->mod = m;
    f->carveout = -1;
    f->max_dynamic_smem = 48 * 1024;
    pthread_mutex_lock(&cu_g.lock);
    for (struct sim_func *o = m->funcs; o; o = o->next) { /* another thread won */
        if (strcmp(o->name, name) == 0) {
            pthread_mutex_unlock(&cu_g.lock);
            cu_obj_del(f);
            return o;
        }
    }
    f->next = m->funcs;
    m->funcs = f;
    pthread_mutex_unlock(&cu_g.lock);
    return f;
}

CU_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CU_CHECK_INIT();
    struct sim_module *m = (struct sim_module *)hmod;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(m, CU_OBJ_MODULE))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_SUCCESS;
    struct sim_func *f = module_function(m, name, &r);
    if (!f)
        return r;
    *hfunc = (CUfunction)f;
    return CUDA_SUCCESS;
}

/* A __device__ variable: a fixed device address (registered so copies reach it), its size.
 * Neither charged nor freeable: it is part of the loaded code. */
static CUresult module_global(struct sim_module *m, struct sim_ctx *c, const char *name,
                              CUdeviceptr *dptr, size_t *bytes)
{
    const struct sim_image_sym *g = sim_image_find(&m->img, name, false);
    if (!g)
        return CUDA_ERROR_NOT_FOUND;
    size_t i = (size_t)(g - m->img.syms);
    uint64_t size = g->size ? g->size : 1;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&cu_g.mem_lock);
    if (!m->global_ptr[i]) {
        struct sim_map_entry e = {.size = size, .kind = CU_ALLOC_GLOBAL, .dev = c->dev};
        int tries = 0, pr = -EEXIST;
        for (; tries < 64 && pr == -EEXIST; tries++) {
            e.key = cu_va_alloc_locked(c->dev, size, CU_ADDR_ALIGN);
            pr = sim_map_put(&cu_g.allocs, &e);
        }
        if (pr < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            m->global_ptr[i] = e.key;
    }
    uint64_t p = m->global_ptr[i];
    pthread_mutex_unlock(&cu_g.mem_lock);
    if (r == CUDA_SUCCESS) {
        if (dptr)
            *dptr = p;
        if (bytes)
            *bytes = (size_t)size;
    }
    return r;
}

CU_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                     const char *name)
{
    CU_CHECK_INIT();
    struct sim_module *m = (struct sim_module *)hmod;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(m, CU_OBJ_MODULE))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    return module_global(m, c, name, dptr, bytes);
}

CU_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    CU_CHECK_INIT();
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    /* Like the driver: CUDA_MODULE_LOADING=EAGER, else lazy (the default since CUDA 12.2). */
    const char *env = getenv("CUDA_MODULE_LOADING");
    *mode = env && strcmp(env, "EAGER") == 0 ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ libraries */
static CUresult library_options(const CUjit_option *jitOptions, void **jitOptionsValues,
                                unsigned int numJitOptions, const CUlibraryOption *libraryOptions,
                                void **libraryOptionValues, unsigned int numLibraryOptions)
{
    if (numJitOptions && (!jitOptions || !jitOptionsValues))
        return CUDA_ERROR_INVALID_VALUE;
    if (numLibraryOptions && (!libraryOptions || !libraryOptionValues))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < numLibraryOptions; i++)
        if ((unsigned int)libraryOptions[i] >= CU_LIBRARY_NUM_OPTIONS)
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult library_load(CUlibrary *library, const void *code, size_t len)
{
    struct sim_module *m;
    CUresult r = module_make(&m, NULL, code, len);
    if (r != CUDA_SUCCESS)
        return r;
    struct sim_library *l = cu_obj_new(CU_OBJ_LIBRARY, sizeof(*l));
    if (!l) {
        (void)module_free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->lib = l;
    l->mod = m;
    *library = (CUlibrary)l;
    return CUDA_SUCCESS;
}

/* No context needed: the CUDA runtime loads its fatbinary before it makes one. */
CU_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                  void **jitOptionsValues, unsigned int numJitOptions,
                                  CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                  unsigned int numLibraryOptions)
{
    CU_CHECK_INIT();
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = library_options(jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                                 libraryOptionValues, numLibraryOptions);
    if (r != CUDA_SUCCESS)
        return r;
    return library_load(library, code, SIZE_MAX);
}

CU_API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                      CUjit_option *jitOptions, void **jitOptionsValues,
                                      unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                      void **libraryOptionValues, unsigned int numLibraryOptions)
{
    CU_CHECK_INIT();
    if (!library || !fileName)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = library_options(jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                                 libraryOptionValues, numLibraryOptions);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned char *buf = NULL;
    size_t len = 0;
    r = read_file(fileName, &buf, &len);
    if (r == CUDA_SUCCESS)
        r = library_load(library, buf, len);
    free(buf);
    return r;
}

CU_API CUresult cuLibraryUnload(CUlibrary library)
{
    CU_CHECK_INIT();
    struct sim_library *l = (struct sim_library *)library;
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&cu_g.lock);
    if (!cu_valid(l, CU_OBJ_LIBRARY)) { /* checked under the lock: one unload wins */
        pthread_mutex_unlock(&cu_g.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct sim_kernel *k = l->kernels;
    struct sim_module *m = l->mod; /* read before l can be recycled */
    l->kernels = NULL;
    for (; k; k = k->next)
        cu_obj_del_locked(k);
    cu_obj_del_locked(l);
    pthread_mutex_unlock(&cu_g.lock);
    (void)module_free(m);
    return CUDA_SUCCESS;
}

CU_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CU_CHECK_INIT();
    struct sim_library *l = (struct sim_library *)library;
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(l, CU_OBJ_LIBRARY))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_SUCCESS;
    struct sim_func *f = module_function(l->mod, name, &r);
    if (!f)
        return r;
    pthread_mutex_lock(&cu_g.lock);
    for (struct sim_kernel *k = l->kernels; k; k = k->next) {
        if (k->fn == f) {
            pthread_mutex_unlock(&cu_g.lock);
            *pKernel = (CUkernel)k;
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&cu_g.lock);
    struct sim_kernel *k = cu_obj_new(CU_OBJ_KERNEL, sizeof(*k));
    if (!k)
        return CUDA_ERROR_OUT_OF_MEMORY;
    k->lib = l;
    k->fn = f;
    pthread_mutex_lock(&cu_g.lock);
    for (struct sim_kernel *o = l->kernels; o; o = o->next) { /* another thread won */
        if (o->fn == f) {
            pthread_mutex_unlock(&cu_g.lock);
            cu_obj_del(k);
            *pKernel = (CUkernel)o;
            return CUDA_SUCCESS;
        }
    }
    k->next = l->kernels;
    l->kernels = k;
    pthread_mutex_unlock(&cu_g.lock);
    *pKernel = (CUkernel)k;
    return CUDA_SUCCESS;
}

CU_API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    CU_CHECK_INIT();
    struct sim_library *l = (struct sim_library *)library;
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(l, CU_OBJ_LIBRARY))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r;
    if (!cu_ctx_current(&r))
        return r; /* the module of the library in the current context */
    *pMod = (CUmodule)l->mod;
    return CUDA_SUCCESS;
}

CU_API CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                   const char *name)
{
    CU_CHECK_INIT();
    struct sim_library *l = (struct sim_library *)library;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_valid(l, CU_OBJ_LIBRARY))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    return module_global(l->mod, c, name, dptr, bytes);
}

CU_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    CU_CHECK_INIT();
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    const struct sim_kernel *k = (const struct sim_kernel *)kernel;
    if (!cu_valid(k, CU_OBJ_KERNEL) || !cu_valid(k->fn, CU_OBJ_FUNC))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r;
    if (!cu_ctx_current(&r))
        return r; /* the kernel's function in the current context */
    *pFunc = (CUfunction)k->fn;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ attributes */
static const struct sim_device_cfg *dev_cfg_of(CUdevice ordinal)
{
    int d = cu_dev_of(ordinal);
    return d < 0 ? NULL : &cu_g.cfg.dev[d];
}

/* The device a function attribute is read for: the current context's, else device 0. */
static const struct sim_device_cfg *current_cfg(void)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    return &cu_g.cfg.dev[c ? c->dev : cu_g.vis[0]];
}

static CUresult func_get(int *pi, CUfunction_attribute a, const struct sim_func *f,
                         const struct sim_device_cfg *d)
{
    int cc = d->cc_major * 10 + d->cc_minor;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = 1024;
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *pi = 0;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *pi = 32;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *pi = cc;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *pi = f->max_dynamic_smem;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *pi = f->carveout;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *pi = f->cluster[a - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *pi = f->non_portable_cluster;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *pi = f->cluster_policy;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult func_set(CUfunction_attribute a, int v, struct sim_func *f,
                         const struct sim_device_cfg *d)
{
    bool cluster = d->cc_major >= 9;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (v < 0 || v > d->smem_per_block_optin)
            return CUDA_ERROR_INVALID_VALUE;
        f->max_dynamic_smem = v;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (v < -1 || v > 100)
            return CUDA_ERROR_INVALID_VALUE;
        f->carveout = v;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (!cluster)
            return CUDA_ERROR_NOT_SUPPORTED;
        if (v < 0 || v > 16)
            return CUDA_ERROR_INVALID_VALUE;
        f->cluster[a - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = v;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        if (!cluster)
            return CUDA_ERROR_NOT_SUPPORTED;
        f->non_portable_cluster = v != 0;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        if (v < 0 || v > 2)
            return CUDA_ERROR_INVALID_VALUE;
        f->cluster_policy = v;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE; /* read-only or unknown */
    }
}

CU_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    CU_CHECK_INIT();
    struct sim_func *f = cu_func_resolve(hfunc);
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    return func_get(pi, attrib, f, current_cfg());
}

CU_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    CU_CHECK_INIT();
    struct sim_func *f = cu_func_resolve(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    return func_set(attrib, value, f, current_cfg());
}

CU_API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                     CUdevice dev)
{
    CU_CHECK_INIT();
    const struct sim_device_cfg *d = dev_cfg_of(dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    const struct sim_kernel *k = (const struct sim_kernel *)kernel;
    if (!cu_valid(k, CU_OBJ_KERNEL) || !cu_valid(k->fn, CU_OBJ_FUNC))
        return CUDA_ERROR_INVALID_HANDLE;
    return func_get(pi, attrib, k->fn, d);
}

CU_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                     CUdevice dev)
{
    CU_CHECK_INIT();
    const struct sim_device_cfg *d = dev_cfg_of(dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    const struct sim_kernel *k = (const struct sim_kernel *)kernel;
    if (!cu_valid(k, CU_OBJ_KERNEL) || !cu_valid(k->fn, CU_OBJ_FUNC))
        return CUDA_ERROR_INVALID_HANDLE;
    return func_set(attrib, val, k->fn, d);
}

/* ------------------------------------------------------------------ occupancy */
#define SMEM_RESERVED_PER_BLOCK 1024 /* the driver reserves 1 KiB of shared memory per block */
#define REGS_PER_THREAD         32 /* what gpusim's functions report (CU_FUNC_ATTRIBUTE_NUM_REGS) */

/* Blocks of `block` threads with `smem` dynamic shared memory that fit on one SM. */
int cu_blocks_per_sm(const struct sim_device_cfg *d, int block, size_t smem)
{
    if (block <= 0 || block > 1024)
        return 0;
    int warps = (block + 31) / 32;
    int by_threads = d->max_threads_per_sm / (warps * 32);
    int by_regs = 65536 / (warps * 32 * REGS_PER_THREAD);
    int n = GS_MIN(GS_MIN(by_threads, by_regs), d->max_blocks_per_sm);
    uint64_t per_block = (uint64_t)smem + SMEM_RESERVED_PER_BLOCK;
    if (smem > (size_t)d->smem_per_block_optin)
        return 0;
    uint64_t by_smem = (uint64_t)d->smem_per_sm / per_block;
    return (int)GS_MIN((uint64_t)n, by_smem);
}

static CUresult occupancy(int *numBlocks, CUfunction func, int blockSize, size_t smem,
                          unsigned int flags)
{
    CU_CHECK_INIT();
    if (!numBlocks || blockSize <= 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_func_resolve(func))
        return CUDA_ERROR_INVALID_HANDLE;
    *numBlocks = cu_blocks_per_sm(current_cfg(), blockSize, smem);
    return CUDA_SUCCESS;
}

CU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                            int blockSize, size_t dynamicSMemSize)
{
    return occupancy(numBlocks, func, blockSize, dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

CU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
                                                                     CUfunction func, int blockSize,
                                                                     size_t dynamicSMemSize,
                                                                     unsigned int flags)
{
    return occupancy(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

CU_API CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
                                                        int numBlocks, int blockSize)
{
    CU_CHECK_INIT();
    if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_func_resolve(func))
        return CUDA_ERROR_INVALID_HANDLE;
    const struct sim_device_cfg *d = current_cfg();
    if (cu_blocks_per_sm(d, blockSize, 0) < numBlocks) {
        *dynamicSmemSize = 0; /* that many blocks never fit */
        return CUDA_SUCCESS;
    }
    size_t per = (size_t)d->smem_per_sm / (size_t)numBlocks;
    per = per > SMEM_RESERVED_PER_BLOCK ? per - SMEM_RESERVED_PER_BLOCK : 0;
    *dynamicSmemSize = GS_MIN(per, (size_t)d->smem_per_block_optin);
    return CUDA_SUCCESS;
}

CU_API CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                             const CUlaunchConfig *config)
{
    CU_CHECK_INIT();
    if (!numClusters || !config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_func *f = cu_func_resolve(func);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    const struct sim_device_cfg *d = current_cfg();
    if (d->cc_major < 9)
        return CUDA_ERROR_NOT_SUPPORTED; /* thread block clusters: compute capability 9.0+ */
    uint64_t size = 1;
    for (unsigned int i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            size = (uint64_t)config->attrs[i].value.clusterDim.x *
                   config->attrs[i].value.clusterDim.y * config->attrs[i].value.clusterDim.z;
    if (size == 1 && f->cluster[0])
        size = (uint64_t)f->cluster[0] * GS_MAX(f->cluster[1], 1) * GS_MAX(f->cluster[2], 1);
    if (size == 0 || size > (f->non_portable_cluster ? 16u : 8u))
        return CUDA_ERROR_INVALID_VALUE;
    int block = (int)GS_MIN((uint64_t)config->blockDimX * config->blockDimY * config->blockDimZ,
                            (uint64_t)INT32_MAX);
    int per_sm = cu_blocks_per_sm(d, block, config->sharedMemBytes);
    *numClusters = (int)((uint64_t)per_sm * (uint64_t)d->sm_count / size);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ context limits */
#define CU_DEFAULT_STACK 1024u
#define CU_DEFAULT_FIFO  1048576u
#define CU_DEFAULT_HEAP  8388608u

void cu_ctx_default_limits(struct sim_ctx *c)
{
    static const size_t defaults[] = {
        [CU_LIMIT_STACK_SIZE] = CU_DEFAULT_STACK,
        [CU_LIMIT_PRINTF_FIFO_SIZE] = CU_DEFAULT_FIFO,
        [CU_LIMIT_MALLOC_HEAP_SIZE] = CU_DEFAULT_HEAP,
        [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
        [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
        [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
        [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
        [CU_LIMIT_SHMEM_SIZE] = 0,
        [CU_LIMIT_CIG_ENABLED] = 0,
        [CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED] = 0,
    };
    static_assert(sizeof(defaults) == sizeof(c->limits), "one default per limit");
    memcpy(c->limits, defaults, sizeof(defaults));
}

/* Bytes the context's stack, printf FIFO and malloc heap limits take beyond their defaults
 * (saturating). */
static uint64_t limits_extra(const struct sim_ctx *c)
{
    const struct sim_device_cfg *d = &cu_g.cfg.dev[c->dev];
    uint64_t threads = (uint64_t)(d->sm_count > 0 ? d->sm_count : 1) *
                       (uint64_t)(d->max_threads_per_sm > 0 ? d->max_threads_per_sm : 1);
    uint64_t stack =
        c->limits[CU_LIMIT_STACK_SIZE] > CU_DEFAULT_STACK
            ? gs_sat_mul_u64(c->limits[CU_LIMIT_STACK_SIZE] - CU_DEFAULT_STACK, threads)
            : 0;
    uint64_t fifo = c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] > CU_DEFAULT_FIFO
                        ? c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] - CU_DEFAULT_FIFO
                        : 0;
    uint64_t heap = c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] > CU_DEFAULT_HEAP
                        ? c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] - CU_DEFAULT_HEAP
                        : 0;
    return gs_sat_add_u64(gs_sat_add_u64(stack, fifo), heap);
}

CU_API CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    CUresult r;
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if ((unsigned int)limit >= GS_ARRAY_SIZE(c->limits))
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    *pvalue = c->limits[limit];
    return CUDA_SUCCESS;
}

CU_API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    CUresult r;
    struct sim_ctx *c = cu_ctx_current(&r);
    if (!c)
        return r;
    if ((unsigned int)limit >= GS_ARRAY_SIZE(c->limits) || limit == CU_LIMIT_SHMEM_SIZE ||
        limit == CU_LIMIT_CIG_ENABLED || limit == CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value != 0 && value != 32 && value != 64 &&
        value != 128)
        return CUDA_ERROR_INVALID_VALUE;
    if (limit != CU_LIMIT_STACK_SIZE && limit != CU_LIMIT_PRINTF_FIFO_SIZE &&
        limit != CU_LIMIT_MALLOC_HEAP_SIZE) {
        c->limits[limit] = value;
        return CUDA_SUCCESS;
    }
    /* Device memory the driver reserves for the context (issue 34): the malloc heap, the printf
     * FIFO, and the stack of every thread the device can hold at once. What the defaults take is
     * in the context overhead (GPUSIM_CONTEXT_OVERHEAD); what is asked beyond them is charged
     * here, given back when lowered and with the context (c->charged). */
    pthread_mutex_lock(&cu_g.lock);
    uint64_t before = limits_extra(c), old = c->limits[limit];
    c->limits[limit] = value;
    uint64_t after = limits_extra(c);
    CUresult res = CUDA_SUCCESS;
    if (after > before) {
        if (sim_mem_charge(cu_g.st, c->dev, after - before) < 0) {
            c->limits[limit] = old;
            res = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            c->charged = gs_sat_add_u64(c->charged, after - before);
        }
    } else if (after < before) {
        uint64_t give = GS_MIN(before - after, c->charged);
        sim_mem_uncharge(cu_g.st, c->dev, give);
        c->charged -= give;
    }
    pthread_mutex_unlock(&cu_g.lock);
    return res;
}

/* ------------------------------------------------------------------ issue 20 */
CU_API CUresult cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule hmod,
                                  const char *name)
{
    CUdeviceptr d = 0;
    size_t b = 0;
    CUresult r = cuModuleGetGlobal_v2(&d, &b, hmod, name);
    if (r != CUDA_SUCCESS)
        return r;
    if (d > UINT32_MAX)
        return CUDA_ERROR_INVALID_VALUE; /* not addressable through the 32-bit ABI */
    if (dptr)
        *dptr = (CUdeviceptr_v1)d;
    if (bytes)
        *bytes = (unsigned int)GS_MIN(b, (size_t)UINT32_MAX);
    return CUDA_SUCCESS;
}

/* Cache / bank preferences: validated and recorded on the function; no effect on the model
 * (occupancy uses the shared memory the launch asks for). */
CU_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    CU_CHECK_INIT();
    struct sim_func *f = cu_func_resolve(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    f->cache_config = (int)config;
    return CUDA_SUCCESS;
}

CU_API CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
    CU_CHECK_INIT();
    struct sim_func *f = cu_func_resolve(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    f->smem_config = (int)config;
    return CUDA_SUCCESS;
}

CU_API CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    CU_CHECK_INIT();
    if (cu_dev_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CU_API CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    CU_CHECK_INIT();
    struct sim_func *f = cu_func_resolve(hfunc);
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *hmod = (CUmodule)f->mod;
    return CUDA_SUCCESS;
}

CU_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    CU_CHECK_INIT();
    struct sim_func *f = cu_func_resolve(hfunc);
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

CU_API CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    return cuFuncGetName(name, (CUfunction)hfunc);
}

/* The block size with the most resident threads per SM (the first, i.e. largest, on a tie),
 * and the smallest grid that fills the device at that size, the way the driver's calculator
 * answers: blocks per SM from the same occupancy model as cuOccupancyMaxActiveBlocks... */
static CUresult potential(int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize b2d,
                          size_t smem, int limit, unsigned int flags)
{
    CU_CHECK_INIT();
    if (!minGridSize || !blockSize || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_func_resolve(func))
        return CUDA_ERROR_INVALID_HANDLE;
    const struct sim_device_cfg *d = current_cfg();
    int max = limit > 0 ? GS_MIN(limit, 1024) : 1024;
    int best = 0, best_blocks = 0, best_threads = -1;
    for (int b = max >= 32 ? max - max % 32 : max; b > 0; b = b > 32 ? b - 32 : 0) {
        size_t sm = b2d ? b2d(b) : smem;
        int n = cu_blocks_per_sm(d, b, sm);
        if (n * b > best_threads) {
            best_threads = n * b;
            best = b;
            best_blocks = n;
        }
    }
    if (best_threads <= 0)
        return CUDA_ERROR_INVALID_VALUE; /* no block size fits (shared memory) */
    *blockSize = best;
    *minGridSize = best_blocks * d->sm_count;
    return CUDA_SUCCESS;
}

CU_API CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                 CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                 size_t dynamicSMemSize, int blockSizeLimit)
{
    return potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                     blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

CU_API CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
    unsigned int flags)
{
    return potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                     blockSizeLimit, flags);
}
