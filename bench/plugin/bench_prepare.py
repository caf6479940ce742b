#!/usr/bin/python3
"""NodePrepareResources latency (1 and 32 claims per call) against the fake API server on
loopback, and the plugin's RSS. Baselines measured in the same run: a bare GetInfo round trip
(gRPC floor), a bare GET of a claim from the fake API server (API floor) and one durable atomic
replace in the state directory (disk floor). Run twice: with the plugin's directories on the
build machine's disk, and on tmpfs (/dev/shm) to show the plugin's own cost without the disk.
Targets (issue #6): p99 <= 5 ms per claim; RSS <= 10 MiB; GetInfo within 1 s."""
import os
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration', 'plugin'))

import pluginlib as pl  # noqa: E402
from gstest import Tap  # noqa: E402

N_SINGLE = int(os.environ.get('GS_BENCH_N', '300'))
N_BATCH = max(10, N_SINGLE // 10)
MS = 1e3


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def rss_kib(pid):
    out = {}
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            k, _, v = line.partition(':')
            if k in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile'):
                out[k] = int(v.split()[0])
    return out


def durable_replace(d):
    tmp = os.path.join(d, '.bench.tmp')
    t0 = time.perf_counter()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, b'x' * 2048)
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, os.path.join(d, 'bench.json'))
    dfd = os.open(d, os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    return time.perf_counter() - t0


def run(t, label):
    res = {'label': label}
    with pl.PluginEnv(t, extra_args=['--kube-qps', '10000', '--kube-burst', '10000',
                                     '--log-level', 'warn']) as env:
        env.start()
        sock = env.kubelet.wait_socket()
        for _ in range(50):
            env.kubelet.get_info(sock)
        base = []
        for _ in range(N_SINGLE):
            t0 = time.perf_counter()
            env.kubelet.get_info(sock)
            base.append(time.perf_counter() - t0)
        env.api.put(pl.claim('floor', results=[('r', 'hami-gpu-0', 1, '16Mi')]))
        url = env.api.url + '/apis/resource.k8s.io/v1/namespaces/test-dra/resourceclaims/floor'
        api = []
        for _ in range(N_SINGLE):
            req = urllib.request.Request(url, headers={'Authorization': f'Bearer {pl.TOKEN}'})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req) as r:
                r.read()
            api.append(time.perf_counter() - t0)
        sync = [durable_replace(env.dirs['state']) for _ in range(min(N_SINGLE, 100))]
        os.unlink(os.path.join(env.dirs['state'], 'bench.json'))

        def claims(prefix, n):
            return [env.api.put(pl.claim(f'{prefix}-{i}', results=[('r', 'hami-gpu-0', 1, '16Mi')]))
                    for i in range(n)]

        errors = 0
        single = []
        for i, c in enumerate(claims('one', N_SINGLE)):
            t0 = time.perf_counter()
            r = env.kubelet.prepare('v1' if i % 2 else 'v1beta1', [pl.ref(c)])
            single.append(time.perf_counter() - t0)
            errors += sum(1 for v in r.claims.values() if v.error)
            env.kubelet.unprepare('v1', [pl.ref(c)])
        batch = []
        for j in range(N_BATCH):
            refs = [pl.ref(c) for c in claims(f'b{j}', 32)]
            t0 = time.perf_counter()
            r = env.kubelet.prepare('v1', refs)
            batch.append(time.perf_counter() - t0)
            errors += sum(1 for v in r.claims.values() if v.error)
            env.kubelet.unprepare('v1', refs)
        res['mem'] = rss_kib(env.proc.pid)
        t.is_eq(errors, 0, f'{label}: every benchmarked prepare succeeded')
    for k, xs in (('base', base), ('api', api), ('sync', sync), ('single', single),
                  ('batch', batch)):
        res[k] = (pct(xs, .5) * MS, pct(xs, .99) * MS)
    return res


def report(r):
    b99 = r['base'][1]
    print(f"# --- plugin directories on {r['label']} ---")
    print(f'# {"what":46s} {"p50 ms":>9s} {"p99 ms":>9s} {"p99 x GetInfo":>14s}')
    rows = [('baseline: GetInfo round trip', r['base']),
            ('baseline: GET claim from fake API', r['api']),
            ('baseline: durable atomic replace (state dir)', r['sync']),
            ('NodePrepareResources, 1 claim', r['single']),
            ('NodePrepareResources, 32 claims (per call)', r['batch']),
            ('NodePrepareResources, 32 claims (per claim)',
             (r['batch'][0] / 32, r['batch'][1] / 32))]
    for name, (p50, p99) in rows:
        print(f'# {name:46s} {p50:9.3f} {p99:9.3f} {p99 / b99:14.1f}')
    worst = max(r['single'][1], r['batch'][1] / 32)
    print(f"# per-claim p99: 1/call {r['single'][1]:.3f} ms, 32/call {r['batch'][1] / 32:.3f} ms "
          f"(target <= 5 ms: {'met' if worst <= 5 else 'NOT met'}); GetInfo p99 {b99:.3f} ms "
          f"(within 1 s: {'met' if b99 <= 1000 else 'NOT met'})")
    m = r['mem']
    print(f"# plugin RSS {m.get('VmRSS', 0) / 1024:.1f} MiB (peak {m.get('VmHWM', 0) / 1024:.1f} "
          f"MiB) = anonymous {m.get('RssAnon', 0) / 1024:.1f} MiB + file-backed shared-library "
          f"text {m.get('RssFile', 0) / 1024:.1f} MiB; target <= 10 MiB: "
          f"{'met' if m.get('VmHWM', 0) <= 10240 else 'NOT met'} (anonymous alone: "
          f"{'met' if m.get('RssAnon', 0) <= 10240 else 'NOT met'})")


def main():
    t = Tap()
    if not pl.gpusim_available():
        t.skip('plugin bench', 'gpusim not built')
        return t.done()
    with open('/proc/loadavg') as f:
        load = f.read().split()[0]
    print(f'# plugin bench (gpusim T4, fake API on loopback; {N_SINGLE} single calls, {N_BATCH} '
          f'calls of 32; load average {load} on {os.cpu_count()} CPUs)')
    results = [run(t, f'disk ({tempfile.gettempdir()})')]
    if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK):
        tempfile.tempdir = '/dev/shm'
        try:
            results.append(run(t, 'tmpfs (/dev/shm)'))
        finally:
            tempfile.tempdir = None
    for r in results:
        report(r)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
