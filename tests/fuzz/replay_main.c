/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Corpus replayer: links with a libFuzzer target (LLVMFuzzerTestOneInput) when the build is not a
 * libFuzzer build, runs every file of the given corpus directories through it and prints TAP.
 * A crash or sanitizer report fails the test; each input is one TAP line.
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

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ok(0, "open %s", path);
        return;
    }
    uint8_t *buf = malloc(REPLAY_MAX_INPUT);
    size_t n = buf ? fread(buf, 1, REPLAY_MAX_INPUT, f) : 0;
    fclose(f);
    if (!buf) {
        ok(0, "malloc for %s", path);
        return;
    }
    /* Copy to an exact-size buffer so ASan catches reads past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    ok(1, "replay %s (%zu bytes)", path, n);
}

int main(int argc, char **argv)
{
    tap_plan_auto();
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            ok(0, "corpus path %s exists", argv[i]);
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            ok(0, "open corpus dir %s", argv[i]);
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
                if (!nn)
                    break;
                names = nn;
            }
            names[count++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, count, sizeof(*names), cmp);
        for (size_t k = 0; k < count; k++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]);
            run_file(path);
            free(names[k]);
        }
        free(names);
    }
    return tap_done();
}
