#!/usr/bin/env python3
"""The fuzz-corpus replayer (tests/fuzz/replay_main.c) reports one test per target, never one pass
per input, and fails it on a crash or a sanitizer report, or when the corpus holds nothing. Before
this test the replayer printed `ok` for every input it returned from (728 passes that proved
nothing): the first case below failed."""
import os
import subprocess
import sys
import tempfile

from gstest import Tap


def replay(exe, corpus):
    r = subprocess.run([exe, corpus], capture_output=True, text=True, timeout=120)
    results = [ln for ln in r.stdout.splitlines() if ln.startswith(('ok', 'not ok'))]
    return r, results


def corpus(root, name, files):
    d = os.path.join(root, name)
    os.mkdir(d)
    for fname, data in files.items():
        with open(os.path.join(d, fname), 'wb') as f:
            f.write(data)
    return d


def main():
    t = Tap()
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        good = corpus(tmp, 'good', {'a': b'hello', 'b': b'', 'c': b'\x00\xff' * 64})
        r, results = replay(exe, good)
        t.is_eq(len(results), 1, 'three inputs replayed: one TAP result for the target')
        t.ok(results and results[0].startswith('ok 1 ') and 'replayed 3 corpus inputs' in results[0],
             'the result passes and counts the inputs', diag=r.stdout)
        t.ok('1..1' in r.stdout.splitlines(), 'the plan is 1..1', diag=r.stdout)
        t.is_eq(r.returncode, 0, 'exit status 0')
        t.is_eq(sum(ln.startswith('# replay ') for ln in r.stdout.splitlines()), 3,
                'each input is named in a comment line before it runs')

        bad = corpus(tmp, 'crash', {'a': b'hello', 'b': b'crash now', 'c': b'never reached'})
        r, results = replay(exe, bad)
        t.ok(r.returncode != 0, 'a crashing input fails the replay (non-zero status)',
             diag=f'status {r.returncode}')
        t.ok(not any(ln.startswith('ok') for ln in results), 'and no passing result is printed',
             diag=r.stdout)
        last = (r.stdout.rstrip().splitlines() or [''])[-1]
        t.ok(last.startswith('# replay ') and '/crash/b (' in last,
             'the log ends with the input that crashed', diag=r.stdout)

        empty = corpus(tmp, 'empty', {})
        r, results = replay(exe, empty)
        t.ok(r.returncode != 0 and results and results[0].startswith('not ok 1 '),
             'an empty corpus fails', diag=r.stdout)
        r, results = replay(exe, os.path.join(tmp, 'absent'))
        t.ok(r.returncode != 0 and results and results[0].startswith('not ok 1 '),
             'a missing corpus fails', diag=r.stdout)

        if 'address' in os.environ.get('GS_SANITIZE', ''):
            ovf = corpus(tmp, 'overflow', {'a': b'overflow'})
            r, results = replay(exe, ovf)
            t.ok(r.returncode != 0 and 'AddressSanitizer' in r.stderr,
                 'a read past the input is an ASan report that fails the replay',
                 diag=r.stderr[-2000:])
            t.ok(not any(ln.startswith('ok') for ln in results), 'with no passing result')
        else:
            t.skip('a read past the input fails the replay', 'not a sanitizer build')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
