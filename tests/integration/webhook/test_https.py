#!/usr/bin/env python3
"""gpuslice-webhook over real HTTPS (Python ssl and curl) against the fake API server:
template creation (201, 409 idempotent, dryRun writes nothing), slices -> percentage
alternatives, API failures -> denial, plain HTTP and TLS 1.1 refused, 413/400/404/405,
certificate rotation picked up, metrics, clean SIGTERM exit (ASan leak check)."""
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import jsonpatch

from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import (DRIVER, GI, Webhook, free_port, make_cert, patch_of, pod, review,
                   slice_obj, write_kubeconfig)

warnings.filterwarnings('ignore', category=DeprecationWarning)
TOKEN = 'webhook-token'
JSON = {'Content-Type': 'application/json'}


def template_posts(api):
    return [r for r in api.requests(method='POST') if 'resourceclaimtemplates' in r['path']]


def check_admission(t, api, wh):
    seed = pod({'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '10240', 'nvidia.com/gpucores': '50'})
    status, resp = wh.mutate(review(seed))
    t.is_eq(status, 200, 'POST /mutate over TLS: 200')
    t.ok(resp['response']['allowed'], 'seed pod allowed')
    new = jsonpatch.apply_patch(seed, patch_of(resp))
    tpl_name = new['spec']['resourceClaims'][0]['resourceClaimTemplateName']
    tpl = api.get('resourceclaimtemplates', 'team-a', tpl_name)
    t.ok(tpl is not None, f'template {tpl_name} created in the pod namespace')
    if tpl:
        t.is_eq(tpl['spec']['spec']['devices']['requests'][0]['exactly'],
                {'deviceClassName': DRIVER, 'allocationMode': 'ExactCount', 'count': 1,
                 'capacity': {'requests': {'cores': '50', 'memory': '10Gi'}}},
                'created template carries the seed mapping')
    t.is_eq(len(template_posts(api)), 1, 'one create for the first pod of a shape')
    t.like(wh.output(), f'msg="claim template created" template=team-a/{tpl_name}',
           'creation logged')
    status, resp2 = wh.mutate(review(seed, uid='second'))
    t.is_eq(patch_of(resp2), patch_of(resp), 'same shape, same patch (same template name)')
    t.is_eq(len(template_posts(api)), 1, 'second pod of a known shape: no API call (cached)')
    t.is_eq(len(api.list('resourceclaims')), 0, 'no ResourceClaim created by the webhook')

    # 409: a template of this shape already exists (another replica created it).
    other = pod({'nvidia.com/gpumem': '2048'})
    _, dry = wh.mutate(review(other, uid='dry', dry=True))
    name2 = patch_of(dry)[0]['value'][0]['resourceClaimTemplateName']
    t.is_eq(len(template_posts(api)), 1, 'dryRun: no create request sent')
    t.ok(api.get('resourceclaimtemplates', 'team-a', name2) is None, 'dryRun: nothing written')
    spec2 = {'devices': {'requests': [{'name': 'gpu', 'exactly': {
        'deviceClassName': DRIVER, 'allocationMode': 'ExactCount', 'count': 1,
        'capacity': {'requests': {'memory': '2Gi'}}}}]}}
    digest = hashlib.sha256(json.dumps(spec2, sort_keys=True, separators=(',', ':'))
                            .encode()).hexdigest()
    t.is_eq(name2, 'gpuslice-' + digest[:20], 'template name = hash of the expected spec')
    api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate',
             'metadata': {'name': name2, 'namespace': 'team-a',
                          'annotations': {'gpuslice.io/claim-spec-sha256': digest}},
             'spec': {'spec': spec2}})
    status, resp3 = wh.mutate(review(other, uid='conflict'))
    posts = template_posts(api)
    t.is_eq([p['status'] for p in posts], [201, 409], 'existing template: create answered 409')
    t.ok(status == 200 and resp3['response']['allowed'], '409 AlreadyExists is success')
    t.is_eq(patch_of(resp3), patch_of(dry), 'dryRun and real request give the same patch')
    t.is_eq(len(api.requests(method='GET', match=name2)), 1,
            '409: the existing template is read once to check its spec hash')

    # A template of that name the webhook did not make (no hash annotation): denied, not used.
    squat = pod({'nvidia.com/gpumem': '3072'})
    _, dry3 = wh.mutate(review(squat, uid='dry3', dry=True))
    name3 = patch_of(dry3)[0]['value'][0]['resourceClaimTemplateName']
    api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate',
             'metadata': {'name': name3, 'namespace': 'team-a'},
             'spec': {'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {
                 'deviceClassName': DRIVER, 'allocationMode': 'All'}}]}}}})
    _, resp_sq = wh.mutate(review(squat, uid='squat'))
    r_sq = resp_sq['response']
    t.ok(not r_sq['allowed'], 'a foreign template under our name: denied')
    t.like(r_sq['status']['message'], f'ResourceClaimTemplate team-a/{name3} exists but was not '
           'made by gpuslice-webhook for this claim shape', 'denial says why')

    # Percentage: alternatives from our driver's slices only.
    pct = pod({'nvidia.com/gpumem-percentage': '25'})
    _, resp4 = wh.mutate(review(pct, uid='pct'))
    name4 = patch_of(resp4)[0]['value'][0]['resourceClaimTemplateName']
    tpl4 = api.get('resourceclaimtemplates', 'team-a', name4) or {}
    alts = tpl4.get('spec', {}).get('spec', {}).get('devices', {}).get('requests', [{}])[0] \
        .get('firstAvailable', [])
    t.is_eq([(a['name'], a['capacity']['requests']['memory']) for a in alts],
            [('gpu-15360mi', '3840Mi'), ('gpu-81920mi', '20Gi')],
            'percentage: one alternative per size of our driver (other drivers ignored)')

    # API failure on create: denied with a message naming the template; then recovers.
    api.fail_next(5, status=500, match='resourceclaimtemplates', method='POST')
    _, resp5 = wh.mutate(review(pod({'nvidia.com/gpucores': '7'}), uid='fail'))
    r5 = resp5['response']
    t.ok(not r5['allowed'] and r5['status']['code'] == 500, 'API 500 on create: denied (500)')
    t.like(r5['status']['message'], 'cannot create ResourceClaimTemplate team-a/gpuslice-',
           'denial names the template')
    api.fail_next(0)
    api.faults = []
    _, resp6 = wh.mutate(review(pod({'nvidia.com/gpucores': '7'}), uid='retry'))
    t.ok(resp6['response']['allowed'], 'next attempt succeeds')

    # The pod's own claim for our class (read through the API) is left alone.
    api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
             'metadata': {'name': 'my-gpu', 'namespace': 'team-a'},
             'spec': {'devices': {'requests': [{'name': 'g', 'exactly': {
                 'deviceClassName': DRIVER}}]}}})
    own = pod({'nvidia.com/gpu': '1'})
    own['spec']['resourceClaims'] = [{'name': 'mine', 'resourceClaimName': 'my-gpu'}]
    _, resp7 = wh.mutate(review(own, uid='own'))
    t.ok(resp7['response']['allowed'] and 'patch' not in resp7['response'],
         'pod with its own claim for our class: unchanged')
    t.like(' '.join(resp7['response'].get('warnings', [])), 'already has claim "mine"',
           'warning says why')
    # A DeviceClass mapping nvidia.com/gpu through extendedResourceName (issue 25): a pod asking
    # whole GPUs only is left to the scheduler; one asking memory is translated; both warned.
    api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
             'metadata': {'name': 'gpu.nvidia.com'},
             'spec': {'extendedResourceName': 'nvidia.com/gpu'}})
    _, resp8 = wh.mutate(review(pod({'nvidia.com/gpu': '1'}), uid='ern'))
    t.ok(resp8['response']['allowed'] and 'patch' not in resp8['response'],
         'extendedResourceName class present: a whole-GPU pod is left to the scheduler')
    t.like(' '.join(resp8['response'].get('warnings', [])),
           'DeviceClass gpu.nvidia.com maps nvidia.com/gpu through extendedResourceName',
           'admission warning names the DeviceClass')
    _, resp8 = wh.mutate(review(pod({'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1024'}),
                                uid='ern-mem'))
    t.ok(resp8['response']['allowed'] and 'patch' in resp8['response'],
         'extendedResourceName class present: a gpumem pod is still translated')
    t.like(' '.join(resp8['response'].get('warnings', [])),
           'DeviceClass gpu.nvidia.com maps nvidia.com/gpu through extendedResourceName',
           'admission warning names the DeviceClass (translated pod)')
    return resp


def check_transport(t, wh, tmp):
    cacert = wh.cert
    r = subprocess.run(['curl', '-sS', '--cacert', cacert, f'https://127.0.0.1:{wh.port}/healthz'],
                       capture_output=True, text=True)
    t.is_eq((r.returncode, r.stdout), (0, 'ok\n'), 'curl https /healthz: ok')
    body = os.path.join(tmp, 'review.json')
    with open(body, 'w') as f:
        json.dump(review(pod({'nvidia.com/gpu': '1'}), uid='curl'), f)
    r = subprocess.run(['curl', '-sS', '--cacert', cacert, '-H', 'Content-Type: application/json',
                        '--data-binary', '@' + body, f'https://127.0.0.1:{wh.port}/mutate'],
                       capture_output=True, text=True)
    ok = r.returncode == 0 and json.loads(r.stdout)['response']['uid'] == 'curl'
    t.ok(ok, 'curl POST /mutate: AdmissionReview answered', diag=r.stdout + r.stderr)
    r = subprocess.run(['curl', '-sS', '--tlsv1.2', '--tls-max', '1.2', '--cacert', cacert,
                        f'https://127.0.0.1:{wh.port}/healthz'], capture_output=True, text=True)
    t.is_eq(r.stdout, 'ok\n', 'TLS 1.2 accepted')
    r = subprocess.run(['curl', '-sS', '--tlsv1.3', '--cacert', cacert,
                        f'https://127.0.0.1:{wh.port}/healthz'], capture_output=True, text=True)
    t.is_eq(r.stdout, 'ok\n', 'TLS 1.3 accepted')
    # Plain HTTP: no HTTP answer, connection closed.
    r = subprocess.run(['curl', '-sS', '-m', '10', f'http://127.0.0.1:{wh.port}/healthz'],
                       capture_output=True, text=True)
    t.ok(r.returncode != 0 and r.stdout == '', 'curl plain http:// refused',
         diag=f'rc={r.returncode} out={r.stdout!r}')
    with socket.create_connection(('127.0.0.1', wh.port), timeout=10) as s:
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        data = b''
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    t.ok(not data.startswith(b'HTTP/'), 'raw plain-text request gets no HTTP response',
         diag=repr(data[:80]))
    check_tls11(t, wh)
    # Status codes.
    big = b'{"a":"' + b'x' * (3 * 1024 * 1024) + b'"}'
    # Refused from the headers alone: the body is never read.
    with socket.create_connection(('127.0.0.1', wh.port), timeout=10) as s:
        with wh.context().wrap_socket(s, server_hostname='localhost') as tls:
            tls.sendall(b'POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: '
                        b'application/json\r\nContent-Length: 3145729\r\n\r\n')
            head = b''
            try:
                while not head.endswith(b'\n') or b'\r\n\r\n' not in head or \
                        not head.split(b'\r\n\r\n', 1)[1]:
                    chunk = tls.recv(4096)
                    if not chunk:
                        break
                    head += chunk
            except (ssl.SSLError, OSError):
                pass
    t.ok(head.startswith(b'HTTP/1.1 413'), 'Content-Length over 3 MiB: 413 before the body',
         diag=head[:100])
    t.ok(head.endswith(b'request body exceeds 3145728 bytes (3 MiB)\n'), '413 says the limit')
    bigfile = os.path.join(tmp, 'big.json')
    with open(bigfile, 'wb') as f:
        f.write(big)
    r = subprocess.run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', cacert,
                        '--data-binary', '@' + bigfile, f'https://127.0.0.1:{wh.port}/mutate'],
                       capture_output=True)
    t.is_eq(r.stdout, b'413', 'curl body over 3 MiB: 413')
    r = subprocess.run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', cacert,
                        '-H', 'Transfer-Encoding: chunked', '-H', 'Content-Type: application/json',
                        '--data-binary', '@' + bigfile,
                        f'https://127.0.0.1:{wh.port}/mutate'], capture_output=True)
    t.is_eq(r.stdout, b'413', 'chunked body over 3 MiB: 413')
    status, ctype, text = wh.request('POST', '/mutate', b'{"apiVersion": ', JSON)
    t.is_eq(status, 400, 'malformed JSON: 400')
    t.like(text.decode(), 'AdmissionReview: invalid JSON at line 1, column 15',
           '400 says what is wrong and where')
    status, _, text = wh.request('POST', '/mutate', b'{"kind": "AdmissionReview"}', JSON)
    t.is_eq((status, text.decode()),
            (400, 'AdmissionReview: apiVersion "" is not admission.k8s.io/v1\n'),
            'wrong apiVersion: 400 naming the field')
    # Content-Type: application/json only (the API server always sends it).
    body = json.dumps(review(pod({'nvidia.com/gpu': '1'}), uid='ctype', dry=True)).encode()
    status, _, text = wh.request('POST', '/mutate', body, {'Content-Type': 'text/plain'})
    t.is_eq((status, text.decode()),
            (415, 'Content-Type "text/plain" is not supported: /mutate accepts '
                  'application/json\n'), 'Content-Type text/plain: 415 naming it')
    status, _, text = wh.request('POST', '/mutate', body, {'Content-Type': ''})
    t.is_eq(status, 415, 'empty Content-Type: 415')
    r = subprocess.run(['curl', '-sS', '-w', '\n%{http_code}', '--cacert', cacert, '-H',
                        'Content-Type:', '--data-binary', '@' + os.path.join(tmp, 'review.json'),
                        f'https://127.0.0.1:{wh.port}/mutate'], capture_output=True, text=True)
    t.is_eq(r.stdout, 'Content-Type is missing: /mutate accepts application/json\n\n415',
            'no Content-Type header: 415 saying so')
    status, _, _ = wh.request('POST', '/mutate', body,
                              {'Content-Type': 'Application/JSON; charset=utf-8'})
    t.is_eq(status, 200, 'application/json with a charset parameter (any case): accepted')
    t.is_eq(wh.request('GET', '/nope')[0], 404, 'unknown path: 404')
    t.is_eq(wh.request('GET', '/mutate')[0], 405, 'GET /mutate: 405')
    t.is_eq(wh.request('GET', '/healthz')[2], b'ok\n', '/healthz ok')
    t.is_eq(wh.request('GET', '/readyz')[2], b'ok\n', '/readyz ok')


def check_tls11(t, wh):
    """A TLS 1.1 client is refused. Control: the same client completes TLS 1.1 with a Python
    server that allows it, so the refusal is the webhook's."""
    def client_ctx():
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
        c.minimum_version = c.maximum_version = ssl.TLSVersion.TLSv1_1
        c.set_ciphers('DEFAULT:@SECLEVEL=0')
        return c

    def handshake(port):
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=10) as s:
                with client_ctx().wrap_socket(s) as tls:
                    return tls.version()
        except (ssl.SSLError, OSError) as e:
            return f'error: {e}'

    srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.minimum_version = srv.maximum_version = ssl.TLSVersion.TLSv1_1
    srv.set_ciphers('DEFAULT:@SECLEVEL=0')
    srv.load_cert_chain(wh.cert, wh.cert.replace('.crt', '.key'))
    ls = socket.socket()
    ls.bind(('127.0.0.1', 0))
    ls.listen(1)

    def serve():
        try:
            conn, _ = ls.accept()
            with srv.wrap_socket(conn, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    control = handshake(ls.getsockname()[1])
    th.join(10)
    ls.close()
    if control != 'TLSv1.1':
        t.skip('TLS 1.1 refused', f'this Python cannot speak TLS 1.1 ({control})')
        return
    got = handshake(wh.port)
    t.ok(got.startswith('error'), 'TLS 1.1 client refused by the webhook', diag=got)


def check_rotation(t, wh, tmp, cert, key):
    def served_der():
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
        with socket.create_connection(('127.0.0.1', wh.port), timeout=10) as s:
            with c.wrap_socket(s) as tls:
                return tls.getpeercert(binary_form=True)

    def der_of(path):
        return ssl.PEM_cert_to_DER_cert(open(path).read())

    t.is_eq(served_der(), der_of(cert), 'serving the initial certificate')
    reloads = wh.metric('gpuslice_webhook_tls_reloads_total')
    new_cert, new_key = make_cert(tmp, 'rotated', cn='rotated.gpuslice-system.svc')
    os.replace(new_key, key)
    os.replace(new_cert, cert)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and served_der() != der_of(cert):
        time.sleep(0.1)
    t.is_eq(served_der(), der_of(cert), 'rotated certificate served without a restart')
    status, _, body = wh.request('GET', '/healthz', ctx=ssl.create_default_context(cafile=cert))
    t.is_eq((status, body), (200, b'ok\n'), 'a client trusting only the new certificate connects')
    t.is_eq(wh.metric('gpuslice_webhook_tls_reloads_total'), reloads + 1, 'reload counted once')
    # A key that does not match: the previous pair stays in service, the error is counted.
    _, other_key = make_cert(tmp, 'mismatch')
    before = served_der()
    os.replace(other_key, key)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not wh.metric('gpuslice_webhook_tls_reload_errors_total'):
        served_der()
        time.sleep(0.1)
    t.ok(wh.metric('gpuslice_webhook_tls_reload_errors_total') >= 1,
         'mismatched key: reload error counted')
    t.is_eq(served_der(), before, 'mismatched key: previous certificate still served')
    t.like(wh.output(), 'does not match the certificate', 'reload failure logged with the reason')


def check_concurrency(t, api, wh):
    """8 clients x 10 requests over 5 shapes at once: every answer right, one template per shape;
    and a request stuck on a slow API call does not hold up another connection."""
    shapes = [pod({'nvidia.com/gpumem': str(1000 + i)}) for i in range(5)]
    results, lock = [], threading.Lock()

    def client(k):
        for j in range(10):
            status, resp = wh.mutate(review(shapes[(k + j) % 5], uid=f'c{k}-{j}'))
            with lock:
                results.append((status, resp['response']['uid'] == f'c{k}-{j}',
                                resp['response']['allowed'],
                                patch_of(resp)[0]['value'][0]['resourceClaimTemplateName']))
    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    t.is_eq(len(results), 80, 'concurrent: 80 answers')
    t.ok(all(r[0] == 200 and r[1] and r[2] for r in results), 'concurrent: all allowed, uids right')
    names = {r[3] for r in results}
    t.is_eq(len(names), 5, 'concurrent: one template name per shape')
    t.ok(all(api.get('resourceclaimtemplates', 'team-a', n) for n in names),
         'concurrent: every template exists')

    api.delay_next(1, 4.0, match='resourceclaimtemplates', method='POST')
    slow_done = threading.Event()

    slow_resp = []

    def slow():
        slow_resp.append(wh.mutate(review(pod({'nvidia.com/gpumem': '777'}), uid='slow'))[1])
        slow_done.set()
    th = threading.Thread(target=slow)
    before = len(template_posts(api))
    th.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(template_posts(api)) == before:
        time.sleep(0.02)  # until the slow create has reached the API server
    status, resp = wh.mutate(review(shapes[0], uid='fast'))
    t.ok(status == 200 and not slow_done.is_set(),
         'a cached shape is answered while another request waits on the API server')
    th.join(30)
    t.ok(slow_done.is_set() and slow_resp[0]['response']['allowed'],
         'the slow request completes too, allowed')


def check_drain(t, binary, tmp, kubeconfig):
    """SIGTERM: /readyz fails while /mutate still answers (endpoints drop the replica before the
    port closes); a second signal stops it at once, cleanly."""
    cert, key = make_cert(tmp, 'drain')
    wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp, extra=['--shutdown-delay', '5m'])
    try:
        wh.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and wh.request('GET', '/readyz')[0] != 500:
            time.sleep(0.05)
        t.is_eq(wh.request('GET', '/readyz')[:3:2], (500, b'shutting down\n'),
                'after SIGTERM: /readyz 500')
        status, resp = wh.mutate(review(pod({'nvidia.com/gpu': '1'}), uid='draining'))
        t.ok(status == 200 and resp['response']['allowed'], 'after SIGTERM: /mutate still served')
        wh.proc.send_signal(signal.SIGTERM)
        try:
            rc = wh.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        t.is_eq(rc, 0, 'second SIGTERM: stops without waiting out the delay, exit 0')
        t.like(wh.output(), 'msg="second signal, stopping now"', 'second signal logged')
    finally:
        wh.stop()


def check_incluster(t, binary, tmp):
    """No --kubeconfig: the in-cluster service account, against an https:// API server whose CA
    is the service account's ca.crt."""
    api_cert, api_key = make_cert(tmp, 'api', cn='kubernetes.default.svc')
    sa = os.path.join(tmp, 'serviceaccount')
    os.makedirs(sa)
    with open(os.path.join(sa, 'token'), 'w') as f:
        f.write('sa-token')
    with open(os.path.join(sa, 'namespace'), 'w') as f:
        f.write('gpuslice-system')
    with open(api_cert) as src, open(os.path.join(sa, 'ca.crt'), 'w') as dst:
        dst.write(src.read())
    with FakeAPI(token='sa-token', tls_cert=api_cert, tls_key=api_key) as api:
        env = {k: v for k, v in os.environ.items() if k != 'KUBECONFIG'}
        env.update(KUBERNETES_SERVICE_HOST='127.0.0.1', KUBERNETES_SERVICE_PORT=str(api.port),
                   GPUSLICE_SERVICEACCOUNT_DIR=sa)
        cert, key = make_cert(tmp, 'serving2')
        wh = Webhook(binary, cert, key, None, workdir=tmp, env=env)
        try:
            _, resp = wh.mutate(review(pod({'nvidia.com/gpu': '1'}), uid='incluster'))
            name = patch_of(resp)[0]['value'][0]['resourceClaimTemplateName']
            t.ok(resp['response']['allowed'] and
                 api.get('resourceclaimtemplates', 'team-a', name) is not None,
                 'in-cluster config, https:// API server: template created')
            t.like(wh.output(), f'server=https://127.0.0.1:{api.port} source=in-cluster',
                   'in-cluster API server logged')
        finally:
            rc = wh.stop()
            t.is_eq(rc, 0, 'in-cluster instance: clean exit')
            if rc != 0:
                t.diag(wh.output()[-6000:])


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token=TOKEN) as api:
        api.put(slice_obj('node-1-gpus', DRIVER, ['15Gi', '80Gi', '15Gi']))
        api.put(slice_obj('node-2-gpus', DRIVER, ['80Gi'], node='node-2'))
        api.put(slice_obj('other-vendor', 'gpu.example.com', ['24Gi'], node='node-3'))
        cert, key = make_cert(tmp)
        kubeconfig = write_kubeconfig(tmp, api.url, TOKEN)
        wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp,
                     extra=['--api-timeout', '10s', '--class-cache-ttl', '1ms'])
        try:
            t.run('admission', check_admission, t, api, wh)
            t.run('transport', check_transport, t, wh, tmp)
            t.run('concurrency', check_concurrency, t, api, wh)
            t.is_eq(wh.metric('gpuslice_webhook_admissions_total{outcome="denied"}'), 2.0,
                    'metrics: both denials counted')
            t.ok(wh.metric('gpuslice_webhook_admissions_total{outcome="mutated"}') >= 7,
                 'metrics: mutations counted')
            t.ok(wh.metric('gpuslice_webhook_mutate_duration_seconds_count') >= 9,
                 'metrics: latency histogram observed')
            t.run('rotation', check_rotation, t, wh, tmp, cert, key)
        finally:
            rc = wh.stop()
            t.is_eq(rc, 0, 'SIGTERM: clean exit (no sanitizer report)')
            if rc != 0:
                t.diag(wh.output()[-4000:])
        t.run('in-cluster', check_incluster, t, binary, tmp)
        t.run('drain', check_drain, t, binary, tmp, kubeconfig)
        # Startup errors are clear and name the option or file.
        r = subprocess.run([binary, '--listen', 'nope'], capture_output=True, text=True)
        t.is_eq((r.returncode, r.stderr.strip()),
                (2, 'gpuslice-webhook: --listen: "nope" is not host:port'), 'bad --listen')
        r = subprocess.run([binary, '--resource-cores'], capture_output=True, text=True)
        t.is_eq((r.returncode, r.stderr.strip()),
                (2, 'gpuslice-webhook: --resource-cores: missing value'), 'missing value')
        r = subprocess.run([binary, '--listen', f'127.0.0.1:{free_port()}', '--kubeconfig',
                            kubeconfig, '--tls-cert-file', os.path.join(tmp, 'absent.crt'),
                            '--tls-key-file', key], capture_output=True, text=True)
        t.ok(r.returncode == 1 and 'absent.crt: No such file or directory' in r.stderr,
             'missing certificate file: exit 1 naming the file', diag=r.stderr)
        r = subprocess.run([binary, '--print-config', '--resource-mem', 'example.com/vmem'],
                           capture_output=True, text=True)
        t.ok(r.returncode == 0 and 'resource-mem: "example.com/vmem"' in r.stdout
             and 'listen: ":8443"' in r.stdout, '--print-config shows the effective options')
    sys.exit(t.done())


if __name__ == '__main__':
    main()
