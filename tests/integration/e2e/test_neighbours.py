#!/usr/bin/python3
"""Seed 001, "DRA is a commitment tracker, not an enforcer": two pods with 8000 MiB each
(claims allocated by `gpuslice schedule`, prepared by the kubelet plugin) share one gpusim H200.
The greedy one allocates in a loop and gets CUDA_ERROR_OUT_OF_MEMORY exactly at its 8000 MiB
boundary while holding it; the neighbour, started afterwards, still allocates its full 8000 MiB
(and not one MiB more); gpusim's own accounting (gpusim-smi without libvgpu) shows 8000 then
16000 MiB used — never more than the sum of the grants — and nothing once both are gone."""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import e2elib as e2e  # noqa: E402
from e2elib import DRIVER  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402

NODE = 'node-1'
NS = 'seed-001'
GRANT_MIB = 8000
DONE = 'probe: cuMemGetInfo now:'


def slice_claim(name):
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
            'metadata': {'name': name, 'namespace': NS},
            'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {
                'deviceClassName': DRIVER, 'allocationMode': 'ExactCount', 'count': 1,
                'capacity': {'requests': {'cores': '10', 'memory': f'{GRANT_MIB}Mi'}}}}]}}}


def physical(t, node, gpu_uuid, want_used, what):
    """gpusim-smi without preload: (used, total) of the device; used must be `want_used` and
    never above the sum of the grants."""
    r = node.smi()
    got = e2e.smi_line(r.stdout, gpu_uuid)
    t.is_eq(got[0] if got else None, want_used, f'gpusim (no libvgpu) {what}: {want_used}MiB used')
    t.ok(got is not None and got[0] <= 2 * GRANT_MIB,
         f'gpusim (no libvgpu) {what}: at most {2 * GRANT_MIB}MiB, the sum of the grants',
         diag=r.stdout + r.stderr)
    return r.stdout


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except Exception:  # noqa: BLE001 - last resort
            proc.kill()
            proc.wait()
    proc.stdout.close()
    proc.stderr.close()


def main():
    t = Tap()
    missing = e2e.missing_binaries()
    if missing:
        skip_unbuilt(t, 'enforcement between neighbours', f"not built: {', '.join(missing)}")
        return t.done()
    mount_ns = e2e.edits_mode(t)
    with e2e.Node(t, NODE, 'h200') as node:
        node.start()
        api = node.client
        slices = node.wait_slices(lambda s: len(s) == 1)
        if not t.is_eq(len(slices), 1, 'the plugin published the gpusim H200'):
            return t.done()
        gpu_uuid = slices[0]['spec']['devices'][0]['attributes']['uuid']['string']
        api.apply(e2e.deviceclass())

        pods = {}
        for name in ('greedy', 'neighbour'):
            api.apply(slice_claim(name))
            p = api.apply(e2e.pod(name, NS, claim_name=name))
            s = e2e.schedule_pod(api, p, NODE, node.tmp)
            t.is_eq(s.rc, 0, f'{name}: gpuslice schedule allocated 10 cores / {GRANT_MIB}Mi') \
                or t.diag(s.stderr)
            c = api.get('ResourceClaim', NS, name)
            t.is_eq([(r['device'], r.get('consumedCapacity')) for r in e2e.allocation_results(c)],
                    [('hami-gpu-0', {'cores': '10', 'memory': f'{GRANT_MIB}Mi'})],
                    f'{name}: on hami-gpu-0 with consumedCapacity memory {GRANT_MIB}Mi')
            uid = c['metadata']['uid']
            r = node.kubelet.prepare('v1', [e2e.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{name}: prepared by the plugin')
            pods[name] = (c, e2e.Pod(node, node.cdi_spec_path(uid), f'{uid}-hami-gpu-0',
                                     mount_ns))

        want = (f'probe: allocated {GRANT_MIB}MiB in {GRANT_MIB} allocations of 1Mi; '
                'next allocation: CUDA_ERROR_OUT_OF_MEMORY')
        procs = []
        try:
            # The greedy pod allocates 1Mi at a time until CUDA says no, then holds it all.
            g = pods['greedy'][1].start(e2e.probe('--step', '1Mi', '--hold', '10m'))
            procs.append(g)
            out = e2e.read_until(g, DONE)
            t.like(out, want, f'greedy: CUDA_ERROR_OUT_OF_MEMORY exactly at {GRANT_MIB} MiB') \
                or t.diag(g.stderr.read() if g.poll() is not None else '')
            smi = physical(t, node, gpu_uuid, GRANT_MIB, 'while greedy holds its memory')
            t.ok(re.search(rf'\b{g.pid}\b.*\b{GRANT_MIB}MiB', smi),
                 f'gpusim lists the greedy process with {GRANT_MIB}MiB', diag=smi)

            # The neighbour, started while greedy holds everything it could get.
            n = pods['neighbour'][1].start(e2e.probe('--step', '1Mi', '--hold', '10m'))
            procs.append(n)
            out = e2e.read_until(n, DONE)
            t.like(out, f'cuMemGetInfo: free {GRANT_MIB}MiB total {GRANT_MIB}MiB',
                   'neighbour: starts with its whole 8000MiB free')
            t.like(out, want, f'neighbour: allocates its full {GRANT_MIB} MiB, then OOM') \
                or t.diag(n.stderr.read() if n.poll() is not None else '')
            physical(t, node, gpu_uuid, 2 * GRANT_MIB, 'with both holding')
        finally:
            for p in procs:
                stop(p)
        physical(t, node, gpu_uuid, 0, 'after both pods are gone')

        for name, (c, _) in pods.items():
            r = node.kubelet.unprepare('v1', [e2e.ref(c)])
            t.is_eq(r.claims[c['metadata']['uid']].error, '', f'{name}: unprepared')
        t.is_eq(node.claim_files(), [], 'nothing left on the node after unprepare')
        t.is_eq(node.stop(), 0, 'the plugin exits 0 on SIGTERM')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
