/* SPDX-License-Identifier: Apache-2.0 */
/* Process identity from /proc/<pid>/cgroup (the kubelet's systemd and cgroupfs names, cgroup v1
 * and v2), container IDs from pod status, the standalone slice's cgroup. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor/ident.h"
#include "tap.h"

#define UID  "7a1c0de0-0000-4000-8000-000000000002"
#define UIDU "7a1c0de0_0000_4000_8000_000000000002"
#define CID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct mon_cgroup_ident parse(const char *text)
{
    struct mon_cgroup_ident id;
    mon_cgroup_parse(text, strlen(text), &id);
    return id;
}

static void is_ident(const char *text, const char *uid, const char *cid, const char *name)
{
    struct mon_cgroup_ident id = parse(text);
    ok(strcmp(id.pod_uid, uid) == 0 && strcmp(id.container_id, cid) == 0, "%s", name);
    if (strcmp(id.pod_uid, uid) != 0 || strcmp(id.container_id, cid) != 0)
        diag("got pod_uid=\"%s\" container_id=\"%s\"", id.pod_uid, id.container_id);
}

int main(void)
{
    tap_plan_auto();
    is_ident("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
             ".slice/cri-containerd-" CID ".scope\n",
             UID, CID, "cgroup v2, systemd driver, burstable, containerd scope");
    is_ident("0::/kubepods.slice/kubepods-pod" UIDU ".slice/docker-" CID ".scope\n", UID, CID,
             "systemd driver, guaranteed pod, docker scope");
    is_ident("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
             ".slice/crio-" CID ".scope\n",
             UID, CID, "cri-o scope");
    is_ident("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
             ".slice/crio-conmon-" CID ".scope\n",
             UID, "", "cri-o's conmon is in the pod, in no container");
    is_ident("12:memory:/kubepods/burstable/pod" UID "/" CID "\n11:cpu,cpuacct:/kubepods/"
             "burstable/pod" UID "/" CID "\n0::/\n",
             UID, CID, "cgroup v1, cgroupfs driver");
    is_ident("4:memory:/kubepods/pod" UID "/" CID "\n", UID, CID, "cgroupfs, guaranteed pod");
    is_ident("0::/../../kubepods/besteffort/pod" UID "/" CID "\n", UID, CID,
             "read from another cgroup namespace (leading /..)");
    is_ident("0::/kubepods/burstable/pod" UID "\n", UID, "", "the pod's cgroup, no container");
    is_ident("0::/user.slice/pod" UID "/" CID "\n", "", "", "a pod-like name outside kubepods");
    is_ident("0::/kubepods/burstable/pod7a1c0de0-0000-4000-8000-00000000000\n", "", "",
             "a UID one character short");
    is_ident("0::/kubepods/burstable/podzzzzzzzz-0000-4000-8000-000000000002/" CID "\n", "", "",
             "a UID that is not hex");
    is_ident("0::/kubepods/burstable/pod" UID "/abc\n", UID, "", "a container ID too short");
    is_ident("0::/kubepods/burstable/pod" UID "/" CID "/x\n", UID, CID,
             "a sub-cgroup of the container");
    is_ident("garbage\n::\n:::\n0:\n", "", "", "garbage lines");
    is_ident("", "", "", "empty file");
    struct mon_cgroup_ident id = parse("1:name=systemd:/a\n0::/user.slice/gpuslice-x\n");
    ok(strcmp(id.v2_path, "/user.slice/gpuslice-x") == 0 && !id.pod_uid[0],
       "the cgroup v2 path is kept");
    id = parse("0::/kubepods/pod" UID "/" CID);
    ok(strcmp(id.pod_uid, UID) == 0 && strcmp(id.container_id, CID) == 0, "no final newline");
    /* Upper case in the UID (never written by the kubelet) is normalised. */
    id = parse("0::/kubepods/pod7A1C0DE0-0000-4000-8000-000000000002/" CID "\n");
    ok(strcmp(id.pod_uid, UID) == 0, "UID compared in lower case");

    char buf[MON_CONTAINER_ID_MAX];
    mon_container_id("containerd://" CID, buf, sizeof(buf));
    ok(strcmp(buf, CID) == 0, "containerd:// status ID");
    mon_container_id("cri-o://" CID, buf, sizeof(buf));
    ok(strcmp(buf, CID) == 0, "cri-o:// status ID");
    mon_container_id(CID, buf, sizeof(buf));
    ok(buf[0] == '\0', "no scheme: none");
    mon_container_id("containerd://../x", buf, sizeof(buf));
    ok(buf[0] == '\0', "not an ID: none");
    mon_container_id(NULL, buf, sizeof(buf));
    ok(buf[0] == '\0', "NULL: none");

    ok(mon_cgroup_within("/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/gpuslice-u1",
                         "/user.slice/gpuslice-u1"),
       "standalone: the slice's cgroup itself");
    ok(mon_cgroup_within("/sys/fs/cgroup/", "/sys/fs/cgroup/user.slice/gpuslice-u1",
                         "/user.slice/gpuslice-u1/child"),
       "a child cgroup of the slice's");
    ok(!mon_cgroup_within("/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/gpuslice-u1",
                          "/user.slice/gpuslice-u10"),
       "a sibling whose name starts the same is not");
    ok(!mon_cgroup_within("/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/gpuslice-u1", "/user.slice"),
       "the parent is not");
    ok(!mon_cgroup_within("/sys/fs/cgroup", "/elsewhere/user.slice/gpuslice-u1",
                          "/user.slice/gpuslice-u1"),
       "a recorded path outside the cgroup root is not");
    ok(!mon_cgroup_within("/sys/fs/cgroup", "", "/"), "no recorded cgroup: nothing is in it");
    ok(!mon_cgroup_within("/sys/fs/cgroup", "/sys/fs/cgroup/a", "/a/../b"), "no .. paths");

    /* mon_proc_identify over a /proc tree of our own. */
    char root[] = "/tmp/gs-ident-XXXXXX";
    ok(mkdtemp(root) != NULL, "temp proc root");
    char path[512];
    snprintf(path, sizeof(path), "%s/%d", root, (int)getpid());
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%d/cgroup", root, (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("0::/kubepods/besteffort/pod" UID "/" CID "\n", f);
    fclose(f);
    struct mon_proc_ident p;
    mon_proc_identify(root, getpid(), &p);
    ok(p.has_cgroup && strcmp(p.cg.pod_uid, UID) == 0 && strcmp(p.cg.container_id, CID) == 0 &&
           p.pid == getpid() && p.start_time > 0,
       "identity read from the given proc root (start time from the process)");
    mon_proc_identify(root, 1, &p);
    ok(!p.has_cgroup && !p.cg.pod_uid[0], "a pid without a cgroup file there: no identity");
    unlink(path);
    snprintf(path, sizeof(path), "%s/%d", root, (int)getpid());
    rmdir(path);
    rmdir(root);
    return tap_done();
}
