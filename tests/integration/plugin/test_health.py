#!/usr/bin/python3
"""Device health end to end on gpusim t4x2 and the fake API server: a fatal XID on GPU 1 taints
hami-gpu-1 in the ResourceSlice (NoSchedule, key under the driver's name), a Warning Event on the
Node says why, `gpuslice schedule` against the published slices places a new claim on GPU 0; the
operator's clear removes the taint with no restart. A lost GPU taints gpu-lost until `recover`; a
claim that tolerates the taint may still land there. A non-fatal XID gives an informational
(effect None) taint only. Random XIDs and losses never crash the plugin."""
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
import pluginlib as pl  # noqa: E402
from gstest import Tap, env_paths, skip_unbuilt  # noqa: E402

P = env_paths()
KEY_XID = pl.DRIVER + '/xid'
KEY_LOST = pl.DRIVER + '/gpu-lost'


def smi(env, *args):
    e = env.env()
    return subprocess.run([P['GS_GPUSIM_SMI'], *args], env=e, capture_output=True, text=True,
                          timeout=30)


def taints(slices):
    return {d['name']: d.get('taints', []) for s in slices for d in s['spec']['devices']}


def wait_taints(env, pred, timeout=10.0):
    start = time.monotonic()
    s = env.wait_slices(lambda s: pred(taints(s)), timeout=timeout)
    return taints(s), time.monotonic() - start


def node_events(env):
    return [e for e in env.api.list('events')
            if e.get('involvedObject', {}).get('kind') == 'Node'
            and e['involvedObject'].get('name') == pl.NODE]


def schedule(env, claim):
    """`gpuslice schedule` over the published slices + the lab's DeviceClass; the device the
    claim gets (None when unschedulable)."""
    path = os.path.join(env.tmp, 'sched.json')
    dc = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
          'metadata': {'name': pl.DRIVER},
          'spec': {'selectors': [{'cel': {'expression': f'device.driver == "{pl.DRIVER}"'}}]}}
    node = {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': pl.NODE}}
    with open(path, 'w') as f:
        json.dump({'apiVersion': 'v1', 'kind': 'List',
                   'items': [dc, node, *env.slices(), claim]}, f)
    p = subprocess.run([P['GS_GPUSLICE'], 'schedule', '-f', path, '-o', 'json'],
                       capture_output=True, text=True, timeout=60)
    try:
        items = json.loads(p.stdout)['items']
        return items[0]['status']['allocation']['devices']['results'][0]['device'], p.stderr
    except (ValueError, KeyError, IndexError):
        return None, p.stderr


def new_claim(name, tolerate=None):
    req = {'deviceClassName': pl.DRIVER, 'allocationMode': 'ExactCount', 'count': 1,
           'capacity': {'requests': {'cores': '30', 'memory': '1Gi'}}}
    if tolerate:
        req['tolerations'] = [{'key': tolerate, 'operator': 'Exists', 'effect': 'NoSchedule'}]
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
            'metadata': {'name': name, 'namespace': 'test-dra'},
            'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': req}]}}}


class HealthStream:
    """The kubelet's side of /v1alpha1.DRAResourceHealth/NodeWatchResources on dra.sock: every
    list received, as {device: (health name, message)}."""

    def __init__(self, env, own_channel=False):
        pl.protos()
        import dra_health_v1alpha1_pb2 as hpb  # noqa: PLC0415 - compiled by pl.protos()
        import dra_health_v1alpha1_pb2_grpc as hpbg  # noqa: PLC0415
        self.hpb = hpb
        sock = os.path.join(env.dirs['plugin'], 'dra.sock')
        # own_channel: not closed by the kubelet emulator at teardown, so the plugin stops with
        # the stream still open.
        self.ch = (grpc.insecure_channel('unix:' + sock) if own_channel
                   else env.kubelet.channel(sock))
        self.call = hpbg.DRAResourceHealthStub(self.ch).NodeWatchResources(
            hpb.NodeWatchResourcesRequest(), timeout=120)
        self.q = queue.Queue()
        self.pools = set()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for m in self.call:
                self.pools |= {d.device.pool_name for d in m.devices}
                self.q.put({d.device.device_name: (self.hpb.HealthStatus.Name(d.health), d.message)
                            for d in m.devices})
        except Exception:  # noqa: BLE001 - cancelled at the end
            self.q.put(None)

    def wait(self, pred, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                m = self.q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if m is None or pred(m):
                return m
        return None

    def close(self):
        self.call.cancel()
        self.ch.close()


def main():
    t = Tap()
    if not pl.gpusim_available() or not os.path.exists(P['GS_GPUSIM_SMI']):
        skip_unbuilt(t, 'device health', 'gpusim not built')
        return t.done()
    with pl.PluginEnv(t, gpusim_preset='t4x2') as env:
        clear_dir = os.path.join(env.tmp, 'health-clear')
        os.makedirs(clear_dir)
        env.start(extra=['--health-clear-dir', clear_dir])
        tt, _ = wait_taints(env, lambda x: len(x) == 2)
        t.is_eq(tt, {'hami-gpu-0': [], 'hami-gpu-1': []}, 'two healthy GPUs, no taints')
        hs = HealthStream(env)
        m = hs.wait(lambda m: True)
        t.is_eq({k: v[0] for k, v in (m or {}).items()},
                {'hami-gpu-0': 'HEALTHY', 'hami-gpu-1': 'HEALTHY'},
                'health stream (NodeWatchResources): both devices HEALTHY')
        t.is_eq(hs.pools, {pl.NODE}, 'devices identified in the pool named after the node')
        dev, _ = schedule(env, new_claim('before'))
        t.is_eq(dev, 'hami-gpu-0', 'healthy node: first fit is hami-gpu-0')

        # Non-fatal XID: informational taint only.
        t.is_eq(smi(env, 'inject-xid', '1', '13').returncode, 0, 'inject XID 13 on GPU 1')
        tt, secs = wait_taints(env, lambda x: x.get('hami-gpu-1'))
        g1 = tt.get('hami-gpu-1', [])
        t.is_eq([(x['key'], x.get('value'), x['effect']) for x in g1], [(KEY_XID, '13', 'None')],
                f'non-fatal XID 13: an informational taint (effect None) after {secs:.2f} s')

        # Fatal XID on GPU 1.
        t0 = time.monotonic()
        t.is_eq(smi(env, 'inject-xid', '1', '48').returncode, 0, 'inject XID 48 on GPU 1')
        tt, _ = wait_taints(env, lambda x: any(y['effect'] == 'NoSchedule'
                                               for y in x.get('hami-gpu-1', [])))
        secs = time.monotonic() - t0
        g1 = tt.get('hami-gpu-1', [])
        t.is_eq([(x['key'], x.get('value'), x['effect']) for x in g1], [(KEY_XID, '48', 'NoSchedule')],
                f'fatal XID 48: NoSchedule taint {KEY_XID}=48')
        t.ok(secs < 10, f'taint published {secs:.2f} s after the injection (issue: within 2 s)')
        t.ok(all('timeAdded' in x for x in g1), 'the taint carries timeAdded')
        t.is_eq(tt.get('hami-gpu-0'), [], 'GPU 0 untainted')
        t.no_schema_errors(env.slice_errors(), 'the tainted slice is valid resource.k8s.io/v1')
        ev = pl.wait_for(lambda: [e for e in node_events(env) if e['reason'] == 'GPUUnhealthy'])
        t.ok(ev and ev[0]['type'] == 'Warning' and 'XID 48' in ev[0]['message']
             and 'hami-gpu-1' in ev[0]['message'],
             'a Warning Event on the Node names the GPU and the XID',
             ev[0]['message'] if ev else node_events(env))
        m = hs.wait(lambda m: m.get('hami-gpu-1', ('',))[0] == 'UNHEALTHY')
        t.ok(m and 'XID 48' in m['hami-gpu-1'][1] and m['hami-gpu-0'][0] == 'HEALTHY',
             'health stream: hami-gpu-1 UNHEALTHY with the reason, hami-gpu-0 HEALTHY', m)
        dev, err = schedule(env, new_claim('after-xid'))
        t.ok(dev == 'hami-gpu-0', 'a new claim lands on GPU 0', f'{dev} {err}')

        # The operator clears it: no restart.
        pid = env.proc.pid
        bad = subprocess.run([P['GS_GPUSLICE'], 'health-clear', '--health-clear-dir', clear_dir,
                              '../etc/passwd'], capture_output=True, text=True)
        t.ok(bad.returncode == 2 and 'is not hami-gpu-<minor>' in bad.stderr,
             'gpuslice health-clear refuses a name that is not a GPU', bad.stderr)
        r = subprocess.run([P['GS_GPUSLICE'], 'health-clear', '--health-clear-dir', clear_dir,
                            'hami-gpu-1'], capture_output=True, text=True)
        t.is_eq(r.returncode, 0, 'gpuslice health-clear hami-gpu-1 (the operator\'s clear)')
        tt, secs = wait_taints(env, lambda x: not any(y['effect'] == 'NoSchedule'
                                                      for y in x.get('hami-gpu-1', [])))
        t.ok(not any(y['effect'] == 'NoSchedule' for y in tt.get('hami-gpu-1', [])),
             f'operator clear: the NoSchedule taint is gone after {secs:.2f} s')
        t.is_eq(env.proc.pid, pid, 'same plugin process (no restart)')
        m = hs.wait(lambda m: m.get('hami-gpu-1', ('',))[0] == 'HEALTHY')
        t.ok(m is not None, 'health stream: hami-gpu-1 HEALTHY again on the same stream')
        ev = pl.wait_for(lambda: [e for e in node_events(env) if e['reason'] == 'GPUHealthy'])
        t.ok(ev and ev[0]['type'] == 'Normal', 'a Normal Event says it is healthy again')

        # Lose GPU 0: gpu-lost taint; the claim goes to GPU 1; recover brings it back.
        t.is_eq(smi(env, 'lose', '0').returncode, 0, 'lose GPU 0')
        tt, secs = wait_taints(env, lambda x: any(y['key'] == KEY_LOST
                                                  for y in x.get('hami-gpu-0', [])))
        lost = [y for y in tt.get('hami-gpu-0', []) if y['key'] == KEY_LOST]
        t.ok(lost and lost[0]['effect'] == 'NoSchedule',
             f'lost GPU 0: {KEY_LOST} NoSchedule after {secs:.2f} s', tt)
        dev, err = schedule(env, new_claim('after-lose'))
        t.ok(dev == 'hami-gpu-1', 'GPU 0 lost: a new claim lands on GPU 1 (usable again)', f'{dev} {err}')
        dev, err = schedule(env, new_claim('tolerates', tolerate=KEY_LOST))
        t.ok(dev == 'hami-gpu-0', 'a claim that tolerates gpu-lost may still get GPU 0', f'{dev} {err}')
        t.is_eq(smi(env, 'recover', '0').returncode, 0, 'recover GPU 0')
        tt, secs = wait_taints(env, lambda x: not any(y['effect'] == 'NoSchedule'
                                                      for y in x.get('hami-gpu-0', [])))
        t.ok(not any(y['effect'] == 'NoSchedule' for y in tt.get('hami-gpu-0', [])),
             f'recovered: taint gone after {secs:.2f} s, no restart')
        dev, _ = schedule(env, new_claim('after-recover'))
        t.is_eq(dev, 'hami-gpu-0', 'GPU 0 usable again')

        # Random XIDs and losses: the plugin survives and ends consistent after recovery.
        rnd = random.Random(30)
        for _ in range(40):
            g = str(rnd.randrange(2))
            op = rnd.choice(['xid', 'xid', 'lose', 'recover'])
            if op == 'xid':
                smi(env, 'inject-xid', g, str(rnd.randrange(1, 1024)))
            else:
                smi(env, op, g)
        smi(env, 'recover', '0')
        smi(env, 'recover', '1')
        with open(os.path.join(clear_dir, 'all'), 'w'):
            pass
        tt, _ = wait_taints(env, lambda x: len(x) == 2 and not any(
            y['effect'] == 'NoSchedule' for d in x.values() for y in d))
        t.ok(env.proc.poll() is None, 'the plugin survived 40 random faults')
        hs.close()
        open_stream = HealthStream(env, own_channel=True)
        t.ok(open_stream.wait(lambda m: True) is not None,
             'a health stream is open while the plugin stops (teardown: exit 0)')
        t.ok(not any(y['effect'] == 'NoSchedule' for d in tt.values() for y in d),
             'after recover + clear all: no NoSchedule taint left', tt)
        # leaving the block stops the plugin with `open_stream` still open
    open_stream.ch.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
