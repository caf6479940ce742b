/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auditor: libvgpu's accounting checked from outside the process (docs/internals/monitor.md
 * "The auditor", "What the auditor trusts and why"). Every refresh, for each GPU, NVML's
 * per-process memory (nvmlDeviceGetComputeRunningProcesses_v3) is matched to claims by what the
 * tenant cannot write: the process's cgroup (ident.h: pod UID + container ID) against the pods
 * and containers the API server lists for the claim, or the cgroup `gpuslice run` made for a
 * slice. Region process slots are only a hint: one naming a process outside its claim is counted
 * as forged and ignored. A process holding more physical memory on a device than its claim's
 * limit there is a breach: exported as metrics, logged once (and, with Kubernetes, an Event on
 * the breaching Pod), and with the kill policy (--audit-kill, HAMi's ACTIVE_OOM_KILLER meaning;
 * off by default) killed with SIGKILL when it is proven to be in the claim's container.
 * Runs on the refresher thread; the report is read by scrapes under the catalog lock.
 */
#ifndef GS_MONITOR_AUDIT_H
#define GS_MONITOR_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/discovery.h"

#define MON_AUDIT_MAX 256 /* breaches reported at once */

struct mon_breach {
    int32_t pid; /* in the monitor's pid namespace, as NVML reports it */
    uint64_t start_time;
    char claim_ns[256], claim_name[256], claim_uid[64];
    /* The pod and container the process runs in (its cgroup against the API server's pods);
     * empty when not known (standalone, or tied through a region slot alone). */
    char pod_ns[256], pod_name[256], pod_uid[64], container[256];
    char uuid[GPU_STR_MAX];
    uint64_t used, limit; /* bytes */
    const char *identity; /* how it was tied to the claim: container, pod, cgroup, slot */
    bool proven;          /* in the claim's container (or the slice's cgroup): may be killed */
    bool killed;
};

struct mon_audit {
    bool available; /* NVML answered per-process memory on every GPU at the last refresh */
    size_t n;
    struct mon_breach b[MON_AUDIT_MAX]; /* current breaches */
    uint64_t breaches_total, kills_total;
};

struct mon_catalog;
struct gpu_nvml;

/* One audit round (refresher thread); nv NULL = NVML not open (audit unavailable). */
void mon_audit_run(struct mon_catalog *c, struct gpu_nvml *nv);

#endif /* GS_MONITOR_AUDIT_H */
