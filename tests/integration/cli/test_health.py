#!/usr/bin/env python3
"""Standalone mode and GPU health on gpusim: a lost GPU is listed as unhealthy by `gpuslice ls`
(table and JSON), `gpuslice run` does not place on it and says which GPU and why; after
`gpusim-smi recover` the same run fits, with nothing restarted. With the monitor running (its
watcher exports the health table to the state folder), a fatal XID on GPU 1 is shown by ls, a
2-GPU run is refused naming the GPU and the XID, a 1-GPU run still fits; `gpuslice health-clear`
makes it usable again; once the monitor is gone its file is ignored."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from gstest import Tap, env_paths, sanitizer_runtime, skip_unbuilt

P = env_paths()
GS = P['GS_GPUSLICE']


def main():
    t = Tap()
    if not os.path.exists(os.path.join(P['GS_SIM_DIR'], 'libnvidia-ml.so.1')):
        skip_unbuilt(t, 'standalone health', 'gpusim not built')
        return t.done()
    tmp = tempfile.mkdtemp(prefix='gs-cli-health-')
    env = dict(os.environ)
    env.update({'GPUSLICE_STATE_DIR': os.path.join(tmp, 'sa'), 'GPUSLICE_SIM_DIR': P['GS_SIM_DIR'],
                'GPUSLICE_VGPU_LIB': P['GS_VGPU_LIB'], 'GPUSIM_PRESET': 't4x2',
                'GPUSIM_STATE': os.path.join(tmp, 'gpusim.state')})
    env.pop('LD_LIBRARY_PATH', None)
    rt = sanitizer_runtime()
    if rt:
        env['LD_PRELOAD'] = rt
        env['ASAN_OPTIONS'] = 'detect_leaks=0'
    smi_env = dict(env, LD_LIBRARY_PATH=P['GS_SIM_DIR'])

    def gs(*a):
        return subprocess.run([GS, *a], env=env, capture_output=True, text=True, timeout=120)

    def smi(*a):
        return subprocess.run([P['GS_GPUSIM_SMI'], *a], env=smi_env, capture_output=True,
                              timeout=30).returncode

    r = gs('ls', '--sim')
    t.ok(r.returncode == 0 and 'unhealthy' not in r.stdout, 'healthy machine: ls shows no '
         'unhealthy GPU', r.stdout)
    t.is_eq(gs('run', '--sim', '-q', '-g', '2', '--', 'true').returncode, 0,
            'a 2-GPU slice fits on two healthy GPUs')
    t.is_eq(smi('lose', '1'), 0, 'lose GPU 1')
    r = gs('ls', '--sim')
    t.like(r.stdout, 'GPU at NVML index 1 is unhealthy: lost', 'ls names the lost GPU and why')
    r = gs('ls', '--sim', '-o', 'json')
    try:
        unhealthy = json.loads(r.stdout).get('unhealthy')
    except ValueError:
        unhealthy = None
    t.is_eq([(u['index'], u['health']) for u in unhealthy or []], [(1, 'Unhealthy')],
            'ls -o json: "unhealthy" lists NVML index 1')
    r = gs('run', '--sim', '-g', '2', '--', 'true')
    t.is_eq(r.returncode, 3, 'run refuses a 2-GPU slice (exit 3: does not fit)')
    t.like(r.stderr, 'gpuslice run: GPU at NVML index 1 is unhealthy: lost',
           'run names the unhealthy GPU and why')
    r = gs('run', '--sim', '-q', '-g', '1', '--', 'true')
    t.is_eq(r.returncode, 0, 'a 1-GPU slice still runs on the healthy GPU')
    t.is_eq(smi('recover', '1'), 0, 'recover GPU 1')
    t.is_eq(gs('run', '--sim', '-q', '-g', '2', '--', 'true').returncode, 0,
            'recovered: the 2-GPU slice fits again')
    r = gs('ls', '--sim')
    t.ok('unhealthy' not in r.stdout, 'ls shows no unhealthy GPU after recover')

    # The monitor watches; gpuslice reads its table.
    clear = os.path.join(tmp, 'clear')
    mon_env = dict(smi_env)
    mon_log = open(os.path.join(tmp, 'monitor.log'), 'w')
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    mon = subprocess.Popen([os.environ['GS_MONITOR'], '--listen', f'127.0.0.1:{port}',
                            '--no-kubernetes',
                            '--standalone-state-dir', env['GPUSLICE_STATE_DIR'],
                            '--state-dir', os.path.join(tmp, 'p'), '--host-dir',
                            os.path.join(tmp, 'h'), '--health-clear-dir', clear],
                           env=mon_env, stdout=mon_log, stderr=subprocess.STDOUT)
    hfile = os.path.join(env['GPUSLICE_STATE_DIR'], 'health.json')

    def file_unhealthy():
        try:
            with open(hfile) as f:
                return [d['name'] for d in json.load(f)['devices'] if not d['healthy']]
        except (OSError, ValueError, KeyError):
            return None

    def wait(pred, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = pred()
            if v:
                return v
            time.sleep(0.05)
        return pred()

    try:
        t.ok(wait(lambda: file_unhealthy() == []), 'the monitor exports health.json (all healthy)')
        t.is_eq(smi('inject-xid', '1', '48'), 0, 'fatal XID 48 on GPU 1')
        t.ok(wait(lambda: file_unhealthy() == ['hami-gpu-1']), 'health.json: hami-gpu-1 unhealthy')
        r = gs('ls', '--sim')
        t.like(r.stdout, 'GPU hami-gpu-1 (GPU-', 'ls names hami-gpu-1')
        t.like(r.stdout, 'reported fatal XID 48', 'ls says why: fatal XID 48')
        r = gs('run', '--sim', '-g', '2', '--', 'true')
        t.is_eq(r.returncode, 3, 'run refuses a 2-GPU slice while GPU 1 is unhealthy')
        t.like(r.stderr, 'taint hami-core-gpu.project-hami.io/xid is not tolerated',
               'the allocator explains: the NoSchedule taint')
        t.like(r.stderr, 'gpuslice run: GPU hami-gpu-1 (GPU-', 'run names the GPU')
        t.like(r.stderr, 'fatal XID 48', 'and the XID')
        r = gs('run', '--sim', '-g', '1', '--', 'true')
        t.is_eq(r.returncode, 0, 'a 1-GPU slice still runs (on GPU 0)')
        t.like(r.stdout + r.stderr, 'hami-gpu-0', 'placed on hami-gpu-0')
        c = subprocess.run([GS, 'health-clear', '--health-clear-dir', clear, 'hami-gpu-1'],
                           env=env, capture_output=True, text=True, timeout=30)
        t.is_eq(c.returncode, 0, 'gpuslice health-clear hami-gpu-1')
        t.ok(wait(lambda: file_unhealthy() == []), 'health.json: healthy again')
        t.is_eq(gs('run', '--sim', '-q', '-g', '2', '--', 'true').returncode, 0,
                'the 2-GPU slice fits again, nothing restarted')
        t.is_eq(smi('inject-xid', '1', '48'), 0, 'fatal XID 48 on GPU 1 again')
        t.ok(wait(lambda: file_unhealthy() == ['hami-gpu-1']), 'health.json: unhealthy again')
    finally:
        mon.terminate()
        t.is_eq(mon.wait(30), 0, 'the monitor exits 0 on SIGTERM')
        mon_log.close()
    t.is_eq(gs('run', '--sim', '-q', '-g', '2', '--', 'true').returncode, 0,
            'monitor gone: its file is ignored (no stale refusal)')
    shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
