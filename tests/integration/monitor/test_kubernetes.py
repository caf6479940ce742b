#!/usr/bin/env python3
"""gpuslice-monitor on a node of a (fake) cluster: claims the kubelet plugin prepared (its
checkpoint and the claims' shared regions) resolved to namespace/pod/container through the API
(status.reservedFor, then the pod's containers). Bad and dead data — wrong magic or version, a
truncated region, a claim whose pod is gone, a claim gone from the API, the API server down — is
skipped with a counter and one log line per cause: never a crash, never a stale value."""
import json
import os
import shutil
import struct
import sys
import tempfile
import urllib.request

from fakeapi import FakeAPI
from gstest import Tap
from monlib import Monitor, promtool_problems, samples, sim_env, value, wait_until

t = Tap()
TMP = tempfile.mkdtemp(prefix='gs-monitor-k8s-')
HOST = os.path.join(TMP, 'host')
STATE = os.path.join(TMP, 'plugin-state')
TOKEN = 'mon-token'
GIB = 1024 ** 3
texts = []

# include/gpuslice/shared_region.h, version 2
MAGIC = 0x4E4F494745525347
REGION_SIZE = 128 + 200 * 32 + (24 + 8 * 32) * 1024
DEV_OFF, DEV_SIZE = 128, 200


def write_region(uid, devices, version=2, magic=MAGIC, size=REGION_SIZE, truncate_to=None):
    """devices: [(uuid, used, cores, oom_count)]"""
    buf = bytearray(REGION_SIZE)
    struct.pack_into('<QIIII', buf, 0, magic, version, size, 2, len(devices))
    for i, (uuid, used, cores, oom) in enumerate(devices):
        o = DEV_OFF + i * DEV_SIZE
        buf[o:o + len(uuid)] = uuid.encode()
        struct.pack_into('<QQI', buf, o + 96, used, 0, cores)
        struct.pack_into('<Q', buf, o + 160, oom)  # oom_count
    d = os.path.join(HOST, 'claims', uid, 'region')
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, 'region')
    with open(path + '.tmp', 'wb') as f:
        f.write(buf[:truncate_to] if truncate_to else buf)
    os.rename(path + '.tmp', path)
    return path


def set_used(path, dev, used):
    with open(path, 'r+b') as f:
        f.seek(DEV_OFF + dev * DEV_SIZE + 96)
        f.write(struct.pack('<Q', used))


def plan(ns, name, uid, devices):
    return {'namespace': ns, 'name': name, 'uid': uid,
            'results': [{'request': 'gpu', 'pool': 'node-a', 'device': 'hami-gpu-%d' % i,
                         'shareID': ''} for i in range(len(devices))],
            'devices': [{'device': 'hami-gpu-%d' % i, 'uuid': u, 'minor': i, 'memoryLimit': m,
                         'cores': c, 'envIndex': i} for i, (u, m, c) in enumerate(devices)]}


def write_checkpoint(plans):
    os.makedirs(STATE, exist_ok=True)
    doc = {'version': 1, 'driver': 'hami-core-gpu.project-hami.io',
           'claims': {p['uid']: {'state': 'PrepareCompleted', 'missingSince': 0, 'plan': p}
                      for p in plans}}
    with open(os.path.join(STATE, 'checkpoint.json.tmp'), 'w') as f:
        json.dump(doc, f)
    os.rename(os.path.join(STATE, 'checkpoint.json.tmp'), os.path.join(STATE, 'checkpoint.json'))


def claim_obj(ns, name, uid, pods):
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
            'metadata': {'namespace': ns, 'name': name, 'uid': uid},
            'spec': {'devices': {'requests': []}},
            'status': {'reservedFor': [{'resource': 'pods', 'name': p, 'uid': 'pod-uid-' + p}
                                       for p in pods]}}


def pod_obj(ns, name, containers, claim_entries, statuses=None):
    """containers: [(name, [claim entry names])]"""
    spec = {'resourceClaims': claim_entries,
            'containers': [{'name': c, 'image': 'x',
                            **({'resources': {'claims': [{'name': e} for e in es]}} if es else {})}
                           for c, es in containers]}
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'namespace': ns, 'name': name, 'uid': 'pod-uid-' + name},
            'spec': spec, 'status': {'resourceClaimStatuses': statuses or []}}


def kubeconfig(url):
    path = os.path.join(TMP, 'kubeconfig')
    with open(path, 'w') as f:
        json.dump({'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
                   'clusters': [{'name': 'k', 'cluster': {'server': url}}],
                   'users': [{'name': 'u', 'user': {'token': TOKEN}}],
                   'contexts': [{'name': 'c', 'context': {'cluster': 'k', 'user': 'u'}}]}, f)
    return path


def delete(api, path):
    req = urllib.request.Request(api.url + path, method='DELETE',
                                 headers={'Authorization': 'Bearer ' + TOKEN})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


UA, UB, UC, UD = ('a0000000-0000-4000-8000-00000000000%d' % i for i in range(1, 5))
UE, UF, UG = ('e0000000-0000-4000-8000-00000000000%d' % i for i in range(1, 4))
G0, G1 = 'GPU-00000000-1111-2222-3333-000000000000', 'GPU-00000000-1111-2222-3333-000000000001'


def scrape(mon):
    st, _, body = mon.metrics()
    if st == 200:
        texts.append(body)
    return body


def skipped(text, cause):
    return value(text, 'gpuslice_monitor_skipped_total', cause=cause) or 0


def main():
    write_checkpoint([
        plan('ml', 'trainer-gpu-x7k2', UA, [(G0, 4 * GIB, 30)]),
        plan('ml', 'shared', UB, [(G0, 2 * GIB, 20), (G1, 1 * GIB, 0)]),
        plan('ml', 'orphan', UC, [(G1, GIB, 10)]),
        plan('ml', 'vanished', UD, [(G1, GIB, 10)]),
        plan('ml', 'badmagic', UE, [(G1, GIB, 10)]),
        plan('ml', 'newer', UF, [(G1, GIB, 10)]),
        plan('ml', 'short', UG, [(G1, GIB, 10)]),
    ])
    ra = write_region(UA, [(G0, 1000 * 1024 * 1024, 30, 3)])
    write_region(UB, [(G0, 300, 20, 0), (G1, 400, 0, 0)])
    write_region(UC, [(G1, 5, 10, 0)])
    write_region(UD, [(G1, 6, 10, 0)])
    write_region(UE, [(G1, 7, 10, 0)], magic=0x1234)
    write_region(UF, [(G1, 8, 10, 0)], version=9)
    write_region(UG, [(G1, 9, 10, 0)], truncate_to=4096)

    api = FakeAPI(token=TOKEN)
    api.start()
    api.put(claim_obj('ml', 'trainer-gpu-x7k2', UA, ['trainer']))
    api.put(pod_obj('ml', 'trainer', [('main', ['gpu']), ('sidecar', []), ('helper', ['gpu'])],
                    [{'name': 'gpu', 'resourceClaimTemplateName': 'tpl'}],
                    [{'name': 'gpu', 'resourceClaimName': 'trainer-gpu-x7k2'}]))
    api.put(claim_obj('ml', 'shared', UB, ['p1', 'p2']))
    for p in ('p1', 'p2'):
        api.put(pod_obj('ml', p, [('c-' + p, ['s'])],
                        [{'name': 's', 'resourceClaimName': 'shared'}]))
    api.put(claim_obj('ml', 'orphan', UC, ['ghost']))  # its pod does not exist
    # 'vanished' is prepared on the node but not in the API
    for n, u in (('badmagic', UE), ('newer', UF), ('short', UG)):
        api.put(claim_obj('ml', n, u, []))

    mon = Monitor(TMP, ['--kubeconfig', kubeconfig(api.url), '--node-name', 'node-a',
                        '--state-dir', STATE, '--host-dir', HOST, '--standalone-state-dir',
                        os.path.join(TMP, 'no-standalone'), '--resync-interval', '300ms'],
                  sim_env(TMP))
    try:
        if not t.ok(mon.ready(), 'monitor ready'):
            t.diag(mon.logs())
            return
        mib1000 = 1000 * 1024 * 1024
        resolved = wait_until(lambda: value(scrape(mon), 'hami_vgpu_memory_used_bytes',
                                            namespace='ml', pod='trainer', container='main')
                              == mib1000, 60)
        t.ok(resolved, 'claim from a template resolved to ml/trainer/main through '
                       'reservedFor and resourceClaimStatuses; usage from its region')
        text = scrape(mon)
        t.ok(value(text, 'hami_vgpu_memory_limit_bytes', pod='trainer', container='main')
             == 4 * GIB, 'limit from the checkpoint\'s plan')
        t.is_eq([k for k in samples(text, 'hami_vgpu_memory_used_bytes')
                 if ('container', 'sidecar') in k], [],
                'a container that does not use the claim has no series')
        t.ok(value(text, 'hami_vgpu_memory_used_bytes', pod='trainer', container='helper')
             == mib1000, 'a second container using the claim reports the claim\'s usage too')
        t.ok(value(text, 'hami_dra_vgpu_memory_allocated_bytes', pod='trainer') == 4 * GIB,
             'allocation per pod counts the claim once, however many of its containers use it')
        for p in ('p1', 'p2'):
            t.ok(value(text, 'hami_vgpu_memory_used_bytes', pod=p, container='c-' + p,
                       vdevice_index='0', device_uuid=G0) == 300 and
                 value(text, 'hami_vgpu_memory_used_bytes', pod=p, container='c-' + p,
                       vdevice_index='1', device_uuid=G1) == 400,
                 'claim shared by two pods: %s sees both devices of the claim' % p)
            t.ok(value(text, 'hami_dra_vgpu_memory_allocated_bytes', node='node-a', pod=p,
                       namespace='ml', device_uuid=G0) == 2 * GIB and
                 value(text, 'hami_dra_vgpu_core_allocated_ratio', pod=p, device_uuid=G0) == 0.2,
                 'allocation per pod (%s)' % p)
        t.ok(wait_until(lambda: skipped(scrape(mon), 'pod_gone') >= 1, 30),
             'a claim whose pod is gone is counted (pod_gone)')
        text = scrape(mon)
        t.is_eq([k for k in samples(text, 'hami_vgpu_memory_used_bytes') if ('pod', 'ghost') in k],
                [], 'and has no per-container series')
        t.ok(skipped(text, 'claim_gone') >= 1, 'a claim gone from the API is counted (claim_gone)')
        t.ok(value(text, 'gpuslice_claim_memory_used_bytes', claim='vanished') == 6,
             'its claim-level usage is still read live from the region')
        for name, cause in (('badmagic', 'region_bad_magic'), ('newer', 'region_bad_version'),
                            ('short', 'region_truncated')):
            t.ok(skipped(text, cause) >= 1, '%s region counted (%s)' % (name, cause))
            t.ok(value(text, 'gpuslice_claim_region_healthy', claim=name) == 0 and
                 value(text, 'gpuslice_claim_memory_used_bytes', claim=name) is None,
                 '%s: healthy 0 and no usage value (absent, not 0)' % name)
        t.ok(value(text, 'gpuslice_claim_oom_refusals_total', claim='trainer-gpu-x7k2') == 3,
             'per-claim OOM refusals from the region')
        host0 = value(text, 'hami_host_gpu_memory_used_bytes', device_index='0')
        t.ok(host0 is not None, 'device metrics from gpusim\'s NVML alongside')

        # Live: a change in the region shows in the next scrape.
        set_used(ra, 0, 123 * 1024 * 1024)
        t.is_eq(value(scrape(mon), 'hami_vgpu_memory_used_bytes', pod='trainer',
                      container='main'), 123.0 * 1024 * 1024, 'usage is read live')

        # One log line per cause and object, however many refreshes.
        wait_until(lambda: skipped(scrape(mon), 'region_truncated') >= 5, 30)
        logs = mon.logs()
        t.is_eq(sum(1 for l in logs.splitlines() if 'cause=region_truncated' in l), 1,
                'a truncated region is logged once, counted every refresh')
        t.ok('cause=pod_gone' in logs and 'cause=claim_gone' in logs and
             'cause=region_bad_version' in logs, 'each cause is logged')

        # The trainer pod is deleted: its series go (no stale value under its name).
        delete(api, '/api/v1/namespaces/ml/pods/trainer')
        t.ok(wait_until(lambda: value(scrape(mon), 'hami_vgpu_memory_used_bytes',
                                      pod='trainer') is None, 30),
             'pod deleted: its per-container series disappear')

        # The API server goes down (it answers 503 on the connections already open, then
        # stops listening): no crash, counted, values still live.
        api.fail_next(100000, status=503)
        api.stop()
        t.ok(wait_until(lambda: skipped(scrape(mon), 'api_error') >= 1, 30),
             'API server down: counted (api_error)')
        text = scrape(mon)
        t.ok(mon.proc.poll() is None and value(text, 'hami_vgpu_memory_used_bytes', pod='p1',
                                               vdevice_index='0') == 300,
             'still serving, resolved pods keep their live usage')
        set_used(os.path.join(HOST, 'claims', UB, 'region', 'region'), 0, 301)
        t.is_eq(value(scrape(mon), 'hami_vgpu_memory_used_bytes', pod='p2', vdevice_index='0'),
                301.0, 'values stay live while the API is down')

        # The claim is unprepared: gone from the checkpoint, gone from /metrics.
        write_checkpoint([plan('ml', 'shared', UB, [(G0, 2 * GIB, 20), (G1, 1 * GIB, 0)])])
        t.ok(wait_until(lambda: value(scrape(mon), 'gpuslice_monitor_claims', source='plugin')
                        == 1, 30), 'unprepared claims leave the catalog')
        text = scrape(mon)
        t.is_eq([k for k in samples(text, 'gpuslice_claim_memory_used_bytes')
                 if ('claim', 'vanished') in k], [], 'an unprepared claim has no series left')
        # A broken checkpoint: skipped, no crash, nothing stale.
        with open(os.path.join(STATE, 'checkpoint.json'), 'w') as f:
            f.write('{"version": 1, "claims": ')
        t.ok(wait_until(lambda: skipped(scrape(mon), 'checkpoint_unreadable') >= 1, 30),
             'corrupt checkpoint counted')
        t.ok(value(scrape(mon), 'gpuslice_monitor_claims', source='plugin') == 0,
             'and its claims are not reported from a stale copy')
        t.is_eq(mon.stop(), 0, 'monitor exits 0 on SIGTERM')
    finally:
        mon.stop()
        api.stop()
    bad = ['exposition %d: %s' % (i, '; '.join(p)) for i, p in
           enumerate(promtool_problems(x) for x in texts) if p]
    t.ok(texts and not bad, 'promtool check metrics: zero problems in all %d expositions' %
         len(texts), diag='\n'.join(bad[:5]))


t.run('kubernetes', main)
rc = t.done()
if not rc:
    shutil.rmtree(TMP, ignore_errors=True)  # kept for a look when something failed
sys.exit(rc)
