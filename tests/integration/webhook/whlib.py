"""Helpers for the webhook's integration tests and bench: certificates made with openssl, free
loopback ports, a kubeconfig for the fake API server, and the running webhook process."""
import base64
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time

DRIVER = 'hami-core-gpu.project-hami.io'
GI = 1024 ** 3


def make_cert(directory, name='serving', cn='gpuslice-webhook.gpuslice-system.svc'):
    """Self-signed EC certificate for localhost/127.0.0.1; returns (cert, key) paths."""
    cert, key = os.path.join(directory, name + '.crt'), os.path.join(directory, name + '.key')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                    'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
                    '-days', '1', '-subj', '/CN=' + cn, '-addext',
                    'subjectAltName=DNS:localhost,IP:127.0.0.1'],
                   check=True, capture_output=True)
    return cert, key


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def write_kubeconfig(directory, server, token):
    path = os.path.join(directory, 'kubeconfig')
    with open(path, 'w') as f:
        json.dump({'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'test',
                   'clusters': [{'name': 'fake', 'cluster': {'server': server}}],
                   'users': [{'name': 'webhook', 'user': {'token': token}}],
                   'contexts': [{'name': 'test', 'context': {'cluster': 'fake',
                                                             'user': 'webhook'}}]}, f)
    return path


def slice_obj(name, driver, sizes, node='node-1'):
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
            'metadata': {'name': name},
            'spec': {'driver': driver, 'nodeName': node,
                     'pool': {'name': node, 'generation': 1, 'resourceSliceCount': 1},
                     'devices': [{'name': f'hami-gpu-{i}',
                                  'attributes': {'productName': {'string': 'GPU'}},
                                  'capacity': {'memory': {'value': s},
                                               'cores': {'value': '100'}}}
                                 for i, s in enumerate(sizes)]}}


def review(pod, uid='7b1c0f7e-4c1e-4df1-9a55-6f0a2b7d9e01', op='CREATE', ns='team-a',
           dry=False):
    return {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
            'request': {'uid': uid, 'kind': {'group': '', 'version': 'v1', 'kind': 'Pod'},
                        'resource': {'group': '', 'version': 'v1', 'resource': 'pods'},
                        'namespace': ns, 'operation': op, 'object': pod, 'dryRun': dry,
                        'userInfo': {'username': 'alice'}}}


def pod(limits, name='trainer', annotations=None):
    p = {'apiVersion': 'v1', 'kind': 'Pod',
         'metadata': {'generateName': name + '-', 'namespace': 'team-a'},
         'spec': {'containers': [{'name': 'main', 'image': 'cuda:12',
                                  'resources': {'limits': limits}}]}}
    if annotations:
        p['metadata']['annotations'] = annotations
    return p


class Webhook:
    """The gpuslice-webhook process on 127.0.0.1:<free port> (HTTPS), probes on
    127.0.0.1:<another free port> (plain HTTP)."""

    def __init__(self, binary, cert, key, kubeconfig, extra=None, workdir=None, env=None):
        self.cert = cert
        for attempt in range(3):
            # The free port can be taken by someone else before the webhook binds it: retry.
            self.port = free_port()
            self.health_port = free_port()
            self.log_path = os.path.join(workdir or tempfile.gettempdir(),
                                         f'webhook-{self.port}.log')
            self.log = open(self.log_path, 'w')
            args = [binary, '--listen', f'127.0.0.1:{self.port}', '--tls-cert-file', cert,
                    '--tls-key-file', key, '--cert-check-interval', '100ms',
                    '--shutdown-delay', '0s',
                    '--health-listen', f'127.0.0.1:{self.health_port}'] + (extra or [])
            if kubeconfig:
                args += ['--kubeconfig', kubeconfig]
            self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                         env=env)
            try:
                self.wait_ready()
                return
            except RuntimeError:
                if attempt == 2 or 'cannot serve' not in self.output():
                    raise
                self.stop()

    def context(self, cafile=None):
        ctx = ssl.create_default_context(cafile=cafile or self.cert)
        return ctx

    def wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f'webhook exited with {self.proc.returncode}: '
                                   + open(self.log_path).read())
            try:
                status, _, _ = self.request('GET', '/readyz')
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError('webhook not ready: ' + open(self.log_path).read())

    def request(self, method, path, body=None, headers=None, ctx=None, source=None, timeout=20):
        """One HTTPS request on a new connection; `source` = local address to connect from
        (another loopback address is another client)."""
        import http.client
        conn = http.client.HTTPSConnection('127.0.0.1', self.port, timeout=timeout,
                                           context=ctx or self.context(),
                                           source_address=(source, 0) if source else None)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.getheader('Content-Type'), r.read()
        finally:
            conn.close()

    def health_request(self, method, path, source=None, timeout=20):
        """One plain-HTTP request to the probe listener."""
        import http.client
        conn = http.client.HTTPConnection('127.0.0.1', self.health_port, timeout=timeout,
                                          source_address=(source, 0) if source else None)
        try:
            conn.request(method, path)
            r = conn.getresponse()
            return r.status, r.getheader('Content-Type'), r.read()
        finally:
            conn.close()

    def mutate(self, rv):
        status, ctype, body = self.request('POST', '/mutate', json.dumps(rv).encode(),
                                           {'Content-Type': 'application/json'})
        return status, json.loads(body) if ctype == 'application/json' else body.decode()

    def metric(self, line_prefix):
        _, _, body = self.request('GET', '/metrics')
        for line in body.decode().splitlines():
            if line.startswith(line_prefix + ' '):
                return float(line.split()[-1])
        return None

    def stop(self):
        """SIGTERM; returns the exit status (ASan leak reports make it non-zero)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def output(self):
        with open(self.log_path) as f:
            return f.read()


def patch_of(resp):
    return json.loads(base64.b64decode(resp['response']['patch']))
