#!/usr/bin/env python3
"""gpuslice-monitor's GPU health families on gpusim t4x2 (the one watcher of src/gpu):
gpuslice_gpu_healthy 1 -> 0 after a fatal XID on GPU 1 and back to 1 after the operator's clear,
gpuslice_gpu_last_xid follows the XIDs (a non-fatal one leaves the GPU healthy); a lost GPU reads
0 until `recover`. HAMi exports no health family, so the names are ours."""
import os
import shutil
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths
from monlib import Monitor, promtool_problems, sim_env, value, wait_until

P = env_paths()


def main():
    t = Tap()
    if not os.path.exists(os.path.join(P['GS_SIM_DIR'], 'libnvidia-ml.so.1')):
        t.skip('monitor health', 'gpusim not built')
        return t.done()
    tmp = tempfile.mkdtemp(prefix='gs-mon-health-')
    env = sim_env(tmp)
    env['GPUSIM_PRESET'] = 't4x2'
    clear = os.path.join(tmp, 'clear')
    os.makedirs(clear)
    mon = Monitor(tmp, ['--no-kubernetes', '--standalone-state-dir', os.path.join(tmp, 'sa'),
                        '--state-dir', os.path.join(tmp, 'p'), '--host-dir',
                        os.path.join(tmp, 'h'), '--health-clear-dir', clear], env)
    smi_env = dict(env, LD_LIBRARY_PATH=P['GS_SIM_DIR'])

    def smi(*a):
        return subprocess.run([P['GS_GPUSIM_SMI'], *a], env=smi_env, capture_output=True,
                              timeout=30).returncode

    def healthy(idx):
        return value(mon.text(), 'gpuslice_gpu_healthy', device_index=str(idx))

    try:
        t.ok(mon.ready(), 'the monitor is ready')
        t.is_eq((healthy(0), healthy(1)), (1.0, 1.0), 'gpuslice_gpu_healthy 1 for both GPUs')
        t.is_eq(value(mon.text(), 'gpuslice_gpu_last_xid', device_index='1'), None,
                'no last XID before the first one')
        t.is_eq(smi('inject-xid', '1', '13'), 0, 'non-fatal XID 13 on GPU 1')
        t.ok(wait_until(lambda: value(mon.text(), 'gpuslice_gpu_last_xid', device_index='1') == 13,
                        10), 'gpuslice_gpu_last_xid 13')
        t.is_eq(healthy(1), 1.0, 'still healthy after XID 13')
        t.is_eq(smi('inject-xid', '1', '48'), 0, 'fatal XID 48 on GPU 1')
        t.ok(wait_until(lambda: healthy(1) == 0.0, 10), 'gpuslice_gpu_healthy 0 for GPU 1')
        t.is_eq(value(mon.text(), 'gpuslice_gpu_last_xid', device_index='1'), 48.0,
                'gpuslice_gpu_last_xid 48')
        t.is_eq(healthy(0), 1.0, 'GPU 0 still 1')
        t.is_eq(promtool_problems(mon.text()), [], 'promtool check metrics: clean')
        with open(os.path.join(clear, 'hami-gpu-1'), 'w'):
            pass
        t.ok(wait_until(lambda: healthy(1) == 1.0, 10), 'operator clear: 1 again, no restart')
        t.is_eq(smi('lose', '0'), 0, 'lose GPU 0')
        t.ok(wait_until(lambda: healthy(0) == 0.0, 10), 'lost GPU 0 reads 0')
        t.is_eq(smi('recover', '0'), 0, 'recover GPU 0')
        t.ok(wait_until(lambda: healthy(0) == 1.0, 10), 'recovered GPU 0 reads 1')
    finally:
        rc = mon.stop()
        t.is_eq(rc, 0, 'the monitor exits 0 on SIGTERM')
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
