/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential test of src/hami against HAMi (Project-HAMi/HAMi v2.6.0 and v2.10.0). Every input
 * below is what one of HAMi's encoders writes, written by hand from that Go function (cited per
 * case), and every expected value is what HAMi's decoder gives for it (also cited): field by
 * field, old and new formats, healthy and not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hami/hami.h"
#include "tap.h"

static struct hami_node_device nd[HAMI_MAX_NODE_DEVICES];

static void node_eq(const struct hami_node_device *d, const char *id, uint32_t index, int32_t count,
                    int32_t devmem, int32_t devcore, const char *type, int64_t numa,
                    const char *mode, bool health, const char *what)
{
    is_str(d->id, id, "%s: id", what);
    is_int(d->index, index, "%s: index", what);
    is_int(d->count, count, "%s: count", what);
    is_int(d->devmem, devmem, "%s: devmem", what);
    is_int(d->devcore, devcore, "%s: devcore", what);
    is_str(d->type, type, "%s: type", what);
    is_int(d->numa, numa, "%s: numa", what);
    is_str(d->mode, mode, "%s: mode", what);
    is_int(d->health, health, "%s: health", what);
}

static void node_colon(void)
{
    struct gs_error err = {0};
    /* EncodeNodeDevices (v2.6.0 pkg/util/util.go): ID,Count,Devmem,Devcore,Type,Numa,Health,
     * Index,Mode then ":" per device. DecodeNodeDevices reads index at [7], mode at [8]. */
    const char *v26 = "GPU-aaaa,10,15360,100,NVIDIA-Tesla T4,0,true,0,hami-core:"
                      "GPU-bbbb,10,15360,100,NVIDIA-Tesla T4,1,false,1,hami-core:";
    int n = hami_node_devices_decode(v26, nd, HAMI_MAX_NODE_DEVICES, &err);
    is_int(n, 2, "colon 9 fields: 2 devices (%s)", err.msg);
    node_eq(&nd[0], "GPU-aaaa", 0, 10, 15360, 100, "NVIDIA-Tesla T4", 0, "hami-core", true,
            "colon[0]");
    node_eq(&nd[1], "GPU-bbbb", 1, 10, 15360, 100, "NVIDIA-Tesla T4", 1, "hami-core", false,
            "colon[1] (unhealthy)");
    /* Index and mode are in that order: "…,3,mig:" is index 3, mode mig. */
    n = hami_node_devices_decode("GPU-c,7,40960,100,NVIDIA A100-SXM4-40GB,1,true,3,mig:", nd,
                                 HAMI_MAX_NODE_DEVICES, &err);
    is_int(n, 1, "colon: one device");
    is_int(nd[0].index, 3, "colon: field 8 is the index");
    is_str(nd[0].mode, "mig", "colon: field 9 is the mode");
    /* The 7-field form (HAMi before index/mode): DecodeNodeDevices gives index 0 and mode
     * hami-core to every device. */
    n = hami_node_devices_decode("GPU-a,10,8000,100,NVIDIA-T4,0,true:GPU-b,10,8000,100,NVIDIA-T4,"
                                 "0,true:",
                                 nd, HAMI_MAX_NODE_DEVICES, &err);
    is_int(n, 2, "colon 7 fields: 2 devices");
    is_int(nd[1].index, 0, "colon 7 fields: the second device is index 0 too");
    is_str(nd[1].mode, "hami-core", "colon 7 fields: mode hami-core");
    /* strconv.ParseBool: 1/t/T/TRUE/True/true and 0/f/F/FALSE/False/false. */
    static const struct {
        const char *v;
        bool want;
    } bools[] = {{"1", true},    {"t", true},      {"T", true},      {"TRUE", true},
                 {"True", true}, {"true", true},   {"0", false},     {"f", false},
                 {"F", false},   {"FALSE", false}, {"False", false}, {"false", false}};
    for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
        char s[128];
        snprintf(s, sizeof(s), "GPU-a,10,8000,100,NVIDIA-T4,0,%s:", bools[i].v);
        n = hami_node_devices_decode(s, nd, HAMI_MAX_NODE_DEVICES, &err);
        ok(n == 1 && nd[0].health == bools[i].want, "health \"%s\" is %s (strconv.ParseBool)",
           bools[i].v, bools[i].want ? "true" : "false");
    }
    /* v2.10.0 DecodeNodeDevices returns ParseBool's error: so do we, naming the field. */
    n = hami_node_devices_decode("GPU-a,10,8000,100,NVIDIA-T4,0,yes:", nd, HAMI_MAX_NODE_DEVICES,
                                 &err);
    ok(n == -EINVAL && strstr(err.msg, "health") && strstr(err.msg, "yes"),
       "health \"yes\" refused naming field and value (%s)", err.msg);
    n = hami_node_devices_decode("GPU-a,10,8000,100,NVIDIA-T4,0,true,-1,hami-core:", nd,
                                 HAMI_MAX_NODE_DEVICES, &err);
    ok(n == -EINVAL && strstr(err.msg, "index"), "negative index refused (%s)", err.msg);
    n = hami_node_devices_decode("GPU-a,10,8000,100,NVIDIA-T4,0,true,0:", nd, HAMI_MAX_NODE_DEVICES,
                                 &err);
    ok(n == -EINVAL && strstr(err.msg, "8 fields"), "8 fields refused (%s)", err.msg);
    /* ParseInt(…, 10, 32) takes a sign. */
    n = hami_node_devices_decode("GPU-a,+10,8000,100,NVIDIA-T4,-1,true:", nd, HAMI_MAX_NODE_DEVICES,
                                 &err);
    ok(n == 1 && nd[0].count == 10 && nd[0].numa == -1, "signed numbers as strconv reads them");
    /* EncodeNodeDevices round trip. */
    struct hami_node_device d = {.id = "GPU-x",
                                 .index = 2,
                                 .count = 5,
                                 .devmem = 1000,
                                 .devcore = 150,
                                 .type = "NVIDIA-L4",
                                 .numa = 1,
                                 .mode = "hami-core",
                                 .health = true};
    char *enc = hami_node_devices_encode_colon(&d, 1);
    is_str(enc, "GPU-x,5,1000,150,NVIDIA-L4,1,true,2,hami-core:", "EncodeNodeDevices layout");
    free(enc);
}

static void node_json(void)
{
    struct gs_error err = {0};
    /* MarshalNodeDevices (v2.10.0 pkg/device/devices.go): json.Marshal of DeviceInfo, every
     * field omitempty. Device 0 is index 0, numa 0 (both omitted), healthy; device 1 is
     * unhealthy (health omitted) with devcore scaled to 200 and devmem scaled x1.5. */
    const char *v210 =
        "[{\"id\":\"GPU-aaaa\",\"count\":10,\"devmem\":15360,\"devcore\":100,"
        "\"type\":\"NVIDIA-Tesla T4\",\"mode\":\"hami-core\",\"health\":true},"
        "{\"id\":\"GPU-bbbb\",\"index\":1,\"count\":10,\"devmem\":23040,\"devcore\":200,"
        "\"type\":\"NVIDIA-Tesla T4\",\"numa\":1,\"mode\":\"hami-core\"}]";
    int n = hami_node_devices_decode(v210, nd, HAMI_MAX_NODE_DEVICES, &err);
    is_int(n, 2, "json: 2 devices (%s)", err.msg);
    node_eq(&nd[0], "GPU-aaaa", 0, 10, 15360, 100, "NVIDIA-Tesla T4", 0, "hami-core", true,
            "json[0]");
    node_eq(&nd[1], "GPU-bbbb", 1, 10, 23040, 200, "NVIDIA-Tesla T4", 1, "hami-core", false,
            "json[1]: absent health is false (unhealthy)");
    /* Absent count and mode: Go's zero values (0, ""). */
    n = hami_node_devices_decode("[{\"id\":\"GPU-z\",\"devmem\":100,\"health\":true}]", nd,
                                 HAMI_MAX_NODE_DEVICES, &err);
    ok(n == 1 && nd[0].count == 0 && nd[0].mode[0] == '\0' && nd[0].devcore == 0,
       "json: absent count/mode/devcore are 0, \"\", 0");
    /* encoding/json matches keys case-insensitively. */
    n = hami_node_devices_decode("[{\"ID\":\"GPU-z\",\"Health\":true,\"DevMem\":7}]", nd,
                                 HAMI_MAX_NODE_DEVICES, &err);
    ok(n == 1 && strcmp(nd[0].id, "GPU-z") == 0 && nd[0].health && nd[0].devmem == 7,
       "json: keys matched case-insensitively");
    n = hami_node_devices_decode("[{\"id\":\"GPU-z\",\"count\":1.5}]", nd, HAMI_MAX_NODE_DEVICES,
                                 &err);
    ok(n == -EINVAL && strstr(err.msg, "count"), "json: 1.5 into int32 refused (%s)", err.msg);
    n = hami_node_devices_decode("[{\"id\":\"GPU-z\",\"health\":\"true\"}]", nd,
                                 HAMI_MAX_NODE_DEVICES, &err);
    ok(n == -EINVAL && strstr(err.msg, "health"), "json: string health refused (%s)", err.msg);
    /* Our encoder writes what MarshalNodeDevices writes, byte for byte. */
    char *enc = hami_node_devices_encode(nd, 0);
    is_str(enc, "[]", "json encode: empty");
    free(enc);
    n = hami_node_devices_decode(v210, nd, HAMI_MAX_NODE_DEVICES, &err);
    enc = hami_node_devices_encode(nd, (size_t)n);
    is_str(enc, v210, "json encode: MarshalNodeDevices' bytes (zero fields omitted)");
    free(enc);
    /* register.go: "NVIDIA-" only when the model does not start with NVIDIA. */
    char t[64];
    hami_device_type("Tesla T4", t, sizeof(t));
    is_str(t, "NVIDIA-Tesla T4", "type: Tesla T4 prefixed");
    hami_device_type("NVIDIA H100 80GB HBM3", t, sizeof(t));
    is_str(t, "NVIDIA H100 80GB HBM3", "type: NVIDIA H100 kept as is");
    is_str(hami_type_product("NVIDIA-Tesla T4"), "Tesla T4", "product of NVIDIA-Tesla T4");
    is_str(hami_type_product("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3",
           "product of NVIDIA H100");
}

static void pod_devices(void)
{
    struct gs_error err = {0};
    static struct hami_ctr_devices c[8];
    /* EncodePodSingleDevice (v2.10.0 pkg/device/devices.go) for a pod with one init container
     * (1 GPU) and two app containers (none; 2 GPUs): init entries come first. */
    const char *s = "GPU-a,NVIDIA,4000,30:;;GPU-a,NVIDIA,3000,20:GPU-b,NVIDIA,3000,20:;";
    int n = hami_pod_devices_decode(s, c, 8, &err);
    is_int(n, 3, "pod devices: 3 container entries, the empty one kept (%s)", err.msg);
    ok(c[0].n == 1 && strcmp(c[0].dev[0].uuid, "GPU-a") == 0 && c[0].dev[0].usedmem == 4000 &&
           c[0].dev[0].usedcores == 30,
       "entry 0 (init container): GPU-a 4000 MiB 30%%");
    is_int(c[1].n, 0, "entry 1: no devices");
    ok(c[2].n == 2 && strcmp(c[2].dev[1].uuid, "GPU-b") == 0 &&
           strcmp(c[2].dev[1].type, "NVIDIA") == 0 && c[2].dev[1].usedmem == 3000,
       "entry 2: GPU-a and GPU-b");
    char *enc = hami_pod_devices_encode(c, (size_t)n);
    is_str(enc, s, "EncodePodSingleDevice bytes");
    free(enc);
    /* DecodeContainerDevices: extra fields are ignored, fewer than 4 refused. */
    n = hami_pod_devices_decode("GPU-a,NVIDIA,100,0,extra,more:;", c, 8, &err);
    ok(n == 1 && c[0].n == 1 && c[0].dev[0].usedmem == 100, "extra fields ignored as HAMi does");
    n = hami_pod_devices_decode("GPU-a,NVIDIA,100:;", c, 8, &err);
    ok(n == -EINVAL, "3 fields refused (%s)", err.msg);
    n = hami_pod_devices_decode("GPU-a,NVIDIA,lots,0:;", c, 8, &err);
    ok(n == -EINVAL && strstr(err.msg, "usedmem") && strstr(err.msg, "lots"),
       "usedmem not a number: named (%s)", err.msg);
}

static void node_lock(void)
{
    struct gs_error err = {0};
    struct hami_lock lk;
    /* GenerateNodeLockKeyByPod writes time.Now().Format(time.RFC3339) in local time: a
     * scheduler in UTC+8 at 2026-12-01 20:00:05 local writes "+08:00". That is 12:00:05Z,
     * unix 1796126405. */
    int r = hami_lock_parse("2026-12-01T20:00:05+08:00,default,train-0", &lk, &err);
    ok(r == 0 && lk.unix_s == 1796126405, "+08:00 lock read to the second (%lld)",
       (long long)lk.unix_s);
    is_str(lk.ns, "default", "lock namespace");
    is_str(lk.pod, "train-0", "lock pod");
    r = hami_lock_parse("2026-12-01T07:30:05-04:30,a,b", &lk, &err);
    ok(r == 0 && lk.unix_s == 1796126405, "-04:30 lock: the same instant");
    r = hami_lock_parse("2026-12-01T12:00:05.123456789Z", &lk, &err);
    ok(r == 0 && lk.unix_s == 1796126405 && lk.ns[0] == '\0',
       "bare RFC 3339 (older HAMi) with fractional seconds");
    r = hami_lock_parse("2026-12-01T12:00:05,a", &lk, &err);
    ok(r == -EINVAL, "two parts refused as ParseNodeLock does (%s)", err.msg);
    r = hami_lock_parse("2026-12-01 12:00:05Z,a,b", &lk, &err);
    ok(r == -EINVAL, "not RFC 3339 refused (%s)", err.msg);
    char v[128];
    hami_lock_value(v, sizeof(v), 1796126405, "ns", "p");
    is_str(v, "2026-12-01T12:00:05Z,ns,p", "our lock value");
    /* HAMI_NODELOCK_EXPIRE: time.ParseDuration. */
    int64_t ns = 0;
    ok(hami_go_duration_parse("1h30m", &ns) == 0 && ns == 5400000000000LL, "1h30m");
    ok(hami_go_duration_parse("90s", &ns) == 0 && ns == 90000000000LL, "90s");
    ok(hami_go_duration_parse("1.5m", &ns) == 0 && ns == 90000000000LL, "1.5m");
    ok(hami_go_duration_parse("300", &ns) == -EINVAL, "300 (no unit) refused");
    setenv(HAMI_ENV_NODELOCK_EXPIRE, "2m", 1);
    is_int(hami_lock_expiry_s(), 120, "HAMI_NODELOCK_EXPIRE=2m: 120 s");
    setenv(HAMI_ENV_NODELOCK_EXPIRE, "soon", 1);
    is_int(hami_lock_expiry_s(), 300, "unparsable: the 5 minute default");
    unsetenv(HAMI_ENV_NODELOCK_EXPIRE);
}

static void reasons(void)
{
    /* GenReason (v2.10.0 pkg/device/common/common.go): "%d/%d %s", sort.Strings, ", ". */
    struct hami_reasons rs = {0};
    hami_reasons_add(&rs, HAMI_REASON_CARD_TYPE_MISMATCH, 1);
    hami_reasons_add(&rs, HAMI_REASON_CARD_INSUFFICIENT_MEM, 1);
    hami_reasons_add(&rs, HAMI_REASON_CARD_TYPE_MISMATCH, 2);
    char buf[256];
    hami_reasons_format(&rs, 4, buf, sizeof(buf));
    is_str(buf, "1/4 CardInsufficientMemory, 3/4 CardTypeMismatch", "GenReason text, sorted");
    /* ParseReason reads it back. */
    struct hami_reasons back;
    is_int(hami_reasons_parse(buf, &back), 2, "ParseReason: 2 reasons");
    ok(back.n == 2 && strcmp(back.r[0].name, "CardInsufficientMemory") == 0 &&
           back.r[0].count == 1 && back.r[1].count == 3,
       "ParseReason: counts per reason");
    is_int(hami_reasons_parse("garbage, 2/2 CardNotHealth", &back), 1,
           "ParseReason skips what does not scan");
    ok(hami_policy_contains("binpack, numa", "numa") && !hami_policy_contains("binpack", "numa") &&
           hami_policy_contains("mutex", "mutex"),
       "PolicyContains on comma lists");
    ok(hami_check_type("a100,h100", NULL, "NVIDIA-A100-SXM4") &&
           !hami_check_type("H100", NULL, "NVIDIA-A100") &&
           !hami_check_type(NULL, "a100", "NVIDIA-A100") && hami_check_type(" ", NULL, "X"),
       "CheckType: case-insensitive substrings, blank = no constraint");
    ok(hami_check_uuid("GPU-a, GPU-b", NULL, "GPU-b") &&
           !hami_check_uuid("GPU-a", NULL, "GPU-ab") && !hami_check_uuid(NULL, "GPU-a", "GPU-a"),
       "CheckUUID: exact ids");
}

int main(void)
{
    tap_plan_auto();
    node_colon();
    node_json();
    pod_devices();
    node_lock();
    reasons();
    return tap_done();
}
