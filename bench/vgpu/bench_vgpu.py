#!/usr/bin/env python3
"""libvgpu overhead on gpusim: the same program run without and with LD_PRELOAD=libvgpu.so (a
4096 MiB / uncapped-compute slice from a limits file), in the same run, 3 rounds each
interleaved, best of 3. Prints per-op figures, the delta and the ratio, against the issue's
targets. Never a pass/fail on timing (TAP lines only record that each figure was measured)."""
import os
import shutil
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths, preload_env

TARGETS = {'alloc_free_pair': 100.0, 'free_with_50000_live': 200.0, 'mem_get_info': 50.0,
           'launch_kernel': 30.0, 'ctx_get_current': 10.0, 'ctx_set_current': 10.0}


def run(prog, env):
    out = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=300,
                         check=True).stdout
    res = {}
    for line in out.splitlines():
        kv = dict(tok.split('=', 1) for tok in line.split() if '=' in tok)
        if 'op' in kv:
            res[kv['op']] = float(kv['ns'])
    return res


def main():
    t = Tap()
    paths = env_paths()
    if not os.path.exists(os.path.join(paths['GS_SIM_DIR'], 'libcuda.so.1')):
        t.skip('vgpu bench', 'gpusim not built')
        return t.done()
    prog = os.path.join(paths['GS_BUILD_ROOT'], 'bench', 'vgpu', 'bench_vgpu_ops')
    d = tempfile.mkdtemp(prefix='gs-vgpu-bench-')
    try:
        base = dict(os.environ)
        base['GPUSIM_STATE'] = os.path.join(d, 'state')
        base['GPUSIM_PRESET'] = 'h200'
        limits = os.path.join(d, 'limits.d')
        os.mkdir(limits)
        base['GPUSLICE_LIMITS_DIR'] = limits
        plain = preload_env(base=base)
        uuid = subprocess.run([os.path.join(paths['GS_BUILD_ROOT'], 'tests', 'integration', 'vgpu',
                                            'vgpu_probe'), 'views'], env=plain,
                              capture_output=True, text=True).stdout.split('uuid=')[1].split()[0]
        with open(os.path.join(limits, 'bench.limits'), 'w') as f:
            f.write(f'version 1\nclaim bench\nregion {d}/region\n'
                    f'device {uuid} memory={64 << 30} cores=0\n')
        pre = preload_env(base=base, preload=paths['GS_VGPU_LIB'])
        without, with_ = {}, {}
        for _ in range(3):
            for res, env in ((without, plain), (with_, pre)):
                for k, v in run(prog, env).items():
                    res[k] = min(v, res.get(k, float('inf')))
        print(f"# {'operation':<24}{'without':>10}{'with':>10}{'delta':>10}{'ratio':>8}"
              f"{'target':>10}")
        for op, target in TARGETS.items():
            if op not in without or op not in with_:
                t.ok(False, f'{op} measured')
                continue
            a, b = without[op], with_[op]
            print(f'# {op:<24}{a:>9.1f}n{b:>9.1f}n{b - a:>+9.1f}n{b / a:>8.2f}'
                  f'{"+" + str(int(target)) + "ns":>10}')
            t.ok(True, f'{op}: {a:.1f} ns without, {b:.1f} ns with libvgpu '
                       f'(delta {b - a:+.1f} ns, ratio {b / a:.2f}, target +{target:.0f} ns)')
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
