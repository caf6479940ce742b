/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device code images as the driver takes them (cuModuleLoadData, cuLibraryLoadData and the file
 * variants): a fatbinary (nvcc -fatbin, or the .nv_fatbin section embedded in a program), a
 * cubin (ELF, e_machine EM_CUDA) or PTX text. gpusim runs no device code: it only needs the
 * kernels' (mangled) names and the globals' names and sizes, and refuses what is not an image
 * with CUDA_ERROR_INVALID_IMAGE like the driver.
 *
 * The input is untrusted: every offset and size is checked against the image's extent, which is
 * the caller's length when known (files, fuzzing) and otherwise what the image's own header
 * declares, capped at SIM_IMAGE_MAX (the driver, too, trusts a pointer image's header).
 */
#ifndef GS_SIM_SIM_IMAGE_H
#define GS_SIM_SIM_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define SIM_IMAGE_MAX       (1ull << 30) /* largest image accepted */
#define SIM_IMAGE_NAME_MAX  255          /* longest kernel/global name kept */
#define SIM_IMAGE_MAX_NAMES 65536        /* kernels + globals per image */

enum sim_image_format {
    SIM_IMAGE_FATBIN = 1,
    SIM_IMAGE_CUBIN,
    SIM_IMAGE_PTX,
};

struct sim_image_sym {
    char *name;
    uint64_t size; /* globals: bytes (0 if unknown) */
    bool kernel;
};

struct sim_image {
    int format; /* enum sim_image_format */
    size_t n, cap;
    struct sim_image_sym *syms;
    /* A fatbinary whose every entry is compressed: gpusim cannot read the names (no
     * decompressor), so any kernel name is accepted. */
    bool names_unknown;
};

/*
 * Parse an image of at most `len` bytes (SIZE_MAX: unknown, read the extent from the header).
 * 0, or -EINVAL with err naming what is wrong (not an image, truncated, a bad offset), or
 * -ENOMEM. *img is filled on success; sim_image_fini() it (also after a failure).
 */
int sim_image_parse(const void *data, size_t len, struct sim_image *img, struct gs_error *err);
void sim_image_fini(struct sim_image *img);

/* The symbol called name (a kernel if kernel, else a global), or NULL. */
const struct sim_image_sym *sim_image_find(const struct sim_image *img, const char *name,
                                           bool kernel);

#endif /* GS_SIM_SIM_IMAGE_H */
