#!/usr/bin/python3
"""gpuslice-extender's memory under large and hostile bodies (issue 21): RSS of the extender
process (VmRSS, VmHWM from /proc) against the fake API server.
  1. baseline: started, one small filter served;
  2. a filter whose ExtenderArgs carry 10,000 full Node objects (nodeCacheCapable false, each
     Node with labels, annotations, addresses, conditions and images as a kubelet writes them):
     the peak while serving it, and what stays afterwards;
  3. 8 clients sending 60 MiB bodies at once: the peak.
Printed as MiB and as ratios against the baseline measured in the same run; no threshold."""
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration',
                                'extender'))
from extlib import Extender, FakeAPI, create, gpu, node, pod  # noqa: E402
from gstest import Tap  # noqa: E402

N_NODES = int(os.environ.get('GS_BENCH_NODES', '10000'))
MIB = 1 << 20


def status(pid):
    out = {}
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            k, _, v = line.partition(':')
            if k in ('VmRSS', 'VmHWM'):
                out[k] = int(v.split()[0]) * 1024
    return out


def reset_hwm(pid):
    try:
        with open(f'/proc/{pid}/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


def full_node(i):
    n = node(f'node-{i:05d}', [gpu(f'GPU-{i:08x}-0000-4000-8000-000000000000', 15360)])
    n['metadata']['labels'].update({f'example.com/label-{k}': f'value-{k}' for k in range(20)})
    n['metadata']['annotations'].update({f'example.com/annotation-{k}': 'x' * 64
                                         for k in range(10)})
    n['status'].update({
        'addresses': [{'type': 'InternalIP', 'address': f'10.0.{i // 256}.{i % 256}'},
                      {'type': 'Hostname', 'address': f'node-{i:05d}'}],
        'conditions': [{'type': t, 'status': 'False', 'reason': f'Kubelet{t}',
                        'message': 'kubelet has sufficient resources', 'lastHeartbeatTime':
                        '2026-12-01T00:00:00Z'} for t in
                       ('MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready')],
        'images': [{'names': [f'registry.example.com/team/image-{k}@sha256:' + 'a' * 64,
                              f'registry.example.com/team/image-{k}:v1.2.3'],
                    'sizeBytes': 123456789} for k in range(12)],
        'nodeInfo': {'kernelVersion': '6.1.0', 'osImage': 'Debian GNU/Linux 12',
                     'containerRuntimeVersion': 'containerd://1.7.0', 'kubeletVersion': 'v1.33.0',
                     'machineID': 'f' * 32, 'systemUUID': 'e' * 36, 'bootID': 'd' * 36}})
    return n


def post_raw(port, path, body):
    s = socket.create_connection(('127.0.0.1', port), timeout=600)
    s.sendall(b'POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
              b'Content-Length: %d\r\nConnection: close\r\n\r\n' % (path.encode(), len(body)))
    s.sendall(body)
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return int(data.split()[1]) if data.startswith(b'HTTP/') else None


def main():
    t = Tap()
    api = FakeAPI(token='t0k3n')
    api.start()
    ext = Extender(api)
    pid = ext.proc.pid
    try:
        p = create(api, pod('p', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}]))
        small = json.dumps({'pod': p, 'nodes': {'items': [full_node(0)]}}).encode()
        t.is_eq(post_raw(ext.port, '/filter', small), 200, 'baseline filter served')
        base = status(pid)['VmRSS']
        nodes = [full_node(i) for i in range(N_NODES)]
        body = json.dumps({'pod': p, 'nodes': {'items': nodes}}).encode()
        del nodes
        hwm_ok = reset_hwm(pid)
        code = post_raw(ext.port, '/filter', body)
        st = status(pid)
        t.is_eq(code, 200, f'filter over {N_NODES} full Nodes served ({len(body) / MIB:.1f} MiB)')
        t.diag(f'baseline RSS {base / MIB:.1f} MiB')
        if hwm_ok:
            t.diag(f'{N_NODES} full Nodes: peak {st["VmHWM"] / MIB:.1f} MiB '
                   f'({st["VmHWM"] / base:.1f}x baseline)')
        t.diag(f'{N_NODES} full Nodes: stays after {st["VmRSS"] / MIB:.1f} MiB '
               f'(+{(st["VmRSS"] - base) / MIB:.1f} MiB, {st["VmRSS"] / base:.2f}x baseline)')
        after_nodes = st['VmRSS']
        post_raw(ext.port, '/filter', small)  # the cached inventory is now the 1-node one
        st = status(pid)
        t.diag(f'after a 1-node filter replaced the cached inventory: {st["VmRSS"] / MIB:.1f} MiB '
               f'({st["VmRSS"] / base:.2f}x baseline)')

        junk = b'[' + b'0,' * (30 * MIB - 1) + b'0]'  # 60 MiB of valid JSON, not ExtenderArgs
        reset_hwm(pid)
        codes = [None] * 8

        def send(i):
            try:
                codes[i] = post_raw(ext.port, '/filter', junk)
            except OSError:
                codes[i] = 'closed'
        th = [threading.Thread(target=send, args=(i,)) for i in range(8)]
        for x in th:
            x.start()
        for x in th:
            x.join()
        st = status(pid)
        # 'closed': refused (503) at the headers while the client was still sending: the reset
        # reaches the client before the answer.
        t.ok(all(c in (413, 503, 'closed') for c in codes),
             '8 concurrent 60 MiB bodies of 30 million values: none decoded (413 over 4 million '
             'values once received, 503 over the body budget at the headers)', diag=codes)
        if hwm_ok:
            t.diag(f'8 x 60 MiB bodies: peak {st["VmHWM"] / MIB:.1f} MiB '
                   f'(+{(st["VmHWM"] - after_nodes) / MIB:.1f} MiB over the RSS before, '
                   f'{st["VmHWM"] / base:.1f}x baseline); answers {sorted(map(str, codes))}')
    finally:
        t.is_eq(ext.stop(), 0, 'the extender exits cleanly')
        api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
