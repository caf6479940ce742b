#!/usr/bin/python3
"""The lab (Steps 4-6) on a gpusim Tesla T4: the plugin publishes the slice with the lab's
capacities; two claims of 30 cores / 4Gi (the lab's single-gpu-0 and the claim of pod-tpl-1's
template) are allocated by `gpuslice schedule` (our allocator playing kube-scheduler; a fixture
allocation when the CLI cannot) and prepared; each "pod" is a process started with its claim's CDI
edits applied (env + bind mounts in a private mount namespace, `unshare -rm`) that runs
gpusim-smi under libvgpu (through the mounted /etc/ld.so.preload) and must show 4096MiB; both see
the same GPU UUID; unprepare leaves nothing behind."""
import json
import os
import subprocess
import sys
import tempfile
import uuid

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pluginlib as pl  # noqa: E402
from gstest import Tap, env_paths, sanitizer_runtime, skip_unbuilt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def smi_command(p):
    if os.path.exists(p['GS_GPUSIM_SMI']):
        return [p['GS_GPUSIM_SMI']]
    return None


def load_examples(p):
    root = os.path.join(p['GS_SOURCE_ROOT'], 'deploy')
    with open(os.path.join(root, 'plugin', 'deviceclass.yaml')) as f:
        dc = yaml.safe_load(f)
    with open(os.path.join(root, 'examples', 'single-gpu-claim.yaml')) as f:
        c0 = yaml.safe_load(f)
    with open(os.path.join(root, 'examples', 'claim-template.yaml')) as f:
        tpl = yaml.safe_load(f)
    # What the resourceclaim controller makes of pod-tpl-1's template.
    c1 = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
          'metadata': {'name': 'pod-tpl-1-gpu-x7k2p', 'namespace': 'test-dra'},
          'spec': tpl['spec']['spec']}
    return dc, c0, c1


def schedule(t, p, tmp, slices, dc, claims):
    """Allocate with `gpuslice schedule`; returns {name: allocation} or None."""
    if not os.path.exists(p['GS_GPUSLICE']):
        return None, 'gpuslice CLI not built'
    d = os.path.join(tmp, 'sched')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'objects.yaml'), 'w') as f:
        yaml.safe_dump_all(slices + [dc] + claims, f)
    r = subprocess.run([p['GS_GPUSLICE'], 'schedule', '-f', d, '--node', pl.NODE, '-o', 'json'],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, f'gpuslice schedule failed ({r.returncode}): {r.stderr.strip()[:300]}'
    try:
        out = json.loads(r.stdout)
    except ValueError:
        return None, f'gpuslice schedule output is not JSON: {r.stdout[:200]}'
    found = {}

    def walk(o):
        if isinstance(o, dict):
            if o.get('kind') == 'ResourceClaim' and (o.get('status') or {}).get('allocation'):
                found[o['metadata']['name']] = o['status']['allocation']
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(out)
    if len(found) != len(claims):
        return None, f'gpuslice schedule allocated {sorted(found)}'
    return found, None


def fixture_allocation():
    return {'devices': {'results': [{
        'request': 'single-gpu', 'driver': pl.DRIVER, 'pool': pl.NODE, 'device': 'hami-gpu-0',
        'shareID': str(uuid.uuid4()), 'consumedCapacity': {'cores': '30', 'memory': '4Gi'}}]}}


def run_pod(t, env, p, spec_path, device, scratch, can_unshare, smi):
    base = pl.PluginEnv.env(env)
    extra = {'LD_LIBRARY_PATH': p['GS_SIM_DIR'], 'GPUSIM_PRESET': env.preset,
             'GPUSIM_STATE': env.sim_state}
    rt = sanitizer_runtime()
    if rt:
        # Our libraries are instrumented: the ASan runtime must come before /etc/ld.so.preload.
        extra['LD_PRELOAD'] = rt
        extra['ASAN_OPTIONS'] = 'detect_leaks=0'
    if can_unshare:
        cmd = ['unshare', '-rm', '/usr/bin/python3', os.path.join(HERE, 'cdi_exec.py'),
               '--spec', spec_path, '--device', device, '--scratch', scratch]
        for k, v in extra.items():
            cmd += ['--env', f'{k}={v}']
        cmd += ['--'] + smi
        return subprocess.run(cmd, capture_output=True, text=True, env=base, timeout=60)
    # Fallback: the same env, libvgpu by LD_PRELOAD from the host path, limits dir on the host.
    with open(spec_path) as f:
        spec = json.load(f)
    edits = [d for d in spec['devices'] if d['name'] == device][0]['containerEdits']
    e = dict(base)
    e.update(extra)
    for kv in edits['env']:
        k, _, v = kv.partition('=')
        e[k] = v
    mounts = {m['containerPath']: m['hostPath'] for m in edits['mounts']}
    lim = [h for c, h in mounts.items() if c.startswith('/etc/gpuslice/limits.d/')][0]
    e['GPUSLICE_LIMITS_DIR'] = os.path.dirname(lim)
    e['LD_PRELOAD'] = ':'.join(x for x in (rt, mounts['/usr/local/vgpu/libvgpu.so']) if x)
    return subprocess.run(smi, capture_output=True, text=True, env=e, timeout=60)


def main():
    t = Tap()
    p = env_paths()
    missing = [n for n, ok in (('gpusim', pl.gpusim_available()),
                               ('libvgpu.so', os.path.exists(p['GS_VGPU_LIB'])),
                               ('gpusim-smi', smi_command(p) is not None)) if not ok]
    if missing:
        skip_unbuilt(t, 'lab flow', f"not built yet: {', '.join(missing)}")
        return t.done()
    smi = smi_command(p)
    can_unshare = subprocess.run(['unshare', '-rm', 'true'], capture_output=True).returncode == 0
    if not can_unshare:
        t.diag('unshare -rm is not permitted here: applying env + LD_PRELOAD of the host paths '
               'instead of bind mounts in a private namespace')
    with pl.PluginEnv(t) as env:
        env.start()
        slices = env.wait_slices(lambda s: len(s) == 1)
        t.is_eq(len(slices), 1, 'T4 slice published')
        dev = slices[0]['spec']['devices'][0]
        t.is_eq((dev['capacity']['memory']['value'], dev['capacity']['cores']['value']),
                ('15Gi', '100'), 'slice capacities: memory 15Gi, cores 100')
        gpu_uuid = dev['attributes']['uuid']['string']
        t.no_schema_errors(env.slice_errors(), 'slice valid against the strict schema')

        dc, c0, c1 = load_examples(p)
        allocs, why = schedule(t, p, env.tmp, slices, dc, [c0, c1])
        t.ok(allocs is not None, 'gpuslice schedule (playing kube-scheduler) allocated both claims',
             diag=why)
        if allocs is None:
            # Keep checking the plugin's side with a hand-made allocation.
            allocs = {c0['metadata']['name']: fixture_allocation(),
                      c1['metadata']['name']: fixture_allocation()}
        else:
            res = [allocs[c['metadata']['name']]['devices']['results'][0] for c in (c0, c1)]
            t.is_eq([r['consumedCapacity'] for r in res], [{'cores': '30', 'memory': '4Gi'}] * 2,
                    'scheduler: each claim consumes 30 cores / 4Gi')
            t.is_eq({r['device'] for r in res}, {'hami-gpu-0'}, 'scheduler: both on hami-gpu-0')
            t.ok(res[0].get('shareID') and res[0].get('shareID') != res[1].get('shareID'),
                 'scheduler: distinct shareIDs', diag=res)
        claims = []
        for c in (c0, c1):
            c = json.loads(json.dumps(c))
            c['metadata']['uid'] = str(uuid.uuid4())
            c['status'] = {'allocation': allocs[c['metadata']['name']]}
            claims.append(env.api.put(c))
        shares = [c['status']['allocation']['devices']['results'][0] for c in claims]
        t.is_eq([(r['device'], r['consumedCapacity']) for r in shares],
                [('hami-gpu-0', {'cores': '30', 'memory': '4Gi'})] * 2,
                'both claims consume 30 cores / 4Gi of hami-gpu-0')
        t.ok(shares[0].get('shareID') and shares[0]['shareID'] != shares[1].get('shareID'),
             'each claim has its own shareID')

        outputs = []
        for c, version in zip(claims, ('v1', 'v1beta1')):
            uid = c['metadata']['uid']
            r = env.kubelet.prepare(version, [pl.ref(c)])
            t.is_eq(r.claims[uid].error, '', f"{c['metadata']['name']}: prepared over {version}")
            spec_path = os.path.join(env.dirs['cdi'], f'k8s.{pl.DRIVER}-claim_{uid}.json')
            t.no_schema_errors(env.cdi_spec_errors(), f"{c['metadata']['name']}: CDI specs valid")
            scratch = tempfile.mkdtemp(dir=env.tmp, prefix='pod-')
            out = run_pod(t, env, p, spec_path, f'{uid}-hami-gpu-0', scratch, can_unshare, smi)
            t.ok(out.returncode == 0, f"{c['metadata']['name']}: gpusim-smi ran in the pod",
                 diag=out.stderr[-2000:])
            t.like(out.stdout, '0MiB / 4096MiB', f"{c['metadata']['name']}: the pod sees 0MiB / 4096MiB")
            t.like(out.stdout, gpu_uuid, f"{c['metadata']['name']}: the pod sees the T4's UUID")
            t.ok('15360MiB' not in out.stdout, f"{c['metadata']['name']}: not the whole 15Gi")
            with open(os.path.join(env.dirs['host'], 'claims', uid, 'region', 'region'), 'rb') as f:
                t.is_eq(f.read(8), b'GSREGION',
                        f"{c['metadata']['name']}: libvgpu in the pod used the claim's shared region")
            t.diag(out.stdout)
            outputs.append(out.stdout)
        t.ok(all(gpu_uuid in o for o in outputs), 'both pods report the same GPU UUID')

        for c, version in zip(claims, ('v1beta1', 'v1')):
            r = env.kubelet.unprepare(version, [pl.ref(c)])
            t.is_eq(r.claims[c['metadata']['uid']].error, '', 'unprepared')
        t.is_eq(env.claim_files(), [], 'unprepare leaves nothing behind')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
