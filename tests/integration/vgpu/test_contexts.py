#!/usr/bin/env python3
"""libvgpu contexts, limits location and views on gpusim, judged from gpusim's own books (the
driver's process list, which libvgpu does not hook):
- a context's end (destroy, primary reset, last primary release) gives back its allocations and
  its overhead, also when the primary context was retained out of libvgpu's sight;
- the CUDA runtime's pattern under a 4096 MiB slice: exact boundary, reset gives everything back;
- context overhead is a fixed amount per context: threads freeing while contexts are created
  cannot push the driver's usage past the limit (the signed-difference race);
- calls before cuInit return the driver's own answer; an NVML-only process never loads libcuda;
- free = min(limit - usage, what the device really has free), in CUDA and NVML alike;
- the HAMi-style environment shares one region per container (two processes, one limit);
- in a container set up as the CDI spec does (limits mounted read-only at the fixed path,
  /etc/ld.so.preload), GPUSLICE_LIMITS_DIR cannot point libvgpu elsewhere."""
import os
import pty
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gstest  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402
from vgpulib import prepare_region, MiB, World, have_sim, parse  # noqa: E402

OOM = '2'
NOT_INITIALIZED = '3'


def ctx_probe(w, args, extra=None, preload=True, check=True, timeout=120):
    exe = os.path.join(gstest.env_paths()['GS_BUILD_ROOT'], 'tests', 'integration', 'vgpu',
                       'vgpu_ctx_probe')
    p = subprocess.run([exe] + [str(a) for a in args], env=w.env(preload, extra),
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f'vgpu_ctx_probe {args} exit {p.returncode}: {p.stderr.strip()}')
    return p


def lifetimes(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-life', [(uuid, 100 * MiB, 0)], region=w.region('life'))
    for how in ('reset', 'destroy', 'release', 'hidden'):
        kv = parse(ctx_probe(w, ['lifetime', how, 60]).stdout)
        t.is_eq(kv.get('first'), '0', f'{how}: 60 MiB of a 100 MiB slice')
        t.is_eq(kv.get('kinds'), '0', f'{how}: and a pitched, a managed and an array allocation')
        t.ok(int(kv.get('used_first', 0)) >= 66 * MiB, f'{how}: all of them charged',
             diag=kv.get('used_first'))
        t.is_eq(kv.get('phys_gone'), '0', f'{how}: gpusim freed all of the context\'s memory')
        t.is_eq(kv.get('second'), '0',
                f'{how}: another 60 MiB fits once the context is gone (its allocations given back)')
        t.is_eq(kv.get('used_second'), str(60 * MiB),
                f'{how}: the slice counts only the new 60 MiB (every kind was given back)')
    # with a context overhead, the overhead comes back with the context too
    ov = {'GPUSIM_CONTEXT_OVERHEAD': str(8 * MiB)}
    for how in ('reset', 'destroy', 'hidden'):
        kv = parse(ctx_probe(w, ['lifetime', how, 60], extra=ov).stdout)
        t.is_eq((kv.get('first'), kv.get('second')), ('0', '0'),
                f'{how} with 8 MiB overhead: 8 + 60 MiB fit twice in 100 MiB')
        t.is_eq(kv.get('used_second'), str(68 * MiB),
                f'{how} with 8 MiB overhead: the slice counts one context and 60 MiB')
        t.is_eq(kv.get('phys_second'), str(68 * MiB), f'{how}: gpusim agrees (68 MiB)')
    os.unlink(os.path.join(w.limits, 'claim-life.limits'))


def runtime_pattern(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-rt', [(uuid, 4096 * MiB, 30)], region=w.region('rt'))
    for ov_mib in (0, 64):
        extra = {'GPUSIM_CONTEXT_OVERHEAD': str(ov_mib * MiB)}
        out = ctx_probe(w, ['runtime', 1], extra=extra).stdout
        lines = [parse(x) for x in out.splitlines()]
        start = next((d for d in lines if 'start_total' in d), {})
        t.is_eq((start.get('start_total'), start.get('start_free')),
                (str(4096 * MiB), str((4096 - ov_mib) * MiB)),
                f'overhead {ov_mib} MiB: the view shows the slice from the first call on '
                '(primary context retained out of sight, charged at first sight)')
        for rnd in ('0', '1'):
            d = next((x for x in lines if x.get('round') == rnd and 'allocated' in x), {})
            t.is_eq(d.get('allocated'), str(4096 - ov_mib),
                    f'overhead {ov_mib} MiB, round {rnd}: exactly {4096 - ov_mib} x 1 MiB fit')
            t.is_eq(d.get('refused'), OOM, f'round {rnd}: the next is CUDA_ERROR_OUT_OF_MEMORY')
            t.is_eq(d.get('phys'), str(4096 * MiB),
                    f'round {rnd}: gpusim holds exactly 4096 MiB for the process')
            t.is_eq((d.get('free'), d.get('total')), ('0', str(4096 * MiB)),
                    f'round {rnd}: view 0 free of 4096 MiB')
            r = next((x for x in lines if x.get('round') == rnd and 'phys_after_reset' in x), {})
            t.is_eq(r.get('phys_after_reset'), '0', f'round {rnd}: reset frees everything')
        end = next((d for d in lines if 'phys_after_release' in d), {})
        t.is_eq(end.get('phys_after_release'), '0', 'the last release frees the context')
    os.unlink(os.path.join(w.limits, 'claim-rt.limits'))


def overhead_race(t, w):
    uuid = w.devices()[0][1]
    limit = 1024 * MiB
    w.write_limits('claim-race', [(uuid, limit, 0)], region=w.region('race'))
    extra = {'GPUSIM_CONTEXT_OVERHEAD': str(64 * MiB)}
    worst, created = 0, []
    for _ in range(3):
        kv = parse(ctx_probe(w, ['race', 4, 2000], extra=extra).stdout)
        worst = max(worst, int(kv.get('phys', 1 << 62)))
        created.append(int(kv.get('created', -1)))
    t.ok(worst <= limit, 'threads freeing while contexts are created: gpusim never holds more '
         'than the limit for the process', diag=f'{worst // MiB} MiB held, limit 1024 MiB, '
         f'contexts created {created}')
    t.ok(all(0 < c <= 15 for c in created), 'each context costs its 64 MiB: at most 15 fit '
         'beside the first', diag=f'created {created}')
    os.unlink(os.path.join(w.limits, 'claim-race.limits'))


def before_init(t, w):
    uuid = w.devices()[0][1]
    w.write_limits('claim-pre', [(uuid, 100 * MiB, 0)], region=w.region('pre'))
    bare = ctx_probe(w, ['preinit'], preload=False).stdout.strip()
    t.like(bare, f'alloc={NOT_INITIALIZED}', 'gpusim answers CUDA_ERROR_NOT_INITIALIZED before '
           'cuInit (the reference)')
    t.is_eq(ctx_probe(w, ['preinit']).stdout.strip(), bare,
            'under libvgpu every call before cuInit returns what the driver returns')
    kv = parse(ctx_probe(w, ['nvmlonly']).stdout)
    t.is_eq(kv.get('libcuda_loaded'), '0', 'an NVML-only process never loads libcuda')
    t.is_eq((kv.get('nvml_total'), kv.get('nvml2_total')), (str(100 * MiB),) * 2,
            'an NVML-only process sees the slice (limits by UUID, no CUDA)')
    os.unlink(os.path.join(w.limits, 'claim-pre.limits'))


def nvml_ordinals(t, _w):
    """An NVML-only process maps CUDA_DEVICE_MEMORY_LIMIT_<i> to NVML devices through
    CUDA_VISIBLE_DEVICES (by index or UUID), without CUDA."""
    w = World(preset='h200x2')
    try:
        devs = w.devices()
        if len(devs) < 2:
            t.skip('NVML ordinals', 'preset h200x2 gives fewer than 2 devices')
            return
        (_, u0, phys0), (_, u1, _) = devs[0], devs[1]
        for cvd, index, want, what in (
                ('1,0', 1, 2000 * MiB, 'NVML device 1 is CUDA ordinal 0'),
                ('1,0', 0, phys0, 'NVML device 0 is CUDA ordinal 1 (no limit: physical)'),
                (f'{u1}', 1, 2000 * MiB, 'by UUID: NVML device 1 is CUDA ordinal 0'),
                (f'{u1}', 0, phys0, 'by UUID: NVML device 0 is not visible to CUDA')):
            kv = parse(ctx_probe(w, ['nvmlonly', index],
                                 extra={'CUDA_VISIBLE_DEVICES': cvd,
                                        'CUDA_DEVICE_MEMORY_LIMIT_0': '2000m'}).stdout)
            t.is_eq((kv.get('nvml_total'), kv.get('libcuda_loaded')), (str(want), '0'),
                    f'CUDA_VISIBLE_DEVICES={cvd[:12]}, CUDA_DEVICE_MEMORY_LIMIT_0=2000m: {what}')
    finally:
        w.close()


def crowded_views(t, w):
    uuid, phys_total = w.devices()[0][1], w.devices()[0][2]
    w.write_limits('claim-crowd', [(uuid, 4096 * MiB, 0)], region=w.region('crowd'))
    hold_mib = phys_total // MiB - 1360
    h = w.spawn(['hold', hold_mib, 60000], preload=False)  # unconfined, not in the claim
    try:
        t.is_eq(h.stdout.readline().strip(), 'hold=0', f'an unconfined process holds {hold_mib} MiB')
        kv = parse(ctx_probe(w, ['views']).stdout)
        want = str(1360 * MiB)
        t.is_eq((kv.get('cu_total'), kv.get('nvml_total'), kv.get('nvml2_total')),
                (str(4096 * MiB),) * 3, 'crowded device: total is still the slice')
        t.is_eq((kv.get('cu_free'), kv.get('nvml_free'), kv.get('nvml2_free')), (want,) * 3,
                'crowded device: free is what the device really has (1360 MiB), not 4096 MiB, '
                'in cuMemGetInfo and NVML alike')
        t.is_eq((kv.get('nvml_used'), kv.get('nvml2_used')), ('0', '0'),
                'crowded device: used is the container\'s usage')
        t.is_eq(kv.get('allocatable_mib'), '1360', 'and exactly that much can be allocated')
        kv = parse(ctx_probe(w, ['nvmlonly']).stdout)
        t.is_eq((kv.get('nvml_free'), kv.get('nvml2_free')), (want,) * 2,
                'crowded device: an NVML-only process sees the same free')
    finally:
        h.kill()
        h.wait()
    os.unlink(os.path.join(w.limits, 'claim-crowd.limits'))


def pattern_program(t, w, helper):
    """sim_runtime_pattern (the CUDA 13 runtime's public call pattern: entry points through
    cuGetProcAddress_v2, library before any context, the primary retained through the driver's
    internal interface, cuCtxSetCurrent, reset, release) under a 4096 MiB / 30 % slice."""
    if not helper or not os.path.exists(helper):
        skip_unbuilt(t, 'runtime pattern program', 'sim_runtime_pattern not built')
        return
    uuid = w.devices()[0][1]
    w.write_limits('claim-pat', [(uuid, 4096 * MiB, 30)], region=w.region('pat'))
    for ov_mib in (0, 64):
        extra = {'GPUSIM_CONTEXT_OVERHEAD': str(ov_mib * MiB)}
        args = ['--alloc-mib', '4200', '--chunk-mib', '1', '--launches', '0', '--reset',
                '--realloc-mib', '4200']
        # a terminal for stdout: the program's lines come as they are printed (line-buffered)
        master, slave = pty.openpty()
        p = subprocess.Popen([helper] + args + ['--hold-ms', '30000'], env=w.env(extra=extra),
                             stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        kv = {}
        try:
            with os.fdopen(master, 'r', errors='replace') as out:
                for line in out:  # until the program holds its allocations (or ends)
                    kv.update(parse(line))
                    if 'launched' in kv:
                        break
            # gpusim's books, read by an NVML-only process without libvgpu
            phys = parse(ctx_probe(w, ['nvmlonly'], preload=False).stdout).get('nvml_used')
        finally:
            p.kill()  # ends the hold; the reset part is run again without it
            p.wait()
        label = f'runtime pattern, overhead {ov_mib} MiB'
        t.is_eq((kv.get('primary_retain'), kv.get('total'), kv.get('free')),
                ('internal', str(4096 * MiB), str((4096 - ov_mib) * MiB)),
                f'{label}: primary retained out of sight; the view is the slice from the start')
        t.is_eq((kv.get('allocated_mib'), kv.get('first_fail')), (str(4096 - ov_mib), '2'),
                f'{label}: exactly {4096 - ov_mib} x 1 MiB, then CUDA_ERROR_OUT_OF_MEMORY')
        t.is_eq(phys, str(4096 * MiB), f'{label}: gpusim holds exactly 4096 MiB')
        t.is_eq(kv.get('free_after_alloc'), '0', f'{label}: view free 0 at the boundary')
        out = subprocess.run([helper] + args, env=w.env(extra=extra), capture_output=True,
                             text=True, timeout=120).stdout
        kv = parse(out)
        t.is_eq((kv.get('reset'), kv.get('free_after_reset'), kv.get('total')),
                ('0', str((4096 - ov_mib) * MiB), str(4096 * MiB)),
                f'{label}: cudaDeviceReset gives everything back (the new context charged again)')
        t.is_eq((kv.get('reallocated_mib'), kv.get('realloc_fail')), (str(4096 - ov_mib), '2'),
                f'{label}: the same exact boundary after the reset')
        t.is_eq(kv.get('primary_release'), '0', f'{label}: the release at exit')
    os.unlink(os.path.join(w.limits, 'claim-pat.limits'))


def can_unshare():
    return subprocess.run(['unshare', '-Urm', 'true'], capture_output=True).returncode == 0 or \
        (os.geteuid() == 0 and subprocess.run(['unshare', '-m', 'true'],
                                              capture_output=True).returncode == 0)


def in_container(script, env, timeout=120):
    """Run `script` (sh) in a private mount namespace (as root if we are, else a user ns)."""
    cmd = ['unshare', '-m'] if os.geteuid() == 0 else ['unshare', '-Urm']
    return subprocess.run(cmd + ['sh', '-ec', script], env=env, capture_output=True, text=True,
                          timeout=timeout)


def hami_shared_region(t, w):
    if not can_unshare():
        t.skip('HAMi env: one region per container', 'no mount namespace (unshare) available')
        return
    probe = w.probe
    env = w.env(extra={'CUDA_DEVICE_MEMORY_LIMIT': '100m'})
    env.pop('GPUSLICE_LIMITS_DIR', None)
    env.pop('CUDA_DEVICE_MEMORY_SHARED_CACHE', None)
    # The container's own /tmp (the default region lives there), two processes in it: /tmp
    # overlaid by a private tmpfs layer (the test's files stay visible, new ones stay private).
    script = f'''
for m in /mnt /srv /media; do [ -d "$m" ] && break; done
mount -t tmpfs none "$m"
mkdir "$m/up" "$m/work"
mount -t overlay overlay -o lowerdir=/tmp,upperdir="$m/up",workdir="$m/work" /tmp
rm -f /tmp/gpuslice-region
"{probe}" hold 60 60000 > "{w.dir}/hold.out" &
n=0
until grep -q hold= "{w.dir}/hold.out"; do n=$((n+1)); [ $n -lt 600 ] || exit 9; sleep 0.05; done
cat "{w.dir}/hold.out"
"{probe}" boundary 100 {MiB}
ls "$m/up"
kill $! || true
'''
    p = in_container(script, env)
    kv = parse(p.stdout)
    t.is_eq(kv.get('hold'), '0', 'HAMi env, no SHARED_CACHE: the first process holds 60 MiB',)
    t.is_eq(kv.get('allocated'), '40',
            'a second process of the container gets only the other 40 MiB of CUDA_DEVICE_MEMORY_'
            'LIMIT=100m (one region shared by default)')
    t.like(p.stdout, 'gpuslice-region', 'the default region is /tmp/gpuslice-region (created in the '
           'container\'s /tmp)')


def cdi_container(t, w):
    if not can_unshare():
        t.skip('limits dir cannot be redirected', 'no mount namespace (unshare) available')
        return
    uuid = w.devices()[0][1]
    up, work = os.path.join(w.dir, 'etc-up'), os.path.join(w.dir, 'etc-work')
    os.makedirs(os.path.join(up, 'gpuslice', 'limits.d'))
    os.makedirs(work)
    region = w.region('cdi')
    prepare_region(region)  # as the kubelet plugin creates it
    prepare_region(w.region('loose'))
    with open(os.path.join(up, 'gpuslice', 'limits.d', 'claim-cdi.limits'), 'w') as f:
        f.write(f'# gpuslice limits v1\nversion 1\nclaim claim-cdi\nregion {region}\n'
                f'device {uuid} memory={256 * MiB} cores=0\n')
    loose = os.path.join(w.dir, 'loose.d')
    os.makedirs(loose)
    with open(os.path.join(loose, 'claim-cdi.limits'), 'w') as f:
        f.write(f'# gpuslice limits v1\nversion 1\nclaim claim-cdi\nregion {w.region("loose")}\n'
                f'device {uuid} memory={4096 * MiB} cores=0\n')
    base = w.env(preload=True)
    preload = base.pop('LD_PRELOAD')  # the container loads libvgpu from /etc/ld.so.preload
    with open(os.path.join(w.dir, 'ld.so.preload'), 'w') as f:
        f.write('\n'.join(preload.split(':')) + '\n')
    for k in [k for k in base if k.startswith('CUDA_DEVICE_')]:
        del base[k]
    for name, limits_dir in (('unset', None), ('/nonexistent', '/nonexistent'),
                             ('a looser directory', loose)):
        env = dict(base)
        env.pop('GPUSLICE_LIMITS_DIR', None)
        if limits_dir:
            env['GPUSLICE_LIMITS_DIR'] = limits_dir
        script = f'''
mount -t overlay overlay -o lowerdir=/etc,upperdir={up},workdir={work} /etc
mount --bind /etc/gpuslice/limits.d /etc/gpuslice/limits.d
mount -o remount,bind,ro /etc/gpuslice/limits.d
cp "{w.dir}/ld.so.preload" /etc/ld.so.preload
exec "{w.probe}" boundary 1024 {MiB}
'''
        p = in_container(script, env)
        kv = parse(p.stdout)
        t.is_eq(kv.get('allocated'), '256',
                f'CDI-style container, GPUSLICE_LIMITS_DIR {name}, HAMi env unset: the mounted '
                '256 MiB limit holds', )
        if kv.get('allocated') != '256':
            t.diag(p.stderr[-2000:])
        shutil.rmtree(up)
        shutil.rmtree(work)
        os.makedirs(os.path.join(up, 'gpuslice', 'limits.d'))
        os.makedirs(work)
        with open(os.path.join(up, 'gpuslice', 'limits.d', 'claim-cdi.limits'), 'w') as f:
            f.write(f'# gpuslice limits v1\nversion 1\nclaim claim-cdi\nregion {region}\n'
                    f'device {uuid} memory={256 * MiB} cores=0\n')


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'libvgpu context tests', 'gpusim libcuda.so.1 not built')
        return t.done()
    w = World()
    helper = sys.argv[1] if len(sys.argv) > 1 else None
    sections = [('lifetimes', lifetimes), ('runtime_pattern', runtime_pattern),
                ('pattern_program', lambda t, w: pattern_program(t, w, helper)),
                ('overhead_race', overhead_race), ('before_init', before_init),
                ('nvml_ordinals', nvml_ordinals), ('crowded_views', crowded_views), ('hami_shared_region', hami_shared_region),
                ('cdi_container', cdi_container)]
    try:
        for name, fn in sections:
            t.run(name, fn, t, w)
            for f in os.listdir(w.limits):  # a section that failed half-way leaves no grant
                os.unlink(os.path.join(w.limits, f))
    finally:
        w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
