#!/usr/bin/env python3
"""Context limits take device memory (issue 34 c): raising the malloc heap, the printf FIFO or the
stack size (for every thread the device holds at once) makes the driver reserve memory for the
context. Judged from gpusim's own books (its state file: physical usage and its high-water mark)
under a 1 GiB limit:
  - without libvgpu each limit raised by 2 GiB is granted and gpusim holds 2 GiB (the attack);
  - with libvgpu each is refused with CUDA_ERROR_OUT_OF_MEMORY and gpusim never holds more
    than the limit; a 1 GiB heap is granted but leaves no room for 600 MiB beside it, lowering
    it gives the room back, and a context's raised heap comes back with the context."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, skip_unbuilt  # noqa: E402
from test_escapes import OOM, Escape  # noqa: E402
from vgpulib import MiB, have_sim, parse, parse_lines  # noqa: E402


def peaks(text):
    return [int(kv['phys_peak']) for kv in parse_lines(text) if 'phys_peak' in kv]


def limits(t):
    w = Escape()
    try:
        p = w.run(['limits', 2048], preload=False)
        kv = parse(p.stdout)
        t.ok((kv.get('heap'), kv.get('fifo'), kv.get('stack')) == ('0', '0', '0') and
             max(peaks(p.stdout)) >= 2048 * MiB,
             'without libvgpu, heap/FIFO/stack raised by 2 GiB are granted: gpusim holds 2 GiB',
             diag=p.stdout)
    finally:
        w.close()
    w = Escape()
    try:
        p = w.run(['limits', 2048], check=False)
        kv = parse(p.stdout)
        t.ok(p.returncode == 0, 'the probe ran', diag=p.stderr)
        for name in ('heap', 'fifo', 'stack'):
            t.is_eq(kv.get(name), OOM, f'{name} raised by 2 GiB past a 1 GiB slice: OUT_OF_MEMORY')
        t.is_eq((kv.get('half'), kv.get('alloc_beside')), ('0', OOM),
                'a 1 GiB heap is granted and leaves no room for 600 MiB beside it')
        t.is_eq((kv.get('lower'), kv.get('alloc_after')), ('0', '0'),
                'lowering the heap gives the room back')
        t.is_eq((kv.get('ctx'), kv.get('ctx_heap'), kv.get('ctx_destroy'),
                 kv.get('alloc_after_ctx')), ('0', '0', '0', '0'),
                'a context\'s raised heap comes back with the context')
        pk = peaks(p.stdout)
        t.ok(pk and max(pk) <= 1024 * MiB, 'gpusim never held more than the limit',
             diag=f'peak {max(pk or [0]) / MiB:.0f} MiB')
    finally:
        w.close()


def main():
    t = Tap()
    if not have_sim():
        skip_unbuilt(t, 'libvgpu context limits', 'gpusim libcuda.so.1 not built')
        return t.done()
    t.run('limits', limits, t)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
