#!/usr/bin/python3
"""NodePrepareResources latency (1 and 32 claims per call) against the fake API server on
loopback, and the plugin's RSS. Baselines measured in the same run: a bare GetInfo round trip
(gRPC floor) and a bare GET of a claim from the fake API server (API floor).
Targets (issue #6): p99 <= 5 ms per claim; RSS <= 10 MiB."""
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration', 'plugin'))

import pluginlib as pl  # noqa: E402
from gstest import Tap  # noqa: E402

N_SINGLE = int(os.environ.get('GS_BENCH_N', '300'))
N_BATCH = max(10, N_SINGLE // 10)


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


def main():
    t = Tap()
    if not pl.gpusim_available():
        t.skip('plugin bench', 'gpusim not built')
        return t.done()
    with pl.PluginEnv(t, extra_args=['--kube-qps', '10000', '--kube-burst', '10000',
                                     '--log-level', 'warn']) as env:
        env.start()
        sock = env.kubelet.wait_socket()
        # Baseline 1: GetInfo round trip.
        for _ in range(50):
            env.kubelet.get_info(sock)
        base = []
        for _ in range(N_SINGLE):
            t0 = time.perf_counter()
            env.kubelet.get_info(sock)
            base.append(time.perf_counter() - t0)
        # Baseline 2: GET of one claim from the fake API server (the API floor of a prepare).
        c = env.api.put(pl.claim('floor', results=[('r', 'hami-gpu-0', 1, '16Mi')]))
        url = env.api.url + '/apis/resource.k8s.io/v1/namespaces/test-dra/resourceclaims/floor'
        api = []
        for _ in range(N_SINGLE):
            req = urllib.request.Request(url, headers={'Authorization': f'Bearer {pl.TOKEN}'})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req) as r:
                r.read()
            api.append(time.perf_counter() - t0)

        # Baseline 3: one durable atomic replace in the state dir (write, fsync, rename, fsync
        # dir): the disk's floor under the checkpoint commit every prepare call makes.
        sync = []
        for i in range(min(N_SINGLE, 100)):
            tmp = os.path.join(env.dirs['state'], '.bench.tmp')
            t0 = time.perf_counter()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, b'x' * 2048)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(env.dirs['state'], 'bench.json'))
            dfd = os.open(env.dirs['state'], os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
            sync.append(time.perf_counter() - t0)
        os.unlink(os.path.join(env.dirs['state'], 'bench.json'))

        def claims(prefix, n):
            return [env.api.put(pl.claim(f'{prefix}-{i}', results=[('r', 'hami-gpu-0', 1, '16Mi')]))
                    for i in range(n)]

        # 1 claim per call (each claim fresh: fetched from the API, files written, checkpointed).
        single = []
        cs = claims('one', N_SINGLE)
        errors = 0
        for i, c in enumerate(cs):
            t0 = time.perf_counter()
            r = env.kubelet.prepare('v1' if i % 2 else 'v1beta1', [pl.ref(c)])
            single.append(time.perf_counter() - t0)
            errors += sum(1 for v in r.claims.values() if v.error)
            env.kubelet.unprepare('v1', [pl.ref(c)])
        # 32 claims per call.
        batch = []
        for j in range(N_BATCH):
            cs = claims(f'b{j}', 32)
            refs = [pl.ref(c) for c in cs]
            t0 = time.perf_counter()
            r = env.kubelet.prepare('v1', refs)
            batch.append(time.perf_counter() - t0)
            errors += sum(1 for v in r.claims.values() if v.error)
            env.kubelet.unprepare('v1', refs)
        mem = rss_kib(env.proc.pid)
        t.is_eq(errors, 0, 'every benchmarked prepare succeeded')

    ms = 1e3
    b50, b99 = pct(base, .5) * ms, pct(base, .99) * ms
    a50, a99 = pct(api, .5) * ms, pct(api, .99) * ms
    y50, y99 = pct(sync, .5) * ms, pct(sync, .99) * ms
    s50, s99 = pct(single, .5) * ms, pct(single, .99) * ms
    m50, m99 = pct(batch, .5) * ms, pct(batch, .99) * ms
    print(f'# plugin bench (gpusim T4, fake API on loopback; {N_SINGLE} single calls, '
          f'{N_BATCH} calls of 32)')
    print(f'# {"what":44s} {"p50 ms":>9s} {"p99 ms":>9s} {"p99 x GetInfo":>14s}')
    print(f'# {"baseline: GetInfo round trip":44s} {b50:9.3f} {b99:9.3f} {1.0:14.1f}')
    print(f'# {"baseline: GET claim from fake API":44s} {a50:9.3f} {a99:9.3f} {a99 / b99:14.1f}')
    print(f'# {"baseline: durable atomic replace (state dir)":44s} {y50:9.3f} {y99:9.3f} '
          f'{y99 / b99:14.1f}')
    print(f'# {"NodePrepareResources, 1 claim":44s} {s50:9.3f} {s99:9.3f} {s99 / b99:14.1f}')
    print(f'# {"NodePrepareResources, 32 claims (per call)":44s} {m50:9.3f} {m99:9.3f} '
          f'{m99 / b99:14.1f}')
    print(f'# {"NodePrepareResources, 32 claims (per claim)":44s} {m50 / 32:9.3f} '
          f'{m99 / 32:9.3f} {m99 / 32 / b99:14.1f}')
    print(f'# GetInfo p99 {b99:.3f} ms (requirement: answer within 1000 ms: '
          f'{"met" if b99 <= 1000 else "NOT met"})')
    print(f'# per-claim p99: 1/call {s99:.3f} ms, 32/call {m99 / 32:.3f} ms (target <= 5 ms: '
          f'{"met" if max(s99, m99 / 32) <= 5 else "NOT met"})')
    print(f'# plugin RSS {mem.get("VmRSS", 0) / 1024:.1f} MiB (peak {mem.get("VmHWM", 0) / 1024:.1f}'
          f' MiB) = anonymous {mem.get("RssAnon", 0) / 1024:.1f} MiB + file-backed (shared library '
          f'text: libgrpc, libcrypto, ...) {mem.get("RssFile", 0) / 1024:.1f} MiB; target <= 10 MiB: '
          f'{"met" if mem.get("VmHWM", 0) <= 10240 else "NOT met"} (anonymous: '
          f'{"met" if mem.get("RssAnon", 0) <= 10240 else "NOT met"})')
    print(f'# durable commit floor p50 {y50:.3f} ms: 1-claim calls pay one checkpoint commit each, '
          f'32-claim calls share it')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
