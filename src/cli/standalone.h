/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Standalone mode (no Kubernetes): the pieces `gpuslice run`, `ls` and `top` share.
 *
 * The machine is described exactly as the kubelet plugin publishes it (src/plugin: NVML discovery,
 * ResourceSlice devices `hami-gpu-<minor>` with `cores`/`memory` consumable capacity) and slices
 * are ResourceClaims allocated by src/alloc against the ledger of live slices (ledger.h). A slice's
 * directory <state>/slices/<uid>/ holds limits/<uid>.limits (the format libvgpu reads) and the
 * shared region file `region`.
 */
#ifndef GS_CLI_STANDALONE_H
#define GS_CLI_STANDALONE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "gpu/claim.h"
#include "gpu/discovery.h"

#define SA_DRIVER       "hami-core-gpu.project-hami.io"
#define SA_DEVICE_CLASS "hami-core-gpu.project-hami.io"
#define SA_NAMESPACE    "standalone"
#define SA_REQUEST      "gpu"
#define SA_STATE_ENV    "GPUSLICE_STATE_DIR"
#define SA_PATH_MAX     4096

struct sa_env {
    char state_dir[SA_PATH_MAX];
    char vgpu_lib[SA_PATH_MAX]; /* libvgpu.so to preload */
    char sim_dir[SA_PATH_MAX];  /* directory of gpusim's libcuda.so.1 + libnvidia-ml.so.1 */
    char node[256];             /* this machine's name (the pool) */
    bool sim;                   /* running on gpusim */
};

/* What `gpuslice run` asks for. memory/cores < 0 = not requested (the device default applies). */
struct sa_request {
    int64_t memory; /* bytes */
    int64_t cores;  /* percent */
    int64_t gpus;
    const char *gpu_type; /* case-insensitive substring of productName, or NULL */
    const char *name;
};

/*
 * Fill paths: state dir from `state_dir` (if non-empty), $GPUSLICE_STATE_DIR, /var/lib/gpuslice as
 * root, else $XDG_STATE_HOME/gpuslice or ~/.local/state/gpuslice; libvgpu and gpusim next to the
 * binary (../lib/libvgpu.so, ../lib/gpusim), overridable with $GPUSLICE_VGPU_LIB and
 * $GPUSLICE_SIM_DIR. Creates the state dir.
 */
int sa_env_init(struct sa_env *env, const char *state_dir, bool sim, struct gs_error *err);

/*
 * Make this process use gpusim: if LD_LIBRARY_PATH does not start with env->sim_dir, set it and
 * re-execute /proc/self/exe with the same argv (the dynamic loader reads LD_LIBRARY_PATH only at
 * start). Returns only on failure.
 */
int sa_reexec_with_sim(const struct sa_env *env, char **argv, struct gs_error *err);

/* Discover GPUs (NVML) and describe them as the plugin publishes them: *slice (ResourceSlice) and
 * *cls (the DeviceClass). -ENODEV with a message saying what to do when there is no GPU/driver. */
int sa_discover(const struct sa_env *env, struct gpu_inventory *inv, json_t **slice, json_t **cls,
                struct gs_error *err);

/* Build the ResourceClaim of a request (one request "gpu", ExactCount, capacity requests and a
 * productName selector for gpu_type), with a fresh UID. */
int sa_build_claim(const struct sa_request *r, json_t **claim, struct gs_error *err);

/* Validate a request: cores 0..100, memory > 0, gpus 1..32; err names the flag and the value. */
int sa_validate_request(const struct sa_request *r, struct gs_error *err);

/* <state>/slices/<uid> */
void sa_slice_dir(const struct sa_env *env, const char *uid, char *buf, size_t len);

/*
 * Write the slice's directory for an allocated claim (claim with status.allocation): the limits
 * file (GPU UUIDs, memory and cores from consumedCapacity) in <dir>/limits/ and the region path
 * <dir>/region. Fills *plan (devices, UUIDs) for the caller.
 */
int sa_write_slice(const struct sa_env *env, const json_t *claim, const struct gpu_inventory *inv,
                   struct claim_plan *plan, struct gs_error *err);

struct ledger;

/*
 * The state of this machine as `gpuslice ls -o json` prints it (stable, documented in
 * docs/internals/standalone.md): {"node", "gpus": [...], "slices": [...]}. `inv` may be NULL
 * (no GPU discovery): GPUs are then listed from the slices alone, without capacity.
 */
int sa_snapshot(const struct sa_env *env, const struct gpu_inventory *inv, struct ledger *l,
                json_t **out, struct gs_error *err);

/* Random RFC 4122 version-4 UUID (36 chars + NUL). */
void sa_uuid(char out[37]);

#endif /* GS_CLI_STANDALONE_H */
