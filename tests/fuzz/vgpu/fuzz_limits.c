/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the limits-file parser. Invariants checked on every input:
 * success implies the result re-serialises and re-parses identically; failure implies the safe
 * reading (no device left with an unlimited or loosened limit). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gs_limits l, back;
    static char text[GS_LIMITS_FILE_MAX];
    struct gs_error err;
    int r = gs_limits_parse((const char *)data, size, &l, &err);
    if (r == 0) {
        int n = gs_limits_format(&l, text, sizeof(text), &err);
        if (n < 0)
            abort();
        if (gs_limits_parse(text, (size_t)n, &back, &err) != 0)
            abort();
        if (memcmp(&l, &back, sizeof(l)) != 0)
            abort();
        return 0;
    }
    if (err.msg[0] == '\0')
        abort();
    if (l.n_devices > GS_LIMITS_MAX_DEVICES)
        abort();
    if (l.n_devices == 0 && !l.all_devices)
        abort();
    for (size_t i = 0; i < l.n_devices; i++)
        if (l.devices[i].memory_limit != GS_LIMITS_MEMORY_REFUSE ||
            l.devices[i].cores != GS_LIMITS_CORES_REFUSE)
            abort();
    return 0;
}
