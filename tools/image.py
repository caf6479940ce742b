#!/usr/bin/env python3
"""The gpuslice container image (docs/image.md).

    image.py build  [--tag REF] [--engine podman|buildah|docker]
        deploy/container/Dockerfile with the first engine that works (make image)
    image.py rootfs --dist DIST --out DIR
        the image's root filesystem from a staged dist/ plus the shared-library closure of its
        binaries, copied from the installed Debian packages, with their licence files and an
        SBOM-like list (usr/share/gpuslice/sbom.json, packages.txt)
    image.py oci    --dist DIST --layout DIR [--tag TAG]
        that root filesystem as a one-layer OCI image (umoci; no base image, no RUN step):
        the offline path CI exercises (make image-offline, tests/integration/release/test_image.py)

Layout (the manifests' paths, deploy/): /usr/bin/gpuslice* and gpusim-smi,
/usr/lib/gpuslice/libvgpu.so. gpusim's libraries stay out: the image is the product.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = 'ghcr.io/gpuslice/gpuslice'
VGPU_PATH = 'usr/lib/gpuslice/libvgpu.so'
DEBIAN_VERSION = '12'
MULTIARCH = {'x86_64': 'x86_64-linux-gnu', 'aarch64': 'aarch64-linux-gnu'}.get(os.uname().machine,
                                                                               'lib')


# What the image's configuration says, the same in deploy/container/Dockerfile (ENV, USER, CMD,
# LABEL) and in the offline image (umoci config); test_image.py compares the two.
IMAGE_ENV = 'PATH=/usr/bin'
IMAGE_CMD = ['/usr/bin/gpuslice', '--help']
# Root: the kubelet plugin and the device plugin write under /var/lib/kubelet and the CDI dir; the
# webhook, monitor and extender manifests set runAsUser 65532 (nonroot, in /etc/passwd).
IMAGE_USER = '0:0'
IMAGE_LABELS = {
    'org.opencontainers.image.title': 'gpuslice',
    'org.opencontainers.image.description': 'gpuslice kubelet plugin, webhook, monitor, legacy '
                                            'extender and device plugin, CLI and libvgpu.so',
    'org.opencontainers.image.licenses': 'Apache-2.0',
    'org.opencontainers.image.source': 'https://github.com/gpuslice/gpuslice',
}


def source_date_epoch():
    """SOURCE_DATE_EPOCH, else the commit time of HEAD, else 0: every timestamp in the image."""
    env = os.environ.get('SOURCE_DATE_EPOCH')
    if env and env.isdigit():
        return int(env)
    r = run(['git', '-C', ROOT, 'log', '-1', '--format=%ct'])
    out = r.stdout.strip() if r.returncode == 0 else ''
    return int(out) if out.isdigit() else 0


def rfc3339(epoch):
    import datetime
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def die(msg):
    print(f'image: {msg}', file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def version():
    out = {}
    for what, fallback in (('version', None), ('commit', 'unknown')):
        r = run([sys.executable, os.path.join(ROOT, 'tools', 'version.py'), what, ROOT])
        out[what] = r.stdout.strip() if r.returncode == 0 else fallback
    if not out['version']:
        m = re.search(r"version:\s*'([^']+)'", open(os.path.join(ROOT, 'meson.build')).read())
        out['version'] = m.group(1) if m else '0.0.0'
    return out


def identity(dist):
    """Version and commit of the staged binaries themselves (gpuslice --version), else version()."""
    r = run([os.path.join(dist, 'bin', 'gpuslice'), '--version'])
    m = re.match(r'gpuslice (\S+) \(commit (\S+)\)$', r.stdout.strip())
    return {'version': m.group(1), 'commit': m.group(2)} if m else version()


# ---- build with a container engine (make image) ------------------------------------------------

def engine_works(name):
    """(usable, why): the engine exists and can build here."""
    path = shutil.which(name)
    if not path:
        return False, 'not installed'
    if name == 'docker':
        r = run([path, 'info'], timeout=20)
        if r.returncode != 0:
            return False, 'installed, but no Docker daemon answers: ' + (
                r.stderr.strip().splitlines() or ['?'])[-1]
    return True, path


def cmd_build(args):
    ident = version()
    tag = args.tag or f"{IMAGE}:{ident['version']}"
    tried = []
    for name in ([args.engine] if args.engine else ['podman', 'buildah', 'docker']):
        ok, why = engine_works(name)
        if not ok:
            tried.append(f'{name}: {why}')
            continue
        build = ['build'] if name != 'buildah' else ['bud']
        cmd = [why] + build + ['-f', os.path.join(ROOT, 'deploy', 'container', 'Dockerfile'),
                               '--build-arg', f"GPUSLICE_VERSION={ident['version']}",
                               '--build-arg', f"GPUSLICE_COMMIT={ident['commit']}",
                               '-t', tag, ROOT]
        print('image: ' + ' '.join(cmd), flush=True)
        r = subprocess.call(cmd)
        if r != 0:
            die(f'{name} build failed (exit {r}); without network access to pull debian:12, '
                'use `make image-offline` (OCI layout from dist/, no base image)')
        print(f'image: built {tag} with {name}')
        return 0
    die('no container engine can build here (' + '; '.join(tried) + '). Install podman, '
        'buildah or docker, or run `make image-offline` for an OCI layout built without one.')
    return 1


# ---- root filesystem from dist/ + Debian packages ------------------------------------------------

def is_elf(path):
    with open(path, 'rb') as f:
        return f.read(4) == b'\x7fELF'


def ldd(path):
    """{soname: resolved path} of every shared library `path` loads (the loader's own view)."""
    r = run(['ldd', path])
    if r.returncode != 0 and 'not a dynamic executable' in (r.stdout + r.stderr):
        return {}
    libs = {}
    for line in r.stdout.splitlines():
        m = re.match(r'\s*(\S+)\s+=>\s+(not found|\S+)', line)
        if m:
            if m.group(2) == 'not found':
                die(f'{path}: {m.group(1)} not found on this machine (make deps)')
            libs[m.group(1)] = m.group(2)
            continue
        m = re.match(r'\s*(/\S+)\s+\(0x', line)  # the dynamic loader
        if m:
            libs[os.path.basename(m.group(1))] = m.group(1)
    return libs


_owners = {}


def dpkg_owner(path):
    """(package:arch, path as dpkg knows it) for an installed file (dpkg -S, from dpkg's file lists
    read once), trying the usr-merged aliases (/lib/x <-> /usr/lib/x)."""
    if not _owners:
        info = '/var/lib/dpkg/info'
        for f in os.listdir(info):
            if f.endswith('.list'):
                with open(os.path.join(info, f), errors='replace') as fh:
                    for line in fh:
                        _owners.setdefault(line.rstrip('\n'), f[:-5])
    cands = [path, os.path.realpath(path)]
    for p in list(cands):
        cands.append(p[4:] if p.startswith('/usr/') else '/usr' + p)
    for p in dict.fromkeys(cands):
        if p in _owners:
            return _owners[p], p
    die(f'{path}: no installed Debian package owns it (dpkg -S)')
    return None


def pkg_info(pkg):
    r = run(['dpkg-query', '-W', '-f', '${Package}\t${Version}\t${Architecture}\t${source:Package}'
             '\t${Priority}', pkg])
    name, ver, arch, src, prio = r.stdout.strip().split('\t')
    return {'name': name, 'version': ver, 'architecture': arch, 'source': src or name,
            'priority': prio}


def pkg_status(pkg):
    """The package's dpkg status record, as scanners read /var/lib/dpkg/status.d/<package>."""
    r = run(['dpkg-query', '-s', pkg])
    if r.returncode != 0:
        die(f'{pkg}: dpkg-query -s failed: {r.stderr.strip()}')
    return r.stdout.rstrip('\n') + '\n'


def purl(info):
    return (f"pkg:deb/debian/{info['name']}@{info['version']}?arch={info['architecture']}"
            f"&distro=debian-{DEBIAN_VERSION}").replace('+', '%2B')


def cyclonedx(ident, epoch, ours, out, sbom_pkgs):
    """CycloneDX 1.5 JSON: gpuslice (the application), its files with SHA-256, and each Debian
    package by purl; deterministic (serial number from version+commit, time from the epoch)."""
    import uuid
    serial = uuid.uuid5(uuid.NAMESPACE_URL, f"gpuslice:{ident['version']}:{ident['commit']}")
    root_ref = f"pkg:generic/gpuslice@{ident['version']}"
    comps = [{'type': 'library', 'bom-ref': purl(p), 'name': p['name'], 'version': p['version'],
              'purl': purl(p), 'publisher': 'Debian',
              'properties': [{'name': 'debian:source', 'value': p['source']},
                             {'name': 'debian:copyright', 'value': p['license_file']}] +
              [{'name': 'gpuslice:file', 'value': f} for f in p['files']]}
             for p in sbom_pkgs]
    comps += [{'type': 'file', 'bom-ref': 'file:' + f, 'name': f,
               'hashes': [{'alg': 'SHA-256', 'content': sha256(os.path.join(out, f.lstrip('/')))}]}
              for f in ours]
    return {
        'bomFormat': 'CycloneDX', 'specVersion': '1.5', 'serialNumber': f'urn:uuid:{serial}',
        'version': 1,
        'metadata': {
            'timestamp': rfc3339(epoch),
            'tools': {'components': [{'type': 'application', 'name': 'gpuslice tools/image.py'}]},
            'component': {'type': 'container', 'bom-ref': root_ref, 'name': 'gpuslice',
                          'version': ident['version'], 'purl': root_ref,
                          'licenses': [{'license': {'id': 'Apache-2.0'}}],
                          'properties': [{'name': 'vcs:commit', 'value': ident['commit']}]},
        },
        'components': comps,
        'dependencies': [{'ref': root_ref,
                          'dependsOn': [purl(p) for p in sbom_pkgs] + ['file:' + f for f in ours]}],
    }


def copy_file(src, dst, mode=None):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)
    os.chmod(dst, mode if mode is not None else os.stat(src).st_mode & 0o777)


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def assemble(dist, out):
    if not os.path.isdir(os.path.join(dist, 'bin')) or not os.path.isfile(
            os.path.join(dist, 'lib', 'libvgpu.so')):
        die(f'{dist}: not a staged tree (bin/, lib/libvgpu.so): run make')
    if os.path.exists(out):
        shutil.rmtree(out)
    for d in ('usr/bin', 'usr/lib/' + MULTIARCH, 'usr/lib64', 'usr/share/gpuslice', 'etc'):
        os.makedirs(os.path.join(out, d))
    for link, target in (('bin', 'usr/bin'), ('lib', 'usr/lib'), ('lib64', 'usr/lib64')):
        os.symlink(target, os.path.join(out, link))
    os.makedirs(os.path.join(out, 'tmp'))
    os.chmod(os.path.join(out, 'tmp'), 0o1777)

    ours = []
    for f in sorted(os.listdir(os.path.join(dist, 'bin'))):
        copy_file(os.path.join(dist, 'bin', f), os.path.join(out, 'usr/bin', f), 0o755)
        ours.append('/usr/bin/' + f)
    copy_file(os.path.join(dist, 'lib', 'libvgpu.so'), os.path.join(out, VGPU_PATH), 0o755)
    ours.append('/' + VGPU_PATH)

    # The closure: every library our files load, copied under its soname into the multiarch
    # directory (the loader's built-in search path), the loader at its PT_INTERP path.
    packages, taken = {}, {}
    for f in ours:
        for soname, path in ldd(os.path.join(out, f.lstrip('/'))).items():
            if path in taken:
                continue
            pkg, owned = dpkg_owner(path)
            if soname.startswith('ld-linux'):
                dst = '/usr/lib64/' + soname if soname.endswith('x86-64.so.2') else \
                    '/usr/lib/' + soname
            else:
                dst = f'/usr/lib/{MULTIARCH}/{soname}'
            copy_file(os.path.realpath(path), os.path.join(out, dst.lstrip('/')), 0o755)
            taken[path] = dst
            packages.setdefault(pkg, []).append({'file': dst, 'from': owned})
    if 'ld-linux-aarch64.so.1' in {os.path.basename(v) for v in taken.values()}:
        os.symlink('../lib/ld-linux-aarch64.so.1', os.path.join(out, 'usr/lib64',
                                                                'ld-linux-aarch64.so.1'))

    # The distribution's identity for scanners: /etc/os-release (base-files' file, which we
    # then list as a package like the libraries' own).
    osrel = os.path.realpath('/etc/os-release')
    pkg, owned = dpkg_owner(osrel)
    copy_file(osrel, os.path.join(out, 'usr/lib/os-release'), 0o644)
    os.symlink('../usr/lib/os-release', os.path.join(out, 'etc/os-release'))
    packages.setdefault(pkg, []).extend([{'file': '/usr/lib/os-release', 'from': owned}])

    # Licences: each package's copyright file; ours (Apache-2.0) from base-files' copy.
    sbom_pkgs = []
    for pkg in sorted(packages):
        info = pkg_info(pkg)
        lic = f"/usr/share/doc/{info['name']}/copyright"
        if not os.path.exists(lic):
            die(f'{pkg}: {lic} missing')
        copy_file(os.path.realpath(lic), os.path.join(out, lic.lstrip('/')), 0o644)
        info.update(files=sorted(x['file'] for x in packages[pkg]), license_file=lic)
        sbom_pkgs.append(info)
        # dpkg's record in the distroless layout (one file per package), which Trivy, Grype
        # and Syft read, and the file list dpkg would keep for it.
        status_d = os.path.join(out, 'var/lib/dpkg/status.d')
        os.makedirs(status_d, exist_ok=True)
        with open(os.path.join(status_d, info['name']), 'w') as f:
            f.write(pkg_status(pkg))
        with open(os.path.join(status_d, info['name'] + '.md5sums'), 'w') as f:
            for x in sorted(packages[pkg], key=lambda x: x['file']):
                h = hashlib.md5(open(os.path.join(out, x['file'].lstrip('/')), 'rb').read())
                f.write(f"{h.hexdigest()}  {x['file'].lstrip('/')}\n")
    apache = os.path.join(ROOT, 'LICENSE') if os.path.exists(os.path.join(ROOT, 'LICENSE')) else '/usr/share/common-licenses/Apache-2.0'
    copy_file(apache, os.path.join(out, 'usr/share/doc/gpuslice/LICENSE'), 0o644)
    with open(os.path.join(out, 'usr/share/doc/gpuslice/copyright'), 'w') as f:
        f.write('gpuslice\nLicense: Apache-2.0 (full text: /usr/share/doc/gpuslice/LICENSE)\n'
                'Third-party files: the Debian packages in /usr/share/gpuslice/packages.txt, each '
                'with its /usr/share/doc/<package>/copyright.\n')

    # Minimal identity files: root and the webhook's non-root user (65532).
    with open(os.path.join(out, 'etc/passwd'), 'w') as f:
        f.write('root:x:0:0:root:/root:/sbin/nologin\n'
                'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n')
    with open(os.path.join(out, 'etc/group'), 'w') as f:
        f.write('root:x:0:\nnonroot:x:65532:\n')

    ident = identity(dist)
    sbom = {
        'name': 'gpuslice', 'version': ident['version'], 'commit': ident['commit'],
        'license': 'Apache-2.0',
        'files': {f: sha256(os.path.join(out, f.lstrip('/'))) for f in ours},
        'packages': sbom_pkgs,
        'note': 'Shared libraries copied from these installed Debian packages (dpkg -S), each '
                'with its copyright file under /usr/share/doc/<package>/.',
    }
    with open(os.path.join(out, 'usr/share/gpuslice/sbom.json'), 'w') as f:
        json.dump(sbom, f, indent=2, sort_keys=True)
        f.write('\n')
    with open(os.path.join(out, 'usr/share/gpuslice/packages.txt'), 'w') as f:
        f.write('# package\tversion\tarchitecture\tsource\n')
        for p in sbom_pkgs:
            f.write(f"{p['name']}\t{p['version']}\t{p['architecture']}\t{p['source']}\n")
    epoch = source_date_epoch()
    with open(os.path.join(out, 'usr/share/gpuslice/sbom.cdx.json'), 'w') as f:
        json.dump(cyclonedx(ident, epoch, ours, out, sbom_pkgs), f, indent=2, sort_keys=True)
        f.write('\n')
    # Same inputs, same bytes: every timestamp is the epoch (SOURCE_DATE_EPOCH or HEAD's time).
    for d, dirs, files in os.walk(out):
        for n in dirs + files:
            os.utime(os.path.join(d, n), (epoch, epoch), follow_symlinks=False)
    os.utime(out, (epoch, epoch))
    return sbom


def cmd_rootfs(args):
    sbom = assemble(args.dist, args.out)
    print(f"image: root filesystem in {args.out}: {len(sbom['files'])} gpuslice files, "
          f"{len(sbom['packages'])} Debian packages")
    return 0


def umoci(*a):
    r = run(['umoci', *a])
    if r.returncode != 0:
        die('umoci ' + ' '.join(a) + ': ' + r.stderr.strip())
    return r.stdout


def cmd_oci(args):
    if not shutil.which('umoci'):
        die('umoci is not installed (make deps)')
    ident = identity(args.dist)
    tag = args.tag or ident['version']
    ref = f'{args.layout}:{tag}'
    with tempfile.TemporaryDirectory(prefix='gpuslice-image-') as tmp:
        sbom = assemble(args.dist, os.path.join(tmp, 'rootfs'))
        if os.path.exists(args.layout):
            shutil.rmtree(args.layout)
        umoci('init', '--layout', args.layout)
        umoci('new', '--image', ref)
        bundle = os.path.join(tmp, 'bundle')
        umoci('unpack', '--image', ref, bundle)
        os.rmdir(os.path.join(bundle, 'rootfs'))
        shutil.move(os.path.join(tmp, 'rootfs'), os.path.join(bundle, 'rootfs'))
        created = rfc3339(source_date_epoch())
        umoci('repack', '--image', ref, '--history.created', created,
              '--history.created_by', 'tools/image.py oci: root filesystem', bundle)
        labels = dict(IMAGE_LABELS)
        labels['org.opencontainers.image.version'] = ident['version']
        labels['org.opencontainers.image.revision'] = ident['commit']
        cfg = ['config', '--image', ref, '--author', 'gpuslice', '--created', created,
               '--history.created', created, '--history.created_by', 'tools/image.py oci: config',
               '--config.env', IMAGE_ENV, '--config.workingdir', '/', '--config.user', IMAGE_USER]
        for c in IMAGE_CMD:
            cfg += ['--config.cmd', c]
        for k in sorted(labels):
            cfg += ['--config.label', f'{k}={labels[k]}']
        umoci(*cfg)
        umoci('gc', '--layout', args.layout)
    print(f"image: OCI image {ref} ({IMAGE}:{tag} once pushed, e.g. "
          f"skopeo copy oci:{ref} docker://{IMAGE}:{tag}); {len(sbom['packages'])} Debian "
          'packages, see usr/share/gpuslice/packages.txt')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    b = sub.add_parser('build')
    b.add_argument('--tag')
    b.add_argument('--engine', choices=['podman', 'buildah', 'docker'])
    r = sub.add_parser('rootfs')
    r.add_argument('--dist', required=True)
    r.add_argument('--out', required=True)
    o = sub.add_parser('oci')
    o.add_argument('--dist', required=True)
    o.add_argument('--layout', required=True)
    o.add_argument('--tag')
    args = ap.parse_args()
    return {'build': cmd_build, 'rootfs': cmd_rootfs, 'oci': cmd_oci}[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
