/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: HAMi-DRA's device config file (`--device-config-file`, issue 23) and a
 * manifest translated with the names and vendor table it gives. The input is the file, then
 * optionally a line "---8<---" and the manifest. Invariants: never a crash or sanitizer report;
 * a file that is refused says why (a message); a file that is accepted gives a table within its
 * bounds, each name terminated; and every JSON Patch the translation then produces applies to
 * the manifest it was made for (wh_preview_text returns -EPROTO otherwise: abort).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "webhook/options.h"
#include "webhook/preview.h"
#include "webhook/shape.h"
#include "webhook/vendor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond)
        abort();
}

static bool terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

static void check_table(const struct wh_vendors *t)
{
    check(t->n <= WH_VENDORS_MAX);
    for (size_t i = 0; i < t->n; i++) {
        const struct wh_vendor *v = &t->v[i];
        check(terminated(v->vendor, sizeof(v->vendor)) && v->vendor[0]);
        check(terminated(v->count, sizeof(v->count)) && v->count[0]);
        check(terminated(v->mem, sizeof(v->mem)) && terminated(v->cores, sizeof(v->cores)));
        check(terminated(v->device_class, sizeof(v->device_class)));
        check(terminated(v->driver, sizeof(v->driver)));
        check(v->reference_cu >= 0);
        check(wh_vendors_has_name(t, v->count));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct wh_options opts;
    static char path[64];
    static FILE *sink;
    static const int64_t sizes[] = {15LL << 30, 80LL << 30};
    static const char cut[] = "\n---8<---\n";
    if (size > 256 * 1024)
        return 0;
    if (!sink) {
        char *argv[] = {(char *)"fuzz_webhook_devconfig", NULL};
        int first = 0;
        struct gs_error err = {0};
        int fd = memfd_create("device-config", MFD_CLOEXEC);
        sink = fopen("/dev/null", "w");
        check(fd >= 0 && sink != NULL && wh_options_parse(&opts, 1, argv, sink, &first, &err) == 0);
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        opts.device_config_file = path;
    }
    const char *text = (const char *)data, *manifest = NULL;
    size_t conf_len = size, man_len = 0;
    const char *at = memmem(text, size, cut, sizeof(cut) - 1);
    if (at) {
        conf_len = (size_t)(at - text);
        manifest = at + sizeof(cut) - 1;
        man_len = size - conf_len - (sizeof(cut) - 1);
    }
    /* the file, as the webhook reads it */
    int fd = atoi(path + strlen("/proc/self/fd/"));
    check(ftruncate(fd, 0) == 0 && pwrite(fd, text, conf_len, 0) == (ssize_t)conf_len);

    struct wh_names names;
    struct wh_vendors vendors;
    struct gs_error err = {0};
    int r = wh_options_names(&opts, &names, &vendors, &err);
    if (r < 0) {
        check(err.msg[0] != '\0');
        return 0;
    }
    check_table(&vendors);
    if (!manifest)
        return 0;
    struct wh_preview_config cfg = {
        .names = &names, .sizes = sizes, .n_sizes = 2, .default_namespace = "default"};
    r = wh_preview_text(&cfg, "input", manifest, man_len, sink, sink, &err);
    check(r != -EPROTO);
    return 0;
}
