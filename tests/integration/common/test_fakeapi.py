#!/usr/bin/python3
"""tests/lib/fakeapi.py itself: what the plugin and webhook tests rely on. Objects it returns
validate against the strict Kubernetes schemas; faults, gates, selectors, watch and 410 modes,
and the command-line mode."""
import copy
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import jsonschema

from fakeapi import FakeAPI
from gstest import Tap, reference_dir, skip_reference

REF = reference_dir()  # None without the reference data: the schema oracle is skipped
RS = '/apis/resource.k8s.io/v1/resourceslices'
RC = '/apis/resource.k8s.io/v1/namespaces/default/resourceclaims'


def call(api, method, path, body=None, ctype='application/json', headers=None):
    data = json.dumps(body).encode() if body is not None else None
    hdrs = {'Content-Type': ctype}
    hdrs.update(headers or {})
    req = urllib.request.Request(api.url + path, method=method, data=data, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b'null'), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'null'), dict(e.headers)


def schema(name):
    with open(os.path.join(REF, 'k8s-json-schema', name)) as f:
        return json.load(f)


def sample(name):
    with open(os.path.join(REF, 'k8s-api-testdata-v1.36', name)) as f:
        return json.load(f)


def valid(obj, sch):
    try:
        jsonschema.Draft7Validator(sch).validate(obj)
        return None
    except jsonschema.ValidationError as e:
        return f'{e.message} at {list(e.absolute_path)}'


def slice_obj(name):
    cap = {'cores': {'value': '100', 'requestPolicy': {'default': '100', 'validRange': {
        'min': '0', 'max': '100', 'step': '1'}}},
        'memory': {'value': '15Gi', 'requestPolicy': {'default': '15Gi', 'validRange': {
            'min': '1Mi', 'max': '15Gi', 'step': '1Mi'}}}}
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
            'metadata': {'name': name, 'labels': {'a': 'b'}},
            'spec': {'driver': 'hami-core-gpu.project-hami.io', 'nodeName': 'node-1',
                     'pool': {'name': 'node-1', 'generation': 1, 'resourceSliceCount': 1},
                     'devices': [{'name': 'hami-gpu-0', 'allowMultipleAllocations': True,
                                  'attributes': {'type': {'string': 'hami-gpu'}},
                                  'capacity': cap}]}}


def test_schema(t, api):
    s = slice_obj('node-1-gpu')
    t.is_eq(valid(s, schema('resourceslice-resource-v1.json')), None, 'the input slice is valid')
    code, out, _ = call(api, 'POST', RS, s)
    t.is_eq(code, 201, 'a ResourceSlice is created')
    t.is_eq(valid(out, schema('resourceslice-resource-v1.json')), None,
            'the stored slice validates against the strict schema')
    t.ok(out['metadata'].get('uid') and out['metadata'].get('resourceVersion')
         and out['metadata'].get('creationTimestamp') and out['metadata'].get('generation') == 1,
         'uid, resourceVersion, creationTimestamp and generation set')
    c = sample('resource.k8s.io.v1.ResourceClaim.json')
    c['metadata'] = {'name': 'claim-1'}
    code, out, _ = call(api, 'POST', RC, c)
    t.is_eq(code, 201, 'the v1.36 sample ResourceClaim is created')
    t.ok('status' not in out, 'status is not written by a create (only through /status)')
    t.is_eq(valid(out, schema('resourceclaim-resource-v1.json')), None,
            'the stored claim validates against the strict schema')
    code, lst, _ = call(api, 'GET', RC)
    t.is_eq((code, lst['kind'], lst['apiVersion']), (200, 'ResourceClaimList', 'resource.k8s.io/v1'),
            'list kind and apiVersion')
    code, out, _ = call(api, 'PUT', RC + '/claim-1/status',
                        {'metadata': {'name': 'claim-1'}, 'status': c['status']})
    t.is_eq(code, 200, 'PUT /status')
    t.is_eq(valid(out, schema('resourceclaim-resource-v1.json')), None,
            'claim with status validates')


def test_gate(t, api):
    api.set_gate('DRAConsumableCapacity', False)
    s = slice_obj('gated')
    had = any(d.get('allowMultipleAllocations') is not None for d in s['spec']['devices'])
    code, out, _ = call(api, 'POST', RS, s)
    api.set_gate('DRAConsumableCapacity', True)
    t.ok(had, 'the sample carries allowMultipleAllocations')
    t.is_eq(code, 201, 'created with the gate off')
    devs = out['spec']['devices']
    t.ok(all('allowMultipleAllocations' not in d for d in devs),
         'allowMultipleAllocations dropped')
    t.ok(all('requestPolicy' not in cap for d in devs for cap in (d.get('capacity') or {}).values()),
         'capacity[*].requestPolicy dropped')
    t.ok(all('value' in cap for d in devs for cap in (d.get('capacity') or {}).values()),
         'capacity values kept')
    api.drop_on_write('resourceslices', 'spec.devices[*].attributes.*.string')
    code, out, _ = call(api, 'POST', RS, slice_obj('dropped'))
    t.is_eq(out['spec']['devices'][0]['attributes'], {'type': {}},
            'drop_on_write removes a path with [*] and * segments')
    api.reset()


def test_faults(t, api):
    api.fail_next(1, status=429, retry_after=3, match='/resourceclaims')
    code, st, hdrs = call(api, 'GET', RS)
    t.is_eq(code, 200, 'a fault matching another path does not fire')
    code, st, hdrs = call(api, 'GET', RC)
    t.is_eq(code, 429, 'matching request gets 429')
    t.is_eq(hdrs.get('Retry-After'), '3', 'with Retry-After')
    t.is_eq((st['kind'], st['code'], st['reason']), ('Status', 429, 'TooManyRequests'),
            'a Status body')
    code, _, _ = call(api, 'GET', RC)
    t.is_eq(code, 200, 'the fault fired once')
    api.fail_next(3, status=500)
    api.clear_faults()
    t.is_eq(call(api, 'GET', RC)[0], 200, 'clear_faults forgets pending faults')
    api.delay_next(1, 0.05)
    code, _, _ = call(api, 'GET', RC)
    t.is_eq(code, 200, 'a delayed request is then served')
    api.clear_log()
    call(api, 'GET', RC + '?labelSelector=x')
    log = api.requests()
    t.is_eq([(r['method'], r['path'], r['query'], r['status']) for r in log],
            [('GET', RC, {'labelSelector': 'x'}, 200)], 'request log')


def test_semantics(t, api):
    for name, labels in (('a', {'app': 'web', 'tier': 'gpu'}), ('b', {'app': 'db'}), ('c', {})):
        call(api, 'POST', RC, {'metadata': {'name': name, 'labels': labels}, 'spec': {}})
    names = lambda sel: sorted(o['metadata']['name'] for o in  # noqa: E731
                               call(api, 'GET', RC + '?labelSelector=' + sel)[1]['items'])
    t.is_eq(names('app%20notin%20(web)'), ['b', 'c'], 'notin matches objects without the key')
    t.is_eq(names('!app'), ['c'], '!key')
    t.is_eq(names('app,tier%3Dgpu'), ['a'], 'exists and equality')
    code, out, _ = call(api, 'POST', RC + '?dryRun=All', {'metadata': {'name': 'dry'}})
    t.is_eq(code, 201, 'dry-run create answers 201')
    t.is_eq(call(api, 'GET', RC + '/dry')[0], 404, 'but stores nothing')
    code, out, _ = call(api, 'POST', RC, {'metadata': {}})
    t.is_eq((code, out['reason']), (422, 'Invalid'), 'no name and no generateName -> 422')
    code, out, _ = call(api, 'PATCH', RC + '/a', {'metadata': {'labels': None}},
                        ctype='application/strategic-merge-patch+json')
    t.is_eq(code, 415, 'strategic merge patch is not supported (415)')
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p'}, 'spec': {'nodeName': 'n1'}}
    code, out, _ = call(api, 'POST', '/api/v1/namespaces/default/pods', pod)
    t.is_eq(code, 201, 'core/v1 pods under /api/v1')
    code, lst, _ = call(api, 'GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1')
    t.is_eq(len(lst['items']), 1, 'pods across namespaces with a field selector')
    code, _, _ = call(api, 'GET', '/apis/resource.k8s.io/v1/namespaces/default/resourceslices')
    t.is_eq(code, 404, 'a cluster-scoped resource under a namespace -> 404')
    code, _, _ = call(api, 'GET', '/apis/resource.k8s.io/v1beta1/resourceclaims')
    t.is_eq(code, 404, 'unserved versions -> 404')


def test_watch_http_410(t):
    with FakeAPI(watch_410='http') as api:
        call(api, 'POST', RC, {'metadata': {'name': 'x'}})
        api.compact()
        code, st, _ = call(api, 'GET', RC + '?watch=1&resourceVersion=1')
        t.is_eq((code, st['reason']), (410, 'Expired'), "watch_410='http' answers HTTP 410")


def test_cli(t):
    script = os.path.join(os.path.dirname(__file__), '../../lib/fakeapi.py')
    p = subprocess.Popen([sys.executable, script, '--port', '0', '--print-port', '--token', 'k'],
                         stdout=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline())
        api = FakeAPI(port=port)  # only for its url
        code, st, _ = call(api, 'GET', RC)
        t.is_eq((code, st['reason']), (401, 'Unauthorized'), 'CLI server requires --token')
        code, _, _ = call(api, 'GET', RC, headers={'Authorization': 'Bearer k'})
        t.is_eq(code, 200, 'and accepts it')
        code, _, _ = call(api, 'POST', '/_fake/fail', {'count': 1, 'status': 503})
        t.is_eq(code, 200, 'control API needs no token')
        code, _, _ = call(api, 'GET', RC, headers={'Authorization': 'Bearer k'})
        t.is_eq(code, 503, 'control API fault fires')
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
    t.is_eq(rc, 0, 'SIGTERM exits 0')


def main():
    t = Tap()
    with FakeAPI() as api:
        if REF and os.path.isdir(os.path.join(REF, 'k8s-json-schema')):
            t.run('schema', test_schema, t, api)
        else:
            skip_reference(t, 'stored objects validate against the strict schemas',
                           'k8s-json-schema')
        t.run('gate', test_gate, t, api)
        t.run('faults', test_faults, t, api)
        api.reset()
        t.run('semantics', test_semantics, t, api)
    t.run('watch 410', test_watch_http_410, t)
    t.run('cli', test_cli, t)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
