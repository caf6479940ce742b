/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim libcuda: the export table (cuda-table.c, expanded from cuda-api.def). */
#ifndef GS_SIM_CUDA_TABLE_H
#define GS_SIM_CUDA_TABLE_H

#include <stddef.h>

struct cu_export {
    const char *symbol; /* exported name (XH rows: the base name) */
    const char *base;   /* the name cuGetProcAddress is asked for */
    void *fn;
    int version; /* CUDA version from which `base` resolves to `symbol` */
    int ptsz;    /* 1: the per-thread-default-stream variant */
    const char *category;
};

extern const struct cu_export cu_exports[];
extern const size_t cu_nexports;

#endif /* GS_SIM_CUDA_TABLE_H */
