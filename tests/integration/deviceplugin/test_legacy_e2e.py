#!/usr/bin/python3
"""Legacy mode end to end on gpusim (the seed article's demonstration, issue 15): webhook
(--mode=legacy, HTTPS) -> extender filter/bind -> device plugin Allocate (kubelet emulator) -> a
process with libvgpu and the environment and mounts Allocate returned sees 8000 MiB and gets
CUDA_ERROR_OUT_OF_MEMORY exactly there, while an 8000 MiB neighbour on the same H200 is not
affected; gpusim's own accounting (no libvgpu) never exceeds the grants. Then the same pod spec
in DRA mode (webhook translate + gpuslice schedule against the ResourceSlice the DRA plugin would
publish for this machine) gets the same slice: same GPU, same memory and cores."""
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonpatch

SRC = os.environ['GS_SOURCE_ROOT']
sys.path.insert(0, os.path.join(SRC, 'tests', 'integration', 'extender'))
sys.path.insert(0, os.path.join(SRC, 'tests', 'integration', 'webhook'))
from dplib import Plugin, pb  # noqa: E402
from extlib import Extender, FakeAPI, bind_args, filter_args, pod  # noqa: E402
from gstest import Tap, sanitizer_runtime  # noqa: E402
from whlib import Webhook, make_cert, patch_of, review, write_kubeconfig  # noqa: E402

t = Tap()
NODE = 'h200-node'
GRANT = 8000
DONE = 'probe: cuMemGetInfo now:'
GPUSLICE = os.environ['GS_GPUSLICE']


CDI_EXEC = os.path.join(SRC, 'tests', 'integration', 'plugin', 'cdi_exec.py')


def can_unshare(tmp):
    """Whether bind mounts can be applied in a private mount namespace (unshare -rm)."""
    spec = os.path.join(tmp, 'probe-spec.json')
    json.dump({'cdiVersion': '0.3.0', 'kind': 'gpuslice.test/probe',
               'devices': [{'name': 'none', 'containerEdits': {'env': ['X=1']}}]},
              open(spec, 'w'))
    try:
        r = subprocess.run(['unshare', '-rm', '/usr/bin/python3', CDI_EXEC, '--spec', spec,
                            '--device', 'none', '--scratch', tmp, '--', '/bin/true'],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def container(plugin, resp, name, tmp, argv):
    """Start `argv` as a runtime starts the container from Allocate's answer: its env and its
    mounts (libvgpu, /etc/ld.so.preload, the limits folder, the region and cache folders) bind
    mounted in a private mount namespace (tests/integration/plugin/cdi_exec.py)."""
    edits = {'env': [f'{k}={v}' for k, v in resp.envs.items()],
             'mounts': [{'hostPath': m.host_path, 'containerPath': m.container_path,
                         'options': ['ro' if m.read_only else 'rw', 'bind']}
                        for m in resp.mounts]}
    spec = os.path.join(tmp, f'{name}-spec.json')
    json.dump({'cdiVersion': '0.3.0', 'kind': 'gpuslice.test/legacy',
               'devices': [{'name': name, 'containerEdits': edits}]}, open(spec, 'w'))
    scratch = tempfile.mkdtemp(dir=tmp, prefix=f'{name}-')
    cmd = ['unshare', '-rm', '/usr/bin/python3', CDI_EXEC, '--spec', spec, '--device', name,
           '--scratch', scratch]
    rt = sanitizer_runtime()
    if rt:  # instrumented programs: the ASan runtime before /etc/ld.so.preload
        cmd += ['--env', f'LD_PRELOAD={rt}']
    return subprocess.Popen(cmd + ['--'] + argv, env=plugin.sim_env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def read_until(proc, needle, limit=200):
    lines = []
    for _ in range(limit):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            break
    return ''.join(lines)


def smi_used(plugin, uuid):
    r = subprocess.run([os.environ['GS_GPUSIM_SMI']], env=plugin.sim_env, capture_output=True,
                       text=True, timeout=60)
    lines = r.stdout.splitlines()
    for i, line in enumerate(lines):
        if uuid in line and i > 0:
            m = re.search(r'(\d+)MiB /', lines[i - 1])
            if m:
                return int(m.group(1))
    return None


def legacy_pod(api, wh, ext, name):
    """webhook (legacy) -> stored pod -> extender filter + bind."""
    p = pod(name, [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': GRANT, 'nvidia.com/gpucores': 10}])
    p['spec'].pop('schedulerName')  # as a user writes it
    status, resp = wh.mutate(review(p, uid=f'uid-{name}', ns='default'))
    ok = status == 200 and resp['response'].get('allowed') and 'patch' in resp['response']
    t.ok(ok, f'{name}: the legacy webhook allows the pod with a patch', diag=resp)
    mutated = jsonpatch.apply_patch(p, patch_of(resp)) if ok else p
    t.is_eq(mutated['spec'].get('schedulerName'), 'hami-scheduler',
            f'{name}: the legacy webhook routes the pod to hami-scheduler')
    api.put(mutated)
    stored = api.get('pods', 'default', name)
    code, res = ext.post('/filter', filter_args(stored, [api.get('nodes', None, NODE)], True))
    t.is_eq(res.get('nodenames'), [NODE], f'{name}: extender filter passes the node')
    code, b = ext.post('/bind', bind_args(stored, NODE))
    t.is_eq(b, {}, f'{name}: extender bound it')


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        proc.wait(30)
    proc.stdout.close()


def dra_slice(plugin, uuid, tmp):
    """The same pod spec through DRA mode: webhook translate + gpuslice schedule."""
    p = pod('dra-pod', [{'nvidia.com/gpu': 1, 'nvidia.com/gpumem': GRANT,
                         'nvidia.com/gpucores': 10}])
    pf = os.path.join(tmp, 'dra-pod.json')
    json.dump(p, open(pf, 'w'))
    tr = subprocess.run([os.environ['GS_WEBHOOK'], 'translate', pf], capture_output=True,
                        text=True, timeout=60)
    items = json.loads(tr.stdout)['items'] if tr.returncode == 0 else []
    tpl = [i for i in items if i['kind'] == 'ResourceClaimTemplate']
    if not t.is_eq(len(tpl), 1, 'DRA mode: the webhook makes one ResourceClaimTemplate'):
        t.diag(tr.stderr)
        return
    claim = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
             'metadata': {'name': 'dra-claim', 'namespace': 'default'},
             'spec': tpl[0]['spec']['spec']}
    env = dict(plugin.sim_env)
    ls = subprocess.run([GPUSLICE, 'ls', '--sim', '-o', 'slice', '--state-dir',
                         os.path.join(tmp, 'ls-state')], capture_output=True, text=True,
                        env=env, timeout=60)
    cls = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
           'metadata': {'name': 'hami-core-gpu.project-hami.io'},
           'spec': {'selectors': [{'cel': {
               'expression': 'device.driver == "hami-core-gpu.project-hami.io"'}}]}}
    files = []
    for name, obj in (('slice.json', None), ('class.json', cls), ('claim.json', claim)):
        f = os.path.join(tmp, name)
        with open(f, 'w') as fh:
            fh.write(ls.stdout if obj is None else json.dumps(obj))
        files += ['-f', f]
    sc = subprocess.run([GPUSLICE, 'schedule', *files, '-o', 'json'], capture_output=True,
                        text=True, env=env, timeout=60)
    if not t.is_eq(sc.returncode, 0, 'DRA mode: gpuslice schedule allocates the claim'):
        t.diag(ls.stderr + sc.stdout + sc.stderr)
        return
    out = json.loads(sc.stdout)
    claims = [o for o in (out.get('items') if isinstance(out, dict) else out) or []
              if o.get('kind') == 'ResourceClaim']
    res = claims[0]['status']['allocation']['devices']['results'] if claims else []
    sl = json.loads(ls.stdout) if ls.stdout.strip().startswith('{') else {}
    devs = {d['name']: d['attributes']['uuid']['string']
            for d in sl.get('spec', {}).get('devices', [])}
    got = [(devs.get(r['device']), r.get('consumedCapacity')) for r in res]
    t.is_eq(got, [(uuid, {'cores': '10', 'memory': f'{GRANT}Mi'})],
            'the same pod spec in DRA mode gets the same slice: same GPU, 8000Mi, 10 cores')


def main():
    tmp = tempfile.mkdtemp(prefix='gs-legacy-e2e-')
    api = FakeAPI(token='t0k3n').start()
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}})
    plugin = Plugin(api, tmp, NODE, preset='h200')
    cert, key = make_cert(tmp)
    wh = Webhook(os.environ['GS_WEBHOOK'], cert, key, write_kubeconfig(tmp, api.url, 't0k3n'),
                 workdir=tmp, extra=['--mode', 'legacy'])
    ext = Extender(api)
    procs = []
    try:
        if not can_unshare(tmp):
            t.skip('legacy end to end', 'unshare -rm refused here: no private mount namespace')
            return t.done()
        t.ok(plugin.kubelet.wait(1), 'device plugin registered with the kubelet emulator')
        for _ in range(100):
            reg = ((api.get('nodes', None, NODE)['metadata'].get('annotations') or {})
                   .get('hami.io/node-nvidia-register'))
            if reg:
                break
            __import__('time').sleep(0.1)
        devs = json.loads(reg or '[]')
        t.ok(len(devs) == 1 and devs[0]['devmem'] >= 2 * GRANT,
             'the plugin published one gpusim H200 (>= 16000 MiB)', diag=devs)
        uuid = devs[0]['id'] if devs else '?'
        endpoint = plugin.kubelet.requests[0].endpoint if plugin.kubelet.requests else 'none'
        ch, stub = plugin.kubelet.plugin(endpoint)
        ids = [d.ID for d in next(stub.ListAndWatch(pb.Empty(), timeout=30)).devices]

        want = (f'probe: allocated {GRANT}MiB in {GRANT} allocations of 1Mi; '
                'next allocation: CUDA_ERROR_OUT_OF_MEMORY')
        for i, name in enumerate(('greedy', 'neighbour')):
            legacy_pod(api, wh, ext, name)
            resp = stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[ids[i]])]), timeout=10)
            c = resp.container_responses[0]
            t.is_eq(dict(c.envs).get('CUDA_DEVICE_MEMORY_LIMIT_0'), f'{GRANT}m',
                    f'{name}: Allocate gives CUDA_DEVICE_MEMORY_LIMIT_0={GRANT}m')
            proc = container(plugin, c, name, tmp,
                             [GPUSLICE, 'probe', '--step', '1Mi', '--hold', '10m'])
            procs.append(proc)
            out = read_until(proc, DONE)
            t.like(out, f'cuMemGetInfo: free {GRANT}MiB total {GRANT}MiB',
                   f'{name}: the process sees {GRANT} MiB')
            t.like(out, want, f'{name}: CUDA_ERROR_OUT_OF_MEMORY exactly at {GRANT} MiB')
            used = smi_used(plugin, uuid)
            t.is_eq(used, GRANT * (i + 1),
                    f'gpusim (no libvgpu): {GRANT * (i + 1)} MiB used with {i + 1} holding')
        ch.close()
        for p in procs:
            stop(p)
        procs = []
        t.is_eq(smi_used(plugin, uuid), 0, 'gpusim: nothing used once both are gone')
        dra_slice(plugin, uuid, tmp)
    finally:
        for p in procs:
            stop(p)
        if t.failed:
            t.diag(plugin.output()[-3000:])
            t.diag(ext.output()[-2000:])
        t.is_eq(ext.stop(), 0, 'extender exits cleanly')
        t.is_eq(wh.stop(), 0, 'webhook exits cleanly')
        t.is_eq(plugin.stop(), 0, 'device plugin exits cleanly')
        api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
