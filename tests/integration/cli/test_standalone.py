#!/usr/bin/env python3
"""Standalone mode end to end on gpusim: `gpuslice run`, `ls`, ledger, libvgpu, signals."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from gstest import Tap, env_paths, sanitizer_runtime

t = Tap()
P = env_paths()
GS = P['GS_GPUSLICE']
TMP = tempfile.mkdtemp(prefix='gs-standalone-')


def base_env(state):
    env = dict(os.environ)
    env.update({
        'GPUSLICE_STATE_DIR': state,
        'GPUSLICE_SIM_DIR': P['GS_SIM_DIR'],
        'GPUSLICE_VGPU_LIB': P['GS_VGPU_LIB'],
        'GPUSIM_PRESET': 't4',
        'GPUSIM_STATE': os.path.join(state, 'gpusim.state'),
    })
    env.pop('LD_LIBRARY_PATH', None)
    rt = sanitizer_runtime()
    if rt:
        env['LD_PRELOAD'] = rt
        env['ASAN_OPTIONS'] = 'detect_leaks=0'
    return env


def fresh_state(name):
    d = os.path.join(TMP, name)
    os.makedirs(d)
    return d, base_env(d)


def real_nvml_present():
    """Whether the dynamic loader finds a libnvidia-ml.so.1 of its own (a real driver)."""
    r = subprocess.run(['/sbin/ldconfig', '-p'], capture_output=True, text=True)
    return 'libnvidia-ml.so.1' in r.stdout


def run(args, env, timeout=60):
    return subprocess.run([GS] + args, env=env, capture_output=True, text=True, timeout=timeout)


def ls_json(env):
    r = run(['ls', '--sim', '-o', 'json'], env)
    return json.loads(r.stdout) if r.returncode == 0 else None


def physical_used_mib(env):
    """Device memory used on gpusim, read through NVML without libvgpu (the physical truth)."""
    e = dict(env)
    e['LD_LIBRARY_PATH'] = P['GS_SIM_DIR']
    r = subprocess.run([P['GS_GPUSIM_SMI']], env=e, capture_output=True, text=True, timeout=30)
    for line in r.stdout.splitlines():
        if 'MiB /' in line:
            part = line.split('MiB /')[0].split()[-1]
            return int(part)
    return None


def wait_until(pred, timeout=30.0):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return pred()


def test_basic():
    state, env = fresh_state('basic')
    script = ('echo "CVD=$CUDA_VISIBLE_DEVICES"; echo "LIM=$GPUSLICE_LIMITS_DIR"; '
              'cat "$GPUSLICE_LIMITS_DIR"/*.limits; ' + GS + ' probe')
    r = run(['run', '--sim', '--name', 'job', '--cores', '30', '--memory', '4Gi', '--',
             'sh', '-c', script], env)
    t.is_eq(r.returncode, 0, 'run: exit status of the command (0)')
    out = r.stdout
    cvd = [l for l in out.splitlines() if l.startswith('CVD=')]
    t.ok(cvd and cvd[0].startswith('CVD=GPU-'), 'CUDA_VISIBLE_DEVICES is the GPU UUID', out)
    uuid = cvd[0][4:] if cvd else ''
    t.like(out, 'device %s memory=4294967296 cores=30' % uuid, 'limits file grants 4Gi/30 by UUID')
    t.like(out, 'total 4096MiB', 'cuMemGetInfo shows the 4096MiB slice')
    t.like(out, 'allocated 4096MiB in 4096 allocations of 1Mi; next allocation: '
                'CUDA_ERROR_OUT_OF_MEMORY', 'OOM exactly at the 4096MiB boundary')
    t.like(r.stderr, 'gpuslice: slice job: hami-gpu-0 (%s) cores 30%% memory 4Gi' % uuid,
           'summary line names device, UUID and limits')
    snap = ls_json(env)
    t.is_eq(len(snap['slices']), 0, 'slice released when the command ended')
    t.ok(not os.listdir(os.path.join(state, 'slices')), 'slice directory removed')

    r = run(['run', '--sim', '--memory', '4Gi', '--cores', '30', '--', GS, 'smi'], env)
    t.like(r.stdout, '0MiB / 4096MiB', 'gpuslice smi inside the slice shows 0MiB / 4096MiB')
    r = run(['smi', '--sim'], env)
    t.like(r.stdout, '0MiB / 15360MiB', 'gpuslice smi outside a slice shows the whole T4')
    bare = {k: v for k, v in env.items() if k not in ('LD_LIBRARY_PATH', 'GPUSIM_SMI_NVML')}
    r = run(['smi'], bare)
    if real_nvml_present():
        t.skip('gpuslice smi without --sim on a machine without a driver', 'a driver is installed')
    else:
        t.ok(r.returncode == 4 and 'Tesla T4' not in r.stdout,
             'gpuslice smi without --sim shows no simulated GPU on a machine without a driver',
             r.stdout + r.stderr)
        t.like(r.stderr, 'no NVIDIA driver on this machine (gpuslice smi --sim shows the '
               'simulated GPU)', 'and says so, naming --sim')

    r = run(['run', '--sim', '--', 'sh', '-c', 'exit 7'], env)
    t.is_eq(r.returncode, 7, 'exit status of the command is passed through')
    r = run(['run', '--sim', '--', 'sh', '-c', 'kill -TERM $$'], env)
    t.is_eq(r.returncode, 128 + signal.SIGTERM, 'death by signal N gives 128+N')
    r = run(['run', '--sim', '--', '/nonexistent/prog'], env)
    t.is_eq(r.returncode, 127, 'command not found: 127')
    t.like(r.stderr, '/nonexistent/prog', 'message names the command')
    t.is_eq(len(ls_json(env)['slices']), 0, 'failed exec releases the slice')
    t.like(r.stderr, 'no slice was allocated', 'a missing command is found before allocating')
    t.ok('gpuslice: slice ' not in r.stderr, 'no slice summary for a command that does not exist',
         r.stderr)
    r = run(['run', '--sim', '--', 'gpuslice-no-such-program'], env)
    t.is_eq(r.returncode, 127, 'command not in PATH: 127')
    t.like(r.stderr, 'gpuslice-no-such-program: No such file or directory (no slice was '
           'allocated)', 'a command not in PATH is named before allocating')
    plain = os.path.join(state, 'not-executable')
    with open(plain, 'w') as f:
        f.write('#!/bin/sh\nexit 0\n')
    os.chmod(plain, 0o644)
    r = run(['run', '--sim', '--', plain], env)
    t.is_eq(r.returncode, 126, 'a file that is not executable: 126, as a shell says')
    # gpusim refuses images that are neither nvcc output nor its own "gpusim" image, like the driver
    r = run(['run', '--sim', '--memory', '1Gi', '--cores', '50', '--', GS, 'probe', '--max', '0',
             '-k', '3', '--kernel-us', '100'], env)
    t.ok(r.returncode == 0 and '3 kernels of 100us took' in r.stdout,
         'probe --kernels loads its module and launches on gpusim inside a slice', r.stdout + r.stderr)


def test_bad_input():
    state, env = fresh_state('bad')
    cases = [
        (['--memory', 'abc'], '--memory: "abc" is not a quantity'),
        (['--cores', '101'], '--cores: 101 is outside 1..100'),
        (['--cores', '0'], '--cores: 0 would mean no compute limit'),
        (['--memory', '4096'], '--memory: "4096" is 4096 bytes, below the 1Mi minimum; a bare '
         'number is bytes (did you mean 4096Mi?)'),
        (['--memory', '512Ki'], '--memory: "512Ki" is below the 1Mi minimum'),
        (['--cores', 'x'], '--cores: "x" is not an integer'),
        (['--memory', '0'], '--memory: "0" must be more than 0'),
        (['--gpus', '0'], '--gpus'),
        (['--bogus'], 'bogus'),
        (['--policy', 'random'], 'random'),
    ]
    for args, msg in cases:
        r = run(['run', '--sim'] + args + ['--', 'true'], env)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        t.ok(r.returncode == 2 and len(lines) == 1 and msg in lines[0],
             'bad input %s: one clear line, exit 2' % ' '.join(args),
             'rc=%d stderr=%r' % (r.returncode, r.stderr))
    r = run(['run', '--sim'], env)
    t.ok(r.returncode == 2 and 'no COMMAND' in r.stderr, 'missing command: exit 2', r.stderr)
    # No GPU: without --sim there is no NVIDIA driver here.
    r = run(['run', '--', 'true'], env)
    t.ok(r.returncode == 4 and 'no GPU found' in r.stderr and '--sim' in r.stderr,
         'no GPU: clear message suggesting --sim, exit 4', r.stderr)
    r = run(['run', '--sim', '--cores', '80', '--', 'true'], env)
    t.is_eq(r.returncode, 0, '80 cores fit on an empty GPU')


def test_refusal_and_wait():
    state, env = fresh_state('wait')
    go = os.path.join(state, 'go')
    # The holder runs until the test says so: no timing assumption on a loaded machine.
    holder = subprocess.Popen([GS, 'run', '--sim', '--name', 'holder', '--cores', '80', '--',
                               'sh', '-c', 'while [ ! -e "$0" ]; do sleep 0.05; done', go],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not t.ok(wait_until(lambda: (ls_json(env) or {}).get('slices'), 60),
                'holder slice is live'):
        t.diag('holder exit: %r' % holder.poll())
        t.diag(run(['ls', '--sim', '-o', 'json'], env))
        if holder.poll() is not None:
            t.diag(holder.communicate())
    r = run(['run', '--sim', '--name', 'big', '--cores', '30', '--', 'true'], env)
    t.is_eq(r.returncode, 3, 'slice that does not fit: exit 3')
    t.like(r.stderr, 'InsufficientCapacity cores: need 30, free 20 [CardInsufficientCore]',
           'refusal explains with the allocator reason')
    r = run(['run', '--sim', '--wait', '--timeout', '500ms', '--cores', '30', '--', 'true'], env)
    t.ok(r.returncode == 3 and 'gave up waiting' in r.stderr, '--wait --timeout gives up: exit 3',
         r.stderr)
    errlog = os.path.join(state, 'patient.err')
    with open(errlog, 'w') as ef:
        patient = subprocess.Popen([GS, 'run', '--sim', '--wait', '--timeout', '120s', '--name',
                                    'patient', '--cores', '30', '--', 'echo', 'ran'],
                                   env=env, stdout=subprocess.PIPE, stderr=ef, text=True)

    def waiting():
        with open(errlog) as f:
            return 'waiting for slice patient to fit' in f.read()
    t.ok(wait_until(waiting, 60), '--wait says what it waits for')
    t.ok(patient.poll() is None, '--wait keeps waiting while the GPU is full')
    with open(go, 'w'):
        pass
    out, _ = patient.communicate(timeout=150)
    t.is_eq(patient.returncode, 0, '--wait: runs once the holder is gone')
    t.like(out, 'ran', 'the waiting command ran')
    t.is_eq(holder.wait(timeout=60), 0, 'holder ended normally')


def test_kill9_reclaims():
    state, env = fresh_state('kill')
    p = subprocess.Popen([GS, 'run', '--sim', '--name', 'victim', '--cores', '50', '--memory',
                          '2Gi', '--', GS, 'probe', '--max', '1Gi', '--hold', '60s'],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t.ok(wait_until(lambda: physical_used_mib(env) == 1024), 'victim holds 1024MiB on gpusim')
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    snap = wait_until(lambda: (lambda s: s if s and not s['slices'] else None)(ls_json(env)))
    t.ok(snap is not None, 'kill -9 of the runner: its slice is reclaimed')
    t.ok(wait_until(lambda: physical_used_mib(env) == 0, 20),
         'its workload died with it and gpusim reclaimed the memory')
    t.is_eq(os.listdir(os.path.join(state, 'slices')) if os.path.isdir(
        os.path.join(state, 'slices')) else [], [], 'reclaimed slice directory removed')


def test_parallel_no_overcommit():
    state, env = fresh_state('parallel')
    n = 20
    procs = []
    for i in range(n):
        procs.append(subprocess.Popen(
            [GS, 'run', '--sim', '--quiet', '--name', 'p%02d' % i, '--cores', '10', '--memory',
             '1Gi', '--', GS, 'probe', '--max', '1Gi', '--hold', '120s'],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    refused = []
    deadline = time.time() + 90
    while time.time() < deadline and len(refused) < n - 10:
        refused = [p for p in procs if p.poll() is not None]
        time.sleep(0.1)
    codes = sorted(p.returncode for p in refused)
    t.is_eq(codes, [3] * (n - 10), '10 of 20 concurrent 10-core slices refused (exit 3)')
    snap = wait_until(lambda: (lambda s: s if s and len(s['slices']) == 10 else None)(
        ls_json(env)))
    t.ok(snap is not None, 'ledger holds exactly 10 live slices')
    if snap:
        g = snap['gpus'][0]
        t.is_eq(g['allocated']['cores'], 100, 'ledger: allocated cores == capacity, never more')
        t.is_eq(g['allocated']['memory'], 10 * 1024 ** 3, 'ledger: 10 x 1Gi allocated')
        t.is_eq(g['free']['cores'], 0, 'ledger: no core left')
    t.ok(wait_until(lambda: physical_used_mib(env) == 10 * 1024, 60),
         'gpusim: the 10 workloads hold exactly 10240MiB (no over-commit)')
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    codes = [p.wait(timeout=60) for p in procs]
    t.is_eq(sorted(codes).count(128 + signal.SIGTERM), 10,
            'SIGTERM forwarded to the workloads (128+15)')
    t.is_eq(len(ls_json(env)['slices']), 0, 'all slices released')


def test_ls_json_schema():
    state, env = fresh_state('ls')
    p = subprocess.Popen([GS, 'run', '--sim', '--name', 'lsjob', '--cores', '30', '--memory',
                          '4Gi', '--', GS, 'probe', '--max', '512Mi', '--hold', '60s'],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    snap = wait_until(lambda: (lambda s: s if s and s['slices'] and
                               s['slices'][0]['devices'][0]['usage']['memory'] > 0 else None)(
        ls_json(env)))
    t.ok(snap is not None, 'ls -o json shows the live slice with usage')
    if snap:
        t.is_eq(sorted(snap.keys()), ['gpus', 'node', 'slices', 'stateDir'], 'top-level keys')
        g = snap['gpus'][0]
        t.is_eq(sorted(g.keys()), ['allocated', 'capacity', 'device', 'free', 'minor',
                                   'productName', 'slices', 'uuid'], 'gpu keys')
        t.is_eq(g['capacity'], {'cores': 100, 'memory': 15 * 1024 ** 3}, 'T4 capacity')
        t.is_eq(g['free'], {'cores': 70, 'memory': 11 * 1024 ** 3}, 'free after 30/4Gi')
        s = snap['slices'][0]
        t.is_eq(sorted(s.keys()), ['command', 'created', 'devices', 'id', 'name', 'owner', 'uid'],
                'slice keys')
        d = s['devices'][0]
        t.is_eq(d['limits'], {'cores': 30, 'memory': 4 * 1024 ** 3}, 'slice limits')
        t.is_eq(d['usage']['memory'], 512 * 1024 ** 2, 'live usage from the shared region')
        t.is_eq(sorted(d['usage'].keys()), ['busyNs', 'launches', 'live', 'memory', 'oomCount'],
                'usage keys')
    r = run(['ls', '--sim'], env)
    t.like(r.stdout, 'lsjob', 'table lists the slice')
    t.like(r.stdout, '30/100%', 'table shows allocated/capacity cores')
    r = run(['top', '--sim', '--iterations', '2', '--interval', '200ms'], env)
    t.ok(r.returncode == 0 and r.stdout.count('gpuslice top') == 2, 'top refreshes N times')
    p.send_signal(signal.SIGINT)
    p.wait(timeout=30)


def test_qos_flags():
    """--compute-policy and --priority reach the slice's limits file (issue 24), with the
    other slices of the machine as peers; a bad value is refused naming the flag."""
    state, env = fresh_state('qos')
    r = run(['run', '--sim', '-q', '--cores', '30', '--compute-policy', 'hard', '--priority',
             'high', '--', 'sh', '-c', 'cat "$GPUSLICE_LIMITS_DIR"/*.limits'], env)
    t.is_eq(r.returncode, 0, f'run with QoS flags ({r.stderr.strip()})')
    t.like(r.stdout, 'version 2\n', 'limits file version 2')
    t.like(r.stdout, 'policy hard\n', '--compute-policy hard in the limits file')
    t.like(r.stdout, 'priority 0\n', '--priority high is HAMi priority 0')
    t.like(r.stdout, f'peers {state}/slices\n', 'the slices directory is the peers directory')
    r = run(['run', '--sim', '-q', '--', 'sh', '-c', 'cat "$GPUSLICE_LIMITS_DIR"/*.limits'], env)
    t.ok('policy' not in r.stdout and 'priority' not in r.stdout,
         'without flags: no policy or priority line (the defaults apply)')
    r = run(['run', '--sim', '--compute-policy', 'soft', '--', 'true'], env)
    t.ok(r.returncode != 0, '--compute-policy soft refused')
    t.like(r.stderr, '--compute-policy: "soft"', 'message names the flag and the value')


for fn in [test_basic, test_bad_input, test_refusal_and_wait, test_kill9_reclaims,
           test_parallel_no_overcommit, test_ls_json_schema, test_qos_flags]:
    t.run(fn.__name__, fn)
subprocess.run(['rm', '-rf', TMP])
sys.exit(t.done())
