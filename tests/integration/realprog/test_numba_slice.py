#!/usr/bin/env python3
"""numba (Debian's python3-numba, unchanged) in a 4 GiB slice of a simulated T4, judged from
gpusim's own books: get_memory_info() reports 4 GiB total; 1 GiB device_arrays succeed exactly
four times, the fifth fails with CUDA_ERROR_OUT_OF_MEMORY; gpusim held exactly 4 GiB at most.
Without libvgpu the same program gets the whole 15 GiB device (fifteen arrays, not sixteen).

Modes: no argument = the test; 'child' = the numba program (prints key=value lines)."""
import os
import subprocess
import sys

from gstest import Tap
from realprog import GiB, Machine, sanitized_build

CHILD = r'''
import numpy as np
from numba import cuda
from numba.cuda.cudadrv.driver import CudaAPIError
ctx = cuda.current_context()
free, total = ctx.get_memory_info()
print(f"total={total}", flush=True)
held, err = [], None
for _ in range(32):
    try:
        held.append(cuda.device_array(1 << 30, dtype=np.uint8))
    except CudaAPIError as e:
        err = e
        break
print(f"arrays={len(held)}", flush=True)
print(f"error_code={err.code if err else 0}", flush=True)
print(f"error={err}", flush=True)
held.clear()
ctx.deallocations.clear()  # numba defers frees; flush them
print(f"free_after={ctx.get_memory_info()[0]}", flush=True)
a = cuda.to_device(np.arange(1024, dtype=np.int32))
print(f"roundtrip={int((a.copy_to_host() == np.arange(1024)).all())}", flush=True)
'''


def run(m, env):
    r = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True,
                       timeout=240, cwd=m.dir)
    kv = dict(ln.split('=', 1) for ln in r.stdout.splitlines() if '=' in ln)
    return r, kv


def main():
    t = Tap()
    why = sanitized_build()
    if why:
        t.skip('numba in a slice', why)
        return t.done()
    probe = subprocess.run([sys.executable, '-c', 'import numba.cuda'], capture_output=True)
    if probe.returncode != 0:
        t.skip('numba in a slice', f'{sys.executable} cannot import numba '
               '(apt-get install python3-numba)')
        return t.done()
    m = Machine('t4')
    try:
        env = m.env('4g')
        env['CUDA_HOME'] = m.dir  # no toolkit: the outcome does not depend on the machine's
        r, kv = run(m, env)
        t.is_eq(r.returncode, 0, 'slice: numba program exits 0') or t.diag(r.stderr[-2000:])
        t.is_eq(kv.get('total'), str(4 * GiB), 'slice: get_memory_info() total = 4 GiB')
        t.is_eq(kv.get('arrays'), '4', 'slice: exactly four 1 GiB device_arrays')
        t.is_eq(kv.get('error_code'), '2', 'slice: the fifth fails with CUDA_ERROR_OUT_OF_MEMORY')
        t.ok('CUDA_ERROR_OUT_OF_MEMORY' in kv.get('error', ''), 'slice: numba names the error',
             diag=kv.get('error'))
        t.is_eq(kv.get('free_after'), str(4 * GiB), 'slice: all 4 GiB free again after the frees')
        t.is_eq(kv.get('roundtrip'), '1', 'slice: data round trip after the OOM')
        used, peak = m.phys(env)
        t.is_eq((used, peak), (0, 4 * GiB), 'slice: gpusim held exactly 4 GiB at most, 0 at exit')

        env = m.env(None)
        env['CUDA_HOME'] = m.dir
        r, kv = run(m, env)
        t.is_eq((r.returncode, kv.get('total'), kv.get('arrays'), kv.get('error_code')),
                (0, str(15 * GiB), '15', '2'),
                'no slice: the whole 15 GiB T4, fifteen 1 GiB arrays, then OOM')
    finally:
        m.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
