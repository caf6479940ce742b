#!/usr/bin/python3
"""The auditor (issue 21, "An auditor outside the process"): a process in a claim that skips
libvgpu (no LD_PRELOAD: gpusim only) and holds more physical memory than the claim's limit is
reported from NVML's per-process usage (metric, log line) and, with --audit-kill, killed and its
memory returned; a process within its slice is never touched. Processes are tied to claims
through the process slots of the claims' shared regions, which the test fills as libvgpu would
(docs/internals/monitor.md "The auditor")."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

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


def start_time(pid):
    with open(f'/proc/{pid}/stat') as f:
        return int(f.read().rsplit(')', 1)[1].split()[19])


def write_region(path, uuid, pids):
    """A ready v2 region with one device and `pids` in its process slots (as libvgpu registers
    a process: pid, start time, pid namespace 0 = unknown)."""
    head = struct.pack('<QIIIIII', MAGIC, 2, SIZE, 2, 1, len(pids), 0) + bytes(128 - 32)
    dev = uuid.encode().ljust(96, b'\0') + struct.pack('<QQII', 0, GIB, 0, 0)
    with open(path, 'wb') as f:
        f.write(head + dev)
        for i, pid in enumerate(pids):
            f.seek(PROCS_OFF + i * SLOT)
            f.write(struct.pack('<iIQQ', pid, 0, start_time(pid), 0))
        f.truncate(SIZE)


def claims(state, host, uuid, members):
    doc = {'version': 1, 'driver': 'd', 'claims': {}}
    for i, (name, pids) in enumerate(members):
        uid = '00000000-0000-4000-8000-%012d' % i
        doc['claims'][uid] = {'state': 'PrepareCompleted', 'missingSince': 0, 'plan': {
            'namespace': 'team', 'name': name, 'uid': uid, 'results': [],
            'devices': [{'device': 'hami-gpu-0', 'uuid': uuid, 'minor': 0,
                         'memoryLimit': GIB, 'cores': 0, 'envIndex': 0}]}}
        d = os.path.join(host, 'claims', uid, 'region')
        os.makedirs(d, exist_ok=True)
        write_region(os.path.join(d, 'region'), uuid, pids)
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


def main():
    env = sim_env(TMP)
    env['LD_LIBRARY_PATH'] = P['GS_SIM_DIR']
    env.pop('LD_PRELOAD', None)
    state, host = os.path.join(TMP, 'plugin'), os.path.join(TMP, 'host')
    procs, mons = [], []
    try:
        uuid = gpu_uuid(env)
        if not t.ok(uuid, 'gpusim lists its GPU', diag=uuid):
            return t.done()
        greedy = workload(env, 2000, os.path.join(TMP, 'go-greedy'))
        modest = workload(env, 500, os.path.join(TMP, 'go-modest'))
        procs += [p for p in (greedy, modest) if p]
        if not t.ok(greedy and modest, 'two workloads without libvgpu hold 2000 and 500 MiB'):
            return t.done()
        claims(state, host, uuid, [('greedy', [greedy.pid]), ('modest', [modest.pid])])
        args = ['--node-name', 'node-a', '--state-dir', state, '--host-dir', host,
                '--standalone-state-dir', os.path.join(TMP, 'standalone')]

        mon = Monitor(TMP, args, env)
        mons.append(mon)
        t0 = time.monotonic()
        t.ok(mon.ready(), 'monitor ready')
        text = wait_until(lambda: (lambda x: x if value(
            x, 'gpuslice_audit_process_memory_bytes', claim='greedy') else None)(mon.text()), 60)
        took = time.monotonic() - t0
        t.is_eq(value(text or '', 'gpuslice_audit_process_memory_bytes', claim='greedy',
                      pid=str(greedy.pid), device_uuid=uuid), 2000.0 * MIB,
                'the 2000 MiB process of the 1 GiB claim is reported (NVML per-process memory)')
        t.diag(f'reported {took:.2f} s after the monitor started (refresh interval 200 ms)')
        t.is_eq([k for k in samples(text or '', 'gpuslice_audit_process_memory_bytes')
                 if ('claim', 'modest') in k], [], 'the process within its slice is not reported')
        t.is_eq(value(text or '', 'gpuslice_audit_available'), 1.0, 'gpuslice_audit_available 1')
        t.is_eq(value(text or '', 'gpuslice_audit_breaches_total'), 1.0, 'one breach counted')
        t.like(mon.logs(), 'msg="memory breach" claim=team/greedy', 'the breach is logged')
        t.ok(greedy.poll() is None and modest.poll() is None,
             'without --audit-kill nothing is killed')
        t.is_eq(mon.stop(), 0, 'monitor exits 0')

        mon = Monitor(TMP, args + ['--audit-kill'], env)
        mons.append(mon)
        try:
            rc = greedy.wait(60)
        except subprocess.TimeoutExpired:
            rc = None
        t.is_eq(rc, -9, 'with --audit-kill the process over its limit is killed (SIGKILL)')
        freed = wait_until(lambda: value(mon.text(), 'hami_host_gpu_memory_used_bytes',
                                         device_uuid=uuid) == 500.0 * MIB, 60)
        t.ok(freed, 'its memory is returned: the GPU holds only the 500 MiB of the other')
        t.ok(modest.poll() is None, 'the process within its slice is untouched')
        text = mon.text()
        t.is_eq(value(text, 'gpuslice_audit_kills_total'), 1.0, 'one kill counted')
        t.like(mon.logs(), 'action=killed', 'the kill is logged')
    finally:
        for name in ('go-greedy', 'go-modest'):
            open(os.path.join(TMP, name), 'w').close()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        for m in mons:
            if m.proc.poll() is None:
                m.stop()
        if t.failed:
            t.diag(mons[-1].logs()[-3000:] if mons else '')
        shutil.rmtree(TMP, True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
