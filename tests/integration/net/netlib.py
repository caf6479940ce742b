"""Helpers of the server layer's tests (src/net/server.h): hostile connections from chosen
loopback addresses, and a bounded wait for an answer judged from the caller's side."""
import os
import resource
import socket
import sys
import time

ROOT = os.environ.get('GS_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..', '..'))
for sub in ('extender', 'webhook', 'monitor', 'deviceplugin', 'plugin'):
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', sub))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'lib'))


def raise_nofile(want):
    """The soft descriptor limit up to `want` (at most the hard one); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_conns(port, n, sources, send=b''):
    """n connections to 127.0.0.1:port, from the `sources` addresses in turn, each having sent
    `send` (b'': nothing, an idle connection). Connections the server refused are dropped."""
    socks = []
    for i in range(n):
        s = socket.socket()
        try:
            s.bind((sources[i % len(sources)], 0))
            s.settimeout(5)
            s.connect(('127.0.0.1', port))
            if send:
                s.sendall(send)
            socks.append(s)
        except OSError:
            s.close()
    return socks


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


def within(bound, fn, step=0.2):
    """Call fn() until it returns a true value or `bound` seconds passed: (value, seconds)."""
    start = time.monotonic()
    while True:
        try:
            v = fn()
        except OSError:
            v = None
        el = time.monotonic() - start
        if v or el >= bound:
            return v, el
        time.sleep(step)
