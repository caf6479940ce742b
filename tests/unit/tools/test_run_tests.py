#!/usr/bin/env python3
"""tools/run-tests.py counts honestly: only numbered TAP results count, in sequence, against the
plan; a stray bare `ok` (a child's output, a shell `echo ok`) is not a pass; a test that meson
failed, or that reported nothing, is a failure. Each case below passed or was miscounted by the
runner before this test existed (the bare `ok`, the plan mismatch, the silent OK test)."""
import importlib.util
import os
import sys

from gstest import Tap


def load_runner():
    path = os.path.join(os.environ['GS_SOURCE_ROOT'], 'tools', 'run-tests.py')
    spec = importlib.util.spec_from_file_location('run_tests', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def entry(stdout, result='OK'):
    return {'name': 'synthetic', 'result': result, 'stdout': stdout}


def main():
    t = Tap()
    runner = load_runner()
    count = runner.count
    cases = [
        # (what, stdout, meson result, want (passed, failed, skipped))
        ('numbered results and a plan', 'ok 1 - a\nok 2 - b\n1..2\n', 'OK', (2, 0, 0)),
        ('a failing result', 'ok 1 - a\nnot ok 2 - b\n1..2\n', 'FAIL', (1, 1, 0)),
        ('a skipped result', 'ok 1 - a # SKIP no gpu\n1..1\n', 'OK', (0, 0, 1)),
        ('a stray bare "ok" is not a pass', 'ok 1 - a\nok\n1..1\n', 'OK', (1, 0, 0)),
        ('a bare "ok" alone proves nothing: one failure', 'ok\n', 'OK', (0, 1, 0)),
        ('a bare "not ok" is still a failure', 'ok 1 - a\nnot ok\n1..1\n', 'OK', (1, 1, 0)),
        ('fewer results than the plan: one failure', 'ok 1 - a\n1..3\n', 'OK', (1, 1, 0)),
        ('more results than the plan: one failure', 'ok 1 - a\nok 2 - b\n1..1\n', 'OK', (2, 1, 0)),
        ('a result out of sequence (a second producer) is a failure',
         'ok 1 - a\nok 1 - child\nok 2 - b\n1..2\n', 'OK', (2, 1, 0)),
        ('indented child output is not a result', 'ok 1 - a\n    ok 1 - sub\n1..1\n', 'OK',
         (1, 0, 0)),
        ('crash after passes: one failure', 'ok 1 - a\n', 'FAIL', (1, 1, 0)),
        ('timeout with no output: one failure', '', 'TIMEOUT', (0, 1, 0)),
        ('an OK test that reported nothing is a failure', '', 'OK', (0, 1, 0)),
        ('"1..0" skips the whole program', '1..0 # SKIP no gpusim\n', 'OK', (0, 0, 1)),
        ('meson SKIP with no output is one skip', '', 'SKIP', (0, 0, 1)),
    ]
    for what, out, result, want in cases:
        t.is_eq(count(entry(out, result)), want, what)
    # the closing summary says why a test failed: its not-ok lines with their diagnostics only
    why = runner.why(entry('ok 1 - a\n# fine\nnot ok 2 - b\n# peak 1028 MiB\n# more\n'
                           'ok 3 - c\n# also fine\nnot ok 4 - d\n1..4\n', 'FAIL'))
    t.is_eq(why, ['not ok 2 - b', '# peak 1028 MiB', '# more', 'not ok 4 - d'],
            'why: the failing lines and their diagnostics, nothing of the passing ones')
    why = runner.why({'result': 'ERROR', 'stdout': 'ok 1 - a\n',
                      'stderr': 'x\nSegmentation fault\n'})
    t.is_eq(why, ['x', 'Segmentation fault'],
            'why: a test with no failing line shows its stderr tail')
    long = ''.join(f'not ok {i} - n\n' for i in range(1, 51))
    why = runner.why(entry(long, 'FAIL'))
    t.is_eq((len(why), why[-1]), (31, '... 20 more lines'), 'why: at most 30 lines, then a count')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
