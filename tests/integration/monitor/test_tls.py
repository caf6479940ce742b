#!/usr/bin/env python3
"""gpuslice-monitor over HTTPS with the webhook's TLS flags: /metrics served with the given pair,
plain HTTP refused, the pair re-read when the files change (rotation), bad flags refused."""
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

from gstest import Tap
from monlib import MONITOR, Monitor, promtool_problems, sim_env, wait_until

t = Tap()
TMP = tempfile.mkdtemp(prefix='gs-monitor-tls-')


def make_pair(name):
    crt, key = os.path.join(TMP, name + '.crt'), os.path.join(TMP, name + '.key')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                    'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj',
                    '/CN=' + name, '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key,
                    '-out', crt], check=True, capture_output=True, timeout=60)
    return crt, key


def fetch(port, ca, path='/metrics'):
    """(status, body, peer certificate DER) over HTTPS, or None."""
    import http.client
    ctx = ssl.create_default_context(cafile=ca)
    try:
        c = http.client.HTTPSConnection('127.0.0.1', port, context=ctx, timeout=10)
        c.request('GET', path)
        r = c.getresponse()
        der = c.sock.getpeercert(binary_form=True)
        body = r.read().decode()
        c.close()
        return r.status, body, der
    except (OSError, ssl.SSLError):
        return None


def main():
    crt1, key1 = make_pair('monitor-one')
    live_crt, live_key = os.path.join(TMP, 'tls.crt'), os.path.join(TMP, 'tls.key')
    for src, dst in ((crt1, live_crt), (key1, live_key)):
        with open(src, 'rb') as f, open(dst + '.tmp', 'wb') as g:
            g.write(f.read())
        os.rename(dst + '.tmp', dst)
    mon = Monitor(TMP, ['--no-kubernetes', '--tls-cert-file', live_crt, '--tls-key-file', live_key,
                        '--cert-check-interval', '50ms', '--standalone-state-dir',
                        os.path.join(TMP, 'sa'), '--state-dir', os.path.join(TMP, 'p'),
                        '--host-dir', os.path.join(TMP, 'h')], sim_env(TMP))
    try:
        r = wait_until(lambda: (lambda x: x if x and x[0] == 200 else None)(
            fetch(mon.port, crt1, '/readyz')), 60)
        t.ok(r and r[0] == 200, 'HTTPS /readyz with the given certificate', diag=mon.logs())
        r = fetch(mon.port, crt1)
        t.ok(r and r[0] == 200 and 'gpuslice_build_info' in r[1], 'HTTPS /metrics')
        t.ok(r and not promtool_problems(r[1]), 'promtool: exposition over HTTPS is clean')
        st, _, _ = mon.metrics()  # plain http:// on the TLS port
        t.ok(st != 200, 'plain HTTP on the HTTPS port gets no exposition (status %d)' % st)
        first = r[2] if r else None
        crt2, key2 = make_pair('monitor-two')
        for src, dst in ((key2, live_key), (crt2, live_crt)):
            with open(src, 'rb') as f, open(dst + '.tmp', 'wb') as g:
                g.write(f.read())
            os.rename(dst + '.tmp', dst)
        rotated = wait_until(lambda: (lambda x: x and x[2] != first)(fetch(mon.port, crt2)), 60)
        t.ok(rotated, 'rotated pair served after the files change, without a restart')
    finally:
        t.is_eq(mon.stop(), 0, 'monitor exits 0')
    r = subprocess.run([MONITOR, '--tls-cert-file', crt1], capture_output=True, text=True,
                       timeout=30)
    t.ok(r.returncode == 2 and '--tls-key-file' in r.stderr, 'certificate without key: exit 2 and '
         'a message naming the missing flag', diag=r.stderr)
    r = subprocess.run([MONITOR, '--listen', '127.0.0.1:%d' % 1, '--tls-cert-file', '/nonexistent',
                        '--tls-key-file', key1, '--no-kubernetes'], capture_output=True, text=True,
                       timeout=30, env=sim_env(TMP))
    t.ok(r.returncode != 0 and '/nonexistent' in r.stderr, 'unreadable certificate: the file is '
         'named, no serving', diag=r.stderr)


t.run('tls', main)
rc = t.done()
if not rc:
    shutil.rmtree(TMP, ignore_errors=True)  # kept for a look when something failed
sys.exit(rc)
