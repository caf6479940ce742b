/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim's image parser on what nvcc makes (tests/integration/sim/images, checked in): the
 * kernels' mangled names and the globals of a fatbinary, a cubin, PTX and the fatbinary embedded
 * in a program; a fully compressed fatbinary; garbage refused. Every prefix of every image is
 * parsed from an exactly sized buffer (ASan/valgrind see any read past it) and a truncated
 * fatbinary or cubin is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim-image.h"
#include "tap.h"

static char image_dir[768]; /* the checked-in images, or argv[1] (made by nvcc at build time) */

static unsigned char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", image_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    unsigned char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void expect_kernels(const char *file, int format)
{
    size_t len;
    unsigned char *buf = slurp(file, &len);
    struct sim_image img;
    struct gs_error err = {0};
    is_int(sim_image_parse(buf, len, &img, &err), 0, "%s parses (%s)", file, err.msg);
    is_int(img.format, format, "%s: its format", file);
    ok(sim_image_find(&img, "sim_busy_1000", true) != NULL, "%s: extern \"C\" kernel", file);
    ok(sim_image_find(&img, "_Z13sim_busy_2000Pfi", true) != NULL, "%s: mangled kernel", file);
    ok(sim_image_find(&img, "_ZN2gs5scaleEPff", true) != NULL, "%s: kernel in a namespace", file);
    ok(sim_image_find(&img, "sim_busy_2000", true) == NULL, "%s: no unmangled C++ name", file);
    const struct sim_image_sym *g = sim_image_find(&img, "gs_table", false);
    ok(g && g->size == 1024, "%s: global gs_table of 1024 bytes", file);
    ok(sim_image_find(&img, "gs_table", true) == NULL, "%s: a global is no kernel", file);
    ok(!img.names_unknown, "%s: names known", file);
    sim_image_fini(&img);

    /* Every strict prefix, from an exactly sized copy. */
    int bad = 0, accepted = 0;
    for (size_t n = 0; n < len; n++) {
        unsigned char *copy = malloc(n ? n : 1);
        memcpy(copy, buf, n);
        struct gs_error e2 = {0};
        int r = sim_image_parse(copy, n, &img, &e2);
        if (r == 0)
            accepted++;
        else if (e2.msg[0] == '\0' || r != -EINVAL)
            bad++;
        sim_image_fini(&img);
        free(copy);
    }
    is_int(bad, 0, "%s: every refused prefix has a message", file);
    if (format == SIM_IMAGE_PTX)
        ok(accepted > 0, "%s: PTX prefixes past the directives still parse (%d)", file, accepted);
    else
        is_int(accepted, 0, "%s: no truncated %zu-byte image is accepted", file, len);
    free(buf);
}

int main(int argc, char **argv)
{
    tap_plan_auto();
    const char *root = getenv("GS_SOURCE_ROOT");
    if (argc > 1)
        snprintf(image_dir, sizeof(image_dir), "%s", argv[1]);
    else
        snprintf(image_dir, sizeof(image_dir), "%s/tests/integration/sim/images",
                 root ? root : ".");
    expect_kernels("kernels.fatbin", SIM_IMAGE_FATBIN);
    expect_kernels("kernels.cubin", SIM_IMAGE_CUBIN);
    expect_kernels("kernels.ptx", SIM_IMAGE_PTX);

    size_t len;
    unsigned char *buf = slurp("kernels_compressed.fatbin", &len);
    struct sim_image img;
    struct gs_error err = {0};
    is_int(sim_image_parse(buf, len, &img, &err), 0, "compressed fatbin parses");
    ok(img.names_unknown && img.n == 0, "its names are unknown (no decompressor)");
    sim_image_fini(&img);
    free(buf);

    buf = slurp("kernels_embedded.fatbin", &len);
    is_int(sim_image_parse(buf, len, &img, &err), 0, "the fatbin embedded in a program parses");
    ok(sim_image_find(&img, "sim_busy_1000", true) != NULL, "and names its kernel");
    sim_image_fini(&img);
    free(buf);

    static const struct {
        const char *what;
        const char *data;
        size_t len;
    } garbage[] = {
        {"empty", "", 0},
        {"a word", "gpusim", 6},
        {"text without .version/.target", ".entry foo(\n", 12},
        {"binary", "\x01\x02\x03\x04\x05", 5},
        {"ELF header only",
         "\x7f"
         "ELF\x02\x01\x01",
         7},
        {"fatbin header only", "\x50\xed\x55\xba\x01\x00\x10\x00", 8},
        {"fatbin claiming 8 EiB",
         "\x50\xed\x55\xba\x01\x00\x10\x00\xff\xff\xff\xff\xff\xff\xff\x7f", 16},
        {"fatbin wrapper in a sized buffer", "\xb1\x43\x62\x46\x01\x00\x00\x00", 8},
    };
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        struct gs_error e = {0};
        is_int(sim_image_parse(garbage[i].data, garbage[i].len, &img, &e), -EINVAL,
               "%s is refused: %s", garbage[i].what, e.msg);
        sim_image_fini(&img);
    }
    /* A host ELF (this test program's own format) is not a cubin. */
    const char host_elf[64] = "\x7f"
                              "ELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                              "\x03\x00\x3e\x00";
    is_int(sim_image_parse(host_elf, sizeof(host_elf), &img, &err), -EINVAL,
           "an x86-64 ELF is refused: %s", err.msg);
    sim_image_fini(&img);
    return tap_done();
}
