#!/usr/bin/env python3
"""The pre-3.2/4.0 entry points a program still reaches (issue 31 item 5): cuda.h `#define`s
cuCtxCreate to cuCtxCreate_v4, cuCtxDestroy/cuCtxPushCurrent/cuCtxPopCurrent to _v2 and
cuArrayCreate/cuArray3DCreate to _v2, but the driver still exports the old names, found by a
program built against old headers, by dlsym() or by cuGetProcAddress() with an old version.
Judged from gpusim's own books (its state file: physical usage and its high-water mark):
  - 40 contexts through the old cuCtxCreate (dlsym and cuGetProcAddress(3000)) under a 1 GiB
    limit: gpusim never holds more than the limit, the first context past it is refused, the old
    cuCtxDestroy gives the charge back (a second round admits as many), the old push/pop work;
  - the old cuArrayCreate / cuArray3DCreate under a 64 MiB limit.
Each attack is first run without libvgpu to show that gpusim really lets it past the limit."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from test_escapes import OOM, Escape  # noqa: E402
from vgpulib import MiB, have_sim, parse, parse_lines  # noqa: E402

CONTEXTS = 40
# what a context costs on gpusim here: 40 of them are the red team's 13,024 MiB (issue 31)
OVERHEAD = {'GPUSIM_CONTEXT_OVERHEAD': str(320 * MiB)}


def peaks(text):
    return [int(kv['phys_peak']) for kv in parse_lines(text) if 'phys_peak' in kv]


def contexts(t):
    w = Escape()
    try:
        p = w.run(['ctxold', 'dlsym', CONTEXTS], preload=False, extra=OVERHEAD)
        kv = parse(p.stdout)
        t.ok(kv.get('first_ok') == str(CONTEXTS) and max(peaks(p.stdout)) > 1024 * MiB,
             f'without libvgpu, {CONTEXTS} contexts through the old cuCtxCreate pass 1 GiB on gpusim',
             diag=p.stdout)
    finally:
        w.close()
    for how in ('dlsym', 'proc'):
        w = Escape()
        try:
            p = w.run(['ctxold', how, CONTEXTS], check=False, extra=OVERHEAD)
            kv = parse(p.stdout)
            t.ok(p.returncode == 0, f'{how}: the probe ran', diag=p.stderr)
            ok = int(kv.get('first_ok', -1))
            t.ok(0 < ok < CONTEXTS and kv.get('first_first_fail') == OOM,
                 f'{how}: old cuCtxCreate admits contexts up to the limit, then OUT_OF_MEMORY',
                 diag=kv)
            pk = peaks(p.stdout)
            t.ok(pk and max(pk) <= 1024 * MiB,
                 f'{how}: gpusim never held more than 1 GiB ({CONTEXTS} contexts asked)',
                 diag=f'peak {max(pk or [0]) / MiB:.0f} MiB')
            t.is_eq(kv.get('again_ok'), str(ok),
                    f'{how}: old cuCtxDestroy gives the charge back (a second round admits {ok})')
            t.is_eq((kv.get('first_stack_errors'), kv.get('again_stack_errors'),
                     kv.get('first_destroy_errors'), kv.get('again_destroy_errors')),
                    ('0', '0', '0', '0'), f'{how}: old push/pop/destroy answer as the driver does')
            t.is_eq(kv.get('gl'), '219', f'{how}: cuGLCtxCreate_v2 (hooked) answers the headless '
                    'driver\'s CUDA_ERROR_INVALID_GRAPHICS_CONTEXT')
            t.is_eq(kv.get('phys_used'), '0', f'{how}: nothing left charged on gpusim at the end')
        finally:
            w.close()


def arrays(t):
    w = Escape(limit_mib=64)
    try:
        p = w.run(['arrayold', 1], preload=False, check=False)
        if p.returncode == 3:
            t.skip('old array entry points', p.stdout.strip() + ' in gpusim')
            return
        kv = parse(p.stdout)
        t.ok(int(kv.get('ok', 0)) > 64 and max(peaks(p.stdout)) > 64 * MiB,
             'without libvgpu, old cuArrayCreate/cuArray3DCreate pass 64 MiB on gpusim', diag=kv)
    finally:
        w.close()
    w = Escape(limit_mib=64)
    try:
        p = w.run(['arrayold', 1], check=False)
        kv = parse(p.stdout)
        t.is_eq((kv.get('ok'), kv.get('first_fail')), ('64', OOM),
                'old cuArrayCreate/cuArray3DCreate: 64 x 1 MiB admitted, the next refused')
        pk = peaks(p.stdout)
        t.ok(pk and max(pk) <= 64 * MiB, 'old arrays: gpusim never held more than the limit',
             diag=pk)
    finally:
        w.close()


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'libvgpu old entry points', 'gpusim libcuda.so.1 not built')
        return t.done()
    t.run('contexts', contexts, t)
    t.run('arrays', arrays, t)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
