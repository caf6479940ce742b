#!/usr/bin/env python3
"""gpusim fault injection (gpusim-smi inject-xid / lose / recover) as NVML and CUDA report it.

On a t4x2 machine: an XID injected on GPU 1 reaches an event set registered on both GPUs, once,
with the device handle of GPU 1 and eventData = the XID; one injected while a thread waits
(30 s timeout) wakes it; events from before registration are not delivered; the v1
nvmlEventSetWait writes only its 24-byte struct. `lose 0`: XID 79 is delivered, NVML calls for
GPU 0 return GPU_IS_LOST (handles and queries) while GPU 1 answers, a CUDA process with a context
on GPU 0 gets CUDA_ERROR_UNKNOWN for allocations, launches and synchronisation; `recover 0`
brings both back. Bad arguments are refused with a message naming the value."""
import ctypes
import os
import subprocess
import sys
import tempfile
import threading

import nvmlpy
from gstest import Tap, env_paths, preload_env, sanitizer_runtime

N = nvmlpy


def smi(env, *args):
    r = subprocess.run([env_paths()['GS_GPUSIM_SMI'], *args], env=env, capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def cuda_child():
    """Holds a context on GPU 0; on each line from stdin, tries an allocation, a launch and a
    synchronisation and prints the three results."""
    cu = N.Cuda(0)
    f = cu.kernel(10)
    print('ready', flush=True)
    for _ in sys.stdin:
        rc_alloc, _p = cu.alloc(1 << 20)
        rc_launch = cu.launch(f)
        rc_sync = cu.sync()
        print(f'alloc={rc_alloc} launch={rc_launch} sync={rc_sync}', flush=True)
    return 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == 'cuda-child':
        return cuda_child()
    rt = sanitizer_runtime()
    if rt and rt not in os.environ.get('LD_PRELOAD', ''):
        # This process loads gpusim's (instrumented) libraries itself: the ASan runtime first.
        os.execve(sys.executable, [sys.executable] + sys.argv, preload_env(sim=True))
    t = Tap()
    with tempfile.TemporaryDirectory(prefix='gs-health-') as tmp:
        env = preload_env(sim=True)
        for k in ('GPUSIM_CONFIG', 'CUDA_VISIBLE_DEVICES'):
            env.pop(k, None)
        env['GPUSIM_PRESET'] = 't4x2'
        env['GPUSIM_STATE'] = os.path.join(tmp, 'state')
        os.environ.update({k: env[k] for k in ('GPUSIM_PRESET', 'GPUSIM_STATE')})
        os.environ.pop('GPUSIM_CONFIG', None)

        nv = N.Nvml()
        h0 = nv.handle(0)[1]
        h1 = nv.handle(1)[1]
        es = ctypes.c_void_p()
        t.is_eq(nv.call('nvmlEventSetCreate', ctypes.byref(es)), 0, 'nvmlEventSetCreate')
        for h in (h0, h1):
            t.is_eq(nv.call('nvmlDeviceRegisterEvents', h, ctypes.c_ulonglong(N.XID_CRITICAL), es),
                    0, 'register XID events')
        t.is_eq(nv.call('nvmlDeviceRegisterEvents', h0, ctypes.c_ulonglong(0x4), es),
                N.NVML_ERROR_NOT_SUPPORTED, 'P-state events (not simulated) refused')
        ev = N.EventData()
        t.is_eq(nv.call('nvmlEventSetWait_v2', es, ctypes.byref(ev), 0), N.NVML_ERROR_TIMEOUT,
                'nothing injected: TIMEOUT')

        rc, _, err = smi(env, 'inject-xid', '1', '48')
        t.is_eq((rc, err), (0, ''), 'gpusim-smi inject-xid 1 48')
        rc = nv.call('nvmlEventSetWait_v2', es, ctypes.byref(ev), 10000)
        t.is_eq((rc, ev.eventType, ev.eventData, ev.device == h1.value,
                 ev.gpuInstanceId, ev.computeInstanceId),
                (0, N.XID_CRITICAL, 48, True, 0xFFFFFFFF, 0xFFFFFFFF),
                'XID 48 delivered for GPU 1 (not MIG-attributed)')
        t.is_eq(nv.call('nvmlEventSetWait_v2', es, ctypes.byref(ev), 0), N.NVML_ERROR_TIMEOUT,
                'delivered once')

        # A waiter blocked in nvmlEventSetWait is woken by another process's injection.
        got = {}

        def waiter():
            e = N.EventData()
            got['rc'] = nv.call('nvmlEventSetWait_v2', es, ctypes.byref(e), 30000)
            got['xid'] = e.eventData
            got['dev'] = e.device

        th = threading.Thread(target=waiter)
        th.start()
        smi(env, 'inject-xid', '0', '31')
        th.join(60)
        t.is_eq((got.get('rc'), got.get('xid'), got.get('dev') == h0.value), (0, 31, True),
                'a blocked waiter wakes with XID 31 on GPU 0')

        # Order, and a set registered later does not see earlier events.
        for x in ('43', '13', '94'):
            smi(env, 'inject-xid', '0', x)
        seen = []
        while nv.call('nvmlEventSetWait_v2', es, ctypes.byref(ev), 0) == 0:
            seen.append(ev.eventData)
        t.is_eq(seen, [43, 13, 94], 'events delivered in injection order')
        es2 = ctypes.c_void_p()
        nv.call('nvmlEventSetCreate', ctypes.byref(es2))
        nv.call('nvmlDeviceRegisterEvents', h0, ctypes.c_ulonglong(N.XID_CRITICAL), es2)
        t.is_eq(nv.call('nvmlEventSetWait_v2', es2, ctypes.byref(ev), 0), N.NVML_ERROR_TIMEOUT,
                'events from before registration are not delivered')

        # v1 entry point: 24-byte struct, nothing written past it.
        smi(env, 'inject-xid', '0', '63')
        buf = (ctypes.c_ubyte * 40)(*([0xAB] * 40))
        rc = nv.call('nvmlEventSetWait', es2, buf, 10000)
        t.is_eq((rc, int.from_bytes(bytes(buf[16:24]), 'little'), bytes(buf[24:40])),
                (0, 63, b'\xab' * 16), 'nvmlEventSetWait (v1) fills 24 bytes only')
        rc = nv.call('nvmlEventSetWait_v2', es, ctypes.byref(ev), 0)
        t.is_eq((rc, ev.eventData), (0, 63), 'each set gets its own copy of an event')

        # A CUDA process with a context on GPU 0.
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), 'cuda-child'],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        t.is_eq(child.stdout.readline().strip(), 'ready', 'CUDA process has a context on GPU 0')

        def ask():
            child.stdin.write('go\n')
            child.stdin.flush()
            return child.stdout.readline().strip()

        t.is_eq(ask(), 'alloc=0 launch=0 sync=0', 'healthy GPU: allocate, launch, sync')

        rc, _, err = smi(env, 'lose', '0')
        t.is_eq((rc, err), (0, ''), 'gpusim-smi lose 0')
        rc = nv.call('nvmlEventSetWait_v2', es, ctypes.byref(ev), 10000)
        t.is_eq((rc, ev.eventData, ev.device == h0.value), (0, 79, True),
                'XID 79 (fallen off the bus) delivered for GPU 0')
        t.is_eq(nv.handle(0)[0], N.NVML_ERROR_GPU_IS_LOST, 'GetHandleByIndex(0): GPU_IS_LOST')
        t.is_eq(nv.string('nvmlDeviceGetName', h0)[0], N.NVML_ERROR_GPU_IS_LOST,
                'queries on a held handle: GPU_IS_LOST')
        m = N.Memory()
        t.is_eq(nv.call('nvmlDeviceGetMemoryInfo', h0, ctypes.byref(m)), N.NVML_ERROR_GPU_IS_LOST,
                'memory info: GPU_IS_LOST')
        t.is_eq(nv.uint('nvmlDeviceGetPowerUsage', h0)[0], N.NVML_ERROR_GPU_IS_LOST,
                'power: GPU_IS_LOST')
        t.is_eq(nv.string('nvmlDeviceGetName', h1), (0, 'Tesla T4'), 'GPU 1 still answers')
        t.is_eq(ask(), 'alloc=999 launch=999 sync=999',
                'lost GPU: CUDA_ERROR_UNKNOWN for alloc, launch, sync')
        rc, out, _ = smi(env, 'health')
        t.is_eq(out.splitlines(), ['0 lost=1 xid_events=6', '1 lost=0 xid_events=1'],
                'gpusim-smi health')

        rc, _, err = smi(env, 'recover', '0')
        t.is_eq((rc, err), (0, ''), 'gpusim-smi recover 0')
        t.is_eq(nv.handle(0)[0], 0, 'GPU 0 has a handle again')
        t.is_eq(nv.string('nvmlDeviceGetName', h0), (0, 'Tesla T4'), 'held handle answers again')
        t.is_eq(ask(), 'alloc=0 launch=0 sync=0', 'recovered GPU: allocate, launch, sync')
        child.stdin.close()
        t.is_eq(child.wait(30), 0, 'CUDA process exits cleanly')

        rc, _, err = smi(env, 'inject-xid', '5', '48')
        t.ok(rc == 2 and 'GPU "5"' in err, 'unknown GPU refused, naming it', diag=err)
        rc, _, err = smi(env, 'inject-xid', '0', '0')
        t.ok(rc == 2 and 'XID "0"' in err, 'XID 0 refused, naming it', diag=err)
        rc, _, err = smi(env, 'lose')
        t.ok(rc == 2 and 'lose takes 1 argument' in err, 'missing argument refused', diag=err)
        for s in (es, es2):
            t.is_eq(nv.call('nvmlEventSetFree', s), 0, 'nvmlEventSetFree')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
