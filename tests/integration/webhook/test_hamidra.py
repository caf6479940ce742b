#!/usr/bin/env python3
"""HAMi-DRA's own webhook cases (issue 23), through the real binary: over HTTPS /mutate against the
fake API server, and offline through `gpuslice-webhook translate`, with HAMi-DRA's device config
file (the chart's ConfigMap) given as it is. Every case cites the HAMi-DRA test or function whose
inputs and expectations it is written from (github.com/Project-HAMi/HAMi-DRA):

  dra/mutating_test.go      TestAddAnnotationSelectors, TestAddAnnotationSelectorsHygon
  dra/mutating.go           addAnnotationSelectors (fail closed: "has no usable value"),
                            handleContainer (claims keyed on the count resource; cores/memory only
                            when named), Handle (label hami.io/dra: "true")
  config/dra_device_test.go TestDRADeviceHygonDefaults, TestConvertCoresWithReferenceComputeUnits,
                            TestConvertCoresHygonRequiresReferenceComputeUnits,
                            TestConvertMemoryMiB; dra_device.go TypeSelectorExpression,
                            DefaultAscendVNPUs; docs/ascend (the Ascend310P example pod)
  dra/extended_resource.go  ExtendedResourceWarnings (and issue 25: whole-GPU pods left to the
                            scheduler when a DeviceClass maps nvidia.com/gpu)
  volcano/mutating_test.go  quickstart-job, TestHandleTaskProcessesAllContainers,
                            TestHandleCleansUpTemplatesOnPartialFailure
  volcano/extended_resource_test.go TestHandleWarnsOnExtendedResourceConflict
  volcano/validating_test.go TestValidatingHandleDryRunKeepsTemplates; validating.go Handle
  cmd/webhook/app/options   --tls-min-version
"""
import hashlib
import json
import re
import ssl
import subprocess
import sys
import tempfile

import jsonpatch
import jsonschema

from fakeapi import FakeAPI
from gstest import Tap, env_paths, reference_json, skip_reference
from whlib import DRIVER, Webhook, make_cert, patch_of, write_kubeconfig

TOKEN = 'hamidra-token'
NS = 'default'

# charts/hami-dra/templates/webhook/device-config.yaml, rendered with the chart's values for
# nvidia, hygon (hcuReferenceComputeUnits 120) and ascend (ascendDevices unset: Ascend310P), the
# sections gpuslice does not use kept (they are ignored, as HAMi-DRA ignores them).
DEVICE_CONFIG = """\
nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  deviceClassName: hami-core-gpu.project-hami.io
  draDriverName: hami-core-gpu.project-hami.io
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  knownMigGeometries:
  - models: [ "A30" ]
    allowedGeometries:
      -
        - name: 1g.6gb
          core: 25
          memory: 6144
          count: 4
cambricon:
  resourceCountName: cambricon.com/vmlu
  resourceMemoryName: cambricon.com/mlu.smlu.vmemory
  resourceCoreName: cambricon.com/mlu.smlu.vcore
hygon:
  resourceCountName: hygon.com/hcunum
  resourceMemoryName: hygon.com/hcumem
  resourceCoreName: hygon.com/hcucores
  deviceClassName: dra.hygon.com
  draDriverName: dra.hygon.com
  requestName: hcu
  referenceComputeUnits: 120
ascend:
  deviceClassName: hami-vnpu-core.project-hami.io
  draDriverName: ascend.project-hami.io
  requestName: npu
  devices:
  - commonWord: Ascend310P
    resourceName: huawei.com/Ascend310P
    resourceMemoryName: huawei.com/Ascend310P-memory
    resourceCoreName: huawei.com/Ascend310P-core
vendors:
  - "nvidia"
  - "hygon"
  - "ascend"
vnpus:
- chipName: 310P3
  commonWord: Ascend310P
  resourceName: huawei.com/Ascend310P
  resourceMemoryName: huawei.com/Ascend310P-memory
  memoryAllocatable: 21527
"""
HYGON_TYPE_SEL = 'device.driver == "dra.hygon.com" && device.attributes["dra.hygon.com"].type == "hcu"'
ASCEND_TYPE_SEL = ('device.driver == "ascend.project-hami.io" && '
                   'device.attributes["ascend.project-hami.io"].type == "HAMivNPUCore"')
MI = 1024 * 1024


def pod(limits, name='test-pod', annotations=None, containers=None, requests=None, labels=None):
    res = {'limits': limits}
    if requests:
        res['requests'] = requests
    p = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': NS},
         'spec': {'containers': containers or [{'name': 'app', 'image': 'busybox',
                                                'resources': res}]}}
    if annotations is not None:
        p['metadata']['annotations'] = annotations
    if labels:
        p['metadata']['labels'] = labels
    return p


def review(obj, uid, op='CREATE', kind=('', 'v1', 'Pod'), resource='pods', dry=False, old=None):
    return {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
            'request': {'uid': uid, 'kind': dict(zip(('group', 'version', 'kind'), kind)),
                        'resource': {'group': kind[0], 'version': kind[1], 'resource': resource},
                        'namespace': NS, 'operation': op, 'object': obj, 'oldObject': old,
                        'dryRun': dry, 'userInfo': {'username': 'alice'}}}


def selector_parts(expr):
    """(negated, attribute, [literals]) of an `in [...]` selector, ours or HAMi-DRA's spelling
    (ours adds parentheses and a space after each comma; the meaning is the same)."""
    m = re.fullmatch(r'(!?)\(?device\.attributes\["([^"]+)"\]\.(\w+) in \[(.*)\]\)?', expr)
    if not m:
        return expr
    return (m.group(1) == '!', m.group(2), m.group(3), json.loads('[' + m.group(4) + ']'))


class Case:
    def __init__(self, name, cite, obj, expect, annotations=None):
        self.name, self.cite, self.obj, self.expect = name, cite, obj, expect


def claim_specs(pod_after, templates):
    """{pod claim name: claim spec} for the pod's generated claims."""
    by_name = {tp['metadata']['name']: tp['spec']['spec'] for tp in templates}
    return {pc['name']: by_name.get(pc.get('resourceClaimTemplateName'))
            for pc in pod_after['spec'].get('resourceClaims', [])}


def request_of(spec):
    return spec['devices']['requests'][0]


def sels(spec):
    return [s['cel']['expression'] for s in request_of(spec)['exactly'].get('selectors', [])]


def qty_bytes(q):
    units = {'Ki': 1024, 'Mi': MI, 'Gi': 1024 * MI, 'Ti': 1024 ** 4}
    for u, f in units.items():
        if q.endswith(u):
            return int(q[:-2]) * f
    return int(q)


def mutate_case(t, wh, api, c, validator):
    """The pod through /mutate: (allowed, message, pod after the patch, templates in the API)."""
    before = {tp['metadata']['name'] for tp in api.list('resourceclaimtemplates')}
    status, resp = wh.mutate(review(c.obj, uid='uid-' + c.name))
    r = resp['response']
    if not r['allowed']:
        return False, r['status']['message'], None, [], r.get('warnings', [])
    after = jsonpatch.apply_patch(c.obj, patch_of(resp)) if 'patch' in r else c.obj
    names = {pc.get('resourceClaimTemplateName') for pc in after['spec'].get('resourceClaims', [])}
    tpls = [tp for tp in api.list('resourceclaimtemplates') if tp['metadata']['name'] in names]
    for tp in tpls:
        if validator:
            t.valid(validator, tp, f"{c.name}: /mutate template validates (strict schema)")
    del before
    return True, '', after, tpls, r.get('warnings', [])


def translate_case(binary, cfg, tmp, c, extra):
    path = f'{tmp}/{c.name}.json'
    with open(path, 'w') as f:
        json.dump(c.obj, f)
    r = subprocess.run([binary, 'translate', '--device-config-file', cfg] + extra + [path],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return False, r.stderr, None, [], []
    items = json.loads(r.stdout)['items']
    tpls = [i for i in items if i['kind'] == 'ResourceClaimTemplate']
    podobj = [i for i in items if i['kind'] == 'Pod'][0]
    return True, r.stderr, podobj, tpls, []


def pod_cases():
    cases = []
    # dra/mutating_test.go TestAddAnnotationSelectors: each row's annotations and selectors.
    hd = 'hami-core-gpu.project-hami.io'
    rows = [
        ('single-uuid', {'nvidia.com/use-gpuuuid': 'gpu-123'},
         [(False, 'uuid', ['gpu-123'])]),
        ('multiple-uuids', {'nvidia.com/use-gpuuuid': 'gpu-123,gpu-456,gpu-789'},
         [(False, 'uuid', ['gpu-123', 'gpu-456', 'gpu-789'])]),
        ('exclude-uuids', {'nvidia.com/nouse-gpuuuid': 'gpu-999,gpu-888'},
         [(True, 'uuid', ['gpu-999', 'gpu-888'])]),
        ('single-type', {'nvidia.com/use-gputype': 'A100'}, [(False, 'productName', ['A100'])]),
        ('multiple-types', {'nvidia.com/use-gputype': 'A100,H100'},
         [(False, 'productName', ['A100', 'H100'])]),
        ('exclude-types', {'nvidia.com/nouse-gputype': 'A100,H100'},
         [(True, 'productName', ['A100', 'H100'])]),
        ('combined', {'nvidia.com/use-gpuuuid': 'gpu-123,gpu-456',
                      'nvidia.com/nouse-gpuuuid': 'gpu-999', 'nvidia.com/use-gputype': 'A100',
                      'nvidia.com/nouse-gputype': 'H100'},
         [(False, 'uuid', ['gpu-123', 'gpu-456']), (True, 'uuid', ['gpu-999']),
          (False, 'productName', ['A100']), (True, 'productName', ['H100'])]),
        ('no-annotations', {}, []),
    ]
    for name, ann, want in rows:
        cases.append(Case(f'selectors-{name}', 'TestAddAnnotationSelectors',
                          pod({'nvidia.com/gpu': '1'}, annotations=ann),
                          {'claims': {'gpu-app': {
                              'selectors': [(n, hd, a, v) for n, a, v in want]}}}))
    # dra/mutating.go addAnnotationSelectors: an annotation with no usable value fails closed.
    for name, key, value in [('uuid-empty', 'nvidia.com/use-gpuuuid', ''),
                             ('type-commas', 'nvidia.com/nouse-gputype', ' , ,'),
                             ('hygon-uuid-empty', 'hygon.com/use-gpuuuid', ' ')]:
        limits = {'hygon.com/hcunum': '1'} if 'hygon' in name else {'nvidia.com/gpu': '1'}
        cases.append(Case(f'fail-closed-{name}', 'addAnnotationSelectors (no usable value)',
                          pod(limits, annotations={key: value}),
                          {'denied': f'annotation {key}: '}))
    # TestAddAnnotationSelectorsHygon + TestDRADeviceHygonDefaults + TypeSelectorExpression.
    cases.append(Case('hygon-selectors', 'TestAddAnnotationSelectorsHygon',
                      pod({'hygon.com/hcunum': '1'},
                          annotations={'hygon.com/use-gpuuuid': 'DCU-123',
                                       'hygon.com/use-hcutype': 'K100'}),
                      {'claims': {'hygon-app': {
                          'class': 'dra.hygon.com', 'request': 'hcu',
                          'selectors': [HYGON_TYPE_SEL,
                                        (False, 'dra.hygon.com', 'uuid', ['DCU-123']),
                                        (False, 'dra.hygon.com', 'productName', ['K100'])]}}}))
    # TestConvertCoresWithReferenceComputeUnits (120 units: 60% -> 72, 1% -> 2) and
    # TestConvertMemoryMiB (2000 -> 2000 MiB in bytes).
    for pct, units in ((60, 72), (1, 2)):
        cases.append(Case(f'hygon-cores-{pct}', 'TestConvertCoresWithReferenceComputeUnits',
                          pod({'hygon.com/hcunum': '1', 'hygon.com/hcucores': str(pct),
                               'hygon.com/hcumem': '2000'}),
                          {'claims': {'hygon-app': {'cores': str(units),
                                                    'memory': 2000 * MI}}}))
    # docs/ascend: the Ascend310P example pod (use-nputype against productName 310P3).
    cases.append(Case('ascend-310p', 'docs/ascend example pod; DefaultAscendVNPUs',
                      pod({'huawei.com/Ascend310P': '1', 'huawei.com/Ascend310P-memory': '1024',
                           'huawei.com/Ascend310P-core': '50'},
                          annotations={'hami.io/use-nputype': '310P3',
                                       'hami.io/use-Ascend310P-uuid': 'npu-uuid-1'}),
                      {'claims': {'ascend310p-app': {
                          'class': 'hami-vnpu-core.project-hami.io', 'request': 'npu',
                          'cores': '50', 'memory': 1024 * MI,
                          'selectors': [ASCEND_TYPE_SEL,
                                        (False, 'ascend.project-hami.io', 'uuid', ['npu-uuid-1']),
                                        (False, 'ascend.project-hami.io', 'productName',
                                         ['310P3'])]}}}))
    # Several vendors in one container: one claim each, the limits emptied of all of them.
    cases.append(Case('three-vendors', 'handleContainer (one claim per configured vendor)',
                      pod({'cpu': '1', 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000',
                           'hygon.com/hcunum': '1', 'huawei.com/Ascend310P': '1'}),
                      {'claims': {'gpu-app': {'memory': 1000 * MI, 'cores': None},
                                  'hygon-app': {'class': 'dra.hygon.com'},
                                  'ascend310p-app': {'class': 'hami-vnpu-core.project-hami.io'}},
                       'limits': {'cpu': '1'}}))
    # handleContainer: gpu + gpumem without gpucores asks no cores.
    cases.append(Case('gpu-gpumem-no-cores', 'handleContainer (cores only when named)',
                      pod({'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000'},
                          requests={'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000'}),
                      {'claims': {'gpu-app': {'memory': 1000 * MI, 'cores': None}}}))
    return cases


def check_spec(t, label, spec, want):
    req = request_of(spec)
    ex = req.get('exactly', {})
    if 'class' in want:
        t.is_eq(ex.get('deviceClassName'), want['class'], f'{label}: deviceClassName')
    if 'request' in want:
        t.is_eq(req['name'], want['request'], f'{label}: request name')
    caps = ex.get('capacity', {}).get('requests', {})
    if 'cores' in want:
        t.is_eq(caps.get('cores'), want['cores'], f'{label}: cores')
    if 'memory' in want:
        t.is_eq(qty_bytes(caps['memory']) if 'memory' in caps else None, want['memory'],
                f'{label}: memory in bytes')
    if 'selectors' in want:
        got = [selector_parts(e) for e in sels(spec)]
        w = [x if isinstance(x, str) else x for x in want['selectors']]
        t.is_eq(got, w, f'{label}: selectors (negation, driver, attribute, values)')


def check_result(t, how, c, res):
    allowed, msg, after, tpls, warnings = res
    label = f'{c.name} via {how} ({c.cite})'
    if 'denied' in c.expect:
        t.ok(not allowed and c.expect['denied'] in msg, f'{label}: refused naming the annotation',
             diag=msg)
        return
    if not t.ok(allowed, f'{label}: allowed', diag=msg):
        return
    specs = claim_specs(after, tpls)
    t.is_eq(sorted(specs), sorted(c.expect['claims']), f'{label}: one claim per vendor asked')
    for cn, want in c.expect['claims'].items():
        if specs.get(cn):
            check_spec(t, f'{label}: {cn}', specs[cn], want)
    res = after['spec']['containers'][0].get('resources', {})
    t.is_eq(res.get('limits'), c.expect.get('limits'), f'{label}: legacy limits emptied')
    t.is_eq(after['metadata'].get('labels', {}).get('hami.io/dra'), 'true',
            f'{label}: label hami.io/dra=true (HAMi-DRA Handle)')


def check_pods(t, wh, api, binary, cfg, tmp, validator):
    """HAMi-DRA's cases with HAMi-DRA's exact type match (--gpu-type-match exact)."""
    for c in pod_cases():
        check_result(t, '/mutate', c, mutate_case(t, wh, api, c, validator))
        res = translate_case(binary, cfg, tmp, c, ['--gpu-type-match', 'exact'])
        for tp in res[3] if validator else []:
            t.valid(validator, tp, f"{c.name}: translate template validates (strict schema)")
        check_result(t, 'translate', c, res)


def check_small(t, wh, api, binary, cfg, tmp):
    # TestConvertCoresHygonRequiresReferenceComputeUnits: no reference units, no conversion.
    nocu = f'{tmp}/nocu.yaml'
    with open(nocu, 'w') as f:
        f.write(DEVICE_CONFIG.replace('  referenceComputeUnits: 120\n', ''))
    c = Case('hygon-no-reference', 'TestConvertCoresHygonRequiresReferenceComputeUnits',
             pod({'hygon.com/hcunum': '1', 'hygon.com/hcucores': '50'}),
             {'denied': 'referenceComputeUnits is not configured'})
    check_result(t, 'translate', c, translate_case(binary, nocu, tmp, c, []))
    # handleContainer keys on the count: gpumem alone is left as it is with --default-gpu 0
    # (our default 1 is HAMi's defaultGPUNum, which HAMi-DRA's own ConfigMap writes).
    only_mem = pod({'nvidia.com/gpumem': '1000'})
    zero = f'{tmp}/zero.yaml'
    with open(zero, 'w') as f:
        f.write(DEVICE_CONFIG.replace('defaultGPUNum: 1', 'defaultGPUNum: 0'))
    ok, err, after, tpls, _ = translate_case(
        binary, zero, tmp, Case('mem-only', '', only_mem, {}), [])
    t.ok(ok and after == only_mem and tpls == [] and 'left as it is' in err,
         'gpumem without gpu, defaultGPUNum 0: pod untouched, as HAMi-DRA (handleContainer)',
         diag=err)
    ok, err, after, tpls, _ = translate_case(binary, cfg, tmp, Case('mem-one', '', only_mem, {}),
                                             [])
    t.ok(ok and len(tpls) == 1 and request_of(tpls[0]['spec']['spec'])['exactly']['count'] == 1,
         'gpumem without gpu, defaultGPUNum 1 (the chart): one GPU, HAMi\'s default')
    # --gpu-type-match exact: HAMi-DRA's productName comparison; substring stays the default.
    a = pod({'nvidia.com/gpu': '1'}, annotations={'nvidia.com/use-gputype': 'A100'})
    _, _, _, tpls, _ = translate_case(binary, cfg, tmp, Case('sub', '', a, {}), [])
    t.like(sels(tpls[0]['spec']['spec'])[0], '.lowerAscii().contains("a100")',
           'type match: substring by default (legacy HAMi)')
    _, _, _, tpls, _ = translate_case(binary, cfg, tmp, Case('ex', '', a, {}),
                                      ['--gpu-type-match', 'exact'])
    t.is_eq(selector_parts(sels(tpls[0]['spec']['spec'])[0]),
            (False, DRIVER, 'productName', ['A100']), 'type match: --gpu-type-match exact')


def check_config_file(t, binary, kubeconfig, tmp):
    """The device config file as HAMi-DRA's chart writes it: its nvidia names apply where our
    options are left at their defaults; what cannot be read stops the webhook, naming it."""
    custom = f'{tmp}/custom.yaml'
    with open(custom, 'w') as f:
        f.write(DEVICE_CONFIG.replace('resourceCountName: nvidia.com/gpu',
                                      'resourceCountName: example.com/vgpu'))
    p = pod({'example.com/vgpu': '2'})
    ok, err, after, tpls, _ = translate_case(binary, custom, tmp, Case('custom', '', p, {}), [])
    t.ok(ok and len(tpls) == 1 and request_of(tpls[0]['spec']['spec'])['exactly']['count'] == 2,
         'nvidia.resourceCountName from the file: example.com/vgpu translated', diag=err)
    ok, err, after, tpls, _ = translate_case(binary, custom, tmp, Case('custom2', '', p, {}),
                                             ['--resource-name', 'other.com/gpu'])
    t.ok(ok and tpls == [], 'an option set explicitly wins over the file', diag=err)
    # The runtime class of the devices used (the ascend section's runtimeClassName), set when
    # the pod names none; a pod naming another keeps it, with a warning.
    rc = f'{tmp}/runtime.yaml'
    with open(rc, 'w') as f:
        f.write(DEVICE_CONFIG.replace('  requestName: npu\n',
                                      '  requestName: npu\n  runtimeClassName: ascend\n'))
    npu = pod({'huawei.com/Ascend310P': '1'})
    ok, err, after, _, _ = translate_case(binary, rc, tmp, Case('rc', '', npu, {}), [])
    t.is_eq(after['spec'].get('runtimeClassName') if ok else err, 'ascend',
            'ascend runtimeClassName from the file set on the pod')
    npu['spec']['runtimeClassName'] = 'mine'
    ok, err, after, _, _ = translate_case(binary, rc, tmp, Case('rc2', '', npu, {}), [])
    t.ok(ok and after['spec']['runtimeClassName'] == 'mine' and 'kept as it is' in err,
         'a pod naming another runtime class keeps it, with a warning', diag=err)
    gpu_only = pod({'nvidia.com/gpu': '1'})
    ok, err, after, _, _ = translate_case(binary, rc, tmp, Case('rc3', '', gpu_only, {}), [])
    t.ok(ok and 'runtimeClassName' not in after['spec'],
         'an NVIDIA-only pod gets no Ascend runtime class')
    for name, text, want in [
            ('missing', None, 'No such file or directory'),
            ('removed-vendor', 'vendor: nvidia\n', 'field vendor was removed'),
            ('unknown-vendor', 'vendors: [nvidia, cambricon]\n', '"cambricon" is not supported'),
            ('bad-type', 'hygon:\n  referenceComputeUnits: lots\nvendors: [hygon]\n',
             'hygon.referenceComputeUnits must be an integer')]:
        path = f'{tmp}/{name}.yaml'
        if text is not None:
            with open(path, 'w') as f:
                f.write(text)
        r = subprocess.run([binary, '--device-config-file', path, '--kubeconfig', kubeconfig,
                            '--health-listen', '', '--listen', '127.0.0.1:1'],
                           capture_output=True, text=True, timeout=60)
        t.ok(r.returncode == 1 and want in r.stderr and path in r.stderr,
             f'device config {name}: the webhook refuses to start, naming file and problem',
             diag=r.stderr)


def check_extended(t, wh, api):
    """ExtendedResourceWarnings + issue 25: with a DeviceClass mapping nvidia.com/gpu, a pod
    asking whole GPUs only is left to the scheduler; one with gpumem is still translated."""
    api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
             'metadata': {'name': 'gpu-extended'},
             'spec': {'extendedResourceName': 'nvidia.com/gpu',
                      'selectors': [{'cel': {'expression': 'true'}}]}})
    _, resp = wh.mutate(review(pod({'nvidia.com/gpu': '1'}, name='whole'), uid='ext-whole'))
    r = resp['response']
    t.ok(r['allowed'] and 'patch' not in r and
         any('left to the scheduler' in w for w in r.get('warnings', [])),
         'extendedResourceName class: a whole-GPU pod is left to the scheduler, with a warning',
         diag=r)
    _, resp = wh.mutate(review(pod({'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000'},
                                   name='sliced'), uid='ext-sliced'))
    r = resp['response']
    t.ok(r['allowed'] and 'patch' in r and
         any('extendedResourceName' in w for w in r.get('warnings', [])),
         'extendedResourceName class: a gpumem pod is still translated, with a warning', diag=r)
    # volcano/extended_resource_test.go TestHandleWarnsOnExtendedResourceConflict: the
    # quickstart job is still translated, with one warning when a DeviceClass maps
    # nvidia.com/gpu and none when it maps another resource.
    for ext, want in (('nvidia.com/gpu', 1), ('example.com/gpu', 0)):
        api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
                 'metadata': {'name': 'gpu-extended'},
                 'spec': {'extendedResourceName': ext,
                          'selectors': [{'cel': {'expression': 'true'}}]}})
        limits = {'cpu': '1', 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000'}
        vjob = job(f"ext-{ext.split('.')[0]}", [ctr('busybox-container', limits, limits)])
        _, resp = wh.mutate(review(vjob, f'job-ext-{want}', kind=JOB_KIND, resource='jobs'))
        r = resp['response']
        warns = [w for w in r.get('warnings', []) if 'extendedResourceName' in w]
        t.ok(r['allowed'] and 'patch' in r and len(warns) == want,
             f'volcano job, DeviceClass mapping {ext}: translated, {want} warning(s)', diag=r)


JOB_KIND = ('batch.volcano.sh', 'v1alpha1', 'Job')


def job(name, containers, task='completion-task'):
    return {'apiVersion': 'batch.volcano.sh/v1alpha1', 'kind': 'Job',
            'metadata': {'name': name, 'namespace': NS},
            'spec': {'minAvailable': 3, 'schedulerName': 'volcano',
                     'tasks': [{'replicas': 3, 'name': task,
                                'template': {'spec': {'containers': containers,
                                                      'restartPolicy': 'Never'}}}]}}


def vname(job, task, container, vendor='nvidia', ns=NS):
    """A task container's template name: "<ns>-<job>-<task>-<8 hex of SHA-256 of ns/job/task>-
    <container>-<vendor>" (wh_job_prefix: HAMi-DRA's "<job>-<task>" lets two jobs collide),
    over 63 characters truncated as HAMi-DRA's truncateDNS1123Label."""
    h = hashlib.sha256(f'{ns}/{job}/{task}'.encode()).hexdigest()[:8]
    name = f'{ns}-{job}-{task}-{h}-{container}-{vendor}'
    if len(name) > 63:
        d = hashlib.sha256(name.encode()).hexdigest()[:8]
        keep = 54
        while keep > 0 and name[keep - 1] == '-':
            keep -= 1
        name = f'{name[:keep]}-{d}'
    return name


def ctr(name, limits, requests=None):
    res = {'limits': limits}
    if requests:
        res['requests'] = requests
    return {'name': name, 'image': 'busybox:latest', 'resources': res}


def check_volcano(t, wh, api, validator, binary, cfg, tmp):
    tpl_names = lambda: sorted(tp['metadata']['name'] for tp in api.list('resourceclaimtemplates')
                               if tp['metadata'].get('labels', {}).get('hami.io/dra'))
    # volcano/mutating_test.go quickstart-job (vcjob-quickstart.yaml).
    quick = job('quickstart-job', [ctr('busybox-container',
                                       {'cpu': '1', 'nvidia.com/gpu': '1',
                                        'nvidia.com/gpumem': '1000'},
                                       {'cpu': '1', 'nvidia.com/gpu': '1',
                                        'nvidia.com/gpumem': '1000'})])
    _, resp = wh.mutate(review(quick, 'job-quick', kind=JOB_KIND, resource='jobs'))
    r = resp['response']
    t.ok(r['allowed'] and 'patch' in r, 'volcano quickstart-job: allowed with a patch')
    q = jsonpatch.apply_patch(quick, patch_of(resp))
    tmpl = q['spec']['tasks'][0]['template']
    name = vname('quickstart-job', 'completion-task', 'busybox-container')
    t.is_eq(tmpl['spec'].get('resourceClaims'),
            [{'name': 'gpu-busybox-container', 'resourceClaimTemplateName': name}],
            'quickstart-job: task template references the job\'s own template')
    t.is_eq(tmpl['spec']['containers'][0]['resources'],
            {'limits': {'cpu': '1'}, 'requests': {'cpu': '1'},
             'claims': [{'name': 'gpu-busybox-container'}]},
            'quickstart-job: legacy resources removed, claim added')
    t.is_eq((q['metadata']['labels'].get('hami.io/dra'),
             tmpl['metadata']['labels'].get('hami.io/dra')), ('true', 'true'),
            'quickstart-job: job and task template labelled hami.io/dra')
    stored = api.get('resourceclaimtemplates', NS, name)
    t.ok(stored is not None, 'quickstart-job: template created in the API')
    if stored and validator:
        t.valid(validator, stored, 'quickstart-job: template validates (strict schema)')
    # The same job through `translate`: the same template, the same task template.
    with open(f'{tmp}/quick.json', 'w') as f:
        json.dump(quick, f)
    r = subprocess.run([binary, 'translate', '--device-config-file', cfg, f'{tmp}/quick.json'],
                       capture_output=True, text=True, timeout=60)
    items = json.loads(r.stdout)['items'] if r.returncode == 0 else []
    t.is_eq([(i['kind'], i['metadata']['name']) for i in items],
            [('ResourceClaimTemplate', name), ('Job', 'quickstart-job')],
            'quickstart-job via translate: the job\'s template, then the job')
    if len(items) == 2 and stored:
        t.is_eq(items[0]['spec'], stored['spec'], 'translate: the same template spec as /mutate')
        t.is_eq(items[1]['spec']['tasks'][0]['template'], tmpl,
                'translate: the same task template as /mutate')
    # A pod Volcano creates from the translated task is left alone by the pod path.
    vpod = {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': 'quickstart-job-completion-task-0', 'namespace': NS,
                         'labels': dict(tmpl['metadata']['labels']),
                         'annotations': {'volcano.sh/job-name': 'quickstart-job'}},
            'spec': json.loads(json.dumps(tmpl['spec']))}
    vpod['spec']['containers'][0]['resources']['limits']['nvidia.com/gpu'] = '1'
    _, resp = wh.mutate(review(vpod, 'job-pod'))
    t.ok(resp['response']['allowed'] and 'patch' not in resp['response'],
         'a pod of the translated job is left alone by the pod path (hami.io/dra label)')

    # TestHandleTaskProcessesAllContainers: gpu-one, cpu-only, gpu-two.
    multi = job('multi', [ctr('gpu-one', {'nvidia.com/gpu': '1'}), ctr('cpu-only', {'cpu': '1'}),
                          ctr('gpu-two', {'nvidia.com/gpu': '1'})], task='multi-gpu-task')
    _, resp = wh.mutate(review(multi, 'job-multi', kind=JOB_KIND, resource='jobs'))
    m = jsonpatch.apply_patch(multi, patch_of(resp))
    cs = m['spec']['tasks'][0]['template']['spec']['containers']
    t.is_eq([len(c['resources'].get('claims', [])) for c in cs], [1, 0, 1],
            'multi: both GPU containers get a claim, cpu-only untouched')
    want = [vname('multi', 'multi-gpu-task', 'gpu-one'), vname('multi', 'multi-gpu-task', 'gpu-two')]
    t.ok(all(api.get('resourceclaimtemplates', NS, n) for n in want),
         'multi: one template per GPU container', diag=tpl_names())

    # TestHandleCleansUpTemplatesOnPartialFailure: the second container's template exists and
    # is not ours, so the job fails halfway; the first container's template is deleted again.
    foreign = vname('leak', 'leak-task', 'gpu-two')
    api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate',
             'metadata': {'name': foreign, 'namespace': NS},
             'spec': {'spec': {'devices': {'requests': []}}}})
    leak = job('leak', [ctr('gpu-one', {'nvidia.com/gpu': '1'}),
                        ctr('gpu-two', {'nvidia.com/gpu': '1'})], task='leak-task')
    _, resp = wh.mutate(review(leak, 'job-leak', kind=JOB_KIND, resource='jobs'))
    r = resp['response']
    t.ok(not r['allowed'] and foreign in r['status']['message'],
         'leak: the job is refused, naming the template in the way', diag=r)
    t.ok(api.get('resourceclaimtemplates', NS, vname('leak', 'leak-task', 'gpu-one')) is None,
         'leak: the template created before the failure was deleted')
    t.ok(api.get('resourceclaimtemplates', NS, foreign) is not None,
         'leak: the foreign template is kept')

    # validating.go Handle: a job without the hami.io/dra label owns nothing.
    unlabelled = json.loads(json.dumps(q))
    del unlabelled['metadata']['labels']['hami.io/dra']
    _, resp = wh.mutate(review(None, 'job-del-unlabelled', op='DELETE', kind=JOB_KIND,
                               resource='jobs', old=unlabelled))
    t.ok(resp['response']['allowed'] and api.get('resourceclaimtemplates', NS, name),
         'delete of a job without hami.io/dra: allowed, nothing deleted')
    # Deleting a job: TestValidatingHandleDryRunKeepsTemplates, then for real.
    _, resp = wh.mutate(review(None, 'job-del-dry', op='DELETE', kind=JOB_KIND, resource='jobs',
                               dry=True, old=m))
    t.ok(resp['response']['allowed'] and all(api.get('resourceclaimtemplates', NS, n)
                                             for n in want),
         'delete, dryRun: allowed, templates kept')
    hostile = json.loads(json.dumps(m))
    hostile['spec']['tasks'][0]['template']['spec']['resourceClaims'].append(
        {'name': 'x', 'resourceClaimTemplateName': foreign})
    _, resp = wh.mutate(review(None, 'job-del', op='DELETE', kind=JOB_KIND, resource='jobs',
                               old=hostile))
    r = resp['response']
    t.ok(r['allowed'] and not any(api.get('resourceclaimtemplates', NS, n) for n in want),
         'delete: allowed, the job\'s templates deleted')
    t.ok(api.get('resourceclaimtemplates', NS, foreign) is not None and
         any(foreign in w for w in r.get('warnings', [])),
         'delete: a template the job names but the webhook did not make is kept, with a warning')
    t.ok(api.get('resourceclaimtemplates', NS, name) is not None,
         'delete of another job leaves quickstart-job\'s template')

    # Issue 31: job "my" / task "job-worker" and job "my-job" / task "worker" were both
    # "default-my-job-worker-…" (HAMi-DRA's "<job>-<task>"): the second job took the first one's
    # template and deleting one deleted the other's. With the hash of namespace/job/task they
    # are two templates, and deleting one job leaves the other's.
    jobs = {}
    for jname, task in (('my', 'job-worker'), ('my-job', 'worker')):
        j = job(jname, [ctr('main', {'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000'})],
                task=task)
        _, resp = wh.mutate(review(j, f'job-{jname}', kind=JOB_KIND, resource='jobs'))
        t.ok(resp['response']['allowed'], f'job {jname} / task {task}: admitted',
             diag=resp['response'])
        jobs[jname] = jsonpatch.apply_patch(j, patch_of(resp))
    refs = {k: v['spec']['tasks'][0]['template']['spec']['resourceClaims'][0][
        'resourceClaimTemplateName'] for k, v in jobs.items()}
    t.ok(refs['my'] != refs['my-job'] and
         all(api.get('resourceclaimtemplates', NS, n) for n in refs.values()),
         'the two jobs reference two templates, both created', diag=refs)
    t.is_eq(refs, {'my': vname('my', 'job-worker', 'main'), 'my-job': vname('my-job', 'worker',
                                                                          'main')},
            'template names carry the hash of namespace/job/task')
    _, resp = wh.mutate(review(None, 'job-del-my', op='DELETE', kind=JOB_KIND, resource='jobs',
                               old=jobs['my']))
    t.ok(resp['response']['allowed'] and
         api.get('resourceclaimtemplates', NS, refs['my']) is None and
         api.get('resourceclaimtemplates', NS, refs['my-job']) is not None,
         'deleting job "my" deletes its template and leaves job "my-job"\'s',
         diag=resp['response'])


def check_tls(t, binary, cert, key, kubeconfig, tmp):
    wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp, extra=['--tls-min-version', '1.3'])
    try:
        ctx = wh.context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        try:
            wh.request('GET', '/healthz', ctx=ctx)
            refused = False
        except (ssl.SSLError, OSError):
            refused = True
        t.ok(refused, '--tls-min-version 1.3: a TLS 1.2 client is refused')
        status, _, _ = wh.request('GET', '/healthz')
        t.is_eq(status, 200, '--tls-min-version 1.3: TLS 1.3 served')
    finally:
        t.is_eq(wh.stop(), 0, 'webhook (--tls-min-version 1.3) exits cleanly')


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    schema = reference_json('k8s-json-schema', 'resourceclaimtemplate-resource-v1.json')
    validator = jsonschema.Draft7Validator(schema) if schema else None
    if validator is None:
        skip_reference(t, 'templates against the strict ResourceClaimTemplate schema',
                       'k8s-json-schema')
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token=TOKEN) as api:
        cert, key = make_cert(tmp)
        kubeconfig = write_kubeconfig(tmp, api.url, TOKEN)
        cfg = f'{tmp}/device-config.yaml'
        with open(cfg, 'w') as f:
            f.write(DEVICE_CONFIG)
        wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp,
                     extra=['--device-config-file', cfg, '--class-cache-ttl', '1ms',
                            '--gpu-type-match', 'exact'])
        try:
            t.run('pods', check_pods, t, wh, api, binary, cfg, tmp, validator)
            t.run('small semantics', check_small, t, wh, api, binary, cfg, tmp)
            t.run('volcano', check_volcano, t, wh, api, validator, binary, cfg, tmp)
            t.run('extended resources', check_extended, t, wh, api)
        finally:
            t.is_eq(wh.stop(), 0, 'webhook exits cleanly')
        t.run('tls', check_tls, t, binary, cert, key, kubeconfig, tmp)
        t.run('config file', check_config_file, t, binary, kubeconfig, tmp)
    sys.exit(t.done())


if __name__ == '__main__':
    main()
