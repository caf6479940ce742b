#!/usr/bin/python3
"""deploy/legacy/ rendered by `kubectl kustomize`: objects valid against the strict schemas where
we have them (skip message when the reference data is absent), every flag a binary is given is
one it knows, the scheduler configuration points at the extender with managedResources ignored
by kube-scheduler, the webhook runs in legacy mode for that scheduler, RBAC is least privilege,
and no DRA-mode object is shipped (the two modes never share a cluster)."""
import os
import re
import shutil
import subprocess
import sys

import jsonschema
import yaml

from gstest import Tap, env_paths, reference_json, reference_path

SCHEMAS = {'ConfigMap': 'configmap-v1.json', 'ServiceAccount': 'serviceaccount-v1.json',
           'ClusterRole': 'clusterrole-rbac-v1.json',
           'ClusterRoleBinding': 'clusterrolebinding-rbac-v1.json', 'Service': 'service-v1.json'}


def flags_known(t, binary, args, what):
    help_text = subprocess.run([binary, '--help'], capture_output=True, text=True).stdout
    for a in args:
        flag = a.split('=')[0]
        t.ok(re.search(r'^\s+' + re.escape(flag) + r'[=\s]', help_text, re.M),
             f'{what}: {flag} is an option of {os.path.basename(binary)}')


def container(objs, kind, name, cname):
    o = [x for x in objs if x['kind'] == kind and x['metadata']['name'] == name][0]
    return [c for c in o['spec']['template']['spec']['containers'] if c['name'] == cname][0]


def main():
    t = Tap()
    p = env_paths()
    kubectl = shutil.which('kubectl')
    if not kubectl:
        t.skip('deploy/legacy renders', 'kubectl not installed (kubectl kustomize)')
        return t.done()
    r = subprocess.run([kubectl, 'kustomize', os.path.join(p['GS_SOURCE_ROOT'], 'deploy',
                                                           'legacy')],
                       capture_output=True, text=True, timeout=120)
    if not t.is_eq(r.returncode, 0, 'kubectl kustomize deploy/legacy'):
        t.diag(r.stderr)
        return t.done()
    objs = [o for o in yaml.safe_load_all(r.stdout) if o]
    said = set()
    for o in objs:
        if o['kind'] in SCHEMAS:
            schema = reference_json('k8s-json-schema', SCHEMAS[o['kind']])
            if schema is None and reference_path('k8s-json-schema') is not None:
                if o['kind'] not in said:  # the folder is there, this kind's schema is not
                    said.add(o['kind'])
                    t.skip(f"{o['kind']} objects valid against the strict schema",
                           f"k8s-json-schema/{SCHEMAS[o['kind']]} is not in the reference data")
                continue
            t.valid(jsonschema.Draft7Validator(schema) if schema else None, o,
                    f"{o['kind']} {o['metadata']['name']} valid against the strict schema")
    kinds = {o['kind'] for o in objs}
    t.ok(not kinds & {'DeviceClass', 'ResourceSlice', 'ResourceClaimTemplate'},
         'no DRA-mode object in legacy mode')
    t.ok(all(o['metadata'].get('namespace') == 'gpuslice-system' for o in objs
             if o['kind'] in ('Deployment', 'DaemonSet', 'ServiceAccount', 'ConfigMap')),
         'namespaced objects in gpuslice-system')

    dp = container(objs, 'DaemonSet', 'gpuslice-device-plugin', 'device-plugin')
    flags_known(t, os.environ['GS_DEVICE_PLUGIN'], dp['args'], 'device plugin DaemonSet')
    t.ok(any(e['name'] == 'NODE_NAME' and e['valueFrom']['fieldRef']['fieldPath'] ==
             'spec.nodeName' for e in dp['env']), 'device plugin: NODE_NAME from the downward API')
    mounts = {m['mountPath'] for m in dp['volumeMounts']}
    t.ok({'/var/lib/kubelet/device-plugins', '/usr/local/vgpu'} <= mounts,
         'device plugin mounts the kubelet device plugin folder and the libvgpu folder')
    t.ok(not dp['securityContext'].get('privileged') and
         dp['securityContext']['capabilities']['drop'] == ['ALL'],
         'device plugin: not privileged, no capabilities')

    ext = container(objs, 'Deployment', 'hami-scheduler', 'extender')
    flags_known(t, os.environ['GS_EXTENDER'], ext['args'], 'extender')
    wh = container(objs, 'Deployment', 'gpuslice-webhook', 'webhook')
    flags_known(t, p['GS_WEBHOOK'], wh['args'], 'webhook')
    t.ok('--mode=legacy' in wh['args'] and '--mode=dra' not in wh['args'],
         'the webhook runs in legacy mode')
    sched = [a.split('=', 1)[1] for a in wh['args'] if a.startswith('--scheduler-name=')]

    cm = [o for o in objs if o['kind'] == 'ConfigMap' and
          o['metadata']['name'] == 'hami-scheduler-config'][0]
    cfg = yaml.safe_load(cm['data']['config.yaml'])
    t.is_eq(cfg['kind'], 'KubeSchedulerConfiguration', 'scheduler configuration kind')
    t.is_eq([pr['schedulerName'] for pr in cfg['profiles']], sched,
            "the scheduler's profile is the webhook's --scheduler-name")
    e = cfg['extenders'][0]
    port = [a.split(':')[-1] for a in ext['args'] if a.startswith('--listen=')]
    t.is_eq(e['urlPrefix'], f'http://127.0.0.1:{port[0] if port else "?"}',
            'the extender entry calls the extender container (same pod)')
    t.is_eq((e['filterVerb'], e['prioritizeVerb'], e['bindVerb'], e['nodeCacheCapable']),
            ('filter', 'prioritize', 'bind', True), 'filter, prioritize, bind; nodeCacheCapable')
    t.is_eq(sorted((m['name'], m['ignoredByScheduler']) for m in e['managedResources']),
            sorted((n, True) for n in ('nvidia.com/gpu', 'nvidia.com/gpumem',
                                       'nvidia.com/gpucores', 'nvidia.com/gpumem-percentage')),
            'managedResources: the four HAMi resources, ignoredByScheduler')

    roles = {o['metadata']['name']: o for o in objs if o['kind'] == 'ClusterRole'}
    rules = {(tuple(r['apiGroups']), tuple(r['resources'])): set(r['verbs'])
             for r in roles['gpuslice-device-plugin']['rules']}
    t.is_eq(rules, {(('',), ('nodes',)): {'get', 'patch'}, (('',), ('pods',)): {'list', 'patch'},
                    (('',), ('events',)): {'create', 'patch'}},
            'device plugin RBAC: its node, the pods being bound, Events, nothing else')
    rules = {(tuple(r['apiGroups']), tuple(r['resources'])): set(r['verbs'])
             for r in roles['gpuslice-extender']['rules']}
    t.is_eq(rules, {(('',), ('nodes',)): {'get', 'list', 'patch'},
                    (('',), ('pods',)): {'get', 'list', 'patch'},
                    (('',), ('pods/binding',)): {'create'},
                    (('',), ('events',)): {'create', 'patch'}},
            'extender RBAC: read nodes and pods, annotate, bind, Events')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
