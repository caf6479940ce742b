/* SPDX-License-Identifier: Apache-2.0 */
/* The limits-file contract: round trip, exact error messages, the safe reading of broken files. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/limits.h"
#include "tap.h"

#define UUID0 "GPU-0b9f2c3e-1111-2222-3333-000000000000"
#define UUID1 "GPU-0b9f2c3e-1111-2222-3333-000000000001"

static int parse_str(const char *s, struct gs_limits *l, struct gs_error *err)
{
    return gs_limits_parse(s, strlen(s), l, err);
}

static void test_parse_good(void)
{
    struct gs_limits l;
    struct gs_error err;
    const char *text = "# gpuslice limits v1\n"
                       "version 1\n"
                       "claim 3f0c2a7e-0d4b\n"
                       "region /var/run/gpuslice/claims/3f0c2a7e-0d4b/region\n"
                       "\n"
                       "device " UUID0 " memory=4294967296 cores=30\n"
                       "device\t" UUID1 "  cores=0   memory=0  \r\n";
    is_int(parse_str(text, &l, &err), 0, "well-formed file parses");
    is_str(l.claim, "3f0c2a7e-0d4b", "claim read");
    is_str(l.region_path, "/var/run/gpuslice/claims/3f0c2a7e-0d4b/region", "region read");
    is_uint(l.n_devices, 2, "two devices");
    is_str(l.devices[0].uuid, UUID0, "device 0 uuid");
    is_uint(l.devices[0].memory_limit, 4294967296ULL, "device 0 memory 4 GiB");
    is_uint(l.devices[0].cores, 30, "device 0 cores 30");
    is_uint(l.devices[1].memory_limit, 0, "device 1 memory uncapped");
    is_uint(l.devices[1].cores, 0, "device 1 cores uncapped");
    ok(!l.all_devices, "not a safe reading");
    ok(gs_limits_find(&l, UUID1) == &l.devices[1], "find by uuid");
    ok(gs_limits_find(&l, "GPU-nope") == NULL, "unknown uuid not found");
}

struct bad_case {
    const char *text;
    const char *msg;
    int all_devices;
};

static void test_parse_bad(void)
{
    static const struct bad_case cases[] = {
        {"version 1\nclaim c\ndevice " UUID0 " memory=12x cores=30\n",
         "line 3: device " UUID0 ": memory=\"12x\" is not a byte count", 0},
        {"version 1\nclaim c\ndevice " UUID0 " memory=1 cores=101\n",
         "line 3: device " UUID0 ": cores=\"101\" is not a percentage (0..100)", 0},
        {"version 1\nclaim c\ndevice " UUID0 " memory=99999999999999999999 cores=1\n",
         "line 3: device " UUID0 ": memory=\"99999999999999999999\" is not a byte count", 0},
        {"version 1\nclaim c\ndevice " UUID0 " cores=10\n",
         "line 3: device " UUID0 ": memory= is missing", 0},
        {"version 1\nclaim c\ndevice " UUID0 " memory=1 cores=10 color=red\n",
         "line 3: device " UUID0 ": unknown or repeated key \"color\"", 0},
        {"version 2\nclaim c\ndevice " UUID0 " memory=1 cores=10\n",
         "line 1: version: 2 is not supported (this reader knows 1)", 0},
        {"claim c\nversion 1\ndevice " UUID0 " memory=1 cores=10\n",
         "line 1: \"claim\" before the version line", 0},
        {"version 1\ndevice " UUID0 " memory=1 cores=10\n", "claim: line missing", 0},
        {"version 1\nclaim c\ndevice\n", "line 3: device: missing UUID", 1},
        {"version 1\nclaim c\nlimit everything\n", "line 3: unknown directive \"limit\"", 1},
        {"version 1\nclaim c\nregion relative/path\n",
         "line 3: region: \"relative/path\" is not an absolute path under 4096 bytes", 1},
        {"version 1\nclaim c\ndevice " UUID0 " memory=1 cores=1\ndevice " UUID0
         " memory=2 cores=2\n",
         "line 4: device " UUID0 ": listed twice", 0},
        {"", "version: line missing (not a gpuslice limits file)", 1},
    };
    for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++) {
        struct gs_limits l;
        struct gs_error err;
        int r = parse_str(cases[i].text, &l, &err);
        ok(r < 0, "bad case %zu rejected", i);
        is_str(err.msg, cases[i].msg, "bad case %zu message", i);
        is_int(l.all_devices, cases[i].all_devices, "bad case %zu all_devices", i);
        int safe = 1;
        for (size_t d = 0; d < l.n_devices; d++)
            if (l.devices[d].memory_limit != GS_LIMITS_MEMORY_REFUSE ||
                l.devices[d].cores != GS_LIMITS_CORES_REFUSE)
                safe = 0;
        ok(safe && (l.n_devices > 0 || l.all_devices),
           "bad case %zu: safe reading (refuse memory on listed devices, never unlimited)", i);
    }
}

static void test_limits_on_size(void)
{
    struct gs_limits l;
    struct gs_error err;
    char *big = malloc(GS_LIMITS_LINE_MAX + 64);
    strcpy(big, "version 1\nclaim c\nregion /");
    size_t n = strlen(big);
    memset(big + n, 'a', GS_LIMITS_LINE_MAX);
    big[n + GS_LIMITS_LINE_MAX] = '\n';
    int r = gs_limits_parse(big, n + GS_LIMITS_LINE_MAX + 1, &l, &err);
    is_int(r, -E2BIG, "over-long line rejected");
    is_str(err.msg, "line 3: line is longer than 8191 bytes", "over-long line message");
    ok(l.all_devices, "over-long line: safe reading for every device");
    free(big);

    char *text = malloc(8192);
    n = (size_t)sprintf(text, "version 1\nclaim c\n");
    for (int i = 0; i < GS_LIMITS_MAX_DEVICES + 1; i++)
        n += (size_t)sprintf(text + n, "device GPU-%d memory=1 cores=1\n", i);
    r = gs_limits_parse(text, n, &l, &err);
    is_int(r, -ENOSPC, "33 devices rejected");
    is_str(err.msg, "line 35: device GPU-32: more than 32 devices", "33 devices message");
    ok(l.all_devices, "33 devices: the device beyond the table is unknown, restrict all");
    free(text);
}

static void test_write_read(void)
{
    char dir[] = "/tmp/gs-limits-XXXXXX";
    ok(mkdtemp(dir) != NULL, "temp dir");
    struct gs_limits l;
    struct gs_error err;
    gs_limits_init(&l);
    strcpy(l.claim, "claim-uid-1");
    strcpy(l.region_path, "/var/run/gpuslice/claims/claim uid/region");
    is_int(gs_limits_add_device(&l, UUID0, 4096ULL << 20, 30, &err), 0, "add device 0");
    is_int(gs_limits_add_device(&l, UUID1, 0, 100, &err), 0, "add device 1");
    is_int(gs_limits_add_device(&l, UUID1, 0, 100, &err), -EEXIST, "duplicate refused");
    is_int(gs_limits_add_device(&l, "GPU-x", 0, 101, &err), -EINVAL, "cores 101 refused");
    is_str(err.msg, "device GPU-x: cores=101 is not a percentage (0..100)", "cores message");

    char path[512];
    is_int(gs_limits_path(path, sizeof(path), dir, "claim-uid-1", &err), 0, "path built");
    is_int(gs_limits_path(path + 256, 256, dir, "../evil", &err), -EINVAL, "path: ../ refused");
    is_int(gs_limits_write(path, &l, &err), 0, "write");
    struct stat st;
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0444, "file mode 0444");

    char buf[1024];
    int fd = open(path, O_RDONLY);
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    is_str(buf,
           "# gpuslice limits v1\nversion 1\nclaim claim-uid-1\n"
           "region /var/run/gpuslice/claims/claim uid/region\n"
           "device " UUID0 " memory=4294967296 cores=30\n"
           "device " UUID1 " memory=0 cores=100\n",
           "file content exact");

    struct gs_limits back;
    is_int(gs_limits_read(path, &back, &err), 0, "read back");
    ok(memcmp(&back, &l, sizeof(l)) == 0, "round trip identical");

    /* Overwrite: atomic rename over a read-only file. */
    l.devices[0].memory_limit = 1 << 20;
    is_int(gs_limits_write(path, &l, &err), 0, "rewrite over 0444 file");
    is_int(gs_limits_read(path, &back, &err), 0, "read rewritten");
    is_uint(back.devices[0].memory_limit, 1 << 20, "new limit visible");

    strcpy(l.claim, "two words");
    is_int(gs_limits_write(path, &l, &err), -EINVAL, "claim with a space refused by writer");
    like_str(err.msg, "claim: \"two words\" is not a single printable token", "writer message");

    char missing[600];
    snprintf(missing, sizeof(missing), "%s/none.limits", dir);
    ok(gs_limits_read(missing, &back, &err) < 0 && back.all_devices,
       "unreadable file: safe reading for all devices");
    like_str(err.msg, "none.limits: cannot open", "unreadable file message");

    ok(gs_limits_is_limits_file("abc.limits"), "abc.limits is a limits file");
    ok(!gs_limits_is_limits_file(".abc.limits.Xy12"), "temporary file ignored");
    ok(!gs_limits_is_limits_file("README"), "other file ignored");

    unlink(path);
    rmdir(dir);
}

static void test_dir_env(void)
{
    unsetenv(GS_LIMITS_ENV);
    is_str(gs_limits_dir(), "/etc/gpuslice/limits.d", "default dir");
    setenv(GS_LIMITS_ENV, "/tmp/x", 1);
    is_str(gs_limits_dir(), "/tmp/x", "env dir");
    unsetenv(GS_LIMITS_ENV);
}

int main(void)
{
    tap_plan_auto();
    test_parse_good();
    test_parse_bad();
    test_limits_on_size();
    test_write_read();
    test_dir_env();
    return tap_done();
}
