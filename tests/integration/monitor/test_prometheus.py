#!/usr/bin/env python3
"""gpuslice-monitor scraped by a real Prometheus server while workloads run under `gpuslice run`
slices on gpusim: Prometheus' HTTP API must show hami_vgpu_memory_used_bytes follow what the
workload holds (1000 MiB of a 4 GiB slice) and drop the series once the workload ends. Every
exposition the test reads passes `promtool check metrics`; `gpuslice ls` and the monitor agree."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths
from monlib import (Monitor, Prometheus, promtool_problems, samples, sim_env, value, wait_until)

t = Tap()
P = env_paths()
GS = P['GS_GPUSLICE']
TMP = tempfile.mkdtemp(prefix='gs-monitor-prom-')
STATE = os.path.join(TMP, 'state')
os.makedirs(STATE)
ENV = sim_env(STATE)
ENV['GPUSLICE_STATE_DIR'] = STATE
MIB = 1024 * 1024
WORKLOAD = sys.argv[1]  # mon_workload (built beside this test)
texts = []  # every exposition read, for promtool


def scrape(mon):
    st, hdr, body = mon.metrics()
    if st == 200:
        texts.append(body)
    return body if st == 200 else ''


def workload(name, hold_mib, go, kernel_us=0, memory='4Gi'):
    """`gpuslice run` a slice of `memory`/30% whose program holds hold_mib MiB (and launches
    kernels of kernel_us back to back, if not 0) until `go` exists."""
    return subprocess.Popen([GS, 'run', '--sim', '--quiet', '--name', name, '--memory', memory,
                             '--cores', '30', '--', WORKLOAD, str(hold_mib), str(kernel_us), go],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ls_json():
    r = subprocess.run([GS, 'ls', '--sim', '-o', 'json'], env=ENV, capture_output=True, text=True,
                       timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else None


def prom_value(prom, q):
    res = prom.query(q)
    if not res or len(res) != 1:
        return None
    return float(res[0]['value'][1])


def main():
    for tool in ('prometheus', 'promtool'):
        if not t.ok(shutil.which(tool), '%s installed (Debian package prometheus: make deps)' % tool):
            return
    # No --kubeconfig, no KUBECONFIG, not in a cluster: the workstation case.
    mon = Monitor(TMP, ['--node-name', 'node-a', '--standalone-state-dir',
                        STATE, '--state-dir', os.path.join(TMP, 'plugin'), '--host-dir',
                        os.path.join(TMP, 'host')], ENV)
    prom = None
    procs = []
    try:
        if not t.ok(mon.ready(), 'monitor ready (/readyz 200)'):
            t.diag(mon.logs())
            return
        text = scrape(mon)
        t.ok(value(text, 'hami_host_gpu_memory_used_bytes', node='node-a', device_index='0',
                   device_type='NVIDIA-Tesla T4') == 0,
             'no workload: the T4 (gpusim) shows 0 bytes used, labelled as HAMi does')
        t.is_eq(samples(text, 'hami_vgpu_memory_used_bytes'), {}, 'no slice: no vGPU series')
        t.ok('no kubernetes' in mon.logs(), 'without Kubernetes it says so and serves anyway')

        prom = Prometheus(TMP, ['127.0.0.1:%d' % mon.port])
        if not t.ok(prom.ready(), 'Prometheus server ready'):
            t.diag(prom.logs())
            return

        go = os.path.join(TMP, 'go-1')
        procs.append(workload('train', 1000, go))
        held = wait_until(lambda: prom_value(prom, 'hami_vgpu_memory_used_bytes') == 1000 * MIB,
                          120, 0.5)
        if not t.ok(held, 'Prometheus: hami_vgpu_memory_used_bytes = 1000 MiB while the workload '
                          'holds it'):
            t.diag('query: %r' % prom.query('hami_vgpu_memory_used_bytes'))
            t.diag(mon.logs())
        t.is_eq(prom_value(prom, 'hami_vgpu_memory_limit_bytes'), 4.0 * 1024 * MIB,
                'Prometheus: hami_vgpu_memory_limit_bytes = the 4 GiB slice')
        r = prom.query('hami_vgpu_memory_used_bytes')
        lbl = r[0]['metric'] if r else {}
        t.ok(lbl.get('namespace') == '' or 'namespace' not in lbl,
             'standalone slice: empty pod labels (%r)' % lbl)
        t.ok(lbl.get('device_uuid', '').startswith('GPU-') and lbl.get('vdevice_index') == '0',
             'device labels: vdevice_index 0 and the GPU UUID')
        t.is_eq(prom_value(prom, 'hami_host_gpu_memory_used_bytes'), 1000.0 * MIB,
                'Prometheus: the host GPU (NVML) shows the same 1000 MiB')
        t.is_eq(prom_value(prom, 'hami_dra_gpu_core_allocated_ratio'), 0.3,
                'Prometheus: 30% of the GPU allocated')
        tg = prom.targets()
        t.ok(tg and tg[0]['health'] == 'up' and not tg[0].get('lastError'),
             'Prometheus scraped the monitor without error (OpenMetrics negotiated)',
             diag=json.dumps(tg)[:2000])

        # A second workload: 1000 + 500 MiB on the GPU, two series.
        go2 = os.path.join(TMP, 'go-2')
        procs.append(workload('eval', 500, go2))
        both = wait_until(lambda: prom_value(prom, 'sum(hami_vgpu_memory_used_bytes)') ==
                          1500 * MIB, 120, 0.5)
        t.ok(both, 'Prometheus: the two slices sum to 1500 MiB')

        # gpuslice ls and the monitor agree, slice by slice.
        snap = wait_until(lambda: (lambda s: s if s and len(s['slices']) == 2 else None)(ls_json()))
        text = scrape(mon)
        agree = bool(snap)
        for s in (snap or {}).get('slices', []):
            for d in s['devices']:
                used = value(text, 'gpuslice_claim_memory_used_bytes', claim_uid=s['uid'],
                             device_uuid=d['uuid'])
                limit = value(text, 'gpuslice_claim_memory_limit_bytes', claim_uid=s['uid'],
                              device_uuid=d['uuid'])
                cores = value(text, 'gpuslice_claim_cores_limit_ratio', claim_uid=s['uid'],
                              device_uuid=d['uuid'])
                name_ok = value(text, 'gpuslice_claim_region_healthy', claim_uid=s['uid'],
                                claim=s['name'], source='standalone') == 1
                if (used != d['usage']['memory'] or limit != d['limits']['memory'] or
                        abs(cores - d['limits']['cores'] / 100.0) > 1e-9 or not name_ok):
                    agree = False
                    t.diag('ls %s: %r; monitor used=%r limit=%r cores=%r' %
                           (s['name'], d, used, limit, cores))
        t.ok(agree, '`gpuslice ls` and the monitor agree on every slice (usage, limits, name)')

        # The first workload ends: its series disappears; the other stays.
        with open(go, 'w'):
            pass
        t.is_eq(procs[0].wait(timeout=120), 0, 'first workload ended normally')
        gone = wait_until(lambda: (lambda r: r is not None and len(r) == 1 and
                                   float(r[0]['value'][1]) == 500 * MIB)(
            prom.query('hami_vgpu_memory_used_bytes')), 120, 0.5)
        t.ok(gone, 'Prometheus: the ended workload\'s series is gone, the other one remains')
        text = scrape(mon)
        t.ok(value(text, 'gpuslice_monitor_claims', source='standalone') == 1,
             'monitor counts one standalone slice')
        with open(go2, 'w'):
            pass
        t.is_eq(procs[1].wait(timeout=120), 0, 'second workload ended normally')
        empty = wait_until(lambda: prom.query('hami_vgpu_memory_used_bytes') == [], 120, 0.5)
        t.ok(empty, 'Prometheus: no vGPU series once every workload ended')
        t.ok(wait_until(lambda: prom_value(prom, 'hami_host_gpu_memory_used_bytes') == 0, 120,
                        0.5), 'Prometheus: the GPU is back to 0 bytes used')

        # A workload that launches kernels under a 30 % cap: per-container utilisation from the
        # busy GPU time libvgpu records in the region (v2), next to gpusim's own NVML figure.
        go3 = os.path.join(TMP, 'go-3')
        busy = workload('busy', 1, go3, kernel_us=2000, memory='1Gi')
        procs.append(busy)
        util = wait_until(lambda: (lambda v: v if v and v > 0 else None)(
            prom_value(prom, 'hami_container_device_utilization_ratio')), 120, 0.5)
        t.ok(util is not None and 0 < util <= 100,
             'Prometheus: hami_container_device_utilization_ratio of the busy container is in '
             '(0, 100] (%r)' % util)
        t.ok(wait_until(lambda: (prom_value(prom, 'hami_host_gpu_utilization_ratio') or 0) > 0,
                        120, 0.5), 'Prometheus: gpusim\'s NVML shows the GPU busy too')
        text = scrape(mon)
        t.ok((value(text, 'gpuslice_claim_gpu_busy_seconds_total', claim='busy') or 0) > 0 and
             (value(text, 'gpuslice_claim_launches_total', claim='busy') or 0) > 0,
             'busy GPU time and launches counted for the claim')
        last = value(text, 'hami_container_last_kernel_elapsed_seconds', vdevice_index='0')
        t.ok(last is not None and last >= 0, 'time since the last kernel exported (%r s)' % last)
        with open(go3, 'w'):
            pass
        rc = busy.wait(timeout=120)
        t.is_eq(rc, 0, 'busy workload ended normally')
        if rc:
            t.diag(busy.stderr.read())
        t.ok(wait_until(lambda: prom.query('hami_container_device_utilization_ratio') == [], 120,
                        0.5), 'Prometheus: its utilisation series is gone once it ended')

        # Legacy names, OpenMetrics by Accept, health endpoints.
        leg = Monitor(TMP, ['--no-kubernetes', '--legacy-metrics', '--node-name', 'node-a',
                            '--standalone-state-dir', STATE, '--state-dir',
                            os.path.join(TMP, 'plugin'), '--host-dir', os.path.join(TMP, 'host')],
                      ENV)
        try:
            t.ok(leg.ready(), 'monitor with --legacy-metrics ready')
            lt = leg.text()
            t.ok(value(lt, 'HostGPUMemoryUsage', nodeid='node-a', deviceidx='0') == 0,
                 'legacy HostGPUMemoryUsage with its historic labels')
            t.ok(value(lt, 'GPUDeviceMemoryLimit', nodeid='node-a', devicename='hami-gpu-0',
                       deviceproductname='Tesla T4') == 15360,
                 'legacy GPUDeviceMemoryLimit in MiB, as HAMi-DRA wrote it')
            probs = promtool_problems(lt, allow_legacy=True)
            t.ok(not probs, 'promtool: legacy exposition has no problem beyond the legacy names\' '
                            'own camelCase', diag='\n'.join(probs))
        finally:
            t.is_eq(leg.stop(), 0, 'the legacy-names monitor exits 0 on SIGTERM')
        st, hdr, body = mon.metrics('application/openmetrics-text;version=1.0.0')
        t.ok(st == 200 and hdr.get('Content-Type', '').startswith('application/openmetrics-text')
             and body.endswith('# EOF\n'), 'Accept: OpenMetrics gets OpenMetrics 1.0.0')
        st, hdr, body = mon.metrics()
        t.ok(st == 200 and hdr.get('Content-Type', '').startswith('text/plain; version=0.0.4'),
             'no Accept: text format 0.0.4')
        t.is_eq(mon.stop(), 0, 'SIGTERM: the monitor exits 0')
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if prom:
            prom.stop()
        mon.stop()

    bad = []
    for i, text in enumerate(texts):
        probs = promtool_problems(text)
        if probs:
            bad.append('exposition %d: %s' % (i, '; '.join(probs)))
    t.ok(texts and not bad, 'promtool check metrics: zero problems in all %d expositions' %
         len(texts), diag='\n'.join(bad))


t.run('prometheus', main)
rc = t.done()
if not rc:
    shutil.rmtree(TMP, ignore_errors=True)  # kept for a look when something failed
sys.exit(rc)
