"""Helpers for the gpuslice-extender integration tests: a fake API server, extender processes,
Node and Pod objects as HAMi's device plugin and users write them, and kube-scheduler's
extender calls (ExtenderArgs / ExtenderBindingArgs JSON, k8s.io/kube-scheduler/extender/v1)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get('GS_SOURCE_ROOT', '.'), 'tests', 'lib'))
from fakeapi import FakeAPI  # noqa: E402

EXTENDER = os.environ.get('GS_EXTENDER', '')


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


def kubeconfig(api_url, path):
    with open(path, 'w') as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{api_url}"}}}}]
users: [{{name: u, user: {{token: t0k3n}}}}]
contexts: [{{name: c, context: {{cluster: fake, user: u}}}}]
current-context: c
""")
    return path


class Extender:
    def __init__(self, api, *extra, env=None):
        self.dir = tempfile.mkdtemp(prefix='gs-ext-')
        self.port = free_port()
        kc = kubeconfig(api.url, os.path.join(self.dir, 'kubeconfig'))
        self.log = open(os.path.join(self.dir, 'stderr'), 'w+')
        self.proc = subprocess.Popen([EXTENDER, f'--listen=127.0.0.1:{self.port}',
                                      f'--kubeconfig={kc}', *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})})
        self.url = f'http://127.0.0.1:{self.port}'
        for _ in range(200):
            try:
                if self.get('/healthz')[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f'extender did not start: {self.output()}')

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def request(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def get(self, path):
        return self.request('GET', path)

    def post(self, path, body):
        code, text = self.request('POST', path, body)
        return code, (json.loads(text) if code == 200 else text)

    def stop(self):
        """SIGTERM; the exit status (a sanitizer report makes it non-zero). The temporary folder
        is removed when the exit was clean."""
        self.proc.terminate()
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.close()
        if rc == 0:
            shutil.rmtree(self.dir, True)
        return rc


def gpu(uuid, mem, product='Tesla T4', index=0, count=10, cores=100, numa=0, health=True):
    return {'id': uuid, 'index': index, 'count': count, 'devmem': mem, 'devcore': cores,
            'type': f'NVIDIA-{product}', 'numa': numa, 'mode': 'hami-core', 'health': health}


def node(name, gpus, colon=False):
    """A Node as HAMi's device plugin leaves it (current JSON encoding, or the older one:
    EncodeNodeDevices, HAMi v2.6.0 pkg/util/util.go — index before mode)."""
    if colon:
        reg = ''.join(f"{g['id']},{g['count']},{g['devmem']},{g['devcore']},{g['type']},"
                      f"{g['numa']},{'true' if g['health'] else 'false'},{g['index']},"
                      f"{g['mode']}:" for g in gpus)
    else:
        reg = json.dumps(gpus)
    ann = {'hami.io/node-nvidia-register': reg} if gpus is not None else {}
    if gpus is not None:
        ann['hami.io/node-handshake'] = 'Reported ' + time.strftime('%Y-%m-%d %H:%M:%S')
    return {'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': name, 'annotations': ann,
                         'labels': {'kubernetes.io/hostname': name}},
            'status': {'allocatable': {'nvidia.com/gpu': str(10 * len(gpus or []))}}}


def pod(name, containers, annotations=None, ns='default', init=None):
    """containers (and init: init containers): list of dicts of limits (e.g. {'nvidia.com/gpu':
    1, 'nvidia.com/gpumem': 8000}) — None for a container without GPU resources."""
    def ctrs(lims, prefix):
        out = []
        for i, lim in enumerate(lims or []):
            c = {'name': f'{prefix}{i}', 'image': 'cuda:12'}
            if lim:
                c['resources'] = {'limits': {k: str(v) for k, v in lim.items()}}
            out.append(c)
        return out
    spec = {'schedulerName': 'hami-scheduler', 'containers': ctrs(containers, 'c')}
    if init:
        spec['initContainers'] = ctrs(init, 'init')
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': ns, 'annotations': annotations or {}},
            'spec': spec}


def create(api, obj):
    """Store through the API (uid, resourceVersion) and return the stored object."""
    api.put(obj)
    md = obj['metadata']
    plural = 'pods' if obj['kind'] == 'Pod' else 'nodes'
    return api.get(plural, md.get('namespace'), md['name'])


def filter_args(p, nodes, by_name):
    if by_name:
        return {'pod': p, 'nodenames': [n['metadata']['name'] for n in nodes]}
    return {'pod': p, 'nodes': {'items': nodes}}


def bind_args(p, node_name):
    md = p['metadata']
    return {'podName': md['name'], 'podNamespace': md['namespace'], 'podUID': md['uid'],
            'node': node_name}
