#!/usr/bin/env python3
"""One environment prefix (STYLE.md "Configuration"; issue 19 item 6), judged from each daemon's
generated --help (the option table itself): every option's variable is GPUSLICE_*, apart from the
names another system defines (Kubernetes' NODE_NAME and KUBECONFIG, NVIDIA's NVIDIA_DRIVER_ROOT);
an option several daemons share has the same variable in each; every variable the manifests under
deploy/ set on our containers is one an option reads. Test-harness variables (meson's GS_*) are
never read by a program: no --help names one.

Before this test 45 options read GS_* (webhook, extender, device plugin, GS_LOG_LEVEL in three
daemons) and the kubelet plugin's --state-dir read GPUSLICE_STATE_DIR, the standalone state
folder's name: it failed."""
import glob
import os
import re
import subprocess
import sys

import yaml
from gstest import Tap

DAEMONS = ('GS_PLUGIN', 'GS_WEBHOOK', 'GS_MONITOR', 'GS_EXTENDER', 'GS_DEVICE_PLUGIN')
FOREIGN = {'NODE_NAME', 'KUBECONFIG', 'NVIDIA_DRIVER_ROOT'}
# Shared flags whose variable must be the same everywhere.
SAME = {'node-name', 'kubeconfig', 'driver-name', 'host-dir', 'vgpu-lib', 'sysfs-root',
        'driver-root', 'healthcheck-port', 'metrics-addr', 'kube-qps', 'kube-burst', 'log-level',
        'health-nonfatal-xids', 'health-ignore-xids', 'health-clear-dir'}
# Shared flag names that mean a different thing per daemon (its own listener, file, folder).
PER_DAEMON = {'listen', 'config', 'tls-cert-file', 'tls-key-file', 'cert-check-interval',
              'state-dir', 'resync-interval', 'api-timeout', 'max-connections', 'resource-name',
              'tls-min-version', 'probe-listen', 'idle-timeout', 'max-connections-per-client',
              'header-timeout', 'probe-max-connections'}


def options(binary):
    """{flag: env or None} from --help: one block per option, starting '  --flag'."""
    r = subprocess.run([binary, '--help'], capture_output=True, text=True, timeout=30)
    text = r.stdout + r.stderr
    out = {}
    blocks = re.split(r'^(?=\s+--[a-z0-9])', text, flags=re.M)
    for b in blocks:
        m = re.match(r'\s+--([a-z0-9-]+)', b)
        if not m:
            continue
        e = re.search(r'\[env ([A-Za-z0-9_]+)\]', b)
        out[m.group(1)] = e.group(1) if e else None
    return out


def main():
    t = Tap()
    tables = {}
    for var in DAEMONS:
        path = os.environ[var]
        name = os.path.basename(path)
        opts = options(path)
        tables[name] = opts
        t.ok(len(opts) >= 5, f'{name} --help lists {len(opts)} options')
        bad = sorted(f'--{f}: {e}' for f, e in opts.items()
                     if e and not e.startswith('GPUSLICE_') and e not in FOREIGN)
        t.ok(not bad, f'{name}: every option variable is GPUSLICE_* (or Kubernetes/NVIDIA\'s own)',
             diag='\n'.join(bad))
        harness = sorted(e for e in opts.values() if e and e.startswith('GS_'))
        t.ok(not harness, f'{name}: no option reads a test-harness GS_* variable', diag=harness)

    seen = {}
    for d, opts in tables.items():
        for f, e in opts.items():
            seen.setdefault(f, {})[d] = e
    for f, per in sorted(seen.items()):
        if len(per) < 2 or not any(per.values()):
            continue  # one daemon's, or built in (--help, --version, --print-config)
        if f in SAME:
            envs = set(per.values())
            t.ok(len(envs) == 1, f'--{f} reads the same variable in every daemon ({", ".join(sorted(str(e) for e in envs))})',
                 diag=per)
        else:
            t.ok(f in PER_DAEMON, f'--{f}, in {len(per)} daemons, is placed (same variable, or '
                 'per-daemon meaning)', diag=per)
    # The same variable never names two different options (e.g. a per-daemon state folder
    # and the standalone one).
    owners = {}
    for d, opts in tables.items():
        for f, e in opts.items():
            if e:
                owners.setdefault(e, set()).add(f)
    clash = sorted(f'{e}: {sorted(fs)}' for e, fs in owners.items() if len(fs) > 1
                   and not fs <= {'kube-qps', 'kube-api-qps'})
    t.ok(not clash, 'no variable names two different options', diag='\n'.join(clash))

    known = {e for opts in tables.values() for e in opts.values() if e}
    root = os.environ['GS_SOURCE_ROOT']
    unknown = []
    n = 0
    for f in sorted(glob.glob(os.path.join(root, 'deploy', '**', '*.yaml'), recursive=True)):
        try:
            docs = list(yaml.safe_load_all(open(f)))
        except yaml.YAMLError:
            continue

        def walk(o):
            nonlocal n
            if isinstance(o, dict):
                if 'image' in o and isinstance(o.get('env'), list) and 'gpuslice' in str(o['image']):
                    for e in o['env']:
                        name = e.get('name', '') if isinstance(e, dict) else ''
                        if name.startswith(('GPUSLICE_', 'GS_')):
                            n += 1
                            if name not in known:
                                unknown.append(f'{os.path.relpath(f, root)}: {name}')
                for v in o.values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        for d in docs:
            walk(d)
    t.ok(not unknown, f'the {n} GPUSLICE_/GS_ variables the manifests set are read by an option',
         diag='\n'.join(unknown))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
