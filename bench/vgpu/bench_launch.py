#!/usr/bin/env python3
"""libvgpu's launch paths on gpusim: the same program (bench_launch) run without preload, with
LD_PRELOAD=libvgpu.so on an uncapped slice and on a capped slice (cores=30; every launch charged),
interleaved in the same run, 5 rounds, median per op. Prints each figure, the delta and the ratio
against the baseline without preload, and the issue's targets (unthrottled launch +5 ns, capped
launch +100 ns). Never a pass/fail on timing: TAP lines only record that each figure was measured.
Set GS_BENCH_ROUNDS to change the number of rounds."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths, preload_env, prepare_region

OPS = ('launch_kernel', 'launch_ckernel', 'library_load')
TARGETS = {('launch_kernel', 'uncapped'): 5.0, ('launch_kernel', 'capped'): 100.0,
           ('launch_ckernel', 'uncapped'): 5.0, ('launch_ckernel', 'capped'): 100.0}


def run(prog, env):
    out = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=300,
                         check=True).stdout
    res = {}
    for line in out.splitlines():
        kv = dict(tok.split('=', 1) for tok in line.split() if '=' in tok)
        if 'op' in kv and 'ns' in kv:
            res[kv['op']] = float(kv['ns'])
    return res


def main():
    t = Tap()
    paths = env_paths()
    if not os.path.exists(os.path.join(paths['GS_SIM_DIR'], 'libcuda.so.1')):
        t.skip('vgpu launch bench', 'gpusim not built')
        return t.done()
    root = paths['GS_BUILD_ROOT']
    prog = os.path.join(root, 'bench', 'vgpu', 'bench_launch')
    probe = os.path.join(root, 'tests', 'integration', 'vgpu', 'vgpu_probe')
    d = tempfile.mkdtemp(prefix='gs-vgpu-launch-bench-')
    try:
        base = dict(os.environ)
        base['GPUSIM_STATE'] = os.path.join(d, 'state')
        base['GPUSIM_PRESET'] = 'h200'
        plain = preload_env(base=base)
        uuid = subprocess.run([probe, 'views'], env=plain, capture_output=True,
                              text=True).stdout.split('uuid=')[1].split()[0]
        envs = {'without': plain}
        for name, cores in (('uncapped', 0), ('capped', 30)):
            lim = os.path.join(d, name)
            os.mkdir(lim)
            prepare_region(os.path.join(d, f'region-{name}'))
            with open(os.path.join(lim, 'bench.limits'), 'w') as f:
                f.write(f'version 1\nclaim bench-{name}\nregion {d}/region-{name}\n'
                        f'device {uuid} memory=0 cores={cores}\n')
            envs[name] = preload_env(base=dict(base, GPUSLICE_LIMITS_DIR=lim),
                                     preload=paths['GS_VGPU_LIB'])
        rounds = int(os.environ.get('GS_BENCH_ROUNDS', '5'))
        res = {k: {} for k in envs}
        for _ in range(rounds):
            for k, env in envs.items():
                for op, v in run(prog, env).items():
                    res[k].setdefault(op, []).append(v)
        try:
            load = open('/proc/loadavg').read().split()[0]
        except OSError:
            load = '?'
        print(f'# median of {rounds} rounds, load average {load}')
        print(f"# {'operation':<16}{'slice':<10}{'without':>10}{'with':>10}{'delta':>10}"
              f"{'ratio':>8}{'target':>9}")
        for op in OPS:
            if op not in res['without']:
                t.skip(f'{op}', 'gpusim has no cuLibrary* API')
                continue
            a = statistics.median(res['without'][op])
            for sl in ('uncapped', 'capped'):
                if op not in res[sl]:
                    t.ok(False, f'{op} ({sl}) measured')
                    continue
                b = statistics.median(res[sl][op])
                target = TARGETS.get((op, sl))
                tt = f'+{target:.0f}ns' if target is not None else '-'
                print(f'# {op:<16}{sl:<10}{a:>9.1f}n{b:>9.1f}n{b - a:>+9.1f}n{b / a:>8.2f}'
                      f'{tt:>9}')
                # A bench reports; only "it measured" is a result, never the figure.
                t.ok(a > 0 and b > 0, f'{op} ({sl} slice) measured with and without libvgpu')
                t.diag(f'{op} ({sl} slice): {a:.1f} ns without, {b:.1f} ns with libvgpu '
                       f'(delta {b - a:+.1f} ns, ratio {b / a:.2f}, target {tt})')
                vc = op + '_vcsw'
                if vc in res[sl] and vc in res['without']:
                    va, vb = statistics.median(res['without'][vc]), statistics.median(res[sl][vc])
                    t.diag(f'{op:<16}{sl:<10} voluntary context switches per 20,000 launches: '
                           f'{va:.1f} without, {vb:.1f} with (a capped empty kernel must not '
                           f'sleep, issue 24)')
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
