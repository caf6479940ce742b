/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI spec per claim (https://github.com/cncf-tags/container-device-interface, spec 0.3.0+).
 *
 * File <cdi-root>/<kind-vendor>-claim_<claimUID>.json, kind "k8s.<driver>/claim", one CDI device
 * per claim device named "<claimUID>-<device>". Each device's containerEdits:
 *   env    GPUSLICE_LIMITS_DIR=/etc/gpuslice/limits.d
 *          CUDA_DEVICE_MEMORY_LIMIT_<i>=<MiB>m, CUDA_DEVICE_SM_LIMIT_<i>=<percent>
 *          (i = rank of the device by minor number within the claim; left out when uncapped)
 *   mounts <host>/libvgpu.so            -> /usr/local/vgpu/libvgpu.so (ro)
 *          <host>/ld.so.preload         -> /etc/ld.so.preload (ro)
 *          <host>/claims/<uid>/<uid>.limits -> /etc/gpuslice/limits.d/<uid>.limits (ro)
 *          <host>/claims/<uid>/region   -> /var/run/gpuslice/claims/<uid> (rw)
 *   GPU selection: volume-mounts mode: /dev/null -> /var/run/nvidia-container-devices/<UUID>;
 *                  device-nodes mode: /dev/nvidia<minor>, /dev/nvidiactl, /dev/nvidia-uvm,
 *                  /dev/nvidia-uvm-tools.
 * cdiVersion: the minimum the fields need: "0.5.0" when a device name starts with a digit (a UID
 * can), else "0.3.0".
 */
#ifndef GS_PLUGIN_CDI_H
#define GS_PLUGIN_CDI_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "gpu/claim.h"

#define CDI_CONTAINER_LIB        "/usr/local/vgpu/libvgpu.so"
#define CDI_CONTAINER_PRELOAD    "/etc/ld.so.preload"
#define CDI_CONTAINER_REGION_DIR "/var/run/gpuslice/claims"
#define CDI_NVIDIA_DEVICES_DIR   "/var/run/nvidia-container-devices"

enum cdi_gpu_selection {
    CDI_SELECT_VOLUME_MOUNTS = 0,
    CDI_SELECT_DEVICE_NODES = 1,
    CDI_SELECT_NONE = 2,
};

struct cdi_config {
    const char *driver;   /* "hami-core-gpu.project-hami.io" */
    const char *cdi_root; /* "/var/run/cdi" */
    const char *host_dir; /* "/usr/local/vgpu" */
    enum cdi_gpu_selection selection;
};

/* "k8s.<driver>/claim" */
void cdi_kind(const struct cdi_config *c, char *buf, size_t len);
/* "k8s.<driver>/claim=<uid>-<device>" */
void cdi_device_id(const struct cdi_config *c, const char *uid, const char *device, char *buf,
                   size_t len);
/* Path of the claim's spec file. */
void cdi_spec_path(const struct cdi_config *c, const char *uid, char *buf, size_t len);
/* Host paths of the claim's files. */
void cdi_claim_dir(const struct cdi_config *c, const char *uid, char *buf, size_t len);
void cdi_limits_host_path(const struct cdi_config *c, const char *uid, char *buf, size_t len);
void cdi_region_host_dir(const struct cdi_config *c, const char *uid, char *buf, size_t len);

json_t *cdi_spec_build(const struct cdi_config *c, const struct claim_plan *p);
int cdi_spec_write(const struct cdi_config *c, const struct claim_plan *p, struct gs_error *err);
int cdi_spec_remove(const struct cdi_config *c, const char *uid, struct gs_error *err);

/* If `filename` (an entry of cdi_root) is one of our claim specs, copy its claim UID to uid. */
int cdi_spec_uid_from_filename(const struct cdi_config *c, const char *filename, char *uid,
                               size_t len);

#endif /* GS_PLUGIN_CDI_H */
