/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: gpusim's device-code image parser (fatbinary, cubin, PTX -- what
 * cuModuleLoadData and cuLibraryLoadData take from the program) never reads outside the input,
 * never crashes, and either lists bounded names or reports an error message. */
#include <stdint.h>
#include <string.h>

#include "sim/sim-image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sim_image img;
    struct gs_error err = {0};
    if (sim_image_parse(data, size, &img, &err) == 0) {
        if (img.n > SIM_IMAGE_MAX_NAMES)
            __builtin_trap();
        for (size_t i = 0; i < img.n; i++) {
            size_t n = strlen(img.syms[i].name);
            if (n == 0 || n > SIM_IMAGE_NAME_MAX)
                __builtin_trap();
            if (sim_image_find(&img, img.syms[i].name, img.syms[i].kernel) == NULL)
                __builtin_trap();
        }
    } else if (err.msg[0] == '\0') {
        __builtin_trap();
    }
    sim_image_fini(&img);
    return 0;
}
