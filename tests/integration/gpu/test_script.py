#!/usr/bin/env python3
"""tests/gpu (the real-GPU check, never run here): run.sh parses and is shellcheck-clean, its CUDA
runtime and cuBLAS programs compile and link with nvcc. Each part is skipped, with the reason, when
its tool is not installed; nothing here needs a GPU."""
import os
import shutil
import subprocess
import sys
import tempfile

from gstest import Tap

ROOT = os.environ.get('GS_SOURCE_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(__file__), '..', '..', '..'))
GPU = os.path.join(ROOT, 'tests', 'gpu')
SCRIPT = os.path.join(GPU, 'run.sh')


def run(cmd, timeout=240):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout


def nvcc_path():
    return os.environ.get('NVCC') or shutil.which('nvcc') or next(
        (p for p in ['/usr/local/cuda/bin/nvcc'] if os.access(p, os.X_OK)), None)


def main():
    t = Tap()
    rc, out = run(['bash', '-n', SCRIPT])
    t.ok(rc == 0, 'run.sh parses (bash -n)', diag=out)

    sc = shutil.which('shellcheck')
    if sc:
        rc, out = run([sc, SCRIPT])
        t.ok(rc == 0, 'run.sh is shellcheck-clean', diag=out)
    else:
        t.skip('run.sh is shellcheck-clean', 'shellcheck is not installed')

    nvcc = nvcc_path()
    progs = [('gs_gpu_runtime.cu', []), ('gs_gpu_gemm.cu', ['-lcublas'])]
    if not nvcc:
        for src, _ in progs:
            t.skip(f'{src} compiles and links', 'nvcc is not installed (PATH, NVCC, /usr/local/cuda)')
        return t.done()
    with tempfile.TemporaryDirectory(prefix='gs-gpu-cu-') as tmp:
        for src, libs in progs:
            path = os.path.join(GPU, src)
            exe = os.path.join(tmp, src[:-3])
            # One architecture (run.sh builds for the machine's own): the check is that the
            # source is valid CUDA and that the libraries it needs resolve.
            rc, out = run([nvcc, '-O2', '-arch=sm_90', '-Xcompiler', '-Wall', '-o', exe, path]
                          + libs)
            if rc != 0 and libs and 'cannot find -l' in out:
                rc, out = run([nvcc, '-O2', '-arch=sm_90', '-c', '-o', exe + '.o', path])
                t.ok(rc == 0, f'{src} compiles', diag=out)
                t.skip(f'{src} links', f'{" ".join(libs)} not found by nvcc')
                continue
            t.ok(rc == 0 and os.access(exe, os.X_OK), f'{src} compiles and links', diag=out)
            t.ok('warning' not in out.lower(), f'{src} compiles without warnings', diag=out)
            # The usage line on bad arguments needs no GPU: the program really is the one run.sh drives.
            rc, out = run([exe])
            t.ok(rc == 2 and 'usage: ' in out, f'{src[:-3]} without arguments prints its usage, exits 2',
                 diag=f'rc={rc} {out}')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
