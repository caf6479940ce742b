#!/usr/bin/python3
"""Crash safety: the plugin SIGKILLs itself at each step of prepare and unprepare (its
--fault-point switch); after a restart and kubelet's retry the state is consistent: checkpoint,
CDI spec and claim directory agree, nothing is leaked, and unprepare leaves nothing behind."""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

import pluginlib as pl  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402

PREPARE_POINTS = ['prepare-after-started', 'prepare-after-claim-dir', 'prepare-after-limits',
                  'prepare-after-cdi', 'prepare-after-completed']
UNPREPARE_POINTS = ['unprepare-after-cdi', 'unprepare-after-claim-dir']


def expected_files(uid):
    return sorted([
        f'cdi/k8s.{pl.DRIVER}-claim_{uid}.json',
        f'host/claims/{uid}',
        f'host/claims/{uid}/{uid}.limits',
        f'host/claims/{uid}/region',
        f'host/claims/{uid}/region/region',
    ])


def crash_call(t, env, point, fn):
    env.stop()
    env.start(fault_point=point)
    try:
        fn()
        t.ok(False, f'{point}: call dies with the plugin')
    except grpc.RpcError as e:
        t.ok(e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN,
                          grpc.StatusCode.INTERNAL, grpc.StatusCode.CANCELLED),
             f'{point}: call fails ({e.code()})')
    rc = env.wait_exit(20)
    t.is_eq(rc, -signal.SIGKILL, f'{point}: plugin was killed at the fault point')
    env.stop()
    env.start()  # restart: start-up reconcile runs before the sockets appear


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'crash points', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    with pl.PluginEnv(t) as env:
        env.start()
        for i, point in enumerate(PREPARE_POINTS):
            c = env.api.put(pl.claim(f'crash-{i}', results=[('r', 'hami-gpu-0', 20, '2Gi')]))
            uid = c['metadata']['uid']
            crash_call(t, env, point, lambda c=c: env.kubelet.prepare('v1', [pl.ref(c)]))
            ck = env.checkpoint() or {'claims': {}}
            if point == 'prepare-after-completed':
                t.is_eq(ck['claims'].get(uid, {}).get('state'), 'PrepareCompleted',
                        f'{point}: restart keeps the completed claim')
                t.is_eq(env.claim_files(), expected_files(uid), f'{point}: its files are there')
            else:
                t.is_eq(ck['claims'], {}, f'{point}: restart rolled the unfinished claim back')
                t.is_eq(env.claim_files(), [], f'{point}: no leaked files after roll-back')
            r = env.kubelet.prepare('v1', [pl.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{point}: kubelet retry succeeds')
            t.is_eq(env.claim_files(), expected_files(uid), f'{point}: exactly the claim files')
            t.no_schema_errors(env.cdi_spec_errors(), f'{point}: CDI spec valid after the retry')
            t.is_eq(env.checkpoint()['claims'][uid]['state'], 'PrepareCompleted',
                    f'{point}: checkpoint completed after retry')
            r = env.kubelet.unprepare('v1', [pl.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{point}: unprepare ok')
            t.is_eq(env.claim_files(), [], f'{point}: unprepare leaves nothing')

        for i, point in enumerate(UNPREPARE_POINTS):
            c = env.api.put(pl.claim(f'ucrash-{i}', results=[('r', 'hami-gpu-0', 20, '2Gi')]))
            uid = c['metadata']['uid']
            r = env.kubelet.prepare('v1beta1', [pl.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{point}: prepared')
            crash_call(t, env, point, lambda c=c: env.kubelet.unprepare('v1beta1', [pl.ref(c)]))
            ck = env.checkpoint()
            t.is_eq(ck['claims'].get(uid, {}).get('state'), 'PrepareCompleted',
                    f'{point}: claim still recorded after the crash')
            t.is_eq(env.claim_files(), expected_files(uid),
                    f'{point}: restart made the recorded claim whole again')
            r = env.kubelet.unprepare('v1beta1', [pl.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{point}: kubelet retry of unprepare succeeds')
            t.is_eq(env.claim_files(), [], f'{point}: nothing left')
            t.is_eq(env.checkpoint()['claims'], {}, f'{point}: checkpoint empty')

        # Orphans (files no checkpoint entry accounts for) are removed at start-up; a claim gone
        # from the API is cleaned by the API reconcile (grace 0 here).
        c = env.api.put(pl.claim('gone', results=[('r', 'hami-gpu-0', 20, '2Gi')]))
        uid = c['metadata']['uid']
        env.kubelet.prepare('v1', [pl.ref(c)])
        env.stop()
        orphan = os.path.join(env.dirs['host'], 'claims', 'deadbeef-0000-0000-0000-000000000000')
        os.makedirs(orphan + '/region')
        with open(os.path.join(env.dirs['cdi'],
                               f'k8s.{pl.DRIVER}-claim_deadbeef-0000-0000-0000-000000000000.json'),
                  'w') as f:
            f.write('{}')
        with open(os.path.join(env.dirs['cdi'], 'other-vendor.json'), 'w') as f:
            f.write('{}')
        env.start()
        t.is_eq(env.claim_files(), sorted(expected_files(uid) + ['cdi/other-vendor.json']),
                'start-up removes orphan claim files, keeps other vendors\' specs')
        # A second prepared claim loses its allocation (deallocated while the plugin missed the
        # unprepare): it is cleaned as well.
        c2 = env.api.put(pl.claim('dealloc', results=[('r', 'hami-gpu-0', 20, '2Gi')]))
        env.kubelet.prepare('v1', [pl.ref(c2)])
        c2 = env.api.get('resourceclaims', 'test-dra', 'dealloc')
        del c2['status']
        env.api.put(c2)
        env.api_request('DELETE', f'/apis/resource.k8s.io/v1/namespaces/test-dra/resourceclaims/gone')
        env.stop()
        env.start(extra=['--reconcile-interval', '1s', '--reconcile-grace', '0'])
        done = pl.wait_for(lambda: env.checkpoint()['claims'] == {}, 15)
        t.ok(done, 'claims deleted from the API or deallocated are cleaned by reconcile',
             diag=json.dumps(env.checkpoint()))
        t.is_eq(env.claim_files(), ['cdi/other-vendor.json'], 'its files are gone')

        # A corrupt checkpoint: moved aside, the plugin starts empty, orphaned files are removed,
        # and kubelet's retry prepares the claim again.
        c = env.api.put(pl.claim('again', results=[('r', 'hami-gpu-0', 20, '2Gi')]))
        uid = c['metadata']['uid']
        env.kubelet.prepare('v1', [pl.ref(c)])
        env.stop()
        ck = os.path.join(env.dirs['state'], 'checkpoint.json')
        with open(ck, 'w') as f:
            f.write('{"version": 1, "claims": {"trunc')
        env.start()
        t.ok(os.path.exists(ck + '.corrupt'), 'corrupt checkpoint kept aside')
        t.like(env.log(), 'checkpoint is corrupt', 'corrupt checkpoint logged')
        t.is_eq(env.claim_files(), ['cdi/other-vendor.json'],
                'files of the unknown claim removed')
        r = env.kubelet.prepare('v1', [pl.ref(c)])
        t.is_eq(r.claims[uid].error, '', 'retry prepares the claim again')
        t.is_eq(env.claim_files(), sorted(expected_files(uid) + ['cdi/other-vendor.json']),
                'claim files back')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
