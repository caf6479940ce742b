#!/usr/bin/python3
"""The auditor (issue 21, "An auditor outside the process"; issue 31, "The auditor kills a
neighbour"). Processes on gpusim without libvgpu (no LD_PRELOAD) hold physical memory that NVML
reports per process. A process is tied to a claim through what the tenant cannot write: its
cgroup (/proc/<pid>/cgroup names the pod UID and the container ID) against the pods and
containers the API server lists for the claim (status.reservedFor, containerStatuses). The
claims' region slots are what a tenant writes: never authority (docs/internals/monitor.md "What
the auditor trusts").

The node: claims team/greedy (1 GiB, its process holds 2000 MiB), team/modest (1 GiB, 500 MiB),
tenant-b/victim (4 GiB, its process holds 2000 MiB: within), tenant-a/attacker (1 GiB) whose
region's slot names the victim's pid, pid namespace and start time (what the read-only peers
mount shows), and whose container runs a process of 1500 MiB that never registers in any slot.
A process of greedy's pod in a container that does not use the claim holds 1200 MiB (the pod is
proven, the container is not). The monitor reads the processes' cgroups from a /proc tree of
the test's own (--proc-root): the kubelet's systemd and cgroupfs names."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

from fakeapi import FakeAPI
from gstest import Tap
from monlib import Monitor, samples, sim_env, value, wait_until, P

t = Tap()
TMP = tempfile.mkdtemp(prefix='gs-mon-audit-')
WORKLOAD = sys.argv[1] if len(sys.argv) > 1 else ''
MIB, GIB = 1 << 20, 1 << 30
MAGIC = 0x4E4F494745525347
MAX_DEV, MAX_PROCS = 32, 1024
PROCS_OFF = 128 + 200 * MAX_DEV
SLOT = 24 + 8 * MAX_DEV
SIZE = PROCS_OFF + SLOT * MAX_PROCS
TOKEN = 'audit-token'
PROC = os.path.join(TMP, 'proc')


def start_time(pid):
    with open(f'/proc/{pid}/stat') as f:
        return int(f.read().rsplit(')', 1)[1].split()[19])


def pidns(pid):
    return os.stat(f'/proc/{pid}/ns/pid').st_ino


def write_region(path, uuid, pids):
    """A ready v2 region with one device and `pids` in its process slots, as libvgpu registers a
    process (pid, start time, pid namespace inode): what a tenant can write into its own."""
    head = struct.pack('<QIIIIII', MAGIC, 2, SIZE, 2, 1, len(pids), 0) + bytes(128 - 32)
    dev = uuid.encode().ljust(96, b'\0') + struct.pack('<QQII', 0, GIB, 0, 0)
    with open(path, 'wb') as f:
        f.write(head + dev)
        for i, pid in enumerate(pids):
            f.seek(PROCS_OFF + i * SLOT)
            f.write(struct.pack('<iIQQ', pid, 0, start_time(pid), pidns(pid)))
        f.truncate(SIZE)


def pod_uid(i):
    return '7a1c0de0-0000-4000-8000-%012d' % i


def cid(i):
    return ('%02d' % i) * 32  # 64 characters, as containerd's IDs


def fake_proc(pid, cgroup_text):
    """<proc-root>/<pid>: the cgroup file the kernel would show, status and ns/pid the real
    ones."""
    d = os.path.join(PROC, str(pid))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'cgroup'), 'w') as f:
        f.write(cgroup_text)
    for name in ('status', 'ns'):
        os.symlink(f'/proc/{pid}/{name}', os.path.join(d, name))


def systemd_cgroup(i):
    u = pod_uid(i).replace('-', '_')
    return ('0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/'
            'cri-containerd-%s.scope\n' % (u, cid(i)))


def cgroupfs_cgroup(i, container=None):
    return ('12:memory:/kubepods/besteffort/pod%s/%s\n1:name=systemd:/kubepods/besteffort/'
            'pod%s/%s\n' % (pod_uid(i), container or cid(i), pod_uid(i), container or cid(i)))


def kubeconfig(url):
    path = os.path.join(TMP, 'kubeconfig')
    with open(path, 'w') as f:
        json.dump({'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
                   'clusters': [{'name': 'k', 'cluster': {'server': url}}],
                   'users': [{'name': 'u', 'user': {'token': TOKEN}}],
                   'contexts': [{'name': 'c', 'context': {'cluster': 'k', 'user': 'u'}}]}, f)
    return path


CLAIMS = [  # (index, namespace, claim, pod, limit)
    (0, 'team', 'greedy', 'greedy-pod', GIB),
    (1, 'team', 'modest', 'modest-pod', GIB),
    (2, 'tenant-b', 'victim', 'victim-pod', 4 * GIB),
    (3, 'tenant-a', 'attacker', 'attacker-pod', GIB),
]


def cluster(api, state, host, uuid, slots):
    doc = {'version': 1, 'driver': 'd', 'claims': {}}
    for i, ns, name, pod, limit in CLAIMS:
        uid = '00000000-0000-4000-8000-%012d' % i
        doc['claims'][uid] = {'state': 'PrepareCompleted', 'missingSince': 0, 'plan': {
            'namespace': ns, 'name': name, 'uid': uid, 'results': [],
            'devices': [{'device': 'hami-gpu-0', 'uuid': uuid, 'minor': 0,
                         'memoryLimit': limit, 'cores': 0, 'envIndex': 0}]}}
        d = os.path.join(host, 'claims', uid, 'region')
        os.makedirs(d, exist_ok=True)
        write_region(os.path.join(d, 'region'), uuid, slots[name])
        api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
                 'metadata': {'namespace': ns, 'name': name, 'uid': uid},
                 'spec': {'devices': {'requests': []}},
                 'status': {'reservedFor': [{'resource': 'pods', 'name': pod,
                                             'uid': pod_uid(i)}]}})
        api.put({'apiVersion': 'v1', 'kind': 'Pod',
                 'metadata': {'namespace': ns, 'name': pod, 'uid': pod_uid(i)},
                 'spec': {'resourceClaims': [{'name': 'gpu', 'resourceClaimName': name}],
                          'containers': [{'name': 'main', 'image': 'x',
                                          'resources': {'claims': [{'name': 'gpu'}]}},
                                         {'name': 'sidecar', 'image': 'x'}]},
                 'status': {'containerStatuses': [
                     {'name': 'main', 'containerID': 'containerd://' + cid(i)},
                     {'name': 'sidecar', 'containerID': 'containerd://' + cid(90 + i)}]}})
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, 'checkpoint.json'), 'w') as f:
        json.dump(doc, f)


def workload(env, mib, go):
    """mon_workload on gpusim without libvgpu: it allocates `mib` MiB and holds it."""
    p = subprocess.Popen([WORKLOAD, str(mib), '0', go], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    return p if 'holding' in line else None


def gpu_uuid(env):
    out = subprocess.run([P['GS_GPUSIM_SMI'], '--query-gpu=uuid', '--format=csv,noheader'],
                         env=env, capture_output=True, text=True)
    lines = out.stdout.split()
    return lines[0] if lines and lines[0].startswith('GPU-') else None


def audit_pids(text, **labels):
    return sorted(dict(k)['pid'] for k in samples(text, 'gpuslice_audit_process_memory_bytes')
                  if set(labels.items()) <= set(k))


def events(api):
    return [e for e in api.list('events') if e.get('source', {}).get('component') ==
            'gpuslice-monitor']


def main():
    env = sim_env(TMP)
    env['LD_LIBRARY_PATH'] = P['GS_SIM_DIR']
    env.pop('LD_PRELOAD', None)
    state, host = os.path.join(TMP, 'plugin'), os.path.join(TMP, 'host')
    procs, mons = {}, []
    api = FakeAPI(token=TOKEN)
    api.start()
    try:
        uuid = gpu_uuid(env)
        if not t.ok(uuid, 'gpusim lists its GPU', diag=uuid):
            return t.done()
        for name, mib in (('greedy', 2000), ('modest', 500), ('victim', 2000),
                          ('hidden', 1500), ('sidecar', 1200)):
            p = workload(env, mib, os.path.join(TMP, 'go-' + name))
            if p:
                procs[name] = p
        if not t.is_eq(sorted(procs), ['greedy', 'hidden', 'modest', 'sidecar', 'victim'],
                       'five workloads without libvgpu hold their memory on gpusim'):
            return t.done()
        pid = {n: p.pid for n, p in procs.items()}
        fake_proc(pid['greedy'], systemd_cgroup(0))
        fake_proc(pid['modest'], cgroupfs_cgroup(1))
        fake_proc(pid['victim'], systemd_cgroup(2))
        fake_proc(pid['hidden'], cgroupfs_cgroup(3))  # the attacker's container, no slot
        fake_proc(pid['sidecar'], cgroupfs_cgroup(0, cid(90)))  # greedy's pod, not its claim
        # The attacker's region names the victim's process (pid, pid namespace, start time).
        cluster(api, state, host, uuid, {'greedy': [pid['greedy']], 'modest': [pid['modest']],
                                         'victim': [pid['victim']],
                                         'attacker': [pid['victim']]})
        args = ['--node-name', 'node-a', '--state-dir', state, '--host-dir', host,
                '--standalone-state-dir', os.path.join(TMP, 'standalone'),
                '--kubeconfig', kubeconfig(api.url), '--proc-root', PROC,
                '--resync-interval', '500ms']

        mon = Monitor(TMP, args, env)
        mons.append(mon)
        t.ok(mon.ready(), 'monitor ready')
        text = wait_until(lambda: (lambda x: x if len(audit_pids(x)) >= 3 and value(
            x, 'gpuslice_monitor_skipped_total', cause='forged_slot') else None)(mon.text()), 60)
        text = text or mon.text()
        t.is_eq(value(text, 'gpuslice_audit_process_memory_bytes', claim='greedy',
                      pid=str(pid['greedy']), device_uuid=uuid), 2000.0 * MIB,
                'the 2000 MiB process of the 1 GiB claim is reported (NVML per-process memory)')
        t.is_eq(value(text, 'gpuslice_audit_process_memory_bytes', claim='attacker',
                      pid=str(pid['hidden'])), 1500.0 * MIB,
                'a process that never took a slot is tied to its claim by its cgroup and reported')
        t.is_eq(audit_pids(text, claim='greedy'), sorted([str(pid['greedy']),
                                                         str(pid['sidecar'])]),
                'a process of the claim\'s pod in another container is reported too (pod proven)')
        t.is_eq(audit_pids(text, pid=str(pid['victim'])), [],
                'the victim, within its own claim, is not reported under the attacker\'s claim')
        t.is_eq(audit_pids(text, claim='modest'), [], 'the process within its slice is not '
                'reported')
        t.ok((value(text, 'gpuslice_monitor_skipped_total', cause='forged_slot') or 0) >= 1,
             'the attacker\'s slot naming the victim is counted as forged')
        logs = mon.logs()
        t.like(logs, 'cause=forged_slot object="claim tenant-a/attacker"', 'and logged')
        t.ok(re.search(r'msg="memory breach" claim=team/greedy .*pod=team/greedy-pod '
                       r'container=main identity=container pid=%d ' % pid['greedy'], logs),
             'the breach is logged with its pod and container')
        t.is_eq(value(text, 'gpuslice_audit_available'), 1.0, 'gpuslice_audit_available 1')
        t.ok(all(p.poll() is None for p in procs.values()), 'without --audit-kill nothing is '
             'killed')
        evs = wait_until(lambda: (lambda e: e if len(e) >= 3 else None)(events(api)), 30) or []
        t.is_eq(sorted((e['metadata']['namespace'], e['involvedObject']['kind'],
                        e['involvedObject']['name'], e['reason']) for e in evs),
                [('team', 'Pod', 'greedy-pod', 'GPUMemoryBreach'),
                 ('team', 'Pod', 'greedy-pod', 'GPUMemoryBreach'),
                 ('tenant-a', 'Pod', 'attacker-pod', 'GPUMemoryBreach')],
                'Events go to the pods that breached (their namespaces), none for the victim')
        t.is_eq(mon.stop(), 0, 'monitor exits 0')

        mon = Monitor(TMP, args + ['--audit-kill'], env)
        mons.append(mon)
        rcs = {}
        for name in ('greedy', 'hidden'):
            try:
                rcs[name] = procs[name].wait(60)
            except subprocess.TimeoutExpired:
                rcs[name] = None
        t.is_eq(rcs['greedy'], -9, 'with --audit-kill the registered process over its limit is '
                'killed (SIGKILL)')
        t.is_eq(rcs['hidden'], -9, 'the process that never registered is killed too')
        forged = wait_until(lambda: value(mon.text(), 'gpuslice_monitor_skipped_total',
                                          cause='forged_slot'), 30)
        t.ok(forged, 'the forged slot was judged by this monitor too')
        t.ok(procs['victim'].poll() is None,
             'the victim named in the attacker\'s slot survives (within its own 4 GiB)')
        t.ok(procs['sidecar'].poll() is None,
             'a process not proven to be in the claim\'s container is not killed')
        t.ok(procs['modest'].poll() is None, 'the process within its slice is untouched')
        freed = wait_until(lambda: value(mon.text(), 'hami_host_gpu_memory_used_bytes',
                                         device_uuid=uuid) == (500.0 + 2000 + 1200) * MIB, 60)
        t.ok(freed, 'gpusim: the GPU holds only the 3700 MiB of the survivors')
        text = mon.text()
        t.is_eq(value(text, 'gpuslice_audit_kills_total'), 2.0, 'two kills counted')
        logs = mon.logs()
        t.like(logs, 'action=killed', 'the kills are logged')
        t.ok(re.search(r'container= identity=pod pid=%d .*action=reported-unproven'
                       % pid['sidecar'], logs), 'the unproven one is reported, not killed')
        killed = wait_until(lambda: (lambda k: k if len(k) >= 2 else None)(
            [e for e in events(api) if e['reason'] == 'GPUMemoryBreachKilled']), 30) or []
        t.is_eq(sorted((e['metadata']['namespace'], e['involvedObject']['name']) for e in killed),
                [('team', 'greedy-pod'), ('tenant-a', 'attacker-pod')],
                'Killed Events go to the breaching pods')
        t.is_eq([e['message'] for e in events(api)
                 if 'process %d ' % pid['victim'] in e['message']], [],
                'no Event names the victim\'s process')

        # A container (re)started after the last resolution: its process is in the claim's pod
        # but its container ID is not in the pod's status yet. Reported, not killed, until the
        # kubelet reports the ID; then proven and killed.
        late = workload(env, 1200, os.path.join(TMP, 'go-late'))
        if not t.ok(late, 'a new process of modest-pod holds 1200 MiB of the 1 GiB claim'):
            return t.done()
        procs['late'] = late
        fake_proc(late.pid, cgroupfs_cgroup(1, cid(50)))
        seen = wait_until(lambda: re.search(r'identity=pod pid=%d .*action=reported-unproven'
                                            % late.pid, mon.logs()), 60)
        t.ok(seen and late.poll() is None, 'its container not reported by the kubelet yet: '
             'reported, not killed')
        pod = api.get('pods', 'team', 'modest-pod')
        pod['status']['containerStatuses'][0]['containerID'] = 'containerd://' + cid(50)
        api.put(pod)
        try:
            rc = late.wait(60)
        except subprocess.TimeoutExpired:
            rc = None
        t.is_eq(rc, -9, 'once the pod\'s status names its container, it is proven and killed')
        t.ok(procs['modest'].poll() is None and procs['victim'].poll() is None,
             'the others are untouched')
    finally:
        for name in procs:
            open(os.path.join(TMP, 'go-' + name), 'w').close()
        for p in procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        for m in mons:
            if m.proc.poll() is None:
                m.stop()
        if t.failed and mons:
            with open(mons[-1].log_path) as f:
                t.diag(f.read()[-4000:])
        api.stop()
        shutil.rmtree(TMP, True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
