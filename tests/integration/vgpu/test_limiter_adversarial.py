#!/usr/bin/env python3
"""Compute limiter against workloads that do not cooperate (suite 'slow', gpusim, wall clock;
all cases run in parallel, each in its own gpusim world), cap 30 %, long run:
  - one kernel of 5 ms with 10 % of its launches (at random) taking 50 us;
  - the same kernel strictly alternating 5 ms / 50 us;
  - 512 launches of 200 us queued between syncs (one kernel; and a new grid size every launch,
    so every launch is of a kernel never measured before);
  - CUkernel handles (cuLibraryLoadData + cuLibraryGetKernel, library loaded before any
    context) launched as the CUfunction through cuLaunchKernel (dlsym and cuGetProcAddress_v2),
    cuLaunchKernel_ptsz and cuLaunchKernelEx (skipped while gpusim has no cuLibrary* API).
Each must be held to 30 % +-3 pp. The share is what the workload asked gpusim to execute (the
kernel durations it set, summed) over the wall time it ran, never libvgpu's own books."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gstest  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import World, have_sim, parse  # noqa: E402

RUN_MS = int(os.environ.get('GS_COMPUTE_RUN_MS', '30000'))
CAP = 30

CASES = [
    ('5 ms kernel, 10 % of launches 50 us', ['mixed', 5000, 50, 'random10', RUN_MS], {}),
    ('strictly alternating 5 ms / 50 us', ['mixed', 5000, 50, 'alternate', RUN_MS], {}),
    ('512 launches of 200 us per sync', ['queue', 200, 512, RUN_MS], {}),
    ('512 launches of 200 us per sync, a new grid each', ['queue', 200, 512, RUN_MS, 'new-grid'],
     {}),
    ('CUkernel via cuLaunchKernel', ['kernel', 'launch', 1000, RUN_MS], {}),
    ('CUkernel via cuLaunchKernel (cuGetProcAddress_v2)', ['kernel', 'launch', 1000, RUN_MS],
     {'GS_PROBE_RESOLVE': 'getproc'}),
    ('CUkernel via cuLaunchKernel_ptsz', ['kernel', 'ptsz', 1000, RUN_MS], {}),
    ('CUkernel via cuLaunchKernelEx', ['kernel', 'ex', 1000, RUN_MS], {}),
]


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'limiter adversarial workloads', 'gpusim libcuda.so.1 not built')
        return t.done()
    probe = os.path.join(gstest.env_paths()['GS_BUILD_ROOT'], 'tests', 'integration', 'vgpu',
                         'limiter_probe')
    worlds, jobs = [], []
    try:
        for name, args, extra in CASES:
            w = World()
            worlds.append(w)
            uuid = w.devices()[0][1]
            w.write_limits('c30', [(uuid, 0, CAP)], region=w.region('r'))
            p = subprocess.Popen([probe] + [str(a) for a in args], env=w.env(extra=extra),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            jobs.append((name, p))
        for name, p in jobs:
            out, err = p.communicate(timeout=RUN_MS / 1000 + 180)
            kv = parse(out)
            if p.returncode:
                t.ok(False, f'{name}: probe ran', diag=err.strip())
                continue
            if kv.get('unsupported'):
                t.skip(name, 'gpusim has no cuLibraryLoadData/cuLibraryGetKernel yet')
                continue
            share = 100.0 * int(kv['busy_us']) / 1000.0 / int(kv['wall_ms'])
            t.ok(abs(share - CAP) <= 3, f'{name}: long-run share {share:.1f} % within 30 +-3 pp',
                 diag=f'launches {kv["launches"]} busy {kv["busy_us"]} us wall {kv["wall_ms"]} ms')
    finally:
        for w in worlds:
            w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
