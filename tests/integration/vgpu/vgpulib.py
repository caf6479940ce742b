"""Helpers for the libvgpu integration tests: a private gpusim world per test (own GPUSIM_STATE,
limits dir and region files in a temp dir), the probe program, key=value output parsing."""
import os
import shutil
import subprocess
import tempfile

import gstest

MiB = 1 << 20


class World:
    """A temp dir with its own gpusim state file, limits dir and regions."""

    def __init__(self, preset='t4'):
        self.dir = tempfile.mkdtemp(prefix='gs-vgpu-')
        self.limits = os.path.join(self.dir, 'limits.d')
        os.mkdir(self.limits)
        self.preset = preset
        paths = gstest.env_paths()
        self.vgpu = paths['GS_VGPU_LIB']
        self.probe = os.path.join(paths['GS_BUILD_ROOT'], 'tests', 'integration', 'vgpu',
                                  'vgpu_probe')
        self.smi = paths['GS_GPUSIM_SMI']

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, preload=True, extra=None, base=None):
        b = dict(os.environ if base is None else base)
        for k in list(b):
            if k.startswith('CUDA_DEVICE_') or k in ('GPU_CORE_UTILIZATION_POLICY',
                                                      'CUDA_VISIBLE_DEVICES'):
                del b[k]
        b['GPUSIM_STATE'] = os.path.join(self.dir, 'gpusim.state')
        b['GPUSIM_PRESET'] = self.preset
        b['GPUSLICE_LIMITS_DIR'] = self.limits
        # The HAMi-style environment's default region is a fixed path shared by every process
        # of the machine (of a container, in production): tests stay in their own temp dir
        # unless they remove this to test the default itself.
        b['CUDA_DEVICE_MEMORY_SHARED_CACHE'] = os.path.join(self.dir, 'hami-region')
        if extra:
            b.update(extra)
        return gstest.preload_env(base=b, preload=self.vgpu if preload else None)

    def region(self, name='region'):
        return os.path.join(self.dir, name)

    def write_limits(self, claim, devices, region=None):
        lines = ['# gpuslice limits v1', 'version 1', f'claim {claim}']
        if region:
            prepare_region(region)
            lines.append(f'region {region}')
        for uuid, mem, cores in devices:
            lines.append(f'device {uuid} memory={mem} cores={cores}')
        with open(os.path.join(self.limits, f'{claim}.limits'), 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def run(self, args, preload=True, extra=None, timeout=60, check=True):
        p = subprocess.run([self.probe] + [str(a) for a in args], env=self.env(preload, extra),
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError(f'probe {args} exit {p.returncode}: {p.stderr.strip()}')
        return p

    def spawn(self, args, preload=True, extra=None):
        return subprocess.Popen([self.probe] + [str(a) for a in args],
                                env=self.env(preload, extra), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def devices(self):
        """[(ordinal, uuid, physical_total)] as gpusim reports them without preload."""
        out = self.run(['views'], preload=False).stdout
        res = []
        for line in out.splitlines():
            kv = parse(line)
            if 'dev' in kv:
                res.append((int(kv['dev']), kv['uuid'], int(kv['cu_total'])))
        return res


from gstest import REGION_SIZE, prepare_region  # noqa: E402,F401 (re-exported)


def parse(text):
    """key=value pairs of all lines merged (later lines win)."""
    kv = {}
    for line in text.splitlines():
        for tok in line.split():
            if '=' in tok:
                k, v = tok.split('=', 1)
                kv[k] = v
    return kv


def parse_lines(text):
    return [parse(line) for line in text.splitlines() if '=' in line]


def have_sim():
    d = gstest.env_paths()['GS_SIM_DIR']
    return os.path.exists(os.path.join(d, 'libcuda.so.1'))
