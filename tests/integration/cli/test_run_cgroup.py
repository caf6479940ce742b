#!/usr/bin/env python3
"""`gpuslice run` and the slice's cgroup (issue 31): a cgroup it cannot join is an error, never a
slice whose processes nobody can see -- judged from the caller's answer (exit status, message
naming the cgroup path and the errno), from whether the command ran, and from the ledger:

- GPUSLICE_CGROUP=<a directory that is not a cgroup>: the slice's cgroup is created there (mkdir
  works) but cannot be joined (no cgroup.procs): non-zero exit, the message names the path and
  the errno, the command never ran, and the slice is released (ls shows none, a 15Gi run fits);
- GPUSLICE_CGROUP=<a directory that cannot be created>: the same, "cannot create";
- GPUSLICE_CGROUP=bogus: the value is named;
- the documented fallback stays: GPUSLICE_CGROUP=off runs the command without a cgroup.
"""
import json
import os
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths, sanitizer_runtime, skip_unbuilt

t = Tap()
P = env_paths()
GS = P['GS_GPUSLICE']
TMP = tempfile.mkdtemp(prefix='gs-run-cgroup-')


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


def run(args, env, timeout=120):
    return subprocess.run([GS] + args, env=env, capture_output=True, text=True, timeout=timeout)


def slices(env):
    r = run(['ls', '--sim', '-o', 'json'], env)
    return json.loads(r.stdout)['slices'] if r.returncode == 0 else None


def refused(name, cgroup_env, want_words):
    state, env = fresh_state(name, GPUSLICE_CGROUP=cgroup_env)
    marker = os.path.join(state, 'ran')
    r = run(['run', '--sim', '--memory', '1Gi', '--', 'touch', marker], env)
    t.ok(r.returncode != 0, f'{name}: gpuslice run fails (exit {r.returncode})', diag=r.stderr)
    t.ok(all(w in r.stderr for w in want_words),
         f'{name}: the message names {", ".join(want_words)}', diag=r.stderr)
    t.ok(not os.path.exists(marker), f'{name}: the command never ran')
    t.ok(slices(env) == [], f'{name}: the slice is released', diag=slices(env))
    env2 = dict(env, GPUSLICE_CGROUP='off')
    r2 = run(['run', '--sim', '--memory', '15Gi', '--', 'true'], env2)
    t.ok(r2.returncode == 0, f'{name}: a 15Gi slice fits afterwards', diag=r2.stderr)
    return state


def main():
    if not os.path.exists(GS):
        skip_unbuilt(t, 'gpuslice run cgroup', 'gpuslice not built')
        return t.done()
    plain = os.path.join(TMP, 'not-a-cgroup')
    os.makedirs(plain)
    r = subprocess.run(['stat', '-f', '-c', '%T', plain], capture_output=True, text=True)
    if 'cgroup' in r.stdout:
        t.skip('cgroup join refused', f'{plain} is on a cgroup file system')
    else:
        refused('join', plain, ['cannot join', plain + '/gpuslice-', 'errno 2',
                                'No such file or directory'])
        # the slice's cgroup directory the runner made is removed with the slice
        t.is_eq(os.listdir(plain), [], 'join: the cgroup directory made for the slice is removed')
    missing = os.path.join(TMP, 'missing', 'deeper')
    refused('create', missing, ['cannot create', missing + '/gpuslice-', 'errno 2'])
    refused('bogus', 'bogus', ['GPUSLICE_CGROUP=bogus', 'expected off, auto or an absolute'])
    state, env = fresh_state('off', GPUSLICE_CGROUP='off')
    marker = os.path.join(state, 'ran')
    r = run(['run', '--sim', '--memory', '1Gi', '--', 'touch', marker], env)
    t.ok(r.returncode == 0 and os.path.exists(marker),
         'GPUSLICE_CGROUP=off: the documented fallback runs the command', diag=r.stderr)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
