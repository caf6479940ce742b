#!/usr/bin/env python3
"""gpusim exports exactly its API: every symbol libcuda.so.1 exports is in the cuGetProcAddress
table (src/sim/cuda-exports.def) and the reverse; libnvidia-ml.so.1 exports only nvml*."""
import os
import re
import subprocess
import sys

from gstest import Tap, env_paths


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True,
                         check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if ln.split()[1:2] in (['T'], ['W'])}


def main():
    t = Tap()
    p = env_paths()
    cuda = exported(os.path.join(p['GS_SIM_DIR'], 'libcuda.so.1'))
    with open(os.path.join(p['GS_SOURCE_ROOT'], 'src', 'sim', 'cuda-exports.def')) as f:
        text = f.read()
    table = set(re.findall(r'^X\((\w+),', text, re.M))
    hidden = re.findall(r'^XH\((\w+), "(\w+)"', text, re.M)
    t.ok(len(table) > 100, f'{len(table)} entry points in the table')
    t.is_eq(sorted(cuda - table), [], 'every exported CUDA symbol is in the table')
    t.is_eq(sorted(table - cuda), [], 'every table entry is exported')
    t.ok(len(hidden) >= 1, 'table-only (XH) entries exist')
    t.is_eq(sorted(n for pair in hidden for n in pair if n in cuda), [],
            'table-only entries (the modelled private interface) are not exported')
    nvml = exported(os.path.join(p['GS_SIM_DIR'], 'libnvidia-ml.so.1'))
    t.is_eq(sorted(s for s in nvml if not s.startswith('nvml')), [], 'NVML exports only nvml*')
    t.ok('nvmlDeviceGetProcessUtilization' in nvml and 'nvmlInit_v2' in nvml,
         'NVML entry points present')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
