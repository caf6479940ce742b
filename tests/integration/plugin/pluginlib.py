"""Helpers of the kubelet-plugin integration tests: a kubelet emulator (plugin registration
watcher + DRA gRPC client over the real protocol), a plugin runner on the fake API server and on
gpusim, schema validators, and allocated-claim fixtures.

    with PluginEnv(tap) as env:          # fake API + temp dirs, plugin not started yet
        env.start()                      # runs $GS_PLUGIN; waits for the registration socket
        info = env.kubelet.register()    # GetInfo + NotifyRegistrationStatus
        env.api.put(claim(...))
        resp = env.kubelet.prepare('v1', [claim_ref])
"""
import atexit
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

import grpc
import jsonschema

import fakeapi
from fakeapi import FakeAPI
import gstest
from gstest import env_paths, reference_json, reference_path


DRIVER = 'hami-core-gpu.project-hami.io'
NODE = 'hami-workshop'
TOKEN = 'plugin-test-token'

_protos = None


def protos():
    """Compile proto/*.proto with grpc_tools into a temporary directory and import them."""
    global _protos
    if _protos:
        return _protos
    src = os.path.join(env_paths()['GS_SOURCE_ROOT'], 'proto')
    out = tempfile.mkdtemp(prefix='gs-proto-')
    atexit.register(shutil.rmtree, out, True)
    from grpc_tools import protoc  # noqa: PLC0415 - only needed here
    files = sorted(glob.glob(os.path.join(src, '*.proto')))
    rc = protoc.main(['protoc', f'-I{src}', f'--python_out={out}', f'--grpc_python_out={out}']
                     + files)
    if rc != 0:
        raise RuntimeError(f'grpc_tools.protoc failed on {files}')
    sys.path.insert(0, out)
    import dra_v1_pb2  # noqa: PLC0415
    import dra_v1_pb2_grpc  # noqa: PLC0415
    import dra_v1beta1_pb2  # noqa: PLC0415
    import dra_v1beta1_pb2_grpc  # noqa: PLC0415
    import pluginregistration_v1_pb2  # noqa: PLC0415
    import pluginregistration_v1_pb2_grpc  # noqa: PLC0415
    _protos = {
        'v1': (dra_v1_pb2, dra_v1_pb2_grpc),
        'v1beta1': (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc),
        'reg': (pluginregistration_v1_pb2, pluginregistration_v1_pb2_grpc),
    }
    return _protos


# ---- schemas -------------------------------------------------------------------------------------

def slice_validator():
    """Draft 7 validator of the strict ResourceSlice schema; None without the reference data
    (use t.valid(), which then skips the schema oracle and says so once)."""
    schema = reference_json('k8s-json-schema', 'resourceslice-resource-v1.json')
    return jsonschema.Draft7Validator(schema) if schema else None


def cdi_validator():
    """Validator of the CDI spec schema (+ defs.json); None without the reference data."""
    base = reference_path('cdi')
    if base is None:
        return None
    with open(os.path.join(base, 'schema.json')) as f:
        schema = json.load(f)
    with open(os.path.join(base, 'defs.json')) as f:
        defs = json.load(f)
    store = {'defs.json': defs, 'file://' + os.path.join(base, 'defs.json'): defs}
    resolver = jsonschema.RefResolver(base_uri='file://' + base + '/', referrer=schema,
                                      store=store)
    return jsonschema.Draft7Validator(schema, resolver=resolver)


def schema_errors(validator, obj):
    return gstest.schema_errors(validator, obj)


# ---- fixtures ------------------------------------------------------------------------------------

def claim(name, ns='test-dra', results=None, uid=None, allocated=True):
    """A ResourceClaim; `results` = [(request, device, cores, memory)] of our driver (cores or
    memory None = no consumedCapacity entry)."""
    obj = {
        'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
        'metadata': {'name': name, 'namespace': ns, 'uid': uid or str(uuid.uuid4())},
        'spec': {'devices': {'requests': [
            {'name': r[0], 'exactly': {'deviceClassName': DRIVER, 'allocationMode': 'ExactCount',
                                       'count': 1}} for r in (results or [])]}},
    }
    if allocated:
        res = []
        for (req, dev, cores, mem) in results or []:
            r = {'request': req, 'driver': DRIVER, 'pool': NODE, 'device': dev,
                 'shareID': str(uuid.uuid4())}
            cc = {}
            if cores is not None:
                cc['cores'] = str(cores)
            if mem is not None:
                cc['memory'] = mem
            if cc:
                r['consumedCapacity'] = cc
            res.append(r)
        obj['status'] = {'allocation': {'devices': {'results': res}}}
    return obj


def ref(c):
    md = c['metadata']
    return (md['namespace'], md['name'], md['uid'])


# ---- kubelet emulator ----------------------------------------------------------------------------

class Kubelet:
    """What kubelet does with a DRA plugin, over the real gRPC protocol."""

    def __init__(self, registrar_dir):
        self.registrar_dir = registrar_dir
        self.endpoint = None
        self._channels = []

    def wait_socket(self, timeout=20.0):
        """Watch the registrar directory for a *-reg.sock (as kubelet's plugin watcher does)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            socks = glob.glob(os.path.join(self.registrar_dir, '*-reg.sock'))
            if socks:
                return socks[0]
            time.sleep(0.05)
        return None

    def channel(self, path):
        ch = grpc.insecure_channel('unix:' + path)
        self._channels.append(ch)
        return ch

    def get_info(self, sock, timeout=1.0):
        pb, pbg = protos()['reg']
        stub = pbg.RegistrationStub(self.channel(sock))
        return stub.GetInfo(pb.InfoRequest(), timeout=timeout)

    def register(self, timeout=20.0):
        sock = self.wait_socket(timeout)
        if not sock:
            raise RuntimeError('no registration socket appeared')
        pb, pbg = protos()['reg']
        stub = pbg.RegistrationStub(self.channel(sock))
        # A socket left by a killed plugin may still be there: wait until the new one answers.
        info = stub.GetInfo(pb.InfoRequest(), timeout=20, wait_for_ready=True)
        stub.NotifyRegistrationStatus(pb.RegistrationStatus(plugin_registered=True), timeout=5)
        self.endpoint = info.endpoint
        return sock, info

    def _stub(self, version):
        pb, pbg = protos()[version]
        return pb, pbg.DRAPluginStub(self.channel(self.endpoint))

    def prepare(self, version, refs, timeout=30):
        pb, stub = self._stub(version)
        req = pb.NodePrepareResourcesRequest(
            claims=[pb.Claim(namespace=ns, name=name, uid=uid) for (ns, name, uid) in refs])
        return stub.NodePrepareResources(req, timeout=timeout)

    def unprepare(self, version, refs, timeout=30):
        pb, stub = self._stub(version)
        req = pb.NodeUnprepareResourcesRequest(
            claims=[pb.Claim(namespace=ns, name=name, uid=uid) for (ns, name, uid) in refs])
        return stub.NodeUnprepareResources(req, timeout=timeout)

    def raw_call(self, method, payload, timeout=10):
        """Send raw bytes to a method (for garbled/oversize messages)."""
        ch = self.channel(self.endpoint)
        fn = ch.unary_unary(method, request_serializer=lambda b: b,
                            response_deserializer=lambda b: b)
        return fn(payload, timeout=timeout)

    def close(self):
        for ch in self._channels:
            ch.close()
        self._channels = []


# ---- plugin runner -------------------------------------------------------------------------------

class PluginEnv:
    """Temp dirs + fake API server + one plugin process (restartable)."""

    def __init__(self, tap, api=None, gpusim_preset='t4', extra_args=None, sim_state=None,
                 use_kubeconfig=True, extra_env=None):
        self.tap = tap
        self.paths = env_paths()
        self.tmp = tempfile.mkdtemp(prefix='gs-plugin-it-')
        self.dirs = {k: os.path.join(self.tmp, k) for k in
                     ('registrar', 'plugin', 'cdi', 'state', 'host')}
        for d in self.dirs.values():
            os.makedirs(d, exist_ok=True)
        self.api = api or FakeAPI(token=TOKEN).start()
        self.own_api = api is None
        self.kubeconfig = os.path.join(self.tmp, 'kubeconfig')
        with open(self.kubeconfig, 'w') as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: {self.api.url}
contexts:
- name: fake
  context:
    cluster: fake
    user: tester
current-context: fake
users:
- name: tester
  user:
    token: {TOKEN}
""")
        self.preset = gpusim_preset
        self.sim_state = sim_state or os.path.join(self.tmp, 'gpusim.state')
        self.extra_args = list(extra_args or [])
        self.use_kubeconfig = use_kubeconfig
        self.extra_env = dict(extra_env or {})
        self.proc = None
        self.log_path = os.path.join(self.tmp, 'plugin.log')
        self.metrics_port = None
        self.kubelet = Kubelet(self.dirs['registrar'])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def env(self):
        e = dict(os.environ)
        sim = self.paths['GS_SIM_DIR']
        e['LD_LIBRARY_PATH'] = sim + (':' + e['LD_LIBRARY_PATH'] if e.get('LD_LIBRARY_PATH')
                                      else '')
        e['GPUSIM_PRESET'] = self.preset
        e['GPUSIM_STATE'] = self.sim_state
        e.pop('NODE_NAME', None)
        e.pop('KUBECONFIG', None)
        for k in ('KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT',
                  'GPUSLICE_SERVICEACCOUNT_DIR'):
            e.pop(k, None)
        e.update(self.extra_env)
        return e

    def args(self, fault_point=None, extra=None):
        a = [self.paths['GS_PLUGIN'],
             '--node-name', NODE,
             '--registrar-dir', self.dirs['registrar'],
             '--plugin-dir', self.dirs['plugin'],
             '--cdi-root', self.dirs['cdi'],
             '--state-dir', self.dirs['state'],
             '--host-dir', self.dirs['host'],
             '--sysfs-root', os.path.join(self.tmp, 'sys'),
             '--healthcheck-port', '0',
             '--metrics-addr', f'127.0.0.1:{self.metrics_port or 0}',
             '--reconcile-interval', '0',
             '--discovery-interval', '0',
             '--resync-interval', '5m']
        if self.use_kubeconfig:
            a += ['--kubeconfig', self.kubeconfig]
        if os.path.exists(self.paths['GS_VGPU_LIB']):
            a += ['--vgpu-lib', self.paths['GS_VGPU_LIB']]
        if fault_point:
            a += ['--fault-point', fault_point]
        return a + self.extra_args + list(extra or [])

    def start(self, fault_point=None, extra=None, wait=True, metrics=False):
        if metrics and not self.metrics_port:
            self.metrics_port = free_port()
        self.logf = open(self.log_path, 'a')
        self.proc = subprocess.Popen(self.args(fault_point, extra), stdout=self.logf,
                                     stderr=subprocess.STDOUT, env=self.env())
        if wait:
            if not self.kubelet.wait_socket(20):
                raise RuntimeError('plugin did not create its registration socket:\n'
                                   + self.log())
            self.kubelet.register()
        return self.proc

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''

    def wait_exit(self, timeout=20):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, sig=signal.SIGTERM):
        self.kubelet.close()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode if self.proc else None
        if self.proc:
            self.logf.close()
        self.proc = None
        return rc

    def close(self):
        # A plugin the test left running is stopped here, and its exit status asserted: an ASan
        # or UBSan report at exit (or a crash on SIGTERM) makes it non-zero and must not go
        # unseen. A test that stops, kills or waits for the plugin checks that status itself.
        if self.proc is not None and self.proc.poll() is None:
            rc = self.stop()
            self.tap.is_eq(rc, 0, 'teardown: the plugin exits 0 on SIGTERM')
        else:
            self.stop()
        if self.own_api:
            self.api.stop()
        subprocess.run(['rm', '-rf', self.tmp], check=False)

    # -- what the plugin left on disk --
    def files(self):
        out = []
        for base in ('cdi', 'host', 'state'):
            for root, dirs, files in os.walk(self.dirs[base]):
                for n in files + dirs:
                    out.append(os.path.relpath(os.path.join(root, n), self.tmp))
        return sorted(out)

    def claim_files(self):
        """Files that belong to claims (CDI specs, claim dirs, temporaries)."""
        return [f for f in self.files()
                if (f.startswith('cdi/') or f.startswith('host/claims/')) and
                not (f.startswith('cdi/.gpuslice-') and f.endswith('.lock'))]  # the instance lock

    def checkpoint(self):
        try:
            with open(os.path.join(self.dirs['state'], 'checkpoint.json')) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def cdi_spec_errors(self):
        """Schema errors of every CDI spec this plugin wrote (CDI schema + defs.json); None
        without the reference data (pass to t.no_schema_errors)."""
        v = cdi_validator()
        if v is None:
            return None
        errs = []
        for path in sorted(glob.glob(os.path.join(self.dirs['cdi'], f'k8s.{DRIVER}-claim_*.json'))):
            with open(path) as f:
                errs += [f'{os.path.basename(path)}: {e}' for e in schema_errors(v, json.load(f))]
        return errs

    def slice_errors(self):
        """Strict-schema errors of every ResourceSlice of this node; None without the reference
        data (pass to t.no_schema_errors)."""
        v = slice_validator()
        if v is None:
            return None
        return [f"{s['metadata']['name']}: {e}" for s in self.slices() for e in schema_errors(v, s)]

    def slices(self):
        return [s for s in self.api.list('resourceslices')
                if s['spec'].get('nodeName') == NODE and s['spec'].get('driver') == DRIVER]

    def wait_slices(self, pred, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.slices()
            if pred(s):
                return s
            time.sleep(0.05)
        return self.slices()

    def metrics(self):
        with urllib.request.urlopen(f'http://127.0.0.1:{self.metrics_port}/metrics',
                                    timeout=5) as r:
            return r.read().decode()

    def api_request(self, method, path, body=None):
        req = urllib.request.Request(self.api.url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={'Authorization': f'Bearer {TOKEN}',
                                              'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b'null')
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b'null')


def free_port():
    import socket  # noqa: PLC0415
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def gpusim_available():
    sim = env_paths()['GS_SIM_DIR']
    return os.path.exists(os.path.join(sim, 'libnvidia-ml.so.1'))


def wait_for(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def run_threads(fns):
    """Run callables concurrently; returns their results (exceptions are returned as values)."""
    results = [None] * len(fns)

    def wrap(i, fn):
        try:
            results[i] = fn()
        except Exception as e:  # noqa: BLE001
            results[i] = e
    ts = [threading.Thread(target=wrap, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return results
