/* SPDX-License-Identifier: Apache-2.0 */
/* The read-only region reader: every bad-data cause, versions 1 and 2, live updates, truncation
 * after mapping (refused, no SIGBUS). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "monitor/region.h"
#include "tap.h"

static char dir[256];

static enum mon_region_status read_one(const char *path, struct mon_region_device *out, uint32_t *n,
                                       char *msg, size_t len)
{
    struct mon_region r;
    struct gs_error err = {0};
    mon_region_init(&r, path);
    enum mon_region_status s = mon_region_read(&r, out, GS_REGION_MAX_DEVICES, n, true, &err);
    snprintf(msg, len, "%s", err.msg);
    mon_region_fini(&r);
    return s;
}

int main(void)
{
    tap_plan_auto();
    snprintf(dir, sizeof(dir), "/tmp/gs-test-region-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    char path[512], msg[256];
    snprintf(path, sizeof(path), "%s/region", dir);
    struct mon_region_device devs[GS_REGION_MAX_DEVICES];
    uint32_t n;

    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_MISSING, "no file: missing");

    const struct fx_device d[] = {
        {.uuid = "GPU-a",
         .used = 1000,
         .limit = 4096,
         .cores = 30,
         .oom = 2,
         .throttled_ns = 5,
         .gpu_busy_ns = 77,
         .last_kernel_ns = 1700000000000000000ull,
         .launches = 9},
        {.uuid = "GPU-b", .used = 5, .cores = 0, .gpu_busy_ns = 99, .last_kernel_ns = 1},
    };
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d, 2);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_OK, "v2 region reads");
    is_int(n, 2, "two devices");
    ok(strcmp(devs[0].uuid, "GPU-a") == 0 && devs[0].used == 1000 && devs[0].oom_count == 2 &&
           devs[0].throttled_ns == 5 && devs[0].launches == 9,
       "device fields copied");
    ok(devs[0].has_v2 && devs[0].gpu_busy_ns == 77 && devs[0].last_kernel_ns == d[0].last_kernel_ns,
       "v2 fields of a capped device are read");
    ok(!devs[1].has_v2, "uncapped device: v2 fields unknown (libvgpu does not keep them)");
    ok(mon_region_find(devs, n, "GPU-b") == &devs[1] && !mon_region_find(devs, n, "GPU-x"),
       "find by UUID");

    fx_write_region(path, 1, 0, 0, GS_REGION_READY, d, 1);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_OK, "v1 region still reads");
    ok(n == 1 && devs[0].used == 1000 && !devs[0].has_v2, "v1: usage read, v2 fields unknown");

    fx_write_region(path, GS_REGION_VERSION + 1, 0, 0, GS_REGION_READY, d, 1);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_BAD_VERSION,
           "a newer layout is refused");
    char want[64];
    snprintf(want, sizeof(want), "layout version %d", GS_REGION_VERSION + 1);
    ok(strstr(msg, want) && strstr(msg, path), "message names version and file: %s", msg);
    fx_write_region(path, 0, 0, 0, GS_REGION_READY, d, 1);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_BAD_VERSION, "version 0 refused");
    fx_write_region(path, GS_REGION_VERSION, 0x1234, 0, GS_REGION_READY, d, 1);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_BAD_MAGIC, "wrong magic refused");
    ok(strstr(msg, "magic") != NULL, "message says magic: %s", msg);
    fx_write_region(path, GS_REGION_VERSION, 0, 100, GS_REGION_READY, d, 1);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_BAD_SIZE, "wrong size field");
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_INITIALISING, d, 1);
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_UNINIT,
           "region being initialised: not read");
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d, 1);
    if (truncate(path, 4096) != 0)
        diag("truncate failed");
    is_int(read_one(path, devs, &n, msg, sizeof(msg)), MON_REGION_TRUNCATED, "truncated file");
    ok(strstr(msg, "4096 bytes") != NULL, "message gives the size: %s", msg);

    /* Mapped, then updated in place, then truncated under the mapping, then replaced. */
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d, 1);
    struct mon_region r;
    mon_region_init(&r, path);
    is_int(mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, true, NULL), MON_REGION_OK,
           "mapped");
    fx_set_used(path, 0, 2222);
    mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, true, NULL);
    is_uint(devs[0].used, 2222, "a live update is seen through the mapping");
    if (truncate(path, 100) != 0)
        diag("truncate failed");
    is_int(mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, true, NULL), MON_REGION_TRUNCATED,
           "truncated under the mapping: refused before reading (no SIGBUS)");
    is_int(n, 0, "nothing returned");
    /* Truncated to nothing while mapped, read without a size check (a scrape): the read faults
     * and the SIGBUS guard turns it into "truncated". */
    mon_region_guard();
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d, 1);
    is_int(mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, true, NULL), MON_REGION_OK,
           "mapped again");
    if (truncate(path, 0) != 0)
        diag("truncate failed");
    char msg2[256] = "";
    struct gs_error e2 = {0};
    is_int(mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, false, &e2), MON_REGION_TRUNCATED,
           "shrunk under the mapping, no size check: SIGBUS caught, truncated");
    snprintf(msg2, sizeof(msg2), "%s", e2.msg);
    ok(strstr(msg2, "shrank") != NULL && n == 0, "says the file shrank, returns nothing: %s", msg2);
    const struct fx_device d2[] = {{.uuid = "GPU-new", .used = 1, .cores = 50}};
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d2, 1);
    is_int(mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, false, NULL), MON_REGION_OK,
           "after a refusal the path is opened again");
    ok(n == 1 && strcmp(devs[0].uuid, "GPU-new") == 0, "and the new content is read");
    const struct fx_device d3[] = {{.uuid = "GPU-newer", .used = 2, .cores = 50}};
    fx_write_region(path, GS_REGION_VERSION, 0, 0, GS_REGION_READY, d3, 1);
    mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, false, NULL);
    ok(n == 1 && strcmp(devs[0].uuid, "GPU-new") == 0,
       "without a path recheck (a scrape) the mapped file is read, no path lookup");
    is_int(mon_region_read(&r, devs, GS_REGION_MAX_DEVICES, &n, true, NULL), MON_REGION_OK,
           "path recheck (the refresher)");
    ok(n == 1 && strcmp(devs[0].uuid, "GPU-newer") == 0, "a replaced file is mapped again");
    mon_region_fini(&r);
    ok(strcmp(mon_region_status_name(MON_REGION_BAD_MAGIC), "bad_magic") == 0, "status names");

    unlink(path);
    rmdir(dir);
    return tap_done();
}
