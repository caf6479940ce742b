#!/usr/bin/python3
"""`make` (stage) keeps what `make install-manifests` rendered into dist/ (issue 36: `make` and
`make demo` deleted dist/gpuslice-*.yaml). Stages the already-built tree into a scratch DIST and
checks both the binaries and a rendered manifest are there afterwards."""
import os
import subprocess
import tempfile

from gstest import Tap, env_paths


def main():
    t = Tap()
    p = env_paths()
    root, build = p['GS_SOURCE_ROOT'], p['GS_BUILD_ROOT']
    with tempfile.TemporaryDirectory(dir=build) as tmp:
        dist = os.path.relpath(os.path.join(tmp, 'dist'), root)
        os.makedirs(os.path.join(tmp, 'dist'))
        manifest = os.path.join(tmp, 'dist', 'gpuslice-dra.yaml')
        with open(manifest, 'w') as f:
            f.write('kind: List\n')
        r = subprocess.run(['make', '--no-print-directory', '-s', 'stage', 'BUILD=' + build,
                            'DIST=' + dist, 'JOBS=1'], cwd=root, capture_output=True, text=True,
                           timeout=600)
        t.ok(r.returncode == 0, 'make stage succeeds', r.stderr[-2000:])
        t.ok(os.path.exists(os.path.join(tmp, 'dist', 'bin', 'gpuslice')),
             'make stage staged the binaries')
        t.ok(os.path.exists(manifest), 'make stage kept dist/gpuslice-dra.yaml')
        if os.path.exists(manifest):
            with open(manifest) as f:
                t.is_eq(f.read(), 'kind: List\n', 'the kept manifest is unchanged')
    t.done()


if __name__ == '__main__':
    main()
