#!/usr/bin/python3
"""The auditor in standalone mode (issue 31, "The auditor kills a neighbour"): a `gpuslice run`
slice's processes are the ones in the cgroup `gpuslice run` created for it (recorded in the
slice's holders.json; real cgroup v2 here), not the ones its region's process slots name.

Slice `boxed` (1 GiB) runs a process through libvgpu (100 MiB, registered in its region) and one
that skips libvgpu (no LD_PRELOAD) and holds 1500 MiB without ever taking a slot. Slice
`neighbour` (4 GiB) holds 2000 MiB through libvgpu. The test then writes the neighbour's pid,
pid namespace and start time into a free slot of boxed's region (a tenant writes its own region).
With --audit-kill: the hidden process is killed and gpusim gets its memory back, the neighbour
and boxed's registered process survive, the forged slot is counted."""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from gstest import Tap
from monlib import Monitor, samples, sim_env, value, wait_until, P

t = Tap()
TMP = tempfile.mkdtemp(prefix='gs-mon-audit-sa-')
STATE = os.path.join(TMP, 'state')
WORKLOAD = sys.argv[1] if len(sys.argv) > 1 else ''
MIB = 1 << 20
PROCS_OFF, SLOT, HINT_OFF = 128 + 200 * 32, 24 + 8 * 32, 24


def start_time(pid):
    with open(f'/proc/{pid}/stat') as f:
        return int(f.read().rsplit(')', 1)[1].split()[19])


def slices():
    return set(glob.glob(os.path.join(STATE, 'slices', '*')))


def run_slice(env, name, memory, script):
    """`gpuslice run` a slice; returns (runner, slice dir) once its holders.json is written."""
    before = slices()
    p = subprocess.Popen([P['GS_GPUSLICE'], 'run', '--sim', '--quiet', '--name', name,
                          '--memory', memory, '--cores', '30', '--', 'sh', '-c', script], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    new = wait_until(lambda: [d for d in slices() - before
                              if os.path.exists(os.path.join(d, 'holders.json'))], 60)
    return p, (new[0] if new else None)


def members(slice_dir, count):
    """The pids in the slice's cgroup once `count` of them hold their memory (by argv[1])."""
    with open(os.path.join(slice_dir, 'holders.json')) as f:
        cg = json.load(f)['cgroup']

    def read():
        try:
            with open(os.path.join(cg, 'cgroup.procs')) as f:
                pids = [int(x) for x in f.read().split()]
        except OSError:
            return None
        out = {}
        for pid in pids:
            try:
                with open(f'/proc/{pid}/cmdline', 'rb') as f:
                    argv = f.read().split(b'\0')
            except OSError:
                continue
            if len(argv) > 1 and argv[0].endswith(b'mon_workload'):
                out[int(argv[1])] = pid
        return out if len(out) >= count else None
    return wait_until(read, 60) or {}


def slot_pids(region):
    try:
        with open(region, 'rb') as f:
            f.seek(HINT_OFF)
            hint = struct.unpack('<I', f.read(4))[0]
            pids = []
            for i in range(min(hint, 1024)):
                f.seek(PROCS_OFF + i * SLOT)
                pids.append(struct.unpack('<i', f.read(4))[0])
            return pids
    except (OSError, struct.error):
        return []


def forge_slot(region, pid, index=1000):
    """Write `pid` (its start time, its pid namespace) into slot `index` of a region, far from
    the lowest free slot libvgpu claims next."""
    with open(region, 'r+b') as f:
        f.seek(PROCS_OFF + index * SLOT)
        f.write(struct.pack('<iIQQ', pid, 0, start_time(pid),
                            os.stat(f'/proc/{pid}/ns/pid').st_ino))
        f.seek(HINT_OFF)
        hint = struct.unpack('<I', f.read(4))[0]
        if hint <= index:
            f.seek(HINT_OFF)
            f.write(struct.pack('<I', index + 1))


def main():
    env = sim_env(TMP)
    env['GPUSLICE_STATE_DIR'] = STATE
    go = os.path.join(TMP, 'go')
    runners, mon = [], None
    try:
        boxed_script = ('%s 100 0 %s & exec env -u LD_PRELOAD %s 1500 0 %s'
                        % (WORKLOAD, go, WORKLOAD, go))
        boxed, bdir = run_slice(env, 'boxed', '1Gi', boxed_script)
        runners.append(boxed)
        if not t.ok(bdir, 'slice boxed started'):
            return t.done()
        with open(os.path.join(bdir, 'holders.json')) as f:
            if not json.load(f).get('cgroup'):
                t.skip('standalone auditor', 'gpuslice run could not create a cgroup v2 here '
                       '(no writable cgroup2 hierarchy): nothing proves a slice\'s processes')
                return t.done()
        nb, ndir = run_slice(env, 'neighbour', '4Gi', 'exec %s 2000 0 %s' % (WORKLOAD, go))
        runners.append(nb)
        if not t.ok(ndir, 'slice neighbour started'):
            nb.kill()
            t.diag(nb.communicate()[1])
            return t.done()
        bpids, npids = members(bdir, 2), members(ndir, 1)
        if not t.ok(set(bpids) == {100, 1500} and set(npids) == {2000},
                    'boxed holds 100 MiB (libvgpu) and 1500 MiB (no libvgpu), neighbour 2000 MiB',
                    diag=(bpids, npids)):
            return t.done()
        hidden, registered, neighbour = bpids[1500], bpids[100], npids[2000]
        # once boxed's registered process is in its region, forge a slot beside it
        region = os.path.join(bdir, 'region')
        t.ok(wait_until(lambda: registered in slot_pids(region), 60),
             'boxed\'s registered process has its slot')
        forge_slot(region, neighbour)
        t.ok(neighbour in slot_pids(region), 'a slot of boxed\'s region names the neighbour')

        mon = Monitor(TMP, ['--node-name', 'ws', '--no-kubernetes', '--audit-kill',
                            '--standalone-state-dir', STATE,
                            '--state-dir', os.path.join(TMP, 'no-plugin')], env)
        t.ok(mon.ready(), 'monitor ready')
        try:
            rc = subprocess.run(['sh', '-c', 'while kill -0 %d 2>/dev/null; do sleep 0.1; done'
                                 % hidden], timeout=60).returncode
        except subprocess.TimeoutExpired:
            rc = None
        t.is_eq(rc, 0, 'the process of boxed that never took a slot and holds 1500 MiB of its '
                '1 GiB is killed (its cgroup is the slice\'s)')
        forged = wait_until(lambda: value(mon.text(), 'gpuslice_monitor_skipped_total',
                                          cause='forged_slot'), 30)
        t.ok(forged, 'boxed\'s slot naming the neighbour is counted as forged',
             diag=[p for p in slot_pids(region) if p])
        t.ok(os.path.exists(f'/proc/{neighbour}') and nb.poll() is None,
             'the neighbour named in boxed\'s slot survives (within its own 4 GiB)')
        t.ok(os.path.exists(f'/proc/{registered}'), 'boxed\'s registered process within its '
             'limit survives')
        uuid_used = wait_until(lambda: (lambda x: x if x and list(x.values()) == [2100.0 * MIB]
                                        else None)(samples(mon.text(),
                                                           'hami_host_gpu_memory_used_bytes')),
                               60)
        t.ok(uuid_used, 'gpusim: the GPU holds only the 2100 MiB of the survivors')
        logs = mon.logs()
        t.like(logs, 'identity=cgroup pid=%d ' % hidden, 'the breach is tied by cgroup')
        t.like(logs, 'cause=forged_slot object="slice boxed"', 'the forged slot is logged')
        t.is_eq(value(mon.text(), 'gpuslice_audit_kills_total'), 1.0, 'one kill counted')
    finally:
        open(go, 'w').close()
        for p in runners:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        if mon:
            if mon.proc.poll() is None:
                mon.stop()
            if t.failed:
                with open(mon.log_path) as f:
                    t.diag(f.read()[-4000:])
        shutil.rmtree(TMP, True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
