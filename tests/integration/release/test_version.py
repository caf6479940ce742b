#!/usr/bin/python3
"""Every staged binary answers --version with the build's identity (`NAME VERSION (commit
COMMIT)`: git describe of the newest v* tag at build time, else the meson project version; the
commit it was built from) and --help; the daemons (kubelet plugin, webhook) export
gpuslice_build_info{version,commit} 1 on their /metrics endpoints."""
import os
import re
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths, skip_unbuilt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'plugin'))
sys.path.insert(0, os.path.join(HERE, '..', 'webhook'))


def generated(build, name):
    """The string vcs_tag wrote into src/base/vcs-NAME.c of this build."""
    with open(os.path.join(build, 'src', 'base', f'vcs-{name}.c')) as f:
        return re.search(r'gs_vcs_' + name + r'\[\] = "(.*)";', f.read()).group(1)


def project_version(build):
    import json  # noqa: PLC0415
    with open(os.path.join(build, 'meson-info', 'intro-projectinfo.json')) as f:
        return json.load(f)['version']


def staged_binaries(build, dest):
    r = subprocess.run(['meson', 'install', '-C', build, '--destdir', dest, '--no-rebuild',
                        '--quiet'], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    bindir = os.path.join(dest, 'bin')
    return sorted(os.path.join(bindir, f) for f in os.listdir(bindir))


def check_identity(t, p, version, commit):
    src = p['GS_SOURCE_ROOT']
    t.ok(re.fullmatch(r'[0-9a-f]{12}(-dirty)?|unknown', commit),
         f'commit {commit!r}: 12 hex digits (+ -dirty), or unknown without git')
    if os.path.exists(os.path.join(src, '.git')):
        sha = commit.split('-')[0]
        r = subprocess.run(['git', '-C', src, 'cat-file', '-e', sha + '^{commit}'],
                           capture_output=True)
        t.is_eq(r.returncode, 0, f'commit {sha} is a commit of this repository')
        r = subprocess.run(['git', '-C', src, 'describe', '--tags', '--match', 'v[0-9]*'],
                           capture_output=True, text=True)
        if r.returncode == 0:
            t.ok(version.startswith(r.stdout.strip()[1:].split('-')[0]),
                 f'version {version!r} comes from git describe ({r.stdout.strip()})')
        else:
            t.is_eq(version, project_version(p['GS_BUILD_ROOT']),
                    'no v* tag: version is the meson project version')


def check_binaries(t, p, version, commit):
    with tempfile.TemporaryDirectory() as tmp:
        bins = staged_binaries(p['GS_BUILD_ROOT'], tmp)
        names = [os.path.basename(b) for b in bins]
        t.ok({'gpuslice', 'gpuslice-kubelet-plugin', 'gpuslice-webhook'} <= set(names),
             'the staged bin/ holds the CLI, the kubelet plugin and the webhook', diag=names)
        for b in bins:
            name = os.path.basename(b)
            r = subprocess.run([b, '--version'], capture_output=True, text=True, timeout=30)
            t.is_eq((r.returncode, r.stdout, r.stderr),
                    (0, f'{name} {version} (commit {commit})\n', ''), f'{name} --version')
            r = subprocess.run([b, '--help'], capture_output=True, text=True, timeout=30)
            t.ok(r.returncode == 0 and '--version' in r.stdout,
                 f'{name} --help exits 0 and lists --version', diag=r.stdout[-300:] + r.stderr)


def check_plugin_metric(t, want):
    import pluginlib as pl  # noqa: PLC0415
    if not pl.gpusim_available():
        skip_unbuilt(t, 'plugin gpuslice_build_info', 'gpusim libnvidia-ml.so.1 not built')
        return
    with pl.PluginEnv(t) as env:
        env.start(metrics=True)
        body = env.metrics()
        t.ok(want in body.splitlines(), 'kubelet plugin /metrics: ' + want, diag=body[-400:])


def check_webhook_metric(t, binary, want):
    from fakeapi import FakeAPI  # noqa: PLC0415
    from whlib import Webhook, make_cert, write_kubeconfig  # noqa: PLC0415
    with tempfile.TemporaryDirectory() as tmp, FakeAPI(token='t') as api:
        cert, key = make_cert(tmp)
        wh = Webhook(binary, cert, key, write_kubeconfig(tmp, api.url, 't'), workdir=tmp)
        try:
            _, _, body = wh.request('GET', '/metrics')
            body = body.decode()
            t.ok(want in body.splitlines(), 'webhook /metrics: ' + want, diag=body[:400])
            t.ok('# TYPE gpuslice_build_info gauge' in body, 'webhook: build_info is a gauge')
        finally:
            wh.stop()


def main():
    t = Tap()
    p = env_paths()
    version, commit = generated(p['GS_BUILD_ROOT'], 'version'), generated(p['GS_BUILD_ROOT'],
                                                                          'commit')
    t.diag(f'this build: version {version}, commit {commit}')
    check_identity(t, p, version, commit)
    t.run('binaries', check_binaries, t, p, version, commit)
    want = f'gpuslice_build_info{{version="{version}",commit="{commit}"}} 1'
    t.run('plugin metric', check_plugin_metric, t, want)
    t.run('webhook metric', check_webhook_metric, t, p['GS_WEBHOOK'], want)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
