#!/usr/bin/python3
"""gpuslice-device-plugin against a hostile tenant and bad placements (issue 21, "Daemons: Device
plugin"): a tenant patching its own pod's annotations is not served in place of the pod the
extender placed (the plugin trusts the extender's record on the Node); a GPU of another node,
limits above the card and junk UUIDs are refused; a failed Allocate consumes nothing; a pod UID
that is not a UID never names a folder; folders of pods gone are removed; a kubelet socket
recreated (same inode or not) is registered with again (docs/internals/legacy.md)."""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration', 'extender'))
from extlib import Extender, FakeAPI, bind_args, create, filter_args, pod  # noqa: E402
from gstest import Tap  # noqa: E402

import grpc  # noqa: E402
from dplib import Plugin, pb  # noqa: E402

t = Tap()
NODE = 'gpu-node'
OTHER = 'GPU-00000000-dead-beef-0000-000000000000'


def place(api, ext, name, containers):
    p = create(api, pod(name, containers))
    ext.post('/filter', filter_args(p, [api.get('nodes', None, NODE)], True))
    code, b = ext.post('/bind', bind_args(p, NODE))
    return api.get('pods', 'default', name) if b == {} else None


def delete(api, name):
    import urllib.request
    req = urllib.request.Request(f'{api.url}/api/v1/namespaces/default/pods/{name}',
                                 method='DELETE', headers={'Authorization': 'Bearer t0k3n'})
    urllib.request.urlopen(req, timeout=10).read()


def allocate(stub, *counts):
    """-> (response or None, (code, details) or None)."""
    try:
        return stub.Allocate(pb.AllocateRequest(container_requests=[
            pb.ContainerAllocateRequest(devices_ids=[f'x-{i}' for i in range(n)])
            for n in counts]), timeout=20), None
    except grpc.RpcError as e:
        return None, (e.code(), e.details())


def env0(resp, i=0):
    return dict(resp.container_responses[i].envs) if resp else {}


def tamper(api, name, **ann):
    p = api.get('pods', 'default', name)
    p['metadata'].setdefault('annotations', {}).update(ann)
    api.put(p)


def record(api, p, devices, when=1):
    """Write a placement record as an extender would (a compromised or buggy one)."""
    n = api.get('nodes', None, NODE)
    md = p['metadata']
    n['metadata']['annotations']['gpuslice.io/assign-' + md['uid']] = json.dumps(
        {'pod': f"default/{md['name']}", 'time': when, 'devices': devices, 'next': 0})
    api.put(n)


def bound_pod(api, name, devices, uid=None):
    """A pod bound to the node whose annotations say what an extender would write."""
    obj = pod(name, [{'nvidia.com/gpu': 1}])
    if uid:
        obj['metadata']['uid'] = uid
    obj['metadata']['annotations'] = {
        'hami.io/vgpu-devices-to-allocate': devices, 'hami.io/vgpu-devices-allocated': devices,
        'hami.io/vgpu-node': NODE, 'hami.io/bind-phase': 'allocating', 'hami.io/bind-time': '1'}
    obj['spec']['nodeName'] = NODE
    return create(api, obj)


def scenarios(api, ext, plugin, stub, uuid, tmp):
    # The tenant's pod was placed and served; then its owner patches it to be served again.
    t_pod = place(api, ext, 'tenant', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}])
    resp, err = allocate(stub, 1)
    t.is_eq(env0(resp).get('CUDA_DEVICE_MEMORY_LIMIT_0') or err, '1000m', 'the tenant pod is '
            'served its 1000 MiB')
    victim = place(api, ext, 'victim', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}])
    t.ok(t_pod and victim, 'the extender placed both pods')
    tamper(api, 'tenant', **{'hami.io/bind-phase': 'allocating', 'hami.io/bind-time': '1',
                             'hami.io/vgpu-devices-to-allocate': f'{uuid},NVIDIA,15360,100:;'})
    resp, err = allocate(stub, 1)
    t.is_eq((env0(resp).get('CUDA_DEVICE_MEMORY_LIMIT_0'), env0(resp).get('CUDA_DEVICE_SM_LIMIT')),
            ('8000m', '0'), "kubelet's Allocate for the placed pod gets that pod's slice, not the "
            "tenant's patched 15360 MiB / 100 cores")
    resp, err = allocate(stub, 1)
    t.ok(err and err[0] == grpc.StatusCode.NOT_FOUND, 'the patched tenant pod is never served',
         diag=err)

    # Bad placements (records and annotations both say so): refused, naming what is wrong.
    for name, dev, want in (
            ('other-node', f'{OTHER},NVIDIA,1000,10:;', 'not a GPU of node'),
            ('huge', f'{uuid},NVIDIA,16777216,10:;', 'not within the card'),
            # (the HAMi codec may refuse 1000 cores itself: the record is then ignored)
            ('cores', f'{uuid},NVIDIA,1000,1000:;', ('cores', 'no pod placed')),
            ('junk', f'{uuid}=x,NVIDIA,1000,10:;', 'not a GPU of node')):
        p = bound_pod(api, name, dev)
        record(api, p, dev)
        resp, err = allocate(stub, 1)
        wants = want if isinstance(want, tuple) else (want,)
        t.ok(resp is None and err and any(w in err[1] for w in wants),
             f'{name}: Allocate refused ({wants[0]})',
             diag=err if err else env0(resp))
        n = api.get('nodes', None, NODE)
        del n['metadata']['annotations']['gpuslice.io/assign-' + p['metadata']['uid']]
        api.put(n)
        delete(api, name)

    # A failed Allocate consumes nothing: the two containers are still there after it.
    two = place(api, ext, 'two', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000},
                                  {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 2000}])
    t.ok(two, 'a two-container pod is placed')
    resp, err = allocate(stub, 1, 3)
    t.ok(err and err[0] == grpc.StatusCode.FAILED_PRECONDITION, 'an Allocate whose second '
         'container asks for the wrong device count fails', diag=err)
    resp, err = allocate(stub, 1, 1)
    t.is_eq([env0(resp, i).get('CUDA_DEVICE_MEMORY_LIMIT_0') for i in range(2)] if resp else err,
            ['1000m', '2000m'], 'the retry gets both containers: the failed call consumed neither')
    t.is_eq(api.get('pods', 'default', 'two')['metadata']['annotations'].get(
        'hami.io/bind-phase'), 'success', 'bind-phase success after the last container')

    # A pod UID that is not a UID never names a folder.
    bound_pod(api, 'escape', f'{uuid},NVIDIA,1000,10:;', uid='../../escape')
    resp, err = allocate(stub, 1)
    t.ok(resp is None and not os.path.exists(os.path.join(tmp, 'escape-c0')) and
         not any('escape' in f for _, ds, fs in os.walk(tmp) for f in ds + fs),
         'a pod whose UID is "../../escape" is not served and no folder is created', diag=err)
    delete(api, 'escape')

    # Folders of pods gone from the node are removed; those of live pods stay.
    state = plugin.dirs['state']
    live = [d for d in os.listdir(os.path.join(state, 'limits'))]
    t.ok(len(live) >= 4, f'{len(live)} per-container limits folders after the Allocates')
    delete(api, 'two')
    delete(api, 'tenant')
    gone = [two['metadata']['uid'], t_pod['metadata']['uid']]
    left = None
    for _ in range(200):  # bounded: the plugin cleans every --gc-interval (1 s here)
        left = [d for k in ('limits', 'containers', 'regions')
                for d in os.listdir(os.path.join(state, k)) if d[:36] in gone]
        if not left:
            break
        time.sleep(0.1)
    t.is_eq(left, [], 'the folders of deleted pods are removed')
    t.ok(any(d.startswith(victim['metadata']['uid'])
             for d in os.listdir(os.path.join(state, 'limits'))),
         'the folder of the live pod stays')

    # Issue 31: a pod bound and deleted before kubelet's Allocate leaves no record on the Node
    # after the GC; the record of a bound pod still waiting for its Allocate stays.
    def records():
        return {k for k in api.get('nodes', None, NODE)['metadata']['annotations']
                if k.startswith('gpuslice.io/assign-')}
    waiting = place(api, ext, 'waiting', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}])
    ghost = place(api, ext, 'ghost', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}])
    keys = {'gpuslice.io/assign-' + x['metadata']['uid'] for x in (waiting, ghost)}
    t.ok(waiting and ghost and keys <= records(), 'two pods bound, their records on the Node')
    delete(api, 'ghost')
    start = time.time()
    for _ in range(100):  # bounded: the plugin collects every --gc-interval (1 s here)
        if 'gpuslice.io/assign-' + ghost['metadata']['uid'] not in records():
            break
        time.sleep(0.1)
    t.is_eq(records() & keys, {'gpuslice.io/assign-' + waiting['metadata']['uid']},
            f'the deleted pod\'s record is collected ({time.time() - start:.1f} s), the waiting '
            'pod\'s record stays')
    t.ok(any('stale placement record removed' in ln and 'default/ghost' in ln and 'is gone' in ln
             for ln in plugin.output().splitlines()), 'the removal is logged with its reason')
    resp, err = allocate(stub, 1)
    t.is_eq(env0(resp).get('CUDA_DEVICE_MEMORY_LIMIT_0') or err, '1000m',
            'the waiting pod is then served')


def kubelet_restarts(plugin):
    """kubelet restarts without touching our socket: its new socket may reuse the inode."""
    k = plugin.kubelet
    sock = os.path.join(plugin.dirs['plugins'], 'kubelet.sock')
    got = 0
    for i in range(10):
        n = len(k.requests)
        k.stop()
        if os.path.exists(sock):
            os.unlink(sock)
        k.start()
        got += k.wait(n + 1, timeout=30)
    t.is_eq(got, 10, 'each of 10 kubelet restarts is registered with again')


def main():
    tmp = tempfile.mkdtemp(prefix='gs-dp-hostile-')
    api = FakeAPI(token='t0k3n').start()
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}})
    plugin = Plugin(api, tmp, NODE, extra=['--gc-interval', '1s'])
    ext = Extender(api)
    try:
        t.ok(plugin.kubelet.wait(1), 'the plugin registers')
        for _ in range(100):
            reg = ((api.get('nodes', None, NODE)['metadata'].get('annotations') or {})
                   .get('hami.io/node-nvidia-register'))
            if reg:
                break
            time.sleep(0.1)
        uuid = json.loads(reg or '[{"id": "?"}]')[0]['id']
        ch, stub = plugin.kubelet.plugin(plugin.kubelet.requests[0].endpoint)
        t.run('scenarios', scenarios, api, ext, plugin, stub, uuid, tmp)
        ch.close()
        t.run('kubelet restarts', kubelet_restarts, plugin)
    finally:
        rc = plugin.stop()
        t.is_eq(rc, 0, 'the plugin stops cleanly')
        if t.failed:
            t.diag(plugin.output()[-5000:])
        ext.stop()
        api.stop()
        shutil.rmtree(tmp, True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
