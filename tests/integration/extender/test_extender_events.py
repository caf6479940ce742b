#!/usr/bin/python3
"""The extender's Warning Events on the Pod (issue 36): a pod no node fits gets FilteringFailed,
a refused bind BindingFailed (HAMi's reasons, pkg/scheduler/event.go), with the Pod as
involvedObject; 1,000 identical failures make a bounded number of Event writes, and a flood of
distinct pods is held by the write budget (kube/event.h)."""
import sys
import time

from extlib import Extender, FakeAPI, bind_args, create, filter_args, gpu, node, pod
from gstest import Tap

t = Tap()
T4 = 'GPU-7d4e1a2b-0000-4000-8000-000000000004'
BIG = {'nvidia.com/gpu': 1, 'nvidia.com/gpumem': 8000, 'nvidia.com/gpucores': 10}


def events(api, name=None):
    return [e for e in api.list('events')
            if name is None or e['involvedObject'].get('name') == name]


def event_writes(api):
    return [r for r in api.requests() if '/events' in r['path'] and r['method'] in
            ('POST', 'PATCH', 'PUT')]


def scenario(api, ext):
    n = create(api, node('t4', [gpu(T4, 15360)]))
    p1 = create(api, pod('p1', [BIG]))
    code, res = ext.post('/filter', filter_args(p1, [n], True))
    code, b = ext.post('/bind', bind_args(p1, 't4'))
    t.is_eq((b, events(api)), ({}, []), 'a pod that fits and binds: no Event')

    p2 = create(api, pod('p2', [BIG]))
    code, res = ext.post('/filter', filter_args(p2, [n], True))
    t.is_eq(res.get('nodenames'), [], 'p2 fits no node')
    ev = events(api, 'p2')
    t.is_eq(len(ev), 1, 'a refused filter: one Event')
    e = ev[0] if ev else {'involvedObject': {}, 'source': {}}
    io = e['involvedObject']
    t.is_eq((io.get('kind'), io.get('apiVersion'), io.get('namespace'), io.get('name'),
             io.get('uid')), ('Pod', 'v1', 'default', 'p2', p2['metadata']['uid']),
            'involvedObject is the Pod, with its uid')
    t.is_eq((e.get('type'), e.get('reason'), e.get('count')), ('Warning', 'FilteringFailed', 1),
            "Warning FilteringFailed (HAMi's reason), count 1")
    t.like(e.get('message', ''), 't4: 1/1 CardInsufficientMemory',
           "the message names the node and HAMi's reason")
    t.is_eq((e['source'].get('component'), e.get('reportingComponent'),
             e['metadata'].get('namespace')),
            ('gpuslice-extender', 'gpuslice-extender', 'default'),
            'source and reportingComponent name the extender; the Event is in the pod namespace')

    # 1,000 identical failures.
    api.clear_log()
    for _ in range(1000):
        ext.post('/filter', filter_args(p2, [n], True))
    writes = event_writes(api)
    t.diag(f'1000 identical refusals -> {len(writes)} Event writes')
    t.ok(len(writes) <= 1, '1,000 identical refusals within the repeat interval: at most one '
         'Event write', diag=writes[:3])
    t.is_eq(len(events(api, 'p2')), 1, 'still one Event object for p2')

    # A refused bind: BindingFailed on the Pod.
    code, b = ext.post('/bind', bind_args(p2, 't4'))
    t.ok(isinstance(b, dict) and b.get('error'), 'binding p2 to the full t4 is refused',
         diag=b)
    ev = [e for e in events(api, 'p2') if e['reason'] == 'BindingFailed']
    t.ok(len(ev) == 1 and ev[0]['type'] == 'Warning' and
         ev[0]['involvedObject'].get('uid') == p2['metadata']['uid'] and
         't4' in ev[0]['message'], 'a refused bind: Warning BindingFailed on the Pod naming the '
         'node', diag=ev)

    # Distinct pods: the shared budget bounds the writes.
    api.clear_log()
    t0 = time.monotonic()
    for i in range(100):
        p = create(api, pod(f'flood-{i}', [BIG]))
        ext.post('/filter', filter_args(p, [n], True))
    took = time.monotonic() - t0
    writes = len(event_writes(api))
    budget = 25 + int(took / 10) + 1  # burst 25, one more every 10 s (kube/event.h defaults)
    t.diag(f'100 distinct refused pods in {took:.1f}s -> {writes} Event writes (budget {budget})')
    t.ok(0 < writes <= budget, '100 distinct refused pods: writes held by the budget')


def main():
    api = FakeAPI(token='t0k3n')
    api.start()
    ext = Extender(api)
    try:
        t.run('events', scenario, api, ext)
    finally:
        if t.failed:
            t.diag(ext.output()[-3000:])
        t.is_eq(ext.stop(), 0, 'the extender exits 0 on SIGTERM')
        api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
