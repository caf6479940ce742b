"""Helpers of the end-to-end acceptance tests: the cluster's actors played over their real
interfaces.

- the API server: tests/lib/fakeapi.py, spoken to over HTTP with a bearer token (`Api`);
- the kubelet plugin: the real binary, started and driven by the plugin tests' kubelet emulator
  (tests/integration/plugin/pluginlib.py: registration watcher + DRA gRPC client), on gpusim;
- kube-scheduler: `gpuslice schedule` over the objects fetched from the API, one pod per
  scheduling cycle, results written back to each claim's status (`schedule_pod`);
- kube-controller-manager's resourceclaim controller: a claim per pod from its template, owned
  by the pod (`claims_from_templates`);
- the container runtime: a CDI device's containerEdits applied to a process (`Pod`): bind mounts
  in a private mount namespace (`unshare -rm`, tests/integration/plugin/cdi_exec.py) when the
  machine allows it, else env + libvgpu and the limits directory by their host paths.
"""
import atexit
import copy
import json
import shutil
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, 'plugin'))
sys.path.insert(0, os.path.join(TESTS, 'webhook'))

import pluginlib as pl  # noqa: E402
import whlib  # noqa: E402,F401 - re-exported for the webhook scenario
from gstest import env_paths, sanitizer_runtime  # noqa: E402

DRIVER = pl.DRIVER


def _load_protos():
    """pluginlib.protos() compiles the .proto files into a temporary directory it keeps; remove
    it when the test exits (the modules are loaded by then)."""
    before = set(sys.path)
    pl.protos()
    for d in set(sys.path) - before:
        if os.path.basename(d).startswith('gs-proto-'):
            atexit.register(shutil.rmtree, d, True)


_load_protos()
GROUP = '/apis/resource.k8s.io/v1'
CDI_EXEC = os.path.join(TESTS, 'plugin', 'cdi_exec.py')
PATHS = env_paths()

# Where each kind lives: (path prefix, namespaced).
KINDS = {
    'ResourceSlice': (GROUP, 'resourceslices', False),
    'DeviceClass': (GROUP, 'deviceclasses', False),
    'ResourceClaim': (GROUP, 'resourceclaims', True),
    'ResourceClaimTemplate': (GROUP, 'resourceclaimtemplates', True),
    'Pod': ('/api/v1', 'pods', True),
}
API_VERSIONS = {'Pod': 'v1'}


def missing_binaries():
    """Names of the built artifacts the scenarios need that are not there."""
    need = {'gpusim': os.path.join(PATHS['GS_SIM_DIR'], 'libnvidia-ml.so.1'),
            'libcuda.so.1': os.path.join(PATHS['GS_SIM_DIR'], 'libcuda.so.1'),
            'libvgpu.so': PATHS['GS_VGPU_LIB'], 'gpuslice': PATHS['GS_GPUSLICE'],
            'gpusim-smi': PATHS['GS_GPUSIM_SMI'], 'gpuslice-kubelet-plugin': PATHS['GS_PLUGIN']}
    return [n for n, p in need.items() if not os.path.exists(p)]


# ---- API server client ---------------------------------------------------------------------------

class ApiError(Exception):
    def __init__(self, status, body, what):
        msg = body.get('message') if isinstance(body, dict) else body
        super().__init__(f'{what}: HTTP {status}: {msg}')
        self.status = status
        self.body = body


class Api:
    """A client of the (fake) API server over HTTP, as kubectl and the controllers are."""

    def __init__(self, url, token):
        self.url = url
        self.token = token

    def request(self, method, path, body=None):
        req = urllib.request.Request(
            self.url + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={'Authorization': f'Bearer {self.token}',
                     'Content-Type': 'application/json', 'Accept': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, json.loads(r.read() or b'null')
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw or b'null')
            except ValueError:
                return e.code, raw.decode(errors='replace')

    @staticmethod
    def path(kind, ns=None, name=None, sub=None):
        prefix, plural, namespaced = KINDS[kind]
        p = prefix + (f'/namespaces/{ns}' if namespaced and ns else '') + '/' + plural
        if name:
            p += '/' + name
        if sub:
            p += '/' + sub
        return p

    def _ok(self, method, path, body=None):
        status, obj = self.request(method, path, body)
        if status >= 300:
            raise ApiError(status, obj, f'{method} {path}')
        return obj

    def apply(self, obj):
        """kubectl create: POST into the object's namespace."""
        md = obj.get('metadata', {})
        return self._ok('POST', self.path(obj['kind'], md.get('namespace')), obj)

    def get(self, kind, ns, name):
        return self._ok('GET', self.path(kind, ns, name))

    def list(self, kind, ns=None):
        """Items with kind/apiVersion filled in, as `kubectl get -o json` prints them."""
        items = self._ok('GET', self.path(kind, ns))['items']
        for i in items:
            i['kind'] = kind
            i['apiVersion'] = API_VERSIONS.get(kind, 'resource.k8s.io/v1')
        return items

    def delete(self, kind, ns, name):
        return self._ok('DELETE', self.path(kind, ns, name))

    def update_status(self, obj):
        md = obj['metadata']
        return self._ok('PUT', self.path(obj['kind'], md.get('namespace'), md['name'], 'status'),
                        obj)


# ---- kube-controller-manager: claims from templates ----------------------------------------------

def claims_from_templates(api, pod):
    """What the resourceclaim controller does for a pod: one ResourceClaim per
    `resourceClaimTemplateName` entry, named `<pod>-<entry>-<suffix>`, owned by the pod, with the
    template's spec; the pod's status.resourceClaimStatuses says which claim is whose. Returns the
    pod as updated."""
    ns = pod['metadata']['namespace']
    statuses = []
    for pc in pod['spec'].get('resourceClaims', []):
        tname = pc.get('resourceClaimTemplateName')
        if not tname:
            continue
        tpl = api.get('ResourceClaimTemplate', ns, tname)
        claim = {
            'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
            'metadata': {
                'generateName': f"{pod['metadata']['name']}-{pc['name']}-",
                'namespace': ns,
                'annotations': {'resource.kubernetes.io/pod-claim-name': pc['name']},
                'labels': dict(tpl['spec'].get('metadata', {}).get('labels', {})),
                'ownerReferences': [{'apiVersion': 'v1', 'kind': 'Pod',
                                     'name': pod['metadata']['name'],
                                     'uid': pod['metadata']['uid'], 'controller': True,
                                     'blockOwnerDeletion': True}]},
            'spec': copy.deepcopy(tpl['spec']['spec']),
        }
        made = api.apply(claim)
        statuses.append({'name': pc['name'], 'resourceClaimName': made['metadata']['name']})
    if statuses:
        pod = copy.deepcopy(pod)
        pod.setdefault('status', {})['resourceClaimStatuses'] = statuses
        pod = api.update_status(pod)
    return pod


def pod_claim_names(pod):
    """The ResourceClaim names a pod uses (direct references and generated ones)."""
    out = [pc['resourceClaimName'] for pc in pod['spec'].get('resourceClaims', [])
           if pc.get('resourceClaimName')]
    statuses = (pod.get('status') or {}).get('resourceClaimStatuses', [])
    out += [s['resourceClaimName'] for s in statuses if s.get('resourceClaimName')]
    return out


# ---- kube-scheduler: gpuslice schedule over the API's objects -----------------------------------

class Scheduled:
    def __init__(self, rc, items, stderr, stdout):
        self.rc = rc
        self.items = items      # name -> claim as printed by gpuslice schedule
        self.stderr = stderr
        self.stdout = stdout


def schedule_pod(api, pod, node, workdir, write_back=True):
    """One scheduling cycle for `pod` on `node`: the input is what kube-scheduler sees (every
    ResourceSlice and DeviceClass, the claims already allocated = in use, and the pod's pending
    claims); `gpuslice schedule` allocates; each allocation is written to the claim's status with
    the pod in reservedFor. Claims of pods not being scheduled are not offered (they stay pending,
    as the lab's double-gpu-0)."""
    ns = pod['metadata']['namespace']
    mine = set(pod_claim_names(pod))
    claims = api.list('ResourceClaim')
    in_use = [c for c in claims if (c.get('status') or {}).get('allocation')]
    pending = [c for c in claims if c['metadata']['namespace'] == ns
               and c['metadata']['name'] in mine and not (c.get('status') or {}).get('allocation')]
    objects = api.list('ResourceSlice') + api.list('DeviceClass') + in_use + pending
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, f"cycle-{pod['metadata']['name']}.json")
    with open(path, 'w') as f:
        json.dump({'apiVersion': 'v1', 'kind': 'List', 'items': objects}, f)
    r = subprocess.run([PATHS['GS_GPUSLICE'], 'schedule', '-f', path, '--node', node,
                        '-o', 'json'], capture_output=True, text=True, timeout=60)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {'items': []}
    items = {i['metadata']['name']: i for i in doc.get('items', [])}
    if write_back:
        for c in pending:
            got = items.get(c['metadata']['name'])
            alloc = ((got or {}).get('status') or {}).get('allocation')
            if not alloc:
                continue
            c = copy.deepcopy(c)
            c['status'] = {'allocation': alloc,
                           'reservedFor': [{'resource': 'pods', 'name': pod['metadata']['name'],
                                            'uid': pod['metadata']['uid']}]}
            api.update_status(c)
    return Scheduled(r.returncode, items, r.stderr, r.stdout)


# ---- the kubelet plugin on a gpusim node ---------------------------------------------------------

class Node(pl.PluginEnv):
    """The plugin (real binary) for node `name` on a gpusim preset, with the plugin tests'
    kubelet emulator (`self.kubelet`)."""

    def __init__(self, tap, name, preset, api=None):
        super().__init__(tap, api=api, gpusim_preset=preset)
        self.node_name = name
        self.client = Api(self.api.url, pl.TOKEN)

    def args(self, fault_point=None, extra=None):
        a = super().args(fault_point, extra)
        a[a.index('--node-name') + 1] = self.node_name
        return a

    def slices(self):
        return [s for s in self.client.list('ResourceSlice')
                if s['spec'].get('nodeName') == self.node_name
                and s['spec'].get('driver') == DRIVER]

    def sim_env(self):
        """What every process on this node's gpusim needs (no preload)."""
        e = dict(os.environ)
        e['LD_LIBRARY_PATH'] = PATHS['GS_SIM_DIR']
        e['GPUSIM_PRESET'] = self.preset
        e['GPUSIM_STATE'] = self.sim_state
        for k in ('GPUSIM_CONFIG', 'GPUSIM_CONTEXT_OVERHEAD', 'CUDA_VISIBLE_DEVICES',
                  'GPUSLICE_LIMITS_DIR', 'LD_PRELOAD'):
            e.pop(k, None)
        for k in list(e):
            if k.startswith('CUDA_DEVICE_'):
                e.pop(k)
        return e

    def smi(self):
        """gpusim-smi without libvgpu: gpusim's own (physical) accounting."""
        return subprocess.run([PATHS['GS_GPUSIM_SMI']], env=self.sim_env(), capture_output=True,
                              text=True, timeout=60)

    def cdi_spec_path(self, uid):
        return os.path.join(self.dirs['cdi'], f'k8s.{DRIVER}-claim_{uid}.json')

    def cdi_spec(self, uid):
        with open(self.cdi_spec_path(uid)) as f:
            return json.load(f)


def ref(claim):
    md = claim['metadata']
    return (md['namespace'], md['name'], md['uid'])


# ---- the container runtime -----------------------------------------------------------------------

def can_unshare():
    """Whether CDI edits can be applied in a private mount namespace here: `unshare -rm` and the
    overlays cdi_exec.py puts on /etc, /run and /usr/local, tried with an empty device. False
    (host mode) when refused, or when GS_E2E_NO_UNSHARE=1 asks for the host mode."""
    if os.environ.get('GS_E2E_NO_UNSHARE') == '1':
        return False
    with tempfile.TemporaryDirectory(prefix='gs-e2e-ns-') as tmp:
        spec = os.path.join(tmp, 'spec.json')
        with open(spec, 'w') as f:
            json.dump({'cdiVersion': '0.3.0', 'kind': 'gpuslice.test/probe',
                       'devices': [{'name': 'none', 'containerEdits': {'env': ['X=1']}}]}, f)
        try:
            r = subprocess.run(['unshare', '-rm', '/usr/bin/python3', CDI_EXEC, '--spec', spec,
                                '--device', 'none', '--scratch', tmp, '--', '/bin/true'],
                               capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return r.returncode == 0


def edits_mode(tap):
    """can_unshare(), said once in the test's output."""
    mount_ns = can_unshare()
    tap.diag('container edits: ' + ('bind mounts in a private mount namespace (unshare -rm)'
                                    if mount_ns else
                                    'no mount namespace (unshare -rm refused or '
                                    'GS_E2E_NO_UNSHARE=1): env + host paths of libvgpu and the '
                                    'limits directory'))
    return mount_ns


class Pod:
    """A process started with one CDI device's containerEdits applied.

    mount mode: `unshare -rm cdi_exec.py` (overlays on /etc, /run, /usr/local, then every mount of
    the spec, /etc/ld.so.preload last; env from the spec), exactly what a runtime does.
    host mode: env from the spec, then libvgpu and the limits directory by their host paths
    (LD_PRELOAD = the mount whose target is the container's libvgpu, GPUSLICE_LIMITS_DIR = the
    host directory holding the limits file) — no mount namespace."""

    def __init__(self, node, spec_path, device, mount_ns):
        self.node = node
        self.spec_path = spec_path
        self.device = device
        self.mount_ns = mount_ns
        with open(spec_path) as f:
            spec = json.load(f)
        devs = [d for d in spec['devices'] if d['name'] == device]
        if not devs:
            raise RuntimeError(f'device {device} not in {spec_path}')
        self.edits = devs[0]['containerEdits']
        self.env = dict(kv.partition('=')[::2] for kv in self.edits.get('env', []))

    def _extra(self):
        extra = {'LD_LIBRARY_PATH': PATHS['GS_SIM_DIR'], 'GPUSIM_PRESET': self.node.preset,
                 'GPUSIM_STATE': self.node.sim_state}
        rt = sanitizer_runtime()
        if rt:
            # Our programs and libvgpu are instrumented: the ASan runtime must be the first
            # library, before /etc/ld.so.preload (or libvgpu in LD_PRELOAD).
            extra['LD_PRELOAD'] = rt
        return extra, rt

    def command(self, argv):
        """(argv, env) that run `argv` in this pod."""
        extra, rt = self._extra()
        base = self.node.sim_env()
        if self.mount_ns:
            scratch = tempfile.mkdtemp(dir=self.node.tmp, prefix='pod-')
            cmd = ['unshare', '-rm', '/usr/bin/python3', CDI_EXEC, '--spec', self.spec_path,
                   '--device', self.device, '--scratch', scratch]
            for k, v in extra.items():
                cmd += ['--env', f'{k}={v}']
            return cmd + ['--'] + list(argv), base
        e = dict(base)
        e.update(extra)
        e.update(self.env)
        mounts = {m['containerPath']: m['hostPath'] for m in self.edits.get('mounts', [])}
        limits_dir = self.env.get('GPUSLICE_LIMITS_DIR', '')
        lim = [h for c, h in mounts.items() if os.path.dirname(c) == limits_dir]
        vgpu = [h for c, h in mounts.items() if os.path.basename(c) == 'libvgpu.so']
        if len(lim) != 1 or len(vgpu) != 1:
            raise RuntimeError(f'CDI edits of {self.device}: expected one limits-file mount into '
                               f'{limits_dir!r} and one libvgpu.so mount, got {mounts}')
        e['GPUSLICE_LIMITS_DIR'] = os.path.dirname(lim[0])
        e['LD_PRELOAD'] = ':'.join(x for x in (rt, vgpu[0]) if x)
        return list(argv), e

    def run(self, argv, timeout=120):
        cmd, env = self.command(argv)
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)

    def start(self, argv):
        """Popen with stdout as a pipe (for a process that holds memory while others run)."""
        cmd, env = self.command(argv)
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)


def read_until(proc, needle, limit=200):
    """Lines of proc.stdout up to and including the first containing `needle` (or EOF)."""
    lines = []
    for _ in range(limit):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            break
    return ''.join(lines)


def probe(*args):
    return [PATHS['GS_GPUSLICE'], 'probe', *args]


def smi_line(out, uuid):
    """The memory usage of the device with `uuid` in gpusim-smi's table, as (used, total) MiB."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if uuid in line and i > 0:
            cells = lines[i - 1].split('|')
            for c in cells:
                c = c.strip()
                if 'MiB /' in c:
                    used, total = c.split('/')
                    return int(used.strip()[:-3]), int(total.strip()[:-3])
    return None


def k8s_validator(name):
    """Draft 7 validator of a strict Kubernetes schema, e.g. 'resourceclaim-resource-v1'; None
    without the reference data (t.valid() then skips the schema oracle, saying so once)."""
    import jsonschema  # noqa: PLC0415
    from gstest import reference_json  # noqa: PLC0415
    schema = reference_json('k8s-json-schema', name + '.json')
    return jsonschema.Draft7Validator(schema) if schema else None


def deviceclass():
    import yaml  # noqa: PLC0415
    with open(os.path.join(PATHS['GS_SOURCE_ROOT'], 'deploy', 'plugin', 'deviceclass.yaml')) as f:
        return yaml.safe_load(f)


def pod(name, ns, claim_name=None, template_name=None, limits=None):
    """A one-container pod using a ResourceClaim (or a template), or legacy `limits`."""
    c = {'name': 'cuda', 'image': 'nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04',
         'command': ['sh', '-c', 'nvidia-smi; sleep 3600']}
    p = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': ns},
         'spec': {'restartPolicy': 'Never', 'containers': [c]}}
    if limits:
        c['resources'] = {'limits': dict(limits)}
    else:
        pc = {'name': 'gpu'}
        if claim_name:
            pc['resourceClaimName'] = claim_name
        else:
            pc['resourceClaimTemplateName'] = template_name
        c['resources'] = {'claims': [{'name': 'gpu'}]}
        p['spec']['resourceClaims'] = [pc]
    return p


def canonical_quantities(spec):
    """The API server's round trip of a claim spec: capacity requests given as YAML numbers come
    back as canonical quantity strings (`cores: 50` -> "50")."""
    spec = copy.deepcopy(spec)
    for r in spec.get('devices', {}).get('requests', []):
        for sub in [r.get('exactly')] + list(r.get('firstAvailable', [])):
            req = ((sub or {}).get('capacity') or {}).get('requests') or {}
            for k, v in req.items():
                if isinstance(v, int):
                    req[k] = str(v)
    return spec


def allocation_results(claim):
    return (((claim.get('status') or {}).get('allocation') or {}).get('devices') or {}) \
        .get('results', [])
