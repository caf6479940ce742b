#!/usr/bin/env python3
"""Module boundaries, judged from the built binaries: the standalone CLI does not link the kubelet
plugin (no gRPC, protobuf or HTTP server libraries among its DT_NEEDED entries), while the plugin
does (so the check below would see those libraries if the CLI pulled them in). NVML is never
linked by any program: it is opened by soname at run time (src/gpu/nvml.c)."""
import os
import re
import shutil
import subprocess
import sys

from gstest import Tap

FORBIDDEN_IN_CLI = ('libmicrohttpd', 'libprotobuf-c', 'libgrpc', 'libgpr')


def needed(t, path):
    r = subprocess.run(['readelf', '-d', path], capture_output=True, text=True)
    if not t.ok(r.returncode == 0, f'readelf -d {os.path.basename(path)}', diag=r.stderr):
        return []
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', r.stdout)


def main():
    t = Tap()
    if not shutil.which('readelf'):
        t.skip('DT_NEEDED checks', 'readelf not installed (binutils)')
        return t.done()
    cli = os.environ['GS_GPUSLICE']
    plugin = os.environ['GS_PLUGIN']
    smi = os.environ['GS_GPUSIM_SMI']

    cli_needed = needed(t, cli)
    t.ok(len(cli_needed) > 0, 'gpuslice has DT_NEEDED entries (the parse works)', diag=cli_needed)
    for lib in FORBIDDEN_IN_CLI:
        t.ok(not any(n.startswith(lib) for n in cli_needed), f'gpuslice does not need {lib}',
             diag=cli_needed)

    plugin_needed = needed(t, plugin)
    t.ok(any(n.startswith('libprotobuf-c') for n in plugin_needed),
         'the kubelet plugin does need libprotobuf-c (the check sees such libraries)',
         diag=plugin_needed)
    t.ok(any(n.startswith('libmicrohttpd') for n in plugin_needed),
         'the kubelet plugin does need libmicrohttpd', diag=plugin_needed)

    for name, path in (('gpuslice', cli), ('gpuslice-kubelet-plugin', plugin),
                       ('gpusim-smi', smi)):
        deps = needed(t, path)
        t.ok(not any(n.startswith('libnvidia-ml') or n.startswith('libcuda') for n in deps),
             f'{name} links neither libnvidia-ml nor libcuda (opened at run time)', diag=deps)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
