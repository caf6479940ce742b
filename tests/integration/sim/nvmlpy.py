"""A small ctypes client of NVML and the CUDA driver for gpusim's Python tests: it loads the
libraries the way a program linked against them does (RTLD_GLOBAL, symbols then resolved in the
process's global scope, so an LD_PRELOAD interposer such as libvgpu sees the calls)."""
import ctypes
import os

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_UNKNOWN = 999

XID_CRITICAL = 0x8


class Memory(ctypes.Structure):
    _fields_ = [('total', ctypes.c_ulonglong), ('free', ctypes.c_ulonglong),
                ('used', ctypes.c_ulonglong)]


class Memory2(ctypes.Structure):
    _fields_ = [('version', ctypes.c_uint), ('total', ctypes.c_ulonglong),
                ('reserved', ctypes.c_ulonglong), ('free', ctypes.c_ulonglong),
                ('used', ctypes.c_ulonglong)]


class Bar1(ctypes.Structure):
    _fields_ = [('total', ctypes.c_ulonglong), ('free', ctypes.c_ulonglong),
                ('used', ctypes.c_ulonglong)]


class Value(ctypes.Union):
    _fields_ = [('dVal', ctypes.c_double), ('siVal', ctypes.c_int), ('uiVal', ctypes.c_uint),
                ('ulVal', ctypes.c_ulong), ('ullVal', ctypes.c_ulonglong),
                ('sllVal', ctypes.c_longlong), ('usVal', ctypes.c_ushort)]


class FieldValue(ctypes.Structure):
    _fields_ = [('fieldId', ctypes.c_uint), ('scopeId', ctypes.c_uint),
                ('timestamp', ctypes.c_longlong), ('latencyUsec', ctypes.c_longlong),
                ('valueType', ctypes.c_int), ('nvmlReturn', ctypes.c_int), ('value', Value)]


class EventData(ctypes.Structure):
    _fields_ = [('device', ctypes.c_void_p), ('eventType', ctypes.c_ulonglong),
                ('eventData', ctypes.c_ulonglong), ('gpuInstanceId', ctypes.c_uint),
                ('computeInstanceId', ctypes.c_uint)]


def sim_dir():
    return os.environ['GS_SIM_DIR']


def load(name):
    """dlopen gpusim's library RTLD_GLOBAL and return the process's global namespace (so
    preloaded hooks win, as for a program linked against the library)."""
    ctypes.CDLL(os.path.join(sim_dir(), name), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(None)


class Nvml:
    def __init__(self):
        self.lib = load('libnvidia-ml.so.1')
        self.lib.nvmlErrorString.restype = ctypes.c_char_p
        rc = self.lib.nvmlInit_v2()
        if rc != NVML_SUCCESS:
            raise RuntimeError(f'nvmlInit_v2: {rc}')

    def call(self, name, *args):
        return getattr(self.lib, name)(*args)

    def handle(self, index):
        h = ctypes.c_void_p()
        rc = self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(h))
        return rc, h

    def uint(self, name, h, *pre):
        v = ctypes.c_uint(0xDEADBEEF)
        rc = getattr(self.lib, name)(h, *pre, ctypes.byref(v))
        return rc, v.value

    def ull(self, name, h, *pre):
        v = ctypes.c_ulonglong(0)
        rc = getattr(self.lib, name)(h, *pre, ctypes.byref(v))
        return rc, v.value

    def string(self, name, h, size=96):
        buf = ctypes.create_string_buffer(size)
        rc = getattr(self.lib, name)(h, buf, size)
        return rc, buf.value.decode()

    def fields(self, h, ids):
        arr = (FieldValue * len(ids))()
        for k, fid in enumerate(ids):
            arr[k].fieldId = fid
        rc = self.lib.nvmlDeviceGetFieldValues(h, len(ids), arr)
        return rc, list(arr)


class Cuda:
    """Just enough of the driver API to put load on a simulated GPU."""

    def __init__(self, ordinal=0):
        self.lib = load('libcuda.so.1')
        self.check('cuInit', 0)
        dev = ctypes.c_int()
        self.check('cuDeviceGet', ctypes.byref(dev), ordinal)
        self.ctx = ctypes.c_void_p()
        self.check('cuDevicePrimaryCtxRetain', ctypes.byref(self.ctx), dev)
        self.check('cuCtxSetCurrent', self.ctx)
        self.mod = ctypes.c_void_p()
        # "gpusim" is gpusim's own test image: it declares every kernel name.
        self.check('cuModuleLoadData', ctypes.byref(self.mod), ctypes.c_char_p(b'gpusim'))

    def check(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != CUDA_SUCCESS:
            raise RuntimeError(f'{name}: {rc}')

    def kernel(self, usec):
        f = ctypes.c_void_p()
        self.check('cuModuleGetFunction', ctypes.byref(f), self.mod,
                   ctypes.c_char_p(f'sim_busy_{usec}'.encode()))
        return f

    def launch(self, f):
        return self.lib.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, None, None)

    def alloc(self, size):
        p = ctypes.c_ulonglong()
        rc = self.lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))
        return rc, p.value

    def sync(self):
        return self.lib.cuCtxSynchronize()

    def query(self):
        return self.lib.cuStreamQuery(None)
