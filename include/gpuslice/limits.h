/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contract: the per-claim limits file.
 *
 * Writers: the kubelet plugin (NodePrepareResources) and `gpuslice run` (standalone mode).
 * Reader: libvgpu.so, at start-up, inside the container. Parser/writer: src/config/limits.{c,h}.
 *
 * One file per claim, `<dir>/<claimUID>.limits`, where <dir> is GS_LIMITS_DIR_DEFAULT (mounted
 * read-only into the container) whenever it holds a limits file, else $GPUSLICE_LIMITS_DIR (hosts,
 * `gpuslice run`, tests): a process in a claim's container cannot point libvgpu elsewhere
 * (docs/internals/vgpu.md, "Where the limits are read from"). Files whose name does not end in
 * ".limits" or starts with '.' (writers' temporary files) are ignored. libvgpu merges every file of
 * the directory; when the directory holds at least one limits file it is authoritative: the
 * HAMi-style environment can only tighten it, never loosen it.
 *
 * Format, version 1 (UTF-8 text, '\n' line ends, at most GS_LIMITS_FILE_MAX bytes):
 *
 *   # gpuslice limits v1
 *   version 1
 *   claim 3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01
 *   region /var/run/gpuslice/claims/3f0c2a7e-0d4b-4d8e-9c1e-5b6a7f8e9d01/region
 *   device GPU-0b9f2c3e-aaaa-bbbb-cccc-000000000000 memory=4294967296 cores=30
 *
 *  - '#' starts a comment line; blank lines are ignored; tokens are separated by spaces or tabs.
 *  - `version N`: required, before any other directive; only GS_LIMITS_FORMAT_VERSION is read.
 *  - `claim NAME`: required, once; one token of printable characters (the claim UID or a name).
 *  - `region PATH`: optional, once; the rest of the line, an absolute path to the claim's shared
 *    region (include/gpuslice/shared_region.h) as seen inside the container. Without it the
 *    claim's processes share the region named by CUDA_DEVICE_MEMORY_SHARED_CACHE or the default.
 *  - `device UUID memory=BYTES cores=PERCENT`: one line per granted GPU, at most
 *    GS_LIMITS_MAX_DEVICES, each UUID once. UUID is the NVML/CUDA form "GPU-xxxxxxxx-...".
 *    memory: decimal bytes, 0 = no memory cap. cores: 0..100, 0 or 100 = no compute cap.
 *    Both keys are required, in any order; unknown keys are errors.
 *
 * Malformed files: the parser reports the first error (line number, field and value) and leaves the
 * SAFEST reading in its output: every device it could name gets memory GS_LIMITS_MEMORY_REFUSE
 * (no allocation can succeed) and cores GS_LIMITS_CORES_REFUSE; if a device line could not be
 * attributed to a UUID, `all_devices` is set and the safe reading applies to every GPU. A broken
 * file never reads as "unlimited".
 */
#ifndef GS_GPUSLICE_LIMITS_H
#define GS_GPUSLICE_LIMITS_H

#include <assert.h>

#define GS_LIMITS_FORMAT_VERSION 1
#define GS_LIMITS_HEADER         "# gpuslice limits v1"
#define GS_LIMITS_DIR_DEFAULT    "/etc/gpuslice/limits.d"
#define GS_LIMITS_ENV            "GPUSLICE_LIMITS_DIR"
#define GS_LIMITS_SUFFIX         ".limits"

#define GS_LIMITS_MAX_DEVICES 32
#define GS_LIMITS_UUID_MAX    96   /* bytes including NUL */
#define GS_LIMITS_CLAIM_MAX   256  /* bytes including NUL */
#define GS_LIMITS_PATH_MAX    4096 /* bytes including NUL */
#define GS_LIMITS_FILE_MAX    65536
#define GS_LIMITS_LINE_MAX    8192

/* The safe reading of a malformed file: memory limit of 1 byte (every allocation is refused) and
 * the smallest compute share. */
#define GS_LIMITS_MEMORY_REFUSE 1ULL
#define GS_LIMITS_CORES_REFUSE  1U

static_assert(GS_LIMITS_LINE_MAX > GS_LIMITS_PATH_MAX + 16, "a region line must fit in a line");
static_assert(GS_LIMITS_FILE_MAX >= GS_LIMITS_MAX_DEVICES * 256, "room for every device line");

#endif /* GS_GPUSLICE_LIMITS_H */
