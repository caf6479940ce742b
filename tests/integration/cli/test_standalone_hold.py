#!/usr/bin/env python3
"""Standalone slices live as long as anything holds them, and the ledger fails closed -- judged
from gpusim's physical usage and from what a new `gpuslice run` is granted:

- a workload that leaves a setsid child holding GPU memory (runner exits normally, or is killed
  with SIGKILL) keeps its slice allocated until that child is gone: a 15Gi slice is refused
  meanwhile and granted after (with the cgroup, and with GPUSLICE_CGROUP=off through the shared
  region's process slots);
- a ledger row whose allocation cannot be read (negative quantity, not JSON) counts as holding
  its GPU fully; a ledger truncated to 0 bytes under a live slice does not forget it;
- `gpuslice ls` on a garbage ledger fails with a message (no crash); `--memory 8Ei` says too large.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from gstest import Tap, env_paths, sanitizer_runtime, skip_unbuilt

t = Tap()
P = env_paths()
GS = P['GS_GPUSLICE']
TMP = tempfile.mkdtemp(prefix='gs-standalone-hold-')


def fresh_state(name, **extra):
    state = os.path.join(TMP, name)
    os.makedirs(state)
    env = dict(os.environ)
    env.update({'GPUSLICE_STATE_DIR': state, 'GPUSLICE_SIM_DIR': P['GS_SIM_DIR'],
                'GPUSLICE_VGPU_LIB': P['GS_VGPU_LIB'], 'GPUSIM_PRESET': 't4',
                'GPUSIM_STATE': os.path.join(state, 'gpusim.state')})
    env.update(extra)
    env.pop('LD_LIBRARY_PATH', None)
    rt = sanitizer_runtime()
    if rt:
        env['LD_PRELOAD'] = rt
        env['ASAN_OPTIONS'] = 'detect_leaks=0'
    return state, env


def eq(got, want, name, diag=None):
    return t.ok(got == want, name, diag=f'got {got!r}, want {want!r}' + (f'\n{diag}' if diag else ''))


def run(args, env, timeout=120):
    return subprocess.run([GS] + args, env=env, capture_output=True, text=True, timeout=timeout)


def physical_used_mib(env):
    """Memory in use on gpusim through NVML without libvgpu: the physical truth."""
    e = dict(env)
    e['LD_LIBRARY_PATH'] = P['GS_SIM_DIR']
    e.pop('LD_PRELOAD', None)
    r = subprocess.run([P['GS_GPUSIM_SMI']], env=e, capture_output=True, text=True, timeout=30)
    for line in r.stdout.splitlines():
        if 'MiB /' in line:
            return int(line.split('MiB /')[0].split()[-1])
    return None


def wait_until(pred, timeout=60.0):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return pred()


def slices(env):
    import json  # noqa: PLC0415
    r = run(['ls', '--sim', '-o', 'json'], env)
    return json.loads(r.stdout)['slices'] if r.returncode == 0 else None


def daemon_script(state):
    """Start a setsid child that takes 1Gi and holds it; return once it holds it."""
    out, pidf = os.path.join(state, 'daemon.out'), os.path.join(state, 'daemon.pid')
    # Bounded wait on the event (the child says it holds the memory); if the child dies first,
    # or never gets there within 60 s, the command fails and the test shows why.
    return (f'setsid {GS} probe --max 1Gi --hold 600s </dev/null >{out} 2>&1 & c=$!; '
            f'echo $c >{pidf}; i=0; while ! grep -q allocated {out} 2>/dev/null; do '
            f'kill -0 $c 2>/dev/null || {{ cat {out} >&2; exit 8; }}; '
            f'i=$((i+1)); [ $i -le 1200 ] || exit 9; sleep 0.05; done'), pidf


def kill_daemon(pidf):
    with open(pidf) as f:
        os.kill(int(f.read()), signal.SIGKILL)


def check_held_then_released(name, state, env, pidf):
    eq(physical_used_mib(env), 1024, f'{name}: gpusim: the setsid child holds 1024MiB')
    r = run(['run', '--sim', '--memory', '15Gi', '--', 'true'], env)
    eq(r.returncode, 3, f'{name}: a 15Gi slice is refused while the child holds the slice',
            diag=r.stderr)
    s = slices(env)
    t.ok(s is not None and len(s) == 1, f'{name}: ls shows the slice still allocated', diag=s)
    kill_daemon(pidf)
    t.ok(wait_until(lambda: physical_used_mib(env) == 0), f'{name}: the child is gone (gpusim 0)')
    r = run(['run', '--sim', '--memory', '15Gi', '--', 'true'], env)
    eq(r.returncode, 0, f'{name}: then a 15Gi slice is granted', diag=r.stderr)
    eq(os.listdir(os.path.join(state, 'slices')), [],
            f'{name}: the slice directory is removed once nobody holds it')


def test_setsid_after_exit(cgroup):
    name = 'exit+' + ('cgroup' if cgroup else 'region')
    state, env = fresh_state(name, **({} if cgroup else {'GPUSLICE_CGROUP': 'off'}))
    script, pidf = daemon_script(state)
    r = run(['run', '--sim', '--name', 'd', '--memory', '4Gi', '--cores', '50', '--',
             'sh', '-c', script], env)
    eq(r.returncode, 0, f'{name}: the command itself exits 0', diag=r.stderr)
    t.like(r.stderr, 'still held by 1 process', f'{name}: the runner says who still holds it')
    check_held_then_released(name, state, env, pidf)


def test_setsid_after_kill9():
    name = 'kill9'
    state, env = fresh_state(name)
    script, pidf = daemon_script(state)
    runner = subprocess.Popen([GS, 'run', '--sim', '--name', 'd', '--memory', '4Gi', '--',
                               'sh', '-c', script + '; exec sleep 600'], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t.ok(wait_until(lambda: physical_used_mib(env) == 1024), f'{name}: the child holds 1024MiB')
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    check_held_then_released(name, state, env, pidf)


def holder(state, env):
    go = os.path.join(state, 'go')
    p = subprocess.Popen([GS, 'run', '--sim', '--name', 'holder', '--memory', '4Gi', '--cores',
                          '40', '--', 'sh', '-c', 'while [ ! -e "$0" ]; do sleep 0.05; done', go],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t.ok(wait_until(lambda: slices(env)), 'holder slice (4Gi, 40 cores) is live')
    return p, go


def test_corrupt_rows():
    state, env = fresh_state('rows')
    p, go = holder(state, env)
    db = os.path.join(state, 'ledger.db')
    bad = [('negative memory',
            '{"devices":{"results":[{"request":"gpu","driver":"hami-core-gpu.project-hami.io",'
            '"pool":"x","device":"hami-gpu-0","consumedCapacity":{"memory":"-4Gi",'
            '"cores":"40"}}]}}'),
           ('unparsable cores',
            '{"devices":{"results":[{"device":"hami-gpu-0","consumedCapacity":{"cores":"lots"}}]}}'),
           ('not JSON', 'garbage{')]
    for what, alloc in bad:
        with sqlite3.connect(db, timeout=30) as c:
            c.execute('UPDATE slices SET allocation = ?', (alloc,))
        r = run(['run', '--sim', '--memory', '12Gi', '--cores', '70', '--', 'true'], env)
        eq(r.returncode, 3, f'row with {what}: a 12Gi/70-core slice is refused beside it',
                diag=r.stderr)
        t.like(r.stderr, 'ledger row unreadable', f'row with {what}: and the log says why')
    open(go, 'w').close()
    eq(p.wait(timeout=60), 0, 'holder ends')
    r = run(['run', '--sim', '--memory', '12Gi', '--cores', '70', '--', 'true'], env)
    eq(r.returncode, 0, 'once its owner is gone the row is reclaimed: 12Gi granted',
            diag=r.stderr)


def test_truncated_ledger():
    state, env = fresh_state('truncated')
    p, go = holder(state, env)
    for suffix in ('', '-wal', '-shm'):
        path = os.path.join(state, 'ledger.db' + suffix)
        if os.path.exists(path):
            os.truncate(path, 0)
    r = run(['run', '--sim', '--memory', '12Gi', '--cores', '70', '--', 'true'], env)
    eq(r.returncode, 3, 'ledger truncated to 0 bytes: the live slice is not forgotten',
            diag=r.stderr)
    t.like(r.stderr, 'not in the ledger is still held', 'and the log names the slice directory')
    open(go, 'w').close()
    p.wait(timeout=60)
    r = run(['run', '--sim', '--memory', '12Gi', '--cores', '70', '--', 'true'], env)
    eq(r.returncode, 0, 'after the holder ends, 12Gi is granted', diag=r.stderr)


def test_garbage_ledger_and_messages():
    state, env = fresh_state('garbage')
    with open(os.path.join(state, 'ledger.db'), 'wb') as f:
        f.write(os.urandom(8192))
    env = dict(env)
    if 'ASAN_OPTIONS' in env:  # an ASan build: `ls` itself must not leak
        env['ASAN_OPTIONS'] = 'detect_leaks=1'
    r = run(['ls', '--sim'], env)
    t.ok(r.returncode not in (0,) and r.returncode > 0, 'ls on a garbage ledger fails cleanly',
         diag=r.returncode)
    t.like(r.stderr, 'ledger', 'and names the ledger')
    t.ok('AddressSanitizer' not in r.stderr and 'LeakSanitizer' not in r.stderr,
         'no sanitizer report', diag=r.stderr[-2000:])
    r = run(['run', '--sim', '--memory', '8Ei', '--', 'true'], fresh_state('8ei')[1])
    eq(r.returncode, 2, '--memory 8Ei: usage error')
    t.like(r.stderr, '"8Ei" is too large', '--memory 8Ei: says too large (not "not a quantity")')


def main():
    if not os.path.exists(os.path.join(P['GS_SIM_DIR'], 'libcuda.so.1')):
        skip_unbuilt(t, 'standalone holders', 'gpusim not built')
        return t.done()
    for name, fn, args in (('exit, cgroup', test_setsid_after_exit, (True,)),
                           ('exit, region slots', test_setsid_after_exit, (False,)),
                           ('kill -9', test_setsid_after_kill9, ()),
                           ('corrupt rows', test_corrupt_rows, ()),
                           ('truncated ledger', test_truncated_ledger, ()),
                           ('garbage ledger', test_garbage_ledger_and_messages, ())):
        t.run(name, fn, *args)
    subprocess.run(['rm', '-rf', TMP], check=False)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
