#!/usr/bin/python3
"""The container image, offline path (tools/image.py oci, `make image-offline`): built from the
staged tree of this build with no base image, unpacked with umoci, and every binary's --version
and --help run inside its root filesystem (chroot), so a missing library or a wrong path fails.
The paths the manifests use exist in it; it carries the copyright file of every Debian package it
took files from, gpuslice's licence and the SBOM-like package list."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from gstest import Tap, env_paths


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def in_rootfs(rootfs, argv):
    """Run argv inside rootfs: chroot when permitted (root), else the root filesystem's own
    dynamic loader with --library-path (and a check that nothing came from the host)."""
    r = run(['chroot', rootfs] + argv)
    if r.returncode != 126 and 'Operation not permitted' not in r.stderr:
        return r, 'chroot'
    loader = os.path.join(rootfs, 'lib64', 'ld-linux-x86-64.so.2')
    libs = os.path.join(rootfs, 'usr', 'lib', 'x86_64-linux-gnu')
    prog = os.path.join(rootfs, argv[0].lstrip('/'))
    listing = run([loader, '--library-path', libs, '--list', prog]).stdout
    outside = [ln for ln in listing.splitlines() if '=>' in ln and rootfs not in ln]
    if outside:
        return subprocess.CompletedProcess(argv, 127, '', 'libraries from the host: '
                                           + '; '.join(outside)), 'loader'
    return run([loader, '--library-path', libs, prog] + argv[1:]), 'loader'


def manifest_paths(src):
    """Every path of the image the manifests run or pass as a flag (/usr/bin/..., --vgpu-lib=)."""
    paths = set()
    for f in glob.glob(os.path.join(src, 'deploy', '**', '*.yaml'), recursive=True):
        if '/examples/' in f:
            continue
        with open(f) as fh:
            for d in yaml.safe_load_all(fh):
                for m in re.finditer(r"'(/usr/(?:bin|lib/gpuslice)/[^'\s]+)'|"
                                     r"=(/usr/(?:bin|lib/gpuslice)/[^'\s,]+)", repr(d)):
                    paths.add(m.group(1) or m.group(2))
    return sorted(paths)


def dockerfile_config(src):
    """ENV, WORKDIR, USER, CMD and LABEL keys of the Dockerfile's final stage."""
    with open(os.path.join(src, 'deploy', 'container', 'Dockerfile')) as f:
        text = re.sub(r'\\\n\s*', ' ', f.read())
    final = text.split('\nFROM ')[-1]
    out = {'env': [], 'labels': set()}
    for line in final.splitlines():
        word, _, rest = line.strip().partition(' ')
        if word == 'ENV':
            out['env'] += rest.split()
        elif word in ('WORKDIR', 'USER'):
            out[word.lower()] = rest.strip()
        elif word == 'CMD':
            out['cmd'] = json.loads(rest)
        elif word == 'LABEL':
            out['labels'] |= set(re.findall(r'([\w.-]+)=', rest))
    return out


def oci_config(layout, tag):
    """The image configuration blob of layout:tag."""
    def blob(digest):
        algo, hexd = digest.split(':')
        with open(os.path.join(layout, 'blobs', algo, hexd)) as f:
            return json.load(f)
    with open(os.path.join(layout, 'index.json')) as f:
        index = json.load(f)
    m = [x for x in index['manifests']
         if x.get('annotations', {}).get('org.opencontainers.image.ref.name') == tag][0]
    return blob(blob(m['digest'])['config']['digest']), m['digest']


def cyclonedx_schemas():
    d = os.environ.get('GPUSLICE_CYCLONEDX_SCHEMA_DIR') or os.path.join(
        os.environ.get('GPUSLICE_CACHE_DIR') or os.path.join(
            os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'gpuslice'),
        'cyclonedx')
    return d if os.path.isfile(os.path.join(d, 'bom-1.5.SNAPSHOT.schema.json')) else None


def check_cyclonedx(t, doc):
    d = cyclonedx_schemas()
    if d is None:
        msg = ('CycloneDX schemas absent (tools/fetch-schemas.sh, run by make deps, fetches them '
               'from the npm registry)')
        if os.environ.get('GPUSLICE_REQUIRE_REFERENCE') == '1':
            t.ok(False, 'the SBOM validates against CycloneDX 1.5', diag=msg)
        else:
            t.skip('the SBOM validates against CycloneDX 1.5', msg)
        return
    import warnings
    import jsonschema
    warnings.simplefilter('ignore', DeprecationWarning)  # RefResolver: Debian 12's jsonschema 4.10
    store = {}
    for name in ('bom-1.5.SNAPSHOT.schema.json', 'spdx.SNAPSHOT.schema.json',
                 'jsf-0.82.SNAPSHOT.schema.json'):
        with open(os.path.join(d, name)) as f:
            sch = json.load(f)
        store[name] = sch
        store['http://cyclonedx.org/schema/' + name] = sch
        if '$id' in sch:
            store[sch['$id']] = sch
    schema = store['bom-1.5.SNAPSHOT.schema.json']
    resolver = jsonschema.RefResolver(base_uri=schema.get('$id', ''), referrer=schema,
                                      store=store)
    errs = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in
            jsonschema.Draft7Validator(schema, resolver=resolver).iter_errors(doc)]
    t.is_eq(errs[:5], [], 'the SBOM (sbom.cdx.json) validates against CycloneDX 1.5')


def main():
    t = Tap()
    p = env_paths()
    if not shutil.which('umoci'):
        if os.environ.get('CI') == 'true':
            t.ok(False, 'umoci is installed (tools/deps.txt)')
        else:
            t.skip('offline image', 'umoci not installed (make deps)')
        return t.done()
    if os.environ.get('GS_SANITIZE', 'none') not in ('', 'none'):
        t.skip('offline image', 'sanitized build: the image is built from the shipped build')
        return t.done()
    src = p['GS_SOURCE_ROOT']
    with tempfile.TemporaryDirectory(prefix='gs-image-') as tmp:
        dist = os.path.join(tmp, 'dist')
        r = run(['meson', 'install', '-C', p['GS_BUILD_ROOT'], '--destdir', dist, '--no-rebuild',
                 '--quiet'])
        if not t.is_eq(r.returncode, 0, 'staged like make does'):
            t.diag(r.stderr)
            return t.done()
        layout = os.path.join(tmp, 'oci')
        r = run([sys.executable, os.path.join(src, 'tools', 'image.py'), 'oci', '--dist', dist,
                 '--layout', layout, '--tag', 'test'])
        if not t.is_eq(r.returncode, 0, 'tools/image.py oci builds the image from dist/'):
            t.diag(r.stdout + r.stderr)
            return t.done()
        with open(os.path.join(layout, 'index.json')) as f:
            index = json.load(f)
        t.is_eq([m['annotations']['org.opencontainers.image.ref.name']
                 for m in index['manifests']], ['test'], 'one OCI manifest, tagged')
        bundle = os.path.join(tmp, 'bundle')
        r = run(['umoci', 'unpack', '--image', f'{layout}:test', bundle])
        if not t.is_eq(r.returncode, 0, 'umoci unpacks it'):
            t.diag(r.stderr)
            return t.done()
        rootfs = os.path.join(bundle, 'rootfs')
        with open(os.path.join(bundle, 'config.json')) as f:
            t.ok('PATH=/usr/bin' in json.load(f)['process']['env'], 'image env PATH=/usr/bin')

        for path in manifest_paths(src):
            t.ok(os.path.exists(os.path.join(rootfs, path.lstrip('/'))),
                 f'{path} (used by deploy/) is in the image')
        bins = sorted(os.listdir(os.path.join(dist, 'bin')))
        t.is_eq(sorted(os.listdir(os.path.join(rootfs, 'usr', 'bin'))), bins,
                'every staged binary is in /usr/bin')
        want_version = run([os.path.join(dist, 'bin', 'gpuslice'), '--version']).stdout
        ident = want_version.split(' ', 1)[1] if ' ' in want_version else ''
        for b in bins:
            r, how = in_rootfs(rootfs, ['/usr/bin/' + b, '--version'])
            t.is_eq((r.returncode, r.stdout), (0, f'{b} {ident}'),
                    f'{b} --version inside the image ({how})')
            if r.returncode:
                t.diag(r.stderr)
            r, how = in_rootfs(rootfs, ['/usr/bin/' + b, '--help'])
            t.ok(r.returncode == 0 and r.stdout, f'{b} --help inside the image ({how})',
                 diag=r.stderr[-300:])

        # Scanners (Trivy, Grype, Syft) find the distribution and its packages.
        with open(os.path.join(rootfs, 'etc/os-release')) as f:
            osr = dict(ln.split('=', 1) for ln in f.read().splitlines() if '=' in ln)
        t.is_eq((osr.get('ID'), osr.get('VERSION_ID')), ('debian', '"12"'),
                '/etc/os-release says Debian 12')
        status_d = os.path.join(rootfs, 'var/lib/dpkg/status.d')
        recs = sorted(f for f in os.listdir(status_d) if not f.endswith('.md5sums')) \
            if os.path.isdir(status_d) else []
        with open(os.path.join(rootfs, 'usr/share/gpuslice/sbom.json')) as f:
            sbom = json.load(f)
        t.is_eq(recs, sorted(x['name'] for x in sbom['packages']),
                'a dpkg status record (var/lib/dpkg/status.d) per Debian package in the image')
        bad = []
        for x in sbom['packages']:
            with open(os.path.join(status_d, x['name'])) as f:
                rec = f.read()
            if f"Package: {x['name']}\n" not in rec or f"Version: {x['version']}\n" not in rec \
                    or 'Status: install ok installed' not in rec:
                bad.append(x['name'])
        t.ok(not bad, 'each record names its package, version and installed status', diag=bad)
        with open(os.path.join(rootfs, 'usr/share/gpuslice/sbom.cdx.json')) as f:
            cdx = json.load(f)
        check_cyclonedx(t, cdx)
        purls = {c.get('purl') for c in cdx['components'] if c['type'] == 'library'}
        want_purls = {f"pkg:deb/debian/{x['name']}@{x['version']}?arch={x['architecture']}"
                      '&distro=debian-12'.replace('+', '%2B') for x in sbom['packages']}
        t.is_eq(sorted(purls), sorted(want_purls),
                'the CycloneDX SBOM has a Debian purl per package (+ percent-encoded)')

        # The offline image says what the Dockerfile says.
        cfg, digest1 = oci_config(layout, 'test')
        want = dockerfile_config(src)
        c = cfg.get('config', {})
        t.is_eq((c.get('Env'), c.get('WorkingDir'), c.get('User'), c.get('Cmd')),
                (want['env'], want.get('workdir'), want.get('user'), want.get('cmd')),
                'offline image ENV, WORKDIR, USER and CMD are the Dockerfile\'s')
        t.is_eq(sorted(c.get('Labels', {})), sorted(want['labels']),
                'offline image labels are the Dockerfile\'s')

        # Same inputs, same digest.
        layout2 = os.path.join(tmp, 'oci2')
        r = run([sys.executable, os.path.join(src, 'tools', 'image.py'), 'oci', '--dist', dist,
                 '--layout', layout2, '--tag', 'test'])
        if t.is_eq(r.returncode, 0, 'a second build of the same tree'):
            t.is_eq(oci_config(layout2, 'test')[1], digest1,
                    'two builds of the same inputs give the same image digest')
        names = [x['name'] for x in sbom['packages']]
        t.ok({'libc6', 'libjansson4', 'libgrpc29', 'libgnutls30'} <= set(names),
             'SBOM lists the Debian packages the binaries need', diag=names)
        missing = [x['name'] for x in sbom['packages']
                   if not os.path.isfile(os.path.join(rootfs, x['license_file'].lstrip('/')))]
        t.ok(not missing, f'copyright file of each of the {len(names)} packages in the image',
             diag=missing)
        versions = run(['dpkg-query', '-W', '-f', '${Package} ${Version}\\n'] + names).stdout
        t.is_eq(sorted(f"{x['name']} {x['version']}" for x in sbom['packages']),
                sorted(versions.splitlines()), 'SBOM versions are the installed packages\'')
        t.ok(os.path.isfile(os.path.join(rootfs, 'usr/share/doc/gpuslice/LICENSE')),
             "gpuslice's licence (Apache-2.0) in the image")
        t.is_eq(sorted(sbom['files']), sorted(['/usr/bin/' + b for b in bins]
                                              + ['/usr/lib/gpuslice/libvgpu.so']),
                'SBOM lists the gpuslice files with their digests')
        extra = [f for f in os.listdir(os.path.join(rootfs, 'usr/lib/x86_64-linux-gnu'))
                 if not any(f'/usr/lib/x86_64-linux-gnu/{f}' in x['files']
                            for x in sbom['packages'])]
        t.ok(not extra, 'every library in the image is accounted for in the SBOM', diag=extra)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
