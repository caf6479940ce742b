#!/usr/bin/env python3
"""Compute-limiter accuracy on gpusim (suite 'slow'; gpusim kernels are wall-clock sleeps, so
cases run in parallel, each on its own GPUSIM_STATE):
  - caps 10/30/50/70 x kernels 50 us / 1 ms / 10 ms: long-run busy share within +-3 pp of the cap,
    every 1 s window within +-10 pp;
  - two containers capped 10 and 90 on one saturated device complete work 1:9 (+-10 % relative);
  - no cap adds no throttling (same launch count as without libvgpu, within 3 %);
  - the other launch paths (cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch, and
    cuLaunchKernel resolved through cuGetProcAddress) and two processes of one claim are held to
    the cap too (30 %, +-3 pp).
The busy share is what the device executed: launches x kernel time / wall time."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import prepare_region, MiB, World, have_sim, parse  # noqa: E402

RUN_MS = int(os.environ.get('GS_COMPUTE_RUN_MS', '30000'))
CAPS = (10, 30, 50, 70)
KERNELS_US = (50, 1000, 10000)


def share_stats(kv, us):
    buckets = [int(x) for x in kv['buckets'].split(',') if x]
    launches = int(kv['launches'])
    wall_ms = int(kv['wall_ms'])
    total = 100.0 * launches * us / 1000.0 / wall_ms
    windows = []
    # 1 s windows = 10 buckets of 100 ms, from the start (the bucket starts full: at most
    # GS_REGION_BURST_NS x cap of extra work in the first window)
    for s in range(0, len(buckets) - 9, 10):
        windows.append(100.0 * sum(buckets[s:s + 10]) * us / 1e6)
    return total, windows


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'compute accuracy', 'gpusim libcuda.so.1 not built')
        return t.done()
    worlds, jobs = [], []
    try:
        for cap in CAPS:
            for us in KERNELS_US:
                w = World()
                worlds.append(w)
                uuid = w.devices()[0][1]
                w.write_limits(f'c{cap}', [(uuid, 0, cap)], region=w.region('r'))
                jobs.append((f'cap {cap}% kernel {us}us', cap, us,
                             w.spawn(['launch', us, RUN_MS])))
        # 10:90 on one device: two claims (two regions), one gpusim state
        w = World()
        worlds.append(w)
        uuid = w.devices()[0][1]
        os.mkdir(os.path.join(w.dir, 'a'))
        os.mkdir(os.path.join(w.dir, 'b'))
        pair = []
        for name, cap in (('a', 10), ('b', 90)):
            lim = os.path.join(w.dir, name)
            with open(os.path.join(lim, f'{name}.limits'), 'w') as f:
                prepare_region(w.region('reg-' + name))
                f.write(f'version 1\nclaim {name}\nregion {w.region("reg-" + name)}\n'
                        f'device {uuid} memory=0 cores={cap}\n')
            # queue 16 launches between syncs: the device never idles while both want it
            pair.append(w.spawn(['launch', 1000, RUN_MS, 16], extra={'GPUSLICE_LIMITS_DIR': lim}))
        # other launch paths, and two processes sharing one claim, at cap 30
        others = []
        for variant in ('ex', 'coop', 'graph', 'getproc', 'two-processes'):
            w = World()
            worlds.append(w)
            uuid = w.devices()[0][1]
            w.write_limits('p30', [(uuid, 0, 30)], region=w.region('r'))
            if variant == 'getproc':
                procs = [w.spawn(['launch', 1000, RUN_MS], extra={'GS_PROBE_RESOLVE': 'getproc'})]
            elif variant == 'two-processes':
                procs = [w.spawn(['launch', 1000, RUN_MS]) for _ in range(2)]
            else:
                procs = [w.spawn(['launchx', variant, 1000, RUN_MS])]
            others.append((variant, 2000 if variant == 'graph' else 1000, procs))
        # uncapped vs no preload
        w = World()
        worlds.append(w)
        uuid = w.devices()[0][1]
        w.write_limits('free', [(uuid, 0, 0)], region=w.region('r'))
        unc = w.spawn(['launch', 1000, min(RUN_MS, 5000)])
        w2 = World()
        worlds.append(w2)
        base = w2.spawn(['launch', 1000, min(RUN_MS, 5000)], preload=False)

        for name, cap, us, p in jobs:
            out, err = p.communicate(timeout=RUN_MS / 1000 + 120)
            if p.returncode:
                t.ok(False, f'{name}: probe ran', diag=err)
                continue
            total, windows = share_stats(parse(out), us)
            t.ok(abs(total - cap) <= 3, f'{name}: long-run share {total:.1f}% within 3 pp',
                 diag=f'share {total:.2f}%')
            worst = max((abs(x - cap) for x in windows), default=0)
            t.ok(windows and worst <= 10,
                 f'{name}: every 1 s window within 10 pp (worst {worst:.1f} pp)',
                 diag=' '.join(f'{x:.0f}' for x in windows))
        res = []
        for p in pair:
            out, err = p.communicate(timeout=RUN_MS / 1000 + 120)
            res.append(int(parse(out).get('launches', 0)))
        ratio = res[1] / res[0] if res[0] else 0
        t.ok(abs(ratio - 9.0) <= 0.9, f'10:90 containers complete work 1:{ratio:.2f} (1:9 +-10 %)',
             diag=f'launches {res}')
        for variant, us, procs in others:
            busy = 0.0
            for p in procs:
                out, err = p.communicate(timeout=RUN_MS / 1000 + 120)
                kv = parse(out)
                busy += 100.0 * int(kv.get('launches', 0)) * us / 1000.0 / int(kv.get('wall_ms', 1))
            t.ok(abs(busy - 30) <= 3, f'{variant}: held to the 30 % cap ({busy:.1f} %)',
                 diag=f'share {busy:.2f}%')
        ou, _ = unc.communicate(timeout=120)
        ob, _ = base.communicate(timeout=120)
        lu, lb = int(parse(ou)['launches']), int(parse(ob)['launches'])
        t.ok(lu >= 0.97 * lb, f'no cap: {lu} launches vs {lb} without libvgpu (no throttling)')
    finally:
        for w in worlds:
            w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
