#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpuslice schedule over the lab's objects: allocations in the exact shape of
resource.k8s.io/v1 status.allocation (validated against the Kubernetes JSON schema), shares of
one device, explanations, exit codes and messages for bad input."""
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import yaml

from gstest import Tap, env_paths, reference_json, skip_reference

P = env_paths()
GS = P['GS_GPUSLICE']
HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.join(HERE, 'lab')
SCHEMA = ('k8s-json-schema', 'resourceclaim-resource-v1.json')
UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')


def run(*args):
    p = subprocess.run([GS, 'schedule', *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def lab_claims():
    with open(os.path.join(LAB, '02-claims.yaml')) as f:
        return {d['metadata']['name']: d for d in yaml.safe_load_all(f)
                if d and d.get('kind') == 'ResourceClaim'}


def main():
    t = Tap()
    schema = reference_json(*SCHEMA)
    validator = jsonschema.Draft7Validator(schema) if schema else None
    claims = lab_claims()

    rc, out, err = run('-f', LAB, '-o', 'json')
    t.is_eq(rc, 1, 'exit 1: two lab claims cannot be allocated')
    doc = json.loads(out)
    items = {i['metadata']['name']: i for i in doc['items']}
    t.is_eq(sorted(items), sorted(claims), 'one item per claim')
    first = items['single-gpu-0']['status']['allocation']
    second = items['pod-tpl-1-single-gpu-x7k2p']['status']['allocation']
    r1, r2 = first['devices']['results'], second['devices']['results']
    t.is_eq(len(r1), 1, 'one result')
    want = {'request': 'single-gpu', 'driver': 'hami-core-gpu.project-hami.io',
            'pool': 'hami-workshop', 'device': 'hami-gpu-0',
            'consumedCapacity': {'cores': '30', 'memory': '4Gi'}}
    t.is_eq({k: v for k, v in r1[0].items() if k != 'shareID'}, want,
            'the lab result: hami-gpu-0 with consumedCapacity {cores: "30", memory: "4Gi"}')
    t.ok(UUID.match(r1[0]['shareID']), 'shareID is a version 4 UUID', r1[0]['shareID'])
    t.is_eq({k: v for k, v in r2[0].items() if k != 'shareID'}, want,
            'the second claim: same device, same consumption')
    t.ok(UUID.match(r2[0]['shareID']) and r2[0]['shareID'] != r1[0]['shareID'],
         'the second share has its own shareID')
    t.is_eq(first['nodeSelector'], {'nodeSelectorTerms': [{'matchFields': [
        {'key': 'metadata.name', 'operator': 'In', 'values': ['lab-node']}]}]},
        'nodeSelector pins lab-node')
    for name in ('single-gpu-0', 'pod-tpl-1-single-gpu-x7k2p'):
        obj = dict(claims[name])
        obj['status'] = items[name]['status']
        if validator is None:
            skip_reference(t, 'allocated claims validate against the strict schema', *SCHEMA)
            continue
        errors = [e.message for e in validator.iter_errors(obj)]
        t.is_eq(errors, [], f'{name} with its allocation is a valid resource.k8s.io/v1 ResourceClaim')
    t.ok('status' not in items['too-big'], 'the 80-core claim has no allocation')
    t.like(err, 'hami-core-gpu.project-hami.io/hami-workshop/hami-gpu-0: InsufficientCapacity '
                'cores: need 80, free 40 [CardInsufficientCore]',
           'stderr explains the 80-core claim: need 80, free 40')
    t.like(err, 'claim test-dra/whole-gpu on node lab-node: Unschedulable',
           'the claim without capacity requests does not fit beside the shares')
    t.like(err, 'InsufficientCapacity cores: need 100, free 40',
           'it takes the defaults (100 cores)')

    rc, out, err = run('-f', LAB, '--explain')
    t.is_eq(rc, 1, '--explain: same exit status')
    t.like(out, 'claim test-dra/single-gpu-0 on node lab-node: Allocated', 'explains successes')
    t.like(out, '  request single-gpu: InsufficientDevices: need 1 device, 0 of 1 usable',
           'request-level reason')

    rc, out, err = run('-f', LAB, '-o', 'yaml')
    ydocs = [d for d in yaml.safe_load_all(out) if d]
    t.is_eq(len(ydocs), 4, '-o yaml: one document per claim')
    t.is_eq(ydocs[0]['status']['allocation']['devices']['results'][0]['consumedCapacity'],
            {'cores': '30', 'memory': '4Gi'}, '-o yaml carries the same allocation')

    rc, out, err = run('-f', LAB)
    lines = out.splitlines()
    t.ok(lines and lines[0].split()[:4] == ['CLAIM', 'NODE', 'REQUEST', 'DEVICE'], 'table header')
    t.ok(any(l.startswith('test-dra/single-gpu-0') and 'cores=30,memory=4Gi' in l for l in lines),
         'table row with the consumed capacity')

    with tempfile.TemporaryDirectory() as tmp:
        # Allocated claims from the first run form the in-use state of the next one.
        state = os.path.join(tmp, 'allocated.json')
        with open(state, 'w') as f:
            json.dump({'apiVersion': 'v1', 'kind': 'List', 'items': [
                dict(claims[n], status=items[n]['status'])
                for n in ('single-gpu-0', 'pod-tpl-1-single-gpu-x7k2p')]}, f)
        more = os.path.join(tmp, 'more.yaml')
        with open(more, 'w') as f:
            for name, cores in (('forty', 40), ('one-more', 1)):
                c = json.loads(json.dumps(claims['single-gpu-0']))
                c['metadata']['name'] = name
                c['spec']['devices']['requests'][0]['exactly']['capacity']['requests']['cores'] = cores
                f.write('---\n' + yaml.safe_dump(c))
        rc, out, err = run('-f', os.path.join(LAB, '00-deviceclass.yaml'),
                           '-f', os.path.join(LAB, '01-resourceslice.yaml'),
                           '-f', state, '-f', more, '-o', 'json')
        got = {i['metadata']['name']: i for i in json.loads(out)['items']}
        t.is_eq(rc, 1, 'allocated claims from a file count as in use')
        t.is_eq(got['forty']['status']['allocation']['devices']['results'][0]['consumedCapacity'],
                {'cores': '40', 'memory': '4Gi'}, 'the last 40 cores are allocated')
        t.ok('status' not in got['one-more'], 'then not one core more')
        t.like(err, 'InsufficientCapacity cores: need 1, free 0', 'explained')

        rc, out, err = run('-f', os.path.join(LAB, '00-deviceclass.yaml'),
                           '-f', os.path.join(LAB, '01-resourceslice.yaml'), '-f', more,
                           '--node', 'lab-node', '--policy', 'spread')
        t.is_eq(rc, 0, 'exit 0 when every claim is allocated')

        bad = os.path.join(tmp, 'bad.yaml')
        with open(bad, 'w') as f:
            f.write(open(os.path.join(LAB, '01-resourceslice.yaml')).read()
                    .replace('value: 15Gi', 'value: 15Qi'))
        rc, out, err = run('-f', os.path.join(LAB, '00-deviceclass.yaml'), '-f', bad)
        t.is_eq(rc, 2, 'bad input: exit 2')
        t.like(err, f'{bad}: document 1: ResourceSlice lab-node-hami-core-gpu.project-hami.io-abcde: '
                    'spec.devices[0].capacity.memory.value: "15Qi" is not a quantity',
               'the message names the file, the object and the field')

        badclaim = os.path.join(tmp, 'badclaim.yaml')
        with open(badclaim, 'w') as f:
            f.write('kind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n    requests:\n'
                    '    - name: r\n      exactly: {deviceClassName: x, count: 0}\n')
        rc, out, err = run('-f', LAB, '-f', badclaim)
        t.is_eq(rc, 2, 'an invalid claim: exit 2')
        t.like(err, 'badclaim.yaml: document 1: ResourceClaim c: '
                    'spec.devices.requests[0].exactly.count: 0 is not between 1 and 32',
               'names file, claim and field')

        notyaml = os.path.join(tmp, 'broken.yaml')
        with open(notyaml, 'w') as f:
            f.write('kind: [unclosed\n')
        rc, out, err = run('-f', notyaml)
        t.is_eq(rc, 2, 'unparsable YAML: exit 2')
        t.like(err, 'broken.yaml: line', 'names the file and the line')

    with tempfile.TemporaryDirectory() as tmp:
        # Without --node every node the objects name is tried, in name order.
        two = os.path.join(tmp, 'two-nodes.yaml')
        sl = open(os.path.join(LAB, '01-resourceslice.yaml')).read()
        with open(two, 'w') as f:
            f.write(open(os.path.join(LAB, '00-deviceclass.yaml')).read())
            for node in ('node-b', 'node-a'):
                f.write('---\n' + sl.replace('lab-node', node).replace('hami-workshop', node))
            for i in range(3):
                c = json.loads(json.dumps(claims['single-gpu-0']))
                c['metadata']['name'] = f'c{i}'
                c['spec']['devices']['requests'][0]['exactly']['capacity']['requests']['cores'] = 60
                f.write('---\n' + yaml.safe_dump(c))
        rc, out, err = run('-f', two, '-o', 'json', '--explain')
        got = {i['metadata']['name']: i for i in json.loads(out)['items']}
        t.is_eq(rc, 1, 'two nodes: the third 60-core claim does not fit')
        t.is_eq(got['c0']['status']['allocation']['devices']['results'][0]['pool'], 'node-a',
                'first claim on node-a (name order)')
        t.is_eq(got['c1']['status']['allocation']['devices']['results'][0]['pool'], 'node-b',
                'second claim spills to node-b')
        t.is_eq([e['node'] for e in got['c2']['explanations']], ['node-a', 'node-b'],
                'the unschedulable claim is explained on every node tried')
        dev = got['c2']['explanations'][0]['requests'][0]['devices'][0]
        t.is_eq((dev['reason'], dev['message'], dev.get('hamiReason')),
                ('InsufficientCapacity', 'cores: need 60, free 40', 'CardInsufficientCore'),
                'JSON explanation: reason, message, HAMi name')
        t.is_eq([e['reason'] for e in got['c0']['explanations']], ['Allocated'],
                'an allocated claim is explained on its node only')

    # A richer cluster: every allocation is a valid v1 status.allocation, with the values
    # kube-scheduler would write.
    rich = os.path.join(HERE, 'rich', 'objects.yaml')
    with open(rich) as f:
        rich_claims = {d['metadata']['name']: d for d in yaml.safe_load_all(f)
                       if d and d.get('kind') == 'ResourceClaim'}
    rc, out, err = run('-f', rich, '-o', 'json')
    t.is_eq(rc, 0, 'rich: every claim allocated')
    got = {i['metadata']['name']: i['status']['allocation'] for i in json.loads(out)['items']}
    for name, alloc in sorted(got.items()):
        obj = dict(rich_claims[name])
        obj['status'] = {'allocation': alloc}
        if validator is None:
            skip_reference(t, 'allocated claims validate against the strict schema', *SCHEMA)
            continue
        errors = [f'{list(e.path)}: {e.message}' for e in validator.iter_errors(obj)]
        t.is_eq(errors, [], f'rich: {name} is a valid resource.k8s.io/v1 ResourceClaim')
    pair = got['pair']['devices']
    t.is_eq([(r['request'], r['device']) for r in pair['results']],
            [('gpus/two', 'gpu-0'), ('gpus/two', 'gpu-2')],
            'firstAvailable falls back to "two"; matchAttribute nvlinkDomain backtracks to gpu-2')
    t.is_eq([c['source'] for c in pair['config']], ['FromClass', 'FromClaim'],
            'config: the class\'s, then the claim\'s for the selected subrequest')
    t.is_eq(pair['config'][1]['requests'], ['gpus/two'], 'claim config keeps its requests')
    t.is_eq(pair['config'][0].get('requests'), ['gpus/two'],
            'class config names the subrequest that used the class (kube-scheduler Allocate)')
    t.is_eq([r.get('tolerations') for r in pair['results']], [None, None],
            'results without tolerations carry none')
    net = got['net']
    t.is_eq(net['devices']['results'][0]['consumedCapacity'], {'bandwidth': '25G'},
            '20G rounds up to the smallest valid value, 25G')
    t.is_eq(net['devices']['results'][0]['bindingConditions'], ['example.com/attached'],
            'binding conditions are copied')
    t.is_eq(net['nodeSelector'], {'nodeSelectorTerms': [{'matchExpressions': [
        {'key': 'topology.kubernetes.io/zone', 'operator': 'In', 'values': ['zone-a']}]}]},
        'a nodeSelector slice gives its selector to the allocation')
    t.is_eq([(r['device'], r.get('adminAccess')) for r in got['monitor']['devices']['results']],
            [('gpu-0', True), ('gpu-1', True), ('gpu-2', True)],
            'adminAccess All takes every A100 even when in use')
    t.is_eq(got['t4']['devices']['results'][0]['device'], 'gpu-3', 'a tolerated taint')

    # Pods: each pod's claims together on one node, templates make claims, unused claims wait.
    dc, sl = os.path.join(LAB, '00-deviceclass.yaml'), os.path.join(LAB, '01-resourceslice.yaml')
    rc, out, err = run('-f', dc, '-f', sl, '-f', os.path.join(HERE, 'pods'), '-o', 'json')
    items = {i['metadata']['name']: i for i in json.loads(out)['items']}
    t.is_eq(rc, 1, 'pods: pod-pair does not fit, exit 1')
    t.is_eq(sorted(items), ['double-gpu-0', 'pod-pair-a-v6rkq', 'pod-pair-b-7kvgv',
                            'pod-tpl-1-gpu-xffnb', 'single-gpu-0'],
            'claims of the pods, named <pod>-<entry>-<5 characters> when made from a template')
    gen = items['pod-tpl-1-gpu-xffnb']
    t.is_eq(gen['metadata'].get('annotations'), {'resource.kubernetes.io/pod-claim-name': 'gpu'},
            'a generated claim carries the pod claim name annotation')
    t.is_eq(gen['status']['allocation']['devices']['results'][0]['consumedCapacity'],
            {'cores': '30', 'memory': '4Gi'}, 'the template\'s claim is allocated like the lab')
    if validator is None:
        skip_reference(t, 'allocated claims validate against the strict schema', *SCHEMA)
    else:
        t.is_eq([e.message for e in validator.iter_errors(gen)], [],
                'the generated claim is a valid v1 ResourceClaim')
    t.ok('status' not in items['double-gpu-0'], 'a claim no pod uses stays pending')
    t.ok('status' not in items['pod-pair-a-v6rkq'] and 'status' not in items['pod-pair-b-7kvgv'],
         'a pod is all or nothing: neither claim is allocated when both do not fit together')
    t.like(err, 'claims test-dra/pod-pair-a-v6rkq and 1 more: cannot allocate them together on '
                'node lab-node', 'the pod\'s claims are searched together')
    t.like(err, 'pod test-dra/pod-pair: its claims do not fit together on any node',
           'stderr names the pod')
    # A named claim of a pod that does not fit is reported once, with its pod: never again as a
    # claim "no pod uses" (-o json listed it twice, --explain said "no pod uses it").
    big = os.path.join(P['GS_BUILD_ROOT'], 'schedule-big-pod.yaml')
    with open(big, 'w') as f:
        f.write("""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: too-big, namespace: test-dra}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: hami-core-gpu.project-hami.io
        capacity: {requests: {memory: 64Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: pod-big, namespace: test-dra}
spec:
  containers: [{name: cuda, image: cuda, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimName: too-big}]
""")
    rc, out, err = run('-f', dc, '-f', sl, '-f', big, '-o', 'json')
    names = [i['metadata']['name'] for i in json.loads(out)['items']]
    t.is_eq((rc, names), (1, ['too-big']), 'a pod\'s claim that does not fit: listed once, exit 1')
    rc, out, err = run('-f', dc, '-f', sl, '-f', big, '--explain')
    t.ok('no pod uses it' not in out and 'too-big' in out,
         '--explain does not call the claim of a pending pod unused', out)
    examples = os.path.join(P['GS_SOURCE_ROOT'], 'deploy', 'examples')
    dclass = os.path.join(P['GS_SOURCE_ROOT'], 'deploy', 'plugin', 'deviceclass.yaml')
    if os.path.isdir(examples) and os.path.isfile(dclass):
        rc, out, err = run('-f', dclass, '-f', sl, '-f', examples, '-o', 'json')
        items = {i['metadata']['name']: i for i in json.loads(out)['items']}
        t.is_eq(rc, 0, 'deploy/examples: every claim a pod uses is allocated')
        allocated = sorted(n for n, i in items.items() if 'status' in i)
        t.is_eq(len(allocated), 2, 'deploy/examples: two claims allocated (pod-0, pod-tpl-1)')
        t.ok('status' not in items.get('double-gpu-0', {}),
             'deploy/examples: double-gpu-0 stays pending because no pod uses it')
    else:
        t.skip('deploy/examples', 'deploy/examples or deploy/plugin/deviceclass.yaml missing')

    rc, out, err = run('-f', LAB, '--policy', 'best')
    t.is_eq(rc, 2, 'unknown policy: exit 2')
    t.like(err, '"best" is not one of first-fit, binpack, spread, topology', 'lists the policies')
    rc, out, err = run('-f', '/nonexistent/x.yaml')
    t.is_eq(rc, 2, 'missing file: exit 2')
    t.like(err, '/nonexistent/x.yaml: No such file or directory', 'names the file')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
