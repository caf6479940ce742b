#!/usr/bin/python3
"""--driver-root (deploy/overlays/gpu-operator): with the NVIDIA libraries only under a driver
root (the GPU Operator's /run/nvidia/driver), the kubelet plugin finds libnvidia-ml.so.1 there and
publishes the GPU; without the flag the same environment has no NVML (so the test cannot pass by
accident); a bad root is refused with a message naming it."""
import os
import sys
import tempfile

from gstest import Tap, skip_unbuilt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'plugin'))
import pluginlib as pl  # noqa: E402


class NoNvmlEnv(pl.PluginEnv):
    """The plugin's environment without gpusim on the library path."""

    def env(self):
        e = super().env()
        sim = os.path.realpath(self.paths['GS_SIM_DIR'])
        keep = [d for d in e.get('LD_LIBRARY_PATH', '').split(':')
                if d and os.path.realpath(d) != sim]
        e['LD_LIBRARY_PATH'] = ':'.join(keep)
        return e


def wait_exit(env, timeout=20):
    try:
        return env.proc.wait(timeout=timeout)
    except Exception:  # noqa: BLE001 - still running is an answer too
        return None


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'driver root', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    sim_nvml = os.path.join(pl.env_paths()['GS_SIM_DIR'], 'libnvidia-ml.so.1')
    with tempfile.TemporaryDirectory() as root:
        libdir = os.path.join(root, 'usr', 'lib64')
        os.makedirs(libdir)
        os.symlink(sim_nvml, os.path.join(libdir, 'libnvidia-ml.so.1'))

        with NoNvmlEnv(t) as env:
            env.start(wait=False)
            rc = wait_exit(env)
            t.ok(rc not in (None, 0) and 'libnvidia-ml.so.1' in env.log(),
                 'without --driver-root this environment has no NVML: discovery fails',
                 diag=env.log()[-500:])

        with NoNvmlEnv(t, extra_args=['--driver-root', root]) as env:
            env.start()
            slices = env.wait_slices(lambda s: len(s) == 1)
            devs = [d['name'] for s in slices for d in s['spec']['devices']]
            t.is_eq(devs, ['hami-gpu-0'],
                    '--driver-root: libnvidia-ml.so.1 found under <root>/usr/lib64, GPU published',
                    )
            if devs != ['hami-gpu-0']:
                t.diag(env.log()[-800:])

        for bad, why in (('relative/dir', 'is not an absolute path'),
                         (os.path.join(root, 'absent'), 'No such file or directory')):
            with NoNvmlEnv(t, extra_args=['--driver-root', bad]) as env:
                env.start(wait=False)
                rc = wait_exit(env)
                log = env.log()
                t.ok(rc not in (None, 0) and bad in log and why in log,
                     f'--driver-root {bad}: refused ("{why}")', diag=log[-500:])
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
