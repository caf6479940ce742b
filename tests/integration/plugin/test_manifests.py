#!/usr/bin/python3
"""deploy/: the kustomize base and the lab's examples are valid Kubernetes objects (strict
schemas where we have them), the RBAC is least-privilege, the DeviceClass selects our devices,
and every flag the DaemonSet passes is one the plugin knows."""
import glob
import os
import re
import subprocess
import sys

import jsonschema
import yaml

from gstest import Tap, env_paths, reference_json

SCHEMAS = {'ResourceClaim': 'resourceclaim-resource-v1.json',
           'ResourceClaimTemplate': 'resourceclaimtemplate-resource-v1.json',
           'DeviceClass': 'deviceclass-resource-v1.json',
           'ServiceAccount': 'serviceaccount-v1.json'}


def main():
    t = Tap()
    p = env_paths()
    root = os.path.join(p['GS_SOURCE_ROOT'], 'deploy')
    objs = {}
    for sub in ('plugin', 'examples'):
        with open(os.path.join(root, sub, 'kustomization.yaml')) as f:
            kz = yaml.safe_load(f)
        for res in kz['resources']:
            path = os.path.join(root, sub, res)
            t.ok(os.path.exists(path), f'{sub}/{res} listed in kustomization exists')
            with open(path) as f:
                for d in yaml.safe_load_all(f):
                    if d:
                        objs.setdefault(d['kind'], []).append(d)
                        if d['kind'] in SCHEMAS:
                            schema = reference_json('k8s-json-schema', SCHEMAS[d['kind']])
                            t.valid(jsonschema.Draft7Validator(schema) if schema else None, d,
                                    f"{sub}/{res}: {d['kind']} {d['metadata']['name']} "
                                    'valid against the strict schema')
    dc = objs['DeviceClass'][0]
    t.is_eq(dc['metadata']['name'], 'hami-core-gpu.project-hami.io', 'DeviceClass name')
    expr = ' '.join(dc['spec']['selectors'][0]['cel']['expression'].split())
    t.is_eq(expr, 'device.driver == "hami-core-gpu.project-hami.io" && '
                  'device.attributes["hami-core-gpu.project-hami.io"].type == "hami-gpu"',
            'DeviceClass selects type hami-gpu of our driver')
    role = objs['ClusterRole'][0]
    rules = {(tuple(r['apiGroups']), tuple(r['resources'])): set(r['verbs']) for r in role['rules']}
    t.is_eq(rules, {(('resource.k8s.io',), ('resourceclaims',)): {'get'},
                    (('resource.k8s.io',), ('resourceslices',)):
                        {'get', 'list', 'watch', 'create', 'update', 'delete'},
                    (('',), ('events',)): {'create', 'patch'}},
            'RBAC: claims read, own slices managed, Events written, nothing else')
    ds = objs['DaemonSet'][0]
    c = ds['spec']['template']['spec']['containers'][0]
    sc = c['securityContext']
    t.ok(sc.get('capabilities', {}).get('drop') == ['ALL'] and not sc.get('privileged'),
         'DaemonSet: no capabilities, not privileged')
    help_text = subprocess.run([p['GS_PLUGIN'], '--help'], capture_output=True, text=True).stdout
    for a in c.get('args', []):
        flag = a.split('=')[0]
        t.ok(re.search(r'^\s+' + re.escape(flag) + r'=', help_text, re.M),
             f'DaemonSet flag {flag} is a plugin option')
    t.ok(any(e['name'] == 'NODE_NAME' and e['valueFrom']['fieldRef']['fieldPath'] == 'spec.nodeName'
             for e in c['env']), 'NODE_NAME from the downward API')
    mounts = {m['mountPath'] for m in c['volumeMounts']}
    for path in ('/var/lib/kubelet/plugins_registry', '/var/lib/kubelet/plugins', '/var/run/cdi',
                 '/usr/local/vgpu', '/var/run/nvidia-container-devices/all'):
        t.ok(path in mounts, f'DaemonSet mounts {path}')
    t.ok(not any(v.get('hostPath', {}).get('path') == '/dev'
                 for v in ds['spec']['template']['spec']['volumes']),
         'DaemonSet does not mount the host /dev (the runtime injects the NVIDIA nodes)')
    claim = [o for o in objs['ResourceClaim'] if o['metadata']['name'] == 'single-gpu-0'][0]
    t.is_eq(claim['spec']['devices']['requests'][0]['exactly']['capacity']['requests'],
            {'cores': '30', 'memory': '4Gi'}, "lab claim asks 30 cores / 4Gi")
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
