#!/usr/bin/env python3
"""The preload path under valgrind: a short boundary run with libvgpu preloaded over gpusim
must be free of memory errors (--error-exitcode=1). Skipped in the ASan build."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import MiB, World, have_sim, parse  # noqa: E402


def main():
    t = Tap()
    if 'address' in os.environ.get('GS_SANITIZE', ''):
        t.skip('libvgpu under valgrind', 'ASan build (valgrind and ASan do not mix)')
        return t.done()
    if not shutil.which('valgrind') or not have_sim():
        skip_unbuilt(t, 'libvgpu under valgrind', 'valgrind or gpusim missing')
        return t.done()
    w = World()
    try:
        uuid = w.devices()[0][1]
        w.write_limits('claim-vg', [(uuid, 64 * MiB, 50)], region=w.region('vg'))
        p = subprocess.run(['valgrind', '--error-exitcode=1', '--quiet', w.probe, 'boundary', '80',
                            str(MiB)], env=w.env(), capture_output=True, text=True, timeout=110)
        kv = parse(p.stdout)
        t.is_eq(p.returncode, 0, 'valgrind reports no memory errors on the preload path')
        if p.returncode:
            t.diag(p.stderr[-3000:])
        t.is_eq(kv.get('allocated'), '64', 'and the limit still holds under valgrind')
    finally:
        w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
