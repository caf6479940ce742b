/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim libcuda: cuGetProcAddress over the export table (cuda-api.def, expanded in cuda-table.c).
 */
#include <string.h>

#include "sim/cuda-internal.h"
#include "sim/cuda-table.h"

/*
 * Entry points gpusim does not model answer what the driver answers without the feature (the
 * category of their row in cuda-api.def); before cuInit every entry point answers
 * CUDA_ERROR_NOT_INITIALIZED. One function per category, exported under each row's name by an
 * assembler alias (their signatures differ, but none of them reads an argument).
 */
static CUresult stub(CUresult e)
{
    return __atomic_load_n(&cu_g.init_state, __ATOMIC_ACQUIRE) > 0 ? e : CUDA_ERROR_NOT_INITIALIZED;
}
__attribute__((used)) CUresult gs_cu_stub_ns(void);
__attribute__((used)) CUresult gs_cu_stub_gfx(void);
__attribute__((used)) CUresult gs_cu_stub_res(void);
CUresult gs_cu_stub_ns(void)
{
    return stub(CUDA_ERROR_NOT_SUPPORTED);
}
CUresult gs_cu_stub_gfx(void)
{
    return stub(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
}
CUresult gs_cu_stub_res(void)
{
    return stub(CUDA_ERROR_INVALID_HANDLE);
}

#define STUB_ALIAS(sym, target)                                                                    \
    __asm__(".globl " #sym "\n\t.type " #sym ", @function\n\t.set " #sym ", " #target "\n");
#define STUB_M(sym)
#define STUB_NS(sym)                 STUB_ALIAS(sym, gs_cu_stub_ns)
#define STUB_GFX(sym)                STUB_ALIAS(sym, gs_cu_stub_gfx)
#define STUB_RES(sym)                STUB_ALIAS(sym, gs_cu_stub_res)
#define X(sym, base, ver, ptsz, cat) STUB_##cat(sym)
#define XH(sym, base, ver, ptsz, cat)
#include "sim/cuda-api.def"
#undef XH
#undef X

static CUresult resolve(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || cudaVersion < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct cu_export *best = NULL, *best_ptsz = NULL;
    bool known = false;
    for (size_t i = 0; i < cu_nexports; i++) {
        const struct cu_export *e = &cu_exports[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        known = true;
        if (e->version > cudaVersion)
            continue;
        const struct cu_export **slot = e->ptsz ? &best_ptsz : &best;
        if (!*slot || e->version > (*slot)->version)
            *slot = e;
    }
    if (want_ptsz && best_ptsz)
        best = best_ptsz;
    if (!best && !known) {
        /* Not a base name: an exact exported symbol (e.g. "cuMemAlloc_v2") is accepted. */
        for (size_t i = 0; i < cu_nexports; i++) {
            if (strcmp(cu_exports[i].symbol, symbol) == 0 && cu_exports[i].version <= cudaVersion) {
                best = &cu_exports[i];
                break;
            }
        }
    }
    if (!best) {
        *pfn = NULL;
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = best->fn;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CU_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return resolve(symbol, pfn, cudaVersion, flags, NULL);
}

CU_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    return resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/*
 * The driver's private tables (the CUDA runtime asks for several, one an integrity check) are
 * NVIDIA's undocumented interfaces: gpusim does not imitate them. Every table id is unknown.
 */
CU_API CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    return CUDA_ERROR_NOT_FOUND;
}
