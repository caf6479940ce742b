#!/usr/bin/env python3
"""Idle-connection denial of service (issue 12), scaled down: one client holds more idle TCP
connections than the webhook accepts in total, reopening every one the webhook closes. Before the
defences this left the kubelet's probes and the API server without a connection (0 of 179 probes
answered). Judged from the outside: the probes answered (on the probe listener and on the HTTPS
port), the API server's admissions answered, the attacker held no more than its share.

The webhook runs with --max-connections 24 --max-connections-per-client 6 --idle-timeout 2s.
Each client is its own loopback address: attacker 127.0.0.2, kubelet 127.0.0.3, API server
127.0.0.1."""
import json
import socket
import sys
import tempfile
import threading
import time

from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import Webhook, make_cert, pod, review, write_kubeconfig

ATTACKER, KUBELET, APISERVER = '127.0.0.2', '127.0.0.3', '127.0.0.1'
TOTAL, PER_CLIENT = 24, 6
HOLD = 40  # idle connections the attacker keeps open (more than TOTAL)


class Attacker:
    """Keeps HOLD idle TCP connections to `port` from ATTACKER; every one closed by the server is
    reopened at once. Counts connections the server closed."""

    def __init__(self, port):
        self.port = port
        self.stop = threading.Event()
        self.closed_by_server = 0
        self.opened = 0
        self.th = threading.Thread(target=self.run, daemon=True)

    def connect(self):
        s = socket.socket()
        s.bind((ATTACKER, 0))
        s.settimeout(5)
        try:
            s.connect(('127.0.0.1', self.port))
        except OSError:
            s.close()
            return None
        s.setblocking(False)
        self.opened += 1
        return s

    def run(self):
        socks = []
        while not self.stop.is_set():
            while len(socks) < HOLD and not self.stop.is_set():
                s = self.connect()
                if s is None:
                    break
                socks.append(s)
            alive = []
            for s in socks:
                try:
                    if s.recv(1) == b'':
                        raise ConnectionResetError
                    alive.append(s)  # unexpected data: keep holding it
                except BlockingIOError:
                    alive.append(s)
                except OSError:
                    self.closed_by_server += 1
                    s.close()
            socks = alive
            time.sleep(0.05)
        for s in socks:
            s.close()


def probe_https(wh):
    try:
        return wh.request('GET', '/healthz', source=KUBELET, timeout=10)[2] == b'ok\n'
    except OSError:
        return False


def probe_plain(wh):
    try:
        return wh.health_request('GET', '/healthz', source=KUBELET, timeout=10)[2] == b'ok\n'
    except OSError:
        return False


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token='t') as api:
        cert, key = make_cert(tmp)
        wh = Webhook(binary, cert, key, write_kubeconfig(tmp, api.url, 't'), workdir=tmp,
                     extra=['--max-connections', str(TOTAL), '--max-connections-per-client',
                            str(PER_CLIENT), '--idle-timeout', '2s'])
        att = Attacker(wh.port)
        try:
            att.th.start()
            # Let the attacker fill what it can and churn through a few idle timeouts.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and att.opened < HOLD:
                time.sleep(0.05)
            t.ok(att.opened >= HOLD, f'attacker opened {HOLD} connections at once',
                 diag=f'opened {att.opened}')
            sent = plain_ok = https_ok = mutate_ok = 0
            open_max = 0
            for i in range(24):  # ~ 6 s of probing at 4 per second, as a kubelet would not
                sent += 1
                plain_ok += probe_plain(wh)
                https_ok += probe_https(wh)
                try:
                    status, _, _ = wh.request(
                        'POST', '/mutate',
                        json.dumps(review(pod({'nvidia.com/gpu': '1'}),
                                                        uid=f'api-{i}', dry=True)).encode(),
                        {'Content-Type': 'application/json'}, source=APISERVER, timeout=10)
                    mutate_ok += status == 200
                except OSError:
                    pass
                _, _, body = wh.health_request('GET', '/metrics', source=KUBELET, timeout=10)
                for line in body.decode().splitlines():
                    if line.startswith('gpuslice_webhook_connections_open '):
                        open_max = max(open_max, int(float(line.split()[1])))
                time.sleep(0.25)
            t.is_eq(plain_ok, sent, f'probe listener: all {sent} probes answered during the attack')
            t.is_eq(https_ok, sent, f'HTTPS /healthz from another client: all {sent} answered')
            t.is_eq(mutate_ok, sent, f'API server /mutate from another client: all {sent} answered')
            t.ok(open_max <= PER_CLIENT + 2,
                 f'open HTTPS connections stay near the per-client cap ({PER_CLIENT}) plus the '
                 'probing clients\' own', diag=f'max seen {open_max}')
            t.ok(att.closed_by_server > HOLD - PER_CLIENT,
                 'connections over the per-client cap (and idle ones) are closed by the server',
                 diag=f'closed {att.closed_by_server}')
        finally:
            att.stop.set()
            att.th.join(30)
        # Idle timeout: a connection that never sends anything is closed by the server.
        # (GnuTLS may send an alert first.)
        with socket.create_connection(('127.0.0.1', wh.port), timeout=60) as s:
            got = b''
            try:
                while True:
                    chunk = s.recv(64)
                    if not chunk:
                        closed = True
                        break
                    got += chunk
            except ConnectionResetError:
                closed = True
            except socket.timeout:
                closed = False
        t.ok(closed, 'an idle connection (no TLS handshake) is closed by the server',
             diag=repr(got))
        rc = wh.stop()
        t.is_eq(rc, 0, 'clean exit')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
