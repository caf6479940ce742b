#!/usr/bin/env python3
"""libvgpu.so exports exactly its hooks: every CU_HOOK/NVML_HOOK of cuda.def/nvml.def, plus
dlsym, and nothing else (no gs_*/vgpu_* internals leak into the application's namespace)."""
import os
import re
import subprocess
import sys

from gstest import Tap, env_paths


def main():
    t = Tap()
    paths = env_paths()
    src = os.path.join(paths['GS_SOURCE_ROOT'], 'src', 'vgpu')
    want = {'dlsym'}
    for name, macro in (('cuda.def', 'CU_HOOK'), ('nvml.def', 'NVML_HOOK')):
        with open(os.path.join(src, name)) as f:
            want |= set(re.findall(r'^' + macro + r'\((\w+)\)', f.read(), re.M))
    out = subprocess.run(['nm', '-D', '--defined-only', paths['GS_VGPU_LIB']],
                         capture_output=True, text=True, check=True).stdout
    got = {line.split()[-1].split('@')[0] for line in out.splitlines()
           if line.split() and line.split()[1] in ('T', 'W', 'i')}
    t.ok(len(want) > 30, f'{len(want)} hooks listed in the X-macro files')
    t.is_eq(sorted(got - want), [], 'no symbol exported beyond the hooks')
    t.is_eq(sorted(want - got), [], 'every listed hook is exported')
    data = {line.split()[-1] for line in out.splitlines()
            if line.split() and line.split()[1] in ('D', 'B', 'R')}
    t.is_eq(sorted(data), [], 'no data symbols exported')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
