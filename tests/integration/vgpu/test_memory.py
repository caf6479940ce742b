#!/usr/bin/env python3
"""libvgpu memory enforcement on gpusim, through the real LD_PRELOAD path:
exact boundary (three ways of resolving entry points), every allocation API, env-only and
file-only configuration, multi-device limits keyed by UUID under a reordered
CUDA_VISIBLE_DEVICES, and the clamped views (CUDA, NVML, gpusim-smi)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import MiB, World, have_sim, parse, parse_lines  # noqa: E402

CUDA_ERROR_OUT_OF_MEMORY = 2


def boundary(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-b', [(uuid, 4096 * MiB, 0)], region=w.region('b'))
    for mode in ('dlsym', 'global', 'getproc', 'getproc13', 'getproc1'):
        kv = parse(w.run(['boundary', 4200, MiB], extra={'GS_PROBE_RESOLVE': mode}).stdout)
        t.is_eq(kv.get('allocated'), '4096', f'{mode}: 4096 allocations of 1 MiB succeed')
        t.is_eq(kv.get('first_fail'), str(CUDA_ERROR_OUT_OF_MEMORY),
                f'{mode}: the 4097th returns CUDA_ERROR_OUT_OF_MEMORY')
        t.is_eq(kv.get('total'), str(4096 * MiB), f'{mode}: cuMemGetInfo total is the limit')
        t.is_eq(kv.get('free'), '0', f'{mode}: cuMemGetInfo free is 0 at the limit')
        t.is_eq(kv.get('retry'), str(CUDA_ERROR_OUT_OF_MEMORY),
                f'{mode}: the process keeps running and is refused again')
        t.is_eq(kv.get('after_free_used'), '0', f'{mode}: usage back to 0 after frees')
        t.ok(kv.get('untracked_free') not in (None, '0'),
             f'{mode}: an untracked free is forwarded to the driver (its own error)',
             diag=kv.get('untracked_free'))
    # without preload gpusim would allow more than 4096 MiB: the limit is libvgpu's doing
    kv = parse(w.run(['boundary', 4200, MiB], preload=False).stdout)
    t.is_eq(kv.get('allocated'), '4201', 'without libvgpu the same program gets 4201 MiB')
    os.unlink(os.path.join(w.limits, 'claim-b.limits'))


def apis(t, w):
    uuid = w.devices()[0][1]
    lim = 64
    w.write_limits('claim-apis', [(uuid, lim * MiB, 0)], region=w.region('apis'))
    out = w.run(['apis', lim]).stdout
    kv = parse(out)
    big = lim * MiB // 4 * 3
    oom = str(CUDA_ERROR_OUT_OF_MEMORY)
    for api in ('alloc', 'managed', 'vmm', 'array'):
        t.is_eq(kv.get(api), '0', f'{api}: 3/4 of the limit succeeds')
        t.is_eq(kv.get(f'{api}_over'), oom, f'{api}: another half of the limit is refused')
        t.is_eq(kv.get(f'{api}_freed_used'), '0', f'{api}: freeing gives it back')
    lines = parse_lines(out)
    used = {}
    for d in lines:
        for k in ('alloc', 'managed', 'vmm', 'array', 'pitch', 'async', 'pool', 'pool_reuse'):
            if k in d and 'used' in d:
                used[k] = int(d['used'])
    for k in ('alloc', 'managed', 'vmm', 'array', 'async', 'pool'):
        t.ok(used.get(k, 0) >= big, f'{k}: usage counts at least the allocation',
             diag=f'used {used.get(k)} < {big}')
    pitch = int(kv.get('pitch_bytes', '0'))
    t.is_eq(kv.get('pitch'), '0', 'pitch: allocation succeeds')
    t.is_eq(used.get('pitch'), pitch * (big // 1024), 'pitch: charged pitch x height exactly')
    t.is_eq(kv.get('pitch_over'), oom, 'pitch: over the limit refused')
    t.is_eq(kv.get('pitch_freed_used'), '0', 'pitch: freeing gives it back')
    t.is_eq(kv.get('async'), '0', 'cuMemAllocAsync succeeds')
    t.is_eq(kv.get('async_over'), oom, 'cuMemAllocAsync: pool usage counts against the limit')
    line = next((d for d in lines if 'async_freed_used' in d), {})
    t.is_eq((line.get('async_freed_used'), line.get('pool_reserved')), ('0', '0'),
            'default pool: after free + sync + trim nothing reserved, nothing charged')
    line = next((d for d in lines if 'pool_kept_used' in d), {})
    t.is_eq(line.get('pool_kept_used'), line.get('pool_reserved'),
            'pool with release threshold: the charge is exactly what the pool reserves')
    t.is_eq(kv.get('pool'), '0', 'cuMemAllocFromPoolAsync succeeds')
    t.ok(int(line.get('pool_kept_used', 0)) >= big,
         'pool with release threshold: freed blocks stay charged (pool keeps them)')
    t.is_eq(kv.get('pool_kept_over'), oom, 'memory kept by a pool is not available elsewhere')
    t.is_eq(kv.get('pool_reuse'), '0', 'the pool reuses its own kept memory under the limit')
    t.is_eq(kv.get('pool_trimmed_used'), '0', 'trimming the pool gives the memory back')
    os.unlink(os.path.join(w.limits, 'claim-apis.limits'))


def context_overhead(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-ctx', [(uuid, 4096 * MiB, 0)], region=w.region('ctx'))
    ov = {'GPUSIM_CONTEXT_OVERHEAD': str(64 * MiB)}
    kv = parse(w.run(['boundary', 4200, MiB], extra=ov).stdout)
    t.is_eq(kv.get('allocated'), '4032',
            'context overhead 64 MiB is charged: 4032 allocations of 1 MiB fit 4096 MiB')
    t.is_eq(kv.get('after_free_used'), str(64 * MiB), 'the context stays charged after frees')
    w.write_limits('claim-ctx', [(uuid, 32 * MiB, 0)], region=w.region('ctx'))
    p = w.run(['boundary', 10, MiB], extra=ov, check=False)
    t.like(p.stderr, 'cuDevicePrimaryCtxRetain failed (2)',
           'a context whose overhead exceeds the limit fails with CUDA_ERROR_OUT_OF_MEMORY')
    os.unlink(os.path.join(w.limits, 'claim-ctx.limits'))


def env_only(t, w):
    kv = parse(w.run(['boundary', 200, MiB],
                     extra={'CUDA_DEVICE_MEMORY_LIMIT_0': '100m',
                            'CUDA_DEVICE_MEMORY_SHARED_CACHE': w.region('env')}).stdout)
    t.is_eq(kv.get('allocated'), '100', 'env only: CUDA_DEVICE_MEMORY_LIMIT_0=100m allows 100 MiB')
    t.is_eq(kv.get('total'), str(100 * MiB), 'env only: view total 100 MiB')
    kv = parse(w.run(['boundary', 200, MiB], extra={'CUDA_DEVICE_MEMORY_LIMIT': '1g'}).stdout)
    t.is_eq(kv.get('allocated'), '201', 'env only: a global 1g limit does not stop 201 MiB')


def file_only(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-f', [(uuid, 50 * MiB, 0)], region=w.region('f'))
    kv = parse(w.run(['boundary', 200, MiB],
                     extra={'CUDA_DEVICE_MEMORY_LIMIT_0': '100g',
                            'CUDA_DEVICE_MEMORY_LIMIT': '100g'}).stdout)
    t.is_eq(kv.get('allocated'), '50', 'file only: 50 MiB from the file; env cannot loosen it')
    with open(os.path.join(w.limits, 'claim-f.limits'), 'w') as f:
        f.write('version 1\nclaim claim-f\ndevice ' + uuid + ' memory=50M cores=0\n')
    p = w.run(['boundary', 200, MiB], extra={'LIBCUDA_LOG_LEVEL': '1'})
    kv = parse(p.stdout)
    t.is_eq(kv.get('allocated'), '0', 'malformed file: safe reading refuses allocations')
    t.like(p.stderr, 'memory="50M" is not a byte count', 'malformed file: one clear log line')
    p = w.run(['boundary', 10, MiB])
    t.is_eq(p.stderr, '', 'silent by default (LIBCUDA_LOG_LEVEL unset)')
    os.unlink(os.path.join(w.limits, 'claim-f.limits'))


def multi_device():
    t_local = []
    w = World(preset='h200x2')
    try:
        devs = w.devices()
        if len(devs) < 2:
            return [('skip', 'multi-device', 'preset h200x2 gives fewer than 2 devices')]
        (_, u0, phys0), (_, u1, phys1) = devs[0], devs[1]
        w.write_limits('claim-m', [(u0, 1000 * MiB, 0), (u1, 3000 * MiB, 0)],
                       region=w.region('m'))
        for cvd in (f'1,0', f'{u1},{u0}'):
            out = w.run(['views'], extra={'CUDA_VISIBLE_DEVICES': cvd}).stdout
            lines = [parse(x) for x in out.splitlines() if x.startswith('dev=')]
            t_local.append(('eq', [(d['uuid'], d['cu_total']) for d in lines],
                            [(u1, str(3000 * MiB)), (u0, str(1000 * MiB))],
                            f'CUDA_VISIBLE_DEVICES={cvd}: limits follow the UUID'))
            t_local.append(('eq', [d['total_mem'] for d in lines],
                            [str(3000 * MiB), str(1000 * MiB)],
                            f'CUDA_VISIBLE_DEVICES={cvd}: cuDeviceTotalMem_v2 agrees'))
            t_local.append(('eq', [(d.get('nvml_total'), d.get('nvml2_total')) for d in lines],
                            [(str(3000 * MiB),) * 2, (str(1000 * MiB),) * 2],
                            f'CUDA_VISIBLE_DEVICES={cvd}: NVML v1/v2 agree'))
            t_local.append(('eq', [d['used_after'] for d in lines], [str(MiB), str(MiB)],
                            f'CUDA_VISIBLE_DEVICES={cvd}: 1 MiB lands on the right device'))
        # env by index follows CUDA ordinals (HAMi semantics)
        os.unlink(os.path.join(w.limits, 'claim-m.limits'))
        out = w.run(['views'], extra={'CUDA_VISIBLE_DEVICES': '1,0',
                                      'CUDA_DEVICE_MEMORY_LIMIT_0': '2000m'}).stdout
        lines = [parse(x) for x in out.splitlines() if x.startswith('dev=')]
        t_local.append(('eq', [(d['uuid'], d['cu_total']) for d in lines],
                        [(u1, str(2000 * MiB)), (u0, str(phys0))],
                        'env CUDA_DEVICE_MEMORY_LIMIT_0 applies to CUDA ordinal 0; uncapped '
                        'device shows the physical total'))
    finally:
        w.close()
    return t_local


def views(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-v', [(uuid, 4096 * MiB, 30)], region=w.region('v'))
    h = w.spawn(['hold', 1000, 3000])
    h.stdout.readline()
    out = w.run(['views']).stdout
    kv = parse(out)
    t.is_eq((kv.get('cu_total'), kv.get('total_mem'), kv.get('nvml_total'), kv.get('nvml2_total')),
            (str(4096 * MiB),) * 4, 'views: every API reports total 4096 MiB')
    t.is_eq((kv.get('nvml_used'), kv.get('nvml2_used')), (str(1000 * MiB),) * 2,
            'views: NVML used is the container usage (other process holding 1000 MiB)')
    t.is_eq(int(kv.get('cu_free', 0)) + 1000 * MiB, 4096 * MiB, 'views: free = total - used')
    if os.path.exists(w.smi):
        import subprocess
        p = subprocess.run([w.smi], env=w.env(), capture_output=True, text=True, timeout=30)
        t.like(p.stdout, '1000MiB / 4096MiB', 'gpusim-smi under libvgpu shows the slice')
    else:
        skip_unbuilt(t, 'gpusim-smi shows the slice', 'gpusim-smi not built')
    h.kill()
    h.wait()
    if os.path.exists(w.smi):
        import subprocess
        p = subprocess.run([w.smi], env=w.env(), capture_output=True, text=True, timeout=30)
        t.like(p.stdout, '0MiB / 4096MiB', 'gpusim-smi: 0MiB / 4096MiB once the holder is gone')
    os.unlink(os.path.join(w.limits, 'claim-v.limits'))


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'libvgpu memory tests', 'gpusim libcuda.so.1 not built')
        return t.done()
    w = World()
    try:
        t.run('boundary', boundary, t, w)
        t.run('apis', apis, t, w)
        t.run('context_overhead', context_overhead, t, w)
        t.run('env_only', env_only, t, w)
        t.run('file_only', file_only, t, w)
        t.run('views', views, t, w)
    finally:
        w.close()
    res = t.run('multi_device', multi_device) or []
    for r in res:
        if r[0] == 'skip':
            t.skip(r[1], r[2])
        else:
            t.is_eq(r[1], r[2], r[3])
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
