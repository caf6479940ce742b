"""Shared by the device plugin tests: the device plugin API compiled with grpc_tools, a kubelet
emulator (Registration service on <dir>/kubelet.sock) and the plugin process on gpusim."""
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

sys.path.insert(0, os.path.join(os.environ['GS_SOURCE_ROOT'], 'tests', 'integration', 'extender'))
from extlib import kubeconfig  # noqa: E402

import grpc  # noqa: E402


def protos():
    src = os.path.join(os.environ['GS_SOURCE_ROOT'], 'proto', 'deviceplugin', 'v1beta1')
    out = tempfile.mkdtemp(prefix='gs-dp-proto-')
    from grpc_tools import protoc
    if protoc.main(['protoc', f'-I{src}', f'--python_out={out}', f'--grpc_python_out={out}',
                    os.path.join(src, 'api.proto')]) != 0:
        raise RuntimeError('grpc_tools.protoc failed')
    sys.path.insert(0, out)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


pb, pbg = protos()


class Kubelet(pbg.RegistrationServicer):
    """kubelet's Registration service on <dir>/kubelet.sock."""

    def __init__(self, d):
        self.dir = d
        self.requests = []
        self.cond = threading.Condition()
        self.server = None

    def Register(self, request, context):
        with self.cond:
            self.requests.append(request)
            self.cond.notify_all()
        return pb.Empty()

    def start(self):
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pbg.add_RegistrationServicer_to_server(self, self.server)
        self.server.add_insecure_port(f'unix:{self.dir}/kubelet.sock')
        self.server.start()

    def stop(self):
        self.server.stop(0).wait()

    def wait(self, n, timeout=20):
        end = time.time() + timeout
        with self.cond:
            while len(self.requests) < n and time.time() < end:
                self.cond.wait(0.2)
            return len(self.requests) >= n

    def plugin(self, endpoint):
        ch = grpc.insecure_channel(f'unix:{self.dir}/{endpoint}')
        return ch, pbg.DevicePluginStub(ch)



class Plugin:
    """gpuslice-device-plugin on gpusim `preset`, talking to `api`, in `tmp`."""

    def __init__(self, api, tmp, node, preset='t4', extra=()):
        self.dirs = {k: os.path.join(tmp, k) for k in ('plugins', 'host', 'state')}
        for d in self.dirs.values():
            os.makedirs(d, exist_ok=True)
        self.kubelet = Kubelet(self.dirs['plugins'])
        self.kubelet.start()
        kc = kubeconfig(api.url, os.path.join(tmp, 'kubeconfig'))
        self.sim_env = dict(os.environ)
        self.sim_env['LD_LIBRARY_PATH'] = os.environ['GS_SIM_DIR']
        self.sim_env['GPUSIM_PRESET'] = preset
        self.sim_env['GPUSIM_STATE'] = os.path.join(tmp, 'gpusim.state')
        for k in ('KUBECONFIG', 'LD_PRELOAD', 'GPUSLICE_LIMITS_DIR', 'CUDA_VISIBLE_DEVICES'):
            self.sim_env.pop(k, None)
        self.log = open(os.path.join(tmp, 'plugin.log'), 'w+')
        self.proc = subprocess.Popen(
            [os.environ['GS_DEVICE_PLUGIN'], '--node-name', node, '--kubeconfig', kc,
             '--device-plugin-dir', self.dirs['plugins'], '--host-dir', self.dirs['host'],
             '--state-dir', self.dirs['state'], '--sysfs-root', os.path.join(tmp, 'sys'),
             '--vgpu-lib', os.environ['GS_VGPU_LIB'], *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.sim_env)

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.kubelet.stop()
        return rc
