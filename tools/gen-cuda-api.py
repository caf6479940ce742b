#!/usr/bin/env python3
"""Generate src/sim/cuda-api.def, gpusim's one table of the public CUDA driver API (run once; the
output is checked in and edited by hand afterwards: a row's category changes from a stub to M
when gpusim models the function).

Inputs (facts of the public headers, see docs/internals/gpusim.md "Where the list comes from"):
  rows     'symbol base version ptsz' lines: every PFN_<base>_v<version>[_ptds|_ptsz] typedef of
           cudaTypedefs.h / cudaGLTypedefs.h / cudaProfilerTypedefs.h (CUDA 12.6.3) matched, in
           version order, to the symbols cuda.h declares for that base (preprocessed with and
           without __CUDA_API_VERSION_INTERNAL and CUDA_API_PER_THREAD_DEFAULT_STREAM);
  modelled the symbols gpusim's libcuda defines in C (nm -D of the build);
  ADDED    below: what CUDA 12.8 and 13.x add, and the EGL/VDPAU headers (cudaEGL.h,
           cudaVDPAU.h) that the parsed toolkit copy lacked.
usage: gen-cuda-api.py rows.txt modelled.txt > src/sim/cuda-api.def
"""
import sys

ADDED = [
    # 12.4 functions the 12.6 typedef header lists without a PFN
    ('cuModuleGetFunctionCount', 'cuModuleGetFunctionCount', 12040, 0),
    ('cuModuleEnumerateFunctions', 'cuModuleEnumerateFunctions', 12040, 0),
    ('cuLibraryGetKernelCount', 'cuLibraryGetKernelCount', 12040, 0),
    ('cuLibraryEnumerateKernels', 'cuLibraryEnumerateKernels', 12040, 0),
    ('cuGetProcAddress_v2_ptsz', 'cuGetProcAddress', 12000, 1),
    # cuda.h 12.0+: cuGraphInstantiate is cuGraphInstantiateWithFlags
    ('cuGraphInstantiateWithFlags', 'cuGraphInstantiate', 12000, 0),
    # CUDA 12.8
    ('cuEventElapsedTime_v2', 'cuEventElapsedTime', 12080, 0),
    ('cuMemcpyBatchAsync', 'cuMemcpyBatchAsync', 12080, 0),
    ('cuMemcpyBatchAsync_ptsz', 'cuMemcpyBatchAsync', 12080, 1),
    ('cuMemcpy3DBatchAsync', 'cuMemcpy3DBatchAsync', 12080, 0),
    ('cuMemcpy3DBatchAsync_ptsz', 'cuMemcpy3DBatchAsync', 12080, 1),
    ('cuMemBatchDecompressAsync', 'cuMemBatchDecompressAsync', 12060, 0),
    ('cuMemBatchDecompressAsync_ptsz', 'cuMemBatchDecompressAsync', 12060, 1),
    ('cuStreamGetDevice', 'cuStreamGetDevice', 12080, 0),
    ('cuStreamGetDevice_ptsz', 'cuStreamGetDevice', 12080, 1),
    ('cuTensorMapEncodeIm2colWide', 'cuTensorMapEncodeIm2colWide', 12080, 0),
    ('cuCheckpointProcessGetRestoreThreadId', 'cuCheckpointProcessGetRestoreThreadId', 12080, 0),
    ('cuCheckpointProcessGetState', 'cuCheckpointProcessGetState', 12080, 0),
    ('cuCheckpointProcessLock', 'cuCheckpointProcessLock', 12080, 0),
    ('cuCheckpointProcessCheckpoint', 'cuCheckpointProcessCheckpoint', 12080, 0),
    ('cuCheckpointProcessRestore', 'cuCheckpointProcessRestore', 12080, 0),
    ('cuCheckpointProcessUnlock', 'cuCheckpointProcessUnlock', 12080, 0),
    ('cuLogsRegisterCallback', 'cuLogsRegisterCallback', 12090, 0),
    ('cuLogsUnregisterCallback', 'cuLogsUnregisterCallback', 12090, 0),
    ('cuLogsCurrent', 'cuLogsCurrent', 12090, 0),
    ('cuLogsDumpToFile', 'cuLogsDumpToFile', 12090, 0),
    ('cuLogsDumpToMemory', 'cuLogsDumpToMemory', 12090, 0),
    # CUDA 12.9 (cuLogs* above too: PFN_..._v12090 in 13.0's cudaTypedefs.h)
    ('cuGreenCtxGetId', 'cuGreenCtxGetId', 12090, 0),
    # CUDA 13.0
    ('cuCtxGetDevice_v2', 'cuCtxGetDevice', 13000, 0),
    ('cuCtxSynchronize_v2', 'cuCtxSynchronize', 13000, 0),
    ('cuMemcpyBatchAsync_v2', 'cuMemcpyBatchAsync', 13000, 0),
    ('cuMemcpyBatchAsync_v2_ptsz', 'cuMemcpyBatchAsync', 13000, 1),
    ('cuMemcpy3DBatchAsync_v2', 'cuMemcpy3DBatchAsync', 13000, 0),
    ('cuMemcpy3DBatchAsync_v2_ptsz', 'cuMemcpy3DBatchAsync', 13000, 1),
    ('cuMemGetDefaultMemPool', 'cuMemGetDefaultMemPool', 13000, 0),
    ('cuMemGetMemPool', 'cuMemGetMemPool', 13000, 0),
    ('cuMemSetMemPool', 'cuMemSetMemPool', 13000, 0),
    ('cuDeviceGetHostAtomicCapabilities', 'cuDeviceGetHostAtomicCapabilities', 13000, 0),
    ('cuDeviceGetP2PAtomicCapabilities', 'cuDeviceGetP2PAtomicCapabilities', 13000, 0),
    ('cuMemPrefetchBatchAsync', 'cuMemPrefetchBatchAsync', 13000, 0),
    ('cuMemPrefetchBatchAsync_ptsz', 'cuMemPrefetchBatchAsync', 13000, 1),
    ('cuMemDiscardBatchAsync', 'cuMemDiscardBatchAsync', 13000, 0),
    ('cuMemDiscardBatchAsync_ptsz', 'cuMemDiscardBatchAsync', 13000, 1),
    ('cuMemDiscardAndPrefetchBatchAsync', 'cuMemDiscardAndPrefetchBatchAsync', 13000, 0),
    ('cuMemDiscardAndPrefetchBatchAsync_ptsz', 'cuMemDiscardAndPrefetchBatchAsync', 13000, 1),
    # after 13.0 (absent from CUDA 13.0's headers, test_sim_exports): 13.1 assumed
    ('cuGraphNodeGetContainingGraph', 'cuGraphNodeGetContainingGraph', 13010, 0),
    ('cuGraphNodeGetLocalId', 'cuGraphNodeGetLocalId', 13010, 0),
    ('cuGraphNodeGetToolsId', 'cuGraphNodeGetToolsId', 13010, 0),
    ('cuGraphGetId', 'cuGraphGetId', 13010, 0),
    ('cuGraphExecGetId', 'cuGraphExecGetId', 13010, 0),
    ('cuStreamGetDevResource', 'cuStreamGetDevResource', 13010, 0),
    ('cuStreamGetDevResource_ptsz', 'cuStreamGetDevResource', 13010, 1),
    ('cuLaunchHostFunc_v2', 'cuLaunchHostFunc', 13010, 0),
    ('cuLaunchHostFunc_v2_ptsz', 'cuLaunchHostFunc', 13010, 1),
    # cudaEGL.h
    ('cuGraphicsEGLRegisterImage', 'cuGraphicsEGLRegisterImage', 7000, 0),
    ('cuEGLStreamConsumerConnect', 'cuEGLStreamConsumerConnect', 7000, 0),
    ('cuEGLStreamConsumerConnectWithFlags', 'cuEGLStreamConsumerConnectWithFlags', 8000, 0),
    ('cuEGLStreamConsumerDisconnect', 'cuEGLStreamConsumerDisconnect', 7000, 0),
    ('cuEGLStreamConsumerAcquireFrame', 'cuEGLStreamConsumerAcquireFrame', 7000, 0),
    ('cuEGLStreamConsumerReleaseFrame', 'cuEGLStreamConsumerReleaseFrame', 7000, 0),
    ('cuEGLStreamProducerConnect', 'cuEGLStreamProducerConnect', 7000, 0),
    ('cuEGLStreamProducerDisconnect', 'cuEGLStreamProducerDisconnect', 7000, 0),
    ('cuEGLStreamProducerPresentFrame', 'cuEGLStreamProducerPresentFrame', 7000, 0),
    ('cuEGLStreamProducerReturnFrame', 'cuEGLStreamProducerReturnFrame', 7000, 0),
    ('cuGraphicsResourceGetMappedEglFrame', 'cuGraphicsResourceGetMappedEglFrame', 7000, 0),
    ('cuEventCreateFromEGLSync', 'cuEventCreateFromEGLSync', 9000, 0),
    # cudaVDPAU.h
    ('cuVDPAUGetDevice', 'cuVDPAUGetDevice', 3010, 0),
    ('cuVDPAUCtxCreate', 'cuVDPAUCtxCreate', 3010, 0),
    ('cuVDPAUCtxCreate_v2', 'cuVDPAUCtxCreate', 3020, 0),
    ('cuGraphicsVDPAURegisterVideoSurface', 'cuGraphicsVDPAURegisterVideoSurface', 3010, 0),
    ('cuGraphicsVDPAURegisterOutputSurface', 'cuGraphicsVDPAURegisterOutputSurface', 3010, 0),
]

# No resource can be registered on a headless GPU: the resource calls see an invalid handle.
RESOURCE = {'cuGraphicsUnregisterResource', 'cuGraphicsSubResourceGetMappedArray',
            'cuGraphicsResourceGetMappedMipmappedArray', 'cuGraphicsResourceGetMappedPointer',
            'cuGraphicsResourceGetMappedPointer_v2', 'cuGraphicsResourceSetMapFlags',
            'cuGraphicsResourceSetMapFlags_v2', 'cuGraphicsMapResources',
            'cuGraphicsMapResources_ptsz', 'cuGraphicsUnmapResources',
            'cuGraphicsUnmapResources_ptsz', 'cuGraphicsResourceGetMappedEglFrame'}


def category(sym, modelled):
    if sym in modelled:
        return 'M'
    if sym in RESOURCE:
        return 'RES'
    if sym.startswith(('cuGL', 'cuWGL', 'cuGraphicsGL', 'cuVDPAU', 'cuGraphicsVDPAU', 'cuEGL',
                       'cuGraphicsEGL', 'cuEventCreateFromEGLSync')):
        return 'GFX'
    return 'NS'


def main():
    rows = [tuple(l.split()) for l in open(sys.argv[1]) if l.strip()]
    rows = [(s, b, int(v), int(p)) for s, b, v, p in rows if s != 'cuWGLGetDevice']
    modelled = set(open(sys.argv[2]).read().split())
    have = {(r[0], r[1]) for r in rows}
    rows += [r for r in ADDED if (r[0], r[1]) not in have]
    rows.sort(key=lambda r: (r[1].lower(), r[2], r[3], r[0]))
    print('/* SPDX-License-Identifier: Apache-2.0 */')
    print('/*')
    print(' * The public CUDA driver API, once: X(symbol, "base name", version, ptsz, category).')
    print(' * Generated by tools/gen-cuda-api.py from the CUDA headers\' facts (see')
    print(' * docs/internals/gpusim.md), then maintained by hand. `version` is the CUDA version from')
    print(' * which cuGetProcAddress returns `symbol` for the base name; ptsz = 1 for the')
    print(' * per-thread-default-stream variant. Category: M = modelled (defined in C); NS = not')
    print(' * modelled, answers CUDA_ERROR_NOT_SUPPORTED; GFX = graphics interop (GL, VDPAU, EGL):')
    print(' * gpusim is headless, CUDA_ERROR_INVALID_GRAPHICS_CONTEXT; RES = a graphics resource call,')
    print(' * no resource can exist: CUDA_ERROR_INVALID_HANDLE. Every row is exported and in the')
    print(' * cuGetProcAddress table. XH rows are table-only (never exported).')
    print(' */')
    for s, b, v, p in rows:
        print(f'X({s}, "{b}", {v}, {p}, {category(s, modelled)})')
    print('X(gpusimSetKernelCost, "gpusimSetKernelCost", 0, 0, M)')
    print('X(gpusimGetKernelCost, "gpusimGetKernelCost", 0, 0, M)')
    print('XH(gpusim_internal_primary_retain, "gpusimInternalPrimaryCtxRetain", 0, 0, M)')


main()
