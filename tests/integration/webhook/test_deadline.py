#!/usr/bin/env python3
"""gpuslice-webhook against a slow API server (issue 12): one deadline for the whole admission
(--admission-timeout), the ResourceClaimTemplates of a pod created concurrently, and a clear
denial when the deadline passes first.

The fake API server answers every template POST after 2.5 s. A pod with 6 claim shapes needs 6
creations: one after another they take 15 s, past a 7 s deadline; at once they take one delay.
No assertion here is about speed: the pod with 6 shapes is allowed (or not) under the configured
deadline, the slow calls that cannot finish in time give a denial that says so, and that denial
arrives before the API server has answered (the webhook does not wait it out)."""
import json
import sys
import tempfile
import threading
import time

import jsonpatch

from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import DRIVER, Webhook, make_cert, patch_of, review, slice_obj, write_kubeconfig

TOKEN = 'deadline-token'
DELAY = 2.5        # seconds per slow API call, as in the issue
DEADLINE = '7s'    # --admission-timeout: 2 delays in a row fit, 3 (or 6) do not


def pod_with_shapes(n, name='six'):
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'generateName': name + '-', 'namespace': 'team-a'},
            'spec': {'containers': [{'name': f'c{i}', 'image': 'cuda:12',
                                     'resources': {'limits': {'nvidia.com/gpumem': str(1000 + i)}}}
                                    for i in range(n)]}}


def template_posts(api):
    return [r for r in api.requests(method='POST') if 'resourceclaimtemplates' in r['path']]


def check_concurrent(t, api, wh):
    api.delay_next(6, DELAY, match='resourceclaimtemplates', method='POST')
    p = pod_with_shapes(6)
    start = time.monotonic()
    status, resp = wh.mutate(review(p, uid='six-shapes'))
    took = time.monotonic() - start
    r = resp['response']
    t.ok(status == 200 and r['allowed'], '6 shapes, 2.5 s per API call, 7 s deadline: allowed '
         '(the templates are created at once, not one after another)',
         diag=json.dumps(r)[:600])
    names = sorted({c['resourceClaimTemplateName'] for c in
                    jsonpatch.apply_patch(p, patch_of(resp))['spec']['resourceClaims']}) \
        if r.get('patch') else []
    t.ok(took < float(DEADLINE.rstrip('s')),
         'answered within the admission deadline (one after another the creations take 15 s)',
         diag=f'{took:.1f} s')
    t.is_eq(len(names), 6, 'six distinct templates in the patch')
    t.ok(names and all(api.get('resourceclaimtemplates', 'team-a', n) for n in names),
         'all 6 templates created')
    t.is_eq(len(template_posts(api)), 6, 'one create per template')


def check_deadline(t, api, wh):
    # Two creations that take longer than the whole deadline.
    slow = 12.0
    api.delay_next(2, slow, match='resourceclaimtemplates', method='POST')
    p = pod_with_shapes(2, name='stuck')
    p['spec']['containers'][0]['resources']['limits']['nvidia.com/gpumem'] = '3001'
    p['spec']['containers'][1]['resources']['limits']['nvidia.com/gpumem'] = '3002'
    before = len(template_posts(api))
    start = time.monotonic()
    status, resp = wh.mutate(review(p, uid='stuck'))
    took = time.monotonic() - start
    r = resp['response']
    t.ok(status == 200 and not r['allowed'], 'API calls slower than the deadline: denied')
    msg = r.get('status', {}).get('message', '')
    t.like(msg, 'admission deadline of 7s exceeded (--admission-timeout): creating 2 '
           'ResourceClaimTemplate(s): 0 answered by the API server before the admission deadline',
           'denial says the deadline passed, what was waited for and which option sets it')
    t.is_eq((r.get('status', {}).get('code'), r.get('status', {}).get('reason')),
            (504, 'Timeout'), 'denial code 504 Timeout')
    t.ok(took < slow, 'the denial comes before the API server answers (not waited out)',
         diag=f'{took:.1f} s')
    t.is_eq(len(template_posts(api)) - before, 2, 'both creations were sent (concurrently)')
    t.is_eq(wh.metric('gpuslice_webhook_admission_deadline_exceeded_total'), 1.0,
            'deadline denial counted in /metrics')
    # The creations finish in the background; creating the pod again is allowed.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and \
            any(x['status'] is None for x in template_posts(api)):
        time.sleep(0.1)
    status, resp = wh.mutate(review(p, uid='stuck-retry'))
    t.ok(status == 200 and resp['response']['allowed'], 'the retry of the pod is allowed')


def check_slow_slices(t, api, wh):
    """A percentage needs the ResourceSlices: a list slower than the deadline denies too."""
    api.delay_next(1, 12.0, match='resourceslices', method='GET')
    p = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'generateName': 'pct-',
                                                         'namespace': 'team-a'},
         'spec': {'containers': [{'name': 'main', 'image': 'cuda:12', 'resources': {
             'limits': {'nvidia.com/gpumem-percentage': '50'}}}]}}
    status, resp = wh.mutate(review(p, uid='pct-slow'))
    r = resp['response']
    t.ok(status == 200 and not r['allowed'], 'slice list slower than the deadline: denied')
    t.like(r.get('status', {}).get('message', ''),
           'listing ResourceSlices: no answer from the API server before the admission deadline',
           'denial names the slow list')
    # Concurrent admissions share one list call: two pods at once, one list.
    api.delay_next(1, DELAY, match='resourceslices', method='GET')
    out = []
    ths = [threading.Thread(target=lambda k=k: out.append(wh.mutate(review(p, uid=f'pct{k}'))))
           for k in range(2)]
    # The first list (the slow one above) may still be running: wait for it to end first.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and \
            any(x['status'] is None for x in api.requests(method='GET', match='resourceslices')):
        time.sleep(0.1)
    lists_before = len(api.requests(method='GET', match='resourceslices'))
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    t.ok(len(out) == 2 and all(s == 200 and x['response']['allowed'] for s, x in out),
         'after the slow list: percentage pods allowed')
    t.is_eq(len(api.requests(method='GET', match='resourceslices')) - lists_before, 1,
            'two admissions missing the slice cache at once share one list call')


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token=TOKEN) as api:
        api.put(slice_obj('node-1-gpus', DRIVER, ['15Gi']))
        cert, key = make_cert(tmp)
        kubeconfig = write_kubeconfig(tmp, api.url, TOKEN)
        # --idle-timeout 1s: shorter than the slow admissions, which must still be answered on
        # their connection (the idle timeout does not run while an admission is answered).
        wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp,
                     extra=['--admission-timeout', DEADLINE, '--api-timeout', '30s',
                            '--idle-timeout', '1s', '--slice-cache-ttl', '1ms'])
        try:
            t.run('concurrent creation', check_concurrent, t, api, wh)
            t.run('deadline', check_deadline, t, api, wh)
            t.run('slow slices', check_slow_slices, t, api, wh)
            t.like(wh.output(), 'result=denied detail="admission deadline of 7s exceeded',
                   'deadline denial logged')
        finally:
            rc = wh.stop()
            t.is_eq(rc, 0, 'SIGTERM with calls that outlived their admission: clean exit')
            if rc != 0:
                t.diag(wh.output()[-4000:])
    sys.exit(t.done())


if __name__ == '__main__':
    main()
