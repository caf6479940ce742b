#!/usr/bin/python3
"""libvgpu.so's glibc ceiling: it is preloaded into users' CUDA images (Ubuntu 20.04 = glibc 2.31,
UBI 8 = 2.28, CentOS 7 = 2.17), so it may need no symbol version newer than GLIBC_2.17 (the
documented ceiling, docs/internals/vgpu.md) and links nothing but libc, libdl, libpthread and the
dynamic loader. The version needs are read from the ELF file itself (readelf -V, objdump -T), and
the checker is first shown to catch a library built without src/vgpu/glibc-compat.h."""
import os
import re
import subprocess
import sys
import tempfile

from gstest import Tap, env_paths

CEILING = (2, 17)  # aim; never above HARD_CEILING
HARD_CEILING = (2, 28)
ALLOWED_NEEDED = {'libc.so.6', 'libdl.so.2', 'libpthread.so.0', 'ld-linux-x86-64.so.2',
                  'ld-linux-aarch64.so.1'}


def version_key(v):
    return tuple(int(x) for x in v.split('_', 1)[1].split('.'))


def needs(path):
    """{version: sorted symbols} for every GLIBC_* version the file needs, and its DT_NEEDED."""
    vr = subprocess.run(['readelf', '-V', '--wide', path], capture_output=True, text=True,
                        check=True).stdout
    versions = set(re.findall(r'Name: (GLIBC_[0-9.]+)', vr.split('.gnu.version_r', 1)[-1]))
    dyn = subprocess.run(['objdump', '-T', path], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in dyn.splitlines():
        m = re.search(r'\*UND\*\s+\S+\s+\(?(GLIBC_[0-9.]+)\)?\s+(\S+)$', line)
        if m:
            syms.setdefault(m.group(1), []).append(m.group(2))
    d = subprocess.run(['readelf', '-d', '--wide', path], capture_output=True, text=True,
                       check=True).stdout
    needed = set(re.findall(r'\(NEEDED\).*\[(.+)\]', d))
    return {v: sorted(syms.get(v, [])) for v in versions}, needed


def above(vers, ceiling):
    return {v: s for v, s in vers.items() if version_key(v) > ceiling}


def checker_catches_an_unbound_library(t):
    """A library calling dlopen and pthread_once, built the plain way on this glibc: if that
    needs nothing above the ceiling (glibc < 2.34 here) the check is vacuous, say so."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'plain.c')
        with open(src, 'w') as f:
            f.write('#include <dlfcn.h>\n#include <pthread.h>\n'
                    'static pthread_once_t o = PTHREAD_ONCE_INIT; static void i(void) {}\n'
                    'void *f(void) { pthread_once(&o, i); return dlopen("x", RTLD_NOW); }\n')
        so = os.path.join(tmp, 'plain.so')
        r = subprocess.run(['cc', '-shared', '-fPIC', '-o', so, src, '-ldl', '-pthread'],
                           capture_output=True, text=True)
        if r.returncode != 0:
            t.skip('the checker catches a library built without glibc-compat.h',
                   f'no C compiler: {r.stderr.strip()[:80]}')
            return
        vers, _ = needs(so)
        if not above(vers, CEILING):
            t.skip('the checker catches a library built without glibc-compat.h',
                   'this glibc predates 2.34: a plain build is already under the ceiling')
            return
        t.ok(above(vers, CEILING), 'the checker sees GLIBC_2.34 in a library built without '
             'glibc-compat.h', diag=vers)


def main():
    t = Tap()
    if os.environ.get('GS_SANITIZE', 'none') not in ('', 'none'):
        t.skip('libvgpu glibc ceiling', 'sanitized build links the sanitizer runtime; the '
               'ceiling applies to the shipped (optimised) build')
        return t.done()
    lib = env_paths()['GS_VGPU_LIB']
    checker_catches_an_unbound_library(t)
    vers, needed = needs(lib)
    t.ok(vers, 'libvgpu.so has glibc version needs (readelf -V)', diag=vers)
    newest = max(vers, key=version_key) if vers else None
    t.diag(f'newest glibc version needed: {newest}; all: {sorted(vers, key=version_key)}')
    over = above(vers, CEILING)
    t.ok(not over, f'no symbol version newer than GLIBC_{CEILING[0]}.{CEILING[1]} '
         '(loads on CentOS 7, UBI 8/9, Ubuntu 20.04+)',
         diag='\n'.join(f'{v}: {", ".join(s)}' for v, s in sorted(over.items())))
    t.ok(not above(vers, HARD_CEILING), 'never newer than GLIBC_2.28 (UBI 8)')
    t.ok(needed <= ALLOWED_NEEDED, 'links nothing but libc, libdl, libpthread and the loader',
         diag=sorted(needed - ALLOWED_NEEDED))
    t.ok({'libdl.so.2', 'libpthread.so.0'} <= needed,
         'libdl.so.2 and libpthread.so.0 linked by name (where the old versions live before 2.34)',
         diag=sorted(needed))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
