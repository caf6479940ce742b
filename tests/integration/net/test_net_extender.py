#!/usr/bin/env python3
"""The extender under connection exhaustion (issue 31 item 3; the server layer, src/net/server.h).
Judged from the caller's side:
 (a) 300 slow connections (half-sent request heads) from one client: another client's /filter
     and the probe listener's /healthz are answered;
 (b) 12 half-sent connections on the plain probe port, from the kubelet's own address: a fresh
     probe is answered within a bounded wait (before: none for 30-60 s);
 (c) 100 idle, unauthenticated TLS connections from ten addresses: the real caller (TLS, bearer
     token) is answered;
 (h) a client that dribbles its request head (one byte every 0.25 s, never idle) is cut once
     --header-timeout (1 s here) has passed (before: libmicrohttpd's inactivity timeout never
     fired for it, the connection stayed for as long as the client kept sending).
Before the server layer the extender had 32 connections in all and no per-client budget, idle
connections were closed after 30 s only, and the probe port had 8 slots: (a) and (c) got their
connections closed at accept, (b) waited for the idle timeout."""
import http.client
import json
import os
import select
import socket
import ssl
import sys
import tempfile
import time

import netlib  # noqa: F401  (sys.path)
from netlib import close_all, open_conns, within
from extlib import Extender, FakeAPI, create, filter_args, free_port, gpu, node, pod
from gstest import Tap
from whlib import make_cert

t = Tap()
T4 = 'GPU-1b2c3d4e-0000-4000-8000-000000000031'
HALF = b'POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: appl'
BOUND = 10.0  # seconds: a generous functional bound, the time measured is reported


def filter_call(port, body, source='127.0.0.1', ctx=None, token=None, timeout=5):
    cls = http.client.HTTPSConnection if ctx else http.client.HTTPConnection
    kw = {'context': ctx} if ctx else {}
    c = cls('127.0.0.1', port, timeout=timeout, source_address=(source, 0), **kw)
    try:
        h = {'Content-Type': 'application/json'}
        if token:
            h['Authorization'] = 'Bearer ' + token
        c.request('POST', '/filter', body=json.dumps(body), headers=h)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def healthz(port, source='127.0.0.1', timeout=2):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout, source_address=(source, 0))
    try:
        c.request('GET', '/healthz')
        r = c.getresponse()
        return r.status == 200 and r.read() == b'ok\n'
    finally:
        c.close()


def dribble(port, bound):
    """Seconds until the server closes a connection whose head arrives one byte every 0.25 s
    (None: still open after `bound` seconds)."""
    s = socket.create_connection(('127.0.0.1', port), timeout=5)
    head = b'POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 4000
    start = time.monotonic()
    try:
        for b in head:
            if time.monotonic() - start > bound:
                return None
            r, _, _ = select.select([s], [], [], 0.25)
            if r and not s.recv(4096):
                return time.monotonic() - start
            s.send(bytes([b]))
    except OSError:
        return time.monotonic() - start
    finally:
        s.close()
    return None


class TLSExtender(Extender):
    """The extender with HTTPS on its verbs port: started once its probe port answers."""

    def __init__(self, api, pport, *extra):
        self.pport = pport
        super().__init__(api, *extra, f'--probe-listen=127.0.0.1:{pport}')

    def get(self, path):
        return (200 if healthz(self.pport) else 0), ''


def main():
    api = FakeAPI(token='t0k3n')
    api.start()
    n = create(api, node('n1', [gpu(T4, 15360)]))
    p = create(api, pod('p', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}]))
    args = filter_args(p, [n], True)
    pport = free_port()
    ext = Extender(api, f'--probe-listen=127.0.0.1:{pport}', '--header-timeout=1s')
    socks = []
    try:
        # (a) 300 slow connections from 127.0.0.2.
        socks = open_conns(ext.port, 300, ['127.0.0.2'], HALF)
        t.diag(f'{len(socks)} of 300 slow connections connected')
        r, el = within(BOUND, lambda: filter_call(ext.port, args))
        t.ok(r and r[0] == 200 and b'n1' in r[1], f'(a) with 300 slow connections of one client '
             f'open, another client\'s /filter is answered ({el:.2f} s)', diag=repr(r))
        r, el = within(BOUND, lambda: healthz(pport))
        t.ok(r, f'(a) and the probe listener answers /healthz ({el:.2f} s)')
        close_all(socks)

        # (b) 12 half-sent connections on the probe port, from the prober's own address.
        socks = open_conns(pport, 12, ['127.0.0.1'], b'GET /healthz HTTP/1.1\r\nHo')
        r, el = within(BOUND, lambda: healthz(pport))
        t.ok(r, f'(b) with 12 slow connections on the probe port, a fresh probe is answered '
             f'within {BOUND:.0f} s ({el:.2f} s)')
        close_all(socks)
        # ... and 40, more than the probe budget's 16 per client, from that same address.
        socks = open_conns(pport, 40, ['127.0.0.1'], b'GET /healthz HTTP/1.1\r\nHo')
        r, el = within(BOUND, lambda: healthz(pport))
        t.ok(r, f'(b) with 40 slow connections from the prober\'s address, a fresh probe is '
             f'answered ({el:.2f} s)')
        close_all(socks)

        # (h) a dribbled request head.
        el = dribble(ext.port, BOUND)
        t.ok(el is not None, f'(h) a connection dribbling its request head is cut after the '
             f'1 s header timeout ({el if el is None else round(el, 2)} s)')
        t.is_eq(ext.stop(), 0, 'the extender exits cleanly')

        # (c) 100 idle TLS connections (no handshake) from ten addresses.
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = make_cert(tmp)
            tok = os.path.join(tmp, 'token')
            with open(tok, 'w') as f:
                f.write('s3cr3t-t0ken-0123456789\n')
            ext = TLSExtender(api, pport, f'--tls-cert-file={cert}', f'--tls-key-file={key}',
                              f'--token-file={tok}')
            ctx = ssl.create_default_context(cafile=cert)
            socks = open_conns(ext.port, 100, [f'127.0.0.{i}' for i in range(10, 20)])
            t.diag(f'{len(socks)} of 100 idle TLS connections connected')
            r, el = within(BOUND, lambda: filter_call(ext.port, args, ctx=ctx,
                                                      token='s3cr3t-t0ken-0123456789'))
            t.ok(r and r[0] == 200 and b'n1' in r[1], f'(c) with 100 idle unauthenticated TLS '
                 f'connections open, the real caller is answered ({el:.2f} s)', diag=repr(r))
            close_all(socks)
            socks = []
    finally:
        close_all(socks)
        rc = ext.stop() if ext.proc.poll() is None else ext.proc.returncode
        api.stop()
    t.is_eq(rc, 0, 'the extender exits cleanly')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
