#!/usr/bin/env python3
"""--mode=dra|legacy: the binary over HTTPS against the fake API server. Legacy mode routes a
GPU pod to the extender's scheduler with HAMi's defaults and denies what HAMi denies; each mode
refuses to start where the other mode's objects exist, saying what it found."""
import json
import subprocess
import sys
import tempfile

import jsonpatch

from fakeapi import FakeAPI
from gstest import Tap, env_paths
from whlib import DRIVER, Webhook, free_port, make_cert, patch_of, pod, review, slice_obj, \
    write_kubeconfig

TOKEN = 'modes-token'


def start_fails(binary, kubeconfig, cert, key, extra):
    """Run the webhook expecting it to refuse to start; (exit status, stderr)."""
    r = subprocess.run([binary, '--listen', f'127.0.0.1:{free_port()}', '--health-listen', '',
                        '--kubeconfig', kubeconfig, '--tls-cert-file', cert,
                        '--tls-key-file', key] + extra,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stderr


def check_legacy(t, api, wh):
    seed = pod({'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8000', 'nvidia.com/gpucores': '10'})
    status, resp = wh.mutate(review(seed, uid='legacy-seed'))
    r = resp['response']
    t.ok(status == 200 and r['allowed'] and 'patch' in r, 'legacy: seed pod allowed with a patch')
    new = jsonpatch.apply_patch(seed, patch_of(resp))
    t.is_eq(new['spec'].get('schedulerName'), 'hami-scheduler', 'legacy: schedulerName set')
    t.is_eq(new['spec']['containers'][0]['resources']['limits'],
            {'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8000', 'nvidia.com/gpucores': '10'},
            'legacy: the legacy resources stay (the device plugin serves them)')
    t.ok('resourceClaims' not in new['spec'], 'legacy: no claims')
    t.is_eq(len([x for x in api.requests(method='POST')]), 0, 'legacy: nothing written to the API')
    whole = pod({'nvidia.com/gpu': '1'})
    _, resp = wh.mutate(review(whole, uid='legacy-whole'))
    limits = jsonpatch.apply_patch(whole, patch_of(resp))['spec']['containers'][0]['resources'][
        'limits']
    t.is_eq(limits, {'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '4096',
                     'nvidia.com/gpucores': '100'},
            'legacy: --default-gpumem 4096 and --default-gpucores 100 (exclusive) applied')
    priv = pod({'nvidia.com/gpu': '1'})
    priv['spec']['containers'][0]['securityContext'] = {'privileged': True}
    _, resp = wh.mutate(review(priv, uid='legacy-priv'))
    r = resp['response']
    t.is_eq((r['allowed'], r['status']['code'], r['status']['message']),
            (False, 403, 'container main is privileged'), 'legacy: privileged GPU pod denied '
            'with HAMi\'s message')
    t.like(wh.output(), 'msg=serving mode=legacy', 'legacy mode logged at start')
    # Log lines are logfmt with every request value quoted: a newline in a pod name cannot
    # forge a line.
    evil = pod({'nvidia.com/gpu': '1'}, name='evil\nts=x level=error msg=forged')
    wh.mutate(review(evil, uid='evil\nuid'))
    lines = wh.output().splitlines()
    t.ok(not any(ln.startswith('ts=x') for ln in lines) and
         any('pod="team-a/evil\\nts=x level=error msg=forged-"' in ln for ln in lines),
         'pod name with a newline: one quoted, escaped value on one line',
         diag=[ln for ln in lines if 'evil' in ln or 'forged' in ln])


def main():
    t = Tap()
    binary = env_paths()['GS_WEBHOOK']
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token=TOKEN) as api:
        cert, key = make_cert(tmp)
        kubeconfig = write_kubeconfig(tmp, api.url, TOKEN)

        # A clean cluster: legacy mode starts and serves.
        wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp,
                     extra=['--mode', 'legacy', '--default-gpumem', '4096',
                            '--default-gpucores', '100'])
        try:
            t.run('legacy', check_legacy, t, api, wh)
        finally:
            t.is_eq(wh.stop(), 0, 'legacy: clean exit')

        # DRA objects present: legacy mode refuses, naming them.
        api.put(slice_obj('node-1-gpus', DRIVER, ['15Gi']))
        rc, err = start_fails(binary, kubeconfig, cert, key, ['--mode', 'legacy'])
        t.is_eq(rc, 1, 'legacy with our ResourceSlices: exit 1')
        t.like(err, '--mode=legacy, but this cluster runs gpuslice in DRA mode: 1 ResourceSlice(s) '
               f'of driver {DRIVER} (node node-1', 'message names the ResourceSlices and node')
        api.put({'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
                 'metadata': {'name': DRIVER}, 'spec': {}})
        rc, err = start_fails(binary, kubeconfig, cert, key, ['--mode', 'legacy'])
        t.ok(rc == 1 and f'DeviceClass {DRIVER} exists' in err and
             'The two modes must not run in one cluster' in err,
             'legacy with our DeviceClass: exit 1 naming it', diag=err)
        # ...while DRA mode starts on the same cluster.
        wh = Webhook(binary, cert, key, kubeconfig, workdir=tmp)
        status, resp = wh.mutate(review(pod({'nvidia.com/gpu': '1'}), uid='dra', dry=True))
        t.ok(status == 200 and 'resourceClaims' in json.dumps(patch_of(resp)),
             'DRA mode (default) starts on a DRA cluster and translates')
        t.is_eq(wh.stop(), 0, 'dra: clean exit')

        # A node published by a legacy device plugin: DRA mode refuses.
        api.put({'apiVersion': 'v1', 'kind': 'Node',
                 'metadata': {'name': 'gpu-node-7', 'annotations': {
                     'hami.io/node-nvidia-register': 'GPU-0,10,15360,100,NVIDIA-Tesla T4,0,true:',
                     'hami.io/node-handshake': 'Reported 2026-12-01 12:00:00'}}})
        rc, err = start_fails(binary, kubeconfig, cert, key, [])
        t.is_eq(rc, 1, 'dra with a legacy-annotated node: exit 1')
        t.like(err, '--mode=dra, but 1 node(s) carry the legacy device plugin\'s annotation '
               'hami.io/node-nvidia-register (node gpu-node-7', 'message names annotation and node')

        # The API server cannot be asked: no guess, a clear error.
        dead = write_kubeconfig(tmp, f'http://127.0.0.1:{free_port()}', TOKEN)
        rc, err = start_fails(binary, dead, cert, key, ['--mode', 'legacy', '--api-timeout',
                                                       '200ms'])
        t.ok(rc == 1 and 'refusing to start: cannot read DeviceClass' in err,
             'API server unreachable: exit 1 saying the check could not be made', diag=err)
        r = subprocess.run([binary, '--mode', 'hami'], capture_output=True, text=True)
        t.ok(r.returncode == 2 and '--mode' in r.stderr and 'hami' in r.stderr,
             'unknown --mode value: exit 2 naming it', diag=r.stderr)
    sys.exit(t.done())


if __name__ == '__main__':
    main()
