#!/usr/bin/env python3
"""The monitor's global budget under idle clients (issue 31 item 3; the server layer,
src/net/server.h): ten clients (127.0.0.10-19), each holding seven idle connections (under the
per-client budget of 8), fill the 64 connections of the listener; Prometheus's scrape (from
127.0.0.1) is still answered, and so are probes on --probe-listen. Before the server layer the
per-client cap held but the 70 idle connections filled the global budget: libmicrohttpd closed
the scrape's connection at accept until an idle timeout freed a slot."""
import os
import sys
import tempfile

import netlib  # noqa: F401  (sys.path)
from netlib import close_all, open_conns, within
from gstest import Tap
from monlib import Monitor, free_port, http_get, sim_env

t = Tap()


def main():
    tmp = tempfile.mkdtemp(prefix='gs-net-mon-')
    env = sim_env(tmp)
    pport = free_port()
    mon = Monitor(tmp, ['--node-name', 'node-a', '--no-kubernetes',
                        '--state-dir', os.path.join(tmp, 'plugin'),
                        '--host-dir', os.path.join(tmp, 'host'),
                        '--standalone-state-dir', os.path.join(tmp, 'standalone'),
                        '--idle-timeout', '60s', '--header-timeout', '60s',
                        '--probe-listen', '127.0.0.1:%d' % pport], env)
    socks = []
    try:
        if not t.ok(mon.ready(60), 'monitor ready'):
            t.diag(mon.logs()[-3000:])
            return t.done()
        for i in range(10):
            socks += open_conns(mon.port, 7, ['127.0.0.%d' % (10 + i)])
        t.is_eq(len(socks), 70, 'ten clients hold seven idle connections each')
        r, el = within(10, lambda: (lambda x: x if x[0] == 200 else None)(
            http_get(mon.url + '/metrics', timeout=5)))
        t.ok(r and 'hami_' in r[2] or r and 'gpuslice_' in r[2],
             f'Prometheus\'s scrape is answered ({el:.2f} s)', diag=repr(r)[:300])
        r, el = within(10, lambda: http_get('http://127.0.0.1:%d/healthz' % pport,
                                            timeout=5)[0] == 200)
        t.ok(r, f'and the probe listener answers /healthz ({el:.2f} s)')
    finally:
        close_all(socks)
        rc = mon.stop()
    t.is_eq(rc, 0, 'monitor exits 0 on SIGTERM')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
