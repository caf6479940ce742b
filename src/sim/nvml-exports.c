/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML export list (nvml-exports.def) as a table of addresses: a listed function that is not
 * declared fails to compile, one that is not defined fails to link (-Wl,--no-undefined). */
#include "sim/nvml-internal.h"

#define NV(name) (const void *)&name,
__attribute__((used)) static const void *const nvml_exports[] = {
#include "sim/nvml-exports.def"
};
#undef NV
