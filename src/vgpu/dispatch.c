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

/* dlsym() is called by sanitizer runtimes while they initialise (before their shadow memory
 * exists), so the code on that path must not be instrumented. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

struct gs_real_cuda gs_real_cu;
struct gs_real_nvml gs_real_nvml;
__attribute__((tls_model("initial-exec"))) _Thread_local int vgpu_depth;

typedef void *(*dlsym_fn)(void *, const char *);
dlsym_fn real_dlsym; /* read by the dlsym stub below */
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

NO_SANITIZE static void resolve_dlsym(void)
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
    vgpu_depth++; /* the driver's constructors calling its own entry points: forward only */
    cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    vgpu_depth--;
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
    vgpu_depth++;
    nvml_handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    vgpu_depth--;
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

/*
 * cuGetProcAddress asks by base name and CUDA version; the ABI behind some base names changed
 * with the version (cuMemAlloc is the 32-bit v1 entry point before 3.2, cuMemAlloc_v2 after).
 * When the driver's answer is not one of our real functions (matched by address first), the
 * hook is chosen by name AND version from this table, so a v1-ABI hook is never handed out for
 * a _v2 request or the other way round.
 */
static const struct versioned_name {
    const char *base;
    int since; /* CUDA version from which `name` is the answer */
    const char *name;
} versioned[] = {
    {"cuMemAlloc", 3020, "cuMemAlloc_v2"},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2"},
    {"cuMemFree", 3020, "cuMemFree_v2"},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2"},
    {"cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags"},
    {"cuGraphInstantiate", 11000, "cuGraphInstantiate_v2"},
    /* contexts and arrays: never the pre-3.2/4.0 hook for a newer request (cuda.h's
     * `#define cuCtxCreate cuCtxCreate_v4` etc.; versions as the driver's own table) */
    {"cuCtxCreate", 12050, "cuCtxCreate_v4"},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3"},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2"},
    {"cuCtxDestroy", 4000, "cuCtxDestroy_v2"},
    {"cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2"},
    {"cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2"},
    {"cuArrayCreate", 3020, "cuArrayCreate_v2"},
    {"cuArray3DCreate", 3020, "cuArray3DCreate_v2"},
    {"cuGLCtxCreate", 3020, "cuGLCtxCreate_v2"},
    {"cuVDPAUCtxCreate", 3020, "cuVDPAUCtxCreate_v2"},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2"},
    {"cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2"},
};

void *vgpu_hook_for_proc(const char *symbol, int cuda_version)
{
    if (!symbol)
        return NULL;
    for (size_t i = 0; i < GS_ARRAY_SIZE(versioned); i++)
        if (cuda_version >= versioned[i].since && strcmp(symbol, versioned[i].base) == 0)
            return vgpu_hook_for_name(versioned[i].name);
    return vgpu_hook_for_name(symbol);
}

void *vgpu_hook_for_answer(const char *symbol, int cuda_version, const void *real)
{
    if (!real)
        return NULL;
    void *by_name = vgpu_hook_for_proc(symbol, cuda_version);
    if (by_name)
        for (size_t i = 0; i < GS_ARRAY_SIZE(hooks); i++)
            if (hooks[i].hook == by_name && *hooks[i].real == real)
                return by_name;
    void *by_real = vgpu_hook_for_real(real);
    return by_real ? by_real : by_name;
}

/* Byte compare without libc: dlsym() may run before a sanitizer runtime finished initialising. */
NO_SANITIZE static bool same_name(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

NO_SANITIZE static void *hook_named(const char *name)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(hooks); i++)
        if (same_name(hooks[i].name, name))
            return hooks[i].hook;
    return NULL;
}

/* The object that contains addr (its link_map), or NULL. */
NO_SANITIZE static struct link_map *object_of(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

/*
 * dlsym(handle, symbol) with the caller's return address: hooked names looked up in the driver
 * libraries answer our hooks, except for the driver libraries themselves.
 */
NO_SANITIZE void *vgpu_dlsym(void *handle, const char *symbol, const void *caller);
NO_SANITIZE void *vgpu_dlsym(void *handle, const char *symbol, const void *caller)
{
    if (!real_dlsym)
        resolve_dlsym();
    if (!real_dlsym)
        return NULL;
    void *p = real_dlsym(handle, symbol);
    if (!p || !symbol || (symbol[0] != 'c' && symbol[0] != 'n'))
        return p;
    void *hook = hook_named(symbol);
    if (!hook || hook == p)
        return p;
    struct link_map *from = object_of(caller);
    if (from && from == object_of(p))
        return p;
    if (symbol[0] == 'c')
        vgpu_cuda_ready();
    else
        vgpu_nvml_ready();
    return hook;
}

/* Called from the assembly stub below by name: `used` keeps them (and their names) under
 * link-time optimisation. */
NO_SANITIZE void vgpu_resolve_dlsym(void);
NO_SANITIZE __attribute__((used, noinline)) void vgpu_resolve_dlsym(void)
{
    resolve_dlsym();
}

NO_SANITIZE void *vgpu_dlsym_c(void *handle, const char *symbol);
NO_SANITIZE __attribute__((used, noinline)) void *vgpu_dlsym_c(void *handle, const char *symbol)
{
    return vgpu_dlsym(handle, symbol, __builtin_return_address(0));
}

#if defined(__x86_64__)
/*
 * The exported dlsym is a stub that only JUMPS: RTLD_NEXT is relative to the caller's object,
 * which glibc finds from the return address, so RTLD_NEXT goes straight to the real dlsym with
 * the caller's return address intact (sanitizer runtimes and other preloads rely on it); any
 * other handle tail-jumps to vgpu_dlsym_c, which sees the caller's return address too.
 */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $0, real_dlsym(%rip)\n"
        "    jne 1f\n"
        "    push %rdi\n"
        "    push %rsi\n"
        "    sub $8, %rsp\n"
        "    call vgpu_resolve_dlsym\n"
        "    add $8, %rsp\n"
        "    pop %rsi\n"
        "    pop %rdi\n"
        "1:  cmpq $-1, %rdi\n"
        "    jne vgpu_dlsym_c\n"
        "    jmp *real_dlsym(%rip)\n"
        ".size dlsym, .-dlsym\n");
#else
/* Other architectures: RTLD_NEXT is answered relative to libvgpu (documented limitation). */
GS_EXPORT NO_SANITIZE void *dlsym(void *handle, const char *symbol)
{
    return vgpu_dlsym(handle, symbol, __builtin_return_address(0));
}
#endif
