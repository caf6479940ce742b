/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HAMi's annotations, in HAMi's encodings (see docs/internals/legacy.md). Pure functions.
 *
 * Node "hami.io/node-nvidia-register": the node's GPUs. Current encoding (HAMi >= 2.5) is a JSON
 * array; the older colon-separated one is still read:
 *   [{"id":"GPU-8c…","index":0,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4",
 *     "numa":0,"mode":"hami-core","health":true}]
 *   GPU-8c…,10,15360,100,NVIDIA-Tesla T4,0,true[,hami-core,0]:
 * Pod "hami.io/vgpu-devices-allocated" (and "-to-allocate"): per container the devices
 * "<uuid>,<type>,<MiB>,<cores>:" one after another, then ";" — every container of
 * spec.containers gets its ";", one without GPUs an empty entry:
 *   GPU-8c…,NVIDIA,8000,10:;;
 */
#ifndef GS_EXTENDER_HAMI_H
#define GS_EXTENDER_HAMI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define HAMI_ANN_NODE_REGISTER  "hami.io/node-nvidia-register"
#define HAMI_ANN_NODE_HANDSHAKE "hami.io/node-handshake"
#define HAMI_ANN_NODE_LOCK      "hami.io/mutex.lock"
#define HAMI_ANN_TO_ALLOCATE    "hami.io/vgpu-devices-to-allocate"
#define HAMI_ANN_ALLOCATED      "hami.io/vgpu-devices-allocated"
#define HAMI_ANN_NODE           "hami.io/vgpu-node"
#define HAMI_ANN_TIME           "hami.io/vgpu-time"
#define HAMI_ANN_BIND_PHASE     "hami.io/bind-phase"
#define HAMI_ANN_BIND_TIME      "hami.io/bind-time"
#define HAMI_ANN_NODE_POLICY    "hami.io/node-scheduler-policy"
#define HAMI_ANN_GPU_POLICY     "hami.io/gpu-scheduler-policy"
#define HAMI_BIND_ALLOCATING    "allocating"
#define HAMI_BIND_SUCCESS       "success"
#define HAMI_BIND_FAILED        "failed"
/* The device type written into pod annotations for NVIDIA GPUs. */
#define HAMI_DEVICE_TYPE "NVIDIA"

#define HAMI_ID_MAX   128
#define HAMI_TYPE_MAX 128
/* Devices one node annotation may list; GPUs one container may hold. */
#define HAMI_MAX_NODE_DEVICES 64
#define HAMI_MAX_CTR_DEVICES  32
/* Longest annotation value accepted (Kubernetes allows 256 KiB for all annotations). */
#define HAMI_ANN_MAX (256 * 1024)

struct hami_node_device {
    char id[HAMI_ID_MAX];     /* "GPU-<uuid>" */
    char type[HAMI_TYPE_MAX]; /* "NVIDIA-Tesla T4" */
    char mode[32];            /* "hami-core" */
    int index;                /* GPU index on the node */
    int count;                /* split count: tasks the GPU takes at most */
    int64_t devmem;           /* MiB */
    int devcore;              /* percent (100 = the whole GPU) */
    int numa;
    bool health;
};

/* Decode the node annotation (JSON or the colon form). Returns the number of devices (<= max)
 * or -EINVAL with err naming the entry and field. */
int hami_node_devices_decode(const char *s, struct hami_node_device *out, size_t max,
                             struct gs_error *err);
/* The JSON encoding (new string, malloc'd), or NULL on ENOMEM. */
char *hami_node_devices_encode(const struct hami_node_device *devs, size_t n);

struct hami_ctr_device {
    char uuid[HAMI_ID_MAX];
    char type[32];
    int64_t usedmem; /* MiB */
    int64_t usedcores;
};

struct hami_ctr_devices {
    size_t n;
    struct hami_ctr_device dev[HAMI_MAX_CTR_DEVICES];
};

/* Decode a pod annotation into up to `max_ctrs` containers (entries past the last ";" with
 * devices are kept in order, empty ones count). Returns the number of container entries or
 * -EINVAL naming the container entry and field. */
int hami_pod_devices_decode(const char *s, struct hami_ctr_devices *out, size_t max_ctrs,
                            struct gs_error *err);
/* Encode n containers (new string), or NULL on ENOMEM. */
char *hami_pod_devices_encode(const struct hami_ctr_devices *ctrs, size_t n);

/* Node lock value "<RFC 3339 UTC>,<namespace>,<pod>" (HAMi's format) into buf. */
void hami_lock_value(char *buf, size_t len, int64_t unix_s, const char *ns, const char *pod);
/* Time of a lock value (either HAMi form: bare RFC 3339 or with ",ns,pod"), -EINVAL if none. */
int hami_lock_time(const char *value, int64_t *unix_s);

#endif /* GS_EXTENDER_HAMI_H */
