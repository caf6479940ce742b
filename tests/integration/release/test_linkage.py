#!/usr/bin/env python3
"""Module boundaries, judged from what the build produced (STYLE.md "Shape of the tree"; issue 19
items 1-2). For every program and shared library: the libraries it may NEED (DT_NEEDED), and the
modules whose code it may contain. For every internal static library (libgs*.a): the libraries
its undefined symbols may resolve to, i.e. which layers it may link.

A module is the static library that defines a global symbol (found with nm in the build tree;
where only part of a library is allowed, the archive member, e.g. the webhook's legacy
translation in the extender). A library this table does not place is a failure: a new module
says where it sits. Beside the library rules, the issue's prefix rules: the device plugin holds
no `wh_` symbol and needs no GnuTLS; libvgpu needs libc/libdl/libpthread only and exports only
CUDA and NVML entry points. NVML and libcuda are never linked (opened by soname at run time).

Sanitizer runtimes (libasan, libubsan) are allowed everywhere: the sanitized build adds them.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from gstest import Tap

# The layers under the modules (docs/internals/layers.md): base, abi, config, kube.
BASE = {'gsbase', 'gsabi', 'gsconfig', 'gskube', 'gsversion'}
# HTTP serving, src/net (libmicrohttpd reply helpers, listen addresses).
NET = {'gshttpd'}
# The serving certificate (GnuTLS): the HTTPS daemons only (webhook, monitor, and the extender's
# --tls-cert-file).
TLS = {'gstls'}
# The gRPC servers' channel arguments (src/net/grpc.c): the kubelet plugin and the device plugin.
GRPCNET = {'gsgrpcnet'}
# The webhook's legacy-resource translation (nvidia.com/gpu* -> claim spec), which the extender
# shares; the rest of the webhook (admission, server, TLS, fast JSON) stays the webhook's own.
WEBHOOK_LEGACY = {'gswebhook:legacy.c.o', 'gswebhook:shape.c.o', 'gswebhook:selector.c.o'}
# HAMi's annotation codec and gpuslice's placement record on the Node (assign.c, which the
# extender writes and the device plugin trusts): the extender's until they move to their own
# library (gshami).
HAMI = {'gsextender:hami.c.o', 'gsextender:assign.c.o', 'gsextassign:assign.c.o', 'gshami'}
# The standalone ledger, read-only (src/cli/ledger-read.c): the monitor reads it, no SQL of its own.
LEDGER_READ = {'gsledgerread'}

# Static library -> the libraries it may reference (besides itself).
LIB_DEPS = {
    'gsversion': set(),
    'gsbase': {'gsversion'},
    'gsabi': {'gsbase'},
    'gsconfig': {'gsbase'},
    'gskube': {'gsbase', 'gsconfig'},
    'gshttpd': {'gsbase'},
    'gstls': {'gsbase'},
    'gsgrpcnet': set(),
    'gshami': BASE | {'gsgpu'},
    'gsextassign': BASE | {'gshami', 'gsgpu'},
    'gsledgerread': BASE,
    'gsgpu': BASE,
    'gscel': BASE,
    'gsalloc': BASE | {'gscel', 'gsgpu'},
    'gssimcore': BASE,
    'gsplugin_proto': set(),
    'gsplugin': BASE | NET | GRPCNET | {'gsgpu', 'gsplugin_proto'},
    'gscli': BASE | {'gsgpu', 'gsalloc', 'gscel'},
    'gswebhook': BASE | NET | TLS | {'gsalloc', 'gscel', 'gsgpu'},
    'gsmonitor': BASE | NET | TLS | {'gsgpu'} | LEDGER_READ,
    'gsextender': BASE | NET | TLS | {'gsalloc', 'gscel', 'gsgpu', 'gshami',
                                      'gsextassign:assign.c.o'} | WEBHOOK_LEGACY,
    'gsdeviceplugin': BASE | NET | GRPCNET | {'gsgpu'} | HAMI,
}

C = {'libc', 'ld-linux-x86-64', 'ld-linux-aarch64'}
# Program (path from the environment or the build root) -> (allowed DT_NEEDED, allowed modules,
# forbidden global-symbol prefixes, modules it must contain: proof that the check sees them).
PROGRAMS = {
    'gpuslice': ('GS_GPUSLICE',
                 C | {'libjansson', 'libyaml-0', 'libm', 'libpcre2-8', 'libsqlite3'},
                 BASE | {'gscli', 'gsalloc', 'gscel', 'gsgpu'},
                 ('wh_', 'mon_', 'ext_', 'dp_'), {'gscli', 'gsalloc'}),
    'gpuslice-kubelet-plugin': ('GS_PLUGIN',
                                C | {'libjansson', 'libcurl', 'libyaml-0', 'libm', 'libprotobuf-c',
                                     'libgrpc', 'libgpr', 'libmicrohttpd'},
                                BASE | NET | GRPCNET | {'gsplugin', 'gsplugin_proto', 'gsgpu'},
                                ('wh_', 'mon_', 'ext_', 'dp_', 'alloc_'), {'gsplugin'}),
    'gpuslice-webhook': ('GS_WEBHOOK',
                         C | {'libjansson', 'libcurl', 'libyaml-0', 'libm', 'libgnutls',
                              'libmicrohttpd', 'libpcre2-8'},
                         BASE | NET | TLS | {'gswebhook', 'gsalloc', 'gscel', 'gsgpu'},
                         ('mon_', 'ext_', 'dp_'), {'gswebhook'}),
    'gpuslice-monitor': ('GS_MONITOR',
                         C | {'libjansson', 'libcurl', 'libyaml-0', 'libm', 'libgnutls',
                              'libmicrohttpd', 'libsqlite3'},
                         BASE | NET | TLS | {'gsmonitor', 'gsgpu'} | LEDGER_READ,
                         ('wh_', 'ext_', 'dp_', 'alloc_', 'cel_'), {'gsmonitor'}),
    'gpuslice-extender': ('GS_EXTENDER',
                          C | {'libjansson', 'libcurl', 'libyaml-0', 'libm', 'libpcre2-8',
                               'libmicrohttpd', 'libgnutls'},
                          BASE | NET | TLS | {'gsextender', 'gsalloc', 'gscel', 'gsgpu', 'gshami',
                                              'gsextassign:assign.c.o'} | WEBHOOK_LEGACY,
                          ('mon_', 'dp_', 'wh_admit', 'wh_server', 'wh_tls', 'wh_fastjson'),
                          {'gsextender', 'gsalloc'}),
    'gpuslice-device-plugin': ('GS_DEVICE_PLUGIN',
                               C | {'libjansson', 'libcurl', 'libyaml-0', 'libm', 'libprotobuf-c',
                                    'libgrpc', 'libgpr', 'libmicrohttpd'},
                               BASE | NET | GRPCNET | {'gsdeviceplugin', 'gsgpu'} | HAMI,
                               ('wh_', 'mon_', 'alloc_', 'cel_', 'ext_', 'gs_tls'),
                               {'gsdeviceplugin'}),
    # gpusim-smi also drives gpusim's shared state (inject-xid, lose, recover: gssimcore).
    'gpusim-smi': ('GS_GPUSIM_SMI', C | {'libm', 'libjansson', 'libyaml-0'},
                   BASE | {'gsgpu', 'gssimcore'},
                   ('wh_', 'mon_', 'ext_', 'dp_'), set()),
    'libcuda.so.1 (gpusim)': ('src/sim/libcuda.so.1',
                              C | {'libjansson', 'libyaml-0', 'libm', 'libdl', 'libpthread'},
                              BASE | {'gssimcore'}, ('wh_', 'mon_', 'alloc_', 'vgpu_'),
                              {'gssimcore'}),
    'libnvidia-ml.so.1 (gpusim)': ('src/sim/libnvidia-ml.so.1',
                                   C | {'libjansson', 'libyaml-0', 'libm', 'libdl', 'libpthread'},
                                   BASE | {'gssimcore'}, ('wh_', 'mon_', 'alloc_', 'vgpu_'),
                                   {'gssimcore'}),
    # The preload library: libc/libdl/libpthread only; of ours only the base layers' code.
    'libvgpu.so': ('GS_VGPU_LIB', C | {'libdl', 'libpthread'}, BASE,
                   ('wh_', 'mon_', 'alloc_', 'cel_', 'sim_'), set()),
}
SANITIZER = {'libasan', 'libubsan', 'libstdc++', 'libgcc_s'}


def soname_base(name):
    return re.sub(r'\.so(\..*)?$', '', name)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def needed(path):
    rc, out, err = run(['readelf', '-d', path])
    if rc != 0:
        return None, err
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', out), ''


def member_of(field):
    """The archive member named in nm -A's first field ("lib.a:member.o:"), or None."""
    where = field.rstrip(':').split(':')
    return os.path.basename(where[1]) if len(where) > 1 else None


def global_defined(path, local=False):
    """[(archive member or None, name)] of the global symbols defined in an archive or a linked
    object; with `local`, hidden ones too (a shared library's internal code, linked hidden)."""
    rc, out, _ = run(['nm', '-A', '--defined-only', path])
    types = 'TDBRVWGS' + ('tdbrgs' if local else '')
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or len(parts[-2]) != 1 or parts[-2] not in types:
            continue
        syms.append((member_of(parts[0]) if path.endswith('.a') else None, parts[-1]))
    return syms


def undefined(path):
    rc, out, _ = run(['nm', '-A', '-u', path])
    refs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == 'U':
            refs.append((member_of(parts[0]), parts[-1]))
    return refs


def libname(path):
    return re.sub(r'^lib', '', os.path.basename(path)[:-2])


def main():
    t = Tap()
    for tool in ('readelf', 'nm'):
        if not shutil.which(tool):
            t.ok(False, f'{tool} is installed (binutils, tools/deps.txt)')
            return t.done()
    build = os.environ['GS_BUILD_ROOT']
    archives = sorted(p for p in glob.glob(os.path.join(build, 'src', '**', 'libgs*.a'),
                                           recursive=True))
    t.ok(len(archives) >= 8, f'{len(archives)} internal static libraries found in the build',
         diag=archives)

    # Who defines each global symbol: library and member.
    owner = {}
    for a in archives:
        lib = libname(a)
        for member, sym in global_defined(a):
            owner.setdefault(sym, (lib, member))
    t.ok(len(owner) > 500, f'{len(owner)} global symbols mapped to their library')

    def allowed(lib, member, rules):
        return lib in rules or f'{lib}:{member}' in rules

    # Libraries: each is placed, and references only the layers it may.
    for a in archives:
        lib = libname(a)
        if not t.ok(lib in LIB_DEPS, f'lib{lib}.a has a place in the module table',
                    diag='add it to LIB_DEPS (and the programs that may contain it)'):
            continue
        bad = sorted({f'{m}: {s} -> {owner[s][0]}:{owner[s][1]}' for m, s in undefined(a)
                      if s in owner and owner[s][0] != lib
                      and not allowed(owner[s][0], owner[s][1], LIB_DEPS[lib])})
        t.ok(not bad, f'lib{lib}.a references only {", ".join(sorted(LIB_DEPS[lib])) or "itself"}',
             diag='\n'.join(bad[:40]))

    # Programs and shared libraries.
    for name, (where, need_ok, mods_ok, prefixes, must) in PROGRAMS.items():
        path = os.environ.get(where) if where.startswith('GS_') else os.path.join(build, where)
        if not t.ok(path and os.path.exists(path), f'{name} is built', diag=path):
            continue
        deps, err = needed(path)
        if not t.ok(deps, f'{name}: readelf -d lists its DT_NEEDED', diag=err):
            continue
        extra = sorted(d for d in deps if soname_base(d) not in need_ok | SANITIZER)
        t.ok(not extra, f'{name} needs only {", ".join(sorted(need_ok - C))} and libc',
             diag=f'also needs: {extra}')
        t.ok(not any(d.startswith(('libnvidia-ml', 'libcuda')) for d in deps),
             f'{name} links neither libnvidia-ml nor libcuda (opened at run time)', diag=deps)
        shared = '.so' in os.path.basename(path)
        syms = {s for _, s in global_defined(path, local=shared)}
        found = {}
        for s in syms:
            if s in owner:
                found.setdefault(owner[s], []).append(s)
        bad = sorted(f'{lib}:{m}: {", ".join(sorted(ss)[:6])}' for (lib, m), ss in found.items()
                     if not allowed(lib, m, mods_ok))
        t.ok(not bad, f'{name} contains only modules {", ".join(sorted(mods_ok & {l for l, _ in found})) or "(none)"}',
             diag='\n'.join(bad[:40]))
        # Prefixes judge global names only (a file-local helper may be called anything), and not
        # those of an archive member the table places by name (e.g. the extender's assign.c in
        # the device plugin: that member is the allowed exception to its module's prefix).
        globs = {s for _, s in global_defined(path)} if shared else syms
        pre = sorted(s for s in globs if s.startswith(prefixes)
                     and not (s in owner and f'{owner[s][0]}:{owner[s][1]}' in mods_ok))
        t.ok(not pre, f'{name} defines no {"/".join(p + "*" for p in prefixes)} symbol',
             diag=', '.join(pre[:40]))
        libs_in = {lib for lib, _ in found}
        t.ok(must <= libs_in, f'{name} contains {", ".join(sorted(must)) or "no internal library"} '
             '(the check sees its modules)', diag=sorted(libs_in))

    # libvgpu exports only the hooks.
    vgpu = os.environ['GS_VGPU_LIB']
    rc, out, _ = run(['nm', '-D', '--defined-only', vgpu])
    exports = [ln.split()[-1] for ln in out.splitlines() if len(ln.split()) >= 3]
    t.ok(exports, f'libvgpu.so exports {len(exports)} symbols')
    odd = [s for s in exports if not re.match(r'^(cu|nvml|dlsym$)', s)]
    t.ok(not odd, 'libvgpu.so exports only cu*/nvml* entry points (and dlsym)', diag=odd)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
