#!/usr/bin/env python3
"""Every entry point of the CUDA driver header that creates, destroys or switches a context or
allocates device memory is hooked by libvgpu, or listed below as harmless with its reason
(issue 31 item 5). The headers are the CUDA 13.0 toolkit's cuda.h and the interop headers beside
it, cudaGL.h, cudaVDPAU.h, cudaEGL.h (CUDA_HOME or /usr/local/cuda; CI has them; a clone without
them skips with a message). Symbol names come from the
header itself: every `CUresult CUDAAPI cuX(` declaration (its __CUDA_API_VERSION_INTERNAL section
declares the old unversioned names the driver still exports) plus the target of every
`#define cuX cuX_vN` (and its _ptds/_ptsz variants). Judged from outside: libvgpu.so's dynamic
symbol table, and, under LD_PRELOAD over gpusim, what cuGetProcAddress answers for every
(name, version) row of gpusim's table that leads to one of those symbols."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gstest import Tap, env_paths, skip_unbuilt  # noqa: E402
from vgpulib import World, have_sim  # noqa: E402

# What selects an entry point: contexts created/destroyed/switched, arrays created, device
# memory allocated or mapped into the process, memory-bearing graphs instantiated.
SELECT = [
    r'^cu(Ctx|DevicePrimaryCtx|GreenCtx)\w*(Create|Destroy|Retain|Release|Reset|PushCurrent'
    r'|PopCurrent|SetCurrent|Attach|Detach)(_v\d+)?$',
    r'^cuCtxFromGreenCtx$',
    r'^cu(GL|VDPAU|EGL)\w*Ctx\w*Create(_v\d+)?$',
    r'^cu(Mipmapped)?Array(3D)?Create(_v\d+)?$',
    r'Alloc',
    r'^cuMem(Create|Map|Release|RetainAllocationHandle|PoolCreate|PoolDestroy|PoolTrimTo'
    r'|PoolSetAttribute|Free|FreeAsync|ImportFromShareableHandle|PoolImportPointer'
    r'|HostRegister)(_v\d+)?(_ptsz)?$',
    r'^cuIpcOpenMemHandle(_v\d+)?$',
    r'^cuImportExternalMemory$',
    r'^cuExternalMemoryGetMapped',
    r'^cuGraph(Instantiate\w*|AddNode(_v\d+)?|Launch|ExecDestroy|Destroy)(_ptsz)?$',
    r'^cuDeviceGraphMemTrim$',
    r'^cuModuleLoad\w*$',
    r'^cuLibraryLoad\w*$',
    r'^cuCtxSetLimit$',
    r'^cuStreamBeginCapture\w*$',
]

# Selected but not hooked, each with the reason it cannot take device memory past the limit.
HARMLESS = {
    # contexts
    'cuCtxAttach': 'deprecated; raises the use count of the current context, creates nothing',
    'cuCtxDetach': 'deprecated; drops a use count: at zero the context goes and its memory with '
                   'it, charged back at the next first sight (never more usage)',
    'cuGreenCtxCreate': 'a green context partitions SMs of an existing primary context '
                        '(CUDA 12.4 green contexts); gpusim answers NOT_SUPPORTED, so no test can '
                        'show a charge: not hooked yet (gap, issue 31)',
    'cuGreenCtxDestroy': 'see cuGreenCtxCreate',
    'cuGreenCtxStreamCreate': 'a stream of a green context (streams are not charged anywhere)',
    'cuCtxFromGreenCtx': 'converts a green context to a CUcontext handle, allocates nothing; its '
                         'use is sighted by cuCtxSetCurrent/cuCtxPushCurrent',
    # host memory
    'cuMemAllocHost': 'host (pinned) memory, not device memory',
    'cuMemAllocHost_v2': 'host (pinned) memory, not device memory',
    'cuMemHostAlloc': 'host (pinned) memory, not device memory',
    'cuMemHostRegister': 'pins existing host memory, no device memory',
    'cuMemHostRegister_v2': 'pins existing host memory, no device memory',
    # getters that match the pattern
    'cuGraphMemAllocNodeGetParams': 'reads a node\'s parameters',
    'cuMemGetAllocationGranularity': 'a query',
    'cuMemGetAllocationPropertiesFromHandle': 'a query',
    # memory owned by another process or API: charged where it was allocated
    'cuIpcOpenMemHandle': 'maps memory another process allocated (charged to that process; gpusim '
                          'counts it there, test_ipc_usage)',
    'cuIpcOpenMemHandle_v2': 'see cuIpcOpenMemHandle',
    'cuMemImportFromShareableHandle': 'imports a physical handle another process created and '
                                      'was charged for',
    'cuMemPoolImportPointer': 'maps an allocation of an exported pool, charged to its owner',
    'cuImportExternalMemory': 'memory of another API (Vulkan, D3D) already allocated by it',
    'cuExternalMemoryGetMappedBuffer': 'maps that external memory',
    'cuExternalMemoryGetMappedMipmappedArray': 'maps that external memory',
    # graph memory: charged at instantiation/launch by the hooked entry points
    'cuGraphInstantiateWithParams': 'gap: graphs instantiated this way are not charged (gpusim '
                                    'answers NOT_SUPPORTED); their launch goes through the '
                                    'hooked cuGraphLaunch',
    'cuGraphInstantiateWithParams_ptsz': 'see cuGraphInstantiateWithParams',
    'cuGraphAddNode': 'gpusim answers NOT_SUPPORTED for generic nodes: gap for a real driver '
                      '(a CU_GRAPH_NODE_TYPE_MEM_ALLOC node through it)',
    'cuGraphAddNode_v2': 'see cuGraphAddNode',
    'cuStreamBeginCapture': 'starts a capture; a captured cuMemAllocAsync goes through its hook',
    'cuStreamBeginCapture_v2': 'see cuStreamBeginCapture',
    'cuStreamBeginCapture_ptsz': 'see cuStreamBeginCapture',
    'cuStreamBeginCapture_v2_ptsz': 'see cuStreamBeginCapture',
    'cuStreamBeginCaptureToGraph': 'see cuStreamBeginCapture',
    'cuStreamBeginCaptureToGraph_ptsz': 'see cuStreamBeginCapture',
    # modules, libraries and context limits: issue 34 (c)
    'cuModuleLoad': 'gap, issue 34 (c): module .global variables are not charged',
    'cuModuleLoadData': 'gap, issue 34 (c)',
    'cuModuleLoadDataEx': 'gap, issue 34 (c)',
    'cuModuleLoadFatBinary': 'gap, issue 34 (c)',
    'cuLibraryLoadData': 'gap, issue 34 (c)',
    'cuLibraryLoadFromFile': 'gap, issue 34 (c)',
}


HEADERS = ('cuda.h', 'cudaGL.h', 'cudaVDPAU.h', 'cudaEGL.h')


def header_path():
    for base in (os.environ.get('CUDA_HOME'), '/usr/local/cuda'):
        if base and os.path.exists(os.path.join(base, 'include', 'cuda.h')):
            return os.path.join(base, 'include', 'cuda.h')
    return None


def header_symbols(text):
    """{exported symbol: base name} for every declared entry point and its #define target."""
    declared = set(re.findall(r'CUresult\s+CUDAAPI\s+(cu\w+)\s*\(', text))
    mapping = {}
    for m in re.finditer(r'#define\s+(cu\w+)\s+(?:__CUDA_API_PT(DS|SZ)\()?(cu\w+)\)?', text):
        mapping.setdefault(m.group(1), []).append((m.group(3), m.group(2)))
    syms = {}
    for name in declared:
        syms[name] = name
        for target, pt in mapping.get(name, []):
            syms[target] = name
            if pt:
                syms[f'{target}_pt{pt.lower()}'] = name
    return syms


def selected(sym):
    return any(re.search(p, sym) for p in SELECT)


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1].split('@')[0] for line in out.splitlines()
            if len(line.split()) >= 3 and line.split()[1] in ('T', 'W', 'i')}


# Under LD_PRELOAD: for each (base name, version) row of gpusim's table whose symbol libvgpu
# hooks, cuGetProcAddress must answer libvgpu's hook of that very symbol.
PROC_CHECK = r'''
import ctypes, sys
vg = ctypes.CDLL(sys.argv[1])
cu = ctypes.CDLL('libcuda.so.1')
assert cu.cuInit(0) == 0
bad = 0
for line in sys.stdin:
    sym, base, ver = line.split()
    p = ctypes.c_void_p()
    r = cu.cuGetProcAddress(base.encode(), ctypes.byref(p), int(ver), ctypes.c_uint64(0))
    want = ctypes.cast(getattr(vg, sym), ctypes.c_void_p).value
    if r != 0 or p.value != want:
        bad += 1
        print(f'{base}@{ver}: answered {p.value} (r={r}), libvgpu hook {sym} is {want}')
print(f'checked_bad={bad}')
'''


def main():
    t = Tap()
    paths = env_paths()
    path = header_path()
    if not path:
        t.skip('header coverage', 'no CUDA toolkit header (CUDA_HOME/include/cuda.h or '
               '/usr/local/cuda/include/cuda.h); CI has one')
        return t.done()
    syms = {}
    for name in HEADERS:  # cuda.h and the interop headers beside it (contexts of their own)
        other = os.path.join(os.path.dirname(path), name)
        if os.path.exists(other):
            with open(other, errors='replace') as f:
                syms.update(header_symbols(f.read()))
    t.ok(len(syms) > 600, f'{len(syms)} exported names read from {path}')
    want = sorted(s for s in syms if selected(s))
    hooks = exported(paths['GS_VGPU_LIB'])
    for old in ('cuCtxCreate', 'cuCtxDestroy', 'cuCtxPushCurrent', 'cuCtxPopCurrent',
                'cuArrayCreate', 'cuArray3DCreate', 'cuCtxCreate_v4', 'cuMemAlloc_v2',
                'cuGLCtxCreate_v2', 'cuVDPAUCtxCreate'):
        t.ok(old in want, f'{old} is one of the header\'s context/array/memory entry points')
    missing = [s for s in want if s not in hooks and not HARMLESS.get(s)]
    t.is_eq(missing, [], f'each of the {len(want)} context/array/memory entry points is hooked '
            'or listed as harmless with a reason')
    stale = sorted(s for s, why in HARMLESS.items() if why and (s in hooks or s not in want))
    t.is_eq(stale, [], 'the harmless list names only unhooked entry points of the header')

    if not have_sim():
        skip_unbuilt(t, 'cuGetProcAddress answers', 'gpusim libcuda.so.1 not built')
        return t.done()
    table = os.path.join(paths['GS_SOURCE_ROOT'], 'src', 'sim', 'cuda-api.def')
    rows = []
    with open(table) as f:
        for m in re.finditer(r'^X\((\w+), "(\w+)", (\d+), (\d)', f.read(), re.M):
            sym, base, ver, ptsz = m.group(1), m.group(2), m.group(3), m.group(4)
            # the per-thread rows are asked with another flag: their own test (test_procaddr)
            if sym in want and sym in hooks and ptsz == '0':
                rows.append(f'{sym} {base} {ver}')
    t.ok(any(r.startswith('cuCtxCreate cuCtxCreate ') for r in rows),
         'gpusim\'s table has the old cuCtxCreate row')
    w = World()
    try:
        p = subprocess.run([sys.executable, '-c', PROC_CHECK, paths['GS_VGPU_LIB']],
                           input='\n'.join(rows) + '\n', env=w.env(), capture_output=True,
                           text=True, timeout=120)
        t.ok(p.returncode == 0 and 'checked_bad=0' in p.stdout,
             f'cuGetProcAddress answers libvgpu\'s hook for all {len(rows)} (name, version) rows '
             'of those entry points', diag=p.stdout + p.stderr)
    finally:
        w.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
