#!/usr/bin/env python3
"""`gpuslice-webhook certgen` against the fake API server: the Secret is made (a CA and a leaf
for the Service's names), every webhook of the MutatingWebhookConfiguration gets the CA bundle,
a second run writes nothing, a leaf near expiry or naming the wrong host is renewed from the
same CA (the bundle stays), a Secret without the CA key gets a new CA, and errors name the
object and the API's status. Certificates are checked from outside with openssl."""
import base64
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import Webhook, write_kubeconfig

TOKEN = 'certgen-token'
NS = 'gpuslice-system'
SECRET = 'gpuslice-webhook-tls'
HOSTS = ['gpuslice-webhook.gpuslice-system.svc', 'gpuslice-webhook.gpuslice-system.svc.cluster.local']
HOOKS = ['pods.webhook.gpuslice.io', 'volcano-jobs.webhook.gpuslice.io',
         'volcano-job-deletions.webhook.gpuslice.io']


def mwc():
    return {'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'MutatingWebhookConfiguration',
            'metadata': {'name': 'gpuslice-webhook'},
            'webhooks': [{'name': n, 'admissionReviewVersions': ['v1'], 'sideEffects': 'None',
                          'clientConfig': {'service': {'name': 'gpuslice-webhook',
                                                       'namespace': NS, 'path': '/mutate'}}}
                         for n in HOOKS]}


def run(binary, kubeconfig, *extra):
    r = subprocess.run([binary, 'certgen', '--kubeconfig', kubeconfig, '--certgen-namespace', NS]
                       + list(extra), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def data(api, key):
    return base64.b64decode(api.get('secrets', NS, SECRET)['data'][key]).decode()


def writes(api):
    return [(r['method'], r['path']) for r in api.requests()
            if r['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')]


def openssl(*args, stdin=None):
    return subprocess.run(['openssl'] + list(args), input=stdin, capture_output=True, text=True)


def verify(tmp, api):
    """openssl verify of tls.crt against the caBundle of every webhook, for both names."""
    leaf = os.path.join(tmp, 'leaf.pem')
    with open(leaf, 'w') as f:
        f.write(data(api, 'tls.crt'))
    results = []
    for i, hook in enumerate(api.get('mutatingwebhookconfigurations', None,
                                     'gpuslice-webhook')['webhooks']):
        bundle = os.path.join(tmp, f'bundle{i}.pem')
        with open(bundle, 'wb') as f:
            f.write(base64.b64decode(hook['clientConfig']['caBundle']))
        for host in HOSTS:
            r = openssl('verify', '-CAfile', bundle, '-purpose', 'sslserver',
                        '-verify_hostname', host, leaf)
            results.append(r.returncode == 0 and ': OK' in r.stdout)
    return results


def sign_leaf(tmp, api, cn, days=400):
    """A leaf for `cn` signed by the Secret's own CA (openssl), as (cert, key) PEM."""
    ca, cakey = os.path.join(tmp, 'ca.pem'), os.path.join(tmp, 'ca.key')
    with open(ca, 'w') as f:
        f.write(data(api, 'ca.crt'))
    with open(cakey, 'w') as f:
        f.write(data(api, 'ca.key'))
    key, csr, crt = (os.path.join(tmp, 'x.' + s) for s in ('key', 'csr', 'crt'))
    subprocess.run(['openssl', 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
                    '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=' + cn],
                   check=True, capture_output=True)
    ext = os.path.join(tmp, 'ext.cnf')
    with open(ext, 'w') as f:
        f.write(f'subjectAltName=DNS:{cn}\nextendedKeyUsage=serverAuth\n')
    subprocess.run(['openssl', 'x509', '-req', '-in', csr, '-CA', ca, '-CAkey', cakey,
                    '-CAcreateserial', '-out', crt, '-days', str(days), '-extfile', ext],
                   check=True, capture_output=True)
    return open(crt).read(), open(key).read()


def put_secret(api, values, stype='kubernetes.io/tls'):
    obj = api.get('secrets', NS, SECRET) or {'apiVersion': 'v1', 'kind': 'Secret',
                                             'metadata': {'name': SECRET, 'namespace': NS}}
    obj['type'] = stype
    obj['data'] = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    api.put(obj)


def project(api, d, gen):
    """The Secret's tls.crt and tls.key as the kubelet mounts a Secret volume: a timestamped
    folder, the ..data link swapped atomically, file links through it."""
    os.makedirs(os.path.join(d, f'..ts{gen}'))
    for k in ('tls.crt', 'tls.key'):
        with open(os.path.join(d, f'..ts{gen}', k), 'w') as f:
            f.write(data(api, k))
        if not os.path.islink(os.path.join(d, k)):
            os.symlink(os.path.join('..data', k), os.path.join(d, k))
    os.symlink(f'..ts{gen}', os.path.join(d, '..data_tmp'))
    os.replace(os.path.join(d, '..data_tmp'), os.path.join(d, '..data'))


class BundleWebhook(Webhook):
    """The webhook, reached as the API server reaches it: trusting only the caBundle."""
    bundle = None

    def context(self, cafile=None):
        ctx = ssl.create_default_context(cafile=self.bundle)
        ctx.check_hostname = False  # 127.0.0.1; the names are checked by openssl above
        return ctx


def served_der(wh):
    with socket.create_connection(('127.0.0.1', wh.port), timeout=10) as s:
        with wh.context().wrap_socket(s) as tls:
            return tls.getpeercert(binary_form=True)


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token=TOKEN) as api:
        kc = write_kubeconfig(tmp, api.url, TOKEN)

        # No MutatingWebhookConfiguration: a clear error naming it and the status.
        rc, out = run(binary, kc)
        t.is_eq(rc, 1, 'no MutatingWebhookConfiguration: exit 1')
        t.like(out, 'cannot read the MutatingWebhookConfiguration gpuslice-webhook: '
               'mutatingwebhookconfigurations.admissionregistration.k8s.io "gpuslice-webhook" '
               'not found (404)', 'the error names the object and the status')
        api.reset()

        # First run: the Secret is created and all three webhooks get the bundle.
        api.put(mwc())
        rc, out = run(binary, kc)
        t.is_eq(rc, 0, 'first run: exit 0')
        t.diag(out.strip())
        t.like(out, 'secret gpuslice-system/gpuslice-webhook-tls: created', 'first run: created')
        sec = api.get('secrets', NS, SECRET)
        t.ok(sec is not None and sec.get('type') == 'kubernetes.io/tls' and
             sorted(sec['data']) == ['ca.crt', 'ca.key', 'tls.crt', 'tls.key'],
             'Secret of type kubernetes.io/tls with tls.crt, tls.key, ca.crt, ca.key')
        bundles = [h['clientConfig'].get('caBundle') for h in
                   api.get('mutatingwebhookconfigurations', None, 'gpuslice-webhook')['webhooks']]
        t.is_eq(bundles, [sec['data']['ca.crt']] * 3, 'every webhook (3) has ca.crt as caBundle')
        t.is_eq(verify(tmp, api), [True] * 6,
                'the leaf verifies against each bundle for both Service names (serverAuth)')
        text = openssl('x509', '-noout', '-text', stdin=data(api, 'tls.crt')).stdout
        t.ok('prime256v1' in text or 'P-256' in text, 'the leaf key is ECDSA P-256', diag=text)
        t.like(text, 'TLS Web Server Authentication', 'the leaf is for serverAuth')
        t.ok('CA:FALSE' in text, 'the leaf is not a CA')
        first_ca, first_leaf = data(api, 'ca.crt'), data(api, 'tls.crt')

        # The webhook serves the pair from the mounted Secret, trusted through the bundle.
        mount = os.path.join(tmp, 'mount')
        os.makedirs(mount)
        project(api, mount, 1)
        BundleWebhook.bundle = os.path.join(tmp, 'api-bundle.pem')
        with open(BundleWebhook.bundle, 'wb') as f:
            f.write(base64.b64decode(api.get('mutatingwebhookconfigurations', None,
                                             'gpuslice-webhook')['webhooks'][0]['clientConfig']
                                     ['caBundle']))
        wh = BundleWebhook(binary, os.path.join(mount, 'tls.crt'), os.path.join(mount, 'tls.key'),
                           kc, workdir=tmp)
        t.is_eq(served_der(wh), ssl.PEM_cert_to_DER_cert(data(api, 'tls.crt')),
                'the webhook serves the generated pair, verified against the caBundle')

        # Second run: nothing written.
        api.clear_log()
        rc, out = run(binary, kc)
        t.is_eq((rc, writes(api)), (0, []), 'second run: exit 0, no write at all')
        t.like(out, ': kept; caBundle given to 0 of 3 webhooks', 'second run: kept, 0 patched')

        # Near expiry (the leaf's year is inside a 9000h window): the leaf is renewed, the CA kept.
        api.clear_log()
        rc, out = run(binary, kc, '--certgen-renew-before', '9000h',
                      '--certgen-cert-validity', '17520h')
        t.is_eq(rc, 0, 'near expiry: exit 0')
        t.like(out, 'renewed-leaf (the serving certificate expires within the renewal window)',
               'near expiry: the leaf is renewed, saying why')
        t.ok(data(api, 'ca.crt') == first_ca and data(api, 'tls.crt') != first_leaf,
             'near expiry: the CA is kept, the leaf is new')
        t.is_eq([m for m, _ in writes(api)], ['PUT'], 'near expiry: one write (the Secret), no '
                'patch: the bundle stays valid')
        t.is_eq(verify(tmp, api), [True] * 6, 'near expiry: the new leaf verifies')
        # The kubelet updates the mount; the webhook reloads it (no restart) and the API
        # server's unchanged bundle still trusts it.
        project(api, mount, 2)
        want = ssl.PEM_cert_to_DER_cert(data(api, 'tls.crt'))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15 and served_der(wh) != want:
            time.sleep(0.1)
        t.diag(f'renewed leaf served after {time.monotonic() - t0:.1f}s')
        t.is_eq(served_der(wh), want, 'after renewal the webhook serves the new leaf without a '
                'restart, trusted by the same bundle')
        t.is_eq(wh.stop(), 0, 'the webhook exits 0')
        rc, out = run(binary, kc, '--certgen-renew-before', '9000h',
                      '--certgen-cert-validity', '17520h')
        t.like(out, ': kept;', 'near expiry: a run after the renewal keeps it')

        # A leaf for the wrong name (signed by the right CA): replaced, CA kept.
        crt, key = sign_leaf(tmp, api, 'wrong.example.com')
        put_secret(api, {'tls.crt': crt, 'tls.key': key, 'ca.crt': data(api, 'ca.crt'),
                         'ca.key': data(api, 'ca.key')})
        rc, out = run(binary, kc)
        t.like(out, 'renewed-leaf (the serving certificate does not name '
               'gpuslice-webhook.gpuslice-system.svc)', 'wrong name: the leaf is renewed')
        t.ok(data(api, 'ca.crt') == first_ca and data(api, 'tls.crt') != crt,
             'wrong name: CA kept, the leaf replaced')
        t.is_eq(verify(tmp, api), [True] * 6, 'wrong name: the new leaf names the Service')

        # A leaf from another CA (make-cert.sh's self-signed pair, no ca.key): a new CA; the
        # bundle of every webhook changes.
        selfsigned, selfkey = os.path.join(tmp, 's.crt'), os.path.join(tmp, 's.key')
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                        'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', selfkey, '-out',
                        selfsigned, '-days', '365', '-subj', '/CN=' + HOSTS[0], '-addext',
                        'subjectAltName=DNS:' + HOSTS[0] + ',DNS:' + HOSTS[1]],
                       check=True, capture_output=True)
        put_secret(api, {'tls.crt': open(selfsigned).read(), 'tls.key': open(selfkey).read()})
        rc, out = run(binary, kc)
        t.like(out, 'new-ca (no CA certificate and key (ca.crt, ca.key)); caBundle given to 3 of '
               '3 webhooks', 'no CA key: a new CA, all 3 bundles patched')
        t.ok(data(api, 'ca.crt') != first_ca, 'no CA key: the CA is new')
        t.is_eq(verify(tmp, api), [True] * 6, 'no CA key: the new leaf verifies')
        rc, out = run(binary, kc)
        t.like(out, ': kept; caBundle given to 0 of 3', 'after a new CA, the next run keeps it')

        # A webhook's bundle edited by hand: only that one is patched back.
        obj = api.get('mutatingwebhookconfigurations', None, 'gpuslice-webhook')
        obj['webhooks'][2]['clientConfig']['caBundle'] = base64.b64encode(b'junk').decode()
        api.put(obj)
        rc, out = run(binary, kc)
        t.like(out, 'caBundle given to 1 of 3', 'a stale bundle on one webhook: one patched')
        t.is_eq(verify(tmp, api), [True] * 6, 'the bundle is back on every webhook')

        # Errors name the object and the status.
        api.fail_next(1, status=403, match='/secrets', message='secrets "x" is forbidden')
        rc, out = run(binary, kc)
        t.ok(rc == 1 and 'cannot read the Secret gpuslice-system/gpuslice-webhook-tls' in out
             and '(403)' in out, 'a refused read: exit 1 naming the Secret and 403', diag=out)
        put_secret(api, {'x': 'y'}, stype='Opaque')
        rc, out = run(binary, kc)
        t.ok(rc == 1 and 'has type "Opaque", not kubernetes.io/tls' in out,
             'a Secret of another type: exit 1 naming the type', diag=out)
        rc, out = run(binary, kc, '--certgen-renew-before', '9000h')
        t.ok(rc == 1 and '--certgen-renew-before' in out,
             'a renewal window longer than the validity: refused', diag=out)
    sys.exit(t.done())


if __name__ == '__main__':
    main()
