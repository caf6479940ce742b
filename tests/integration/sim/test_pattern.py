#!/usr/bin/env python3
"""The CUDA runtime's call pattern on gpusim (sim_runtime_pattern): only the three
cuGetProcAddress/cuGetExportTable names through dlsym, an empty first request, the library
loaded before any context, the primary context retained out of sight and made current with
cuCtxSetCurrent, CUkernel launches (legacy and per-thread stream), cudaDeviceReset giving every
byte back (gpusim's own cuMemGetInfo), the exact physical boundary, a CUDA 13.0 driver."""
import os
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths, preload_env

MiB = 1 << 20
T4 = 16106127360


def run(helper, args, extra=None):
    with tempfile.TemporaryDirectory(prefix='gs-pattern-') as d:
        env = preload_env()
        env['GPUSIM_STATE'] = os.path.join(d, 'state')
        env['GPUSIM_PRESET'] = 't4'
        for k in ('GPUSIM_CONFIG', 'CUDA_VISIBLE_DEVICES', 'GPUSIM_CONTEXT_OVERHEAD',
                  'GPUSIM_CUDA_VERSION', 'CUDA_MODULE_LOADING'):
            env.pop(k, None)
        env.update(extra or {})
        p = subprocess.run([helper] + [str(a) for a in args], env=env, capture_output=True,
                           text=True, timeout=60)
    kv = {}
    for line in p.stdout.splitlines():
        for tok in line.split():
            if '=' in tok:
                k, v = tok.split('=', 1)
                kv[k] = v
    return p.returncode, kv, p.stderr


def main():
    t = Tap()
    helper = sys.argv[1]
    rc, kv, err = run(helper, ['--alloc-mib', 64, '--launches', 10, '--kernel-us', 1000,
                               '--reset', '--realloc-mib', 64])
    t.is_eq(rc, 0, 'the pattern runs to the end' + (f' ({err.strip()})' if rc else ''))
    t.is_eq(kv.get('first_request'), '500', 'the empty first request: CUDA_ERROR_NOT_FOUND')
    t.is_eq(kv.get('first_null'), '1', 'and a NULL pointer the runtime tolerates')
    t.is_eq(kv.get('export_table'), '500', 'no private export table (cuGetExportTable)')
    t.is_eq(kv.get('context_before_library'), '0', 'no context exists at cuLibraryLoadData')
    t.is_eq(kv.get('library_load'), '0', 'cuLibraryLoadData without a context succeeds')
    t.is_eq(kv.get('primary_retain'), 'internal',
            'the primary context came from the driver-internal retain (no public call)')
    t.is_eq(kv.get('attributes_ok'), '143', 'device attributes 1..143 all answer')
    t.is_eq(kv.get('sms'), '40', 'the T4 has 40 SMs')
    t.is_eq(kv.get('loading_mode'), '2', 'lazy module loading by default')
    t.is_eq(kv.get('total'), str(T4), 'cuMemGetInfo total: the T4')
    t.ok(int(kv.get('occupancy_blocks', '0')) > 0, 'occupancy of the CUkernel as CUfunction')
    t.is_eq(kv.get('stack_limit'), '1024', 'cuCtxGetLimit(STACK_SIZE)')
    t.is_eq((kv.get('allocated_mib'), kv.get('first_fail')), ('64', '0'), 'cudaMalloc 64 MiB')
    t.is_eq(kv.get('free_after_alloc'), str(T4 - 64 * MiB), 'gpusim holds the 64 MiB')
    t.is_eq((kv.get('memcpy_htod'), kv.get('memcpy_dtoh')), ('0', '0'), 'cudaMemcpy both ways')
    t.is_eq((kv.get('launched'), kv.get('launch_fail'), kv.get('sync')), ('10', '0', '0'),
            '10 launches of the CUkernel as CUfunction, synchronised')
    t.is_eq(kv.get('reset'), '0', 'cuDevicePrimaryCtxReset_v2')
    t.is_eq(kv.get('active_after_reset'), '0', 'the primary context is inactive after reset')
    t.is_eq(kv.get('free_after_reset'), str(T4), 'the reset gave every byte back (physically)')
    t.is_eq(kv.get('reallocated_mib'), '64', 'cudaMalloc after the reset')
    t.is_eq((kv.get('library_unload'), kv.get('primary_release')), ('0', '0'),
            'cuLibraryUnload and cuDevicePrimaryCtxRelease_v2 at exit')
    t.ok(int(kv.get('getproc_requests', '0')) > 25, 'every entry point came through '
         'cuGetProcAddress_v2', diag=kv.get('getproc_requests'))

    # The exact physical boundary: 15 GiB of the T4 in 1 GiB chunks, the 16th refused.
    rc, kv, _ = run(helper, ['--alloc-mib', 16 * 1024, '--chunk-mib', 1024, '--launches', 0])
    t.is_eq((rc, kv.get('allocated_mib'), kv.get('first_fail')), (0, '15360', '2'),
            '15 x 1 GiB fit, the 16th is CUDA_ERROR_OUT_OF_MEMORY')
    t.is_eq(kv.get('free_after_alloc'), '0', 'nothing left')

    # An nvcc fatbinary, the mangled kernel, the per-thread default stream.
    image = os.path.join(env_paths()['GS_SOURCE_ROOT'], 'tests', 'integration', 'sim', 'images',
                         'kernels.fatbin')
    rc, kv, err = run(helper, ['--image', image, '--kernel', '_Z13sim_busy_2000Pfi', '--ptsz',
                               '--launches', 5, '--alloc-mib', 1])
    t.is_eq((rc, kv.get('library_load'), kv.get('launched'), kv.get('sync')), (0, '0', '5', '0'),
            'fatbin library, mangled CUkernel, cuLaunchKernel_ptsz' + (f' {err}' if rc else ''))
    rc, kv, _ = run(helper, ['--image', image, '--kernel', 'no_such_kernel'])
    t.is_eq((rc != 0, kv.get('error'), kv.get('code')), (True, 'cuLibraryGetKernel', '500'),
            'a kernel the image does not have: CUDA_ERROR_NOT_FOUND')

    # A CUDA 13.0 driver (presets stay 12.8 unless configured).
    rc, kv, _ = run(helper, ['--version', 13000, '--launches', 1, '--alloc-mib', 1],
                    {'GPUSIM_CUDA_VERSION': '13.0'})
    t.is_eq((rc, kv.get('driver_version')), (0, '13000'), 'GPUSIM_CUDA_VERSION=13.0: 13000')
    rc, kv, _ = run(helper, ['--launches', 0, '--alloc-mib', 1],
                    {'CUDA_MODULE_LOADING': 'EAGER'})
    t.is_eq(kv.get('loading_mode'), '1', 'CUDA_MODULE_LOADING=EAGER')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
