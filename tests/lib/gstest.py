"""Test helpers shared by the Python integration tests: TAP output and the build's paths.

    from gstest import Tap, env_paths, preload_env
    t = Tap()
    t.ok(cond, "what the user relies on")
    t.is_eq(got, want, "name")
    sys.exit(t.done())

Paths come from the environment meson sets for every test (see top-level meson.build):
GS_SOURCE_ROOT, GS_BUILD_ROOT, GS_SIM_DIR, GS_VGPU_LIB, GS_GPUSLICE,
GS_GPUSIM_SMI, GS_PLUGIN, GS_WEBHOOK, GS_SANITIZE, GS_REFERENCE_DIR.

Reference data (Kubernetes JSON schemas and API fixtures, the CDI schema, CEL conformance files) is
not part of the repository: a test finds it with reference_path() and, when it is absent, calls
skip_reference() once and runs everything else (see docs/internals/build.md).
"""
import json
import os
import subprocess
import sys
import traceback


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        sys.stdout.reconfigure(line_buffering=True)

    def ok(self, cond, name, diag=None):
        self.n += 1
        print(f"{'' if cond else 'not '}ok {self.n} - {name}")
        if not cond:
            self.failed += 1
            if diag is not None:
                self.diag(diag)
        return bool(cond)

    def is_eq(self, got, want, name):
        return self.ok(got == want, name, diag=f"got {got!r}, want {want!r}")

    def like(self, got, needle, name):
        return self.ok(got is not None and needle in got, name,
                       diag=f"{needle!r} not found in {got!r}")

    def skip(self, name, why):
        self.n += 1
        print(f"ok {self.n} - {name} # SKIP {why}")

    def valid(self, validator, obj, name):
        """ok when `obj` validates under the jsonschema `validator`. A None validator means the
        reference schemas are absent: the schema oracle is skipped, said once per program."""
        return self.no_schema_errors(None if validator is None else schema_errors(validator, obj),
                                     name)

    def no_schema_errors(self, errors, name):
        """ok when the list of schema errors is empty; None means the reference schemas are
        absent (skipped, said once)."""
        if errors is None:
            skip_reference(self, 'schema oracle: objects validate against the strict Kubernetes '
                                 'and CDI schemas', 'k8s-json-schema')
            return True
        return self.ok(not errors, name, diag='\n'.join(str(e) for e in errors))

    def diag(self, msg):
        for line in str(msg).splitlines() or ['']:
            print(f"# {line}")

    def run(self, name, fn, *args, **kw):
        """Run a sub-test function; an exception is a failure with its traceback."""
        try:
            return fn(*args, **kw)
        except Exception:  # noqa: BLE001 - a test harness reports everything
            self.ok(False, f"{name} raised")
            self.diag(traceback.format_exc())
            return None

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.failed else 0


# include/gpuslice/shared_region.h (version 2): a claim's region is created by whoever prepares
# the claim (the kubelet plugin, `gpuslice run`: gs_region_prepare_fd): sized, magic, version and
# size written, init_state 0. libvgpu never creates a region a limits file names.
REGION_MAGIC = 0x4E4F494745525347
REGION_VERSION = 2
REGION_MAX_DEVICES = 32
REGION_SIZE = 128 + 200 * REGION_MAX_DEVICES + (24 + 8 * REGION_MAX_DEVICES) * 1024


def prepare_region(path):
    """Create a claim's region file as the kubelet plugin does (an existing one is kept; a
    missing directory is left for libvgpu to refuse)."""
    import struct
    if os.path.exists(path) or not os.path.isdir(os.path.dirname(path) or '.'):
        return
    with open(path, 'wb') as f:
        f.truncate(REGION_SIZE)
        f.write(struct.pack('<QII', REGION_MAGIC, REGION_VERSION, REGION_SIZE))
    os.chmod(path, 0o666)


def env_paths():
    keys = ['GS_SOURCE_ROOT', 'GS_BUILD_ROOT', 'GS_SIM_DIR', 'GS_VGPU_LIB',
            'GS_GPUSLICE', 'GS_GPUSIM_SMI', 'GS_PLUGIN', 'GS_WEBHOOK', 'GS_REFERENCE_DIR']
    return {k: os.environ.get(k, '') for k in keys}


def reference_dir():
    """The reference data folder: $GPUSLICE_REFERENCE_DIR when set, else GS_REFERENCE_DIR (meson's
    default: ../shared/reference beside the clone). None when that folder does not exist."""
    d = os.environ.get('GPUSLICE_REFERENCE_DIR') or os.environ.get('GS_REFERENCE_DIR', '')
    return d if d and os.path.isdir(d) else None


def reference_path(*parts):
    """Path of a file or folder of the reference data, or None when it is absent."""
    d = reference_dir()
    if d is None:
        return None
    p = os.path.join(d, *parts)
    return p if os.path.exists(p) else None


def reference_json(*parts):
    """The parsed JSON file of the reference data, or None when it is absent."""
    p = reference_path(*parts)
    if p is None:
        return None
    with open(p, encoding='utf-8') as f:
        return json.load(f)


_reference_skips = set()


def skip_reference(t, what, *parts):
    """Report, once per test program and oracle, that the oracle `what` is skipped because the
    reference data (reference_dir()/parts) is absent. With GPUSLICE_REQUIRE_REFERENCE=1 (CI sets
    it) the absence is a failure instead, so CI cannot silently lose an oracle."""
    if what in _reference_skips:
        return
    _reference_skips.add(what)
    base = (os.environ.get('GPUSLICE_REFERENCE_DIR') or os.environ.get('GS_REFERENCE_DIR')
            or '(unset)')
    where = os.path.join(base, *parts)
    why = (f'reference data absent ({where}): clone ../shared beside the repository or set '
           'GPUSLICE_REFERENCE_DIR')
    if os.environ.get('GPUSLICE_REQUIRE_REFERENCE') == '1':
        t.ok(False, f'{what}: reference data required (GPUSLICE_REQUIRE_REFERENCE=1)', diag=why)
    else:
        t.skip(what, why)


def skip_unbuilt(t, what, why):
    """Skip `what` because a program it drives (gpusim's libraries, a daemon, a helper) is not
    built, saying `why`. With GPUSLICE_REQUIRE_SIM=1 (CI sets it in .ci/run) the absence is a
    failure instead: a build that lost gpusim or a daemon cannot turn a test program into one
    green SKIP."""
    if os.environ.get('GPUSLICE_REQUIRE_SIM') == '1':
        t.ok(False, f'{what}: {why}; required in this run (GPUSLICE_REQUIRE_SIM=1)')
    else:
        t.skip(what, why)


def schema_errors(validator, obj):
    """Every error of `obj` under a jsonschema validator, as 'path/to/field: message'."""
    return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message}"
            for e in validator.iter_errors(obj)]


def sanitizer_runtime():
    """In an ASan build, a non-instrumented program (python3, /bin/sh) that loads one of our
    instrumented libraries must preload the ASan runtime first. Returns that path or ''."""
    if 'address' not in os.environ.get('GS_SANITIZE', ''):
        return ''
    try:
        out = subprocess.run(['gcc', '-print-file-name=libasan.so'], capture_output=True,
                             text=True, check=True).stdout.strip()
        return out if os.path.isabs(out) else ''
    except (OSError, subprocess.CalledProcessError):
        return ''


def preload_env(base=None, preload=None, sim=True):
    """Environment for running a program on gpusim, optionally with `preload` (e.g. libvgpu)
    in LD_PRELOAD, with the sanitizer runtime first when the build is sanitized."""
    env = dict(os.environ if base is None else base)
    paths = env_paths()
    if sim:
        old = env.get('LD_LIBRARY_PATH', '')
        env['LD_LIBRARY_PATH'] = paths['GS_SIM_DIR'] + (':' + old if old else '')
    libs = []
    rt = sanitizer_runtime()
    if rt:
        libs.append(rt)
        # The program is not instrumented (python3, /bin/sh): LeakSanitizer would report its own
        # allocations (the interpreter's) at exit, not ours.
        opts = [o for o in env.get('ASAN_OPTIONS', '').split(':')
                if o and not o.startswith('detect_leaks=')]
        env['ASAN_OPTIONS'] = ':'.join(opts + ['detect_leaks=0'])
    if preload:
        libs.append(preload)
    if libs:
        env['LD_PRELOAD'] = ':'.join(libs)
    return env
