#!/usr/bin/python3
"""Seed 000, the lab, end to end on the Kubernetes path: the kubelet plugin publishes a gpusim
Tesla T4 of node-1 to the API server; the lab's DeviceClass, claims and pods are applied;
`gpuslice schedule` plays kube-scheduler over the API's objects and writes the allocations back;
the plugin prepares the claims for the kubelet emulator; each "pod" is a process started with its
claim's CDI edits and sees a 4096 MiB GPU, gets CUDA_ERROR_OUT_OF_MEMORY at exactly 4096 MiB and
reports the same GPU UUID as its neighbour; a claim for 80 cores stays pending with a reason
naming cores; unprepare leaves nothing behind. After the lab's cleanup, double-gpu-0 (pending
while no pod used it) is allocated for a pod: two shares of one device, summed by the plugin
into the one grant the process sees (8192MiB)."""
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import e2elib as e2e  # noqa: E402
from e2elib import DRIVER, pl  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402

NODE = 'node-1'
NS = 'test-dra'
UUID4 = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
LAB_RESULT = {'request': 'single-gpu', 'driver': DRIVER, 'pool': NODE, 'device': 'hami-gpu-0',
              'consumedCapacity': {'cores': '30', 'memory': '4Gi'}}


def manifest(*parts):
    with open(os.path.join(e2e.PATHS['GS_SOURCE_ROOT'], 'deploy', *parts)) as f:
        return yaml.safe_load(f)


def claim_validator():
    return e2e.k8s_validator('resourceclaim-resource-v1')


def check_slice(t, node):
    slices = node.wait_slices(lambda s: len(s) == 1)
    if not t.is_eq(len(slices), 1, 'step 4: the plugin published one ResourceSlice for node-1'):
        t.diag(node.log())
        return None
    s = slices[0]
    t.valid(pl.slice_validator(), s,
            'the ResourceSlice is valid under the strict resource.k8s.io/v1 schema (Draft 7)')
    spec = s['spec']
    t.is_eq((spec['driver'], spec['nodeName'], spec['pool']['name']),
            (DRIVER, NODE, NODE), 'driver hami-core-gpu.project-hami.io, pool = node name')
    t.is_eq([d['name'] for d in spec['devices']], ['hami-gpu-0'], 'one device: hami-gpu-0')
    dev = spec['devices'][0]
    t.is_eq(dev['capacity']['cores'],
            {'value': '100', 'requestPolicy': {'default': '100', 'validRange': {
                'min': '0', 'max': '100', 'step': '1'}}},
            'cores: value 100, default 100, validRange 0-100 step 1')
    t.is_eq(dev['capacity']['memory'],
            {'value': '15Gi', 'requestPolicy': {'default': '15Gi', 'validRange': {
                'min': '1Mi', 'max': '15Gi', 'step': '1Mi'}}},
            'memory: value 15Gi, default 15Gi, validRange 1Mi-15Gi step 1Mi')
    t.is_eq(dev.get('allowMultipleAllocations'), True, 'allowMultipleAllocations: true')
    a = dev['attributes']
    t.is_eq((a['productName'], a['architecture'], a['cudaComputeCapability'], a['type']),
            ({'string': 'Tesla T4'}, {'string': 'Turing'}, {'version': '7.5.0'},
             {'string': 'hami-gpu'}),
            'typed attributes: productName Tesla T4, architecture Turing, compute capability '
            '7.5.0, type hami-gpu')
    return a['uuid']['string']


def apply_lab(t, api):
    """Steps 5 and 6: the DeviceClass (deploy/plugin) and the lab workload (deploy/examples)."""
    api.apply(manifest('plugin', 'deviceclass.yaml'))
    for f in ('single-gpu-claim.yaml', 'claim-template.yaml', 'double-gpu-claim.yaml'):
        api.apply(manifest('examples', f))
    pod0 = api.apply(manifest('examples', 'pod-0.yaml'))
    pod1 = api.apply(manifest('examples', 'pod-tpl-1.yaml'))
    pod1 = e2e.claims_from_templates(api, pod1)
    names = e2e.pod_claim_names(pod1)
    t.ok(len(names) == 1 and names[0].startswith('pod-tpl-1-gpu-'),
         "pod-tpl-1's claim was made from single-gpu-tpl (resourceclaim controller)", diag=names)
    return pod0, pod1


def check_allocations(t, api, pod0, pod1):
    c0 = api.get('ResourceClaim', NS, 'single-gpu-0')
    c1 = api.get('ResourceClaim', NS, e2e.pod_claim_names(pod1)[0])
    claims = [c0, c1]
    results = [((c.get('status') or {}).get('allocation') or {}).get('devices', {})
               .get('results', []) for c in claims]
    for c, r in zip(claims, results):
        name = c['metadata']['name']
        t.is_eq([{k: v for k, v in x.items() if k != 'shareID'} for x in r], [LAB_RESULT],
                f'{name}: allocated hami-gpu-0 with consumedCapacity '
                '{cores: "30", memory: "4Gi"}')
        t.is_eq(c['status'].get('reservedFor', [{}])[0].get('name'),
                (pod0 if c is c0 else pod1)['metadata']['name'], f'{name}: reserved for its pod')
        t.valid(claim_validator(), c,
                f'{name} with its allocation is a valid resource.k8s.io/v1 ResourceClaim')
    shares = [r[0].get('shareID', '') if r else '' for r in results]
    t.ok(all(UUID4.match(s) for s in shares) and shares[0] != shares[1],
         'each claim has its own shareID (a UUID)', diag=shares)
    double = api.get('ResourceClaim', NS, 'double-gpu-0')
    t.ok('status' not in double or not double['status'].get('allocation'),
         'double-gpu-0 stays pending: no pod uses it')
    return claims


def check_too_big(t, api):
    """A third pod asking 80 cores of the 40 left: pending, and the reason names cores."""
    big = manifest('examples', 'single-gpu-claim.yaml')
    big['metadata']['name'] = 'big-gpu-0'
    big['spec']['devices']['requests'][0]['exactly']['capacity']['requests']['cores'] = '80'
    api.apply(big)
    pod = manifest('examples', 'pod-0.yaml')
    pod['metadata']['name'] = 'pod-2'
    pod['spec']['resourceClaims'][0]['resourceClaimName'] = 'big-gpu-0'
    pod = api.apply(pod)
    return pod


def check_prepare(t, node, claim, version, gpu_uuid):
    uid = claim['metadata']['uid']
    name = claim['metadata']['name']
    r = node.kubelet.prepare(version, [e2e.ref(claim)])
    res = r.claims[uid]
    if not t.is_eq(res.error, '', f'{name}: NodePrepareResources over {version} succeeded'):
        return None
    share = claim['status']['allocation']['devices']['results'][0]['shareID']
    d = res.devices[0] if len(res.devices) == 1 else None
    got = (list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids)) if d else None
    t.is_eq(got, (['single-gpu'], NODE, 'hami-gpu-0', [f'k8s.{DRIVER}/claim={uid}-hami-gpu-0']),
            f'{name}: the answer names request, pool, device and the CDI device id')
    if version == 'v1':
        t.is_eq(d.share_id if d else None, share, f'{name}: v1 answer carries the shareID')
    spec = node.cdi_spec(uid)
    t.valid(pl.cdi_validator(), spec, f'{name}: CDI spec valid under the CDI schema')
    dev = f'{uid}-hami-gpu-0'
    env = [x for d in spec['devices'] if d['name'] == dev for x in d['containerEdits']['env']]
    t.ok('CUDA_DEVICE_MEMORY_LIMIT_0=4096m' in env and 'CUDA_DEVICE_SM_LIMIT_0=30' in env,
         f'{name}: CDI env carries CUDA_DEVICE_MEMORY_LIMIT_0=4096m and CUDA_DEVICE_SM_LIMIT_0=30',
         diag=env)
    return dev


def run_pod(t, node, claim, dev, mount_ns, gpu_uuid):
    name = claim['metadata']['name']
    pod = e2e.Pod(node, node.cdi_spec_path(claim['metadata']['uid']), dev, mount_ns)
    r = pod.run(e2e.probe('--step', '1Mi'))
    t.is_eq(r.returncode, 0, f'{name}: gpuslice probe ran in the pod') or t.diag(r.stderr[-3000:])
    t.like(r.stdout, f'(GPU-{gpu_uuid[4:]}) cuMemGetInfo: free 4096MiB total 4096MiB',
           f'{name}: cuMemGetInfo in the pod: total 4096MiB, on the T4 of the slice')
    t.like(r.stdout, 'probe: allocated 4096MiB in 4096 allocations of 1Mi; next allocation: '
                     'CUDA_ERROR_OUT_OF_MEMORY',
           f'{name}: CUDA_ERROR_OUT_OF_MEMORY exactly at 4096 MiB')
    s = pod.run([e2e.PATHS['GS_GPUSIM_SMI']])
    t.is_eq(s.returncode, 0, f'{name}: gpusim-smi ran in the pod') or t.diag(s.stderr[-3000:])
    t.is_eq(e2e.smi_line(s.stdout, gpu_uuid), (0, 4096),
            f'{name}: gpusim-smi in the pod shows 0MiB / 4096MiB') or t.diag(s.stdout)
    found = re.findall(r'GPU-[0-9a-f-]{36}', r.stdout + s.stdout)
    return sorted(set(found))


def check_double(t, node, api, claims, pods, mount_ns, gpu_uuid):
    """The lab's pods and claims deleted, a pod for double-gpu-0 (two requests, 20 cores / 2Gi
    and 40 cores / 6Gi): both land on the one T4, each with its own shareID; the plugin sums
    them into one 60-core / 8Gi grant that the process sees."""
    for c in claims:
        api.delete('ResourceClaim', NS, c['metadata']['name'])
    for p in pods:
        api.delete('Pod', NS, p['metadata']['name'])
    pod = manifest('examples', 'pod-0.yaml')
    pod['metadata']['name'] = 'pod-3'
    pod['spec']['resourceClaims'][0]['resourceClaimName'] = 'double-gpu-0'
    pod = api.apply(pod)
    s = e2e.schedule_pod(api, pod, NODE, node.tmp)
    t.is_eq(s.rc, 0, 'double-gpu-0, once a pod uses it: allocated') or t.diag(s.stderr)
    c = api.get('ResourceClaim', NS, 'double-gpu-0')
    res = e2e.allocation_results(c)
    t.is_eq([(r['request'], r['device'], r.get('consumedCapacity')) for r in res],
            [('gpu-a', 'hami-gpu-0', {'cores': '20', 'memory': '2Gi'}),
             ('gpu-b', 'hami-gpu-0', {'cores': '40', 'memory': '6Gi'})],
            'double-gpu-0: both requests on hami-gpu-0 with their own capacities')
    t.ok(len(res) == 2 and res[0].get('shareID') != res[1].get('shareID'),
         'double-gpu-0: one shareID per request')
    uid = c['metadata']['uid']
    r = node.kubelet.prepare('v1', [e2e.ref(c)])
    got = [(list(d.request_names), d.device_name, d.share_id) for d in r.claims[uid].devices]
    t.is_eq((r.claims[uid].error, got),
            ('', [(['gpu-a'], 'hami-gpu-0', res[0].get('shareID')),
                  (['gpu-b'], 'hami-gpu-0', res[1].get('shareID'))]),
            'double-gpu-0 prepared: one answer device per request, with its shareID')
    dev = f'{uid}-hami-gpu-0'
    p = e2e.Pod(node, node.cdi_spec_path(uid), dev, mount_ns)
    t.is_eq((p.env.get('CUDA_DEVICE_MEMORY_LIMIT_0'), p.env.get('CUDA_DEVICE_SM_LIMIT_0')),
            ('8192m', '60'), 'double-gpu-0: the CDI env sums the requests (8192m, 60)')
    out = p.run(e2e.probe('--step', '1Mi'))
    t.like(out.stdout, f'(GPU-{gpu_uuid[4:]}) cuMemGetInfo: free 8192MiB total 8192MiB',
           'pod-3 sees the summed 8192MiB') or t.diag(out.stderr[-2000:])
    t.like(out.stdout, 'probe: allocated 8192MiB in 8192 allocations of 1Mi; next allocation: '
                       'CUDA_ERROR_OUT_OF_MEMORY', 'pod-3: OOM exactly at 8192 MiB')
    r = node.kubelet.unprepare('v1', [e2e.ref(c)])
    t.is_eq(r.claims[uid].error, '', 'double-gpu-0 unprepared')
    t.is_eq(node.claim_files(), [], 'nothing left on the node')


def main():
    t = Tap()
    missing = e2e.missing_binaries()
    if missing:
        skip_unbuilt(t, 'the lab end to end', f"not built: {', '.join(missing)}")
        return t.done()
    mount_ns = e2e.edits_mode(t)
    with e2e.Node(t, NODE, 't4') as node:
        node.start()
        api = node.client
        gpu_uuid = check_slice(t, node)
        if gpu_uuid is None:
            return t.done()

        pod0, pod1 = apply_lab(t, api)
        for pod in (pod0, pod1):
            s = e2e.schedule_pod(api, pod, NODE, node.tmp)
            t.is_eq(s.rc, 0, f"kube-scheduler cycle for {pod['metadata']['name']}: gpuslice "
                             'schedule allocated its claim') or t.diag(s.stderr)
        claims = check_allocations(t, api, pod0, pod1)

        pod2 = check_too_big(t, api)
        s = e2e.schedule_pod(api, pod2, NODE, node.tmp)
        t.is_eq(s.rc, 1, 'pod-2 (80 cores): gpuslice schedule exits 1, claim not allocated')
        t.like(s.stderr, f'{DRIVER}/{NODE}/hami-gpu-0: InsufficientCapacity cores: need 80, '
                         'free 40', 'the reason names cores: need 80, free 40')
        big = api.get('ResourceClaim', NS, 'big-gpu-0')
        t.ok(not (big.get('status') or {}).get('allocation'),
             'big-gpu-0 stays pending in the API (no over-allocation)')

        seen = []
        for c, version in zip(claims, ('v1', 'v1beta1')):
            dev = check_prepare(t, node, c, version, gpu_uuid)
            if dev:
                seen.append(run_pod(t, node, c, dev, mount_ns, gpu_uuid))
        t.is_eq(seen, [[gpu_uuid]] * 2, 'both pods report the same GPU UUID, the slice device\'s')

        for c, version in zip(claims, ('v1beta1', 'v1')):
            r = node.kubelet.unprepare(version, [e2e.ref(c)])
            t.is_eq(r.claims[c['metadata']['uid']].error, '',
                    f"{c['metadata']['name']}: NodeUnprepareResources over {version}")
        t.is_eq(node.claim_files(), [], 'after unprepare: no CDI spec, no claim directory')
        t.is_eq((node.checkpoint() or {}).get('claims', {}) or {}, {},
                'after unprepare: the checkpoint holds no claim')
        check_double(t, node, api, claims, (pod0, pod1), mount_ns, gpu_uuid)
        rc = node.stop()
        t.is_eq(rc, 0, 'the plugin exits 0 on SIGTERM') or t.diag(node.log()[-3000:])
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
