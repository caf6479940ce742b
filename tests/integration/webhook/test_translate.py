#!/usr/bin/env python3
"""`gpuslice-webhook translate`: legacy manifests (YAML, several documents, workloads) rewritten
offline into DRA manifests plus their ResourceClaimTemplates, as one List; denials and warnings
on stderr naming file, document and object; exit status 0/1/2."""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

from gstest import Tap, env_paths, reference_json, skip_reference

MANIFESTS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer, namespace: vision}
spec:
  replicas: 2
  selector: {matchLabels: {app: trainer}}
  template:
    metadata:
      labels: {app: trainer}
      annotations: {nvidia.com/use-gputype: "A100"}
    spec:
      containers:
        - name: main
          image: cuda:12
          resources:
            limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 10240, nvidia.com/gpucores: 50, cpu: "2"}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: job
              image: cuda:12
              resources:
                limits: {nvidia.com/gpumem-percentage: 50}
---
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
    - name: main
      image: cuda:12
      resources: {limits: {nvidia.com/gpucores: 150}}
"""


def run(binary, args, stdin=None):
    return subprocess.run([binary] + args, input=stdin, capture_output=True, text=True,
                          timeout=60)


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    schema = reference_json('k8s-json-schema', 'resourceclaimtemplate-resource-v1.json')
    validator = jsonschema.Draft7Validator(schema) if schema else None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'legacy.yaml')
        with open(path, 'w') as f:
            f.write(MANIFESTS)
        r = run(binary, ['translate', '--memory-sizes', '15Gi,80Gi', '--namespace', 'team-x',
                         path])
        t.is_eq(r.returncode, 1, 'one object denied: exit status 1')
        out = json.loads(r.stdout)
        t.is_eq((out['apiVersion'], out['kind']), ('v1', 'List'), 'one kubectl-appliable List')
        kinds = [(i['kind'], i['metadata'].get('name')) for i in out['items']]
        t.is_eq([k for k, _ in kinds], ['ResourceClaimTemplate', 'ResourceClaimTemplate',
                                        'ConfigMap', 'Deployment', 'CronJob', 'Pod'],
                'templates first, then every document in order')
        tpls = out['items'][:2]
        t.is_eq([tp['metadata']['namespace'] for tp in tpls], ['vision', 'team-x'],
                "templates in the object's namespace, else --namespace")
        for tp in tpls:
            if validator is None:
                skip_reference(t, 'templates validate against the strict schema', 'k8s-json-schema')
                continue
            errs = [e.message for e in validator.iter_errors(tp)]
            t.ok(not errs, f"template {tp['metadata']['name']} validates (strict schema)",
                 diag=errs)
        dep = out['items'][3]['spec']['template']['spec']
        t.is_eq(dep['containers'][0]['resources'], {'limits': {'cpu': '2'},
                                                    'claims': [{'name': 'gpu-main'}]},
                'Deployment pod template: legacy resources replaced by the claim')
        t.is_eq(dep['resourceClaims'], [{'name': 'gpu-main', 'resourceClaimTemplateName':
                                         tpls[0]['metadata']['name']}],
                'Deployment pod template points at its template')
        t.is_eq(tpls[0]['spec']['spec']['devices']['requests'][0]['exactly']['capacity'],
                {'requests': {'cores': '50', 'memory': '10Gi'}}, 'the seed mapping')
        t.like(tpls[0]['spec']['spec']['devices']['requests'][0]['exactly']['selectors'][0]
               ['cel']['expression'], 'lowerAscii().contains("a100")',
               'pod template annotation became a selector')
        alts = tpls[1]['spec']['spec']['devices']['requests'][0]['firstAvailable']
        t.is_eq([a['capacity']['requests']['memory'] for a in alts], ['7680Mi', '40Gi'],
                'CronJob percentage: one alternative per --memory-sizes entry')
        t.is_eq(out['items'][2], {'apiVersion': 'v1', 'kind': 'ConfigMap',
                                  'metadata': {'name': 'settings'}, 'data': {'a': 'b'}},
                'other kinds pass through unchanged')
        t.is_eq(out['items'][5]['spec']['containers'][0]['resources'],
                {'limits': {'nvidia.com/gpucores': 150}}, 'denied Pod kept unchanged')
        t.is_eq(r.stderr.splitlines(), [
            f'{path}: document 2 (Deployment vision/trainer): translated (1 claim template(s))',
            f'{path}: document 3 (CronJob team-x/nightly): translated (1 claim template(s))',
            f'{path}: document 4 (Pod team-x/bad): denied: container "main": '
            'nvidia.com/gpucores: 150 is outside 0-100 (percent of a GPU\'s compute)'],
            'stderr names file, document, object and outcome')

        pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p', 'namespace': 'n'},
               'spec': {'containers': [{'name': 'c', 'image': 'i', 'resources': {
                   'limits': {'nvidia.com/gpu': '2'}}}]}}
        r = run(binary, ['translate', '-'], stdin=json.dumps(pod))
        out = json.loads(r.stdout) if r.returncode == 0 else {}
        t.ok(r.returncode == 0 and out['items'][1]['spec']['resourceClaims'][0]['name'] == 'gpu-c',
             'JSON on stdin (-): translated, exit 0', diag=r.stderr)
        pct = dict(pod, spec={'containers': [{'name': 'c', 'image': 'i', 'resources': {
            'limits': {'nvidia.com/gpumem-percentage': '10'}}}]})
        r = run(binary, ['translate'], stdin=json.dumps(pct))
        t.ok(r.returncode == 1 and 'pass --memory-sizes (e.g. 15Gi,80Gi)' in r.stderr,
             'percentage without --memory-sizes: denied, says what to pass', diag=r.stderr)
        r = run(binary, ['translate', os.path.join(tmp, 'absent.yaml')])
        t.ok(r.returncode == 2 and 'absent.yaml' in r.stderr and r.stdout == '',
             'missing file: exit 2 naming it', diag=r.stderr)
        bad = os.path.join(tmp, 'bad.yaml')
        with open(bad, 'w') as f:
            f.write('kind: Pod\nspec: [unclosed\n')
        r = run(binary, ['translate', bad])
        t.ok(r.returncode == 2 and 'bad.yaml' in r.stderr and 'line' in r.stderr,
             'bad YAML: exit 2 with file and line', diag=r.stderr)
        r = run(binary, ['translate', '--memory-sizes', '15Gi,lots', path])
        t.is_eq((r.returncode, r.stderr.strip()),
                (2, 'gpuslice-webhook: --memory-sizes: "lots" is not a positive whole number '
                    'of bytes'), 'bad --memory-sizes entry named')
        r = run(binary, ['frobnicate'])
        t.is_eq((r.returncode, r.stderr.strip()),
                (2, 'gpuslice-webhook: unexpected argument "frobnicate" (see --help)'),
                'unknown command refused')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
