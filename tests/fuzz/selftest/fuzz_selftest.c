/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fuzz target that misbehaves on purpose, for test_replay.py: the corpus replayer must report a
 * target as one test and fail it on a crash or a sanitizer report. Inputs starting "crash" abort;
 * inputs starting "overflow" read one byte past the input (an ASan report in the sanitizer build);
 * anything else is harmless.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 5 && memcmp(data, "crash", 5) == 0)
        abort();
    if (size >= 8 && memcmp(data, "overflow", 8) == 0)
        sink =
            data[size]; /* NOLINT(clang-analyzer-security.ArrayBound): the bug this target plants */
    return 0;
}
