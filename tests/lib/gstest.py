"""Test helpers shared by the Python integration tests: TAP output and the build's paths.

    from gstest import Tap, env_paths, preload_env
    t = Tap()
    t.ok(cond, "what the user relies on")
    t.is_eq(got, want, "name")
    sys.exit(t.done())

Paths come from the environment meson sets for every test (see top-level meson.build):
GS_SOURCE_ROOT, GS_BUILD_ROOT, GS_SHARED_DIR, GS_SIM_DIR, GS_VGPU_LIB, GS_GPUSLICE,
GS_GPUSIM_SMI, GS_PLUGIN, GS_WEBHOOK, GS_SANITIZE.
"""
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


def env_paths():
    keys = ['GS_SOURCE_ROOT', 'GS_BUILD_ROOT', 'GS_SHARED_DIR', 'GS_SIM_DIR', 'GS_VGPU_LIB',
            'GS_GPUSLICE', 'GS_GPUSIM_SMI', 'GS_PLUGIN', 'GS_WEBHOOK']
    return {k: os.environ.get(k, '') for k in keys}


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
        env.setdefault('ASAN_OPTIONS', 'detect_leaks=0')
    if preload:
        libs.append(preload)
    if libs:
        env['LD_PRELOAD'] = ':'.join(libs)
    return env
