#!/usr/bin/python3
"""Legacy mode device health on gpusim t4x2: a fatal XID on GPU 1 turns its devices Unhealthy in
the open ListAndWatch stream and its entry of hami.io/node-nvidia-register to health false, so the
extender no longer finds two GPUs on the node; the operator's clear (and `recover` after a loss)
flips both back with no restart. A non-fatal XID changes nothing."""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration', 'extender'))
from extlib import Extender, FakeAPI, create, filter_args, pod  # noqa: E402
from gstest import Tap  # noqa: E402

from dplib import Plugin, pb  # noqa: E402

NODE = 'health-node'


def main():
    t = Tap()
    if not os.path.exists(os.path.join(os.environ['GS_SIM_DIR'], 'libnvidia-ml.so.1')):
        t.skip('legacy health', 'gpusim not built')
        return t.done()
    tmp = tempfile.mkdtemp(prefix='gs-dp-health-')
    api = FakeAPI().start()
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}})
    clear = os.path.join(tmp, 'clear')
    os.makedirs(clear)
    plug = Plugin(api, tmp, NODE, preset='t4x2', extra=('--health-clear-dir', clear))
    ext = None

    def smi(*args):
        return subprocess.run([os.environ['GS_GPUSIM_SMI'], *args], env=plug.sim_env,
                              capture_output=True, text=True, timeout=30).returncode

    def registered():
        ann = (api.get('nodes', None, NODE)['metadata'].get('annotations') or {})
        return json.loads(ann.get('hami.io/node-nvidia-register', '[]'))

    def wait_reg(pred, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r = registered()
            if pred(r):
                return r
            time.sleep(0.05)
        return registered()

    try:
        t.ok(plug.kubelet.wait(1), 'the device plugin registers')
        reg = wait_reg(lambda r: len(r) == 2)
        t.is_eq([d.get('health', False) for d in reg], [True, True], 'node annotation: two healthy GPUs')
        uuid1 = reg[1]['id']
        ch, stub = plug.kubelet.plugin(plug.kubelet.requests[0].endpoint)
        stream = stub.ListAndWatch(pb.Empty(), timeout=60)
        q = queue.Queue()

        def reader():
            try:
                for m in stream:
                    q.put({d.ID: d.health for d in m.devices})
            except Exception:  # noqa: BLE001 - the stream ends at teardown
                q.put(None)

        threading.Thread(target=reader, daemon=True).start()

        def next_list(pred, timeout=10):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                try:
                    m = q.get(timeout=max(0.01, end - time.monotonic()))
                except queue.Empty:
                    break
                if m is None or pred(m):
                    return m
            return None

        first = next_list(lambda m: True)
        t.ok(first and all(h == 'Healthy' for h in first.values()) and len(first) == 20,
             'ListAndWatch: 20 devices, all Healthy')

        ext = Extender(api)
        p2 = create(api, pod('two', [{'nvidia.com/gpu': 2, 'nvidia.com/gpumem': 1000}]))
        node = api.get('nodes', None, NODE)
        code, b = ext.post('/filter', filter_args(p2, [node], True))
        t.is_eq(b.get('nodenames') if code == 200 else b, [NODE], 'healthy: a 2-GPU pod fits')

        t.is_eq(smi('inject-xid', '1', '13'), 0, 'non-fatal XID 13 on GPU 1')
        time.sleep(0.5)
        t.is_eq([d.get('health', False) for d in registered()], [True, True], 'XID 13: still healthy')

        t0 = time.monotonic()
        t.is_eq(smi('inject-xid', '1', '48'), 0, 'fatal XID 48 on GPU 1')
        m = next_list(lambda m: any(h == 'Unhealthy' for h in m.values()))
        secs = time.monotonic() - t0
        bad = sorted(k for k, h in (m or {}).items() if h == 'Unhealthy')
        t.ok(m and len(bad) == 10 and all(k.startswith(uuid1) for k in bad),
             f'ListAndWatch: GPU 1\'s 10 devices Unhealthy after {secs:.2f} s', diag=bad)
        reg = wait_reg(lambda r: len(r) == 2 and not r[1].get('health', False))
        t.is_eq([d.get('health', False) for d in reg], [True, False],
                'node annotation: GPU 1 health false (HAMi format: the field omitted when false)')
        code, b = ext.post('/filter', filter_args(p2, [node := api.get('nodes', None, NODE)],
                                                  True))
        t.ok(code == 200 and not b.get('nodenames'),
             'the extender no longer places a 2-GPU pod on the node', diag=b)

        pid = plug.proc.pid
        with open(os.path.join(clear, 'all'), 'w'):
            pass
        m = next_list(lambda m: all(h == 'Healthy' for h in m.values()))
        t.ok(m is not None, 'operator clear: every device Healthy again in the same stream')
        reg = wait_reg(lambda r: len(r) == 2 and all(d.get('health', False) for d in r))
        t.is_eq([d.get('health', False) for d in reg], [True, True], 'node annotation: health true again')
        t.is_eq(plug.proc.pid, pid, 'no restart')
        code, b = ext.post('/filter', filter_args(p2, [api.get('nodes', None, NODE)], True))
        t.is_eq(b.get('nodenames') if code == 200 else b, [NODE], 'the 2-GPU pod fits again')

        t.is_eq(smi('lose', '0'), 0, 'lose GPU 0')
        m = next_list(lambda m: any(h == 'Unhealthy' for h in m.values()))
        t.ok(m and sum(h == 'Unhealthy' for h in m.values()) == 10, 'lost GPU 0: 10 Unhealthy')
        reg = wait_reg(lambda r: len(r) == 2 and not r[0].get('health', False))
        t.is_eq([d.get('health', False) for d in reg], [False, True], 'node annotation: GPU 0 health false')
        t.is_eq(smi('recover', '0'), 0, 'recover GPU 0')
        m = next_list(lambda m: all(h == 'Healthy' for h in m.values()))
        t.ok(m is not None, 'recovered: Healthy again, no restart')
        reg = wait_reg(lambda r: len(r) == 2 and all(d.get('health', False) for d in r))
        t.is_eq([d.get('health', False) for d in reg], [True, True], 'node annotation: health true again')
        stream.cancel()
        ch.close()
    finally:
        if ext:
            ext.stop()
        rc = plug.stop()
        t.is_eq(rc, 0, 'the device plugin exits 0 on SIGTERM')
        api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
