#!/usr/bin/env python3
"""Standalone mode and GPU health on gpusim: a lost GPU is listed as unhealthy by `gpuslice ls`
(table and JSON), `gpuslice run` does not place on it and says which GPU and why; after
`gpusim-smi recover` the same run fits, with nothing restarted."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

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
    shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
