#!/usr/bin/env python3
"""gpusim stays usable until the process is gone (issue 20 item 5a): a program whose monitoring
thread is inside CUDA and NVML calls while main returns must exit cleanly, every time. The
destructors used to unmap the shared state under that thread (SIGSEGV about 1 run in 50);
this runs the program 150 times, one shared state, and fails on any signal or error."""
import os
import subprocess
import sys
import tempfile

from gstest import Tap

RUNS = 150


def main():
    t = Tap()
    prog = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GPUSIM_STATE=os.path.join(d, 'state'))
        bad = []
        for i in range(RUNS):
            p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                bad.append(f'run {i}: status {p.returncode} {p.stderr.strip()[:200]}')
        t.is_eq(bad, [], f'{RUNS} exits with a thread inside the driver: no signal, no error')
        leftovers = [f for f in os.listdir('/dev/shm') if f.startswith('gpusim-')] \
            if os.path.isdir('/dev/shm') else []
        st = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
        t.is_eq(st.returncode, 0, 'and once more after them (the state is consistent)')
        del leftovers
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
