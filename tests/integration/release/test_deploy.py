#!/usr/bin/python3
"""deploy/: every kustomization renders with `kubectl kustomize`, and what an operator relies on
holds on the rendered objects (docs/deploy.md):

  - one namespace owner: only deploy/namespace renders Namespace gpuslice-system;
  - deleting one unit removes nothing of another: the rendered object sets of the webhook, the
    plugin overlays, monitoring (and any later unit) are pairwise disjoint and hold no Namespace;
  - cluster-scoped objects (DeviceClass, PriorityClass, ClusterRole, webhook configurations) carry
    no namespace, namespaced ones carry gpuslice-system;
  - the namespace's Pod Security label is exactly the level its pods need (derived from the pods);
  - the kubelet plugin pod: startup probe, seccomp RuntimeDefault, flags the binary accepts; the
    gpu-operator overlay sets --driver-root=/run/nvidia/driver and mounts it; the webhook has a
    PriorityClass of its own unit;
  - images and paths are the container image's (deploy/container/Dockerfile);
  - every rendered object validates against the strict Kubernetes schema where one exists
    (reference data; skipped, said once, when absent).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import jsonschema
import yaml

from gstest import Tap, env_paths, reference_path, skip_reference

NS = 'gpuslice-system'
IMAGE = 'ghcr.io/gpuslice/gpuslice'
CLUSTER_SCOPED = {'Namespace', 'ClusterRole', 'ClusterRoleBinding', 'DeviceClass',
                  'PriorityClass', 'MutatingWebhookConfiguration',
                  'ValidatingWebhookConfiguration', 'CustomResourceDefinition',
                  'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'}
# Not units of the product: examples are the lab's workload, components are patches.
NOT_UNITS = {'examples', 'components', 'overlays', 'container'}
# Whole installs, one per mode: the namespace plus units (issue 26, "one-command install"). They
# may hold the Namespace; deleting one removes the mode; they are compared with nothing.
INSTALLS = {'dra', 'legacy'}
# Units below the top level.
NESTED_UNITS = {'legacy/unit'}
# Built binary of each command the manifests run (environment variable of the test env).
COMMAND_BINARY = {'/usr/bin/gpuslice-kubelet-plugin': 'GS_PLUGIN',
                  '/usr/bin/gpuslice-webhook': 'GS_WEBHOOK',
                  '/usr/bin/gpuslice-monitor': 'GS_MONITOR',
                  '/usr/bin/gpuslice-extender': 'GS_EXTENDER',
                  '/usr/bin/gpuslice-device-plugin': 'GS_DEVICE_PLUGIN'}
PSS_LEVELS = ['restricted', 'baseline', 'privileged']
BASELINE_CAPS = {'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD',
                 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'}
RESTRICTED_VOLUMES = {'configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral',
                      'persistentVolumeClaim', 'projected', 'secret'}


def render(kubectl, path):
    r = subprocess.run([kubectl, 'kustomize', path], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return [d for d in yaml.safe_load_all(r.stdout) if d], ''


def ident(o):
    group = o['apiVersion'].split('/')[0] if '/' in o['apiVersion'] else ''
    return (group, o['kind'], o['metadata'].get('namespace', ''), o['metadata']['name'])


def kustomizations(deploy):
    out = []
    for d, _, files in os.walk(deploy):
        if 'kustomization.yaml' in files:
            out.append(os.path.relpath(d, deploy))
    return sorted(out)


def kind_of(deploy, rel):
    with open(os.path.join(deploy, rel, 'kustomization.yaml')) as f:
        return yaml.safe_load(f).get('kind', 'Kustomization')


def bases_of(deploy, rel, units, seen=None):
    """The base units a kustomization includes, following `resources` and `components`."""
    seen = seen if seen is not None else set()
    if rel in seen:
        return set()
    seen.add(rel)
    out = {rel} if rel in units else set()
    with open(os.path.join(deploy, rel, 'kustomization.yaml')) as f:
        kz = yaml.safe_load(f)
    for ref in (kz.get('resources') or []) + (kz.get('components') or []):
        sub = os.path.normpath(os.path.join(rel, ref))
        if os.path.isfile(os.path.join(deploy, sub, 'kustomization.yaml')):
            out |= bases_of(deploy, sub, units, seen)
    return out


def pod_spec(o):
    if o['kind'] == 'Pod':
        return o['spec']
    if o['kind'] in ('DaemonSet', 'Deployment', 'StatefulSet', 'ReplicaSet', 'Job'):
        return o['spec']['template']['spec']
    if o['kind'] == 'CronJob':
        return o['spec']['jobTemplate']['spec']['template']['spec']
    return None


def pss_level(spec):
    """The least permissive Pod Security Standard this pod spec passes, with the reasons."""
    why = {'baseline': [], 'restricted': []}  # violations of each level
    psc = spec.get('securityContext') or {}
    ctrs = spec.get('containers', []) + spec.get('initContainers', [])
    for k in ('hostNetwork', 'hostPID', 'hostIPC'):
        if spec.get(k):
            why['baseline'].append(k)
    for v in spec.get('volumes', []):
        kinds = set(v) - {'name'}
        if 'hostPath' in kinds:
            why['baseline'].append(f"hostPath volume {v['name']}")
        elif not kinds <= RESTRICTED_VOLUMES:
            why['restricted'].append(f"volume {v['name']} of type {sorted(kinds)}")
    pod_seccomp = (psc.get('seccompProfile') or {}).get('type')
    pod_nonroot = psc.get('runAsNonRoot') is True and psc.get('runAsUser', 1) != 0
    for c in ctrs:
        sc = c.get('securityContext') or {}
        caps = sc.get('capabilities') or {}
        if sc.get('privileged'):
            why['baseline'].append(f"{c['name']}: privileged")
        if set(caps.get('add') or []) - BASELINE_CAPS:
            why['baseline'].append(f"{c['name']}: adds {caps['add']}")
        if any(p.get('hostPort') for p in c.get('ports', [])):
            why['baseline'].append(f"{c['name']}: hostPort")
        seccomp = (sc.get('seccompProfile') or {}).get('type') or pod_seccomp
        if seccomp == 'Unconfined':
            why['baseline'].append(f"{c['name']}: seccomp Unconfined")
        if seccomp not in ('RuntimeDefault', 'Localhost'):
            why['restricted'].append(f"{c['name']}: no seccomp RuntimeDefault")
        if sc.get('allowPrivilegeEscalation') is not False:
            why['restricted'].append(f"{c['name']}: allowPrivilegeEscalation not false")
        nonroot = sc.get('runAsNonRoot', psc.get('runAsNonRoot')) is True
        if not (nonroot or pod_nonroot) or sc.get('runAsUser', psc.get('runAsUser')) == 0:
            why['restricted'].append(f"{c['name']}: may run as root")
        if 'ALL' not in (caps.get('drop') or []) or set(caps.get('add') or []) - {
                'NET_BIND_SERVICE'}:
            why['restricted'].append(f"{c['name']}: capabilities not drop ALL")
    if why['baseline']:
        return 'privileged', why['baseline']
    if why['restricted']:
        return 'baseline', why['restricted']
    return 'restricted', []


def schema_for(o):
    """Path of the strict schema of this object's kind, or None."""
    api = o['apiVersion']
    group, version = (api.split('/') if '/' in api else ('', api))
    name = o['kind'].lower() + ('-' + group.split('.')[0] if group else '') + '-' + version
    for sub in ('', 'older-fork'):
        p = reference_path('k8s-json-schema', sub, name + '.json') if sub else \
            reference_path('k8s-json-schema', name + '.json')
        if p:
            return p
    return None


def check_schemas(t, rendered):
    if reference_path('k8s-json-schema') is None:
        skip_reference(t, 'rendered objects validate against the strict schemas',
                       'k8s-json-schema')
        return
    without = set()
    validators = {}
    for rel, objs in sorted(rendered.items()):
        for o in objs:
            p = schema_for(o)
            if p is None:
                without.add(f"{o['apiVersion']} {o['kind']}")
                continue
            if p not in validators:
                with open(p) as f:
                    validators[p] = jsonschema.Draft7Validator(json.load(f))
            t.valid(validators[p], o, f"{rel}: {o['kind']} {o['metadata']['name']} valid "
                                      f"({os.path.relpath(p, reference_path())})")
    t.diag('no strict schema in the reference data for: ' + ', '.join(sorted(without)))


def check_plugin(t, rel, objs, plugin_bin):
    ds = [o for o in objs if o['kind'] == 'DaemonSet'
          and o['metadata']['name'] == 'gpuslice-kubelet-plugin']
    if not t.is_eq(len(ds), 1, f'{rel}: one kubelet plugin DaemonSet'):
        return
    spec = pod_spec(ds[0])
    c = spec['containers'][0]
    t.ok(c.get('startupProbe', {}).get('httpGet', {}).get('path') == '/healthz',
         f'{rel}: plugin has a startup probe on /healthz')
    seccomp = ((spec.get('securityContext') or {}).get('seccompProfile') or {}).get('type')
    t.is_eq(seccomp, 'RuntimeDefault', f'{rel}: plugin pod seccomp RuntimeDefault')
    if plugin_bin and os.path.exists(plugin_bin):
        r = subprocess.run([plugin_bin, '--node-name', 'n', '--print-config'] + c['args'],
                           capture_output=True, text=True, timeout=30)
        t.is_eq((r.returncode, r.stderr), (0, ''), f'{rel}: the plugin accepts every flag')
    if 'gpu-operator' in rel:
        t.ok('--driver-root=/run/nvidia/driver' in c['args'],
             f'{rel}: --driver-root=/run/nvidia/driver', diag=c['args'])
        mounts = {m['mountPath']: m for m in c['volumeMounts']}
        vols = {v['name']: v for v in spec['volumes']}
        m = mounts.get('/run/nvidia/driver')
        t.ok(m and m.get('readOnly') and
             vols[m['name']].get('hostPath', {}).get('path') == '/run/nvidia/driver',
             f'{rel}: the driver root is mounted read-only from the host')
    else:
        t.ok(not any(a.startswith('--driver-root') for a in c['args']),
             f'{rel}: driver from the host library path (no --driver-root)')


NODE_TERMS = [('feature.node.kubernetes.io/pci-10de.present', 'true'),
              ('feature.node.kubernetes.io/cpu-model.vendor_id', 'NVIDIA'),
              ('nvidia.com/gpu.present', 'true')]


def node_terms(spec):
    """The (key, value) of each required node-affinity term (one In expression each), plus the
    nodeSelector's pairs."""
    terms = (spec.get('affinity', {}).get('nodeAffinity', {})
             .get('requiredDuringSchedulingIgnoredDuringExecution', {}).get('nodeSelectorTerms', []))
    out = []
    for term in terms:
        for e in term.get('matchExpressions', []):
            out.append((e['key'], tuple(e.get('values', []))))
    out += [(k, (v,)) for k, v in spec.get('nodeSelector', {}).items()]
    return out


def render_overlay(kubectl, deploy, work, name, body):
    """Render an overlay written in work/name whose paths are relative to deploy/."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    rel = os.path.relpath(deploy, d)
    with open(os.path.join(d, 'kustomization.yaml'), 'w') as f:
        f.write(body.replace('@DEPLOY@', rel))
    return render(kubectl, d)


def check_node_selection(t, kubectl, deploy, work, rendered):
    """Which nodes the node daemons land on (issue 26 #1): by default any NVIDIA node (NFD's PCI
    or CPU vendor label, or gpu.present), narrowed or replaced by one component."""
    daemons = [(rel, o) for rel in ('overlays/standard', 'overlays/gpu-operator', 'monitoring')
               for o in rendered.get(rel, []) if o['kind'] == 'DaemonSet']
    t.ok(len(daemons) >= 3, 'the plugin overlays and the monitor render DaemonSets',
         diag=[(r, o['metadata']['name']) for r, o in daemons])
    for rel, o in daemons:
        got = node_terms(pod_spec(o))
        want = [(k, (v,)) for k, v in NODE_TERMS]
        t.is_eq(got, want, f"{rel}: {o['metadata']['name']} selects NVIDIA nodes by NFD's "
                'vendor labels or nvidia.com/gpu.present (any of them)')
    cases = [('node-selection-gpu-present', [('nvidia.com/gpu.present', ('true',))], None),
             ('node-selection-label', [('gpuslice.io/gpu-node', ('true',))], None),
             ('tolerate-all', None, [{'operator': 'Exists'}])]
    for comp, terms, tolerations in cases:
        objs, err = render_overlay(kubectl, deploy, work, comp, f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [@DEPLOY@/overlays/standard, @DEPLOY@/monitoring]
components: [@DEPLOY@/components/{comp}]
""")
        if not t.ok(objs is not None, f'an overlay with components/{comp} renders', diag=err):
            continue
        for o in (o for o in objs if o['kind'] == 'DaemonSet'):
            spec = pod_spec(o)
            if terms is not None:
                t.is_eq(node_terms(spec), terms,
                        f"components/{comp}: {o['metadata']['name']} node selection")
            if tolerations is not None:
                t.is_eq(spec.get('tolerations'), tolerations,
                        f"components/{comp}: {o['metadata']['name']} tolerates every taint")


def check_scraped(t, rendered):
    """Every daemon of each whole install is scraped (issue 36: the extender and the device plugin
    were not): a PodMonitor selects its pods through a named port of a container, or a
    ServiceMonitor selects a Service that selects them."""
    for rel in sorted(INSTALLS & set(rendered)):
        objs = rendered[rel]
        pms = [o for o in objs if o['kind'] == 'PodMonitor']
        sms = [o for o in objs if o['kind'] == 'ServiceMonitor']
        svcs = [o for o in objs if o['kind'] == 'Service']
        for o in objs:
            spec = pod_spec(o)
            if spec is None or o['kind'] not in ('Deployment', 'DaemonSet'):
                continue
            labels = o['spec']['template']['metadata'].get('labels', {})
            ports = {pt.get('name') for c in spec.get('containers', [])
                     for pt in c.get('ports', [])}

            def selects(sel):
                m = sel.get('matchLabels', {})
                return bool(m) and all(labels.get(k) == v for k, v in m.items())
            by_pod = [m for m in pms if selects(m['spec'].get('selector', {})) and
                      all(e.get('port') in ports for e in m['spec'].get('podMetricsEndpoints', []))]
            def subset(small, big):
                return bool(small) and all(big.get(k) == v for k, v in small.items())
            by_svc = [m for m in sms for sv in svcs
                      if subset(sv['spec'].get('selector', {}), labels) and
                      subset(m['spec'].get('selector', {}).get('matchLabels', {}),
                             sv['metadata'].get('labels', {}))]
            t.ok(by_pod or by_svc, f"{rel}: {o['kind']} {o['metadata']['name']} is scraped "
                 '(a PodMonitor on a named port, or a ServiceMonitor through its Service)',
                 diag=sorted(ports - {None}))


def check_lab_names(t, kubectl, deploy, work):
    """components/lab-names gives the lab's install the lab's names (issue 36): namespace
    hami-dra-driver, DaemonSet hami-dra-driver-kubelet-plugin, no object or body naming
    gpuslice-system, the DeviceClass still cluster-scoped."""
    objs, err = render_overlay(kubectl, deploy, work, 'lab-names', """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [@DEPLOY@/namespace, @DEPLOY@/overlays/gpu-operator, @DEPLOY@/monitoring]
components: [@DEPLOY@/components/lab-names]
""")
    if not t.ok(objs is not None, 'the lab install with components/lab-names renders', diag=err):
        return
    ds = [(o['metadata']['name'], o['metadata'].get('namespace')) for o in objs
          if o['kind'] == 'DaemonSet']
    t.ok(('hami-dra-driver-kubelet-plugin', 'hami-dra-driver') in ds,
         'lab-names: DaemonSet hami-dra-driver/hami-dra-driver-kubelet-plugin', diag=ds)
    t.ok(any(o['kind'] == 'Namespace' and o['metadata']['name'] == 'hami-dra-driver'
             for o in objs), 'lab-names: Namespace hami-dra-driver')
    left = [ident(o) for o in objs if 'gpuslice-system' in json.dumps(o)]
    t.ok(not left, 'lab-names: nothing names gpuslice-system any more', diag=left)
    dc = [o for o in objs if o['kind'] == 'DeviceClass']
    t.ok(dc and all('namespace' not in o['metadata'] for o in dc),
         'lab-names: the DeviceClass stays cluster-scoped')


def check_legacy_scheduler(t, kubectl, deploy, work, rendered):
    """hami-scheduler can lead (issue 26 #2): a Role grants the lease its configuration names,
    and the kube-scheduler image follows an `images:` override to the cluster's version."""
    objs = rendered.get('legacy', [])
    cms = [o for o in objs if o['kind'] == 'ConfigMap' and o['metadata']['name'] ==
           'hami-scheduler-config']
    if not t.ok(cms, 'deploy/legacy renders the scheduler configuration'):
        return
    cfg = yaml.safe_load(cms[0]['data']['config.yaml'])
    le = cfg.get('leaderElection', {})
    lease_ns, lease = le.get('resourceNamespace'), le.get('resourceName')
    sa = [pod_spec(o)['serviceAccountName'] for o in objs
          if o['kind'] == 'Deployment' and o['metadata']['name'] == 'hami-scheduler']
    roles = {o['metadata']['name']: o for o in objs if o['kind'] == 'Role'
             and o['metadata'].get('namespace') == lease_ns}
    granted = set()
    for b in (o for o in objs if o['kind'] == 'RoleBinding'
              and o['metadata'].get('namespace') == lease_ns):
        if not any(s.get('kind') == 'ServiceAccount' and s.get('name') in sa
                   for s in b.get('subjects', [])):
            continue
        for rule in roles.get(b['roleRef']['name'], {}).get('rules', []):
            if 'coordination.k8s.io' in rule.get('apiGroups', []) and \
                    'leases' in rule.get('resources', []):
                names = rule.get('resourceNames') or ['*']
                for v in rule.get('verbs', []):
                    for n in names:
                        granted.add((v, n))
    need = {('create', '*'), ('get', lease), ('update', lease)}
    t.ok(need <= granted, f'hami-scheduler may create, get and update lease {lease_ns}/{lease}',
         diag=sorted(granted))
    objs2, err = render_overlay(kubectl, deploy, work, 'legacy-scheduler-version', """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [@DEPLOY@/legacy]
images: [{name: registry.k8s.io/kube-scheduler, newTag: v1.30.4}]
""")
    if t.ok(objs2 is not None, 'deploy/legacy with a kube-scheduler version override renders',
            diag=err):
        imgs = [c['image'] for o in objs2 if o['kind'] == 'Deployment'
                for c in pod_spec(o)['containers'] if 'kube-scheduler' in c['image']]
        t.is_eq(imgs, ['registry.k8s.io/kube-scheduler:v1.30.4'],
                "hami-scheduler runs the cluster's kube-scheduler version when overridden")


def check_flags(t, what, objs, p):
    """Every gpuslice container's args are accepted by the built binary (--print-config)."""
    for o in objs:
        spec = pod_spec(o)
        if spec is None:
            continue
        for c in spec['containers']:
            cmd = (c.get('command') or [''])[0]
            exe = os.environ.get(COMMAND_BINARY.get(cmd, ''), '')
            if not exe or not os.path.exists(exe):
                continue
            env = dict(os.environ, NODE_NAME='node-1')
            r = subprocess.run([exe, '--print-config'] + (c.get('args') or []), env=env,
                               capture_output=True, text=True, timeout=30)
            t.ok(r.returncode == 0, f"{what}: {cmd} accepts its manifest's flags",
                 diag=(r.stderr or r.stdout)[-400:])


def check_installs(t, kubectl, deploy, work, rendered, p):
    """deploy/dra and deploy/legacy, alone and with each knob (components), render, validate and
    do what the knob says (issue 26 one-command install)."""
    ident_of = lambda objs: {ident(o) for o in objs}
    knobs = {'dra': ['image', 'gpu-operator', 'no-webhook', 'no-monitoring', 'network-policies',
                     'node-selection-gpu-present', 'tolerate-all', 'extended-resource',
                     'no-cert-manager', 'no-prometheus-operator'],
             'legacy': ['image', 'no-monitoring', 'network-policies', 'tolerate-all',
                        'no-cert-manager', 'no-prometheus-operator']}
    # Knobs that cannot go together: each leaves out what the other already left out.
    apart = {'gpu-operator', 'no-prometheus-operator', 'no-cert-manager'}
    for mode, comps in knobs.items():
        base = rendered.get(mode)
        if not t.ok(base is not None, f'deploy/{mode} (the whole {mode} install) renders'):
            continue
        check_flags(t, f'deploy/{mode}', base, p)
        # Each PodMonitor scrapes a pod of the install by a port that pod names.
        pods = {o['spec']['template']['metadata'].get('labels', {}).get('app.kubernetes.io/name'):
                o for o in base if pod_spec(o)}
        for pm in (o for o in base if o['kind'] == 'PodMonitor'):
            want = pm['spec']['selector']['matchLabels'].get('app.kubernetes.io/name')
            if want not in pods:
                continue  # the other mode's daemon
            ports = {pt.get('name') for c in pod_spec(pods[want])['containers']
                     for pt in c.get('ports', [])}
            eps = [e.get('port') for e in pm['spec']['podMetricsEndpoints']]
            t.ok(eps and set(eps) <= ports,
                 f"deploy/{mode}: PodMonitor {pm['metadata']['name']} scrapes ports {want} names",
                 diag=f'{eps} not in {sorted(ports - {None})}')
        combos = [[c] for c in comps] + [[c for c in comps if c not in apart]] + \
            [['no-cert-manager', 'no-prometheus-operator'], ['no-cert-manager', 'certgen'],
             ['no-cert-manager', 'no-prometheus-operator', 'certgen']]
        for combo in combos:
            name = f'{mode}+' + '+'.join(combo)
            body = ('apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n'
                    f'resources: [@DEPLOY@/{mode}]\ncomponents: [' +
                    ', '.join(f'@DEPLOY@/components/{c}' for c in combo) + ']\n')
            objs, err = render_overlay(kubectl, deploy, work, name.replace('+', '_'), body)
            if not t.ok(objs is not None, f'deploy/{mode} with {", ".join(combo)} renders',
                        diag=err):
                continue
            ids = ident_of(objs)
            if 'no-webhook' in combo:
                t.is_eq(sorted(ids & ident_of(rendered.get('webhook', []))), [],
                        f'{name}: no object of deploy/webhook is left')
            if 'extended-resource' in combo:
                dcs = [o for o in objs if o['kind'] == 'DeviceClass']
                t.is_eq([o['spec'].get('extendedResourceName') for o in dcs], ['nvidia.com/gpu'],
                        f'{name}: the DeviceClass serves nvidia.com/gpu as an extended resource')
            if 'no-monitoring' in combo:
                t.is_eq(sorted(ids & ident_of(rendered.get('monitoring', []))), [],
                        f'{name}: no object of deploy/monitoring is left')
            if 'no-cert-manager' in combo:
                left = [ident(o) for o in objs if o['apiVersion'].startswith('cert-manager.io/')
                        or 'cert-manager.io/inject-ca-from' in
                        o['metadata'].get('annotations', {})]
                t.is_eq(left, [], f'{name}: no cert-manager object or annotation is left')
            if 'certgen' in combo:
                check_certgen(t, name, objs)
            if 'no-prometheus-operator' in combo:
                left = [ident(o) for o in objs
                        if o['apiVersion'].startswith('monitoring.coreos.com/')]
                t.is_eq(left, [], f'{name}: no Prometheus Operator object is left')
                t.ok(any(o['kind'] == 'DaemonSet' and o['metadata']['name'] == 'gpuslice-monitor'
                         for o in objs), f'{name}: the monitor itself stays')
            if 'image' in combo:
                imgs = {c['image'] for o in objs if pod_spec(o)
                        for c in pod_spec(o)['containers'] if 'gpuslice' in c['image']}
                t.is_eq(sorted(imgs), ['registry.example.com/gpuslice/gpuslice:0.1.0'],
                        f'{name}: one registry and tag for every gpuslice container')
                secrets = [pod_spec(o).get('imagePullSecrets') for o in objs if pod_spec(o)
                           and any('gpuslice' in c['image'] for c in pod_spec(o)['containers'])]
                t.ok(secrets and all(s == [{'name': 'gpuslice-pull'}] for s in secrets),
                     f'{name}: every gpuslice pod has the pull secret', diag=secrets)
            if 'network-policies' in combo:
                pods = {pod_spec(o) and o['spec']['template']['metadata']['labels']
                        .get('app.kubernetes.io/name') for o in objs if pod_spec(o)}
                nps = [o for o in objs if o['kind'] == 'NetworkPolicy']
                sel = {o['spec']['podSelector'].get('matchLabels', {})
                       .get('app.kubernetes.io/name') for o in nps} - {None}
                served = pods - {None}  # the device plugin too: /healthz and /metrics on TCP
                t.ok(nps and served <= sel,
                     f'{name}: a NetworkPolicy for each gpuslice pod that serves a port',
                     diag=sorted(served - sel))
                allowed = {}
                for np_ in nps:
                    app = np_['spec']['podSelector'].get('matchLabels', {}).get(
                        'app.kubernetes.io/name')
                    for rule in np_['spec'].get('ingress', []):
                        allowed.setdefault(app, set()).update(
                            pt.get('port') for pt in rule.get('ports', []))
                blocked = sorted(
                    (o['metadata']['name'], pt['containerPort']) for o in objs if pod_spec(o)
                    for c in pod_spec(o)['containers'] for pt in c.get('ports', [])
                    if pt['containerPort'] not in allowed.get(
                        o['spec']['template']['metadata']['labels'].get('app.kubernetes.io/name'),
                        set()))
                t.ok(not blocked, f'{name}: every container port is open in its NetworkPolicy',
                     diag=blocked)
            if len(combo) > 1:
                check_flags(t, name, objs, p)
                check_schemas(t, {name: objs})


def check_certgen(t, name, objs):
    """components/certgen (issue 36): the Job and CronJob run `gpuslice-webhook certgen` on the
    Secret the webhook mounts and the configuration it serves, restricted, with the least RBAC."""
    by = {(o['kind'], o['metadata']['name']): o for o in objs}
    cg = 'gpuslice-webhook-certgen'
    kinds = ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding', 'Job',
             'CronJob']
    t.is_eq([k for k in kinds if (k, cg) not in by], [], f'{name}: certgen objects all present')
    role, crole = by.get(('Role', cg), {}), by.get(('ClusterRole', cg), {})
    rules = sorted((tuple(r['apiGroups']), tuple(r['resources']),
                    tuple(r.get('resourceNames', [])), tuple(sorted(r['verbs'])))
                   for r in role.get('rules', []))
    t.is_eq(rules, [(('',), ('secrets',), (), ('create',)),
                    (('',), ('secrets',), ('gpuslice-webhook-tls',), ('get', 'update'))],
            f'{name}: certgen Role: get/update on its one Secret, create (not limitable by name)')
    t.is_eq([(r['resources'], r.get('resourceNames'), sorted(r['verbs']))
             for r in crole.get('rules', [])],
            [(['mutatingwebhookconfigurations'], ['gpuslice-webhook'], ['get', 'patch'])],
            f'{name}: certgen ClusterRole: get/patch of gpuslice-webhook only')
    for kind, binding in (('Role', 'RoleBinding'), ('ClusterRole', 'ClusterRoleBinding')):
        b = by.get((binding, cg), {})
        t.ok(b.get('roleRef', {}).get('name') == cg and
             b.get('subjects', [{}])[0].get('name') == cg, f'{name}: {binding} binds {kind} to '
             'the certgen ServiceAccount')
    dep = by.get(('Deployment', 'gpuslice-webhook'))
    mwcs = [o['metadata']['name'] for o in objs if o['kind'] == 'MutatingWebhookConfiguration']
    vol = [v for v in pod_spec(dep)['volumes'] if 'secret' in v] if dep else []
    for kind in ('Job', 'CronJob'):
        o = by.get((kind, cg))
        spec = pod_spec(o) if o else None
        if not t.ok(spec, f'{name}: certgen {kind} has a pod'):
            continue
        c = spec['containers'][0]
        args = dict(a[2:].split('=', 1) for a in c.get('args', []) if '=' in a)
        t.is_eq(c['command'], ['/usr/bin/gpuslice-webhook', 'certgen'],
                f'{name}: certgen {kind} runs gpuslice-webhook certgen')
        t.ok(vol and args.get('certgen-secret') == vol[0]['secret']['secretName'],
             f'{name}: certgen {kind} writes the Secret the webhook mounts', diag=args)
        t.ok(args.get('certgen-webhook-configuration') in mwcs,
             f'{name}: certgen {kind} patches the MutatingWebhookConfiguration', diag=mwcs)
        t.is_eq(pss_level(spec), ('restricted', []), f'{name}: certgen {kind} is restricted')
        t.ok(c.get('securityContext', {}).get('readOnlyRootFilesystem') is True and
             c.get('resources', {}).get('limits', {}).get('memory'),
             f'{name}: certgen {kind}: read-only root, memory limit')
        t.is_eq(spec.get('serviceAccountName'), cg, f'{name}: certgen {kind} uses its account')
    t.ok(vol and sorted(i['key'] for i in vol[0]['secret'].get('items', [])) ==
         ['tls.crt', 'tls.key'], f'{name}: the webhook mounts tls.crt and tls.key only (the CA '
         'key stays in the Secret)', diag=vol)


def check_event_rbac(t, rendered):
    """Every daemon that writes Events (issue 36) may create and patch them."""
    want = {'dra': ['gpuslice-kubelet-plugin', 'gpuslice-monitor'],
            'legacy': ['gpuslice-device-plugin', 'gpuslice-extender', 'gpuslice-monitor']}
    for mode, roles in want.items():
        by = {o['metadata']['name']: o for o in rendered.get(mode, [])
              if o['kind'] == 'ClusterRole'}
        for role in roles:
            verbs = {v for r in by.get(role, {}).get('rules', [])
                     if '' in r.get('apiGroups', []) and 'events' in r.get('resources', [])
                     for v in r.get('verbs', [])}
            t.ok({'create', 'patch'} <= verbs, f'deploy/{mode}: ClusterRole {role} may create and '
                 'patch Events', diag=sorted(verbs))


def check_webhook_certificates(t, rendered):
    """cert-manager path (issue 26 #5): the serving certificate is issued by a CA issuer whose CA
    is a long-lived certificate of its own, so a leaf renewal keeps the injected CA bundle."""
    objs = rendered.get('webhook', [])
    by = {(o['kind'], o['metadata']['name']): o for o in objs}
    mwc = [o for o in objs if o['kind'] == 'MutatingWebhookConfiguration']
    inject = mwc[0]['metadata'].get('annotations', {}).get('cert-manager.io/inject-ca-from', '') \
        if mwc else ''
    leaf = by.get(('Certificate', inject.split('/')[-1]))
    if not t.ok(leaf, 'the webhook configuration injects the CA of a Certificate of the unit',
                diag=inject):
        return
    issuer = by.get((leaf['spec']['issuerRef'].get('kind', 'Issuer'),
                     leaf['spec']['issuerRef']['name']))
    t.ok(issuer and 'ca' in issuer['spec'] and 'selfSigned' not in issuer['spec'],
         'the serving certificate is issued by a CA issuer, not self-signed (renewals keep the '
         'bundle)', diag=issuer)
    ca = [o for o in objs if o['kind'] == 'Certificate' and issuer and
          o['spec'].get('secretName') == issuer['spec'].get('ca', {}).get('secretName')]
    t.ok(ca and ca[0]['spec'].get('isCA') and
         ca[0]['spec'].get('privateKey', {}).get('rotationPolicy') == 'Never',
         "the CA is a certificate of its own (isCA) whose key is kept across its renewals")


def check_workload_hygiene(t, rendered):
    """Every daemon an operator installs (issue 36): each container has requests, a memory limit
    and a probe; each pod a seccomp profile and a PriorityClass; a Deployment with a leader has a
    PodDisruptionBudget keeping one replica. Containers of images we do not build (kube-scheduler)
    are held to the same rules."""
    seen = set()
    for rel, objs in sorted(rendered.items()):
        pdbs = [o for o in objs if o['kind'] == 'PodDisruptionBudget']
        for o in objs:
            spec = pod_spec(o)
            if spec is None or rel == 'examples' or o['kind'] not in ('Deployment', 'DaemonSet'):
                continue
            key = (o['kind'], o['metadata']['name'])
            if key in seen:
                continue
            seen.add(key)
            name = '%s %s' % key
            sc = spec.get('securityContext', {}).get('seccompProfile', {}).get('type')
            t.ok(sc in ('RuntimeDefault', 'Localhost'), f'{name}: the pod has a seccomp profile',
                 diag=sc)
            t.ok(bool(spec.get('priorityClassName')), f'{name}: the pod has a PriorityClass')
            for c in spec.get('containers', []):
                cn = f"{name} container {c['name']}"
                res = c.get('resources', {})
                t.ok(bool(res.get('requests')) and 'memory' in res.get('limits', {}),
                     f'{cn}: requests and a memory limit', diag=res)
                t.ok(any(k in c for k in ('livenessProbe', 'readinessProbe', 'startupProbe')),
                     f'{cn}: a probe')
            replicas = o.get('spec', {}).get('replicas', 1)
            if o['kind'] == 'Deployment' and replicas > 1:
                labels = o['spec']['selector'].get('matchLabels', {})
                covered = [b for b in pdbs if b['spec'].get('selector', {}).get('matchLabels')
                           == labels and b['spec'].get('minAvailable', 0) >= 1]
                t.ok(covered, f'{name}: {replicas} replicas kept by a PodDisruptionBudget')


def main():
    t = Tap()
    p = env_paths()
    deploy = os.path.join(p['GS_SOURCE_ROOT'], 'deploy')
    kubectl = shutil.which('kubectl')
    if not kubectl:
        # kubectl (with kustomize v5: components) is not a Debian 12 package; CI installs it.
        if os.environ.get('CI') == 'true':
            t.ok(False, 'kubectl is installed (CI renders every kustomization)')
        else:
            t.skip('deploy/ renders with kubectl kustomize', 'kubectl not installed')
        return t.done()
    rels = [r for r in kustomizations(deploy) if kind_of(deploy, r) != 'Component']
    units = {r for r in rels if '/' not in r and r not in NOT_UNITS | INSTALLS} | \
        (NESTED_UNITS & set(rels))
    t.ok({'namespace', 'plugin', 'webhook'} <= units, 'units: namespace, plugin, webhook',
         diag=sorted(units))
    rendered = {}
    for rel in rels:
        objs, err = render(kubectl, os.path.join(deploy, rel))
        if t.ok(objs is not None, f'kubectl kustomize deploy/{rel} renders', diag=err):
            rendered[rel] = objs

    # One namespace owner.
    owners = sorted(rel for rel, objs in rendered.items()
                    if any(o['kind'] == 'Namespace' and o['metadata']['name'] == NS
                           for o in objs))
    t.is_eq(owners, sorted({'namespace'} | (INSTALLS & set(rendered))),
            f'only deploy/namespace (and the whole installs {sorted(INSTALLS)}) declare Namespace {NS}')
    t.is_eq([ident(o) for o in rendered.get('namespace', [])], [('', 'Namespace', '', NS)],
            'deploy/namespace holds the Namespace and nothing else')

    # Scopes.
    for rel, objs in sorted(rendered.items()):
        bad = [ident(o) for o in objs if (o['kind'] in CLUSTER_SCOPED) ==
               bool(o['metadata'].get('namespace'))]
        t.ok(not bad, f'{rel}: cluster-scoped objects without namespace, namespaced with one',
             diag=bad)
        if rel != 'examples':
            t.ok(all(o['metadata'].get('namespace') in (None, NS) for o in objs),
                 f'{rel}: namespaced objects in {NS}')
    dc = [o for objs in rendered.values() for o in objs if o['kind'] == 'DeviceClass']
    t.ok(dc and all('namespace' not in o['metadata'] for o in dc),
         'DeviceClass rendered without a namespace')

    # Deleting one unit deletes nothing of another. A unit that includes another (an overlay, or
    # deploy/legacy, which is the webhook in legacy mode plus its own objects) is an alternative
    # to what it includes, never installed beside it: those pairs are not compared.
    deletable = sorted(r for r in rendered if r not in {'namespace', 'examples'} | INSTALLS)
    for a in deletable:
        mine = bases_of(deploy, a, units)
        ids_a = {ident(o) for o in rendered[a]}
        t.ok(not any(i[1] == 'Namespace' for i in ids_a),
             f'kubectl delete -k deploy/{a} deletes no Namespace')
        for b in sorted(units - mine - {'namespace'}):
            if b not in rendered or mine & bases_of(deploy, b, units) - {b}:
                continue
            common = ids_a & {ident(o) for o in rendered[b]}
            t.ok(not common, f'kubectl delete -k deploy/{a} deletes nothing of deploy/{b}',
                 diag=sorted(common))

    # Pod Security: the namespace's enforce label is what its pods need, no more.
    need, reasons = 'restricted', []
    for rel, objs in sorted(rendered.items()):
        for o in objs:
            spec = pod_spec(o)
            if spec is None or o['metadata'].get('namespace') != NS:
                continue
            level, why = pss_level(spec)
            t.diag(f"{rel}: {o['kind']} {o['metadata']['name']} needs Pod Security {level}"
                   + (f" ({'; '.join(why[:3])})" if why else ''))
            if PSS_LEVELS.index(level) > PSS_LEVELS.index(need):
                need, reasons = level, why
    ns_obj = rendered.get('namespace', [{}])[0]
    labels = ns_obj.get('metadata', {}).get('labels', {})
    t.is_eq(labels.get('pod-security.kubernetes.io/enforce'), need,
            f'namespace enforces Pod Security "{need}", what its pods need', )
    webhook_pods = [pod_spec(o) for o in rendered.get('webhook', []) if pod_spec(o)]
    t.ok(webhook_pods and all(pss_level(s)[0] == 'restricted' for s in webhook_pods),
         'the webhook pod passes "restricted"',
         diag=[pss_level(s)[1] for s in webhook_pods])

    check_workload_hygiene(t, rendered)
    check_scraped(t, rendered)

    # The plugin overlays and the webhook.
    for rel in sorted(r for r in rendered if r.startswith('overlays/')):
        check_plugin(t, rel, rendered[rel], p['GS_PLUGIN'])
    wh = rendered.get('webhook', [])
    dep = [o for o in wh if o['kind'] == 'Deployment']
    pcs = {o['metadata']['name'] for o in wh if o['kind'] == 'PriorityClass'}
    pc = pod_spec(dep[0]).get('priorityClassName') if dep else None
    t.ok(pc and pc in pcs, 'the webhook runs at a PriorityClass its own unit ships',
         diag=f'{pc} not in {pcs}')

    # Images and the paths inside the image.
    with open(os.path.join(p['GS_BUILD_ROOT'], 'meson-info', 'intro-projectinfo.json')) as f:
        project_version = json.load(f)['version']
    for rel, objs in sorted(rendered.items()):
        for o in objs:
            spec = pod_spec(o)
            if spec is None or rel == 'examples':
                continue
            for c in spec['containers']:
                if not c['image'].startswith(IMAGE + ':'):
                    # Another project's image (deploy/legacy's kube-scheduler): pinned, not latest.
                    t.ok(re.search(r':[\w][\w.-]*$', c['image']) and
                         not c['image'].endswith(':latest'),
                         f"{rel}: {c['name']} runs a pinned image ({c['image']})")
                    continue
                t.is_eq(c['image'], f'{IMAGE}:{project_version}',
                        f"{rel}: {c['name']} runs {IMAGE} at the project version")
                cmd = (c.get('command') or [''])[0]
                t.ok(cmd.startswith('/usr/bin/gpuslice-'),
                     f"{rel}: {c['name']} runs /usr/bin/gpuslice-* of the image", diag=cmd)
                for a in c.get('args', []):
                    if a.startswith('--vgpu-lib='):
                        t.is_eq(a, '--vgpu-lib=/usr/lib/gpuslice/libvgpu.so',
                                f"{rel}: libvgpu.so at the image's path")

    work = tempfile.mkdtemp(prefix='deploy-', dir=p['GS_BUILD_ROOT'])
    try:
        check_node_selection(t, kubectl, deploy, work, rendered)
        check_legacy_scheduler(t, kubectl, deploy, work, rendered)
        check_lab_names(t, kubectl, deploy, work)
        check_installs(t, kubectl, deploy, work, rendered, p)
        check_webhook_certificates(t, rendered)
        check_event_rbac(t, rendered)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    check_schemas(t, rendered)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
