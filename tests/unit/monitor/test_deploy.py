#!/usr/bin/env python3
"""deploy/monitoring rendered with kustomize and checked field by field (DaemonSet, RBAC, Service,
ServiceMonitor), and the Grafana dashboard: every PromQL expression passes `promtool check rules`
(as recording rules) and refers only to metrics gpuslice-monitor exports (--list-metrics), every
one of which is documented in docs/internals/monitor.md."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from gstest import Tap

t = Tap()
ROOT = os.environ['GS_SOURCE_ROOT']
DEPLOY = os.path.join(ROOT, 'deploy', 'monitoring')
MONITOR = os.environ['GS_MONITOR']
NS = 'gpuslice-system'


def render():
    """The manifests as kustomize renders them (kubectl's built-in kustomize, else the plain
    files in the kustomization's order)."""
    kubectl = shutil.which('kubectl')
    if kubectl:
        r = subprocess.run([kubectl, 'kustomize', DEPLOY], capture_output=True, text=True,
                           timeout=120)
        t.ok(r.returncode == 0, 'kubectl kustomize deploy/monitoring renders', diag=r.stderr)
        return [d for d in yaml.safe_load_all(r.stdout) if d]
    t.skip('kubectl kustomize', 'kubectl not installed: reading the files directly')
    with open(os.path.join(DEPLOY, 'kustomization.yaml')) as f:
        k = yaml.safe_load(f)
    docs = []
    for res in k['resources']:
        with open(os.path.join(DEPLOY, res)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    with open(os.path.join(DEPLOY, 'dashboard.json')) as f:
        docs.append({'apiVersion': 'v1', 'kind': 'ConfigMap',
                     'metadata': {'name': 'gpuslice-monitor-dashboard', 'namespace': NS,
                                  'labels': {'grafana_dashboard': '1'}},
                     'data': {'gpuslice-dashboard.json': f.read()}})
    return docs


def one(docs, kind, name):
    found = [d for d in docs if d['kind'] == kind and d['metadata']['name'] == name]
    t.is_eq(len(found), 1, '%s %s rendered once' % (kind, name))
    return found[0] if found else {}


def check_daemonset(ds):
    spec = ds['spec']['template']['spec']
    t.ok(ds['metadata'].get('namespace') == NS, 'DaemonSet in %s' % NS)
    t.ok(not spec.get('hostNetwork') and not spec.get('hostPID') and not spec.get('hostIPC'),
         'no host network, PID or IPC namespace')
    t.is_eq(spec.get('serviceAccountName'), 'gpuslice-monitor', 'its own service account')
    t.is_eq(spec.get('securityContext', {}).get('seccompProfile'), {'type': 'RuntimeDefault'},
            'seccomp RuntimeDefault')
    c = spec['containers']
    t.is_eq(len(c), 1, 'one container')
    c = c[0]
    sc = c.get('securityContext', {})
    t.ok(not sc.get('privileged') and sc.get('allowPrivilegeEscalation') is False and
         sc.get('capabilities', {}).get('drop') == ['ALL'] and
         not sc.get('capabilities', {}).get('add') and sc.get('readOnlyRootFilesystem') is True,
         'not privileged, no escalation, every capability dropped, read-only root')
    args = c.get('args', [])
    t.ok('--listen=:31995' in args, 'listens on :31995')
    t.ok('--host-dir=/usr/local/vgpu' in args and
         '--state-dir=/var/lib/kubelet/plugins/hami-core-gpu.project-hami.io' in args,
         'the kubelet plugin\'s host and state directories')
    ports = {p['name']: p['containerPort'] for p in c.get('ports', [])}
    t.is_eq(ports, {'metrics': 31995, 'probes': 31996},
            'container ports metrics=31995, probes=31996')
    t.ok('--probe-listen=:31996' in args and
         c['livenessProbe']['httpGet']['port'] == 'probes' and
         c['readinessProbe']['httpGet']['port'] == 'probes',
         "kubelet's probes go to the probe listener (--probe-listen=:31996)")
    t.ok(c['livenessProbe']['httpGet']['path'] == '/healthz' and
         c['readinessProbe']['httpGet']['path'] == '/readyz', 'probes on /healthz and /readyz')
    env = {e['name']: e for e in c.get('env', [])}
    t.ok(env.get('NODE_NAME', {}).get('valueFrom', {}).get('fieldRef', {}).get('fieldPath') ==
         'spec.nodeName', 'NODE_NAME from the downward API')
    vols = {v['name']: v for v in spec['volumes']}
    mounts = {m['name']: m for m in c['volumeMounts']}
    host_vols = [n for n, v in vols.items() if 'hostPath' in v]
    t.ok(host_vols and all(mounts.get(n, {}).get('readOnly') is True for n in host_vols),
         'every hostPath is mounted read-only (%s)' % ', '.join(sorted(host_vols)))
    paths = sorted(vols[n]['hostPath']['path'] for n in host_vols)
    t.is_eq(paths, ['/dev/null', '/usr/local/vgpu',
                    '/var/lib/kubelet/plugins/hami-core-gpu.project-hami.io'],
            'host paths: the plugin\'s dirs and the NVIDIA volume-mount selector only')
    for n in host_vols:
        if vols[n]['hostPath']['path'] != '/dev/null':
            t.is_eq(mounts[n]['mountPath'], vols[n]['hostPath']['path'],
                    'volume %s mounted at its host path (where the args point)' % n)
    return ds['spec']['template']['metadata']['labels']


def check_rbac(docs):
    role = one(docs, 'ClusterRole', 'gpuslice-monitor')
    rules = sorted((tuple(r['apiGroups']), tuple(r['resources']), tuple(r['verbs']))
                   for r in role.get('rules', []))
    t.is_eq(rules, [(('',), ('events',), ('create', 'patch')),
                    (('',), ('pods',), ('get',)),
                    (('resource.k8s.io',), ('resourceclaims',), ('get',))],
            'ClusterRole: get resourceclaims and pods, write the auditor\'s Events, nothing else')
    b = one(docs, 'ClusterRoleBinding', 'gpuslice-monitor')
    t.ok(b.get('roleRef', {}).get('name') == 'gpuslice-monitor' and
         b.get('subjects') == [{'kind': 'ServiceAccount', 'name': 'gpuslice-monitor',
                                'namespace': NS}], 'binding to the monitor\'s service account')
    one(docs, 'ServiceAccount', 'gpuslice-monitor')


def check_service(docs, pod_labels):
    svc = one(docs, 'Service', 'gpuslice-monitor')
    spec = svc.get('spec', {})
    t.ok(all(pod_labels.get(k) == v for k, v in spec.get('selector', {}).items()) and
         spec.get('selector'), 'Service selects the monitor pods')
    t.is_eq(spec.get('clusterIP'), 'None', 'headless: every pod is scraped')
    t.is_eq([(p['name'], p['port'], p['targetPort']) for p in spec.get('ports', [])],
            [('metrics', 31995, 'metrics')], 'port metrics 31995 -> metrics')
    sm = one(docs, 'ServiceMonitor', 'gpuslice-monitor')
    t.is_eq(sm.get('apiVersion'), 'monitoring.coreos.com/v1', 'ServiceMonitor apiVersion')
    sel = sm.get('spec', {}).get('selector', {}).get('matchLabels', {})
    t.ok(sel and all(svc['metadata'].get('labels', {}).get(k) == v for k, v in sel.items()),
         'ServiceMonitor selects the Service by its labels')
    t.is_eq(sm['spec'].get('namespaceSelector'), {'matchNames': [NS]},
            'ServiceMonitor looks in %s' % NS)
    eps = sm['spec'].get('endpoints', [])
    t.ok(len(eps) == 1 and eps[0].get('port') == 'metrics' and eps[0].get('path') == '/metrics'
         and eps[0].get('scheme') == 'http', 'endpoint: port metrics, /metrics, http')
    t.ok(eps and eps[0].get('honorLabels') is True,
         'honorLabels: the workload\'s namespace/pod/container labels are kept')
    known = {'port', 'path', 'scheme', 'interval', 'scrapeTimeout', 'honorLabels'}
    t.ok(eps and set(eps[0]) <= known, 'endpoint has only known fields: %s' % sorted(eps[0]))


def exprs_of(dash):
    out = []
    for p in dash.get('panels', []):
        for tg in p.get('targets', []):
            out.append((p.get('title'), tg['expr']))
    return out


FUNCS = {'sum', 'by', 'rate', 'count', 'histogram_quantile', 'le', 'without', 'on', 'ignoring',
         'avg', 'max', 'min', 'label_values'}


def metric_names(expr):
    """Metric names of a PromQL expression: identifiers outside {...} and outside the grouping
    clauses, that are not functions or keywords."""
    e = re.sub(r'\{[^}]*\}', '', expr)
    e = re.sub(r'\b(by|without|on|ignoring)\s*\([^)]*\)', '', e)
    e = re.sub(r'\[[^\]]*\]', '', e)
    names = set()
    for m in re.finditer(r'[A-Za-z_:][A-Za-z0-9_:]*', e):
        w = m.group(0)
        rest = e[m.end():].lstrip()
        if w in FUNCS or rest.startswith('('):
            continue
        names.add(w)
    return names


def check_dashboard(docs, exported, tmp):
    cm = one(docs, 'ConfigMap', 'gpuslice-monitor-dashboard')
    t.is_eq(cm.get('metadata', {}).get('labels', {}).get('grafana_dashboard'), '1',
            'dashboard ConfigMap labelled for the Grafana sidecar')
    dash = json.loads(cm.get('data', {}).get('gpuslice-dashboard.json', '{}'))
    t.ok(dash.get('uid') and dash.get('panels'), 'dashboard has a uid and panels')
    exprs = exprs_of(dash)
    for v in dash.get('templating', {}).get('list', []):
        q = v.get('definition')
        if q:
            m = re.match(r'label_values\((\w+),', q)
            exprs.append(('variable ' + v['name'], m.group(1) if m else q))
    subst = {'$__rate_interval': '5m', '$node': '.*', '$namespace': '.*'}
    rules = []
    for i, (title, e) in enumerate(exprs):
        x = e
        for k, v in subst.items():
            x = x.replace(k, v)
        t.ok('$' not in x, 'only known variables in "%s"' % title)
        rules.append({'record': 'gpuslice_dashboard:panel_%d' % i, 'expr': x})
    path = os.path.join(tmp, 'dashboard-rules.yml')
    with open(path, 'w') as f:
        yaml.safe_dump({'groups': [{'name': 'gpuslice-dashboard', 'rules': rules}]}, f)
    r = subprocess.run(['promtool', 'check', 'rules', path], capture_output=True, text=True,
                       timeout=60)
    t.ok(r.returncode == 0, 'promtool check rules: all %d dashboard expressions are valid PromQL'
         % len(rules), diag=r.stdout + r.stderr)
    used = set()
    for title, e in exprs:
        names = metric_names(e)
        unknown = names - exported
        t.ok(names and not unknown, '"%s" refers only to exported metrics %s' %
             (title, sorted(names)), diag='unknown: %s' % sorted(unknown))
        used |= names
    return used


def main():
    r = subprocess.run([MONITOR, '--list-metrics'], capture_output=True, text=True, timeout=30)
    exported = set(r.stdout.split())
    t.ok(r.returncode == 0 and 'hami_vgpu_memory_used_bytes' in exported,
         'gpuslice-monitor --list-metrics')
    # Sanity of the name check itself.
    t.is_eq(metric_names('sum by (namespace) (rate(x_total{a="b"}[5m])) / on(le) y > 3'),
            {'x_total', 'y'}, 'metric name extraction from PromQL')
    docs = render()
    check_rbac(docs)
    labels = check_daemonset(one(docs, 'DaemonSet', 'gpuslice-monitor'))
    check_service(docs, labels)
    with tempfile.TemporaryDirectory() as tmp:
        check_dashboard(docs, exported, tmp)
    with open(os.path.join(ROOT, 'docs', 'internals', 'monitor.md')) as f:
        doc = f.read()
    undocumented = sorted(n for n in exported
                          if '`%s`' % n not in doc and
                          '`%s`' % re.sub(r'_(bucket|count|sum)$', '', n) not in doc)
    t.ok(not undocumented, 'every exported metric is documented in docs/internals/monitor.md',
         diag='undocumented: %s' % undocumented)


t.run('deploy', main)
sys.exit(t.done())
