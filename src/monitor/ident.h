/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who a GPU process is, from what the kernel wrote (docs/internals/monitor.md "What the auditor
 * trusts"): its cgroup (/proc/<pid>/cgroup) names the Kubernetes pod and container it runs in,
 * or the cgroup `gpuslice run` made for a standalone slice; /proc/<pid>/status NSpid and
 * /proc/<pid>/ns/pid give its pid inside its own namespace (what libvgpu writes in a region's
 * process slot). A tenant cannot write any of these for another tenant's process; it can write
 * its region's slots, which is why slots never decide whom the auditor judges or kills.
 *
 * The kubelet's cgroup names (pkg/kubelet/cm/cgroup_manager_linux.go, CgroupName.ToSystemd and
 * ToCgroupfs; the container scope from the runtime, e.g. containerd's
 * "cri-containerd-<id>.scope"):
 *   systemd   .../kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/
 *             cri-containerd-<id>.scope   (docker-<id>.scope, crio-<id>.scope)
 *   cgroupfs  .../kubepods/burstable/pod<uid>/<id>   (guaranteed pods: .../kubepods/pod<uid>/<id>)
 * on cgroup v2 ("0::<path>") or any v1 hierarchy; a leading "/.." (the reader in another cgroup
 * namespace) does not matter, the segments are searched.
 */
#ifndef GS_MONITOR_IDENT_H
#define GS_MONITOR_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MON_POD_UID_MAX      64
#define MON_CONTAINER_ID_MAX 128
#define MON_CGROUP_MAX       1024

/* What /proc/<pid>/cgroup says about a process. */
struct mon_cgroup_ident {
    char pod_uid[MON_POD_UID_MAX];           /* "" = not in a Kubernetes pod's cgroup */
    char container_id[MON_CONTAINER_ID_MAX]; /* "" = in the pod's cgroup but no container's */
    char v2_path[MON_CGROUP_MAX];            /* the "0::" line's path; "" = no cgroup v2 line */
};

/* Parse the text of /proc/<pid>/cgroup (pure; any input, never fails): fills *out. */
void mon_cgroup_parse(const char *text, size_t len, struct mon_cgroup_ident *out);

/* A process as the auditor sees it. */
struct mon_proc_ident {
    int32_t pid;   /* in the monitor's pid namespace (the host's: NVML's) */
    int32_t inner; /* in its own innermost pid namespace (NSpid's last field) */
    uint64_t pidns, start_time;
    bool has_cgroup; /* /proc/<pid>/cgroup was read */
    struct mon_cgroup_ident cg;
};

/* Read `pid`'s identity under `proc_root` (/proc; tests give a tree of their own). Fields that
 * cannot be read stay empty/0. */
void mon_proc_identify(const char *proc_root, int32_t pid, struct mon_proc_ident *out);

/* The runtime's container ID in a pod's status.containerStatuses[].containerID
 * ("containerd://<id>", "cri-o://<id>", "docker://<id>") -> "<id>"; "" when malformed. */
void mon_container_id(const char *status_id, char *buf, size_t len);

/* Is the cgroup v2 path `proc_path` (from "0::", relative to the hierarchy's root) the cgroup
 * `recorded` (an absolute path under `cgroup_root`, as `gpuslice run` records it) or below it? */
bool mon_cgroup_within(const char *cgroup_root, const char *recorded, const char *proc_path);

/* The cgroup v2 hierarchy's mount point in this process's mount namespace (the first cgroup2
 * entry of /proc/self/mountinfo, as `gpuslice run` finds it in src/cli/members.c);
 * "/sys/fs/cgroup" when none is listed. */
void mon_cgroup2_mount(char *buf, size_t len);

#endif /* GS_MONITOR_IDENT_H */
