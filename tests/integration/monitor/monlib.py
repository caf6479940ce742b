"""Helpers for the monitor's integration tests: the monitor process, promtool, a real Prometheus."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from gstest import env_paths, sanitizer_runtime

P = env_paths()
MONITOR = os.environ.get('GS_MONITOR', '')

# HAMi's older names (--legacy-metrics): camelCase is theirs, so promtool's lint names them.
LEGACY_NAMES = {
    'HostGPUMemoryUsage', 'HostCoreUtilization', 'vGPU_device_memory_usage_in_bytes',
    'vGPU_device_memory_limit_in_bytes', 'GPUDeviceCoreLimit', 'GPUDeviceMemoryLimit',
    'GPUDeviceCoreAllocated', 'GPUDeviceMemoryAllocated', 'vGPUDeviceCoreAllocated',
    'vGPUDeviceMemoryAllocated', 'nodeGPUOverview', 'nodeGPUMemoryPercentage',
    'GPUDeviceSharedNum', 'vGPUCorePercentage', 'vGPUMemoryPercentage', 'MigInfo',
    'Device_memory_desc_of_container', 'Device_utilization_desc_of_container',
    'Device_last_kernel_of_container',
}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_until(pred, timeout=60.0, step=0.1):
    """Poll pred() until it returns a true value (bounded); the last value otherwise."""
    end = time.time() + timeout
    while True:
        v = pred()
        if v or time.time() >= end:
            return v
        time.sleep(step)


def http_get(url, headers=None, timeout=10):
    """(status, headers, body text); status 0 when the connection failed."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
    except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
        return 0, {}, ''


def sim_env(state_dir, base=None):
    """Environment of a process that uses gpusim (T4) with its state under state_dir."""
    env = dict(base or os.environ)
    env.update({
        'GPUSLICE_SIM_DIR': P['GS_SIM_DIR'],
        'GPUSLICE_VGPU_LIB': P['GS_VGPU_LIB'],
        'GPUSIM_PRESET': 't4',
        'GPUSIM_STATE': os.path.join(state_dir, 'gpusim.state'),
    })
    for k in ('KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'LD_PRELOAD'):
        env.pop(k, None)
    rt = sanitizer_runtime()
    if rt:  # ASan build: uninstrumented programs (sh) loading our instrumented libraries
        env['LD_PRELOAD'] = rt
        env['ASAN_OPTIONS'] = 'detect_leaks=0'
    return env


class Monitor:
    """gpuslice-monitor on a loopback port, on gpusim's NVML."""

    def __init__(self, tmp, args, env):
        self.port = free_port()
        self.log_path = os.path.join(tmp, 'monitor-%d.log' % self.port)
        e = dict(env)
        e['LD_LIBRARY_PATH'] = P['GS_SIM_DIR']
        self.log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(
            [MONITOR, '--listen', '127.0.0.1:%d' % self.port, '--refresh-interval', '200ms'] + args,
            env=e, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = 'http://127.0.0.1:%d' % self.port

    def ready(self, timeout=60):
        return wait_until(lambda: self.proc.poll() is None and
                          http_get(self.url + '/readyz')[0] == 200, timeout)

    def metrics(self, accept=None):
        st, hdr, body = http_get(self.url + '/metrics', {'Accept': accept} if accept else None)
        return st, hdr, body

    def text(self):
        return self.metrics()[2]

    def logs(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def samples(text, name):
    """{labels-dict-as-frozenset: value} of one metric in a text exposition."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith('#'):
            continue
        rest = line[len(name):]
        if rest[:1] not in ('{', ' '):
            continue
        labels = {}
        if rest.startswith('{'):
            end = rest.index('} ')
            body, value = rest[1:end], rest[end + 2:]
            for part in _split_labels(body):
                k, v = part.split('=', 1)
                labels[k] = json.loads(v)
        else:
            value = rest[1:]
        out[frozenset(labels.items())] = float(value)
    return out


def _split_labels(body):
    parts, cur, quoted, esc = [], '', False, False
    for ch in body:
        if esc:
            cur += ch
            esc = False
        elif ch == '\\':
            cur += ch
            esc = True
        elif ch == '"':
            cur += ch
            quoted = not quoted
        elif ch == ',' and not quoted:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts


def value(text, name, **labels):
    """The value of the one sample of `name` whose labels include `labels`, or None."""
    found = [v for k, v in samples(text, name).items() if set(labels.items()) <= set(k)]
    return found[0] if len(found) == 1 else None


def promtool_problems(text, allow_legacy=False):
    """promtool check metrics on an exposition: the list of problems (empty = clean). With
    allow_legacy, the camelCase lint of HAMi's own legacy names is expected and left out."""
    r = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True,
                       text=True, timeout=60)
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    # HAMi's scheduler names its gauge hami_gpu_shared_count (cmd/scheduler/metrics.go): the
    # "_count" suffix lint is about HAMi's name, kept as HAMi's dashboards query it.
    lines = [l for l in lines if not (l.startswith('hami_gpu_shared_count ') and '_count' in l)]
    if allow_legacy:
        lines = [l for l in lines
                 if not (l.split(' ', 1)[0] in LEGACY_NAMES and 'camelCase' in l)]
    if r.returncode not in (0, 3) and not lines:
        lines = ['promtool exit status %d' % r.returncode]
    return lines


class Prometheus:
    """A real Prometheus server on a loopback port scraping the given targets every second."""

    def __init__(self, tmp, targets, labels=None):
        """labels: target labels added to every series (as a ServiceMonitor's relabelling)."""
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix='prom-', dir=tmp)
        cfg = os.path.join(self.dir, 'prometheus.yml')
        with open(cfg, 'w') as f:
            f.write('global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n'
                    'scrape_configs:\n  - job_name: gpuslice-monitor\n    static_configs:\n'
                    '      - targets: [%s]\n' % ', '.join("'%s'" % t for t in targets))
            if labels:
                f.write('        labels: {%s}\n' % ', '.join("%s: '%s'" % kv
                                                            for kv in labels.items()))
        self.log = open(os.path.join(self.dir, 'prometheus.log'), 'w')
        self.proc = subprocess.Popen(
            [shutil.which('prometheus') or 'prometheus', '--config.file=' + cfg,
             '--storage.tsdb.path=' + os.path.join(self.dir, 'data'),
             '--web.listen-address=127.0.0.1:%d' % self.port, '--log.level=warn'],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = 'http://127.0.0.1:%d' % self.port

    def ready(self, timeout=120):
        return wait_until(lambda: self.proc.poll() is None and
                          http_get(self.url + '/-/ready')[0] == 200, timeout, 0.25)

    def query(self, q):
        """The result vector of an instant query, or None when the API failed."""
        st, _, body = http_get(self.url + '/api/v1/query?' + urllib.parse.urlencode({'query': q}))
        if st != 200:
            return None
        d = json.loads(body)
        return d['data']['result'] if d.get('status') == 'success' else None

    def targets(self):
        st, _, body = http_get(self.url + '/api/v1/targets')
        return json.loads(body)['data']['activeTargets'] if st == 200 else []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def logs(self):
        self.log.flush()
        with open(os.path.join(self.dir, 'prometheus.log')) as f:
            return f.read()
