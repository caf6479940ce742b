#!/usr/bin/env python3
"""deploy/webhook: the MutatingWebhookConfiguration, Deployment, Service, RBAC and Certificate say
what the webhook needs (and only that), the Deployment's flags are ones the binary accepts, and
make-cert.sh produces a usable self-signed pair."""
import base64
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

import jsonpatch
import jsonschema
import yaml

from gstest import Tap, env_paths, reference_json, skip_reference


def load(deploy):
    docs = []
    for path in sorted(glob.glob(os.path.join(deploy, '*.yaml'))):
        if path.endswith('kustomization.yaml'):
            continue
        with open(path) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def keys_within(t, got, sample, where):
    extra = set(got) - set(sample)
    t.ok(not extra, f'{where}: only fields the v1.36 object has', diag=f'unknown {extra}')


def main():
    t = Tap()
    paths = env_paths()
    root = paths['GS_SOURCE_ROOT']
    deploy = os.path.join(root, 'deploy', 'webhook')
    docs = load(deploy)
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d['kind'], []).append(d)
    kust = yaml.safe_load(open(os.path.join(deploy, 'kustomization.yaml')))
    listed = sorted(kust['resources'])
    on_disk = sorted(os.path.basename(p) for p in glob.glob(os.path.join(deploy, '*.yaml'))
                     if not p.endswith('kustomization.yaml'))
    t.is_eq(listed, on_disk, 'kustomization lists every manifest')

    # The namespace is deploy/namespace's (one owner; tests/integration/release/test_deploy.py).
    t.ok('Namespace' not in by_kind, 'deploy/webhook declares no Namespace')
    ns = by_kind['Deployment'][0]['metadata']['namespace']
    mwc = by_kind['MutatingWebhookConfiguration'][0]
    wh = mwc['webhooks'][0]
    ref = reference_json('k8s-api-testdata-v1.36',
                         'admissionregistration.k8s.io.v1.MutatingWebhookConfiguration.json')
    if ref is None:
        skip_reference(t, 'webhook fields as in the v1.36 sample', 'k8s-api-testdata-v1.36')
    else:
        keys_within(t, wh, ref['webhooks'][0], 'webhook')
        keys_within(t, wh['clientConfig']['service'],
                    ref['webhooks'][0]['clientConfig']['service'], 'clientConfig.service')
    t.is_eq(wh['rules'], [{'operations': ['CREATE'], 'apiGroups': [''], 'apiVersions': ['v1'],
                           'resources': ['pods'], 'scope': 'Namespaced'}], 'rules: CREATE pods only')
    t.is_eq(wh['failurePolicy'], 'Fail', 'failurePolicy Fail')
    jobs = {w['name']: w for w in mwc['webhooks'][1:]}
    t.is_eq(sorted((w['rules'][0]['operations'][0], w['rules'][0]['apiGroups'][0],
                    w['rules'][0]['resources'][0], w['failurePolicy']) for w in jobs.values()),
            [('CREATE', 'batch.volcano.sh', 'jobs', 'Fail'),
             ('DELETE', 'batch.volcano.sh', 'jobs', 'Ignore')],
            'Volcano jobs: CREATE (Fail) and DELETE (Ignore: never blocks a deletion)')
    t.ok(all(w['clientConfig']['service']['path'] == '/mutate' for w in jobs.values()),
         'Volcano entries served by /mutate')
    t.is_eq(wh['timeoutSeconds'], 10, 'timeoutSeconds 10')
    t.is_eq(wh['admissionReviewVersions'], ['v1'], 'admissionReviewVersions [v1]')
    t.is_eq(wh['sideEffects'], 'NoneOnDryRun', 'sideEffects NoneOnDryRun')
    exprs = wh['namespaceSelector']['matchExpressions']
    excluded = [v for e in exprs if e['key'] == 'kubernetes.io/metadata.name'
                and e['operator'] == 'NotIn' for v in e['values']]
    t.ok('kube-system' in excluded and ns in excluded,
         f'namespaceSelector excludes kube-system and {ns}', diag=excluded)
    t.ok({'key': 'gpuslice.io/webhook', 'operator': 'NotIn', 'values': ['disabled']} in exprs,
         'namespaces labelled gpuslice.io/webhook=disabled opt out')
    svc = by_kind['Service'][0]
    cs = wh['clientConfig']['service']
    t.is_eq((cs['name'], cs['namespace'], cs['path'], cs['port']),
            (svc['metadata']['name'], svc['metadata']['namespace'], '/mutate',
             svc['spec']['ports'][0]['port']), 'clientConfig points at the Service /mutate')
    # The serving certificate (the one with DNS names; the other is the CA that issues it).
    cert = [c for c in by_kind['Certificate'] if c['spec'].get('dnsNames')][0]
    t.is_eq(mwc['metadata']['annotations']['cert-manager.io/inject-ca-from'],
            f"{cert['metadata']['namespace']}/{cert['metadata']['name']}",
            'caBundle injected from the Certificate')
    t.ok(f"{svc['metadata']['name']}.{ns}.svc" in cert['spec']['dnsNames'],
         'certificate names the Service DNS name')

    for kind, schema_file in (('Service', 'service-v1.json'),
                              ('ServiceAccount', 'serviceaccount-v1.json')):
        schema = reference_json('k8s-json-schema', schema_file)
        t.valid(jsonschema.Draft7Validator(schema) if schema else None, by_kind[kind][0],
                f'{kind} validates against the strict schema')

    dep = by_kind['Deployment'][0]
    t.is_eq(dep['spec']['replicas'], 2, 'Deployment: 2 replicas')
    pod = dep['spec']['template']['spec']
    c = pod['containers'][0]
    t.is_eq(pod['serviceAccountName'], by_kind['ServiceAccount'][0]['metadata']['name'],
            'runs as the webhook ServiceAccount')
    vol = {v['name']: v for v in pod['volumes']}
    mounts = {m['mountPath']: m['name'] for m in c['volumeMounts']}
    args = dict(a[2:].split('=', 1) for a in c['args'])
    cert_dir = os.path.dirname(args['tls-cert-file'])
    t.is_eq(vol[mounts[cert_dir]]['secret']['secretName'], cert['spec']['secretName'],
            'serving pair mounted from the Certificate secret')
    t.is_eq(c['ports'][0]['containerPort'], int(args['listen'].rsplit(':', 1)[1]),
            'container port = --listen port')
    webhook_timeout = wh['timeoutSeconds']
    ports = {p['name']: p['containerPort'] for p in c['ports']}
    t.is_eq((c['readinessProbe']['httpGet']['path'], c['readinessProbe']['httpGet']['scheme'],
             c['livenessProbe']['httpGet']['path']), ('/readyz', 'HTTP', '/healthz'),
            'probes on /readyz and /healthz over plain HTTP')
    t.is_eq({c['readinessProbe']['httpGet']['port'], c['livenessProbe']['httpGet']['port']},
            {'health'}, 'probes on the probe listener\'s port')
    t.is_eq(ports.get('health'), int(args['health-listen'].rsplit(':', 1)[1]),
            'health port = --health-listen port')
    envs = {e['name']: e.get('value') for e in c.get('env', [])}
    t.is_eq(envs.get('GLIBC_TUNABLES'), 'glibc.malloc.tcache_count=200',
            'GLIBC_TUNABLES as bench/webhook measures it')
    t.ok(float(args['admission-timeout'].rstrip('s')) < webhook_timeout,
         'the admission deadline is below the webhook\'s timeoutSeconds',
         diag=f"{args['admission-timeout']} vs {webhook_timeout}")
    t.ok(c['securityContext']['readOnlyRootFilesystem']
         and c['securityContext']['capabilities']['drop'] == ['ALL']
         and pod['securityContext']['runAsNonRoot'], 'non-root, read-only, no capabilities')
    binary = paths['GS_WEBHOOK']
    r = subprocess.run([binary, '--print-config'] + c['args'], capture_output=True, text=True)
    t.ok(r.returncode == 0, 'the binary accepts every Deployment flag', diag=r.stderr)

    role = by_kind['ClusterRole'][0]
    grants = {(g, res): sorted(rule['verbs']) for rule in role['rules']
              for g in rule['apiGroups'] for res in rule['resources']}
    t.is_eq(grants, {('resource.k8s.io', 'resourceslices'): ['list'],
                     ('resource.k8s.io', 'deviceclasses'): ['get', 'list'],
                     ('', 'nodes'): ['list'],
                     ('resource.k8s.io', 'resourceclaimtemplates'): ['create', 'delete', 'get'],
                     ('resource.k8s.io', 'resourceclaims'): ['get']},
            'RBAC: exactly the verbs the webhook uses')
    crb = by_kind['ClusterRoleBinding'][0]
    t.is_eq((crb['roleRef']['name'], crb['subjects'][0]['name'], crb['subjects'][0]['namespace']),
            (role['metadata']['name'], 'gpuslice-webhook', ns), 'role bound to the ServiceAccount')

    script = os.path.join(deploy, 'make-cert.sh')
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'pair')
        r = subprocess.run(['sh', script, out, 'gs-ns', 'gs-svc', '30'], capture_output=True,
                           text=True)
        t.is_eq(r.returncode, 0, 'make-cert.sh succeeds')
        san = subprocess.run(['openssl', 'x509', '-in', os.path.join(out, 'tls.crt'), '-noout',
                              '-ext', 'subjectAltName'], capture_output=True, text=True).stdout
        t.ok('DNS:gs-svc.gs-ns.svc' in san and 'DNS:gs-svc.gs-ns.svc.cluster.local' in san,
             'certificate names the Service', diag=san)
        pub_c = subprocess.run(['openssl', 'x509', '-in', os.path.join(out, 'tls.crt'), '-noout',
                                '-pubkey'], capture_output=True, text=True).stdout
        pub_k = subprocess.run(['openssl', 'pkey', '-in', os.path.join(out, 'tls.key'),
                                '-pubout'], capture_output=True, text=True).stdout
        t.ok(pub_c and pub_c == pub_k, 'key matches the certificate')
        t.is_eq(oct(os.stat(os.path.join(out, 'tls.key')).st_mode & 0o777), '0o600',
                'key file is private')
        secret = yaml.safe_load(open(os.path.join(out, 'secret.yaml')))
        t.is_eq(base64.b64decode(secret['data']['tls.crt']),
                open(os.path.join(out, 'tls.crt'), 'rb').read(), 'Secret carries the certificate')
        t.is_eq((secret['type'], secret['metadata']['name'], secret['metadata']['namespace']),
                ('kubernetes.io/tls', 'gs-svc-tls', 'gs-ns'), 'Secret type and name')
        # Every webhook gets the caBundle (the Volcano webhooks fail closed: one left without it
        # blocks every Volcano job); the patch is RFC 6902, applied as kubectl patch --type=json.
        mwc = copy.deepcopy(by_kind['MutatingWebhookConfiguration'][0])
        with open(os.path.join(out, 'cabundle-patch.json')) as f:
            patched = jsonpatch.apply_patch(mwc, json.load(f))
        bundle = open(os.path.join(out, 'ca-bundle.b64')).read()
        t.is_eq([w['clientConfig'].get('caBundle') == bundle for w in patched['webhooks']],
                [True] * len(mwc['webhooks']),
                'make-cert.sh: its patch gives every webhook (%d) the caBundle'
                % len(mwc['webhooks']))
        r = subprocess.run(['sh', script, out, 'n', 's', 'ten'], capture_output=True, text=True)
        t.is_eq((r.returncode, r.stderr.strip()),
                (2, 'make-cert.sh: DAYS must be a number, got "ten"'), 'bad DAYS refused')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
