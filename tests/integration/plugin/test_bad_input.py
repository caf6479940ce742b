#!/usr/bin/python3
"""Bad input gives clear per-claim errors, never a crash: claims missing, UID mismatch, no
allocation, results of other drivers only, malformed API responses, API errors, garbled and
oversize gRPC messages."""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

import pluginlib as pl  # noqa: E402
from gstest import Tap, env_paths, skip_unbuilt  # noqa: E402


def prep_error(env, c_ref, version='v1'):
    r = env.kubelet.prepare(version, [c_ref])
    return r.claims[c_ref[2]].error, list(r.claims[c_ref[2]].devices)


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'bad input', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    with pl.PluginEnv(t, extra_args=['--max-grpc-message', '65536']) as env:
        env.start()
        good = env.api.put(pl.claim('good', results=[('r', 'hami-gpu-0', 10, '1Gi')]))

        # Missing claim.
        missing = ('test-dra', 'nope', str(uuid.uuid4()))
        err, devs = prep_error(env, missing)
        t.is_eq(err, 'claim test-dra/nope: not found in the API server', 'missing claim')
        t.is_eq(devs, [], 'missing claim: no devices')

        # UID mismatch.
        other_uid = str(uuid.uuid4())
        err, _ = prep_error(env, ('test-dra', 'good', other_uid))
        t.is_eq(err, f"claim test-dra/good: UID mismatch: kubelet asked for {other_uid}, "
                     f"API server has {good['metadata']['uid']}", 'UID mismatch')

        # No allocation.
        c = env.api.put(pl.claim('pending', results=[('r', 'hami-gpu-0', 10, '1Gi')],
                                 allocated=False))
        err, _ = prep_error(env, pl.ref(c), 'v1beta1')
        t.is_eq(err, 'claim test-dra/pending: not allocated (status.allocation is missing)',
                'no allocation')
        # A Warning Event on the claim (issue 36), deduplicated under a flood.
        evs = [e for e in env.api.list('events') if e['involvedObject'].get('name') == 'pending']
        t.is_eq([(e['type'], e['reason'], e['involvedObject'].get('kind'),
                  e['involvedObject'].get('namespace'), e['involvedObject'].get('uid'),
                  e['source'].get('component')) for e in evs],
                [('Warning', 'PrepareFailed', 'ResourceClaim', 'test-dra', c['metadata']['uid'],
                  'gpuslice-kubelet-plugin')], 'a failed prepare: Warning PrepareFailed on the '
                'ResourceClaim')
        t.like(evs[0]['message'] if evs else '', 'not allocated', 'the Event says why')
        env.api.clear_log()
        t0 = time.monotonic()
        same = sum(prep_error(env, pl.ref(c))[0].endswith('not allocated (status.allocation is '
                                                          'missing)') for _ in range(1000))
        took = time.monotonic() - t0
        writes = [r for r in env.api.requests() if '/events' in r['path']
                  and r['method'] in ('POST', 'PATCH')]
        bound = int(took / 60) + 1  # one write per claim + reason per 60 s (kube/event.h)
        t.diag(f'1000 failed prepares in {took:.0f}s -> {len(writes)} Event writes (bound {bound})')
        t.ok(same == 1000 and len(writes) <= bound,
             '1,000 identical prepare failures: a bounded number of Event writes', diag=writes[:3])

        # Other drivers only.
        c = pl.claim('nic', results=[])
        c['status'] = {'allocation': {'devices': {'results': [
            {'request': 'n', 'driver': 'nic.example.com', 'pool': pl.NODE, 'device': 'eth0'}]}}}
        c = env.api.put(c)
        err, _ = prep_error(env, pl.ref(c))
        t.is_eq(err, f'claim test-dra/nic: no allocation result for driver {pl.DRIVER}',
                'results of other drivers only')

        # Malformed allocation content.
        c = pl.claim('garbled', results=[('r', 'hami-gpu-0', 10, '1Gi')])
        c['status']['allocation']['devices']['results'][0]['consumedCapacity']['memory'] = 'many'
        c = env.api.put(c)
        err, _ = prep_error(env, pl.ref(c))
        t.like(err, 'consumedCapacity.memory: "many" is not an integer quantity',
               'malformed quantity named')
        c = pl.claim('notalist', results=[('r', 'hami-gpu-0', 10, '1Gi')])
        c['status']['allocation']['devices']['results'] = 'oops'
        c = env.api.put(c)
        err, _ = prep_error(env, pl.ref(c))
        t.is_eq(err, 'claim test-dra/notalist: status.allocation.devices.results is not a list',
                'results not a list')
        c = pl.claim('ghost', results=[('r', 'hami-gpu-9', 10, '1Gi')])
        c = env.api.put(c)
        err, _ = prep_error(env, pl.ref(c))
        t.like(err, 'device "hami-gpu-9" does not exist on this node', 'unknown device')

        # Issue 31, the admin over the tenant: the DeviceClass's config sets ceilings
        # (allowedComputePolicies, highestPriority); a claim config asking more is refused at
        # prepare naming the field and both values, one within them prepares.
        def with_config(name, claim_params, class_params=None):
            c = pl.claim(name, results=[('r', 'hami-gpu-0', 10, '1Gi')])
            base = {'apiVersion': 'gpuslice.io/v1alpha1', 'kind': 'GpuSliceConfig'}
            cfg = [{'source': 'FromClass', 'opaque': {'driver': pl.DRIVER, 'parameters': {
                **base, 'computePolicy': 'hard', 'priority': 1,
                'allowedComputePolicies': ['hard', 'work-conserving'], 'highestPriority': 1,
                **(class_params or {})}}}]
            if claim_params is not None:
                cfg.append({'source': 'FromClaim', 'opaque': {'driver': pl.DRIVER,
                                                              'parameters': {**base,
                                                                             **claim_params}}})
            c['status']['allocation']['devices']['config'] = cfg
            return env.api.put(c)
        hostile = with_config('hostile', {'computePolicy': 'disabled', 'priority': 0})
        err, devs = prep_error(env, pl.ref(hostile))
        t.is_eq((err, devs), ('claim test-dra/hostile: config[1].opaque.parameters.computePolicy: '
                              '"disabled" exceeds the DeviceClass ceiling allowedComputePolicies '
                              '[hard, work-conserving] (config[0].opaque.parameters)', []),
                'a claim config asking policy disabled past the class ceiling is refused at '
                'prepare, naming the field')
        pri = with_config('greedy', {'priority': 0})
        err, _ = prep_error(env, pl.ref(pri))
        t.is_eq(err, 'claim test-dra/greedy: config[1].opaque.parameters.priority: 0 (high) '
                'exceeds the DeviceClass ceiling highestPriority 1 (low) '
                '(config[0].opaque.parameters)', 'a claim config asking priority 0 past '
                'highestPriority 1 is refused at prepare')
        forged = with_config('forged', {'highestPriority': 0, 'priority': 0})
        err, _ = prep_error(env, pl.ref(forged))
        t.like(err, 'config[1].opaque.parameters.highestPriority: a ceiling is set by the '
               'DeviceClass', 'a claim cannot set a ceiling itself')
        modest = with_config('modest', {'computePolicy': 'work-conserving', 'priority': 1})
        err, devs = prep_error(env, pl.ref(modest))
        uid = modest['metadata']['uid']
        lim = os.path.join(env.dirs['host'], 'claims', uid, f'{uid}.limits')
        text = open(lim).read() if os.path.exists(lim) else ''
        t.ok(err == '' and len(devs) == 1 and 'policy work-conserving\n' in text and
             'priority 1\n' in text, 'a claim config within the ceilings prepares, with its '
             'settings in the limits file', diag=(err, text))
        open_cls = with_config('open', {'computePolicy': 'disabled', 'priority': 0},
                               {'allowedComputePolicies': ['hard', 'work-conserving',
                                                           'disabled'], 'highestPriority': 0})
        err, _ = prep_error(env, pl.ref(open_cls))
        t.is_eq(err, '', 'a class whose ceilings allow it lets the claim ask disabled / 0')
        env.kubelet.unprepare('v1', [pl.ref(modest), pl.ref(open_cls)])

        # Malformed API response: a 200 whose body is a Status, not a claim.
        env.api.fail_next(1, status=200, match='/resourceclaims/good', message='not a claim')
        err, _ = prep_error(env, pl.ref(good))
        t.is_eq(err, 'claim test-dra/good: metadata.uid missing in API response',
                'malformed API response')
        # API errors after retries: message carries the server's words.
        env.api.fail_next(20, status=403, match='/resourceclaims/good', message='no access')
        err, _ = prep_error(env, pl.ref(good))
        t.like(err, 'claim test-dra/good: cannot fetch it from the API server', 'API error')
        t.like(err, 'no access', 'API error message passed on')
        env.api.reset()
        good = env.api.put(pl.claim('good', results=[('r', 'hami-gpu-0', 10, '1Gi')]))

        # Several claims in one call: each gets its own entry, the good one is prepared.
        r = env.kubelet.prepare('v1', [missing, pl.ref(good), ('test-dra', 'x', '../../etc')])
        t.is_eq(sorted(r.claims.keys()), sorted([missing[2], good['metadata']['uid'],
                                                 '../../etc']),
                'every claim of the request has an entry')
        t.is_eq(r.claims[good['metadata']['uid']].error, '', 'good claim prepared alongside')
        t.is_eq(r.claims['../../etc'].error, 'claim test-dra/x: invalid UID "../../etc"',
                'path-like UID refused')
        ck = env.checkpoint()
        t.is_eq(sorted(ck['claims'].keys()), [good['metadata']['uid']],
                'only the good claim checkpointed')

        # gRPC level: garbled protobuf -> INVALID_ARGUMENT; oversize -> RESOURCE_EXHAUSTED.
        method = '/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources'
        try:
            env.kubelet.raw_call(method, b'\xff\xff\xff\xff\x0f\x01')
            t.ok(False, 'garbled message refused')
        except grpc.RpcError as e:
            t.is_eq(e.code(), grpc.StatusCode.INVALID_ARGUMENT, 'garbled message: INVALID_ARGUMENT')
            t.like(e.details(), 'cannot decode NodePrepareResourcesRequest',
                   'garbled message: details')
        try:
            env.kubelet.raw_call(method, b'\x0a\x83\x80\x04' + b'x' * 65539)
            t.ok(False, 'oversize message refused')
        except grpc.RpcError as e:
            t.is_eq(e.code(), grpc.StatusCode.RESOURCE_EXHAUSTED,
                    'oversize message: RESOURCE_EXHAUSTED')
        try:
            env.kubelet.raw_call('/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/Nope', b'')
            t.ok(False, 'unknown method refused')
        except grpc.RpcError as e:
            t.is_eq(e.code(), grpc.StatusCode.UNIMPLEMENTED, 'unknown method: UNIMPLEMENTED')
        # Still alive and serving.
        r = env.kubelet.prepare('v1beta1', [pl.ref(good)])
        t.is_eq(r.claims[good['metadata']['uid']].error, '', 'plugin still serves afterwards')
        t.ok(env.proc.poll() is None, 'plugin process alive')
        t.is_eq(env.stop(), 0, 'clean exit')
    # The API server is down: the plugin still starts and registers, answers prepares with a
    # clear per-claim error, and is live but not ready (nothing published).
    with pl.PluginEnv(t) as env:
        env.api.stop()
        hport = pl.free_port()
        env.start(extra=['--healthcheck-port', str(hport)])
        err, _ = prep_error(env, ('test-dra', 'x', str(uuid.uuid4())))
        t.like(err, 'claim test-dra/x: cannot fetch it from the API server', 'API down: clear error')
        with urllib.request.urlopen(f'http://127.0.0.1:{hport}/healthz', timeout=5) as r:
            t.is_eq(r.status, 200, 'API down: live')
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{hport}/readyz', timeout=5)
            t.ok(False, 'API down: not ready')
        except urllib.error.HTTPError as e:
            t.is_eq((e.code, e.read()), (503, b'not ready: serving=1 registered=1 published=0\n'),
                    'API down: not ready, and says why')
        t.is_eq(env.stop(), 0, 'API down: clean exit')
    # --print-config: the effective configuration, flags over environment over defaults.
    e = dict(os.environ, NODE_NAME='node-from-env', GPUSLICE_GRPC_THREADS='7')
    out = subprocess.run([env_paths()['GS_PLUGIN'], '--print-config', '--cdi-root', '/flag/cdi',
                          '--grpc-threads', '9'], capture_output=True, text=True, env=e)
    t.is_eq(out.returncode, 0, '--print-config exits 0')
    for line in ('node-name: "node-from-env"', 'cdi-root: "/flag/cdi"', 'grpc-threads: 9',
                 'driver-name: "hami-core-gpu.project-hami.io"', 'reconcile-grace: "5m0s"'):
        t.ok(line in out.stdout.splitlines(), f'--print-config shows {line}', diag=out.stdout)
    # Option errors name the option and the value.
    with pl.PluginEnv(t) as env:
        env.start(wait=False, extra=['--grpc-threads', 'lots'])
        rc = env.wait_exit(10)
        t.is_eq(rc, 2, 'bad option: exit 2')
        t.like(env.log(), '--grpc-threads', 'bad option message names the flag')
        t.like(env.log(), 'lots', 'bad option message names the value')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
