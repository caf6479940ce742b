/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interception plumbing, all expanded from cuda.def / nvml.def:
 *  - the real functions, resolved from libcuda.so.1 / libnvidia-ml.so.1 by handle (never from
 *    the global scope, so our own exported hooks are never found again: no recursion);
 *  - the hook table answered by cuGetProcAddress(_v2) (matched by the real function's address,
 *    which covers every versioned/per-thread variant the driver hands out) and by dlsym();
 *  - dlsym() itself, for programs that dlopen("libcuda.so.1") and look symbols up.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "vgpu/vgpu-internal.h"

struct gs_real_cuda gs_real_cu;
struct gs_real_nvml gs_real_nvml;
__attribute__((tls_model("initial-exec"))) _Thread_local int vgpu_depth;

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym;
static void *cuda_handle, *nvml_handle;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static atomic_bool cuda_ok, nvml_ok;

struct hook_entry {
    const char *name;
    void *hook;
    void **real; /* slot in gs_real_cu / gs_real_nvml */
};

static const struct hook_entry hooks[] = {
#define CU_HOOK(name) {#name, (void *)&name, (void **)&gs_real_cu.name},
#define CU_REAL(name)
#include "vgpu/cuda.def"
#undef CU_HOOK
#undef CU_REAL
#define NVML_HOOK(name) {#name, (void *)&name, (void **)&gs_real_nvml.name},
#define NVML_REAL(name)
#include "vgpu/nvml.def"
#undef NVML_HOOK
#undef NVML_REAL
};

static void resolve_dlsym(void)
{
    if (real_dlsym)
        return;
    real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym)
        real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static void load_cuda(void)
{
    resolve_dlsym();
    vgpu_log_init();
    cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda_handle || !real_dlsym) {
        VLOG(VGPU_LOG_ERROR, "cannot open libcuda.so.1: %s", dlerror());
        return;
    }
#define CU_HOOK(name) gs_real_cu.name = (GS_CU_PFN(name))real_dlsym(cuda_handle, #name);
#define CU_REAL(name) CU_HOOK(name)
#include "vgpu/cuda.def"
#undef CU_HOOK
#undef CU_REAL
    atomic_store(&cuda_ok, true);
}

static void load_nvml(void)
{
    resolve_dlsym();
    nvml_handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml_handle || !real_dlsym) {
        VLOG(VGPU_LOG_ERROR, "cannot open libnvidia-ml.so.1: %s", dlerror());
        return;
    }
#define NVML_HOOK(name) gs_real_nvml.name = (GS_NVML_PFN(name))real_dlsym(nvml_handle, #name);
#define NVML_REAL(name) NVML_HOOK(name)
#include "vgpu/nvml.def"
#undef NVML_HOOK
#undef NVML_REAL
    atomic_store(&nvml_ok, true);
}

bool vgpu_cuda_ready(void)
{
    if (GS_LIKELY(atomic_load_explicit(&cuda_ok, memory_order_acquire)))
        return true;
    pthread_once(&cuda_once, load_cuda);
    return atomic_load(&cuda_ok);
}

bool vgpu_nvml_ready(void)
{
    if (GS_LIKELY(atomic_load_explicit(&nvml_ok, memory_order_acquire)))
        return true;
    pthread_once(&nvml_once, load_nvml);
    return atomic_load(&nvml_ok);
}

void *vgpu_hook_for_real(const void *real)
{
    if (!real)
        return NULL;
    for (size_t i = 0; i < GS_ARRAY_SIZE(hooks); i++)
        if (*hooks[i].real == real)
            return hooks[i].hook;
    return NULL;
}

void *vgpu_hook_for_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < GS_ARRAY_SIZE(hooks); i++)
        if (strcmp(hooks[i].name, name) == 0)
            return hooks[i].hook;
    return NULL;
}

/* The object that contains addr (its link_map), or NULL. */
static struct link_map *object_of(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

/*
 * RTLD_NEXT is relative to the CALLER of dlsym. Forwarding would make it relative to libvgpu,
 * so emulate it: search the objects loaded after the caller, in load order, and take the first
 * definition that lives in that object itself.
 */
static void *dlsym_next(const void *caller, const char *symbol)
{
    struct link_map *me = object_of(caller);
    if (!me)
        return real_dlsym(RTLD_NEXT, symbol);
    for (struct link_map *lm = me->l_next; lm; lm = lm->l_next) {
        void *p = real_dlsym(lm, symbol);
        if (p && object_of(p) == lm)
            return p;
    }
    return NULL;
}

GS_EXPORT void *dlsym(void *handle, const char *symbol)
{
    const void *caller = __builtin_return_address(0);
    resolve_dlsym();
    if (!real_dlsym)
        return NULL;
    if (handle == RTLD_NEXT)
        return dlsym_next(caller, symbol);
    void *p = real_dlsym(handle, symbol);
    if (!p || (symbol[0] != 'c' && symbol[0] != 'n'))
        return p;
    void *hook = vgpu_hook_for_name(symbol);
    if (!hook || hook == p)
        return p;
    /* The driver libraries resolving their own symbols get the real thing. */
    struct link_map *from = object_of(caller);
    if (from && (from == object_of(p)))
        return p;
    if (symbol[0] == 'c')
        vgpu_cuda_ready();
    else
        vgpu_nvml_ready();
    return hook;
}
