#!/usr/bin/python3
"""gpuslice-extender against the fake API server with kube-scheduler's extender JSON: HAMi's
documented scenarios, HAMi's annotation encodings and reason names, nodeCacheCapable both ways,
the node lock under concurrent binds (docs/internals/legacy.md)."""
import datetime
import json
import sys
import threading
import time

from extlib import Extender, FakeAPI, bind_args, create, filter_args, gpu, node, pod
from gstest import Tap, reference_path

t = Tap()
T4 = 'GPU-7d4e1a2b-0000-4000-8000-0000000000t4'.replace('t4', '04')
L4 = 'GPU-1b2c3d4e-0000-4000-8000-000000000024'
A, B = 'GPU-aaaaaaaa-0000-4000-8000-00000000000a', 'GPU-bbbbbbbb-0000-4000-8000-00000000000b'


def ann(api, name, key, ns='default'):
    return ((api.get('pods', ns, name) or {}).get('metadata', {}).get('annotations') or {}).get(key)


def schedule(api, ext, p, nodes, by_name=True):
    """filter, then bind to the node it returned. -> (filter result, bind result or None)."""
    code, res = ext.post('/filter', filter_args(p, nodes, by_name))
    if code != 200:
        return {'error': f'HTTP {code}: {res}'}, None
    names = res.get('nodenames') if by_name else [n['metadata']['name'] for n in
                                                  (res.get('nodes') or {}).get('items') or []]
    if not names:
        return res, None
    code, b = ext.post('/bind', bind_args(p, names[0]))
    return res, (b if code == 200 else {'error': f'HTTP {code}: {b}'})


def t4_scenario(api, ext, by_name):
    how = 'nodenames' if by_name else 'full nodes'
    api.reset()
    n = create(api, node('t4', [gpu(T4, 15360)]))
    p1 = create(api, pod('p1', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000,
                                 'nvidia.com/gpucores': 10}]))
    res, b = schedule(api, ext, p1, [n], by_name)
    t.is_eq(res.get('failedNodes') or {}, {}, f'{how}: first 8000 MiB pod fits the T4')
    t.is_eq(b, {}, f'{how}: bind answers an empty ExtenderBindingResult')
    got = api.get('pods', 'default', 'p1')
    t.is_eq(got['spec'].get('nodeName'), 't4', f'{how}: pod bound through pods/binding')
    a = got['metadata']['annotations']
    want = f'{T4},NVIDIA,8000,10:;'
    t.is_eq(a.get('hami.io/vgpu-devices-allocated'), want,
            f"{how}: vgpu-devices-allocated in HAMi's encoding")
    t.is_eq(a.get('hami.io/vgpu-devices-to-allocate'), want, f'{how}: vgpu-devices-to-allocate')
    t.is_eq(a.get('hami.io/vgpu-node'), 't4', f'{how}: vgpu-node')
    t.is_eq(a.get('hami.io/bind-phase'), 'allocating', f'{how}: bind-phase allocating')
    t.ok((a.get('hami.io/vgpu-time') or '').isdigit(), f'{how}: vgpu-time is unix seconds')
    lock = (api.get('nodes', None, 't4')['metadata'].get('annotations') or {}).get(
        'hami.io/mutex.lock')
    t.is_eq(lock, None, f'{how}: node lock released after bind')
    lock_writes = [r for r in api.requests(method='PATCH', match='/nodes/t4')]
    t.is_eq(len(lock_writes), 3, f'{how}: bind took hami.io/mutex.lock, recorded the placement '
            '(gpuslice.io/assign-<uid>) and released the lock')
    # Merge of daemons and hami: the Binding carries HAMi's annotations (daemons); the
    # hami.io/vgpu-node label (hami) is patched only once the binding was accepted.
    pod_writes = [r for r in api.requests(match='/pods/p1') if r['method'] in ('PATCH', 'POST')]
    t.is_eq([(r['method'], r['path'].rsplit('/', 1)[-1]) for r in pod_writes],
            [('POST', 'binding'), ('PATCH', 'p1')],
            f'{how}: the pod is changed through its Binding, then only labelled')
    t.is_eq((got['metadata'].get('labels') or {}).get('hami.io/vgpu-node'), 't4',
            f'{how}: pod labelled hami.io/vgpu-node')

    p2 = create(api, pod('p2', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000,
                                 'nvidia.com/gpucores': 10}]))
    code, res = ext.post('/filter', filter_args(p2, [n], by_name))
    msg = (res.get('failedNodes') or {}).get('t4', '')
    # GenReason (HAMi v2.10.0 pkg/device/common/common.go): "<cards>/<total> <reason>".
    t.is_eq(msg, '1/1 CardInsufficientMemory', f'{how}: second 8000 MiB pod refused with '
            'CardInsufficientMemory, in HAMi\'s text')
    passed = res.get('nodenames') if by_name else (res.get('nodes') or {}).get('items')
    t.is_eq(passed, [], f'{how}: no node passes')
    p3 = create(api, pod('p3', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 7000,
                                 'nvidia.com/gpucores': 10}]))
    res, b = schedule(api, ext, p3, [n], by_name)
    t.is_eq((b, res.get('failedNodes') or {}), ({}, {}), f'{how}: a 7000 MiB pod still fits')


def main_scenarios(api, ext):
    api.reset()
    # Two 8000 MiB pods on one 24 GiB card (L4-like).
    l4 = create(api, node('l4', [gpu(L4, 23034, 'L4')]))
    for name in ('q1', 'q2'):
        p = create(api, pod(name, [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}]))
        res, b = schedule(api, ext, p, [l4])
        t.is_eq(b, {}, f'{name}: 8000 MiB on the L4 bound')
    t.is_eq([ann(api, n, 'hami.io/vgpu-devices-allocated') for n in ('q1', 'q2')],
            [f'{L4},NVIDIA,8000,0:;'] * 2, 'two 8000 MiB pods share one L4 (cores 0 by default)')

    # gpumem-percentage on a T4 (15360 MiB): 50% = 7680 MiB.
    t4 = create(api, node('t4', [gpu(T4, 15360)]))
    p = create(api, pod('pct', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem-percentage': 50}]))
    res, b = schedule(api, ext, p, [t4])
    t.is_eq(ann(api, 'pct', 'hami.io/vgpu-devices-allocated'), f'{T4},NVIDIA,7680,0:;',
            'gpumem-percentage 50 of a 15360 MiB card is 7680 MiB')

    # A pod that fits no card: CardInsufficientMemory on every node.
    big = create(api, pod('big', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 40000}]))
    code, res = ext.post('/filter', filter_args(big, [l4, t4], True))
    fn = res.get('failedNodes') or {}
    t.ok(sorted(fn) == ['l4', 't4'] and all(m == '1/1 CardInsufficientMemory'
                                             for m in fn.values()),
         '40000 MiB: CardInsufficientMemory on every node', diag=json.dumps(res))
    t.is_eq(res.get('nodenames'), [], '40000 MiB: no node passes')

    # Node without HAMi's annotation; pod without GPU resources.
    bare = create(api, node('cpu-only', None))
    p = create(api, pod('gpuless-check', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    code, res = ext.post('/filter', filter_args(p, [bare], True))
    t.like((res.get('failedNodes') or {}).get('cpu-only'), 'NodeUnregistered',
           'a node without hami.io/node-nvidia-register fails with NodeUnregistered')
    p = create(api, pod('cpu-pod', [None]))
    code, res = ext.post('/filter', filter_args(p, [bare, l4], True))
    t.is_eq(res.get('nodenames'), ['cpu-only', 'l4'], 'a pod without GPU resources passes every '
            'node')


def selection_scenarios(api, ext):
    api.reset()
    two = create(api, node('two', [gpu(A, 16384, 'Tesla T4', 0), gpu(B, 16384, 'A100-SXM4', 1)],
                           colon=True))
    cases = [
        ('use-uuid', {'nvidia.com/use-gpuuuid': B}, B),
        ('nouse-uuid', {'nvidia.com/nouse-gpuuuid': A}, B),
        ('use-type', {'nvidia.com/use-gputype': 'A100'}, B),
        ('nouse-type', {'nvidia.com/nouse-gputype': 'A100'}, A),
    ]
    for name, annotations, want in cases:
        p = create(api, pod(name, [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}],
                            annotations))
        code, res = ext.post('/filter', filter_args(p, [two], True))
        t.is_eq(res.get('nodenames'), ['two'], f'{name}: node passes (older colon encoding)')
        code, b = ext.post('/bind', bind_args(p, 'two'))
        t.is_eq(ann(api, name, 'hami.io/vgpu-devices-allocated'), f'{want},NVIDIA,1000,0:;',
                f'{name}: the card the annotation allows')
    p = create(api, pod('uuid-miss', [{'nvidia.com/gpu': 1}],
                        {'nvidia.com/use-gpuuuid': 'GPU-none'}))
    code, res = ext.post('/filter', filter_args(p, [two], True))
    t.like((res.get('failedNodes') or {}).get('two'), 'CardUuidMismatch',
           'use-gpuuuid naming no card: CardUuidMismatch')
    p = create(api, pod('type-miss', [{'nvidia.com/gpu': 1}],
                        {'nvidia.com/use-gputype': 'H100'}))
    code, res = ext.post('/filter', filter_args(p, [two], True))
    t.like((res.get('failedNodes') or {}).get('two'), 'CardTypeMismatch',
           'use-gputype naming no card: CardTypeMismatch')

    # Multi-GPU and multi-container pods.
    api.reset()
    two = create(api, node('two', [gpu(A, 16384, 'Tesla T4', 0), gpu(B, 16384, 'Tesla T4', 1)]))
    p = create(api, pod('multi', [None, {'nvidia.com/gpu': 2, 'nvidia.com/gpumem': 3000,
                                         'nvidia.com/gpucores': 30}]))
    res, b = schedule(api, ext, p, [two])
    t.is_eq(ann(api, 'multi', 'hami.io/vgpu-devices-allocated'),
            f';{A},NVIDIA,3000,30:{B},NVIDIA,3000,30:;',
            'gpu: 2 takes both cards; the container without GPUs keeps its empty entry')
    p = create(api, pod('three', [{'nvidia.com/gpu': 3, 'nvidia.com/gpumem': 1000}]))
    code, res = ext.post('/filter', filter_args(p, [two], True))
    t.ok('two' in (res.get('failedNodes') or {}), 'gpu: 3 on a 2-GPU node fails',
         diag=json.dumps(res))
    p = create(api, pod('cores', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100,
                                   'nvidia.com/gpucores': 80}]))
    code, res = ext.post('/filter', filter_args(p, [two], True))
    t.like((res.get('failedNodes') or {}).get('two'), 'CardInsufficientCore',
           '80% cores on cards with 70% left: CardInsufficientCore')


def policy_scenarios(api, ext):
    api.reset()
    busy = create(api, node('busy', [gpu(A, 16384)]))
    idle = create(api, node('idle', [gpu(B, 16384)]))
    p = create(api, pod('seed', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 4000}]))
    ext.post('/bind', bind_args(p, 'busy'))
    for pol, want in (('binpack', 'busy'), ('spread', 'idle')):
        p = create(api, pod(f'np-{pol}', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}],
                            {'hami.io/node-scheduler-policy': pol}))
        code, res = ext.post('/filter', filter_args(p, [busy, idle], True))
        t.is_eq(res.get('nodenames'), [want], f'node-scheduler-policy {pol} picks {want}')
        code, pr = ext.post('/prioritize', filter_args(p, [busy, idle], True))
        top = max(pr, key=lambda h: h['score'])['host'] if code == 200 and pr else None
        t.is_eq(top, want, f'prioritize with {pol} scores {want} highest')
    p = create(api, pod('badpol', [{'nvidia.com/gpu': 1}],
                        {'hami.io/node-scheduler-policy': 'random'}))
    code, res = ext.post('/filter', filter_args(p, [busy], True))
    t.like(res.get('error'), 'hami.io/node-scheduler-policy',
           'an unknown policy is an error naming the annotation')


def lock_node_with(api, name, value):
    n = api.get('nodes', None, name)
    n['metadata'].setdefault('annotations', {})['hami.io/mutex.lock'] = value
    api.put(n)


def hami_scenarios(api, ext):
    """Behaviour HAMi's scheduler has (v2.10.0 pkg/device/nvidia/device.go Fit,
    pkg/scheduler/score.go, pkg/util/nodelock, pkg/util/util.go PatchPodAnnotations)."""
    api.reset()
    n = create(api, node('n2', [gpu(A, 16384, index=0, count=2), gpu(B, 16384, index=1, count=2)]))
    # The label HAMi's monitor selects pods by.
    p = create(api, pod('lab', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}]))
    schedule(api, ext, p, [n])
    labels = api.get('pods', 'default', 'lab')['metadata'].get('labels') or {}
    t.is_eq(labels.get('hami.io/vgpu-node'), 'n2', 'bind labels the pod hami.io/vgpu-node=<node>')
    # Task count: each card takes `count` tasks (2 here), then CardTimeSlicingExhausted.
    for i in range(3):
        p = create(api, pod(f'cnt{i}', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
        schedule(api, ext, p, [n])
    p = create(api, pod('cnt-over', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    code, res = ext.post('/filter', filter_args(p, [n], True))
    t.is_eq((res.get('failedNodes') or {}).get('n2'), '2/2 CardTimeSlicingExhausted',
            'the fifth task on two cards of count 2: 2/2 CardTimeSlicingExhausted')
    # Too many cards asked: NodeInsufficientDevice (fitInDevices).
    p = create(api, pod('three', [{'nvidia.com/gpu': 3, 'nvidia.com/gpumem': 100}]))
    code, res = ext.post('/filter', filter_args(p, [n], True))
    t.is_eq((res.get('failedNodes') or {}).get('n2'), 'NodeInsufficientDevice',
            'gpu: 3 on a 2-card node: NodeInsufficientDevice')

    # Counts per card, sorted: one card too small, one of the wrong type.
    api.reset()
    mix = create(api, node('mix', [gpu(A, 4096, 'Tesla T4', 0), gpu(B, 81920, 'A100-SXM4', 1)]))
    p = create(api, pod('mixp', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}],
                        {'nvidia.com/use-gputype': 'T4'}))
    code, res = ext.post('/filter', filter_args(p, [mix], True))
    t.is_eq((res.get('failedNodes') or {}).get('mix'),
            '1/2 CardInsufficientMemory, 1/2 CardTypeMismatch',
            "GenReason text: a count per card, sorted")
    # mutex: only idle cards.
    p = create(api, pod('seed', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}],
                        {'nvidia.com/use-gpuuuid': B}))
    schedule(api, ext, p, [mix])
    p = create(api, pod('mtx', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}],
                        {'hami.io/gpu-scheduler-policy': 'binpack,mutex',
                         'nvidia.com/use-gpuuuid': B}))
    code, res = ext.post('/filter', filter_args(p, [mix], True))
    t.like((res.get('failedNodes') or {}).get('mix'), 'ExclusiveDeviceAllocateConflict',
           'gpu-scheduler-policy binpack,mutex: a used card is refused')
    p = create(api, pod('mtx2', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 1000}],
                        {'hami.io/gpu-scheduler-policy': 'mutex'}))
    res, b = schedule(api, ext, p, [mix])
    t.is_eq(ann(api, 'mtx2', 'hami.io/vgpu-devices-allocated'), f'{A},NVIDIA,1000,0:;',
            'mutex takes the idle card')

    # numa-bind: both cards of a container on one NUMA node.
    api.reset()
    C, D = A[:-1] + 'c', A[:-1] + 'd'
    nn = create(api, node('numa', [gpu(A, 16384, index=0, numa=0), gpu(B, 16384, index=1, numa=1),
                                   gpu(C, 16384, index=2, numa=1), gpu(D, 16384, index=3,
                                                                        numa=0)]))
    p = create(api, pod('nb', [{'nvidia.com/gpu': 2, 'nvidia.com/gpumem': 1000}],
                        {'nvidia.com/numa-bind': 'true'}))
    res, b = schedule(api, ext, p, [nn])
    got = ann(api, 'nb', 'hami.io/vgpu-devices-allocated') or ''
    pair = sorted(e.split(',')[0] for e in got.split(':') if ',' in e)
    t.ok(pair in (sorted([A, D]), sorted([B, C])), 'nvidia.com/numa-bind: two cards on one NUMA '
         'node', diag=got)

    # HAMi >= 2.7's exclusive default: gpu alone (or gpumem-percentage 100) is gpucores 100.
    for name, lim, want in (('excl', {'nvidia.com/gpu': 1}, True),
                            ('pct100', {'nvidia.com/gpu': 1, 'nvidia.com/gpumem-percentage': 100},
                             True),
                            ('shared', {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}, False)):
        api.reset()
        two = create(api, node('two', [gpu(A, 16384, index=0), gpu(B, 16384, index=1)]))
        p = create(api, pod(name, [lim]))
        res, b = schedule(api, ext, p, [two])
        got = ann(api, name, 'hami.io/vgpu-devices-allocated') or ''
        if want:
            t.ok(got.endswith(',100:;') and ',16384,' in got,
                 f'{name}: the whole card, gpucores 100 (defaultExclusiveCoreIfNeeded)', diag=got)
        else:
            t.ok(got.endswith(',100,0:;'), f'{name}: gpumem given: shared compute (0)', diag=got)

    # Init containers: their entries come first (HAMi's annotation order).
    api.reset()
    two = create(api, node('two', [gpu(A, 16384, index=0), gpu(B, 16384, index=1)]))
    p = create(api, pod('withinit', [None, {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 2000}],
                        init=[{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 3000}]))
    res, b = schedule(api, ext, p, [two])
    got = ann(api, 'withinit', 'hami.io/vgpu-devices-allocated') or ''
    parts = got.split(';')
    t.ok(len(parts) == 4 and ',3000,' in parts[0] and parts[1] == '' and ',2000,' in parts[2],
         'init container entry first, then the app containers', diag=got)

    # A placed pod with an init container counts as HAMi counts it (CollapseInitContainerUsage:
    # the init container's peak, not init + app): 3000 MiB on the 8000 MiB card, not 5000.
    api.reset()
    one = create(api, node('one', [gpu(A, 8000, index=0)]))
    placed = pod('placed', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 2000}],
                 {'hami.io/vgpu-node': 'one', 'hami.io/bind-phase': 'success',
                  'hami.io/vgpu-devices-allocated': f'{A},NVIDIA,3000,0:;{A},NVIDIA,2000,0:;'},
                 init=[{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 3000}])
    placed['spec']['nodeName'] = 'one'  # bound there: annotations alone book nothing
    create(api, placed)
    p = create(api, pod('after-init', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 5000}]))
    code, res = ext.post('/filter', filter_args(p, [one], True))
    t.is_eq(res.get('nodenames'), ['one'], 'init + app on one card count max(3000, 2000): a 5000 '
            'MiB pod still fits the 8000 MiB card')
    p = create(api, pod('too-big', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 5001}]))
    code, res = ext.post('/filter', filter_args(p, [one], True))
    t.is_eq((res.get('failedNodes') or {}).get('one'), '1/1 CardInsufficientMemory',
            '5001 MiB does not (to the MiB)')

    # Node lock as HAMi writes it (local time with an offset), honoured to the second.
    api.reset()
    t4 = create(api, node('t4', [gpu(T4, 15360)]))
    holder = create(api, pod('holder', [None]))
    now = time.time()
    local = datetime.datetime.fromtimestamp(now - 200, datetime.timezone(datetime.timedelta(
        hours=8))).strftime('%Y-%m-%dT%H:%M:%S+08:00')
    lock_node_with(api, 't4', f'{local},default,holder')
    p = create(api, pod('waiter', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    code, b = ext.post('/bind', bind_args(p, 't4'))
    t.like(b.get('error'), 'locked', 'a +08:00 lock taken 200 s ago holds (expiry 300 s)')
    # Same pod: already ours.
    lock_node_with(api, 't4', f'{local},default,waiter')
    code, b = ext.post('/bind', bind_args(p, 't4'))
    t.is_eq(b, {}, 'a lock this pod holds is re-acquired (LockNode: same pod)')
    # Dangling: the owner pod does not exist.
    p = create(api, pod('after-ghost', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    lock_node_with(api, 't4', f'{local},default,ghost')
    code, b = ext.post('/bind', bind_args(p, 't4'))
    t.is_eq(b, {}, 'a lock whose owner pod is gone is taken over')
    # Expired: 301 s old, in +08:00.
    old = datetime.datetime.fromtimestamp(now - 301, datetime.timezone(datetime.timedelta(
        hours=8))).strftime('%Y-%m-%dT%H:%M:%S+08:00')
    p = create(api, pod('after-old', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
    lock_node_with(api, 't4', f'{old},default,holder')
    code, b = ext.post('/bind', bind_args(p, 't4'))
    t.is_eq(b, {}, 'a +08:00 lock 301 s old has expired')
    _ = holder


def expiry_env(api):
    """HAMI_NODELOCK_EXPIRE (nodelock.setupNodeLockTimeout): 1m makes a 70 s lock stale."""
    api.reset()
    create(api, node('t4', [gpu(T4, 15360)]))
    create(api, pod('holder', [None]))
    ext = Extender(api, env={'HAMI_NODELOCK_EXPIRE': '1m'})
    try:
        stamp = datetime.datetime.fromtimestamp(time.time() - 70, datetime.timezone(
            datetime.timedelta(hours=-5))).strftime('%Y-%m-%dT%H:%M:%S-05:00')
        lock_node_with(api, 't4', f'{stamp},default,holder')
        p = create(api, pod('p', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 100}]))
        code, b = ext.post('/bind', bind_args(p, 't4'))
        t.is_eq(b, {}, 'HAMI_NODELOCK_EXPIRE=1m: a 70 s old lock is taken over')
    finally:
        t.is_eq(ext.stop(), 0, 'extender with HAMI_NODELOCK_EXPIRE exits cleanly')


def concurrent_binds(api):
    """Four 8000 MiB pods race for one T4 through two extender processes: one fits."""
    api.reset()
    n = create(api, node('t4', [gpu(T4, 15360)]))
    exts = [Extender(api), Extender(api)]
    pods = [create(api, pod(f'race{i}', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}]))
            for i in range(4)]
    for p in pods:  # every pod passes filter alone (nothing placed yet)
        code, res = exts[0].post('/filter', filter_args(p, [n], True))
        t.is_eq(res.get('nodenames'), ['t4'], f"{p['metadata']['name']} passes filter alone")
    results = [None] * 4

    def go(i):
        results[i] = exts[i % 2].post('/bind', bind_args(pods[i], 't4'))
    threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    bound = [p for p in api.list('pods') if p['spec'].get('nodeName') == 't4']
    used = sum(int(a.split(',')[2]) for p in bound
               for a in p['metadata']['annotations']['hami.io/vgpu-devices-allocated'].split(':')
               if a.count(',') == 3)
    t.ok(used <= 15360, f'concurrent binds never over-commit the card ({used} MiB bound)')
    t.is_eq(len(bound), 1, 'exactly one of the racing pods is bound')
    errs = [r[1].get('error', '') for r in results if r[0] == 200 and r[1].get('error')]
    t.is_eq(len(errs), 3, 'the others get an ExtenderBindingResult error', )
    t.diag(json.dumps(results))
    t.ok(all('locked' in e or 'does not fit' in e or 'lock node' in e for e in errs),
         'errors say the node was locked or the pod no longer fits', diag='\n'.join(errs))
    for i, e in enumerate(exts):
        t.is_eq(e.stop(), 0, f'racing extender {i} exits cleanly')


def protocol(api, ext):
    code, text = ext.request('POST', '/filter', raw=b'{not json')
    t.ok(code == 400 and 'not JSON' in text, 'a body that is not JSON gets 400', diag=text)
    code, text = ext.request('POST', '/filter', body={'nodenames': []})
    t.ok(code == 400 and 'pod' in text, 'ExtenderArgs without pod gets 400 naming pod', diag=text)
    code, text = ext.request('POST', '/bind', body={'podName': 'x'})
    t.ok(code == 400 and 'node' in text, 'ExtenderBindingArgs without node gets 400', diag=text)
    code, text = ext.request('GET', '/filter')
    t.is_eq(code, 405, 'GET /filter is 405')
    code, text = ext.get('/metrics')
    t.ok(code == 200 and 'gpuslice_extender_requests_total{verb="filter"}' in text,
         '/metrics exposes request counters')
    t.like(text, 'gpuslice_build_info{version=', '/metrics exports gpuslice_build_info')
    t.is_eq(ext.get('/healthz'), (200, 'ok\n'), '/healthz')
    # The decoded inventory is reused while nodes and placements are unchanged, and not after.
    api.reset()
    n = create(api, node('t4', [gpu(T4, 15360)]))
    a = create(api, pod('cache-a', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}]))
    b = create(api, pod('cache-b', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000}]))

    def reused():
        text = ext.get('/metrics')[1]
        m = [ln for ln in text.splitlines()
             if ln.startswith('gpuslice_extender_inventory_reused_total ')]
        return int(m[0].split()[1]) if m else -1
    ext.post('/filter', filter_args(a, [n], True))
    before = reused()
    ext.post('/filter', filter_args(b, [n], True))
    t.is_eq(reused(), before + 1, 'a second filter over unchanged nodes and pods reuses the '
            'decoded inventory')
    ext.post('/bind', bind_args(a, 't4'))
    code, res = ext.post('/filter', filter_args(b, [n], True))
    t.like((res.get('failedNodes') or {}).get('t4'), 'CardInsufficientMemory',
           'after a bind the inventory is rebuilt: the placed pod counts')
    t.is_eq(reused(), before + 1, 'the changed placements were not served from the cache')
    if reference_path('k8s-json-schema', 'pod-v1.json') is None:
        t.skip('Pod/Node objects validate against the Kubernetes schema',
               'k8s-json-schema has no pod-v1.json / node-v1.json (reference data)')


def main():
    api = FakeAPI(token='t0k3n')
    api.start()
    ext = Extender(api)
    try:
        t.run('t4 nodenames', t4_scenario, api, ext, True)
        t.run('t4 nodes', t4_scenario, api, ext, False)
        t.run('main', main_scenarios, api, ext)
        t.run('selection', selection_scenarios, api, ext)
        t.run('policy', policy_scenarios, api, ext)
        t.run('hami', hami_scenarios, api, ext)
        t.run('expiry', expiry_env, api)
        t.run('protocol', protocol, api, ext)
        t.run('concurrent', concurrent_binds, api)
    finally:
        if t.failed:
            t.diag(ext.output()[-4000:])
        t.is_eq(ext.stop(), 0, 'the extender exits 0 on SIGTERM')
        api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
