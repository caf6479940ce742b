"""Helpers of the real-program tests: a private gpusim machine per run (own GPUSIM_STATE), the
environment with or without libvgpu, and gpusim's physical figures read from its state file
(vgpu_escape phys: no hooked API in the way)."""
import os
import shutil
import subprocess
import tempfile

import gstest

MiB = 1 << 20
GiB = 1 << 30


def sanitized_build():
    """Why the real programs are skipped in the ASan+UBSan build, or None. They are other people's
    uninstrumented programs (FFmpeg, numba's LLVM): with the sanitizer runtime preloaded into
    them the run would test the sanitizer's interplay with them, not gpusim or libvgpu; the
    instrumented libraries are exercised by the sim and vgpu suites."""
    if 'address' in os.environ.get('GS_SANITIZE', ''):
        return 'real programs run against the plain build only (make test runs that one too)'
    return None


class Machine:
    def __init__(self, preset='t4'):
        self.dir = tempfile.mkdtemp(prefix='gs-realprog-')
        self.preset = preset
        self.paths = gstest.env_paths()
        self.escape = os.path.join(self.paths['GS_BUILD_ROOT'], 'tests', 'integration', 'vgpu',
                                   'vgpu_escape')
        self.n = 0

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, limit=None, state=None):
        """gpusim first on the library path; with `limit` ("4g", "1m"), libvgpu preloaded with
        HAMi's CUDA_DEVICE_MEMORY_LIMIT_0. Each call gets a fresh state file unless given."""
        b = dict(os.environ)
        for k in list(b):
            if k.startswith('CUDA_DEVICE_') or k in ('CUDA_VISIBLE_DEVICES', 'GPUSIM_CONFIG',
                                                      'LD_PRELOAD'):
                del b[k]
        self.n += 1
        b['GPUSIM_STATE'] = state or os.path.join(self.dir, f'gpusim-{self.n}.state')
        b['GPUSIM_PRESET'] = self.preset
        b['GPUSLICE_LIMITS_DIR'] = os.path.join(self.dir, 'no-limits.d')
        b['CUDA_DEVICE_MEMORY_SHARED_CACHE'] = os.path.join(self.dir, f'region-{self.n}')
        if limit:
            b['CUDA_DEVICE_MEMORY_LIMIT_0'] = limit
        return gstest.preload_env(base=b, preload=self.paths['GS_VGPU_LIB'] if limit else None)

    def phys(self, env):
        """(used, peak) bytes of GPU 0 as gpusim's own books say."""
        e = {k: v for k, v in env.items() if k != 'LD_PRELOAD'}
        out = subprocess.run([self.escape, 'phys', '0'], env=e, capture_output=True, text=True,
                             timeout=60).stdout
        kv = dict(x.split('=', 1) for x in out.split() if '=' in x)
        return int(kv.get('phys_used', -1)), int(kv.get('phys_peak', -1))
