#!/usr/bin/python3
"""gpuslice-monitor under hostile clients and many claims (issue 21, "Daemons: Monitor"): idle
connections from one client cannot starve /metrics for others nor the probe listener; 10,000
claims are served (or the failure is loud and /readyz unready); a region that is a symlink is not
followed (docs/internals/monitor.md)."""
import json
import os
import shutil
import socket
import struct
import sys
import tempfile

from gstest import Tap
from monlib import Monitor, free_port, http_get, sim_env, value, wait_until

t = Tap()
TMP = tempfile.mkdtemp(prefix='gs-mon-hostile-')
MAGIC = 0x4E4F494745525347
MAX_DEV, MAX_PROCS = 32, 1024
SIZE = 128 + 200 * MAX_DEV + (24 + 8 * MAX_DEV) * MAX_PROCS
GIB = 1 << 30


def write_region(path, uuid, used):
    """A ready v2 region (include/gpuslice/shared_region.h) with one device; sparse."""
    head = struct.pack('<QIIIIII', MAGIC, 2, SIZE, 2, 1, 0, 0) + bytes(128 - 32)
    dev = uuid.encode().ljust(96, b'\0') + struct.pack('<QQII', used, GIB, 10, 0)
    with open(path, 'wb') as f:
        f.write(head + dev)
        f.truncate(SIZE)


def claims(n, state, host):
    uuid = 'GPU-00000000-0000-4000-8000-000000000001'
    doc = {'version': 1, 'driver': 'd', 'claims': {}}
    for i in range(n):
        uid = '00000000-0000-4000-8000-%012d' % i
        doc['claims'][uid] = {'state': 'PrepareCompleted', 'missingSince': 0, 'plan': {
            'namespace': 'many', 'name': 'claim-%05d' % i, 'uid': uid, 'results': [],
            'devices': [{'device': 'hami-gpu-0', 'uuid': uuid, 'minor': 0,
                         'memoryLimit': GIB, 'cores': 10, 'envIndex': 0}]}}
        d = os.path.join(host, 'claims', uid, 'region')
        os.makedirs(d)
        write_region(os.path.join(d, 'region'), uuid, (i % 1000) << 20)
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, 'checkpoint.json'), 'w') as f:
        json.dump(doc, f)
    return uuid


def idle_connections(port, n, source):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        try:
            s.connect(('127.0.0.1', port))
        except OSError:
            s.close()
            continue
        socks.append(s)
    return socks


def main():
    state, host = os.path.join(TMP, 'plugin'), os.path.join(TMP, 'host')
    claims(10000, state, host)
    # A symlinked region: the claim's region path points at another claim's file.
    evil = '00000000-0000-4000-8000-%012d' % 5
    rpath = os.path.join(host, 'claims', evil, 'region', 'region')
    os.unlink(rpath)
    os.symlink(os.path.join(host, 'claims', '00000000-0000-4000-8000-%012d' % 6, 'region',
                            'region'), rpath)
    env = sim_env(TMP)
    pport = free_port()
    mon = Monitor(TMP, ['--node-name', 'node-a', '--state-dir', state, '--host-dir', host,
                        '--standalone-state-dir', os.path.join(TMP, 'standalone'),
                        '--probe-listen', '127.0.0.1:%d' % pport], env)
    socks = []
    try:
        if not t.ok(mon.ready(120), 'monitor ready with 10,000 claims'):
            t.diag(mon.logs()[-3000:])
            return t.done()
        st, _, text = wait_until(lambda: (lambda r: r if 'claim-09999' in r[2] else None)(
            http_get(mon.url + '/metrics', timeout=120)), 120, 0.5) or (0, {}, '')
        t.is_eq(st, 200, '/metrics with 10,000 claims answers 200')
        t.ok(value(text, 'gpuslice_claim_memory_limit_bytes', claim='claim-09999') == GIB,
             'the last claim is in the exposition', diag=text[:500])
        t.ok(value(text, 'hami_vgpu_memory_used_bytes', claim='claim-00005') is None,
             'the symlinked region is not followed: no usage for its claim')
        t.like(mon.logs(), 'symbolic link', 'the symlinked region is logged')
        t.is_eq(http_get(mon.url + '/readyz')[0], 200, '/readyz 200 while scrapes succeed')

        # 70 idle connections from one client (127.0.0.2), on both listeners.
        socks = idle_connections(mon.port, 70, '127.0.0.2')
        socks += idle_connections(pport, 70, '127.0.0.2')
        st, _, text = http_get(mon.url + '/metrics', timeout=120)
        t.is_eq(st, 200, '70 idle connections of another client do not block /metrics')
        t.is_eq(http_get('http://127.0.0.1:%d/healthz' % pport)[0], 200,
                'nor /healthz on the probe listener')
        t.is_eq(http_get('http://127.0.0.1:%d/readyz' % pport)[0], 200,
                'nor /readyz on the probe listener')
        t.is_eq(http_get('http://127.0.0.1:%d/metrics' % pport)[0], 404,
                'the probe listener serves no /metrics')
    finally:
        for s in socks:
            s.close()
        rc = mon.stop()
        t.is_eq(rc, 0, 'monitor exits 0 on SIGTERM')
        if t.failed:
            t.diag(mon.logs()[-3000:])
        shutil.rmtree(TMP, True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
