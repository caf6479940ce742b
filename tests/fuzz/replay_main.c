/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Corpus replayer: links with a libFuzzer target (LLVMFuzzerTestOneInput) when the build is not a
 * libFuzzer build, runs every file of the given corpus directories through it and prints TAP.
 *
 * One TAP line per target, not per input: returning from LLVMFuzzerTestOneInput proves nothing by
 * itself, so an input is not a test. Each input is named in a `#` line before it runs (a crash log
 * ends with the input that crashed); a crash or a sanitizer report ends the process without the
 * closing `ok` (UBSAN_OPTIONS=halt_on_error=1, ASan aborts), and the runner counts the test as
 * failed. A corpus that cannot be read, or holds no input, fails the one line.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (1u << 20)

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static unsigned replayed, errors;

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag("cannot open %s", path);
        errors++;
        return;
    }
    uint8_t *buf = malloc(REPLAY_MAX_INPUT);
    size_t n = buf ? fread(buf, 1, REPLAY_MAX_INPUT, f) : 0;
    fclose(f);
    if (!buf) {
        diag("out of memory reading %s", path);
        errors++;
        return;
    }
    /* Copy to an exact-size buffer so ASan catches reads past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        diag("out of memory for %s", path);
        errors++;
        return;
    }
    memcpy(exact, buf, n);
    free(buf);
    diag("replay %s (%zu bytes)", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    replayed++;
}

int main(int argc, char **argv)
{
    tap_plan_auto();
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            diag("corpus path %s does not exist", argv[i]);
            errors++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            diag("cannot open corpus dir %s", argv[i]);
            errors++;
            continue;
        }
        char **names = NULL;
        size_t count = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (count == cap) {
                cap = cap ? cap * 2 : 64;
                char **nn = realloc(names, cap * sizeof(*names));
                if (!nn) {
                    errors++;
                    break;
                }
                names = nn;
            }
            if (!(names[count] = strdup(e->d_name))) {
                errors++;
                break;
            }
            count++;
        }
        closedir(d);
        if (count) /* qsort's array may not be NULL, even for no element (UBSan) */
            qsort(names, count, sizeof(*names), cmp);
        for (size_t k = 0; k < count; k++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]);
            run_file(path);
            free(names[k]);
        }
        free(names);
    }
    ok(errors == 0 && replayed > 0,
       "%s: replayed %u corpus inputs, %u unreadable, no crash or "
       "sanitizer report",
       argc > 0 ? argv[0] : "replay", replayed, errors);
    return tap_done();
}
