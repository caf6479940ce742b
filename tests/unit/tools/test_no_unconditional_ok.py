#!/usr/bin/env python3
"""No test or bench claims a pass it did not check: no `ok(1, ...)` / `ok(true, ...)` in C and no
`t.ok(True, ...)` in Python under tests/ and bench/. A bench prints its figures as diagnostics
(`diag`, `# ...`) and ok()s only that it measured; a test asserts a condition. Before this test,
bench_sim, bench_monitor, bench_vgpu and bench_launch printed their figures and targets as passes,
and test_expo and test_resilience had one each: it failed."""
import os
import re
import subprocess
import sys

from gstest import Tap

C_OK = re.compile(r'\bok\(\s*(1|true)\s*,')
PY_OK = re.compile(r'\bt\.ok\(\s*True\s*,')


def main():
    t = Tap()
    root = os.environ['GS_SOURCE_ROOT']
    r = subprocess.run(['git', '-C', root, 'ls-files', 'tests', 'bench'], capture_output=True,
                       text=True)
    files = [f for f in r.stdout.splitlines() if f.endswith(('.c', '.h', '.py'))]
    if not files:  # not a git checkout (a tarball): walk the tree
        for top in ('tests', 'bench'):
            for d, _, names in os.walk(os.path.join(root, top)):
                files += [os.path.relpath(os.path.join(d, n), root) for n in names
                          if n.endswith(('.c', '.h', '.py'))]
    t.ok(len(files) > 100, f'{len(files)} test and bench sources scanned')
    hits = []
    for f in files:
        if f.endswith('tap.h') or f.endswith('test_no_unconditional_ok.py'):
            continue
        try:
            text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
        except OSError:
            continue
        pat = PY_OK if f.endswith('.py') else C_OK
        for n, line in enumerate(text.splitlines(), 1):
            if pat.search(line):
                hits.append(f'{f}:{n}: {line.strip()}')
    t.ok(not hits, 'no unconditional ok(1, ...) / t.ok(True, ...) in tests and benches',
         diag='\n'.join(hits))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
