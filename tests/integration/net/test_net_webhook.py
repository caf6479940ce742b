#!/usr/bin/env python3
"""The webhook past 1,024 descriptors (issue 31 item 3; the server layer, src/net/server.h):
1,100 connections held open on its HTTPS port, then a new client's HTTPS request is answered.
Before the server layer the webhook's connection threads waited in select() (no MHD_USE_POLL):
libmicrohttpd refuses a connection whose descriptor is past FD_SETSIZE, so once 1,024
descriptors were open every new caller's connection was closed at accept."""
import sys
import tempfile

import netlib  # noqa: F401  (sys.path)
from netlib import close_all, open_conns, raise_nofile, within
from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import Webhook, make_cert, write_kubeconfig

t = Tap()
HELD = 1100


def main():
    limit = raise_nofile(4096)
    t.diag(f'descriptor limit of the test (and the webhook it starts): {limit}')
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token='t') as api:
        cert, key = make_cert(tmp)
        wh = Webhook(binary, cert, key, write_kubeconfig(tmp, api.url, 't'), workdir=tmp,
                     extra=['--max-connections', '2048', '--max-connections-per-client', '2048',
                            '--header-timeout', '60s', '--idle-timeout', '60s'])
        socks = []
        try:
            socks = open_conns(wh.port, HELD, ['127.0.0.2'])
            t.is_eq(len(socks), HELD, f'{HELD} connections held open on the HTTPS port')
            r, el = within(10, lambda: wh.request('GET', '/healthz', source='127.0.0.3',
                                                  timeout=5))
            t.ok(r and r[0] == 200 and r[2] == b'ok\n', f'with {HELD} descriptors open, a new '
                 f'caller\'s HTTPS request is answered ({el:.2f} s)', diag=repr(r))
            r = wh.request('GET', '/metrics', source='127.0.0.3', timeout=10)
            open_now = [float(ln.split()[-1]) for ln in r[2].decode().splitlines()
                        if ln.startswith('gpuslice_webhook_connections_open ')]
            t.ok(open_now and open_now[0] >= HELD, f'the webhook holds them all '
                 f'(gpuslice_webhook_connections_open {open_now})')
        finally:
            close_all(socks)
        t.is_eq(wh.stop(), 0, 'clean exit')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
