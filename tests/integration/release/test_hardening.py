#!/usr/bin/python3
"""Hardening of every staged binary and library, read from the ELF files (readelf) of the tree
`make` stages into dist/ (`meson install --destdir`, the same command, into a temporary
directory, so the test judges exactly what is shipped from this build):

  - full RELRO (PT_GNU_RELRO) and BIND_NOW (DT_FLAGS BIND_NOW / DT_FLAGS_1 NOW): -z relro -z now
  - executables are PIE (ELF type DYN with DT_FLAGS_1 PIE)
  - FORTIFY_SOURCE: each object imports fortified __*_chk functions, and every compile command
    (compile_commands.json) carries -D_FORTIFY_SOURCE=3 (2 where the compiler lacks 3) in an
    optimised, unsanitized build
  - -fstack-clash-protection on every compile command
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths


def readelf(*args):
    return subprocess.run(['readelf', '--wide', *args], capture_output=True, text=True,
                          check=True).stdout


def is_elf(path):
    with open(path, 'rb') as f:
        return f.read(4) == b'\x7fELF'


def stage(build, dest):
    r = subprocess.run(['meson', 'install', '-C', build, '--destdir', dest, '--no-rebuild',
                        '--quiet'], capture_output=True, text=True)
    return r.returncode, r.stderr


def elf_files(root):
    out = []
    for d, _, files in os.walk(root):
        for f in sorted(files):
            p = os.path.join(d, f)
            if not os.path.islink(p) and is_elf(p):
                out.append(p)
    return sorted(out)


def check_elf(t, path, rel, fortify_expected):
    header = readelf('-h', path)
    dyn = readelf('-d', path)
    phdr = readelf('-l', path)
    etype = re.search(r'Type:\s+(\S+)', header).group(1)
    flags1 = re.search(r'\(FLAGS_1\)\s+Flags:\s+(.*)', dyn)
    flags1 = flags1.group(1).split() if flags1 else []
    flags = re.search(r'\(FLAGS\)\s+(.*)', dyn)
    flags = flags.group(1).split() if flags else []
    executable = 'INTERP' in phdr  # shared libraries have no program interpreter
    t.ok('GNU_RELRO' in phdr, f'{rel}: RELRO (PT_GNU_RELRO)')
    t.ok('BIND_NOW' in flags or 'NOW' in flags1, f'{rel}: BIND_NOW (full RELRO)',
         diag=f'FLAGS {flags} FLAGS_1 {flags1}')
    if executable:
        t.ok(etype == 'DYN' and 'PIE' in flags1, f'{rel}: position-independent executable',
             diag=f'type {etype}, FLAGS_1 {flags1}')
    if fortify_expected:
        syms = readelf('--dyn-syms', path)
        chk = sorted(set(re.findall(r'\s(__\w+_chk)(?:@|\s|$)', syms, re.M)))
        t.ok(chk, f'{rel}: calls fortified functions (__*_chk)', diag='none imported')


def check_compile_commands(t, build, fortify_level):
    with open(os.path.join(build, 'compile_commands.json')) as f:
        cmds = json.load(f)
    ours = [c for c in cmds if '/src/' in c['file'].replace('\\', '/')
            and c['file'].endswith('.c')]
    t.ok(ours, f'{len(ours)} compile commands of src/ in compile_commands.json')
    missing = [c['file'] for c in ours if '-fstack-clash-protection' not in c['command']]
    t.ok(not missing, 'every src/ compile uses -fstack-clash-protection', diag=missing[:5])
    if fortify_level:
        want = f'-D_FORTIFY_SOURCE={fortify_level}'
        missing = [c['file'] for c in ours if want not in c['command']]
        t.ok(not missing, f'every src/ compile uses {want}', diag=missing[:5])


def main():
    t = Tap()
    p = env_paths()
    build = p['GS_BUILD_ROOT']
    sanitized = os.environ.get('GS_SANITIZE', 'none') not in ('', 'none')
    with open(os.path.join(build, 'meson-info', 'intro-buildoptions.json')) as f:
        opts = {o['name']: o['value'] for o in json.load(f)}
    optimised = opts.get('optimization') not in ('plain', '0')
    fortify_expected = optimised and not sanitized and not opts.get('fuzzing')
    fortify_level = None
    if fortify_expected:
        probe = subprocess.run(['cc', '-x', 'c', '-c', '-o', '/dev/null', '-'],
                               input='int f(char *p) { return (int)__builtin_dynamic_object_size'
                                     '(p, 0); }\n', capture_output=True, text=True)
        fortify_level = '3' if probe.returncode == 0 else '2'
    else:
        t.skip('FORTIFY_SOURCE', f"build is {'sanitized' if sanitized else 'not optimised'} "
                                 '(fortification applies to optimised, unsanitized builds)')
    check_compile_commands(t, build, fortify_level)
    with tempfile.TemporaryDirectory() as tmp:
        rc, err = stage(build, tmp)
        if not t.is_eq(rc, 0, 'meson install stages the build (as make does into dist/)'):
            t.diag(err)
            return t.done()
        files = elf_files(tmp)
        rels = [os.path.relpath(f, tmp) for f in files]
        t.ok(any(r.startswith('bin/') for r in rels) and 'lib/libvgpu.so' in rels,
             'staged tree holds the binaries and libvgpu.so', diag=rels)
        for f, rel in zip(files, rels):
            check_elf(t, f, rel, fortify_expected)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
