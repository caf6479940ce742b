#!/usr/bin/env python3
"""Storm: 64 processes x 4 threads allocate and free under one container limit while a killer
SIGKILLs random processes. gpusim's physical accounting (NVML, read without libvgpu) never shows
the container above its limit; after the sweep the claim's usage is back to 0; bounded time."""
import os
import random
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import MiB, World, have_sim, parse  # noqa: E402

PROCS = 64
THREADS = 4
STORM_MS = 4000
LIMIT = 256 * MiB
DEV0_USED_OFFSET = 128 + 96  # struct gs_region: devices[0].used (shared_region.h)


def region_used(path):
    with open(path, 'rb') as f:
        f.seek(DEV0_USED_OFFSET)
        return struct.unpack('<Q', f.read(8))[0]


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'storm', 'gpusim libcuda.so.1 not built')
        return t.done()
    w = World()
    try:
        uuid = w.devices()[0][1]
        region = w.region('storm')
        w.write_limits('claim-storm', [(uuid, LIMIT, 0)], region=region)
        start = time.monotonic()
        watcher = w.spawn(['watch', STORM_MS + 3000], preload=False)
        watcher.stdout.readline()
        procs = [w.spawn(['storm', THREADS, STORM_MS, 16]) for _ in range(PROCS)]
        rng = random.Random(4)
        kills = 0
        storm_end = time.monotonic() + STORM_MS / 1000.0
        killed = []
        # On a loaded machine one killer round (poll, kill, spawn) can take far longer than its
        # 50 ms sleep: keep killing past the planned window (bounded) until at least 10 kills.
        while (time.monotonic() < storm_end - 1.0 or
               (kills < 10 and time.monotonic() < storm_end + 10.0)):
            time.sleep(0.05)
            live = [p for p in procs if p.poll() is None]
            if not live:
                break
            victim = rng.choice(live)
            victim.send_signal(signal.SIGKILL)
            kills += 1
            procs.remove(victim)
            killed.append(victim)
            left_ms = int((storm_end - time.monotonic()) * 1000)
            procs.append(w.spawn(['storm', THREADS, max(left_ms, 100), 16]))
        finished = 0
        allocs = 0
        for p in procs + killed:
            try:
                out, _ = p.communicate(timeout=STORM_MS / 1000.0 + 20)
            except Exception:  # noqa: BLE001
                p.kill()
                out, _ = p.communicate()
            finished += p in procs and 'storm_done' in out
            allocs += int(parse(out).get('allocs', 0))
        wout, _ = watcher.communicate(timeout=30)
        elapsed = time.monotonic() - start
        t.diag(f'{kills} processes killed, {finished} finished, {allocs} allocations by the '
               f'finished ones, {elapsed:.1f}s')
        t.ok(kills >= 10, 'the killer SIGKILLed at least 10 processes', diag=kills)
        t.is_eq(finished, PROCS, 'the 64 processes alive at the end completed their loops')
        t.ok(allocs > 1000, 'and allocated under the limit all along', diag=allocs)
        kv = parse(wout)
        t.ok(int(kv.get('samples', 0)) > 100, 'physical usage sampled throughout', diag=wout)
        t.ok(int(kv.get('max_used', LIMIT + 1)) <= LIMIT,
             'gpusim physical usage never above the container limit',
             diag=f"max {kv.get('max_used')} > {LIMIT}")
        t.ok(int(kv.get('max_used', 0)) > LIMIT // 2, 'the storm did press against the limit',
             diag=kv.get('max_used'))
        # A new process sweeps the dead ones at start-up. A dead process's charge comes back
        # only once the driver no longer lists it (or could answer at all), so on a loaded
        # machine one look may come too early: retry a bounded number of times. A real leak
        # (usage nobody owns) never goes away and still fails.
        seen = []
        for _ in range(20):
            kv = parse(w.run(['views']).stdout)
            seen.append((kv.get('used_after'), region_used(region)))
            if seen[-1] == (str(MiB), 0):
                break
            time.sleep(0.5)
        t.diag(f'sweep checks (used by a new process, region after it): {seen}')
        t.is_eq(seen[-1][0], str(MiB), 'new process: its 1 MiB is the only usage')
        t.is_eq(seen[-1][1], 0, 'region usage back to 0 after the sweep')
        phys = parse(w.run(['views'], preload=False).stdout)
        t.is_eq(int(phys['cu_total']) - int(phys['cu_free']), 0,
                'gpusim reclaimed every killed process too')
        t.ok(elapsed < 60, 'bounded time: nothing hung', diag=f'{elapsed:.1f}s')
    finally:
        w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
