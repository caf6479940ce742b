#!/usr/bin/python3
"""Apply a CDI device's containerEdits the way a container runtime does, then exec a program.

Run inside a private mount namespace (`unshare -rm`): the directories the edits write into
(/etc, /run, /usr/local, /var/run) get a throw-away overlay so mount targets can be created
without touching the host, then each mount is bound (read-only ones remounted ro), the env is
applied and the program is exec'd directly (so /etc/ld.so.preload applies to it and to nothing
started before).

    unshare -rm python3 cdi_exec.py --spec SPEC.json --device NAME [--device ...]
        --scratch DIR [--env K=V ...] -- PROGRAM ARGS...
"""
import argparse
import json
import os
import subprocess
import sys


def sh(*cmd):
    subprocess.run(list(cmd), check=True)


def overlay(path, scratch):
    real = os.path.realpath(path)
    tag = real.strip('/').replace('/', '_') or 'root'
    upper = os.path.join(scratch, 'ovl', tag, 'upper')
    work = os.path.join(scratch, 'ovl', tag, 'work')
    os.makedirs(upper, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    sh('mount', '-t', 'overlay', 'overlay', '-o',
       f'lowerdir={real},upperdir={upper},workdir={work}', real)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--spec', action='append', required=True)
    ap.add_argument('--device', action='append', required=True)
    ap.add_argument('--scratch', required=True)
    ap.add_argument('--env', action='append', default=[])
    ap.add_argument('cmd', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == '--' else a.cmd

    edits = []
    for path in a.spec:
        with open(path) as f:
            spec = json.load(f)
        for dev in spec['devices']:
            if dev['name'] in a.device:
                edits.append(dev['containerEdits'])
    if len(edits) != len(a.device):
        print(f'cdi_exec: devices {a.device} not all found in {a.spec}', file=sys.stderr)
        return 2

    for d in ('/etc', '/run', '/usr/local'):
        overlay(d, a.scratch)
    env = {}
    for kv in a.env:
        k, _, v = kv.partition('=')
        env[k] = v
    mounts = [m for e in edits for m in e.get('mounts', [])]
    # ld.so.preload last: once it is in place every new program preloads libvgpu.
    mounts.sort(key=lambda m: m['containerPath'] == '/etc/ld.so.preload')
    for m in mounts:
        host, target = m['hostPath'], m['containerPath']
        if os.path.isdir(host):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                open(target, 'w').close()
        # One mount(8) per edit (bind + read-only remount in the same process): nothing runs
        # after /etc/ld.so.preload is in place but the program itself.
        if 'ro' in m.get('options', []):
            sh('mount', '--bind', '-o', 'ro', host, target)
        else:
            sh('mount', '--bind', host, target)
    for e in edits:
        for kv in e.get('env', []):
            k, _, v = kv.partition('=')
            env[k] = v
    full = dict(os.environ)
    full.update(env)
    sys.stdout.flush()
    os.execve(cmd[0], cmd, full)


if __name__ == '__main__':
    sys.exit(main())
