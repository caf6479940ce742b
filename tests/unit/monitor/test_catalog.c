/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Catalog + collect on fixture files (no GPU, no API): the plugin's checkpoint (written with the
 * plugin's own serializer) and claim regions. Checks the series a scrape gives, that bad data is
 * skipped and counted (absent, never 0), that a claim removed from the checkpoint disappears, and
 * that a corrupt checkpoint never crashes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "fixtures.h"
#include "gpu/claim.h"
#include "monitor/catalog.h"
#include "monitor/collect.h"
#include "tap.h"

static char root[256], host[300], state[300];

#define UID_A "aaaaaaaa-0000-4000-8000-000000000001"
#define UID_B "bbbbbbbb-0000-4000-8000-000000000002"
#define UID_C "cccccccc-0000-4000-8000-000000000003"
#define UID_D "dddddddd-0000-4000-8000-000000000004"

static json_t *entry(const char *uid, const char *name, const char *state_name, int n_dev,
                     uint64_t mem0, uint32_t cores0)
{
    struct claim_plan *p = calloc(1, sizeof(*p));
    snprintf(p->ns, sizeof(p->ns), "team-a");
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->uid, sizeof(p->uid), "%s", uid);
    for (int i = 0; i < n_dev; i++) {
        struct claim_device *d = &p->devices[p->n_devices++];
        snprintf(d->device, sizeof(d->device), "hami-gpu-%d", i);
        snprintf(d->uuid, sizeof(d->uuid), "GPU-%d", i);
        d->minor = (unsigned)i;
        d->memory_limit = i == 0 ? mem0 : 0;
        d->cores = i == 0 ? cores0 : 0;
    }
    json_t *e = json_pack("{s:s, s:I, s:o}", "state", state_name, "missingSince", (json_int_t)0,
                          "plan", claim_plan_to_json(p));
    free(p);
    return e;
}

static void write_checkpoint(json_t *claims)
{
    json_t *root_j = json_pack("{s:i, s:s, s:o}", "version", 1, "driver", "d", "claims", claims);
    char path[400], *text = json_dumps(root_j, JSON_COMPACT);
    snprintf(path, sizeof(path), "%s/checkpoint.json", state);
    gs_write_file_atomic(path, text, strlen(text), 0600, NULL);
    free(text);
    json_decref(root_j);
}

static void region_path(const char *uid, char *buf, size_t len)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/claims/%s/region", host, uid);
    gs_mkdir_p(dir, 0755, NULL);
    snprintf(buf, len, "%s/region", dir);
}

static char *scrape(struct mon_catalog *c, enum mon_format f)
{
    struct mon_collect_opts o = {.node = "node-1", .version = "test", .legacy = true};
    struct mon_scrape_stats st = {0};
    char *t = NULL;
    size_t len;
    int r = mon_collect(c, &o, &st, f, &t, &len);
    if (r < 0)
        diag("collect failed: %d", r);
    return t;
}

/* promtool check metrics on a text exposition: 1 clean, 0 problems (printed), -1 no promtool.
 * HAMi's legacy names are camelCase on purpose: that lint, on those names only, is expected. */
static int promtool_clean(const char *text)
{
    static const char *const legacy[] = {"HostGPUMemoryUsage",
                                         "HostCoreUtilization",
                                         "vGPU_device_memory_usage_in_bytes",
                                         "vGPU_device_memory_limit_in_bytes",
                                         "GPUDeviceCoreLimit",
                                         "GPUDeviceMemoryLimit",
                                         "GPUDeviceCoreAllocated",
                                         "GPUDeviceMemoryAllocated",
                                         "vGPUDeviceCoreAllocated",
                                         "vGPUDeviceMemoryAllocated"};
    if (system("command -v promtool >/dev/null 2>&1") != 0)
        return -1;
    char path[300], cmd[700];
    snprintf(path, sizeof(path), "%s/exposition.txt", root);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    char line[512];
    int clean = 1;
    while (fgets(line, sizeof(line), p)) {
        int expected = 0;
        for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
            if (strncmp(line, legacy[i], strlen(legacy[i])) == 0 &&
                line[strlen(legacy[i])] == ' ' && strstr(line, "camelCase"))
                expected = 1;
        if (!expected && line[0] != '\n') {
            diag("promtool: %s", line);
            clean = 0;
        }
    }
    int st = pclose(p);
    (void)st;
    return clean;
}

static void check_promtool(const char *text, const char *what)
{
    int c = promtool_clean(text);
    if (c < 0)
        skip(what, "promtool not installed (Debian package prometheus, make deps)");
    else
        ok(c == 1, "%s", what);
}

static int has(const char *text, const char *needle)
{
    return text && strstr(text, needle) != NULL;
}

static uint64_t skipped(struct mon_catalog *c, enum mon_cause k)
{
    return atomic_load(&c->skipped[k]);
}

int main(void)
{
    tap_plan_auto();
    snprintf(root, sizeof(root), "/tmp/gs-test-catalog-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    snprintf(host, sizeof(host), "%s/host", root);
    snprintf(state, sizeof(state), "%s/state", root);
    gs_mkdir_p(state, 0755, NULL);

    json_t *claims = json_object();
    json_object_set_new(claims, UID_A,
                        entry(UID_A, "train", "PrepareCompleted", 2, 4ull << 30, 30));
    json_object_set_new(claims, UID_B,
                        entry(UID_B, "broken", "PrepareCompleted", 1, 1ull << 30, 50));
    json_object_set_new(claims, UID_C, entry(UID_C, "idle", "PrepareCompleted", 1, 2ull << 30, 0));
    json_object_set_new(claims, UID_D, entry(UID_D, "half", "PrepareStarted", 1, 1ull << 30, 10));
    write_checkpoint(json_incref(claims));

    char pa[700], pb[700];
    region_path(UID_A, pa, sizeof(pa));
    region_path(UID_B, pb, sizeof(pb));
    const struct fx_device da[] = {
        {.uuid = "GPU-0",
         .used = 1000ull << 20,
         .cores = 30,
         .oom = 4,
         .throttled_ns = 1500000000,
         .gpu_busy_ns = 1000,
         .launches = 12},
        {.uuid = "GPU-1", .used = 7, .cores = 0},
    };
    fx_write_region(pa, GS_REGION_VERSION, 0, 0, GS_REGION_READY, da, 2);
    fx_write_region(pb, GS_REGION_VERSION, 0xdeadbeef, 0, GS_REGION_READY, da, 1);
    /* claim C: prepared, no process started: no region file */

    struct mon_catalog cat;
    struct mon_catalog_config cfg = {.node = "node-1",
                                     .host_dir = host,
                                     .plugin_state_dir = state,
                                     .standalone_state_dir = NULL,
                                     .k8s = NULL,
                                     .refresh_ns = 1000000000ull,
                                     .resync_ns = 1000000000ull,
                                     .sample_gpus = false};
    struct gs_error err = {0};
    if (mon_catalog_init(&cat, &cfg, &err) < 0)
        return 1;
    mon_catalog_refresh(&cat);
    is_int(cat.n_claims, 3, "three completed claims listed (PrepareStarted left out)");
    ok(atomic_load(&cat.ready), "ready after the first refresh");
    ok(skipped(&cat, MON_CAUSE_REGION_BAD_MAGIC) == 1, "bad magic counted once per refresh");
    ok(skipped(&cat, MON_CAUSE_REGION_MISSING) == 1, "missing region counted");

    char *t = scrape(&cat, MON_FORMAT_TEXT);
    check_promtool(t ? t : "",
                   "promtool check metrics: first exposition (bad regions, legacy names)");
    const char *la =
        "source=\"plugin\",namespace=\"team-a\",claim=\"train\",claim_uid=\"" UID_A "\"";
    char want[1024];
    snprintf(want, sizeof(want),
             "gpuslice_claim_memory_used_bytes{%s,vdevice_index=\"0\","
             "device_uuid=\"GPU-0\"} 1048576000\n",
             la);
    ok(has(t, want), "claim usage from the region");
    snprintf(want, sizeof(want),
             "gpuslice_claim_memory_limit_bytes{%s,vdevice_index=\"0\","
             "device_uuid=\"GPU-0\"} 4294967296\n",
             la);
    ok(has(t, want), "claim limit from the checkpoint's plan");
    snprintf(want, sizeof(want),
             "gpuslice_claim_oom_refusals_total{%s,vdevice_index=\"0\","
             "device_uuid=\"GPU-0\"} 4\n",
             la);
    ok(has(t, want), "OOM refusals from the region");
    snprintf(want, sizeof(want),
             "gpuslice_claim_throttled_seconds_total{%s,vdevice_index=\"0\","
             "device_uuid=\"GPU-0\"} 1.5\n",
             la);
    ok(has(t, want), "throttled time in seconds");
    snprintf(want, sizeof(want),
             "gpuslice_claim_cores_limit_ratio{%s,vdevice_index=\"1\","
             "device_uuid=\"GPU-1\"} 1\n",
             la);
    ok(has(t, want), "a device without a compute cap has the whole device (ratio 1)");
    snprintf(want, sizeof(want), "gpuslice_claim_memory_limit_bytes{%s,vdevice_index=\"1\"", la);
    ok(!has(t, want), "whole-device memory of an unknown GPU (no NVML): absent, not 0");
    snprintf(want, sizeof(want), "gpuslice_claim_gpu_busy_seconds_total{%s,vdevice_index=\"1\"",
             la);
    ok(!has(t, want), "busy time of an uncapped device: absent");
    ok(has(t,
           "gpuslice_claim_region_healthy{source=\"plugin\",namespace=\"team-a\",claim=\"broken\","
           "claim_uid=\"" UID_B "\"} 0\n"),
       "bad region: healthy 0");
    ok(!has(t, "claim=\"broken\",claim_uid=\"" UID_B
               "\",vdevice_index=\"0\",device_uuid=\"GPU-0\"} 1048576000"),
       "bad region: no usage value at all");
    ok(has(t, "gpuslice_claim_region_healthy{source=\"plugin\",namespace=\"team-a\",claim=\"idle\","
              "claim_uid=\"" UID_C "\"} 0\n"),
       "missing region: healthy 0");
    /* No Kubernetes: one consumer with empty labels per claim; A and B share GPU-0 -> summed. */
    ok(has(t,
           "hami_vgpu_memory_used_bytes{namespace=\"\",pod=\"\",container=\"\",vdevice_index=\"0\","
           "device_uuid=\"GPU-0\"} 1048576000\n"),
       "HAMi per-container usage with empty pod labels; the bad region adds nothing");
    ok(has(t, "hami_vgpu_memory_limit_bytes{namespace=\"\",pod=\"\",container=\"\",vdevice_index="
              "\"0\","
              "device_uuid=\"GPU-0\"} 7516192768\n"),
       "limits of claims with the same labels are summed (4Gi + 1Gi + 2Gi on GPU-0)");
    ok(has(t, "vGPU_device_memory_usage_in_bytes{podnamespace=\"\",podname=\"\",ctrname=\"\","
              "vdeviceid=\"0\",deviceuuid=\"GPU-0\"} 1048576000\n"),
       "legacy name with its historic labels");
    ok(has(t, "gpuslice_monitor_skipped_total{cause=\"region_bad_magic\"} 1\n"),
       "skipped counter exported by cause");
    ok(has(t, "gpuslice_monitor_claims{source=\"plugin\"} 3\n"), "claims by source");
    ok(has(t, "gpuslice_build_info{version=\"test\",commit=\"unknown\",region_version=\"2\"} 1\n"),
       "build info (a unit test links no version_dep: commit unknown)");
    free(t);

    /* Utilisation: busy time grows between two refreshes. */
    const struct fx_device da2[] = {
        {.uuid = "GPU-0",
         .used = 1000ull << 20,
         .cores = 30,
         .gpu_busy_ns = 1000 + 500000,
         .last_kernel_ns = 1},
        {.uuid = "GPU-1", .used = 7, .cores = 0},
    };
    fx_write_region(pa, GS_REGION_VERSION, 0, 0, GS_REGION_READY, da2, 2);
    mon_catalog_refresh(&cat); /* busy grew since the first refresh */
    fx_write_region(pa, GS_REGION_VERSION, 0, 0, GS_REGION_READY, da2, 2);
    mon_catalog_refresh(&cat);
    t = scrape(&cat, MON_FORMAT_TEXT);
    check_promtool(t ? t : "", "promtool check metrics: exposition with utilisation");
    ok(has(t, "hami_container_device_utilization_ratio{namespace=\"\",pod=\"\",container=\"\","
              "vdevice_index=\"0\",device_uuid=\"GPU-0\"} 0\n"),
       "no busy time between two refreshes: utilisation 0");
    ok(has(t, "hami_container_last_kernel_elapsed_seconds{namespace=\"\",pod=\"\",container=\"\","
              "vdevice_index=\"0\",device_uuid=\"GPU-0\"}"),
       "last kernel elapsed exported once a kernel ran");
    ok(!has(t, "hami_container_device_utilization_ratio{namespace=\"\",pod=\"\",container=\"\","
               "vdevice_index=\"1\""),
       "uncapped device: utilisation absent");
    free(t);
    const struct fx_device da3[] = {
        {.uuid = "GPU-0",
         .used = 1000ull << 20,
         .cores = 30,
         .gpu_busy_ns = 1000 + 500000 + 200000,
         .last_kernel_ns = 1},
    };
    /* In place (same inode): the window continues. */
    int fd = open(pa, O_WRONLY);
    uint64_t busy = da3[0].gpu_busy_ns;
    off_t off = (off_t)(offsetof(struct gs_region, devices) +
                        offsetof(struct gs_region_device, gpu_busy_ns));
    ok(fd >= 0 && pwrite(fd, &busy, sizeof(busy), off) == (ssize_t)sizeof(busy), "busy time grows");
    if (fd >= 0)
        close(fd);
    mon_catalog_refresh(&cat);
    pthread_mutex_lock(&cat.lock);
    const struct mon_claim *ca = NULL;
    for (size_t i = 0; i < cat.n_claims; i++)
        if (strcmp(cat.claims[i]->uid, UID_A) == 0)
            ca = cat.claims[i];
    ok(ca && ca->dev[0].has_util && ca->dev[0].util > 0 && ca->dev[0].util <= 1,
       "busy time between refreshes gives a utilisation in (0, 1]");
    pthread_mutex_unlock(&cat.lock);

    /* Live: a scrape reads the region, not the refresher's copy. */
    fx_set_used(pa, 0, 3000ull << 20);
    t = scrape(&cat, MON_FORMAT_OPENMETRICS);
    snprintf(want, sizeof(want),
             "gpuslice_claim_memory_used_bytes{%s,vdevice_index=\"0\","
             "device_uuid=\"GPU-0\"} 3145728000\n",
             la);
    ok(has(t, want), "a scrape sees the region's current usage");
    ok(t && strlen(t) > 6 && strcmp(t + strlen(t) - 6, "# EOF\n") == 0, "OpenMetrics rendering");
    free(t);

    /* The claim is unprepared: gone from the checkpoint, gone from /metrics. */
    json_object_del(claims, UID_A);
    write_checkpoint(json_incref(claims));
    mon_catalog_refresh(&cat);
    t = scrape(&cat, MON_FORMAT_TEXT);
    ok(!has(t, "claim=\"train\""), "an unprepared claim disappears");
    check_promtool(t ? t : "", "promtool check metrics: exposition after an unprepare");
    free(t);

    /* Corrupt checkpoint: counted, claims dropped (unknown, not stale), no crash. */
    char path[400];
    snprintf(path, sizeof(path), "%s/checkpoint.json", state);
    gs_write_file_atomic(path, "{\"version\":1,\"claims\":", 22, 0600, NULL);
    mon_catalog_refresh(&cat);
    is_int(cat.n_claims, 0, "corrupt checkpoint: no claim reported");
    ok(skipped(&cat, MON_CAUSE_CHECKPOINT_UNREADABLE) >= 1, "corrupt checkpoint counted");
    gs_write_file_atomic(path, "{\"version\":7,\"claims\":{}}", 25, 0600, NULL);
    mon_catalog_refresh(&cat);
    ok(skipped(&cat, MON_CAUSE_CHECKPOINT_UNREADABLE) >= 2, "unknown checkpoint version counted");
    write_checkpoint(json_incref(claims));
    mon_catalog_refresh(&cat);
    is_int(cat.n_claims, 2, "a good checkpoint again: claims back");
    json_decref(claims);

    mon_catalog_fini(&cat);
    gs_rm_rf(root, NULL);
    return tap_done();
}
