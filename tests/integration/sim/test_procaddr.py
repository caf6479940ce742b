#!/usr/bin/env python3
"""gpusim's cuGetProcAddress hands out the driver's own functions, like the real driver: under
LD_PRELOAD of libvgpu with a 64 MiB limit, a program that calls gpusim's cuGetProcAddress_v2
directly (found in libcuda.so.1's symbol table, not through dlsym) gets gpusim's cuMemAlloc and
allocates 128 MiB past the limit -- gpusim's physical usage shows it -- while the same program
going through dlsym (libvgpu's cuGetProcAddress hook) is refused. So the hook, not an
interposable table in gpusim, is what enforces the limit."""
import os
import subprocess
import sys

from gstest import Tap, env_paths

sys.path.insert(0, os.path.join(env_paths()['GS_SOURCE_ROOT'], 'tests', 'integration', 'vgpu'))
from vgpulib import MiB, World, parse  # noqa: E402

OOM = str(2)


def main():
    t = Tap()
    helper = sys.argv[1]
    w = World()
    try:
        def run(args, preload):
            p = subprocess.run([helper] + [str(a) for a in args], env=w.env(preload),
                               capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                raise RuntimeError(f'sim_rawproc {args}: exit {p.returncode}: {p.stderr}')
            return parse(p.stdout)

        uuid = run(['uuid'], False)['uuid']
        w.write_limits('claim-raw', [(uuid, 64 * MiB, 0)], region=w.region('raw'))
        kv = run(['alloc', 128 * MiB], True)
        t.is_eq(kv.get('raw_gpa_obj'), 'libcuda.so.1',
                "the driver's cuGetProcAddress_v2 is gpusim's (found in its symbol table)")
        t.is_eq(kv.get('hooked_gpa_obj'), 'libvgpu.so',
                "dlsym's cuGetProcAddress_v2 is libvgpu's hook")
        t.is_eq(kv.get('raw_alloc_obj'), 'libcuda.so.1',
                "gpusim's cuGetProcAddress returns its own cuMemAlloc_v2 under LD_PRELOAD")
        t.is_eq(kv.get('hooked_alloc'), OOM, '128 MiB through the hook: refused at 64 MiB')
        t.is_eq(kv.get('raw_alloc'), '0', '128 MiB through the raw driver table: not refused')
        t.ok(int(kv.get('raw_phys_used', '0')) >= 128 * MiB,
             'gpusim physically holds the 128 MiB (the bypass is real)',
             diag=kv.get('raw_phys_used'))
        kv = run(['alloc', 128 * MiB], False)
        t.is_eq((kv.get('hooked_alloc'), kv.get('raw_alloc')), ('0', '0'),
                'without libvgpu both paths allocate 128 MiB')
        t.is_eq(kv.get('hooked_gpa_obj'), 'libcuda.so.1',
                'without libvgpu dlsym answers the driver too')
    finally:
        w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
