/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Other vendors' legacy resources in the same webhook, from a table (not code): HAMi-DRA's
 * device config file (`--device-config-file`, the `nvidia`/`hygon`/`ascend` sections and the
 * `vendors` list its chart's ConfigMap writes, pkg/config/dra_device.go) read as it is, with
 * HAMi-DRA's defaults for what it leaves out. Each entry turns `count`/`mem` (MiB)/`cores` of a
 * container into one claim request of the vendor's DeviceClass. The node side (kubelet plugin,
 * libvgpu) is NVIDIA only: these claims are for the vendors' own DRA drivers.
 */
#ifndef GS_WEBHOOK_VENDOR_H
#define GS_WEBHOOK_VENDOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define WH_VENDORS_MAX 32
#define WH_VNAME_MAX   128

struct wh_vendor {
    char vendor[16];          /* "hygon", "ascend" */
    char suffix[48];          /* pod claim "<suffix>-<container>" (HAMi-DRA ClaimNameSuffix) */
    char count[WH_VNAME_MAX]; /* number of devices */
    char mem[WH_VNAME_MAX];   /* MiB ("" = none) */
    char cores[WH_VNAME_MAX]; /* percent ("" = none) */
    char device_class[WH_VNAME_MAX];
    char driver[WH_VNAME_MAX]; /* attribute domain */
    char request[32];          /* request name: hcu, npu */
    char device_type[32];      /* attribute `type` of the devices (TypeSelectorExpression) */
    char use_uuid[WH_VNAME_MAX], nouse_uuid[WH_VNAME_MAX];
    char use_type[WH_VNAME_MAX], nouse_type[WH_VNAME_MAX];
    int64_t reference_cu; /* hygon: compute units of the reference device (0 = not configured) */
    bool cores_absolute;  /* cores become units through reference_cu (hygon) */
    char runtime_class[WH_VNAME_MAX];
};

/* The nvidia section: a field left "" (or default_gpu -1) keeps the webhook's own option. */
struct wh_nvidia_section {
    char count[WH_VNAME_MAX], mem[WH_VNAME_MAX], mem_pct[WH_VNAME_MAX], cores[WH_VNAME_MAX];
    char device_class[WH_VNAME_MAX], driver[WH_VNAME_MAX], runtime_class[WH_VNAME_MAX];
    int64_t default_gpu;
};

struct wh_vendors {
    bool nvidia; /* NVIDIA translated (listed in vendors, or no list at all) */
    struct wh_nvidia_section nv;
    size_t n;
    struct wh_vendor v[WH_VENDORS_MAX];
};

/*
 * The table for `device_config` (a parsed device-config.yaml; NULL = none) and `vendors_csv`
 * ("nvidia,hygon,ascend"; NULL or "" = the file's `vendors`, else nvidia only). Unknown
 * sections (cambricon, metax, vnpus, ...) are ignored as HAMi-DRA does. -EINVAL with a message
 * naming the field (an unknown vendor, a resource name claimed twice, a wrong type).
 */
int wh_vendors_build(const json_t *device_config, const char *vendors_csv, struct wh_vendors *out,
                     struct gs_error *err);
/* The same from a YAML file. */
int wh_vendors_load(const char *path, const char *vendors_csv, struct wh_vendors *out,
                    struct gs_error *err);

/* Is `key` the count, memory or cores resource of any vendor of the table? */
bool wh_vendors_has_name(const struct wh_vendors *t, const char *key);

/* The claim spec of one vendor request: count, memory (MiB -> bytes), cores (percent, or units
 * through reference_cu, rounded up, at least 1), the type selector and `selectors`. */
int wh_vendor_claim_spec(const struct wh_vendor *v, int64_t count, bool has_mem, int64_t mem_mib,
                         bool has_cores, int64_t cores, const json_t *selectors, const char *what,
                         json_t **out, struct gs_error *err);

#endif /* GS_WEBHOOK_VENDOR_H */
