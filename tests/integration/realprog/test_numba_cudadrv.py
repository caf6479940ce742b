#!/usr/bin/env python3
"""numba's own CUDA driver suite, `python3 -m numba.runtests numba.cuda.tests.cudadrv` (Debian's
python3-numba, unchanged), on gpusim and under libvgpu (4 GiB slice, HAMi's
CUDA_DEVICE_MEMORY_LIMIT_0).

  - every test passes except those in numba-cudadrv-expected.txt, each of which fails for its
    listed reason only (kernel: an AssertionError on computed values and no CUDA driver error;
    toolkit: the missing toolkit library is named);
  - a listed test that passes is a failure too (the list must stay exact);
  - at least 150 tests pass;
  - under libvgpu every test has the same outcome as on gpusim.

The suite runs as on a machine without the CUDA toolkit (CUDA_HOME points at an empty folder), so
its outcome does not depend on what the machine has installed."""
import os
import re
import subprocess
import sys

from gstest import Tap
from realprog import Machine, sanitized_build

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_ID = re.compile(r'\((numba\.cuda\.tests\.cudadrv\.[\w.]+)\)')
OUTCOME = re.compile(r'(?:\.\.\. |^)(ok|ERROR|FAIL|skipped|expected failure|unexpected success)\b',
                     re.M)
DETAIL = re.compile(r'^(?:ERROR|FAIL): \S+ \((numba\.cuda\.tests\.cudadrv\.[\w.]+)\)$', re.M)
TOOLKIT_MARKS = ('NvvmSupportError', 'libNVVM', 'nvvm/', 'libdevice', 'cudart', 'NVRTC')


def load_expected():
    rows = {}
    with open(os.path.join(HERE, 'numba-cudadrv-expected.txt')) as f:
        for ln in f:
            if ln.strip() and not ln.startswith('#'):
                tid, reason, why = ln.rstrip('\n').split(' ', 2)
                rows[tid] = (reason, why)
    return rows


def run_suite(m, env):
    env = dict(env)
    env['CUDA_HOME'] = os.path.join(m.dir, 'no-toolkit')
    os.makedirs(env['CUDA_HOME'], exist_ok=True)
    r = subprocess.run([sys.executable, '-m', 'numba.runtests', '-v',
                        'numba.cuda.tests.cudadrv'], env=env, capture_output=True, text=True,
                       timeout=3300, cwd=m.dir)
    text = r.stderr + r.stdout
    return parse(text)


def parse(text):
    """Per-test outcome from unittest's verbose lines (a test's own output may land between its
    name and its outcome), failure details from the ERROR/FAIL blocks."""
    head = text.split('\n' + '=' * 70 + '\n', 1)[0]
    ids = list(TEST_ID.finditer(head))
    outcomes = {}
    for k, m in enumerate(ids):
        seg = head[m.end():ids[k + 1].start() if k + 1 < len(ids) else len(head)]
        o = OUTCOME.search(seg)
        if o:
            what = o.group(1)
            outcomes[m.group(1)] = 'fail' if what in ('ERROR', 'FAIL') else what
    details = {}
    parts = DETAIL.split(text)
    for k in range(1, len(parts) - 1, 2):
        details[parts[k]] = parts[k + 1].split('\n' + '=' * 70)[0]
    ran = re.search(r'^Ran (\d+) tests?', text, re.M)
    return outcomes, details, int(ran.group(1)) if ran else 0, text


def verified(reason, detail):
    if reason == 'toolkit':
        return any(mark in detail for mark in TOOLKIT_MARKS)
    if reason == 'kernel':
        last = [ln for ln in detail.splitlines() if ln.strip()]
        return bool(last) and last[-1].startswith('AssertionError') and 'CudaAPIError' not in detail
    return False


def main():
    t = Tap()
    why = sanitized_build()
    if why:
        t.skip('numba cudadrv suite', why)
        return t.done()
    probe = subprocess.run([sys.executable, '-c', 'import numba.cuda'], capture_output=True)
    if probe.returncode != 0:
        t.skip('numba cudadrv suite', f'{sys.executable} cannot import numba '
               '(apt-get install python3-numba)')
        return t.done()
    expected = load_expected()
    t.ok(all(r in ('kernel', 'toolkit') for r, _ in expected.values()),
         'the expected-failure list uses only the reasons kernel and toolkit')
    m = Machine('t4')
    try:
        sim, details, ran, text = run_suite(m, m.env(None))
        t.ok(ran > 0 and len(sim) == ran, f'gpusim: {ran} tests ran, every outcome parsed',
             diag=f'parsed {len(sim)}\n{text[-3000:]}')
        passed = sorted(k for k, v in sim.items() if v == 'ok')
        failed = sorted(k for k, v in sim.items() if v == 'fail')
        t.ok(len(passed) >= 150, f'gpusim: {len(passed)} tests pass (>= 150)')
        unexpected = [k for k in failed if k not in expected]
        t.is_eq(unexpected, [], 'gpusim: no failure outside the expected list')
        for k in unexpected:
            t.diag(f'{k}:\n{details.get(k, "(no detail)")[-1500:]}')
        t.is_eq(sorted(k for k in expected if sim.get(k) == 'ok'), [],
                'gpusim: no listed test passes (the list is exact)')
        t.is_eq(sorted(k for k in expected if k not in sim), [],
                'gpusim: every listed test exists and ran')
        wrong = [k for k in failed if k in expected and not verified(expected[k][0],
                                                                      details.get(k, ''))]
        t.is_eq(wrong, [], 'gpusim: each expected failure fails for its listed reason only')
        for k in wrong:
            t.diag(f'{k} ({expected[k][0]}):\n{details.get(k, "(no detail)")[-1500:]}')

        vg, vdetails, vran, vtext = run_suite(m, m.env('4g'))
        t.is_eq(vran, ran, f'libvgpu (4 GiB slice): the same {ran} tests ran')
        diff = sorted(k for k in set(sim) | set(vg) if sim.get(k) != vg.get(k))
        t.is_eq(diff, [], 'libvgpu (4 GiB slice): every test has the same outcome as on gpusim')
        for k in diff:
            t.diag(f'{k}: gpusim {sim.get(k)}, libvgpu {vg.get(k)}\n'
                   f'{vdetails.get(k, "")[-1500:]}')
    finally:
        m.close()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
