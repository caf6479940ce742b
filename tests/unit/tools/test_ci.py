#!/usr/bin/env python3
"""CI keeps the style: .ci/run runs `make lint` (clang-format check + clang-tidy, tools/lint.sh)
before the tests; `make lint` installs what it uses through `make deps` (tools/deps.txt) and
nothing else; and the tree is clang-format clean now, so the first CI run does not fail on drift.
Before this test .ci/run had no `make lint` and `make lint` did not run `make deps`: it failed."""
import os
import re
import shutil
import subprocess
import sys

from gstest import Tap


def main():
    t = Tap()
    root = os.environ['GS_SOURCE_ROOT']
    ci = open(os.path.join(root, '.ci', 'run')).read()
    lines = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith('#')]
    t.ok('make lint' in lines, '.ci/run runs make lint', diag=ci)
    t.ok('make lint' in lines and 'make test' in lines
         and lines.index('make lint') < lines.index('make test'),
         '.ci/run lints before it tests')

    mk = open(os.path.join(root, 'Makefile')).read()
    m = re.search(r'^lint:(.*)$', mk, re.M)
    t.ok(m and 'deps' in m.group(1).split(), 'make lint depends on make deps',
         diag=m.group(0) if m else 'no lint target')

    deps = {ln.strip() for ln in open(os.path.join(root, 'tools', 'deps.txt'))
            if ln.strip() and not ln.startswith('#')}
    lint = open(os.path.join(root, 'tools', 'lint.sh')).read()
    for tool, pkg in (('clang-format', 'clang-format'), ('clang-tidy', 'clang-tidy'),
                      ('ninja', 'ninja-build'), ('python3', 'python3')):
        if re.search(rf'\b{re.escape(tool)}\b', lint):
            t.ok(pkg in deps, f'tools/lint.sh uses {tool}: {pkg} is in tools/deps.txt')
    for cfg in ('.clang-format', '.clang-tidy'):
        t.ok(os.path.exists(os.path.join(root, cfg)), f'{cfg} is checked in')

    if not shutil.which('clang-format'):
        t.skip('the tree is clang-format clean', 'clang-format not installed (make deps)')
        return t.done()
    r = subprocess.run(['git', '-C', root, 'ls-files', '--', '*.c', '*.h'], capture_output=True,
                       text=True)
    files = [os.path.join(root, f) for f in r.stdout.splitlines()]
    if not files:
        t.skip('the tree is clang-format clean', 'not a git checkout')
        return t.done()
    r = subprocess.run(['clang-format', '--dry-run', '-Werror'] + files, capture_output=True,
                       text=True, cwd=root)
    bad = sorted({ln.split(':')[0] for ln in r.stderr.splitlines() if ': error:' in ln})
    t.ok(r.returncode == 0 and not bad, f'the tree is clang-format clean ({len(files)} files)',
         diag='\n'.join(bad) or r.stderr[-2000:])
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
