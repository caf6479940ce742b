#!/usr/bin/env python3
"""gpusim exports the whole public driver API, exactly its table: every row of
src/sim/cuda-api.def is exported by libcuda.so.1 and the reverse; every row's base name resolves
through cuGetProcAddress_v2 at its version (and later ones) to that very symbol; the names the
CUDA headers declare (tools/cuda-api/rows-12.6.txt, the parsed header facts) and the functions
FFmpeg and numba load are all there; libnvidia-ml.so.1 exports only nvml*.

Against the CUDA 13.0 toolkit's own headers (issue 34: the 12.8/13.x additions were listed by
hand), read where installed ($CUDA_HOME or /usr/local/cuda; CI has them, a clone without them
skips with a message): every name cuda.h/cudaGL.h/cudaEGL.h/cudaVDPAU.h/cudaProfiler.h declare
(`CUresult CUDAAPI cuX(`, and each `#define cuX cuX_vN` target with its _ptds/_ptsz variant) is
a row; every `PFN_<base>_v<version>[_ptds|_ptsz]` typedef of their *Typedefs.h is a row's (base,
version, per-thread); and every row claiming a version up to 13.0 is one of those names."""
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


HEADERS = ('cuda.h', 'cudaGL.h', 'cudaEGL.h', 'cudaVDPAU.h', 'cudaProfiler.h')
# Rows up to 13.0 that no 13.0 header declares, with the reason they are rows all the same.
NOT_DECLARED = {
    'cuGetProcAddress_v2_ptsz': 'exported by 12.x drivers, answered for the per-thread flag; '
                                'no header declares it',
}


def header_facts(t, rows):
    inc = None
    for base in (os.environ.get('CUDA_HOME'), '/usr/local/cuda'):
        if base and os.path.exists(os.path.join(base, 'include', 'cuda.h')):
            inc = os.path.join(base, 'include')
            break
    if not inc:
        t.skip('CUDA 13.0 header facts', 'no CUDA toolkit headers ($CUDA_HOME/include or '
               '/usr/local/cuda/include); CI has them')
        return
    with open(os.path.join(inc, 'cuda.h'), errors='replace') as f:
        version = re.search(r'#define\s+CUDA_VERSION\s+(\d+)', f.read())
    version = int(version.group(1)) if version else 0
    syms, pfn = set(), set()
    for name in HEADERS:
        path = os.path.join(inc, name)
        if not os.path.exists(path):
            continue
        with open(path, errors='replace') as f:
            text = f.read()
        mapping = {}
        for m in re.finditer(r'#define\s+(cu\w+)\s+(?:__CUDA_API_PT(DS|SZ)\()?(cu\w+)\)?', text):
            mapping.setdefault(m.group(1), []).append((m.group(3), m.group(2)))
        for d in re.findall(r'CUresult\s+CUDAAPI\s+(cu\w+)\s*\(', text):
            syms.add(d)
            for target, pt in mapping.get(d, []):
                syms.add(target)
                if pt:
                    syms.add(f'{target}_pt{pt.lower()}')
        tpath = os.path.join(inc, name.replace('.h', 'Typedefs.h'))
        if os.path.exists(tpath):
            with open(tpath, errors='replace') as f:
                for m in re.finditer(r'PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)', f.read()):
                    pfn.add((m.group(1), int(m.group(2)), 1 if m.group(3) else 0))
    syms = {s for s in syms if not s.startswith('cuWGL')}  # Windows only
    pfn = {p for p in pfn if not p[0].startswith('cuWGL')}
    table = {r[0] for r in rows}
    have = {(b, v, z) for _, b, v, z, _ in rows}
    t.ok(len(syms) > 600 and len(pfn) > 600,
         f'CUDA {version}: {len(syms)} names and {len(pfn)} PFN typedefs read from {inc}')
    t.is_eq(sorted(syms - table), [], f'every name the CUDA {version} headers declare is a row')
    t.is_eq(sorted(pfn - have), [], f'every (base, version, per-thread) PFN fact of CUDA '
            f'{version} is a row')
    t.is_eq(sorted(f'{s}@{v}' for s, _, v, _, c in rows
                   if 0 < v <= version and s not in syms and s not in NOT_DECLARED), [],
            f'every row claiming CUDA {version} or earlier is declared by those headers')


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
    header_facts(t, rows)

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
            if want is None:  # a row newer than the version asked: not found
                if r != 500:
                    bad.append(f'{b}@{ver}: {r} (want CUDA_ERROR_NOT_FOUND)')
                continue
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
