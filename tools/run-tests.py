#!/usr/bin/env python3
"""Runs `meson test` in one or more build directories and sums the TAP results.

Every test is a TAP producer (C tests via tests/unit/tap.h, Python tests via tests/lib/gstest.py).
The closing line is `N passed, N failed` (plus `, N skipped`), the exit status non-zero on any
failure. A test that crashed or timed out without reporting a failing TAP line counts as one
failure; so does one that reported no numbered result, or other results than its plan announced.
"""
import argparse
import json
import os
import re
import subprocess
import sys

# A test line carries its number ("ok 3 - name"): a bare "ok" is not a result of the test but a
# stray line (a child's output, a shell `echo ok`), and counting it would pass a test that ran
# nothing. A bare "not ok" still counts as a failure: a failure is never hidden.
TAP_LINE = re.compile(r'^(not )?ok\b(.*)$')
TAP_NUMBERED = re.compile(r'^\s+(\d+)\b(.*)$')
TAP_PLAN = re.compile(r'^1\.\.(\d+)\b')


def count(entry):
    """(passed, failed, skipped) of one test of meson's testlog.json.

    Only numbered TAP lines count, in sequence from 1; when the test printed a plan (1..N), results
    other than exactly 1..N are one more failure. A test that meson failed (crash, timeout, exit
    status) without a failing TAP line counts as one failure."""
    passed = failed = skipped = 0
    out = entry.get('stdout') or ''
    plan = None
    expect = 1
    for line in out.splitlines():
        p = TAP_PLAN.match(line)
        if p:
            plan = int(p.group(1)) if plan is None else -1  # two plans: never matches
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        n = TAP_NUMBERED.match(m.group(2))
        if not n:
            if m.group(1):
                failed += 1
            continue
        if int(n.group(1)) != expect:
            failed += 1  # out of sequence: a second producer wrote into this test's output
            continue
        expect += 1
        rest = n.group(2)
        if re.search(r'#\s*SKIP', rest, re.I):
            skipped += 1
        elif m.group(1):
            failed += 1
        else:
            passed += 1
    if plan is not None and plan != expect - 1:
        failed += 1
    result = entry.get('result', '')
    if result in ('FAIL', 'TIMEOUT', 'ERROR', 'UNEXPECTEDPASS') and failed == 0:
        failed += 1
    if result == 'SKIP' and passed + failed + skipped == 0:
        skipped += 1
    if result == 'OK' and passed + failed + skipped == 0:
        if plan == 0:
            skipped += 1  # "1..0": the producer skipped everything
        else:
            failed += 1  # a TAP test that reported no result proves nothing
    return passed, failed, skipped


def why(entry, limit=30):
    """The failing TAP lines of a test with the diagnostics that follow each, at most `limit`
    lines: the closing summary then says why, not only what (CI shows the tail of the log)."""
    res = []
    keep = False
    for line in (entry.get('stdout') or '').splitlines():
        if TAP_LINE.match(line):
            keep = line.startswith('not ok')
        elif not line.startswith('#'):
            keep = False
        if keep:
            res.append(line[:200])
    if not res:
        res = [x[:200] for x in (entry.get('stderr') or '').splitlines()[-8:]]
    return res[:limit] + ([f'... {len(res) - limit} more lines'] if len(res) > limit else [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', action='append', required=True, help='build directory (repeatable)')
    ap.add_argument('--suite', action='append', default=[])
    ap.add_argument('--no-suite', action='append', default=[])
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()

    total = [0, 0, 0]
    failed_tests = []
    for b in args.build:
        cmd = ['meson', 'test', '-C', b, '--no-rebuild', '--print-errorlogs',
               '--num-processes', str(args.jobs)]
        for s in args.suite:
            cmd += ['--suite', s]
        for s in args.no_suite:
            cmd += ['--no-suite', s]
        print('==> ' + ' '.join(cmd), flush=True)
        rc = subprocess.call(cmd)
        log = os.path.join(b, 'meson-logs', 'testlog.json')
        sub = [0, 0, 0]
        if os.path.exists(log):
            with open(log) as f:
                for line in f:
                    line = line.strip()
                    if not line:
                        continue
                    e = json.loads(line)
                    p, fl, s = count(e)
                    sub[0] += p
                    sub[1] += fl
                    sub[2] += s
                    if fl:
                        failed_tests.append(f"{b}: {e.get('name')} ({e.get('result')})")
                        failed_tests.extend('      ' + x for x in why(e))
        elif rc != 0:
            sub[1] += 1
            failed_tests.append(f'{b}: meson test failed to run (exit {rc})')
        if rc != 0 and sub[1] == 0:
            sub[1] += 1
            failed_tests.append(f'{b}: meson test exited {rc}')
        print(f'{b}: {sub[0]} passed, {sub[1]} failed, {sub[2]} skipped', flush=True)
        for i in range(3):
            total[i] += sub[i]
    if failed_tests:
        print('failing tests:')
        for t in failed_tests:
            print('  ' + t)
    line = f'{total[0]} passed, {total[1]} failed'
    if total[2]:
        line += f', {total[2]} skipped'
    print(line, flush=True)
    return 1 if total[1] else 0


if __name__ == '__main__':
    sys.exit(main())
