#!/usr/bin/env python3
"""Ways past a libvgpu memory limit that a hostile client tries (issue 12), judged from gpusim's
own books (its state file: physical usage now and its high-water mark), never from libvgpu's:
  - VMM: cuMemRelease of a mapped handle (and retain + unmap) in a loop
  - a memory pool destroyed while its allocations are live, in a loop
  - stream-ordered allocations from many threads of one process, and several processes at once
  - cuMemAllocPitch padding from many threads (rows padded to about twice their width)
  - graph memory (allocation nodes get physical memory at launch)
  - the v1 entry points (cuMemAlloc, cuMemAllocPitch, cuMemGetInfo), host memory untouched
  - a device beyond the region's device table, an unmappable region (fail closed)
Each attack is first run without libvgpu to show that gpusim really lets it past the limit."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import MiB, World, have_sim, parse  # noqa: E402

OOM = '2'
LIMIT = 1024


class Escape(World):
    """A World whose program is vgpu_escape, with a 1 GiB limit on device 0 by default."""

    def __init__(self, preset='t4', limit_mib=LIMIT, devices=None):
        super().__init__(preset)
        self.probe = os.path.join(os.path.dirname(self.probe), 'vgpu_escape')
        if devices is None:
            devices = [(self.uuid0(), limit_mib * MiB, 0)]
        self.write_limits('claim-esc', devices, region=self.region('esc'))

    def uuid0(self):
        return self.uuids()[0]

    def uuids(self):
        # the probe of the other tests knows how to list devices; use it without preload
        probe = os.path.join(os.path.dirname(self.probe), 'vgpu_probe')
        p = subprocess.run([probe, 'views'], env=self.env(preload=False), capture_output=True,
                           text=True, timeout=60)
        res = []
        for line in p.stdout.splitlines():
            kv = parse(line)
            if 'uuid' in kv:
                res.append(kv['uuid'])
        return res


def phys_ok(t, kv, name, limit_mib=LIMIT):
    peak = int(kv.get('phys_peak', -1))
    t.ok(0 <= peak <= limit_mib * MiB, f'{name}: gpusim never held more than the limit',
         diag=f'peak {peak / MiB:.0f} MiB > {limit_mib} MiB')


def vmm(t):
    w = Escape()
    try:
        kv = parse(w.run(['vmm', 64, 64], preload=False).stdout)
        t.ok(int(kv.get('phys_peak', 0)) >= 4096 * MiB,
             'vmm: without libvgpu, release-while-mapped reaches 4096 MiB on gpusim',
             diag=kv)
    finally:
        w.close()
    for cmd in ('vmm', 'vmm_retain'):
        w = Escape()
        try:
            p = w.run([cmd, 64, 64], check=False)
            if p.returncode == 3:
                t.skip(f'{cmd}: release while mapped', p.stdout.strip() + ' in gpusim')
                continue
            kv = parse(p.stdout)
            t.is_eq((kv.get('ok'), kv.get('first_fail')), ('16', OOM),
                    f'{cmd}: 16 handles of 64 MiB are admitted, the 17th is refused')
            phys_ok(t, kv, cmd)
        finally:
            w.close()


def pool_destroy(t):
    w = Escape()
    try:
        kv = parse(w.run(['pooldestroy', 20, 256], preload=False).stdout)
        t.ok(int(kv.get('phys_peak', 0)) >= 4096 * MiB,
             'pool destroy: without libvgpu, destroyed pools with live blocks pile up', diag=kv)
    finally:
        w.close()
    w = Escape()
    try:
        out = w.run(['pooldestroy', 20, 256]).stdout
        kv = parse(out)
        t.is_eq((kv.get('ok'), kv.get('first_fail')), ('4', OOM),
                'pool destroy: 4 pools of 256 MiB, the 5th allocation refused')
        t.is_eq(kv.get('plain_after'), OOM,
                'pool destroy: memory of destroyed pools is not available to cuMemAlloc')
        phys_ok(t, kv, 'pool destroy')
        t.is_eq(kv.get('after_free_alloc'), '0',
                'pool destroy: once the live blocks are freed the memory comes back')
    finally:
        w.close()


def storms(t):
    for cmd, threads, iters, mib in (('async', 8, 300, 256), ('pitch', 8, 300, 512)):
        w = Escape()
        try:
            kv = parse(w.run([cmd, threads, iters, mib], timeout=120).stdout)
            t.ok(int(kv.get('ok', 0)) > 0 and int(kv.get('refused', 0)) > 0,
                 f'{cmd}: {threads} threads both allocate and hit the limit', diag=kv)
            phys_ok(t, kv, f'{cmd} x{threads} threads')
        finally:
            w.close()
    # several processes of one claim at once, both kinds, sharing the region
    w = Escape()
    try:
        procs = [w.spawn(['async', 4, 200, 256]) for _ in range(3)]
        procs += [w.spawn(['pitch', 4, 200, 512]) for _ in range(2)]
        outs = [p.communicate(timeout=180)[0] for p in procs]
        t.ok(all(p.returncode == 0 for p in procs), 'concurrent processes: all ran to the end',
             diag=[p.returncode for p in procs])
        kv = parse(subprocess.run([w.probe, 'phys'], env=w.env(preload=False),
                                  capture_output=True, text=True, timeout=30).stdout)
        phys_ok(t, kv, '5 processes x 4 threads (async + pitch)')
        t.is_eq(kv.get('phys_used'), '0', 'concurrent processes: everything given back')
        del outs
    finally:
        w.close()


def v1_and_host(t):
    w = Escape(limit_mib=64)
    try:
        p = w.run(['v1', 1], check=False)
        if p.returncode == 3:
            t.skip('v1 entry points', p.stdout.strip() + ' in gpusim')
        else:
            lines = p.stdout.splitlines()
            first = parse(lines[0]) if lines else {}
            t.is_eq((first.get('info'), first.get('total')), ('0', str(64 * MiB)),
                    'cuMemGetInfo (v1): total is the limit')
            kv = parse(p.stdout)
            t.is_eq((kv.get('ok'), kv.get('first_fail')), ('64', OOM),
                    'cuMemAlloc/cuMemAllocPitch (v1): 64 x 1 MiB admitted, the next refused')
            peak = [parse(x) for x in lines if 'phys_peak' in x]
            t.ok(peak and int(peak[0]['phys_peak']) <= 64 * MiB,
                 'v1: gpusim never held more than the limit', diag=peak)
            t.is_eq(kv.get('free_after'), str(64 * MiB), 'cuMemFree (v1) gives it back')
        p = w.run(['host', 256], check=False)
        if p.returncode == 3:
            t.skip('host memory', p.stdout.strip() + ' in gpusim')
        else:
            kv = parse(p.stdout)
            t.is_eq((kv.get('host_alloc'), kv.get('host_register')), ('0', '0'),
                    'cuMemHostAlloc / cuMemHostRegister work under libvgpu (256 MiB > limit)')
            t.is_eq(kv.get('dev_alloc'), '0', 'host memory is not charged to the device')
            t.is_eq((kv.get('host_free'), kv.get('host_unregister')), ('0', '0'),
                    'host memory is freed / unregistered')
    finally:
        w.close()


def graph_memory(t):
    w = Escape()
    try:
        p = w.run(['graph', 8, 256], preload=False, check=False)
        if p.returncode == 3:
            t.skip('graph memory', p.stdout.strip() + ' in gpusim')
            return
        kv = parse(p.stdout)
        t.ok(int(kv.get('phys_peak', 0)) >= 2048 * MiB,
             'graph memory: without libvgpu 8 launched graphs hold 2048 MiB', diag=kv)
    finally:
        w.close()
    w = Escape()
    try:
        out = w.run(['graph', 8, 256]).stdout
        lines = [parse(x) for x in out.splitlines()]
        kv = parse(out)
        t.is_eq((kv.get('ok'), kv.get('first_fail')), ('4', OOM),
                'graph memory: 4 graphs of 256 MiB launch, the 5th launch is refused')
        peak = [x for x in lines if 'phys_peak' in x]
        t.ok(peak and int(peak[0]['phys_peak']) <= LIMIT * MiB,
             'graph memory: gpusim never held more than the limit', diag=peak)
        t.is_eq(kv.get('freed_alloc'), OOM,
                'graph memory: freed graph allocations stay with the device until trimmed')
        t.is_eq((kv.get('trim'), kv.get('trimmed_alloc')), ('0', '0'),
                'graph memory: cuDeviceGraphMemTrim gives it back')
    finally:
        w.close()


def fail_closed(t):
    """A 9th limited device shares one limit among processes (a region table of 8 devices once
    gave it a private limit per process; the table now holds GS_REGION_MAX_DEVICES, and a device
    beyond it is refused: unit test vgpu/region); a region that cannot be mapped refuses its
    devices."""
    w = World()
    try:
        cfg = os.path.join(w.dir, 'nine.json')
        with open(cfg, 'w') as f:
            json.dump({'devices': [{'name': f'Sim T4 {i}', 'memory': '15Gi',
                                    'compute_capability': '7.5'} for i in range(9)]}, f)
        base = dict(os.environ, GPUSIM_CONFIG=cfg)
        probe = os.path.join(os.path.dirname(w.probe), 'vgpu_escape')
        views = subprocess.run([w.probe, 'views'], env=w.env(preload=False, base=base),
                               capture_output=True, text=True, timeout=60).stdout
        uuids = [parse(x)['uuid'] for x in views.splitlines() if 'uuid=' in x]
        t.is_eq(len(uuids), 9, 'gpusim shows 9 devices')
        w.write_limits('claim-9', [(u, 64 * MiB, 0) for u in uuids], region=w.region('nine'))

        def dev(ordinal):
            p = subprocess.run([probe, 'dev', str(ordinal), '200', '1'], env=w.env(base=base),
                               capture_output=True, text=True, timeout=60)
            return parse(p.stdout)
        kv = dev(0)
        t.is_eq((kv.get('ok'), kv.get('first_fail')), ('64', OOM),
                'devices 1-8 of 9: exactly the 64 MiB limit')
        # two processes on the 9th device at once: one limit between them (a region table of 8
        # devices once left it to a private, per-process limit)
        holder = subprocess.Popen([probe, 'dev', '8', '200', '1', 'wait'], env=w.env(base=base),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = parse(holder.stdout.readline() + holder.stdout.readline())
        kv = dev(8)
        holder.stdin.close()
        holder.wait(timeout=60)
        t.is_eq((first.get('ok'), kv.get('ok')), ('64', '0'),
                'device 9 of 9: 64 MiB for the first process, nothing more for a second')
        t.ok(int(kv.get('phys_peak', -1)) <= 64 * MiB,
             'device 9: gpusim never held more than the limit', diag=kv)
        os.unlink(os.path.join(w.limits, 'claim-9.limits'))
        w.write_limits('claim-bad', [(uuids[0], 64 * MiB, 0)],
                       region='/nonexistent-gpuslice-dir/region')
        kv = dev(0)
        t.is_eq((kv.get('ok'), kv.get('first_fail')), ('0', OOM),
                'a region that cannot be mapped refuses its device (not a private limit)')
    finally:
        w.close()


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'libvgpu escapes', 'gpusim libcuda.so.1 not built')
        return t.done()
    t.run('vmm', vmm, t)
    t.run('pool_destroy', pool_destroy, t)
    t.run('storms', storms, t)
    t.run('v1_and_host', v1_and_host, t)
    t.run('graph_memory', graph_memory, t)
    t.run('fail_closed', fail_closed, t)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
