#!/usr/bin/env python3
"""libvgpu as a drop-in HAMi-core (issue 22 item 3): in environment mode libvgpu keeps HAMi-core's
shared region (version 1.2) at CUDA_DEVICE_MEMORY_SHARED_CACHE. Read here at HAMi-core's offsets
(Project-HAMi/HAMi-core src/multiprocess/multiprocess_memory_limit.h shared_region_t; the same
offsets HAMi's vGPU monitor maps, pkg/monitor/nvidia/v1/spec.go sharedRegionT), never through
our header: the magic, version, device UUID and limits, our process slot with the usage our own
region charges, and HAMi's monitor's controls obeyed: recent_kernel = -1 stops launches
(HAMi-core's rate_limiter), and launches resume when it is lifted."""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap  # noqa: E402
from vgpulib import MiB, World, have_sim  # noqa: E402

# HAMi-core shared_region_t, x86_64 (computed from HAMi-core's header, see the module doc)
OFF_FLAG, OFF_MAJOR, OFF_MINOR = 0, 4, 8
OFF_DEVNUM, OFF_UUIDS, OFF_LIMIT, OFF_SMLIMIT, OFF_PROCS = 56, 64, 1600, 1728, 1856
SLOT_SIZE, SLOT_USED, SLOT_STATUS = 1960, 8, 1928
DEVMEM_SIZE, DEVMEM_DATA, DEVMEM_TOTAL = 64, 16, 32
OFF_PROCNUM, OFF_SWITCH, OFF_RECENT, OFF_PRIO, OFF_LASTK = (2008896, 2008900, 2008904, 2008908,
                                                             2008912)
SIZE = 2008952
MAGIC = 19920718

# our own region (include/gpuslice/shared_region.h): devices at 128 (200 bytes each), launches at
# +144; process slots after 32 devices, used[] at +24
G_DEV, G_DEV_SIZE, G_LAUNCHES = 128, 200, 144
G_PROCS, G_PROC_SIZE, G_PROC_USED = 128 + 32 * 200, 24 + 8 * 32, 24


def rd(path, off, fmt):
    with open(path, 'rb') as f:
        f.seek(off)
        return struct.unpack('<' + fmt, f.read(struct.calcsize(fmt)))[0]


def wr(path, off, fmt, v):
    with open(path, 'r+b') as f:
        f.seek(off)
        f.write(struct.pack('<' + fmt, v))


def wait_for(cond, secs=20.0):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def our_proc_used(path, pid):
    for i in range(1024):
        base = G_PROCS + i * G_PROC_SIZE
        if rd(path, base, 'i') == pid:
            return rd(path, base + G_PROC_USED, 'Q')
    return None


def layout(t, w, uuid):
    cache = w.region('hami.cache')
    p = w.spawn(['hold', 64, 4000],
                extra={'CUDA_DEVICE_MEMORY_SHARED_CACHE': cache, 'CUDA_DEVICE_MEMORY_LIMIT_0': '0x20000000',
                       'CUDA_DEVICE_SM_LIMIT_0': '0x1e', 'CUDA_TASK_PRIORITY': '0'})
    try:
        line = p.stdout.readline()
        t.is_eq(line.strip(), 'hold=0', 'the probe holds 64 MiB (env mode, HAMi-core parsing of 0x20000000)')
        t.is_eq(os.path.getsize(cache), SIZE, "HAMi-core's region has shared_region_t's size")
        t.is_eq(rd(cache, OFF_FLAG, 'i'), MAGIC, 'initialized_flag is 19920718')
        t.is_eq((rd(cache, OFF_MAJOR, 'I'), rd(cache, OFF_MINOR, 'I')), (1, 2), 'version 1.2')
        t.ok(rd(cache, OFF_DEVNUM, 'Q') >= 1, 'device_num counts the device')
        got = open(cache, 'rb').read()[OFF_UUIDS:OFF_UUIDS + 96].split(b'\0')[0].decode()
        t.is_eq(got, uuid, 'uuids[0] is the device UUID')
        t.is_eq(rd(cache, OFF_LIMIT, 'Q'), 512 * MiB, 'limit[0] = CUDA_DEVICE_MEMORY_LIMIT_0 (0x20000000)')
        t.is_eq(rd(cache, OFF_SMLIMIT, 'Q'), 30, 'sm_limit[0] = CUDA_DEVICE_SM_LIMIT_0 (0x1e = 30)')
        t.is_eq(rd(cache, OFF_PRIO, 'i'), 0, 'priority from CUDA_TASK_PRIORITY')
        t.is_eq(rd(cache, OFF_SWITCH, 'i'), 1, 'utilization_switch starts at 1')
        n = rd(cache, OFF_PROCNUM, 'i')
        slot = None
        for i in range(n):
            if rd(cache, OFF_PROCS + i * SLOT_SIZE, 'i') == p.pid:
                slot = OFF_PROCS + i * SLOT_SIZE
        t.ok(slot is not None, f'a process slot among proc_num={n} holds the probe pid {p.pid}')
        if slot is not None:
            total = rd(cache, slot + SLOT_USED + DEVMEM_TOTAL, 'Q')
            data = rd(cache, slot + SLOT_USED + DEVMEM_DATA, 'Q')
            ours = our_proc_used(cache + '.gpuslice', p.pid)
            t.ok(total >= 64 * MiB, f'used[0].total shows the 64 MiB held ({total} bytes)')
            t.is_eq(total, ours, 'used[0].total equals what our own region charges the process')
            t.is_eq(data, total, 'used[0].data_size (HAMi: bufferSize) likewise')
            t.is_eq(rd(cache, slot + SLOT_STATUS, 'i'), 1, 'slot status 1')
    finally:
        p.wait(timeout=30)
    slots = [rd(cache, OFF_PROCS + i * SLOT_SIZE, 'i') for i in range(rd(cache, OFF_PROCNUM, 'i'))]
    t.ok(p.pid not in slots, 'the slot is given back at exit')


def blocking(t, w):
    cache = w.region('hami-block.cache')
    ours = cache + '.gpuslice'
    p = w.spawn(['launch', 1000, 30000],
                extra={'CUDA_DEVICE_MEMORY_SHARED_CACHE': cache, 'CUDA_DEVICE_SM_LIMIT': '50'})
    try:
        def launches():
            try:
                return rd(ours, G_DEV + G_LAUNCHES, 'Q')
            except (OSError, struct.error):
                return 0
        t.ok(wait_for(lambda: launches() > 20), 'the capped probe launches (our region counts)')
        t.is_eq(rd(cache, OFF_RECENT, 'i'), 2, 'a capped launch sets recent_kernel to 2')
        t.ok(abs(rd(cache, OFF_LASTK, 'Q') - time.time()) < 30, 'last_kernel_time is now, in seconds')
        wr(cache, OFF_RECENT, 'i', -1)  # what HAMi's monitor writes (feedback.go, CheckBlocking)
        time.sleep(0.1)  # a launch past the check may still complete
        before = launches()
        time.sleep(1.0)
        after = launches()
        t.ok(after - before <= 1, f'recent_kernel = -1 stops launches ({after - before} in 1 s)')
        t.is_eq(rd(cache, OFF_RECENT, 'i'), -1, 'libvgpu never overwrites a block')
        wr(cache, OFF_RECENT, 'i', 0)
        t.ok(wait_for(lambda: launches() > after + 20), 'lifting the block resumes launches')
    finally:
        p.kill()
        p.wait()


def switch(t, w):
    """utilization_switch 0 (HAMi: no contention): the cap does not apply."""
    cache = w.region('hami-switch.cache')
    ours = cache + '.gpuslice'
    # the region exists before the probe starts: HAMi's monitor has set the switch to 0
    p0 = w.run(['hold', 1, 1], extra={'CUDA_DEVICE_MEMORY_SHARED_CACHE': cache, 'CUDA_DEVICE_SM_LIMIT': '10'})
    t.is_eq(p0.returncode, 0, 'region created')
    wr(cache, OFF_SWITCH, 'i', 0)
    kv = {}
    for line in w.run(['launch', 1000, 2000], extra={'CUDA_DEVICE_MEMORY_SHARED_CACHE': cache,
                                                     'CUDA_DEVICE_SM_LIMIT': '10'}).stdout.splitlines():
        if line.startswith('launches='):
            kv = dict(x.split('=') for x in line.split())
    off = int(kv.get('launches', 0))
    wr(cache, OFF_SWITCH, 'i', 1)
    for line in w.run(['launch', 1000, 2000], extra={'CUDA_DEVICE_MEMORY_SHARED_CACHE': cache,
                                                     'CUDA_DEVICE_SM_LIMIT': '10'}).stdout.splitlines():
        if line.startswith('launches='):
            kv = dict(x.split('=') for x in line.split())
    on = int(kv.get('launches', 0))
    t.ok(off > 2 * on, f'utilization_switch 0 lifts the cap ({off} launches of 1 ms in 2 s vs {on} with 1)')
    _ = ours


def main():
    t = Tap()
    if not have_sim():
        t.skip('HAMi-core region', 'gpusim not built')
        t.done()
        return
    w = World()
    try:
        uuid = w.devices()[0][1]
        layout(t, w, uuid)
        blocking(t, w)
        switch(t, w)
    finally:
        w.close()
    t.done()


if __name__ == '__main__':
    main()
