#!/usr/bin/env python3
"""gpusim exports the whole public driver API, exactly its table: every row of
src/sim/cuda-api.def is exported by libcuda.so.1 and the reverse; every row's base name resolves
through cuGetProcAddress_v2 at its version (and later ones) to that very symbol; the names the
CUDA headers declare (tools/cuda-api/rows-12.6.txt, the parsed header facts) and the functions
FFmpeg and numba load are all there; libnvidia-ml.so.1 exports only nvml*."""
import ctypes
import os
import re
import subprocess
import sys

from gstest import Tap, env_paths, preload_env, sanitizer_runtime

# FFmpeg's compat/cuda/dynlink_loader.h (ffnvcodec dynlink_cuda.h): what it loads at start-up.
FFMPEG = '''cuInit cuDeviceGetCount cuDeviceGet cuDeviceGetAttribute cuDeviceGetName
cuDeviceComputeCapability cuCtxCreate_v2 cuCtxSetLimit cuCtxPushCurrent_v2 cuCtxPopCurrent_v2
cuCtxDestroy_v2 cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemAllocManaged cuMemsetD8Async cuMemFree_v2
cuMemcpy cuMemcpyAsync cuMemcpy2D_v2 cuMemcpy2DAsync_v2 cuMemcpyHtoD_v2 cuMemcpyHtoDAsync_v2
cuMemcpyDtoH_v2 cuMemcpyDtoHAsync_v2 cuMemcpyDtoD_v2 cuMemcpyDtoDAsync_v2 cuGetErrorName
cuGetErrorString cuCtxGetDevice cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRelease
cuDevicePrimaryCtxSetFlags cuDevicePrimaryCtxGetState cuDevicePrimaryCtxReset cuStreamCreate
cuStreamQuery cuStreamSynchronize cuStreamDestroy_v2 cuStreamAddCallback cuStreamWaitEvent
cuEventCreate cuEventDestroy_v2 cuEventSynchronize cuEventQuery cuEventRecord cuLaunchKernel
cuLinkCreate cuLinkAddData cuLinkComplete cuLinkDestroy cuModuleLoadData cuModuleUnload
cuModuleGetFunction cuModuleGetGlobal cuTexObjectCreate cuTexObjectDestroy cuGLGetDevices_v2
cuGraphicsGLRegisterImage cuGraphicsUnregisterResource cuGraphicsMapResources
cuGraphicsUnmapResources cuGraphicsSubResourceGetMappedArray
cuGraphicsResourceGetMappedPointer_v2 cuDeviceGetUuid cuDeviceGetUuid_v2 cuImportExternalMemory
cuDestroyExternalMemory cuExternalMemoryGetMappedBuffer cuExternalMemoryGetMappedMipmappedArray
cuMipmappedArrayGetLevel cuMipmappedArrayDestroy cuImportExternalSemaphore
cuDestroyExternalSemaphore cuSignalExternalSemaphoresAsync cuWaitExternalSemaphoresAsync
cuArrayCreate_v2 cuArray3DCreate_v2 cuArrayDestroy'''.split()

# numba/cuda/cudadrv/drvapi.py API_PROTOTYPES (resolved by base name through the driver).
NUMBA = '''cuInit cuDriverGetVersion cuDeviceGetCount cuDeviceGet cuDeviceGetName
cuDeviceGetAttribute cuDeviceComputeCapability cuDevicePrimaryCtxGetState
cuDevicePrimaryCtxRelease cuDevicePrimaryCtxReset cuDevicePrimaryCtxRetain
cuDevicePrimaryCtxSetFlags cuCtxCreate cuCtxGetDevice cuCtxGetCurrent cuCtxPushCurrent
cuCtxPopCurrent cuCtxDestroy cuModuleLoadDataEx cuModuleUnload cuModuleGetFunction
cuModuleGetGlobal cuFuncSetCacheConfig cuMemAlloc cuMemAllocManaged cuMemsetD8 cuMemsetD8Async
cuMemcpyHtoD cuMemcpyHtoDAsync cuMemcpyDtoD cuMemcpyDtoDAsync cuMemcpyDtoH cuMemcpyDtoHAsync
cuMemFree cuStreamCreate cuStreamDestroy cuStreamSynchronize cuStreamAddCallback cuLaunchKernel
cuLaunchCooperativeKernel cuMemHostAlloc cuMemFreeHost cuMemHostRegister cuMemHostUnregister
cuMemGetInfo cuMemAllocHost cuMemHostGetDevicePointer cuMemGetAddressRange cuEventCreate
cuEventDestroy cuEventRecord cuEventSynchronize cuEventQuery cuEventElapsedTime cuStreamWaitEvent
cuPointerGetAttribute cuIpcGetMemHandle cuIpcOpenMemHandle cuIpcCloseMemHandle
cuIpcGetEventHandle cuIpcOpenEventHandle cuLinkCreate cuLinkAddData cuLinkAddFile
cuLinkComplete cuLinkDestroy cuCtxSynchronize cuFuncGetAttribute
cuOccupancyMaxActiveBlocksPerMultiprocessor cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
cuOccupancyMaxPotentialBlockSize cuOccupancyMaxPotentialBlockSizeWithFlags cuGetErrorString
cuGetErrorName cuDeviceGetUuid cuProfilerStart cuProfilerStop cuMemcpy2D cuMemcpy3D
cuDeviceCanAccessPeer cuCtxEnablePeerAccess cuMemcpyPeer cuMemcpyPeerAsync'''.split()


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True,
                         check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if ln.split()[1:2] in (['T'], ['W'])}


def main():
    rt = sanitizer_runtime()
    if rt and rt not in os.environ.get('LD_PRELOAD', ''):
        # This process loads gpusim's (instrumented) libcuda itself: the ASan runtime first.
        os.execve(sys.executable, [sys.executable] + sys.argv, preload_env(sim=True))
    t = Tap()
    p = env_paths()
    libpath = os.path.join(p['GS_SIM_DIR'], 'libcuda.so.1')
    cuda = exported(libpath)
    root = p['GS_SOURCE_ROOT']
    with open(os.path.join(root, 'src', 'sim', 'cuda-api.def')) as f:
        text = f.read()
    rows = [(s, b, int(v), int(z), c) for s, b, v, z, c in
            re.findall(r'^X\((\w+), "(\w+)", (\d+), (\d), (\w+)\)', text, re.M)]
    table = {r[0] for r in rows}
    hidden = re.findall(r'^XH\((\w+), "(\w+)"', text, re.M)
    t.ok(len(table) > 650, f'{len(table)} entry points in the table')
    t.is_eq(sorted(cuda - table), [], 'every exported CUDA symbol is in the table')
    t.is_eq(sorted(table - cuda), [], 'every table entry is exported')
    t.ok(len(hidden) >= 1, 'table-only (XH) entries exist')
    t.is_eq(sorted(n for pair in hidden for n in pair if n in cuda), [],
            'table-only entries (the modelled private interface) are not exported')

    facts = set()
    with open(os.path.join(root, 'tools', 'cuda-api', 'rows-12.6.txt')) as f:
        for ln in f:
            s, b, v, z = ln.split()
            if s != 'cuWGLGetDevice':  # Windows only
                facts.add((s, b, int(v), int(z)))
    have = {(s, b, v, z) for s, b, v, z, _ in rows}
    t.is_eq(sorted(facts - have), [], f'all {len(facts)} (symbol, base, version) facts of the '
            'CUDA 12.6 headers are rows')
    t.is_eq(sorted(n for n in FFMPEG if n not in cuda), [], 'every function FFmpeg loads')

    lib = ctypes.CDLL(libpath)
    gpa = lib.cuGetProcAddress_v2
    gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                    ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
    gpa.restype = ctypes.c_int
    libdl = ctypes.CDLL(None)
    dlsym = libdl.dlsym
    dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    dlsym.restype = ctypes.c_void_p

    def resolve(name, ver, flags):
        fn = ctypes.c_void_p()
        st = ctypes.c_int(-1)
        r = gpa(name.encode(), ctypes.byref(fn), ver, flags, ctypes.byref(st))
        return r, fn.value

    def expect(base, ver, ptsz):
        """The row cuGetProcAddress must answer: the highest version <= ver of the base name,
        the per-thread variant when asked for and present."""
        best = {}
        for s, b, v, z, _ in rows:
            if b == base and v <= ver and (z not in best or v > best[z][1]):
                best[z] = (s, v)
        if ptsz and 1 in best:
            return best[1][0]
        return best.get(0, (None,))[0]

    bad = []
    versions = sorted({r[2] for r in rows} | {12080, 12090, 13000})
    for s, b, v, z, _ in rows:
        if v == 0:
            continue
        for ver in [x for x in versions if x >= v][:3] + [13000]:
            want = expect(b, ver, z)
            r, fn = resolve(b, ver, 2 if z else 1)
            addr = lib._handle and dlsym(lib._handle, want.encode())
            if r != 0 or fn != addr:
                bad.append(f'{b}@{ver}{"/ptsz" if z else ""}: {r} (want {want})')
    t.is_eq(bad[:10], [], f'every row resolves through cuGetProcAddress_v2 at its versions '
            f'({len(bad)} wrong)')
    miss = []
    for n in NUMBA:
        r, fn = resolve(n, 12080, 0)
        if r != 0 or not fn:
            miss.append(n)
    t.is_eq(miss, [], 'every function numba resolves answers cuGetProcAddress at 12.8')
    r, fn = resolve('cuNoSuchFunction', 13000, 0)
    t.is_eq(r, 500, 'an unknown name is CUDA_ERROR_NOT_FOUND')

    nvml = exported(os.path.join(p['GS_SIM_DIR'], 'libnvidia-ml.so.1'))
    t.is_eq(sorted(s for s in nvml if not s.startswith('nvml')), [], 'NVML exports only nvml*')
    t.ok('nvmlDeviceGetProcessUtilization' in nvml and 'nvmlInit_v2' in nvml,
         'NVML entry points present')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
