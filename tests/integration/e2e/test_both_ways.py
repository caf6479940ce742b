#!/usr/bin/python3
"""Seed 001, "the same slice both ways": a legacy HAMi pod (`nvidia.com/gpu: 1, gpumem: 10240,
gpucores: 50`) goes through the running webhook over HTTPS (AdmissionReview, JSON Patch applied
with python3-jsonpatch) and becomes a pod with a ResourceClaimTemplate in the API; the
resourceclaim controller (emulated) makes its claim; a hand-written DRA claim `{exactly:
{deviceClassName: hami-core-gpu.project-hami.io, allocationMode: ExactCount, count: 1,
capacity.requests: {cores: 50, memory: 10Gi}}}` has the same spec. Both are allocated by
`gpuslice schedule` on a gpusim H200 and prepared by the kubelet plugin: the CDI env carries
CUDA_DEVICE_MEMORY_LIMIT_0=10240m and CUDA_DEVICE_SM_LIMIT_0=50, and the process in each pod
sees a 10240 MiB GPU. A legacy pod asking more memory than is left is admitted and its claim stays
pending with a reason naming memory (legacy HAMi's CardInsufficientMemory). A legacy
`gpumem-percentage: 25` pod gets an alternative per memory size the plugin published, allocated
through the subrequest and seen by the process as 25 % of the H200."""
import os
import sys
import tempfile
import warnings

import jsonpatch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import e2elib as e2e  # noqa: E402
from e2elib import DRIVER, pl, whlib  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402

warnings.filterwarnings('ignore', category=DeprecationWarning)

NODE = 'node-1'
NS = 'seed-001'
LEGACY = {'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '10240', 'nvidia.com/gpucores': '50'}
# The article's DRA claim, as a user writes it.
DRA_CLAIM = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: dra-slice
  namespace: {NS}
spec:
  devices:
    requests:
      - name: gpu
        exactly:
          deviceClassName: {DRIVER}
          allocationMode: ExactCount
          count: 1
          capacity:
            requests:
              cores: 50
              memory: 10Gi
"""


def admit_legacy_pod(t, api, wh):
    """The legacy pod through the webhook; returns the pod as kube-apiserver stores it."""
    legacy = e2e.pod('legacy-0', NS, limits=LEGACY)
    status, resp = wh.mutate(whlib.review(legacy, ns=NS))
    t.is_eq(status, 200, 'webhook: POST /mutate over HTTPS answered 200')
    r = resp.get('response', {}) if isinstance(resp, dict) else {}
    t.ok(r.get('allowed') is True and r.get('patchType') == 'JSONPatch',
         'webhook: the legacy pod is allowed with a JSONPatch', diag=resp)
    if not r.get('patch'):
        return None
    mutated = jsonpatch.apply_patch(legacy, whlib.patch_of(resp))
    c = mutated['spec']['containers'][0]
    t.is_eq(c['resources'], {'claims': [{'name': 'gpu-cuda'}]},
            'patched pod: nvidia.com/gpu* removed, the container uses claim gpu-cuda')
    pcs = mutated['spec'].get('resourceClaims', [])
    t.ok(len(pcs) == 1 and pcs[0].get('name') == 'gpu-cuda'
         and pcs[0].get('resourceClaimTemplateName', '').startswith('gpuslice-'),
         'patched pod: spec.resourceClaims points at a gpuslice-<hash> template', diag=pcs)
    return api.apply(mutated)


def admit_too_big(t, api, wh):
    """A legacy pod asking more GPU memory than is left: admitted (the webhook does not
    schedule); its claim is then an ordinary unschedulable claim."""
    big = e2e.pod('legacy-big', NS, limits={'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '135000',
                                            'nvidia.com/gpucores': '10'})
    status, resp = wh.mutate(whlib.review(big, uid='big', ns=NS))
    r = resp.get('response', {}) if isinstance(resp, dict) else {}
    if not t.ok(status == 200 and r.get('allowed') is True and r.get('patch'),
                'webhook: the 135000 MiB legacy pod is admitted', diag=resp):
        return None
    return api.apply(jsonpatch.apply_patch(big, whlib.patch_of(resp)))


def check_too_big(t, api, node, pod):
    """Scheduled when one 10Gi share is allocated: 133531 MiB left, 135000 asked."""
    pod = e2e.claims_from_templates(api, pod)
    s = e2e.schedule_pod(api, pod, NODE, node.tmp)
    name = e2e.pod_claim_names(pod)[0]
    t.is_eq(s.rc, 1, 'legacy pod asking 135000 MiB: its claim cannot be allocated')
    t.like(s.stderr, f'{DRIVER}/{NODE}/hami-gpu-0: InsufficientCapacity memory: need 135000Mi, '
                     'free 133531Mi [CardInsufficientMemory]',
           "the reason names memory (legacy HAMi's CardInsufficientMemory)")
    t.ok(not e2e.allocation_results(api.get('ResourceClaim', NS, name)),
         'the claim stays pending (an ordinary unschedulable claim, no over-allocation)')


def admit(t, api, wh, name, limits):
    pod = e2e.pod(name, NS, limits=limits)
    status, resp = wh.mutate(whlib.review(pod, uid=name, ns=NS))
    r = resp.get('response', {}) if isinstance(resp, dict) else {}
    if not t.ok(status == 200 and r.get('allowed') is True and r.get('patch'),
                f'webhook: {name} {limits} admitted', diag=resp):
        return None
    return api.apply(jsonpatch.apply_patch(pod, whlib.patch_of(resp)))


def check_percentage(t, api, node, pod, mount_ns, gpu_uuid):
    """gpumem-percentage: 25 — the webhook made one alternative per GPU memory size the plugin
    published (the H200's 143771Mi); the allocator picks it; the plugin reports the base request
    name; the process sees 25 % of the H200, rounded down to whole MiB."""
    pod = e2e.claims_from_templates(api, pod)
    name = e2e.pod_claim_names(pod)[0]
    alts = api.get('ResourceClaim', NS, name)['spec']['devices']['requests'][0] \
        .get('firstAvailable', [])
    t.is_eq([(a['name'], a['capacity']['requests']) for a in alts],
            [('gpu-143771mi', {'cores': '20', 'memory': '35942Mi'})],
            'gpumem-percentage 25: one alternative for the published H200 size, 35942Mi')
    s = e2e.schedule_pod(api, pod, NODE, node.tmp)
    t.is_eq(s.rc, 0, 'gpumem-percentage claim allocated') or t.diag(s.stderr)
    c = api.get('ResourceClaim', NS, name)
    t.is_eq([(r['request'], r['device'], r.get('consumedCapacity'))
             for r in e2e.allocation_results(c)],
            [('gpu/gpu-143771mi', 'hami-gpu-0', {'cores': '20', 'memory': '35942Mi'})],
            'allocated through the subrequest gpu/gpu-143771mi')
    uid = c['metadata']['uid']
    r = node.kubelet.prepare('v1', [e2e.ref(c)])
    t.is_eq((r.claims[uid].error, [list(d.request_names) for d in r.claims[uid].devices]),
            ('', [['gpu']]), 'prepared; the answer names the base request gpu')
    p = e2e.Pod(node, node.cdi_spec_path(uid), f'{uid}-hami-gpu-0', mount_ns)
    t.is_eq((p.env.get('CUDA_DEVICE_MEMORY_LIMIT_0'), p.env.get('CUDA_DEVICE_SM_LIMIT_0')),
            ('35942m', '20'),
            'CDI env CUDA_DEVICE_MEMORY_LIMIT_0=35942m, CUDA_DEVICE_SM_LIMIT_0=20')
    out = p.run(e2e.probe('--max', '0'))
    t.like(out.stdout, f'(GPU-{gpu_uuid[4:]}) cuMemGetInfo: free 35942MiB total 35942MiB',
           'the process sees 25 % of the H200: total 35942MiB') or t.diag(out.stderr[-2000:])
    r = node.kubelet.unprepare('v1', [e2e.ref(c)])
    t.is_eq(r.claims[uid].error, '', 'gpumem-percentage claim unprepared')
    t.is_eq(node.claim_files(), [], 'nothing left on the node')


def main():
    t = Tap()
    missing = e2e.missing_binaries()
    if not os.path.exists(e2e.PATHS['GS_WEBHOOK']):
        missing.append('gpuslice-webhook')
    if missing:
        skip_unbuilt(t, 'the same slice both ways', f"not built: {', '.join(missing)}")
        return t.done()
    mount_ns = e2e.edits_mode(t)
    with e2e.Node(t, NODE, 'h200') as node, tempfile.TemporaryDirectory(prefix='gs-e2e-wh-') as td:
        node.start()
        api = node.client
        slices = node.wait_slices(lambda s: len(s) == 1)
        t.is_eq([d['capacity']['memory']['value'] for s in slices for d in s['spec']['devices']],
                ['143771Mi'], 'the plugin published the gpusim H200 (143771Mi)')
        gpu_uuid = slices[0]['spec']['devices'][0]['attributes']['uuid']['string'] if slices else ''
        api.apply(e2e.deviceclass())

        cert, key = whlib.make_cert(td)
        kubeconfig = whlib.write_kubeconfig(td, api.url, pl.TOKEN)
        wh = whlib.Webhook(e2e.PATHS['GS_WEBHOOK'], cert, key, kubeconfig, workdir=td)
        try:
            legacy = admit_legacy_pod(t, api, wh)
            too_big = admit_too_big(t, api, wh)
            pct = admit(t, api, wh, 'legacy-pct', {'nvidia.com/gpumem-percentage': '25',
                                                   'nvidia.com/gpucores': '20'})
        finally:
            rc = wh.stop()
        t.is_eq(rc, 0, 'the webhook exits 0 on SIGTERM') or t.diag(wh.output()[-3000:])
        if legacy is None:
            return t.done()
        tname = legacy['spec']['resourceClaims'][0]['resourceClaimTemplateName']
        tpl = api.get('ResourceClaimTemplate', NS, tname)
        t.valid(e2e.k8s_validator('resourceclaimtemplate-resource-v1'), tpl,
                f'the webhook created ResourceClaimTemplate {tname}: valid under the strict schema')
        t.is_eq(api.list('ResourceClaim', NS), [], 'the webhook created no ResourceClaim')

        legacy = e2e.claims_from_templates(api, legacy)
        via_webhook = api.get('ResourceClaim', NS, e2e.pod_claim_names(legacy)[0])
        dra = yaml.safe_load(DRA_CLAIM)
        dra['spec'] = e2e.canonical_quantities(dra['spec'])
        dra = api.apply(dra)
        t.is_eq(via_webhook['spec'], dra['spec'],
                "the legacy pod's claim and the hand-written DRA claim have the same spec")
        dra_pod = api.apply(e2e.pod('dra-0', NS, claim_name='dra-slice'))

        claims = []
        for p, c in ((legacy, via_webhook), (dra_pod, dra)):
            s = e2e.schedule_pod(api, p, NODE, node.tmp)
            t.is_eq(s.rc, 0, f"gpuslice schedule allocated {p['metadata']['name']}'s claim") \
                or t.diag(s.stderr)
            claims.append(api.get('ResourceClaim', NS, c['metadata']['name']))
            if p is legacy and too_big is not None:
                check_too_big(t, api, node, too_big)
        got = [[(r['device'], r.get('consumedCapacity')) for r in e2e.allocation_results(c)]
               for c in claims]
        t.is_eq(got, [[('hami-gpu-0', {'cores': '50', 'memory': '10Gi'})]] * 2,
                'both claims consume {cores: "50", memory: "10Gi"} of hami-gpu-0')

        for label, c in zip(('legacy pod', 'DRA pod'), claims):
            uid = c['metadata']['uid']
            r = node.kubelet.prepare('v1', [e2e.ref(c)])
            if not t.is_eq(r.claims[uid].error, '', f'{label}: NodePrepareResources'):
                continue
            dev = f'{uid}-hami-gpu-0'
            spec = node.cdi_spec(uid)
            t.valid(pl.cdi_validator(), spec, f'{label}: CDI spec valid')
            pod = e2e.Pod(node, node.cdi_spec_path(uid), dev, mount_ns)
            t.is_eq((pod.env.get('CUDA_DEVICE_MEMORY_LIMIT_0'),
                     pod.env.get('CUDA_DEVICE_SM_LIMIT_0')), ('10240m', '50'),
                    f'{label}: CDI env CUDA_DEVICE_MEMORY_LIMIT_0=10240m, '
                    'CUDA_DEVICE_SM_LIMIT_0=50')
            out = pod.run(e2e.probe('--max', '0'))
            t.like(out.stdout, f'(GPU-{gpu_uuid[4:]}) cuMemGetInfo: free 10240MiB total 10240MiB',
                   f'{label}: the process sees total 10240MiB') or t.diag(out.stderr[-2000:])
            smi = pod.run([e2e.PATHS['GS_GPUSIM_SMI']])
            t.is_eq(e2e.smi_line(smi.stdout, gpu_uuid), (0, 10240),
                    f'{label}: gpusim-smi in the pod: 0MiB / 10240MiB') or t.diag(smi.stdout)
            r = node.kubelet.unprepare('v1', [e2e.ref(c)])
            t.is_eq(r.claims[uid].error, '', f'{label}: NodeUnprepareResources')
        t.is_eq(node.claim_files(), [], 'nothing left on the node after unprepare')
        if pct is not None:
            for c in claims:
                api.delete('ResourceClaim', NS, c['metadata']['name'])
            check_percentage(t, api, node, pct, mount_ns, gpu_uuid)
        t.is_eq(node.stop(), 0, 'the plugin exits 0 on SIGTERM')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
