#!/usr/bin/env python3
"""The device plugin's HTTP listener past 1,024 descriptors (issue 31 item 3; the server layer,
src/net/server.h): 1,100 connections held open on --metrics-addr, then Prometheus's scrape (from
another address) is answered. Before the server layer the listener's connection threads waited
in select() and it took 32 connections in all: every further connection was closed at accept."""
import http.client
import sys
import tempfile

import netlib  # noqa: F401  (sys.path)
from netlib import close_all, open_conns, raise_nofile, within
from extlib import FakeAPI, free_port
from gstest import Tap
from dplib import Plugin

t = Tap()
NODE = 'node-net'
HELD = 1100


def scrape(port):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=5, source_address=('127.0.0.3', 0))
    try:
        c.request('GET', '/metrics')
        r = c.getresponse()
        body = r.read()
        return (r.status, body) if r.status == 200 else None
    finally:
        c.close()


def main():
    raise_nofile(4096)
    tmp = tempfile.mkdtemp(prefix='gs-net-dp-')
    api = FakeAPI(token='t0k3n').start()
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}})
    port = free_port()
    plugin = Plugin(api, tmp, NODE, extra=['--metrics-addr', f'127.0.0.1:{port}',
                                           '--max-connections', '2048',
                                           '--max-connections-per-client', '2048',
                                           '--header-timeout', '60s', '--idle-timeout', '60s'])
    socks = []
    try:
        r, el = within(30, lambda: scrape(port))
        if not t.ok(r, f'the device plugin serves /metrics ({el:.2f} s)'):
            t.diag(plugin.output()[-3000:])
            return t.done()
        socks = open_conns(port, HELD, ['127.0.0.2'])
        t.is_eq(len(socks), HELD, f'{HELD} connections held open on --metrics-addr')
        # 5 s: a generous bound for an answer that comes at once, and shorter than the 10 s idle
        # timeout after which the old listener's idle connections went by themselves.
        r, el = within(5, lambda: scrape(port))
        t.ok(r and b'gpuslice_device_plugin_allocate_total' in r[1],
             f'with {HELD} descriptors open, the scrape is answered ({el:.2f} s)')
    finally:
        close_all(socks)
        rc = plugin.stop()
        api.stop()
    t.is_eq(rc, 0, 'the device plugin stops cleanly')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
