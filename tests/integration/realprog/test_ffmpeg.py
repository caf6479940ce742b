#!/usr/bin/env python3
"""FFmpeg (Debian's ffmpeg, unchanged) on gpusim and under libvgpu.

FFmpeg's CUDA device (`-init_hw_device cuda`) dlopens libcuda.so.1 and resolves its driver entry
points at start-up (ffnvcodec's cuda_load_functions); hwupload_cuda allocates a pool of frames
(cuMemAlloc) and copies with cuMemcpy2D; hwdownload copies back; scale_cuda loads its PTX module
(cuModuleLoadData) and launches its kernels on texture objects.

  1. upload + download on gpusim: completes, output byte-identical to the CPU-only pipeline
     (device memory holds data);
  2. the same under libvgpu with a 4 GiB slice: identical output;
  3. scale_cuda 1280x720 -> 640x360 on gpusim and under libvgpu: completes, frames of the new
     size (gpusim does not run kernels: the pixels are not checked);
  4. a 1 MiB slice, smaller than one 1280x720 NV12 frame (1.3 MiB): FFmpeg stops with
     CUDA_ERROR_OUT_OF_MEMORY / "Cannot allocate memory", exit status 1 (no signal), and
     gpusim's physical usage never passed 1 MiB."""
import hashlib
import shutil
import subprocess
import sys

from gstest import Tap
from realprog import MiB, Machine, sanitized_build

SRC = ['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25', '-frames:v', '12']


def ffmpeg(env, vf, out='-'):
    cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
           '-init_hw_device', 'cuda=cu:0', '-filter_hw_device', 'cu', *SRC, '-vf', vf,
           '-f', 'rawvideo', out]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=240)
    return r.returncode, r.stdout, r.stderr.decode(errors='replace')


def main():
    t = Tap()
    why = sanitized_build()
    if why:
        t.skip('FFmpeg on gpusim', why)
        return t.done()
    if not shutil.which('ffmpeg'):
        t.skip('FFmpeg on gpusim', 'ffmpeg is not installed (apt-get install ffmpeg)')
        return t.done()
    m = Machine('t4')
    try:
        cpu = subprocess.run(['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', *SRC,
                              '-vf', 'format=nv12', '-f', 'rawvideo', '-'],
                             capture_output=True, timeout=240).stdout
        t.is_eq(len(cpu), 12 * 1280 * 720 * 3 // 2, 'CPU reference: 12 NV12 frames')
        updown = 'format=nv12,hwupload_cuda,hwdownload,format=nv12'
        for name, limit in (('gpusim', None), ('libvgpu 4 GiB slice', '4g')):
            env = m.env(limit)
            rc, out, err = ffmpeg(env, updown)
            t.is_eq(rc, 0, f'{name}: hwupload_cuda + hwdownload completes', ) or t.diag(err[-1500:])
            t.is_eq(hashlib.sha256(out).hexdigest(), hashlib.sha256(cpu).hexdigest(),
                    f'{name}: frames come back byte-identical')
            used, peak = m.phys(env)
            t.ok(peak > 0 and used == 0, f'{name}: frames were on the GPU, all freed at exit',
                 diag=f'used={used} peak={peak}')

        scale = 'format=nv12,hwupload_cuda,scale_cuda=640:360,hwdownload,format=nv12'
        for name, limit in (('gpusim', None), ('libvgpu 4 GiB slice', '4g')):
            rc, out, err = ffmpeg(m.env(limit), scale)
            t.ok(rc == 0 and len(out) == 12 * 640 * 360 * 3 // 2,
                 f'{name}: scale_cuda (PTX module, kernels) completes with 640x360 frames',
                 diag=f'rc={rc} bytes={len(out)}\n{err[-1500:]}')

        env = m.env('1m')
        rc, out, err = ffmpeg(env, updown)
        t.is_eq(rc, 1, '1 MiB slice (< one frame): exit status 1, no signal')
        t.ok('CUDA_ERROR_OUT_OF_MEMORY' in err and 'Cannot allocate memory' in err,
             '1 MiB slice: FFmpeg reports CUDA_ERROR_OUT_OF_MEMORY', diag=err[-1500:])
        t.is_eq(len(out), 0, '1 MiB slice: no frame produced')
        used, peak = m.phys(env)
        t.ok(0 <= peak <= 1 * MiB, '1 MiB slice: gpusim never held more than 1 MiB',
             diag=f'peak={peak}')
    finally:
        m.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
