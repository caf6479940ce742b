#!/usr/bin/env python3
"""gpusim's NVML device queries (what nvidia-smi -q and DCGM read) answer with the preset's
figures and move with simulated load: a T4 idles at 9 W, P8, 300 MHz, GpuIdle; while a 3 s kernel
runs it reaches its 70 W limit, P0, 1590 MHz, its temperature rises and the energy counter grows
by at least (70 W - 9 W) x 3 s. H200 and A100 report their own limits, PCIe generation, BAR1 and
engines. Under libvgpu (4 GiB slice) the memory views show the slice and every other query
passes through.

Modes: no argument = the whole test; 'child <preset>' = one process's checks printing TAP lines
(each preset runs in its own process: NVML reads the preset once, at nvmlInit)."""
import ctypes
import os
import subprocess
import sys
import tempfile

import nvmlpy
from gstest import Tap, preload_env

N = nvmlpy


def idle_and_identity(t, nv, h, preset):
    want = {
        't4': dict(name='Tesla T4', tdp=70000, minlim=60000, idle=9000, sm=1590, mem=5001,
                   idle_sm=300, app=585, gen=3, bar1=256 << 20, fans=0, jpg=False, enc=True,
                   remap=False, shutdown=96, slowdown=93),
        'h200': dict(name='NVIDIA H200', tdp=700000, minlim=200000, idle=75000, sm=1980,
                     mem=3201, idle_sm=345, app=1755, gen=5, bar1=256 << 30, fans=0, jpg=True,
                     enc=False, remap=True, shutdown=92, slowdown=89),
        'a100x8': dict(name='NVIDIA A100-SXM4-80GB', tdp=400000, minlim=100000, idle=60000,
                       sm=1410, mem=1593, idle_sm=210, app=1275, gen=4, bar1=128 << 30, fans=0,
                       jpg=True, enc=False, remap=True, shutdown=92, slowdown=89),
    }[preset]
    t.is_eq(nv.string('nvmlDeviceGetName', h), (0, want['name']), f'{preset}: name')
    rc, serial = nv.string('nvmlDeviceGetSerial', h, 30)
    t.ok(rc == 0 and len(serial) == 13 and serial.isdigit(), f'{preset}: 13-digit serial',
         diag=serial)
    rc, vbios = nv.string('nvmlDeviceGetVbiosVersion', h, 32)
    t.ok(rc == 0 and vbios.count('.') == 4, f'{preset}: VBIOS version xx.xx.xx.xx.xx', diag=vbios)
    rc, part = nv.string('nvmlDeviceGetBoardPartNumber', h, 80)
    t.ok(rc == 0 and part.count('-') == 3, f'{preset}: board part number', diag=part)
    t.is_eq(nv.string('nvmlDeviceGetSerial', h, 5)[0], N.NVML_ERROR_INSUFFICIENT_SIZE,
            f'{preset}: too small a buffer -> INSUFFICIENT_SIZE')
    # power
    t.is_eq(nv.uint('nvmlDeviceGetPowerManagementLimit', h), (0, want['tdp']),
            f'{preset}: power limit {want["tdp"]} mW')
    t.is_eq(nv.uint('nvmlDeviceGetEnforcedPowerLimit', h), (0, want['tdp']),
            f'{preset}: enforced limit')
    t.is_eq(nv.uint('nvmlDeviceGetPowerManagementDefaultLimit', h), (0, want['tdp']),
            f'{preset}: default limit')
    lo, hi = ctypes.c_uint(), ctypes.c_uint()
    rc = nv.call('nvmlDeviceGetPowerManagementLimitConstraints', h, ctypes.byref(lo),
                 ctypes.byref(hi))
    t.is_eq((rc, lo.value, hi.value), (0, want['minlim'], want['tdp']),
            f'{preset}: limit constraints')
    t.is_eq(nv.uint('nvmlDeviceGetPowerUsage', h), (0, want['idle']),
            f'{preset}: idle power {want["idle"]} mW')
    # thermal
    rc, temp = nv.uint('nvmlDeviceGetTemperature', h, 0)
    t.ok(rc == 0 and 20 <= temp <= 40, f'{preset}: idle temperature 20-40 C', diag=temp)
    t.is_eq(nv.uint('nvmlDeviceGetTemperatureThreshold', h, 0), (0, want['shutdown']),
            f'{preset}: shutdown threshold')
    t.is_eq(nv.uint('nvmlDeviceGetTemperatureThreshold', h, 1), (0, want['slowdown']),
            f'{preset}: slowdown threshold')
    t.is_eq(nv.uint('nvmlDeviceGetTemperature', h, 7)[0], N.NVML_ERROR_INVALID_ARGUMENT,
            f'{preset}: unknown sensor refused')
    tv = (ctypes.c_uint * 3)(12 | (1 << 24), 0, 0)
    rc = nv.call('nvmlDeviceGetTemperatureV', h, tv)
    t.is_eq((rc, tv[2]), (0, temp), f'{preset}: nvmlDeviceGetTemperatureV (v1 struct)')
    tv[0] = 12
    t.is_eq(nv.call('nvmlDeviceGetTemperatureV', h, tv), N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
            f'{preset}: TemperatureV without its version refused')
    # clocks, P-state, reasons
    t.is_eq(nv.uint('nvmlDeviceGetMaxClockInfo', h, 1), (0, want['sm']), f'{preset}: max SM clock')
    t.is_eq(nv.uint('nvmlDeviceGetMaxClockInfo', h, 2), (0, want['mem']),
            f'{preset}: max memory clock')
    t.is_eq(nv.uint('nvmlDeviceGetClockInfo', h, 1), (0, want['idle_sm']),
            f'{preset}: idle SM clock')
    t.is_eq(nv.uint('nvmlDeviceGetApplicationsClock', h, 0), (0, want['app']),
            f'{preset}: application clock')
    t.is_eq(nv.uint('nvmlDeviceGetClock', h, 1, 3), (0, want['sm']),
            f'{preset}: customer boost max clock')
    t.is_eq(nv.uint('nvmlDeviceGetPerformanceState', h), (0, 8), f'{preset}: idle -> P8')
    t.is_eq(nv.ull('nvmlDeviceGetCurrentClocksEventReasons', h), (0, 1),
            f'{preset}: idle -> GpuIdle')
    t.is_eq(nv.ull('nvmlDeviceGetCurrentClocksThrottleReasons', h), (0, 1),
            f'{preset}: deprecated throttle-reasons name answers the same')
    # PCIe, BAR1
    t.is_eq(nv.uint('nvmlDeviceGetCurrPcieLinkGeneration', h), (0, want['gen']),
            f'{preset}: PCIe gen {want["gen"]}')
    t.is_eq(nv.uint('nvmlDeviceGetCurrPcieLinkWidth', h), (0, 16), f'{preset}: PCIe x16')
    t.is_eq(nv.uint('nvmlDeviceGetPcieThroughput', h, 0), (0, 0), f'{preset}: PCIe TX 0 KB/s')
    t.is_eq(nv.uint('nvmlDeviceGetPcieThroughput', h, 2)[0], N.NVML_ERROR_INVALID_ARGUMENT,
            f'{preset}: unknown PCIe counter refused')
    t.is_eq(nv.uint('nvmlDeviceGetPcieReplayCounter', h), (0, 0), f'{preset}: replay counter 0')
    bar1 = N.Bar1()
    rc = nv.call('nvmlDeviceGetBAR1MemoryInfo', h, ctypes.byref(bar1))
    t.is_eq((rc, bar1.total, bar1.used + bar1.free), (0, want['bar1'], want['bar1']),
            f'{preset}: BAR1 total {want["bar1"] >> 20} MiB, used + free = total')
    # ECC, retirement
    cur, pend = ctypes.c_int(), ctypes.c_int()
    rc = nv.call('nvmlDeviceGetEccMode', h, ctypes.byref(cur), ctypes.byref(pend))
    t.is_eq((rc, cur.value, pend.value), (0, 1, 1), f'{preset}: ECC enabled')
    t.is_eq(nv.ull('nvmlDeviceGetTotalEccErrors', h, 1, 0), (0, 0),
            f'{preset}: volatile uncorrected ECC errors 0')
    t.is_eq(nv.ull('nvmlDeviceGetTotalEccErrors', h, 2, 0)[0], N.NVML_ERROR_INVALID_ARGUMENT,
            f'{preset}: bad ECC error type refused')
    a, b, c, d = (ctypes.c_uint() for _ in range(4))
    rc = nv.call('nvmlDeviceGetRemappedRows', h, ctypes.byref(a), ctypes.byref(b),
                 ctypes.byref(c), ctypes.byref(d))
    t.is_eq(rc, 0 if want['remap'] else N.NVML_ERROR_NOT_SUPPORTED,
            f'{preset}: remapped rows {"0" if want["remap"] else "NOT_SUPPORTED (Turing)"}')
    # fans, engines
    t.is_eq(nv.uint('nvmlDeviceGetNumFans', h), (0, want['fans']), f'{preset}: passive cooling')
    t.is_eq(nv.uint('nvmlDeviceGetFanSpeed', h)[0], N.NVML_ERROR_NOT_SUPPORTED,
            f'{preset}: fan speed N/A')
    u, p = ctypes.c_uint(7), ctypes.c_uint()
    rc = nv.call('nvmlDeviceGetDecoderUtilization', h, ctypes.byref(u), ctypes.byref(p))
    t.is_eq((rc, u.value), (0, 0), f'{preset}: decoder idle')
    rc = nv.call('nvmlDeviceGetJpgUtilization', h, ctypes.byref(u), ctypes.byref(p))
    t.is_eq(rc, 0 if want['jpg'] else N.NVML_ERROR_NOT_SUPPORTED, f'{preset}: NVJPG presence')
    rc = nv.call('nvmlDeviceGetEncoderUtilization', h, ctypes.byref(u), ctypes.byref(p))
    t.is_eq(rc, 0 if want['enc'] else N.NVML_ERROR_NOT_SUPPORTED, f'{preset}: NVENC presence')
    # modes, affinity, accounting
    t.is_eq(nv.uint('nvmlDeviceGetComputeMode', h), (0, 0), f'{preset}: compute mode Default')
    t.is_eq(nv.uint('nvmlDeviceGetPersistenceMode', h), (0, 1), f'{preset}: persistence on')
    t.is_eq(nv.uint('nvmlDeviceGetAccountingMode', h), (0, 1), f'{preset}: accounting on')
    cpus = (ctypes.c_ulong * 16)()
    rc = nv.call('nvmlDeviceGetCpuAffinity', h, 16, cpus)
    t.ok(rc == 0 and any(cpus), f'{preset}: CPU affinity names some CPU')
    # units, excluded devices
    n = ctypes.c_uint(9)
    t.is_eq((nv.call('nvmlUnitGetCount', ctypes.byref(n)), n.value), (0, 0),
            f'{preset}: no S-class units')
    n = ctypes.c_uint(9)
    t.is_eq((nv.call('nvmlGetExcludedDeviceCount', ctypes.byref(n)), n.value), (0, 0),
            f'{preset}: no excluded devices')
    # field values
    rc, fv = nv.fields(h, [1, 83, 186, 250, 0])
    t.is_eq(rc, 0, f'{preset}: nvmlDeviceGetFieldValues')
    t.is_eq((fv[0].nvmlReturn, fv[0].value.uiVal), (0, 1), f'{preset}: field ECC_CURRENT = 1')
    t.ok(fv[1].nvmlReturn == 0 and fv[1].value.ullVal > 0, f'{preset}: field TOTAL_ENERGY > 0')
    t.is_eq((fv[2].nvmlReturn, fv[2].value.uiVal), (0, want['idle']),
            f'{preset}: field POWER_INSTANT = idle power')
    t.is_eq([fv[3].nvmlReturn, fv[4].nvmlReturn],
            [N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_INVALID_ARGUMENT],
            f'{preset}: unanswered field NOT_SUPPORTED, field 0 INVALID_ARGUMENT')
    ev = ctypes.c_ulonglong()
    rc = nv.call('nvmlDeviceGetSupportedEventTypes', h, ctypes.byref(ev))
    t.ok(rc == 0 and ev.value & N.XID_CRITICAL, f'{preset}: XID events supported')


def under_load(t, nv, h):
    """A 3 s kernel on the T4: readings reach full load while it runs; energy grows."""
    cu = N.Cuda(0)
    e0 = nv.ull('nvmlDeviceGetTotalEnergyConsumption', h)[1]
    t0 = nv.uint('nvmlDeviceGetTemperature', h, 0)[1]
    f = cu.kernel(3000000)
    t.is_eq(cu.launch(f), 0, 'launch a 3 s kernel')
    # Bounded wait: until the last second was all busy (power = limit) or the kernel ended.
    full = False
    while cu.query() == N.CUDA_ERROR_NOT_READY:
        if nv.uint('nvmlDeviceGetPowerUsage', h)[1] == 70000:
            full = True
            break
        subprocess.run(['sleep', '0.05'])
    t.ok(full, 'power reaches the 70 W limit while the kernel runs')
    if full:
        t.is_eq(nv.uint('nvmlDeviceGetPerformanceState', h), (0, 0), 'busy -> P0')
        t.is_eq(nv.uint('nvmlDeviceGetClockInfo', h, 1), (0, 1590), 'busy -> SM at 1590 MHz')
        t.is_eq(nv.uint('nvmlDeviceGetClockInfo', h, 2), (0, 5001), 'busy -> memory at 5001 MHz')
        t.is_eq(nv.ull('nvmlDeviceGetCurrentClocksEventReasons', h), (0, 0),
                'busy -> no clock event reason')
        rc, temp = nv.uint('nvmlDeviceGetTemperature', h, 0)
        t.ok(rc == 0 and temp > t0, 'temperature rises under load', diag=f'{t0} -> {temp}')
        util = (ctypes.c_uint * 2)()
        t.is_eq((nv.call('nvmlDeviceGetUtilizationRates', h, util), util[0]), (0, 100),
                'utilisation 100 %')
    t.is_eq(cu.sync(), 0, 'kernel completes')
    e1 = nv.ull('nvmlDeviceGetTotalEnergyConsumption', h)[1]
    t.ok(e1 - e0 >= (70000 - 9000) * 3, 'energy grows by >= (70 W - 9 W) x 3 s',
         diag=f'{e0} -> {e1} mJ')
    n = ctypes.c_uint(4)
    pids = (ctypes.c_uint * 4)()
    rc = nv.call('nvmlDeviceGetAccountingPids', h, ctypes.byref(n), pids)
    t.ok(rc == 0 and os.getpid() in list(pids)[:n.value], 'accounting lists this process')
    stats = (ctypes.c_ubyte * 56)()
    rc = nv.call('nvmlDeviceGetAccountingStats', h, os.getpid(), stats)
    util = int.from_bytes(bytes(stats[0:4]), 'little')
    running = int.from_bytes(bytes(stats[32:36]), "little")
    t.ok(rc == 0 and util > 0 and running == 1, 'accounting stats: GPU share > 0, running',
         diag=f'util={util} running={running}')


def child(preset):
    t = Tap()
    nv = N.Nvml()
    rc, h = nv.handle(0)
    t.is_eq(rc, 0, f'{preset}: handle of GPU 0')
    idle_and_identity(t, nv, h, preset)
    if preset == 't4':
        under_load(t, nv, h)
    return t.done()


def slice_child():
    """Under libvgpu with a 4 GiB limit: the memory views are the slice's; the rest passes."""
    t = Tap()
    nv = N.Nvml()
    rc, h = nv.handle(0)
    m = N.Memory()
    rc = nv.call('nvmlDeviceGetMemoryInfo', h, ctypes.byref(m))
    t.is_eq((rc, m.total), (0, 4 << 30), 'slice: nvmlDeviceGetMemoryInfo total 4 GiB')
    m2 = N.Memory2()
    m2.version = 40 | (2 << 24)
    rc = nv.call('nvmlDeviceGetMemoryInfo_v2', h, ctypes.byref(m2))
    t.is_eq((rc, m2.total), (0, 4 << 30), 'slice: nvmlDeviceGetMemoryInfo_v2 total 4 GiB')
    t.is_eq(nv.uint('nvmlDeviceGetPowerManagementLimit', h), (0, 70000),
            'slice: power limit passes through')
    t.is_eq(nv.string('nvmlDeviceGetName', h), (0, 'Tesla T4'), 'slice: name passes through')
    return t.done()


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == 'child':
        return child(sys.argv[2])
    if len(sys.argv) >= 2 and sys.argv[1] == 'slice':
        return slice_child()
    t = Tap()
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix='gs-nvml-') as tmp:
        for preset in ('t4', 'h200', 'a100x8'):
            env = preload_env(sim=True)
            for k in ('GPUSIM_CONFIG', 'CUDA_VISIBLE_DEVICES'):
                env.pop(k, None)
            env['GPUSIM_PRESET'] = preset
            env['GPUSIM_STATE'] = os.path.join(tmp, preset + '.state')
            r = subprocess.run([sys.executable, os.path.join(here, 'test_nvml_device.py'),
                                'child', preset], env=env, capture_output=True, text=True,
                               timeout=120)
            relay(t, r, preset)
        env = preload_env(sim=True, preload=os.environ['GS_VGPU_LIB'])
        env.pop('GPUSIM_CONFIG', None)
        env['GPUSIM_PRESET'] = 't4'
        env['GPUSIM_STATE'] = os.path.join(tmp, 'slice.state')
        env['CUDA_DEVICE_MEMORY_LIMIT_0'] = '4g'
        env['GPUSLICE_LIMITS_DIR'] = os.path.join(tmp, 'no-limits')
        env['CUDA_DEVICE_MEMORY_SHARED_CACHE'] = os.path.join(tmp, 'region')
        r = subprocess.run([sys.executable, os.path.join(here, 'test_nvml_device.py'), 'slice'],
                           env=env, capture_output=True, text=True, timeout=120)
        relay(t, r, 'libvgpu slice')
    return t.done()


def relay(t, r, what):
    """Re-emit a child's TAP results as our own."""
    n = 0
    for line in r.stdout.splitlines():
        if line.startswith('ok ') or line.startswith('not ok '):
            ok = line.startswith('ok ')
            name = line.split(' - ', 1)[1] if ' - ' in line else line
            t.ok(ok, name)
            n += 1
        elif line.startswith('#'):
            print(line)
    t.ok(r.returncode == 0 and n > 0, f'{what}: child exits 0 with results',
         diag=r.stderr[-2000:])


if __name__ == '__main__':
    sys.exit(main())
