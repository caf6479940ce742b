/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu/health: the policy (lists, NVIDIA's non-fatal default), the table's state machine (fatal
 * XID sticky until cleared, lost until the GPU answers, non-fatal informational, ignored dropped)
 * and, on gpusim (t4x2), the watcher end to end: gpusim-smi inject-xid / lose / recover and the
 * operator's clear file, with no restart.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "gpu/discovery.h"
#include "gpu/health.h"
#include "tap.h"

static void fake_inventory(struct gpu_inventory *inv, size_t n)
{
    memset(inv, 0, sizeof(*inv));
    for (size_t i = 0; i < n; i++) {
        inv->dev[i].minor = (unsigned)i;
        snprintf(inv->dev[i].name, sizeof(inv->dev[i].name), "hami-gpu-%zu", i);
        snprintf(inv->dev[i].uuid, sizeof(inv->dev[i].uuid), "GPU-%08zu-0000", i);
    }
    inv->n = n;
}

static void test_policy(void)
{
    struct gpu_health_policy p;
    struct gs_error err = {0};
    is_int(gpu_health_policy_init(&p, true, NULL, NULL, &err), 0, "default policy");
    const unsigned nonfatal[] = {13, 31, 43, 45, 68, 109};
    for (size_t i = 0; i < sizeof(nonfatal) / sizeof(nonfatal[0]); i++)
        ok(gpu_health_xid_nonfatal(&p, nonfatal[i]), "XID %u non-fatal by default (NVIDIA's list)",
           nonfatal[i]);
    ok(!gpu_health_xid_nonfatal(&p, 48), "XID 48 (DBE) fatal by default");
    ok(!gpu_health_xid_nonfatal(&p, 79), "XID 79 fatal by default");
    ok(!gpu_health_xid_nonfatal(&p, 5000), "an XID beyond the lists is fatal");
    ok(!gpu_health_xid_ignored(&p, 13), "nothing ignored by default");

    is_int(gpu_health_policy_init(&p, true, " 48, 63 ,", "13,1023", &err), 0, "custom lists");
    ok(gpu_health_xid_nonfatal(&p, 48) && gpu_health_xid_nonfatal(&p, 63), "custom non-fatal");
    ok(!gpu_health_xid_nonfatal(&p, 13), "the override replaces the default");
    ok(gpu_health_xid_ignored(&p, 13) && gpu_health_xid_ignored(&p, 1023), "ignore list");
    is_int(gpu_health_policy_init(&p, true, "", "", &err), 0, "empty lists");
    ok(!gpu_health_xid_nonfatal(&p, 13), "empty non-fatal list: every XID fatal");

    is_int(gpu_health_policy_init(&p, true, "13,4x", NULL, &err), -EINVAL, "bad item");
    ok(strstr(err.msg, "health-nonfatal-xids") && strstr(err.msg, "\"4x\""),
       "error names the option and the item: %s", err.msg);
    is_int(gpu_health_policy_init(&p, true, NULL, "1024", &err), -EINVAL, "out of range");
    ok(strstr(err.msg, "health-ignore-xids") && strstr(err.msg, "\"1024\""),
       "error names the option and the item: %s", err.msg);
    is_int(gpu_health_policy_init(&p, true, "-1", NULL, &err), -EINVAL, "negative rejected");
}

static int apply(struct gpu_health_table *t, enum gpu_health_event_kind k, size_t dev, uint64_t xid,
                 int64_t now)
{
    struct gpu_health_event ev = {.kind = k, .dev = dev, .xid = xid};
    return gpu_health_apply(t, &ev, now);
}

static void test_table(void)
{
    struct gpu_inventory inv;
    fake_inventory(&inv, 2);
    struct gpu_health_policy p;
    gpu_health_policy_init(&p, true, NULL, "94", NULL);
    struct gpu_health_table t;
    gpu_health_table_init(&t, &inv, &p, 100);
    struct gpu_health_dev d;

    ok(gpu_health_get(&t, "hami-gpu-1", &d) && d.healthy && d.since_s == 100, "starts healthy");
    is_int(apply(&t, GPU_HEALTH_EV_XID, 1, 13, 110), 1, "non-fatal XID is a change");
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(d.healthy && d.has_xid && d.last_xid == 13 && !d.last_xid_fatal,
       "non-fatal XID: healthy, last XID 13 informational");
    is_int(apply(&t, GPU_HEALTH_EV_XID, 1, 94, 111), 0, "ignored XID: no change");
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(d.last_xid == 13 && d.xid_count == 1, "ignored XID not recorded");

    is_int(apply(&t, GPU_HEALTH_EV_XID, 1, 48, 120), 1, "fatal XID");
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(!d.healthy && d.fatal && d.fatal_xid == 48 && d.since_s == 120, "fatal XID: unhealthy");
    ok(strstr(d.reason, "fatal XID 48") != NULL, "reason names the XID: %s", d.reason);
    apply(&t, GPU_HEALTH_EV_ANSWERS, 1, 0, 121);
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(!d.healthy, "a fatal XID is sticky: answering NVML does not clear it");
    gpu_health_get(&t, "hami-gpu-0", &d);
    ok(d.healthy, "the other GPU stays healthy");

    is_int(gpu_health_clear(&t, "nonexistent", 130), -ENOENT, "clear of an unknown GPU");
    is_int(gpu_health_clear(&t, inv.dev[1].uuid, 130), 1, "operator clear by UUID");
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(d.healthy && d.since_s == 130 && d.reason[0] == '\0', "cleared: healthy again");

    is_int(apply(&t, GPU_HEALTH_EV_XID, 0, GPU_XID_FALLEN_OFF, 140), 1, "XID 79");
    gpu_health_get(&t, "hami-gpu-0", &d);
    ok(!d.healthy && d.lost && !d.fatal, "XID 79: lost, not sticky");
    apply(&t, GPU_HEALTH_EV_LOST, 0, 0, 141);
    is_int(apply(&t, GPU_HEALTH_EV_ANSWERS, 0, 0, 150), 1, "the lost GPU answers");
    gpu_health_get(&t, "hami-gpu-0", &d);
    ok(d.healthy && !d.lost, "recovered with no restart");

    is_int(apply(&t, GPU_HEALTH_EV_ECC_DBE, 0, 0, 160), 1, "double-bit ECC");
    gpu_health_get(&t, "hami-gpu-0", &d);
    ok(!d.healthy && d.fatal && strstr(d.reason, "ECC"), "ECC DBE: unhealthy (%s)", d.reason);
    is_int(gpu_health_clear(&t, "all", 170), 1, "clear all changes one GPU");
    is_int(apply(&t, GPU_HEALTH_EV_XID, 2, 48, 170), -EINVAL, "device index out of range");

    uint64_t gen = t.gen;
    ok(gpu_health_wait_change(&t, gen, 10) == gen, "wait times out without a change");
    apply(&t, GPU_HEALTH_EV_XID, 0, 31, 180);
    ok(gpu_health_wait_change(&t, gen, 10) != gen, "a change moves the generation");
    gpu_health_table_fini(&t);

    /* The exported file: round trip while the writer lives; ignored once it is gone. */
    apply(&t, GPU_HEALTH_EV_XID, 1, 48, 190);
    char path[] = "/tmp/gs-health-file-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    struct gs_error err = {0};
    is_int(gpu_health_save_file(&t, path, &err), 0, "save the table: %s", err.msg);
    struct gpu_health_dev back[4];
    is_int((int)gpu_health_load_file(path, back, 4), 2, "load it back: two GPUs");
    ok(back[0].healthy && back[0].has_xid && back[0].last_xid == 31, "GPU 0 healthy, last XID 31");
    ok(!back[1].healthy && back[1].fatal && back[1].fatal_xid == 48 &&
           strstr(back[1].reason, "fatal XID 48"),
       "GPU 1 unhealthy, fatal XID 48, with its reason");
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"pid\": 2147483647, \"devices\": [{\"name\": \"hami-gpu-0\", \"uuid\": \"GPU-0\","
              " \"healthy\": false}]}",
              f);
        fclose(f);
    }
    is_int((int)gpu_health_load_file(path, back, 4), 0, "a file whose writer is gone says nothing");
    f = fopen(path, "w");
    if (f) {
        fputs("{\"pid\": \"x\", \"devices\": 7", f);
        fclose(f);
    }
    is_int((int)gpu_health_load_file(path, back, 4), 0, "a malformed file says nothing");
    unlink(path);
    is_int((int)gpu_health_load_file(path, back, 4), 0, "an absent file says nothing");

    char ts[32];
    gs_rfc3339_utc(0, ts, sizeof(ts));
    is_str(ts, "1970-01-01T00:00:00Z", "RFC 3339");
}

/* ---- on gpusim ----------------------------------------------------------------------------- */

static const char *smi;

static int run_smi(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s >/dev/null", smi, args);
    return system(cmd);
}

static bool wait_for(struct gpu_health_table *t, const char *name, bool healthy, double *secs)
{
    uint64_t start = gs_now_ms(), gen = 0;
    struct gpu_health_dev d;
    while (gs_now_ms() - start < 10000) {
        if (gpu_health_get(t, name, &d) && d.healthy == healthy) {
            *secs = (double)(gs_now_ms() - start) / 1000.0;
            return true;
        }
        gen = gpu_health_wait_change(t, gen, 200);
    }
    return false;
}

static void test_watcher_on_gpusim(void)
{
    const char *sim_dir = getenv("GS_SIM_DIR");
    smi = getenv("GS_GPUSIM_SMI");
    char lib[1024];
    snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so.1", sim_dir ? sim_dir : "");
    if (!sim_dir || !smi || access(lib, R_OK) != 0 || access(smi, X_OK) != 0) {
        skip("watcher on gpusim", "gpusim not built (GS_SIM_DIR / GS_GPUSIM_SMI)");
        return;
    }
    char dir[] = "/tmp/gs-health-XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return;
    }
    char state[256], clear[256];
    snprintf(state, sizeof(state), "%s/state", dir);
    snprintf(clear, sizeof(clear), "%s/clear", dir);
    mkdir(clear, 0700);
    setenv("GPUSIM_PRESET", "t4x2", 1);
    setenv("GPUSIM_STATE", state, 1);

    struct gs_error err = {0};
    static struct gpu_inventory inv;
    if (gpu_discover("/nonexistent-sysfs", &inv, &err) < 0 || inv.n != 2) {
        ok(0, "discovery on gpusim t4x2: %s (n=%zu)", err.msg, inv.n);
        return;
    }
    struct gpu_health_policy p;
    gpu_health_policy_init(&p, true, NULL, NULL, NULL);
    static struct gpu_health_table t;
    gpu_health_table_init(&t, &inv, &p, (int64_t)time(NULL));
    struct gpu_health_watcher_config cfg = {.clear_dir = clear, .poll_ms = 100};
    struct gpu_health_watcher *w = gpu_health_watcher_start(&t, &inv, &cfg, &err);
    ok(w != NULL, "watcher started: %s", err.msg);
    if (!w)
        return;
    double secs = 0;
    struct gpu_health_dev d;

    is_int(run_smi("inject-xid 1 13"), 0, "inject non-fatal XID 13 on GPU 1");
    gs_sleep_ms(400);
    ok(gpu_health_get(&t, "hami-gpu-1", &d) && d.healthy && d.last_xid == 13,
       "XID 13 recorded, GPU 1 healthy");

    is_int(run_smi("inject-xid 1 48"), 0, "inject fatal XID 48 on GPU 1");
    ok(wait_for(&t, "hami-gpu-1", false, &secs), "GPU 1 unhealthy after %.3f s", secs);
    gpu_health_get(&t, "hami-gpu-0", &d);
    ok(d.healthy, "GPU 0 healthy");
    run_smi("recover 1");
    gs_sleep_ms(400);
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(!d.healthy && d.fatal_xid == 48, "a fatal XID stays until the operator clears it");
    char f[300];
    snprintf(f, sizeof(f), "%s/hami-gpu-1", clear);
    FILE *fp = fopen(f, "w");
    if (fp)
        fclose(fp);
    ok(wait_for(&t, "hami-gpu-1", true, &secs), "operator clear: healthy after %.3f s", secs);
    ok(access(f, F_OK) == 0, "the clear file stays (every daemon reads it)");
    is_int(run_smi("inject-xid 1 48"), 0, "fatal XID 48 on GPU 1 again");
    ok(wait_for(&t, "hami-gpu-1", false, &secs), "the old clear file does not hide a new fault");
    gs_sleep_ms(300);
    gpu_health_get(&t, "hami-gpu-1", &d);
    ok(!d.healthy, "still unhealthy while the file is untouched");
    fp = fopen(f, "w");
    if (fp)
        fclose(fp);
    ok(wait_for(&t, "hami-gpu-1", true, &secs), "touched again: healthy after %.3f s", secs);
    unlink(f);

    is_int(run_smi("lose 0"), 0, "lose GPU 0");
    ok(wait_for(&t, "hami-gpu-0", false, &secs), "GPU 0 lost after %.3f s", secs);
    gpu_health_get(&t, "hami-gpu-0", &d);
    ok(d.lost && strstr(d.reason, "lost"), "reason: %s", d.reason);
    is_int(run_smi("recover 0"), 0, "recover GPU 0");
    ok(wait_for(&t, "hami-gpu-0", true, &secs), "GPU 0 healthy again after %.3f s, no restart",
       secs);
    gpu_health_watcher_suspend(w); /* a re-discovery in between (NVML shut down and up) */
    static struct gpu_inventory again;
    ok(gpu_discover("/nonexistent-sysfs", &again, &err) == 0 && again.n == 2,
       "discovery while the watcher is suspended");
    gpu_health_watcher_resume(w);
    gs_sleep_ms(300);
    is_int(run_smi("inject-xid 0 48"), 0, "inject fatal XID 48 on the recovered GPU 0");
    ok(wait_for(&t, "hami-gpu-0", false, &secs),
       "events still delivered after recovery and a suspend/resume");

    gpu_health_watcher_stop(w);
    gpu_health_table_fini(&t);
    unlink(state);
    rmdir(clear);
    rmdir(dir);
}

int main(void)
{
    tap_plan_auto();
    test_policy();
    test_table();
    test_watcher_on_gpusim();
    return tap_done();
}
