/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim libcuda: cuGetProcAddress over the export table (cuda-exports.def). */
#include <string.h>

#include "sim/cuda-internal.h"

struct export
{
    const char *symbol;
    const char *base;
    void *fn;
    int version;
    int ptsz;
};

static const struct export exports[] = {
#define X(sym, base, ver, ptsz)  {#sym, base, (void *)(sym), ver, ptsz},
#define XH(sym, base, ver, ptsz) {base, base, (void *)(sym), ver, ptsz},
#include "sim/cuda-exports.def"
#undef XH
#undef X
};

static CUresult resolve(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || cudaVersion < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct export *best = NULL, *best_ptsz = NULL;
    bool known = false;
    for (size_t i = 0; i < GS_ARRAY_SIZE(exports); i++) {
        const struct export *e = &exports[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        known = true;
        if (e->version > cudaVersion)
            continue;
        const struct export **slot = e->ptsz ? &best_ptsz : &best;
        if (!*slot || e->version > (*slot)->version)
            *slot = e;
    }
    if (want_ptsz && best_ptsz)
        best = best_ptsz;
    if (!best && !known) {
        /* Not a base name: an exact exported symbol (e.g. "cuMemAlloc_v2") is accepted. */
        for (size_t i = 0; i < GS_ARRAY_SIZE(exports); i++) {
            if (strcmp(exports[i].symbol, symbol) == 0 && exports[i].version <= cudaVersion) {
                best = &exports[i];
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
