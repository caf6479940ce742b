#!/usr/bin/python3
"""The kubelet's view of the plugin: registration, ResourceSlices (strict schema), prepare and
unprepare over v1 and v1beta1, CDI specs (CDI schema), limits files, idempotency, concurrency,
slice re-creation, gate-off detection and metrics. Runs on gpusim's T4."""
import json
import os
import stat
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

import pluginlib as pl  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402


def check_registration(t, env):
    sock = env.kubelet.wait_socket(20)
    t.is_eq(os.path.basename(sock or ''), f'{pl.DRIVER}-reg.sock', 'registration socket name')
    # The "within 1 s" requirement is measured by bench/plugin (GetInfo round trip p50/p99);
    # tests carry no timing thresholds.
    info = env.kubelet.get_info(sock, timeout=20)
    t.is_eq(info.type, 'DRAPlugin', 'GetInfo type')
    t.is_eq(info.name, pl.DRIVER, 'GetInfo name')
    t.is_eq(info.endpoint, os.path.join(env.dirs['plugin'], 'dra.sock'), 'GetInfo endpoint')
    t.is_eq(list(info.supported_versions), ['v1.DRAPlugin', 'v1beta1.DRAPlugin'],
            'supported versions')
    env.kubelet.register()


def check_slices(t, env):
    slices = env.wait_slices(lambda s: len(s) == 1)
    t.is_eq(len(slices), 1, 'one ResourceSlice for the T4 node')
    if not slices:
        return None
    s = slices[0]
    t.valid(pl.slice_validator(), s, 'ResourceSlice is valid against the strict v1 schema')
    spec = s['spec']
    t.is_eq(spec['pool'], {'name': pl.NODE, 'generation': spec['pool']['generation'],
                           'resourceSliceCount': 1}, 'pool = node name, one slice')
    dev = spec['devices'][0]
    t.is_eq(dev['name'], 'hami-gpu-0', 'device name')
    t.is_eq(dev['capacity']['cores'], {'value': '100', 'requestPolicy': {
        'default': '100', 'validRange': {'min': '0', 'max': '100', 'step': '1'}}},
        'cores capacity as in the lab')
    t.is_eq(dev['capacity']['memory'], {'value': '15Gi', 'requestPolicy': {
        'default': '15Gi', 'validRange': {'min': '1Mi', 'max': '15Gi', 'step': '1Mi'}}},
        'memory capacity as in the lab')
    t.is_eq(dev.get('allowMultipleAllocations'), True, 'allowMultipleAllocations')
    a = dev['attributes']
    t.is_eq(a['type'], {'string': 'hami-gpu'}, 'type attribute')
    t.is_eq(a['productName'], {'string': 'Tesla T4'}, 'productName Tesla T4')
    t.is_eq(a['architecture'], {'string': 'Turing'}, 'architecture Turing')
    t.is_eq(a['cudaComputeCapability'], {'version': '7.5.0'}, 'compute capability 7.5.0')
    t.ok(a['uuid']['string'].startswith('GPU-'), 'uuid attribute')
    t.ok('version' in a['driverVersion'] and 'version' in a['cudaDriverVersion'],
         'driver versions typed as versions')
    t.ok('int' in a['nvlinkDomain'], 'nvlinkDomain attribute')
    return s


def check_prepare(t, env, version, ckeys):
    c = pl.claim(f'single-gpu-{version}', results=[('single-gpu', 'hami-gpu-0', 30, '4Gi')])
    c = env.api.put(c)
    ns, name, uid = pl.ref(c)
    resp = env.kubelet.prepare(version, [pl.ref(c)])
    t.is_eq(list(resp.claims.keys()), [uid], f'{version}: response keyed by claim UID')
    r = resp.claims[uid]
    t.is_eq(r.error, '', f'{version}: no error')
    t.is_eq(len(r.devices), 1, f'{version}: one device')
    if not r.devices:
        t.diag(env.log())
        return c, None
    d = r.devices[0]
    cdi_id = f'k8s.{pl.DRIVER}/claim={uid}-hami-gpu-0'
    t.is_eq(list(d.cdi_device_ids), [cdi_id], f'{version}: CDI id')
    t.is_eq((d.pool_name, d.device_name, list(d.request_names)),
            (pl.NODE, 'hami-gpu-0', ['single-gpu']), f'{version}: pool, device, request')
    share = c['status']['allocation']['devices']['results'][0]['shareID']
    if version == 'v1':
        t.is_eq(d.share_id, share, 'v1: share_id from the allocation')
    else:
        t.ok(not hasattr(d, 'share_id'), 'v1beta1 has no share_id field')

    # CDI spec on disk: schema-valid and with the claim's edits.
    spec_path = os.path.join(env.dirs['cdi'], f'k8s.{pl.DRIVER}-claim_{uid}.json')
    t.ok(os.path.exists(spec_path), f'{version}: CDI spec written')
    with open(spec_path) as f:
        spec = json.load(f)
    t.valid(pl.cdi_validator(), spec, f'{version}: CDI spec valid against the CDI schema')
    t.is_eq(spec['kind'], f'k8s.{pl.DRIVER}/claim', 'CDI kind')
    t.is_eq(spec['cdiVersion'], '0.5.0' if uid[0].isdigit() else '0.3.0',
            'cdiVersion is the minimum for the device name')
    edits = spec['devices'][0]['containerEdits']
    t.ok('CUDA_DEVICE_MEMORY_LIMIT_0=4096m' in edits['env'], 'memory env 4096m')
    t.ok('CUDA_DEVICE_SM_LIMIT_0=30' in edits['env'], 'SM env 30')
    mounts = {m['containerPath']: m for m in edits['mounts']}
    lim_c = f'/etc/gpuslice/limits.d/{uid}.limits'
    t.ok(lim_c in mounts and 'ro' in mounts[lim_c]['options'], 'limits file mounted ro')
    lim_h = mounts.get(lim_c, {}).get('hostPath', '')
    with open(lim_h) as f:
        limits = f.read()
    uuid_ = env.slices()[0]['spec']['devices'][0]['attributes']['uuid']['string']
    t.like(limits, f'device {uuid_} memory=4294967296 cores=30', 'limits file keyed by UUID')
    t.like(limits, f'region /var/run/gpuslice/claims/{uid}/region', 'limits file names region')
    t.like(limits, 'peers /var/run/gpuslice/peers', 'limits file names the peers directory (QoS)')
    t.ok('/var/run/gpuslice/peers' in mounts and 'ro' in mounts['/var/run/gpuslice/peers']['options'],
         "the node's claims mounted read-only as peers (compute QoS)")
    t.is_eq(stat.S_IMODE(os.stat(lim_h).st_mode), 0o444, 'limits file is read-only')
    t.ok(os.path.isdir(os.path.join(env.dirs['host'], 'claims', uid, 'region')),
         'shared region dir exists')
    reg = os.path.join(env.dirs['host'], 'claims', uid, 'region', 'region')
    st = os.stat(reg)
    t.ok(st.st_size > 0 and stat.S_IMODE(st.st_mode) == 0o666,
         'shared region file pre-created (zero-filled, writable by any container user)')

    # Idempotent: same answer again; a deleted file is re-created.
    os.unlink(spec_path)
    again = env.kubelet.prepare(version, [pl.ref(c)])
    t.is_eq(again.claims[uid].SerializeToString(), r.SerializeToString(),
            f'{version}: repeated prepare answers the same')
    t.ok(os.path.exists(spec_path), f'{version}: missing CDI spec re-created on repeat')
    ck = env.checkpoint()
    t.is_eq(ck['claims'][uid]['state'], 'PrepareCompleted', 'checkpoint says PrepareCompleted')
    ckeys.append(uid)
    return c, spec_path


def check_multi_request(t, env):
    """Two requests of one claim on one device (one of them a subrequest): one Device entry per
    result with its base request name and share_id, one CDI device, limits summed."""
    c = env.api.put(pl.claim('multi', results=[('small/t4', 'hami-gpu-0', 10, '1Gi'),
                                               ('big', 'hami-gpu-0', 20, '2Gi')]))
    uid = c['metadata']['uid']
    r = env.kubelet.prepare('v1', [pl.ref(c)]).claims[uid]
    t.is_eq(r.error, '', 'multi-request claim prepared')
    shares = [x['shareID'] for x in c['status']['allocation']['devices']['results']]
    cdi_id = f'k8s.{pl.DRIVER}/claim={uid}-hami-gpu-0'
    t.is_eq([(list(d.request_names), d.device_name, list(d.cdi_device_ids), d.share_id)
             for d in r.devices],
            [(['small'], 'hami-gpu-0', [cdi_id], shares[0]),
             (['big'], 'hami-gpu-0', [cdi_id], shares[1])],
            'one Device per result: base request name, same CDI device, own share_id')
    with open(os.path.join(env.dirs['cdi'], f'k8s.{pl.DRIVER}-claim_{uid}.json')) as f:
        spec = json.load(f)
    t.is_eq(len(spec['devices']), 1, 'one CDI device for the shared GPU')
    env_ = spec['devices'][0]['containerEdits']['env']
    t.ok('CUDA_DEVICE_MEMORY_LIMIT_0=3072m' in env_ and 'CUDA_DEVICE_SM_LIMIT_0=30' in env_,
         'env limits are the sums (3072m, 30)', diag=env_)
    lim = os.path.join(env.dirs['host'], 'claims', uid, f'{uid}.limits')
    with open(lim) as f:
        t.like(f.read(), 'memory=3221225472 cores=30', 'limits file holds the sums')
    r = env.kubelet.unprepare('v1', [pl.ref(c)]).claims[uid]
    t.is_eq(r.error, '', 'multi-request claim unprepared')


def slice_lists(env):
    """The publisher's LISTs of ResourceSlices (not its watch requests)."""
    return [r for r in env.api.requests(method='GET', match='/resourceslices')
            if 'watch' not in str(r.get('query'))]


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'kubelet flow', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    with pl.PluginEnv(t) as env:
        hport = pl.free_port()
        env.start(wait=False, metrics=True, extra=['--healthcheck-port', str(hport)])
        health = f'http://127.0.0.1:{hport}'
        t.run('registration', check_registration, t, env)
        t.run('slices', check_slices, t, env)
        keys = []
        c1, p1 = t.run('prepare v1', check_prepare, t, env, 'v1', keys) or (None, None)
        c2, p2 = t.run('prepare v1beta1', check_prepare, t, env, 'v1beta1', keys) or (None, None)
        t.like(env.metrics(), f'gpuslice_plugin_claims_prepared{{driver="{pl.DRIVER}"}} 2\n',
               'metrics: two claims prepared')

        t.run('multi-request claim', check_multi_request, t, env)

        # Concurrent prepares of distinct claims all succeed.
        cs = [env.api.put(pl.claim(f'par-{i}', results=[('r', 'hami-gpu-0', 5, '1Gi')]))
              for i in range(8)]
        res = pl.run_threads([lambda c=c: env.kubelet.prepare('v1', [pl.ref(c)]) for c in cs])
        t.ok(all(not isinstance(r, Exception) and r.claims[c['metadata']['uid']].error == ''
                 for r, c in zip(res, cs)), 'eight concurrent prepares succeed',
             diag=repr(res))
        ck = env.checkpoint()
        t.ok(all(ck['claims'][c['metadata']['uid']]['state'] == 'PrepareCompleted' for c in cs),
             'all concurrent claims checkpointed')
        res = pl.run_threads([lambda c=c: env.kubelet.unprepare('v1beta1', [pl.ref(c)])
                              for c in cs])
        t.ok(all(not isinstance(r, Exception) and r.claims[c['metadata']['uid']].error == ''
                 for r, c in zip(res, cs)), 'eight concurrent unprepares succeed')

        # Unprepare removes everything; unknown claims succeed.
        for c, ver in ((c1, 'v1'), (c2, 'v1beta1')):
            if not c:
                continue
            uid = c['metadata']['uid']
            r = env.kubelet.unprepare(ver, [pl.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{ver}: unprepare ok')
        t.is_eq(env.claim_files(), [], 'unprepare leaves no claim files')
        t.is_eq(env.checkpoint()['claims'], {}, 'checkpoint empty after unprepare')
        r = env.kubelet.unprepare('v1', [('test-dra', 'never', '0e0e0e0e-1111-2222-3333-444444444444')])
        t.is_eq(r.claims['0e0e0e0e-1111-2222-3333-444444444444'].error, '',
                'unprepare of an unknown claim succeeds')

        # kubelet wipes the node's slices: the plugin re-creates them.
        before = env.slices()
        for s in before:
            env.api_request('DELETE', f"/apis/resource.k8s.io/v1/resourceslices/{s['metadata']['name']}")
        after = env.wait_slices(lambda s: len(s) == 1)
        t.is_eq(len(after), 1, 'wiped ResourceSlice re-created')
        if after and before:
            t.ok(after[0]['spec']['pool']['generation'] > before[0]['spec']['pool']['generation'],
                 'pool generation increased on re-create')
            t.valid(pl.slice_validator(), after[0], 're-created slice is valid')
        # The API server expires the watch (410): the plugin relists and keeps watching, so a
        # second wipe is noticed too (the periodic resync is 5 minutes away).
        def watches():
            return [r for r in env.api.requests(method='GET', match='/resourceslices')
                    if r['query'].get('watch') not in (None, '', '0', 'false')]
        before_watches = len(watches())
        env.api.expire_watches()
        t.ok(pl.wait_for(lambda: len(watches()) > before_watches, 15),
             'after a 410 the plugin opens a new watch')
        for s in env.slices():
            env.api_request('DELETE', f"/apis/resource.k8s.io/v1/resourceslices/{s['metadata']['name']}")
        again = env.wait_slices(lambda s: len(s) == 1)
        t.is_eq(len(again), 1, 'after a 410 the watch resumes: second wipe re-created')

        for path in ('/healthz', '/readyz'):
            with urllib.request.urlopen(health + path, timeout=5) as r:
                t.is_eq((r.status, r.read()), (200, b'ok\n'), f'{path}: 200 ok')
        try:
            urllib.request.urlopen(health + '/nope', timeout=5)
            t.ok(False, 'unknown health path: 404')
        except urllib.error.HTTPError as e:
            t.is_eq(e.code, 404, 'unknown health path: 404')
        m = env.metrics()
        # 2 claims + their 2 repeated prepares + the multi-request one + 8 concurrent ones.
        t.like(m, f'gpuslice_plugin_prepare_total{{driver="{pl.DRIVER}"}} 13\n',
               'metrics: 13 successful claim prepares')
        t.like(m, f'gpuslice_plugin_unprepare_total{{driver="{pl.DRIVER}"}} 12\n',
               'metrics: 12 unprepares (1 + 8 + 2 + 1 unknown)')
        t.like(m, f'gpuslice_plugin_devices_published{{driver="{pl.DRIVER}"}} 1',
               'metrics: one device published')
        t.like(m, 'gpuslice_plugin_consumable_capacity_gate_off{driver="' + pl.DRIVER
               + '",gate="DRAConsumableCapacity"} 0', 'metrics: gate on')
        t.like(m, 'gpuslice_plugin_registered{driver="' + pl.DRIVER + '"} 1',
               'metrics: registered')
        t.like(m, f'gpuslice_plugin_claims_prepared{{driver="{pl.DRIVER}"}} 0\n',
               'metrics: no claim prepared after all unprepares')
        t.is_eq(env.stop(), 0, 'plugin exits 0 on SIGTERM')
        t.ok(not os.path.exists(os.path.join(env.dirs['registrar'], f'{pl.DRIVER}-reg.sock')),
             'registration socket removed on exit')

    # Feature gate off: the API server drops the fields; one clear log line + metric.
    # (This plugin also runs in pure-CDI mode: device nodes instead of the volume-mount selection.)
    with pl.PluginEnv(t, extra_args=['--gpu-selection', 'device-nodes']) as env:
        env.api.set_gate('DRAConsumableCapacity', False)
        env.start(metrics=True)
        c = env.api.put(pl.claim('nodes', results=[('r', 'hami-gpu-0', None, None)]))
        uid = c['metadata']['uid']
        r = env.kubelet.prepare('v1', [pl.ref(c)]).claims[uid]
        t.is_eq(r.error, '', 'device-nodes mode: prepared (claim without consumedCapacity)')
        with open(os.path.join(env.dirs['cdi'], f'k8s.{pl.DRIVER}-claim_{uid}.json')) as f:
            spec = json.load(f)
        t.valid(pl.cdi_validator(), spec, 'device-nodes mode: CDI spec valid')
        edits = spec['devices'][0]['containerEdits']
        t.is_eq([n['path'] for n in edits.get('deviceNodes', [])],
                ['/dev/nvidia0', '/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools'],
                'device-nodes mode: the GPU and control nodes')
        t.ok(not any(m['containerPath'].startswith('/var/run/nvidia-container-devices/')
                     for m in edits['mounts']), 'device-nodes mode: no volume-mount selection')
        t.is_eq(edits['env'], ['GPUSLICE_LIMITS_DIR=/etc/gpuslice/limits.d'],
                'whole-device claim: no limit env')
        slices = env.wait_slices(lambda s: len(s) == 1)
        t.ok(slices and 'allowMultipleAllocations' not in slices[0]['spec']['devices'][0],
             'gate off: server dropped the fields')
        ok = pl.wait_for(lambda: 'gate="DRAConsumableCapacity"} 1' in env.metrics(), 10)
        t.ok(ok, 'gate off: metric says so')
        # The event that proves no further write can come: a full compare after the detection.
        # Storing the slice unchanged makes a MODIFIED event, which kicks the publisher into a
        # sync (a LIST, then the compare). Syncs run one after another on one thread, so once the
        # second kick's LIST is seen, the first kick's compare -- and any write it decided -- is
        # over.
        for k in range(2):
            n_lists = len(slice_lists(env))
            for s in env.slices():
                env.api.put(s)
            t.ok(pl.wait_for(lambda n=n_lists: len(slice_lists(env)) > n, 10),
                 f'gate off: kick {k + 1} made the publisher compare again')
        log = env.log()
        lines = [ln for ln in log.splitlines() if 'DRAConsumableCapacity' in ln]
        t.is_eq(len(lines), 1, 'gate off: exactly one log line names DRAConsumableCapacity',
                )
        t.like(lines[0] if lines else '', 'feature gate is off', 'gate-off line says what is wrong')
        writes = len(env.api.requests(method='PUT', match='/resourceslices'))
        env.kubelet.close()
        t.ok(writes <= 1, 'publisher does not fight the server over dropped fields',
             diag=f'{writes} PUTs')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
