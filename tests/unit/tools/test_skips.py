#!/usr/bin/env python3
"""Skips that CI turns into failures: with GPUSLICE_REQUIRE_SIM=1 a test program whose gpusim or
daemon is not built fails (gstest.skip_unbuilt) instead of reporting one green SKIP; with
GPUSLICE_REQUIRE_REFERENCE=1 a missing reference oracle fails (gstest.skip_reference). Each case
runs a child Python that reports through gstest and checks the TAP it prints. .ci/run sets both."""
import os
import subprocess
import sys

from gstest import Tap

CHILD = '''
import sys
from gstest import Tap, skip_unbuilt
t = Tap()
skip_unbuilt(t, 'libvgpu memory tests', 'gpusim libcuda.so.1 not built')
sys.exit(t.done())
'''


def child(env_extra):
    env = dict(os.environ)
    env.pop('GPUSLICE_REQUIRE_SIM', None)
    env.update(env_extra)
    return subprocess.run([sys.executable, '-c', CHILD], capture_output=True, text=True, env=env,
                          timeout=60)


def main():
    t = Tap()
    r = child({})
    t.ok(r.returncode == 0 and 'ok 1 - libvgpu memory tests # SKIP gpusim libcuda.so.1 not built'
         in r.stdout, 'without GPUSLICE_REQUIRE_SIM a missing gpusim is a skip', diag=r.stdout)
    r = child({'GPUSLICE_REQUIRE_SIM': '1'})
    t.ok(r.returncode != 0 and r.stdout.startswith('not ok 1 - libvgpu memory tests: gpusim '
                                                   'libcuda.so.1 not built'),
         'with GPUSLICE_REQUIRE_SIM=1 it is a failure naming what is missing', diag=r.stdout)
    t.ok('# SKIP' not in r.stdout, 'and not a skip', diag=r.stdout)

    ci = open(os.path.join(os.environ['GS_SOURCE_ROOT'], '.ci', 'run')).read()
    for var in ('GPUSLICE_REQUIRE_SIM', 'GPUSLICE_REQUIRE_REFERENCE'):
        t.ok(f'export {var}=1' in ci, f'.ci/run sets {var}=1')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
