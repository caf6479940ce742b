#!/usr/bin/env python3
"""HAMi's own Grafana dashboards against gpuslice-monitor: every PromQL query of
dashboards/hami-vgpu-dashboard.json and of the older docs/gpu-dashboard.json (extracted unchanged
into hami_dashboard_queries.tsv) is evaluated by a real Prometheus scraping the monitor
(--legacy-metrics) while a `gpuslice run` workload holds memory and launches kernels on gpusim.
Every query over HAMi's metrics must return data. Queries over NVIDIA dcgm-exporter's DCGM_FI_*
families only are not HAMi's (another exporter serves them) and are reported as skipped."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths
from monlib import Monitor, Prometheus, sim_env, wait_until

t = Tap()
P = env_paths()
GS = P['GS_GPUSLICE']
TMP = tempfile.mkdtemp(prefix='gs-monitor-dash-')
STATE = os.path.join(TMP, 'state')
os.makedirs(STATE)
ENV = sim_env(STATE)
ENV['GPUSLICE_STATE_DIR'] = STATE
WORKLOAD = sys.argv[1]
NODE = 'node-a'
# Grafana template variables as a user picking "All" would set them.
VARS = {'${node_name}': NODE, '$node_name': NODE, '$node': NODE, '${uuid}': '.*',
        '$namespace': '.*'}


def load():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'hami_dashboard_queries.tsv')
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            board, kind, q = line.rstrip('\n').split('\t', 2)
            for k, v in VARS.items():
                q = q.replace(k, v)
            out.append((board, kind, q))
    return out


def evaluate(prom, kind, q):
    """True when the query gives data: a non-empty instant vector (or scalar), or for a template
    variable label_values(selector, label) at least one series carrying the label."""
    if kind == 'query':
        m = re.fullmatch(r'label_values\((.*),\s*(\w+)\)', q.strip())
        if not m:
            return False
        res = prom.query(m.group(1))
        return bool(res) and any(m.group(2) in r['metric'] for r in res)
    res = prom.query(q)
    return bool(res)


def main():
    for tool in ('prometheus',):
        if not t.ok(shutil.which(tool), '%s installed (Debian package prometheus: make deps)' % tool):
            return t.done()
    queries = load()
    t.is_eq(len(queries), 39, 'the two dashboards hold 39 queries (expressions and variables)')
    mon = Monitor(TMP, ['--no-kubernetes', '--legacy-metrics', '--node-name', NODE,
                        '--standalone-state-dir', STATE, '--state-dir', os.path.join(TMP, 'plugin'),
                        '--host-dir', os.path.join(TMP, 'host')], ENV)
    prom = None
    go = os.path.join(TMP, 'go')
    work = None
    try:
        if not t.ok(mon.ready(), 'monitor ready'):
            t.diag(mon.logs())
            return t.done()
        # node_name: the label HAMi's ServiceMonitor relabelling gives every series (the older
        # dashboard filters on it).
        prom = Prometheus(TMP, ['127.0.0.1:%d' % mon.port], labels={'node_name': NODE})
        if not t.ok(prom.ready(), 'Prometheus server ready'):
            t.diag(prom.logs())
            return t.done()
        work = subprocess.Popen([GS, 'run', '--sim', '--quiet', '--name', 'train', '--memory',
                                 '4Gi', '--cores', '30', '--', WORKLOAD, '1000', '2000', go],
                                env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        dcgm = [(b, k, q) for b, k, q in queries
                if re.search(r'DCGM_FI_', q) and not re.search(r'hami_|vGPU|Host|Device_', q)]
        # A `gpuslice run` slice has no pod, so no namespace label (Prometheus drops empty
        # labels): the namespace variable lists pods' namespaces only (monitor_kubernetes).
        no_pod = [(b, k, q) for b, k, q in queries if k == 'query' and q.endswith(', namespace)')]
        ours = [x for x in queries if x not in dcgm and x not in no_pod]
        # Wait (bounded) until every HAMi query has data: series appear after the workload's
        # first kernels and Prometheus' next scrapes.
        wait_until(lambda: all(evaluate(prom, k, q) for _, k, q in ours), 180, 1.0)
        for board, kind, q in queries:
            if (board, kind, q) in dcgm:
                t.skip('%s: %s' % (board, q), "dcgm-exporter's DCGM_FI_* families, not HAMi's")
                continue
            if (board, kind, q) in no_pod:
                t.skip('%s: %s' % (board, q), 'standalone slices carry no namespace')
                continue
            t.ok(evaluate(prom, kind, q), '%s: %s returns data' % (board, q),
                 diag='result: %r' % (prom.query(q) if kind == 'expr' else None))
        # The figures, not only their presence: 1000 MiB used of a 4 GiB slice, 30 % of a T4.
        r = prom.query('sum(hami_gpu_memory_allocated_bytes{node=~"%s"})' % NODE)
        t.is_eq(float(r[0]['value'][1]) if r else None, 4.0 * 1024 ** 3,
                'hami_gpu_memory_allocated_bytes: the 4 GiB slice')
        r = prom.query('hami_gpu_core_allocated_ratio{node=~"%s"}' % NODE)
        t.is_eq(float(r[0]['value'][1]) if r else None, 30.0,
                'hami_gpu_core_allocated_ratio: 30 (HAMi\'s 0-100 scale)')
        r = prom.query('hami_gpu_shared_count{node=~"%s"}' % NODE)
        t.is_eq(float(r[0]['value'][1]) if r else None, 1.0, 'hami_gpu_shared_count: 1')
        r = prom.query('hami_node_gpu_memory_allocated_ratio')
        t.ok(r and abs(float(r[0]['value'][1]) - 4096 / 15360) < 1e-9,
             'hami_node_gpu_memory_allocated_ratio: 4096/15360 (HAMi\'s 0-1)', diag=repr(r))
        r = prom.query('hami_vgpu_memory_used_bytes')
        t.ok(r and r[0]['metric'].get('zone') == 'vGPU' and
             float(r[0]['value'][1]) == 1000 * 1024 ** 2,
             'hami_vgpu_memory_used_bytes: 1000 MiB, zone="vGPU"', diag=repr(r))
    finally:
        if work:
            with open(go, 'w'):
                pass
            try:
                work.wait(timeout=120)
            except subprocess.TimeoutExpired:
                work.kill()
        if prom:
            prom.stop()
        mon.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
