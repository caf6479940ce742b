/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HAMi codec: the values of HAMi's annotations as HAMi writes and reads them (names in
 * include/gpuslice/hami.h; docs/internals/legacy.md, "Annotation formats"). Pure functions, no
 * I/O but getenv in hami_lock_expiry_s. Each coder cites the HAMi Go function it follows
 * (Project-HAMi/HAMi v2.6.0 pkg/util/util.go; v2.10.0 pkg/device/devices.go,
 * pkg/util/nodelock/nodelock.go, pkg/device/common/common.go, pkg/util/util.go).
 *
 * Node "hami.io/node-nvidia-register":
 *   JSON (MarshalNodeDevices, HAMi >= 2.5): [{"id":"GPU-…","count":10,"devmem":15360,
 *     "devcore":100,"type":"NVIDIA-Tesla T4","mode":"hami-core","health":true}] — every field is
 *     `omitempty`: index 0, numa 0 and health false are absent.
 *   colon (EncodeNodeDevices, HAMi <= 2.4): "id,count,devmem,devcore,type,numa,health,index,mode:"
 *     per device; 7-field entries (no index, mode) are index 0, mode hami-core.
 * Pod "hami.io/vgpu-devices-allocated" / "-to-allocate" (EncodePodSingleDevice): per container,
 *   init containers first then spec.containers, "<uuid>,<type>,<MiB>,<cores>:" per device, then
 *   ";" — a container without devices is an empty entry.
 * Node lock "hami.io/mutex.lock" (GenerateNodeLockKeyByPod): "<RFC 3339>,<namespace>,<pod>",
 *   or a bare RFC 3339 time (older HAMi).
 * Filter reasons (GenReason): "1/4 CardInsufficientMemory, 3/4 CardTypeMismatch".
 */
#ifndef GS_HAMI_HAMI_H
#define GS_HAMI_HAMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gpuslice/hami.h"

#define HAMI_ID_MAX   128
#define HAMI_TYPE_MAX 128
/* Devices one node annotation may list; GPUs one container may hold. */
#define HAMI_MAX_NODE_DEVICES 64
#define HAMI_MAX_CTR_DEVICES  32
/* Longest annotation value accepted (Kubernetes allows 256 KiB for all annotations). */
#define HAMI_ANN_MAX (256 * 1024)

/* Go's strconv.ParseBool over s[0..n): "1 t T TRUE true True" / "0 f F FALSE false False". */
int hami_parse_bool(const char *s, size_t n, bool *out);

/* util.PolicyContains: `policy` as a comma list ("binpack,numa"), items trimmed. */
bool hami_policy_contains(const char *policy, const char *name);

/* CheckUUID: `use` (nvidia.com/use-gpuuuid) and `nouse` are comma lists of exact ids; empty or
 * NULL means no constraint. */
bool hami_check_uuid(const char *use, const char *nouse, const char *id);
/* CheckType: items are case-insensitive substrings of the card type ("NVIDIA-Tesla T4"). */
bool hami_check_type(const char *use, const char *nouse, const char *type);

struct hami_node_device {
    char id[HAMI_ID_MAX];     /* "GPU-<uuid>" */
    char type[HAMI_TYPE_MAX]; /* "NVIDIA-Tesla T4", "NVIDIA H100 80GB HBM3" */
    char mode[32];            /* "hami-core", "mig", "mps"; "" when absent from JSON */
    uint32_t index;           /* GPU index on the node */
    int32_t count;            /* split count: tasks the GPU takes at most */
    int32_t devmem;           /* MiB, after deviceMemoryScaling */
    int32_t devcore;          /* percent after deviceCoreScaling (100 = one whole GPU) */
    int64_t numa;
    bool health;
};

/* Decode the node annotation (JSON when it starts with '[', else the colon form). Returns the
 * number of devices (<= max) or -EINVAL with err naming the device and field. */
int hami_node_devices_decode(const char *s, struct hami_node_device *out, size_t max,
                             struct gs_error *err);
/* MarshalNodeDevices: JSON, fields in HAMi's order, zero values omitted (new string) or NULL. */
char *hami_node_devices_encode(const struct hami_node_device *devs, size_t n);
/* EncodeNodeDevices: the 9-field colon form (new string) or NULL. */
char *hami_node_devices_encode_colon(const struct hami_node_device *devs, size_t n);

/* The "type" of a GPU whose NVML name is `model` (register.go): "NVIDIA-<model>" unless the
 * model already starts with "NVIDIA". */
void hami_device_type(const char *model, char *buf, size_t len);
/* The product of a HAMi type: the type without a leading "NVIDIA-" (points into type). */
const char *hami_type_product(const char *type);

struct hami_ctr_device {
    char uuid[HAMI_ID_MAX];
    char type[32];
    int32_t usedmem; /* MiB */
    int32_t usedcores;
};

struct hami_ctr_devices {
    size_t n;
    struct hami_ctr_device dev[HAMI_MAX_CTR_DEVICES];
};

/* DecodePodDevices (v2.10: empty entries kept, so entry i is container i, init containers
 * first). Returns the number of container entries or -EINVAL naming the entry and field. */
int hami_pod_devices_decode(const char *s, struct hami_ctr_devices *out, size_t max_ctrs,
                            struct gs_error *err);
/* EncodePodSingleDevice: n containers (new string), or NULL on ENOMEM. */
char *hami_pod_devices_encode(const struct hami_ctr_devices *ctrs, size_t n);

struct hami_lock {
    int64_t unix_s; /* the lock's time (seconds since the epoch, zone offset applied) */
    char ns[254];   /* "" for a bare-time lock */
    char pod[254];
};

/* Node lock value "<RFC 3339 UTC>,<namespace>,<pod>" (GenerateNodeLockKeyByPod) into buf. */
void hami_lock_value(char *buf, size_t len, int64_t unix_s, const char *ns, const char *pod);
/* ParseNodeLock: either form, RFC 3339 with "Z" or a "+hh:mm"/"-hh:mm" offset and optional
 * fractional seconds. -EINVAL naming what is wrong. */
int hami_lock_parse(const char *value, struct hami_lock *out, struct gs_error *err);
/* Go's time.Parse(time.RFC3339, s) to unix seconds (fraction dropped). */
int hami_rfc3339_parse(const char *s, size_t n, int64_t *unix_s);
/* Go's time.ParseDuration ("300s", "5m", "1h30m", "1.5h", "250ms") to nanoseconds. */
int hami_go_duration_parse(const char *s, int64_t *ns);
/* Seconds a lock holds (nodelock.setupNodeLockTimeout): HAMI_NODELOCK_EXPIRE when it parses,
 * else 300. */
int64_t hami_lock_expiry_s(void);

/* Filter failure reasons of one node, per card (HAMi's reason map). */
#define HAMI_REASONS_MAX 24
struct hami_reasons {
    size_t n;
    struct {
        char name[48];
        int count;
    } r[HAMI_REASONS_MAX];
};
/* reason[name] += count (a reason past HAMI_REASONS_MAX is dropped). */
void hami_reasons_add(struct hami_reasons *rs, const char *name, int count);
/* reason[name] = count. */
void hami_reasons_set(struct hami_reasons *rs, const char *name, int count);
/* GenReason: "<count>/<cards> <name>" per reason, sorted as strings, joined by ", ". Returns
 * the length written (truncated to len - 1). */
size_t hami_reasons_format(const struct hami_reasons *rs, int cards, char *buf, size_t len);
/* ParseReason: entries that do not scan are skipped. Returns the number of reasons. */
int hami_reasons_parse(const char *s, struct hami_reasons *out);

#endif /* GS_HAMI_HAMI_H */
