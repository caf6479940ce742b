#!/usr/bin/python3
"""gpuslice-extender under hostile clients (issue 21, "Daemons: Extender"): who may call it
(loopback by default, TLS + bearer token elsewhere, a probe-only listener), which pods it binds
(not kube-system, not an empty or another UID, not a bound pod, not a pod without GPUs), that a
refused binding leaves the pod as it was, the placement record on the Node, a node lock dated
in the future, and the bound on request bodies held at once (docs/internals/legacy.md)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from extlib import EXTENDER, Extender, FakeAPI, bind_args, create, filter_args, free_port, gpu, \
    kubeconfig, node, pod
from gstest import Tap

t = Tap()
L4 = 'GPU-1b2c3d4e-0000-4000-8000-000000000024'
BIG = {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 20000}


def anns(api, name, ns='default'):
    return (api.get('pods', ns, name) or {}).get('metadata', {}).get('annotations') or {}


def node_anns(api, name):
    return api.get('nodes', None, name)['metadata'].get('annotations') or {}


def binds(api, ext):
    api.reset()
    n = create(api, node('l4', [gpu(L4, 23034, 'L4')]))
    cpu = create(api, node('cpu', None))

    # A bound 20,000 MiB pod: a second /bind of it (empty UID, or its own UID) must not touch it.
    a = create(api, pod('big-a', [BIG]))
    code, res = ext.post('/filter', filter_args(a, [n], True))
    code, b = ext.post('/bind', bind_args(a, 'l4'))
    t.is_eq(b, {}, 'the first 20,000 MiB pod is bound')
    before = anns(api, 'big-a')
    t.is_eq(before.get('hami.io/bind-phase'), 'allocating',
            "HAMi's annotations came with the binding")
    rec = node_anns(api, 'l4').get('gpuslice.io/assign-' + a['metadata']['uid'])
    t.ok(rec and json.loads(rec)['devices'] == f'{L4},NVIDIA,20000,0:;' and
         json.loads(rec)['pod'] == 'default/big-a' and json.loads(rec)['next'] == 0,
         'the placement is recorded on the Node (gpuslice.io/assign-<uid>)', diag=rec)
    for uid in ('', a['metadata']['uid']):
        args = bind_args(a, 'l4')
        args['podUID'] = uid
        code, b = ext.post('/bind', args)
        t.ok(code == 200 and b.get('error'), f'a second bind of a bound pod (uid "{uid[:8]}") '
             'is refused', diag=json.dumps(b))
    t.is_eq(anns(api, 'big-a'), before, "the refused binds left the bound pod's annotations "
            'as they were (no bind-phase failed)')
    b2 = create(api, pod('big-b', [BIG]))
    code, res = ext.post('/filter', filter_args(b2, [n], True))
    t.like((res.get('failedNodes') or {}).get('l4'), 'CardInsufficientMemory',
           'the first pod still counts: a second 20,000 MiB pod does not fit the 23,034 MiB card')
    code, b = ext.post('/bind', bind_args(b2, 'l4'))
    t.ok(b.get('error') and not api.get('pods', 'default', 'big-b')['spec'].get('nodeName'),
         'and binding it anyway is refused', diag=json.dumps(b))

    # Pods that are not ours.
    sysp = create(api, pod('dns', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}],
                           ns='kube-system'))
    code, b = ext.post('/bind', bind_args(sysp, 'l4'))
    t.ok('kube-system' in (b.get('error') or '') and
         not api.get('pods', 'kube-system', 'dns')['spec'].get('nodeName'),
         'a kube-system pod is not bound', diag=json.dumps(b))
    plain = create(api, pod('plain', [None]))
    code, b = ext.post('/bind', bind_args(plain, 'cpu'))
    t.ok('requests no nvidia.com/gpu' in (b.get('error') or '') and
         not api.get('pods', 'default', 'plain')['spec'].get('nodeName'),
         'a pod without GPU resources is not bound (not even onto a CPU node)', diag=json.dumps(b))
    small = create(api, pod('small', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    for uid, why in (('', 'empty'), ('3f1c0e2a-0000-4000-8000-000000000000', 'another')):
        args = bind_args(small, 'l4')
        args['podUID'] = uid
        code, b = ext.post('/bind', args)
        t.ok(b.get('error') and not api.get('pods', 'default', 'small')['spec'].get('nodeName'),
             f'a bind with {why} UID is refused', diag=json.dumps(b))
    t.is_eq(anns(api, 'small'), {}, 'the refused binds did not annotate the pod')

    # The API refuses the binding: the pod is left exactly as it was, the Node record removed.
    api.fail_next(1, status=409, match='/binding', method='POST')
    code, b = ext.post('/bind', bind_args(small, 'l4'))
    t.ok(b.get('error'), 'a binding the API refuses is an error', diag=json.dumps(b))
    t.is_eq(anns(api, 'small'), {}, 'a refused binding changes no annotation of the pod')
    t.ok(not any(k.startswith('gpuslice.io/assign-' + small['metadata']['uid'])
                 for k in node_anns(api, 'l4')), 'and its Node record is removed')
    t.ok('hami.io/mutex.lock' not in node_anns(api, 'l4'), 'and the node lock released')

    # A lock dated 2099 is not a lock.
    nd = api.get('nodes', None, 'l4')
    nd['metadata']['annotations']['hami.io/mutex.lock'] = '2099-01-01T00:00:00Z,evil,x'
    api.put(nd)
    code, b = ext.post('/bind', bind_args(small, 'l4'))
    t.is_eq(b, {}, 'a node lock dated in the future is invalid: the bind goes through')


def delete(api, name, ns='default'):
    import urllib.request
    req = urllib.request.Request(f'{api.url}/api/v1/namespaces/{ns}/pods/{name}',
                                 method='DELETE', headers={'Authorization': 'Bearer t0k3n'})
    urllib.request.urlopen(req, timeout=10).read()


def put_record(api, node_name, p, devices, when=None, ns='default'):
    """A placement record as an extender writes it at bind (another extender's bind in
    progress, or one left behind)."""
    n = api.get('nodes', None, node_name)
    md = p['metadata']
    n['metadata']['annotations']['gpuslice.io/assign-' + md['uid']] = json.dumps(
        {'pod': f"{ns}/{md['name']}", 'time': int(time.time()) if when is None else when,
         'devices': devices, 'next': 0}, sort_keys=True, separators=(',', ':'))
    api.put(n)


def bookings(api, ext):
    """Issue 31, phantom bookings: what books a card is a pod bound there (or our bind in
    progress, its record on the Node), never a pod's annotations alone; records of pods gone
    are collected at bind, and records have a size budget."""
    api.reset()
    n = create(api, node('l4', [gpu(L4, 23034, 'L4')]))
    create(api, node('other', [gpu('GPU-1b2c3d4e-0000-4000-8000-0000000000ff', 23034, 'L4')]))
    want = {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}

    def fits(name, how, lim=want):
        p = create(api, pod(name, [lim]))
        code, res = ext.post('/filter', filter_args(p, [n], True))
        t.ok((res.get('nodenames'), res.get('failedNodes')) == (['l4'], {}), how, diag=res)
        return p

    full = {'hami.io/vgpu-node': 'l4', 'hami.io/bind-phase': 'success',
            'hami.io/vgpu-devices-allocated': f'{L4},NVIDIA,23034,100:;'}
    create(api, pod('phantom', [None], full))
    fits('real1', 'a never-scheduled pod asking no GPU whose annotations take the whole L4 does '
         'not fill it: a real 8000 MiB pod fits')
    create(api, pod('phantom-gpu', [{'nvidia.com/gpu': 1}], full))
    fits('real2', 'nor does one that asks a GPU but was never scheduled')
    for i in range(10):
        create(api, pod(f'ph{i}', [None], {**full, 'hami.io/vgpu-devices-allocated':
                                           f'{L4},NVIDIA,100,0:;'}))
    fits('real3', "ten such pods do not exhaust the card's 10 tasks")
    for name, lim, bound in (('nogpu-bound', None, 'l4'), ('elsewhere', {'nvidia.com/gpu': 1},
                                                          'other')):
        obj = pod(name, [lim], full)
        obj['spec']['nodeName'] = bound
        create(api, obj)
    fits('real4', 'a pod bound to the L4 node asking no GPU, and a pod bound to another node '
         'whose annotations name the L4, book nothing there')

    # Real bookings still count: a pod the extender binds, and another extender's bind in
    # progress (a pending pod with a record on the Node: the Binding comes after the record).
    real = fits('real5', 'the 8000 MiB pod fits before anything real is placed')
    code, b = ext.post('/bind', bind_args(real, 'l4'))
    t.is_eq(b, {}, 'the 8000 MiB pod is bound')
    inflight = create(api, pod('inflight', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 14000}]))
    put_record(api, 'l4', inflight, f'{L4},NVIDIA,14000,0:;')
    ghost = {'metadata': {'name': 'ghost', 'uid': '0badc0de-0000-4000-8000-000000000001'}}
    put_record(api, 'l4', ghost, f'{L4},NVIDIA,1000,0:;')  # its pod never existed
    fits('small', 'a 1000 MiB pod fits next to 8000 + 14000 MiB: the record of a pod that does '
         'not exist books nothing', {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000})
    p = create(api, pod('two-k', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 2000}]))
    code, res = ext.post('/filter', filter_args(p, [n], True))
    t.like((res.get('failedNodes') or {}).get('l4'), 'CardInsufficientMemory',
           'a 2000 MiB pod does not: the bound pod and the bind in progress both count')

    # Stale records go at the next bind on the node, each with its reason logged.
    delete(api, 'inflight')
    code, b = ext.post('/bind', bind_args(api.get('pods', 'default', 'small'), 'l4'))
    t.is_eq(b, {}, 'a pod is bound next to the stale records')
    keys = [k for k in node_anns(api, 'l4') if k.startswith('gpuslice.io/assign-')]
    t.is_eq(sorted(keys), sorted('gpuslice.io/assign-' + x['metadata']['uid']
                                 for x in (real, api.get('pods', 'default', 'small'))),
            'the bind removed the records of the deleted pod and of the pod that never existed')
    t.ok(any('stale placement record removed' in ln and 'pod default/ghost (uid' in ln and
             'is gone' in ln for ln in ext.output().splitlines()),
         'the removal is logged with its reason')

    # Every reason a record is stale: its pod finished, is bound to another node, or is still
    # unbound long after the record (a bind that never completed, past HAMI_NODELOCK_EXPIRE);
    # the record of a pod whose bind is in progress (recent, unbound) stays.
    cases = {}
    for name, bound, phase, when in (('done', 'l4', 'Succeeded', None),
                                     ('moved', 'other', None, None),
                                     ('abandoned', None, None, int(time.time()) - 3600),
                                     ('binding', None, None, None)):
        obj = pod(name, [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}])
        if bound:
            obj['spec']['nodeName'] = bound
        if phase:
            obj['status'] = {'phase': phase}
        cases[name] = create(api, obj)
        put_record(api, 'l4', cases[name], f'{L4},NVIDIA,100,0:;', when=when)
    last = create(api, pod('last', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    code, b = ext.post('/bind', bind_args(last, 'l4'))
    left = {k for k in node_anns(api, 'l4') if k.startswith('gpuslice.io/assign-')}
    t.is_eq({n for n, x in cases.items() if 'gpuslice.io/assign-' + x['metadata']['uid'] in left},
            {'binding'}, 'records of a finished pod, a pod bound elsewhere and a bind abandoned '
            'an hour ago are removed; a bind in progress keeps its record')
    out = ext.output()
    t.ok(all(w in out for w in ('has finished (Succeeded)', 'is bound to node other',
                                'is still not bound')), 'each removal logs its reason')

    # The records' size budget: a record taking 70,000 bytes (a live pod bound here) leaves no
    # room; the bind is refused, naming the budget; once its pod is gone the bind goes through.
    filler = pod('filler', [None])
    filler['spec']['nodeName'] = 'l4'
    filler = create(api, filler)
    put_record(api, 'l4', filler, 'x' * 70000)
    tiny = create(api, pod('tiny', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    code, b = ext.post('/bind', bind_args(tiny, 'l4'))
    t.ok('budget 65536' in (b.get('error') or '') and
         not api.get('pods', 'default', 'tiny')['spec'].get('nodeName'),
         'a record past the records\' 64 KiB budget is refused, naming it', diag=json.dumps(b))
    delete(api, 'filler')
    code, b = ext.post('/bind', bind_args(tiny, 'l4'))
    t.is_eq(b, {}, 'with the filler pod gone its record is collected and the bind goes through')
    size = sum(len(k) + len(v) for k, v in node_anns(api, 'l4').items())
    t.ok(size < 64 * 1024, f"the Node's annotations take {size} bytes after it")


def start(api, tmp, *args):
    kc = kubeconfig(api.url, os.path.join(tmp, 'kubeconfig'))
    return subprocess.run([EXTENDER, f'--kubeconfig={kc}', *args], capture_output=True,
                          text=True, timeout=60)


def raw(port, request, timeout=30):
    """Send raw bytes; the status line's code (or None when closed without an answer)."""
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    try:
        s.sendall(request)
        data = s.recv(4096)
        return int(data.split()[1]) if data.startswith(b'HTTP/') else None
    finally:
        s.close()


def exposure(api):
    tmp = tempfile.mkdtemp(prefix='gs-ext-hostile-')
    p = start(api, tmp, f'--listen=0.0.0.0:{free_port()}')
    t.ok(p.returncode == 2 and 'loopback' in p.stderr and '--token-file' in p.stderr,
         'listening on all addresses without TLS and a token is refused at start',
         diag=p.stderr)
    tok = os.path.join(tmp, 'token')
    with open(tok, 'w') as f:
        f.write('s3cr3t-t0ken-0123456789\n')
    p = start(api, tmp, f'--listen=0.0.0.0:{free_port()}', f'--token-file={tok}')
    t.ok(p.returncode == 2 and 'TLS' in p.stderr, 'a token without TLS is not enough off '
         'loopback', diag=p.stderr)

    pport = free_port()
    ext = Extender(api, f'--token-file={tok}', f'--probe-listen=127.0.0.1:{pport}')
    try:
        body = json.dumps({'podName': 'x', 'podNamespace': 'default', 'node': 'n'}).encode()
        req = (b'POST /bind HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
               b'Content-Length: %d\r\n%s\r\n' % (len(body), b'%s') + body)
        t.is_eq(raw(ext.port, req.replace(b'%s', b'')), 401, 'with --token-file a verb without '
                'the token gets 401')
        t.is_eq(raw(ext.port, req.replace(b'%s', b'Authorization: Bearer wrong\r\n')), 401,
                'a wrong token gets 401')
        t.is_eq(raw(ext.port, req.replace(
            b'%s', b'Authorization: Bearer s3cr3t-t0ken-0123456789\r\n')), 200,
            'the right token is served')
        t.is_eq(raw(ext.port, b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'), 401,
                '/metrics wants the token too')
        t.is_eq(raw(ext.port, b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'), 200,
                '/healthz stays open')
        t.is_eq(raw(pport, b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'), 200,
                'the probe listener serves /metrics')
        t.is_eq(raw(pport, req.replace(b'%s', b'')), 404, 'the probe listener has no verbs')
    finally:
        t.is_eq(ext.stop(), 0, 'the token extender exits cleanly')


def bodies(api, ext):
    """8 clients announce 60 MiB bodies at once: at most two are taken in, the others get 503
    before sending anything; one over 64 MiB gets 413 at its headers."""
    head = (b'POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
            b'Content-Length: %d\r\n\r\n')
    t.is_eq(raw(ext.port, head % (65 * 1024 * 1024)), 413, 'a 65 MiB Content-Length gets 413 '
            'before the body is sent')
    socks = []
    for _ in range(8):
        s = socket.create_connection(('127.0.0.1', ext.port), timeout=60)
        s.sendall(head % (60 * 1024 * 1024))
        socks.append(s)
    import select
    codes = {}
    end = time.time() + 60
    while len(codes) < 6 and time.time() < end:  # bounded wait for the refusals
        ready, _, _ = select.select([s for s in socks if s not in codes], [], [], 1.0)
        for s in ready:
            data = s.recv(4096)
            codes[s] = int(data.split()[1]) if data.startswith(b'HTTP/') else None
    ready, _, _ = select.select([s for s in socks if s not in codes], [], [], 0)
    codes = [codes.get(s, 'closed' if s in ready else 'waiting') for s in socks]
    t.is_eq(sorted(map(str, codes)), ['503'] * 6 + ['waiting'] * 2,
            'of 8 announced 60 MiB bodies, 2 are received and 6 refused with 503 at once')
    for s in socks:
        s.close()
    for _ in range(100):  # the two admitted connections end; their budget comes back
        code = raw(ext.port, (head % 2) + b'{}')
        if code == 400:
            break
        time.sleep(0.1)
    t.is_eq(code, 400, 'once they are gone a new body is taken in (400: not ExtenderArgs)')


def main():
    api = FakeAPI(token='t0k3n')
    api.start()
    ext = Extender(api)
    try:
        t.run('binds', binds, api, ext)
        t.run('bookings', bookings, api, ext)
        t.run('exposure', exposure, api)
        t.run('bodies', bodies, api, ext)
    finally:
        if t.failed:
            t.diag(ext.output()[-4000:])
        t.is_eq(ext.stop(), 0, 'the extender exits 0 on SIGTERM')
        api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
