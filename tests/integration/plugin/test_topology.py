#!/usr/bin/python3
"""Topology attributes and device changes: NVLink domains (gpusim h200x2 linked, t4x2 not),
standard PCI attributes resolved from sysfs (absent, not fatal, when unresolvable), NUMA node,
devices ordered by minor number, and a re-published slice (new generation) when the GPUs change;
API failures while publishing are retried."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pluginlib as pl  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402


def fake_sysfs(root, bdf, root_complex, numa):
    dev = os.path.join(root, 'devices', root_complex, bdf)
    os.makedirs(dev, exist_ok=True)
    with open(os.path.join(dev, 'numa_node'), 'w') as f:
        f.write(f'{numa}\n')
    bus = os.path.join(root, 'bus', 'pci', 'devices')
    os.makedirs(bus, exist_ok=True)
    os.symlink(os.path.relpath(dev, bus), os.path.join(bus, bdf))


def attrs(slices):
    return {d['name']: d['attributes'] for s in slices for d in s['spec']['devices']}


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'topology', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    v = pl.slice_validator()

    with pl.PluginEnv(t, gpusim_preset='h200x2') as env:
        # sysfs knows the first GPU only.
        env.start(wait=False)
        env.kubelet.register()
        s = env.wait_slices(lambda s: len(s) == 1)
        a = attrs(s)
        t.is_eq(sorted(a), ['hami-gpu-0', 'hami-gpu-1'], 'two H200 devices, named by minor')
        for x in s:
            t.valid(v, x, f"slice {x['metadata']['name']} valid against the strict schema")
        t.is_eq([a[n]['nvlinkDomain'] for n in sorted(a)], [{'int': 0}, {'int': 0}],
                'NVLink-connected GPUs share an nvlinkDomain')
        t.ok('resource.kubernetes.io/pcieRoot' not in a['hami-gpu-0'],
             'no sysfs entry: pcieRoot absent')
        t.ok(a['hami-gpu-0']['pcieBusID']['string'].upper().startswith('00000000:18:00'),
             'pcieBusID from NVML')
        bus0 = a['hami-gpu-0']['pcieBusID']['string']
        env.stop()
    with pl.PluginEnv(t, gpusim_preset='h200x2') as env:
        sysroot = os.path.join(env.tmp, 'sys')
        dom, bus, rest = bus0.split(':')
        fake_sysfs(sysroot, f'{int(dom, 16) & 0xffff:04x}:{bus.lower()}:{rest.lower()}',
                   'pci0000:17', 1)
        env.start()
        a = attrs(env.wait_slices(lambda s: len(s) == 1))
        t.is_eq(a['hami-gpu-0'].get('resource.kubernetes.io/pcieRoot'), {'string': 'pci0000:17'},
                'pcieRoot from the sysfs path')
        t.is_eq(a['hami-gpu-0'].get('resource.kubernetes.io/pciBusID'), {'string': '0000:18:00.0'},
                'pciBusID in sysfs form')
        t.is_eq(a['hami-gpu-0'].get('numaNode'), {'int': 1}, 'numaNode from sysfs')
        t.ok('resource.kubernetes.io/pcieRoot' not in a['hami-gpu-1'],
             'second GPU unresolvable: attribute absent, not fatal')

    with pl.PluginEnv(t, gpusim_preset='t4x2') as env:
        # The API fails the first slice writes: the publisher retries with backoff.
        env.api.fail_next(2, status=500, match='/resourceslices', method='POST')
        env.start()
        s = env.wait_slices(lambda s: len(s) == 1, timeout=30)
        a = attrs(s)
        t.is_eq([a[n]['nvlinkDomain'] for n in sorted(a)], [{'int': 0}, {'int': 1}],
                'GPUs without NVLink have their own domains')
        posts = env.api.requests(method='POST', match='/resourceslices')
        t.ok(len(posts) >= 2 and s, 'slice published after injected 500s',
             diag=f'{len(posts)} POSTs')
        t.no_schema_errors(env.slice_errors(), 't4x2 slice valid against the strict schema')

    # Devices change: the config grows from one T4 to two; re-discovery updates the slice.
    with pl.PluginEnv(t) as env:
        cfg = os.path.join(env.tmp, 'gpusim.json')
        with open(cfg, 'w') as f:
            json.dump({'preset': 't4'}, f)
        os.environ['GPUSIM_CONFIG'] = cfg
        try:
            env.start(extra=['--discovery-interval', '1s'])
            s1 = env.wait_slices(lambda s: len(s) == 1)
            t.is_eq(len(s1[0]['spec']['devices']) if s1 else 0, 1, 'one T4 at first')
            with open(cfg, 'w') as f:
                json.dump({'preset': 't4x2'}, f)
            s2 = env.wait_slices(lambda s: len(s) == 1 and len(s[0]['spec']['devices']) == 2, 20)
            t.is_eq(len(s2[0]['spec']['devices']) if s2 else 0, 2,
                    'slice updated when a GPU appears')
            if s1 and s2:
                t.ok(s2[0]['spec']['pool']['generation'] > s1[0]['spec']['pool']['generation'],
                     'pool generation increased')
            t.ok(s2, 'updated slice published')
            if s2:
                t.valid(v, s2[0], 'updated slice valid')
        finally:
            del os.environ['GPUSIM_CONFIG']
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
