#!/usr/bin/env python3
"""The build's identity, for meson's vcs_tag (src/base/meson.build) and the image build.

    version.py version SOURCE_ROOT   git describe of the newest v* tag ("0.2.0", "0.2.0-14-g1a2b3c4d5e6f",
                                     "-dirty" when the tree has changes), without the leading "v"
    version.py commit SOURCE_ROOT    the commit (12 hex digits, "-dirty" when the tree has changes)

$GPUSLICE_VERSION / $GPUSLICE_COMMIT win when set (a build from a tarball, or an image built
without .git). Exits 1 when neither is known: vcs_tag then uses its fallback (the meson project
version, or "unknown").
"""
import os
import subprocess
import sys


def git(root, *args):
    r = subprocess.run(['git', '-C', root, *args], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise OSError(r.stderr.strip())
    return r.stdout.strip()


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ('version', 'commit'):
        print(__doc__, file=sys.stderr)
        return 2
    what, root = sys.argv[1], sys.argv[2]
    env = os.environ.get('GPUSLICE_VERSION' if what == 'version' else 'GPUSLICE_COMMIT')
    if env:
        print(env)
        return 0
    try:
        if what == 'version':
            out = git(root, 'describe', '--tags', '--match', 'v[0-9]*', '--abbrev=12', '--dirty')
            print(out[1:] if out.startswith('v') else out)
        else:
            commit = git(root, 'rev-parse', '--short=12', 'HEAD')
            dirty = git(root, 'status', '--porcelain', '--untracked-files=no')
            print(commit + ('-dirty' if dirty else ''))
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
