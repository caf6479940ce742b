/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interception plumbing (dispatch.c), with the whole of libvgpu compiled in and no driver: every
 * hook listed in cuda.def is answered by name and by its real function's address, and the
 * cuGetProcAddress name fallback picks the hook by name AND CUDA version, so a v1-ABI hook is
 * never handed out for a _v2 request (cuMemAlloc at 12.x is cuMemAlloc_v2) or the other way.
 */
#include <stdint.h>

#include "tap.h"
#include "vgpu/vgpu-internal.h"

int main(void)
{
    tap_plan_auto();
    int by_name = 0, by_real = 0, hooks = 0;
    uintptr_t fake = 0x1000;
    /* every hook: its own name answers it; a distinct "real" address answers it */
#define CU_HOOK(name)                                                                              \
    hooks++;                                                                                       \
    by_name += vgpu_hook_for_name(#name) == (void *)&name;                                         \
    gs_real_cu.name = (GS_CU_PFN(name))(fake += 16);                                               \
    by_real += vgpu_hook_for_real((const void *)fake) == (void *)&name;
#define CU_REAL(name)
#include "vgpu/cuda.def"
#undef CU_HOOK
#undef CU_REAL
    ok(hooks > 60, "cuda.def lists the hooks (%d)", hooks);
    is_int(by_name, hooks, "every hook is found by its name");
    is_int(by_real, hooks, "every hook is found by its real function's address");
    ok(vgpu_hook_for_real(NULL) == NULL, "a NULL real function has no hook");
    ok(vgpu_hook_for_real((void *)0x42) == NULL, "an unknown address has no hook");
    ok(vgpu_hook_for_name("cuNotAFunction") == NULL && vgpu_hook_for_name(NULL) == NULL,
       "unknown and NULL names have no hook");

    /* cuGetProcAddress asks by base name and version */
    ok(vgpu_hook_for_proc("cuMemAlloc", 12000) == (void *)&cuMemAlloc_v2,
       "cuMemAlloc at 12.0: the _v2 hook");
    ok(vgpu_hook_for_proc("cuMemAlloc", 3020) == (void *)&cuMemAlloc_v2,
       "cuMemAlloc at 3.2: the _v2 hook");
    ok(vgpu_hook_for_proc("cuMemAlloc", 3010) == (void *)&cuMemAlloc,
       "cuMemAlloc at 3.1: the v1 hook (32-bit ABI)");
    ok(vgpu_hook_for_proc("cuMemFree", 13000) == (void *)&cuMemFree_v2 &&
           vgpu_hook_for_proc("cuMemAllocPitch", 12080) == (void *)&cuMemAllocPitch_v2 &&
           vgpu_hook_for_proc("cuMemGetInfo", 12080) == (void *)&cuMemGetInfo_v2,
       "cuMemFree/cuMemAllocPitch/cuMemGetInfo at 12.x+: the _v2 hooks");
    ok(vgpu_hook_for_proc("cuGraphInstantiate", 12000) == (void *)&cuGraphInstantiateWithFlags,
       "cuGraphInstantiate at 12.0: the WithFlags hook (its ABI)");
    ok(vgpu_hook_for_proc("cuGraphInstantiate", 11000) == (void *)&cuGraphInstantiate_v2,
       "cuGraphInstantiate at 11.0: the _v2 hook");
    ok(vgpu_hook_for_proc("cuGraphInstantiate", 10000) == (void *)&cuGraphInstantiate,
       "cuGraphInstantiate at 10.0: the original");
    ok(vgpu_hook_for_proc("cuLaunchKernel", 12080) == (void *)&cuLaunchKernel,
       "an unversioned name: its hook");
    ok(vgpu_hook_for_proc("cuMemcpy", 12080) == NULL, "a function not hooked: none");
    ok(vgpu_hook_for_proc(NULL, 12080) == NULL, "NULL: none");

    /* the old context and array names (issue 31) are never handed out for a newer request */
    ok(vgpu_hook_for_proc("cuCtxCreate", 13000) == (void *)&cuCtxCreate_v4 &&
           vgpu_hook_for_proc("cuCtxCreate", 11040) == (void *)&cuCtxCreate_v3 &&
           vgpu_hook_for_proc("cuCtxCreate", 3020) == (void *)&cuCtxCreate_v2 &&
           vgpu_hook_for_proc("cuCtxCreate", 3000) == (void *)&cuCtxCreate,
       "cuCtxCreate: _v4 from 12.5, _v3 from 11.4, _v2 from 3.2, the original before");
    ok(vgpu_hook_for_proc("cuCtxDestroy", 4000) == (void *)&cuCtxDestroy_v2 &&
           vgpu_hook_for_proc("cuCtxDestroy", 3020) == (void *)&cuCtxDestroy &&
           vgpu_hook_for_proc("cuCtxPopCurrent", 12000) == (void *)&cuCtxPopCurrent_v2 &&
           vgpu_hook_for_proc("cuCtxPushCurrent", 3000) == (void *)&cuCtxPushCurrent,
       "cuCtxDestroy/push/pop: _v2 from 4.0, the originals before");
    ok(vgpu_hook_for_proc("cuArrayCreate", 12000) == (void *)&cuArrayCreate_v2 &&
           vgpu_hook_for_proc("cuArray3DCreate", 3000) == (void *)&cuArray3DCreate,
       "arrays: _v2 from 3.2, the 32-bit originals before");

    /* a driver that aliases several entry points to one address (gpusim's graphics stubs): the
     * answer's hook is the one of the name and version asked, when its real is the answer */
    gs_real_cu.cuGLCtxCreate = (GS_CU_PFN(cuGLCtxCreate))(fake + 16);
    gs_real_cu.cuGLCtxCreate_v2 = (GS_CU_PFN(cuGLCtxCreate_v2))(fake + 16);
    ok(vgpu_hook_for_answer("cuGLCtxCreate", 3020, (void *)(fake + 16)) ==
               (void *)&cuGLCtxCreate_v2 &&
           vgpu_hook_for_answer("cuGLCtxCreate", 2000, (void *)(fake + 16)) ==
               (void *)&cuGLCtxCreate,
       "one address for two entry points: the hook of the version asked");
    ok(vgpu_hook_for_answer("cuMemAllocAsync", 12000,
                            (const void *)gs_real_cu.cuMemAllocAsync_ptsz) ==
           (void *)&cuMemAllocAsync_ptsz,
       "the per-thread variant answered for a base name: its hook, by address");
    ok(vgpu_hook_for_answer("cuMemAlloc", 12000, NULL) == NULL, "no answer: no hook");
    return tap_done();
}
