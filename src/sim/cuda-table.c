/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: the export table expanded from cuda-api.def (symbol, base name, version,
 * per-thread-stream variant). Kept in a translation unit of its own, with no CUDA prototypes in
 * scope: every entry point is named here only by its address, whatever its signature.
 */
#include <stddef.h>

#include "sim/cuda-table.h"

/* NOLINTBEGIN(readability-redundant-declaration): the table names each export once more */
#define X(sym, base, ver, ptsz, cat)  extern void sym(void);
#define XH(sym, base, ver, ptsz, cat) extern void sym(void);
#include "sim/cuda-api.def"
#undef XH
#undef X
/* NOLINTEND(readability-redundant-declaration): end of the table */

const struct cu_export cu_exports[] = {
#define X(sym, base, ver, ptsz, cat)  {#sym, base, (void *)(sym), ver, ptsz, #cat},
#define XH(sym, base, ver, ptsz, cat) {base, base, (void *)(sym), ver, ptsz, #cat},
#include "sim/cuda-api.def"
#undef XH
#undef X
};

const size_t cu_nexports = sizeof(cu_exports) / sizeof(cu_exports[0]);
