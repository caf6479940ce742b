#!/usr/bin/env python3
"""Slow clients on the probe listener (issue 21, "Daemons: Webhook"): 300 clients that open a
connection to --health-listen and dribble their request one byte at a time (so an idle timeout
never fires), from the kubelet's own address and from others, reopening every connection the
webhook closes. Before the fix /healthz was unreachable for 12 s and more. Judged from outside:
every probe the kubelet sends during the attack is answered."""
import socket
import sys
import tempfile
import threading
import time

from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import Webhook, make_cert, write_kubeconfig

KUBELET = '127.0.0.3'
SLOW = 300
SOURCES = [KUBELET, '127.0.0.4', '127.0.0.5']


class Slowloris:
    def __init__(self, port):
        self.port = port
        self.stop = threading.Event()
        self.opened = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(SLOW)]

    def run(self, i):
        req = b'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 3000
        while not self.stop.is_set():
            s = socket.socket()
            try:
                s.bind((SOURCES[i % len(SOURCES)], 0))
                s.settimeout(5)
                s.connect(('127.0.0.1', self.port))
                with self.lock:
                    self.opened += 1
                for b in req:  # one byte every 0.3 s: never idle, never done
                    if self.stop.is_set():
                        break
                    s.send(bytes([b]))
                    time.sleep(0.3)
            except OSError:
                time.sleep(0.05)
            finally:
                s.close()


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token='t') as api:
        cert, key = make_cert(tmp)
        wh = Webhook(binary, cert, key, write_kubeconfig(tmp, api.url, 't'), workdir=tmp)
        att = Slowloris(wh.health_port)
        try:
            for th in att.threads:
                th.start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and att.opened < SLOW:
                time.sleep(0.05)
            t.ok(att.opened >= SLOW, f'{SLOW} slow clients connected', diag=f'{att.opened}')
            sent = ok = 0
            for _ in range(20):
                sent += 1
                try:
                    ok += wh.health_request('GET', '/healthz', source=KUBELET,
                                            timeout=10)[2] == b'ok\n'
                except OSError:
                    pass
                time.sleep(0.2)
            t.is_eq(ok, sent, f'all {sent} kubelet probes answered during the attack')
            st = wh.health_request('GET', '/readyz', source=KUBELET, timeout=10)[0]
            t.is_eq(st, 200, '/readyz answered too')
        finally:
            att.stop.set()
            for th in att.threads:
                th.join(30)
        t.is_eq(wh.stop(), 0, 'clean exit')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
