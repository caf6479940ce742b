/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's synthetic addresses: after 16 TiB of allocations a device's address region wraps
 * around; a start address still in use is never handed out again. */
#include <stdint.h>

#include "simtest.h"
#include "tap.h"

int main(void)
{
    tap_plan_auto();
    simtest_state();
    setenv("GPUSIM_PRESET", "t4", 1);
    unsetenv("GPUSIM_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    simtest_load_cuda();
    CUcontext ctx;
    p_cuInit(0);
    p_cuCtxCreate_v2(&ctx, 0, 0);
    CUdeviceptr keep;
    is_int(p_cuMemAlloc_v2(&keep, 4096), CUDA_SUCCESS, "a long-lived allocation first");
    /* 1300 x 14 GiB = 17.8 TiB of address space: more than one region. */
    int fails = 0, reused = 0;
    for (int i = 0; i < 1300; i++) {
        CUdeviceptr p;
        if (p_cuMemAlloc_v2(&p, 14 * GiB) != CUDA_SUCCESS) {
            fails++;
            continue;
        }
        reused += p == keep;
        fails += p_cuMemFree_v2(p) != CUDA_SUCCESS;
    }
    is_int(fails, 0, "1300 allocations of 14 GiB (across the wrap) all succeed");
    is_int(reused, 0, "none got the live allocation's address");
    is_int(p_cuMemFree_v2(keep), CUDA_SUCCESS, "the long-lived allocation is still ours to free");
    is_int(p_cuMemFree_v2(keep), CUDA_ERROR_INVALID_VALUE, "once");
    size_t fr, tot;
    p_cuMemGetInfo_v2(&fr, &tot);
    is_uint(tot - fr, 0, "nothing left");
    p_cuCtxDestroy_v2(ctx);
    simtest_cleanup();
    return tap_done();
}
