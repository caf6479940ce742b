#!/usr/bin/env python3
"""gpusim-smi prints what NVML reports: device, memory used/total in MiB, processes.

A helper process (test_multiproc in "hold" mode) keeps 1024 MiB on the simulated T4; the table
must show it, then show the device empty once the helper is SIGKILLed."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths


def smi(env, *args):
    r = subprocess.run([env_paths()['GS_GPUSIM_SMI'], *args], env=env, capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def main():
    t = Tap()
    holder = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix='gpusim-smi-') as tmp:
        env = dict(os.environ)
        env['GPUSIM_STATE'] = os.path.join(tmp, 'state')
        env['GPUSIM_PRESET'] = 't4'
        for k in ('GPUSIM_CONFIG', 'CUDA_VISIBLE_DEVICES', 'GPUSIM_CONTEXT_OVERHEAD'):
            env.pop(k, None)
        # gpusim's NVML first even on a machine with a real driver.
        env['LD_LIBRARY_PATH'] = env_paths()['GS_SIM_DIR']
        ldconfig = subprocess.run(['/sbin/ldconfig', '-p'], capture_output=True, text=True)
        real_nvml = 'libnvidia-ml.so.1' in ldconfig.stdout

        rc, out, err = smi(env)
        t.is_eq(rc, 0, 'gpusim-smi exits 0')
        t.like(out, 'Tesla T4', 'device name')
        t.like(out, '0MiB / 15360MiB', 'idle T4: 0MiB / 15360MiB')
        t.ok(re.search(r'GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', out),
             'UUID shown', diag=out)
        t.like(out, '00000000:00:04.0', 'PCI bus id')
        t.like(out, 'No running processes found', 'no processes')
        t.like(out, 'Driver Version: 570.124.06', 'driver version')
        t.like(out, 'CUDA Version: 12.8', 'CUDA version')

        p = subprocess.Popen([holder, 'hold', '1024'], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        t.is_eq(p.stdout.readline().strip(), 'ready', 'helper holds 1024 MiB')
        rc, out, err = smi(env)
        t.like(out, '1024MiB / 15360MiB', 'memory in use shown')
        line = next((ln for ln in out.splitlines() if re.search(r'\b%d\b' % p.pid, ln)), None)
        t.ok(line is not None, 'helper pid %d listed' % p.pid, diag=out)
        t.like(line or '', '1024MiB', 'with its 1024MiB')
        t.like(line or '', 'test_multiproc', 'and its executable')
        rc, out, err = smi(env, '--query-gpu=memory.used,memory.total',
                           '--format=csv,noheader,nounits')
        t.is_eq((rc, out), (0, '1024, 15360\n'), '--query-gpu CSV without header and units')
        rc, out, err = smi(env, '--query-gpu=index,name,memory.used,utilization.gpu,compute_cap',
                           '--format=csv')
        t.is_eq(out.splitlines()[0],
                'index, name, memory.used [MiB], utilization.gpu [%], compute_cap',
                'CSV header with units like nvidia-smi')
        t.is_eq(out.splitlines()[1], '0, Tesla T4, 1024 MiB, 0 %, 7.5', 'CSV values')
        rc, out, err = smi(env, '--query-gpu=memory.usedd', '--format=csv')
        t.is_eq(rc, 2, 'unknown query field: exit 2')
        t.like(err, 'unknown field "memory.usedd"', 'and names it')
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        p.stdin.close()
        rc, out, err = smi(env)
        t.like(out, '0MiB / 15360MiB', 'after SIGKILL the memory is back')
        t.like(out, 'No running processes found', 'and the process is gone')

        env['GPUSIM_PRESET'] = 'h200x2'
        env['GPUSIM_STATE'] = os.path.join(tmp, 'state2')
        rc, out, err = smi(env)
        t.is_eq(len(re.findall(r'0MiB / 143771MiB', out)), 2, 'h200x2: two H200 rows')

        # Without LD_LIBRARY_PATH: found next to the executable; a copy elsewhere finds none.
        bare = dict(env)
        bare.pop('LD_LIBRARY_PATH')
        copy = os.path.join(tmp, 'gpusim-smi')
        shutil.copy(env_paths()['GS_GPUSIM_SMI'], copy)
        if real_nvml:
            t.skip('NVML next to the executable', 'this machine has a real libnvidia-ml.so.1')
            t.skip('no NVML anywhere: exit 1', 'this machine has a real libnvidia-ml.so.1')
        else:
            rc, out, err = smi(bare)
            t.like(out, '0MiB / 143771MiB', 'libnvidia-ml.so.1 found next to gpusim-smi')
            r = subprocess.run([copy], env=bare, capture_output=True, text=True, timeout=30)
            t.is_eq(r.returncode, 1, 'no NVML anywhere: exit 1')
            t.like(r.stderr, 'cannot load libnvidia-ml.so.1', 'and says so')
        r = subprocess.run([copy], env=env, capture_output=True, text=True, timeout=30)
        t.like(r.stdout, '0MiB / 143771MiB', 'libnvidia-ml.so.1 found through LD_LIBRARY_PATH')

        r = subprocess.run([env_paths()['GS_GPUSIM_SMI'], '--bogus'], env=env,
                           capture_output=True, text=True, timeout=30)
        t.is_eq(r.returncode, 2, 'unknown argument: exit 2')
        t.like(r.stderr, 'unexpected argument "--bogus"', 'and says which')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
