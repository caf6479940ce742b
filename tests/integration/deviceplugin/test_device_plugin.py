#!/usr/bin/python3
"""gpuslice-device-plugin under a kubelet emulator (Python grpcio, device plugin API v1beta1 from
proto/deviceplugin/v1beta1/api.proto) on gpusim: registration, the node annotation, ListAndWatch,
Allocate for a pod the extender bound (env, mounts, limits file, bind-phase), GetPreferred-
Allocation, and a kubelet restart (sockets removed: the plugin serves and registers again)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration', 'extender'))
from extlib import Extender, FakeAPI, bind_args, create, filter_args, free_port, pod  # noqa: E402,E501
from gstest import Tap  # noqa: E402

import grpc  # noqa: E402

t = Tap()
NODE = 'gpu-node'


from dplib import Kubelet, pb  # noqa: E402


def ann_of(api, name, key):
    return ((api.get('pods', 'default', name) or {}).get('metadata', {}).get('annotations')
            or {}).get(key)


def scaled(api, tmp, kc, env):
    """HAMi's deviceMemoryScaling / deviceCoreScaling, libCudaLogLevel, disableCoreLimit: the
    published devmem/devcore are scaled, the extender places by them, Allocate sets
    CUDA_OVERSUBSCRIBE, LIBCUDA_LOG_LEVEL and GPU_CORE_UTILIZATION_POLICY (HAMi's server.go)."""
    node_name = 'scaled-node'
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': node_name}})
    pdir = os.path.join(tmp, 'plugins2')
    os.makedirs(pdir)
    kubelet = Kubelet(pdir)
    kubelet.start()
    log = open(os.path.join(tmp, 'plugin2.log'), 'w+')
    proc = subprocess.Popen([os.environ['GS_DEVICE_PLUGIN'], '--node-name', node_name,
                             '--kubeconfig', kc, '--device-plugin-dir', pdir,
                             '--host-dir', os.path.join(tmp, 'host'),
                             '--state-dir', os.path.join(tmp, 'state'),
                             '--sysfs-root', os.path.join(tmp, 'sys'),
                             '--device-memory-scaling', '1.5', '--device-core-scaling', '2',
                             '--libcuda-log-level', '4', '--disable-core-limit'],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    ext = None
    try:
        t.ok(kubelet.wait(1), 'scaled plugin registers')
        reg = []
        for _ in range(50):
            ann = api.get('nodes', None, node_name)['metadata'].get('annotations') or {}
            if 'hami.io/node-nvidia-register' in ann:
                reg = json.loads(ann['hami.io/node-nvidia-register'])
                break
            time.sleep(0.1)
        t.ok(len(reg) == 1 and reg[0]['devmem'] == 23040 and reg[0]['devcore'] == 200,
             'devmem 15360 x 1.5 = 23040, devcore 100 x 2 = 200', diag=reg)
        ext = Extender(api)
        node = api.get('nodes', None, node_name)
        p = create(api, pod('big', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 20000,
                                     'nvidia.com/gpucores': 60}]))
        ext.post('/filter', filter_args(p, [node], True))
        code, b = ext.post('/bind', bind_args(p, node_name))
        t.is_eq(b, {}, 'the extender places 20000 MiB (above the physical 15360) on the scaled card')
        endpoint = kubelet.requests[0].endpoint if kubelet.requests else 'none'
        ch, stub = kubelet.plugin(endpoint)
        ids = sorted(d.ID for d in next(stub.ListAndWatch(pb.Empty(), timeout=30)).devices)
        resp = stub.Allocate(pb.AllocateRequest(container_requests=[
            pb.ContainerAllocateRequest(devices_ids=[ids[0]])]), timeout=10)
        envs = dict(resp.container_responses[0].envs)
        t.is_eq((envs.get('CUDA_DEVICE_MEMORY_LIMIT_0'), envs.get('CUDA_OVERSUBSCRIBE'),
                 envs.get('LIBCUDA_LOG_LEVEL'), envs.get('GPU_CORE_UTILIZATION_POLICY')),
                ('20000m', 'true', '4', 'disable'),
                'Allocate: 20000m, CUDA_OVERSUBSCRIBE, LIBCUDA_LOG_LEVEL, core limit disabled')
        ch.close()
    finally:
        proc.terminate()
        try:
            rc = proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        t.is_eq(rc, 0, 'the scaled plugin stops cleanly')
        if t.failed:
            log.seek(0)
            t.diag(log.read()[-3000:])
        if ext:
            ext.stop()
        kubelet.stop()


def main():
    tmp = tempfile.mkdtemp(prefix='gs-dp-it-')
    dirs = {k: os.path.join(tmp, k) for k in ('plugins', 'host', 'state')}
    for d in dirs.values():
        os.makedirs(d)
    api = FakeAPI(token='t0k3n').start()
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}})
    kubelet = Kubelet(dirs['plugins'])
    kubelet.start()
    kc = os.path.join(tmp, 'kubeconfig')
    from extlib import kubeconfig
    kubeconfig(api.url, kc)
    env = dict(os.environ)
    env['LD_LIBRARY_PATH'] = os.environ['GS_SIM_DIR']
    env['GPUSIM_PRESET'] = 't4'
    env['GPUSIM_STATE'] = os.path.join(tmp, 'gpusim.state')
    env.pop('KUBECONFIG', None)
    log = open(os.path.join(tmp, 'plugin.log'), 'w+')
    mport = free_port()
    proc = subprocess.Popen([os.environ['GS_DEVICE_PLUGIN'], '--node-name', NODE,
                             '--kubeconfig', kc, '--device-plugin-dir', dirs['plugins'],
                             '--host-dir', dirs['host'], '--state-dir', dirs['state'],
                             '--sysfs-root', os.path.join(tmp, 'sys'),
                             '--metrics-addr', f'127.0.0.1:{mport}'],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    ext = None
    try:
        t.ok(kubelet.wait(1), 'the plugin registers with kubelet')
        r = kubelet.requests[0] if kubelet.requests else None
        t.is_eq((r.version, r.resource_name, r.options.get_preferred_allocation_available)
                if r else None, ('v1beta1', 'nvidia.com/gpu', True),
                'RegisterRequest: version, resource name, options')
        endpoint = r.endpoint if r else 'none'
        t.ok(os.path.exists(os.path.join(dirs['plugins'], endpoint)),
             'the endpoint socket exists in the device plugin directory')

        for _ in range(50):
            ann = (api.get('nodes', None, NODE)['metadata'].get('annotations') or {})
            if 'hami.io/node-nvidia-register' in ann:
                break
            time.sleep(0.1)
        reg = json.loads(ann.get('hami.io/node-nvidia-register', '[]'))
        t.ok(len(reg) == 1 and reg[0]['id'].startswith('GPU-') and reg[0]['devmem'] == 15360 and
             reg[0]['count'] == 10 and reg[0]['type'] == 'NVIDIA-Tesla T4' and reg[0]['health'],
             "node annotation in HAMi's JSON encoding (T4, 15360 MiB, split 10)", diag=reg)
        t.like(ann.get('hami.io/node-handshake'), 'Reported', 'handshake annotation')
        uuid = reg[0]['id'] if reg else 'GPU-?'

        ch, stub = kubelet.plugin(endpoint)
        opts = stub.GetDevicePluginOptions(pb.Empty(), timeout=5)
        t.ok(opts.get_preferred_allocation_available and not opts.pre_start_required,
             'GetDevicePluginOptions')
        stream = stub.ListAndWatch(pb.Empty(), timeout=30)
        first = next(stream)
        ids = sorted(d.ID for d in first.devices)
        t.is_eq(ids, sorted(f'{uuid}-{j}' for j in range(10)),
                'ListAndWatch: the GPU as 10 devices "<uuid>-<j>"')
        t.ok(all(d.health == 'Healthy' for d in first.devices), 'all devices Healthy')

        pref = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
            pb.ContainerPreferredAllocationRequest(available_deviceIDs=ids, allocation_size=1)]),
            timeout=5)
        t.is_eq(len(pref.container_responses[0].deviceIDs), 1, 'GetPreferredAllocation size 1')

        # The extender places a pod on the node the plugin published; then kubelet allocates.
        ext = Extender(api)
        node = api.get('nodes', None, NODE)
        p = create(api, pod('app', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000,
                                     'nvidia.com/gpucores': 10}]))
        code, res = ext.post('/filter', filter_args(p, [node], True))
        code, b = ext.post('/bind', bind_args(p, NODE))
        t.is_eq(b, {}, 'the extender bound the pod to the node')
        resp = stub.Allocate(pb.AllocateRequest(container_requests=[
            pb.ContainerAllocateRequest(devices_ids=[ids[3]])]), timeout=10)
        c = resp.container_responses[0]
        envs = dict(c.envs)
        t.is_eq(envs.get('NVIDIA_VISIBLE_DEVICES'), uuid, 'NVIDIA_VISIBLE_DEVICES by UUID')
        t.is_eq(envs.get('CUDA_DEVICE_MEMORY_LIMIT_0'), '8000m', 'CUDA_DEVICE_MEMORY_LIMIT_0')
        t.is_eq(envs.get('CUDA_DEVICE_SM_LIMIT'), '10', 'CUDA_DEVICE_SM_LIMIT')
        t.ok(envs.get('CUDA_DEVICE_MEMORY_SHARED_CACHE', '').endswith('.cache'),
             'CUDA_DEVICE_MEMORY_SHARED_CACHE')
        mounts = {m.container_path: (m.host_path, m.read_only) for m in c.mounts}
        t.is_eq(mounts.get('/usr/local/vgpu/libvgpu.so'),
                (os.path.join(dirs['host'], 'libvgpu.so'), True), 'libvgpu mounted read-only')
        t.is_eq(mounts.get('/etc/ld.so.preload'),
                (os.path.join(dirs['host'], 'ld.so.preload'), True), 'ld.so.preload mounted')
        lim_dir = (mounts.get('/etc/gpuslice/limits.d') or ('', False))[0]
        files = os.listdir(lim_dir) if lim_dir and os.path.isdir(lim_dir) else []
        text = open(os.path.join(lim_dir, files[0])).read() if files else ''
        t.like(text, f'device {uuid} memory={8000 * 1024 * 1024} cores=10',
               'the limits file (our format) holds the slice')
        got = api.get('pods', 'default', 'app')['metadata']['annotations']
        t.is_eq(got.get('hami.io/bind-phase'), 'success', 'bind-phase success after Allocate')
        t.is_eq(got.get('hami.io/vgpu-devices-allocated'), f'{uuid},NVIDIA,8000,10:;',
                'vgpu-devices-allocated kept')
        try:
            stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[ids[4]])]), timeout=10)
            t.ok(False, 'Allocate without a pod being bound fails')
        except grpc.RpcError as e:
            t.ok(e.code() == grpc.StatusCode.NOT_FOUND and 'bind-phase' in e.details(),
                 'Allocate without a pod being bound fails with NOT_FOUND naming bind-phase',
                 diag=f'{e.code()} {e.details()}')
        import urllib.request
        with urllib.request.urlopen(f'http://127.0.0.1:{mport}/metrics', timeout=10) as r:
            metrics = r.read().decode()
        t.ok('gpuslice_build_info{version=' in metrics and
             'gpuslice_device_plugin_allocate_total 2' in metrics and
             'gpuslice_device_plugin_allocate_errors_total 1' in metrics,
             '/metrics: build info, 2 Allocate calls, 1 error', diag=metrics)

        # Init containers first (HAMi's order): kubelet allocates the init container, then the
        # app container; the init container opts out of control (CUDA_DISABLE_CONTROL=true).
        p = pod('withinit', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 2000,
                              'nvidia.com/priority': 1}],
                init=[{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 3000}])
        p['spec']['initContainers'][0]['env'] = [{'name': 'CUDA_DISABLE_CONTROL',
                                                  'value': 'True'}]
        p = create(api, p)
        ext.post('/filter', filter_args(p, [node], True))
        code, b = ext.post('/bind', bind_args(p, NODE))
        t.is_eq(ann_of(api, 'withinit', 'hami.io/vgpu-devices-allocated'),
                f'{uuid},NVIDIA,3000,0:;{uuid},NVIDIA,2000,0:;',
                'the extender writes the init container entry first')
        got = []
        for k in range(2):
            resp = stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[ids[5 + k]])]), timeout=10)
            c = resp.container_responses[0]
            got.append((dict(c.envs), {m.container_path: m.host_path for m in c.mounts}))
        t.is_eq([g[0].get('CUDA_DEVICE_MEMORY_LIMIT_0') for g in got], ['3000m', '2000m'],
                'the first Allocate serves the init container, the second the app container')
        t.ok('/etc/ld.so.preload' not in got[0][1] and '/etc/ld.so.preload' in got[1][1],
             'no ld.so.preload for the container with CUDA_DISABLE_CONTROL=True')
        t.is_eq([g[0].get('CUDA_TASK_PRIORITY') for g in got], [None, '1'],
                'nvidia.com/priority: 1 -> CUDA_TASK_PRIORITY=1 for that container only')
        t.ok(all(g[1].get('/tmp/vgpulock') == '/tmp/vgpulock' for g in got),
             '/tmp/vgpulock mounted as HAMi does')
        t.is_eq(ann_of(api, 'withinit', 'hami.io/bind-phase'), 'success',
                'bind-phase success after both containers')

        # An Allocate that cannot be served marks the pod failed and releases its node lock
        # (PodAllocationFailed in HAMi's device plugin).
        p = create(api, pod('two', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}]))
        ext.post('/filter', filter_args(p, [node], True))
        ext.post('/bind', bind_args(p, NODE))
        n = api.get('nodes', None, NODE)
        n['metadata']['annotations']['hami.io/mutex.lock'] = \
            '2026-12-01T20:00:05+08:00,default,two'
        api.put(n)
        try:
            stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[ids[7], ids[8]])]), timeout=10)
            t.ok(False, 'Allocate with a device count the extender did not assign fails')
        except grpc.RpcError as e:
            t.like(e.details(), 'assigned 1 GPUs', 'Allocate with 2 devices for 1 GPU fails')
        t.is_eq(ann_of(api, 'two', 'hami.io/bind-phase'), 'failed', 'bind-phase failed')
        evs = [e for e in api.list('events') if e['involvedObject'].get('name') == 'two']
        t.is_eq([(e['type'], e['reason'], e['involvedObject'].get('kind'),
                  e['involvedObject'].get('uid'), e['source'].get('component')) for e in evs],
                [('Warning', 'AllocationFailed', 'Pod', p['metadata']['uid'],
                  'gpuslice-device-plugin')],
                'a failed Allocate: Warning AllocationFailed on the Pod (issue 36)')
        t.like(evs[0]['message'] if evs else '', 'assigned 1 GPUs', 'the Event says why')
        # The same failure, again and again: a bounded number of Event writes.
        api.clear_log()
        same, t0 = 0, time.monotonic()
        for _ in range(1000):
            try:
                stub.Allocate(pb.AllocateRequest(container_requests=[
                    pb.ContainerAllocateRequest(devices_ids=[ids[7], ids[8]])]), timeout=10)
            except grpc.RpcError as e:
                same += 'assigned 1 GPUs' in e.details()
        writes = [r for r in api.requests() if '/events' in r['path']
                  and r['method'] in ('POST', 'PATCH')]
        took = time.monotonic() - t0
        # One write per object + reason per repeat interval (60 s): the count is raised then.
        bound = int(took / 60) + 1
        t.diag(f'1000 failing Allocates ({same} the same failure) in {took:.0f}s -> '
               f'{len(writes)} Event writes (bound {bound})')
        t.ok(same == 1000 and len(writes) <= bound,
             '1,000 identical Allocate failures: one Event write per repeat interval at most',
             diag=writes[:3])
        t.is_eq((api.get('nodes', None, NODE)['metadata'].get('annotations') or {}).get(
            'hami.io/mutex.lock'), None, "the pod's node lock is released")
        ch.close()

        # kubelet restart: it removes every socket of the directory and serves a new one.
        kubelet.stop()
        for f in os.listdir(dirs['plugins']):
            os.unlink(os.path.join(dirs['plugins'], f))
        kubelet.start()
        t.ok(kubelet.wait(2), 'after a kubelet restart the plugin registers again')
        for _ in range(50):
            if os.path.exists(os.path.join(dirs['plugins'], endpoint)):
                break
            time.sleep(0.1)
        ch, stub = kubelet.plugin(endpoint)
        first = next(stub.ListAndWatch(pb.Empty(), timeout=10))
        t.is_eq(len(first.devices), 10, 'ListAndWatch answers on the new socket')
        ch.close()
        scaled(api, tmp, kc, env)
    finally:
        proc.terminate()
        try:
            rc = proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        t.is_eq(rc, 0, 'the plugin stops cleanly on SIGTERM')
        if t.failed:
            log.seek(0)
            t.diag(log.read()[-4000:])
        if ext:
            t.is_eq(ext.stop(), 0, 'the extender stops cleanly on SIGTERM')
        kubelet.stop()
        api.stop()
        shutil.rmtree(tmp, True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
