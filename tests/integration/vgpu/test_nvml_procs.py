#!/usr/bin/env python3
"""A slice's NVML process lists (issue 36): two slices on one simulated GPU, each with processes
holding memory; inside slice A, `gpuslice smi` and a program calling NVML through dlopen list
exactly A's processes, with their pids as A sees them and what libvgpu charged for them, never
B's. The count query, a too-small buffer, the v1/v2/v3 structs; without libvgpu the same program
lists every process (the check can fail); outside a slice libvgpu passes the driver's list on."""
import os
import re
import shutil
import subprocess
import tempfile
import time

from gstest import Tap, env_paths, sanitizer_runtime

t = Tap()
P = env_paths()
GS = P['GS_GPUSLICE']
PROCS = os.path.join(P['GS_BUILD_ROOT'], 'tests', 'integration', 'vgpu', 'vgpu_nvml_procs')
TMP = tempfile.mkdtemp(prefix='gs-nvml-procs-')
MiB = 1 << 20
NVML_SUCCESS, NVML_ERROR_INSUFFICIENT_SIZE = 0, 7
CHILDREN = []


def base_env():
    env = dict(os.environ)
    env.update({
        'GPUSLICE_STATE_DIR': os.path.join(TMP, 'state'),
        'GPUSLICE_SIM_DIR': P['GS_SIM_DIR'],
        'GPUSLICE_VGPU_LIB': P['GS_VGPU_LIB'],
        'GPUSIM_PRESET': 't4',
        'GPUSIM_STATE': os.path.join(TMP, 'gpusim.state'),
    })
    env.pop('LD_LIBRARY_PATH', None)
    rt = sanitizer_runtime()
    if rt:
        env['LD_PRELOAD'] = rt
        env['ASAN_OPTIONS'] = 'detect_leaks=0'
    return env


def wait_for(pred, timeout=60.0):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return pred()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ''


def held(path):
    return 'cuMemGetInfo now' in read(path)


def parse_procs(text):
    """key=value lines of vgpu_nvml_procs -> (summary by first word, proc entries)."""
    summary, procs = {}, []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        kv = dict(w.split('=', 1) for w in words[1:] if '=' in w)
        if words[0] == 'proc':
            procs.append(kv)
        else:
            summary[words[0]] = kv
    return summary, procs


def section(text, name):
    m = re.search(r'@@@%s\n(.*?)(?=@@@|\Z)' % name, text, re.S)
    return m.group(1) if m else ''


def smi_rows(text):
    """(pid, MiB) of every process row of `gpuslice smi`."""
    return [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r'^\|\s+0\s+(\d+)\s+.*?\s(\d+)MiB\s+\|$', text, re.M)]


def smi_used(text):
    m = re.search(r'(\d+)MiB / (\d+)MiB', text)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def host_pid_of(marker):
    """The pid (in our namespace) of the probe whose command line holds marker."""
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        cmd = read('/proc/%s/cmdline' % d).split('\0')
        if cmd[0].endswith('gpuslice') and 'probe' in cmd and marker in cmd and \
                TMP in read('/proc/%s/environ' % d):  # this test's, not a leftover
            return int(d)
    return None


def can_unshare():
    try:
        r = subprocess.run(['unshare', '-p', '-f', '--kill-child', '--mount-proc', 'true'], capture_output=True,
                           timeout=30)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def main():
    env = base_env()
    go = os.path.join(TMP, 'go')
    out = {k: os.path.join(TMP, k + '.out') for k in ('a1', 'a2', 'b')}
    nested = can_unshare()
    if not nested:
        t.diag('unshare -p -f --mount-proc is not permitted here: the second process of slice A '
               'runs in A\'s own pid namespace')
    # Slice B: one process holding 1Gi.
    b = subprocess.Popen([GS, 'run', '--sim', '--name', 'b', '--memory', '4Gi', '--cores', '40', '--', 'sh', '-c',
                          '"$0" probe --max 1Gi --hold 600s > "$1"', GS, out['b']],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    CHILDREN.append(b)
    # Slice A: two processes (512Mi; 256Mi, in a pid namespace of its own when permitted: its
    # slot then holds the pid that namespace gives it, 1), then smi and the NVML program. The
    # namespace's init ignores SIGTERM from outside: it is ended with SIGKILL.
    second = ('unshare -p -f --kill-child --mount-proc "$0" probe --max 256Mi --hold 600s > "$2" &' if nested
              else '"$0" probe --max 256Mi --hold 600s > "$2" &')
    script = ('"$0" probe --max 512Mi --hold 600s > "$1" & P1=$!; ' + second + ' U=$!; '
              'echo "P1=$P1"; '
              'while [ ! -e "$3" ]; do sleep 0.05; done; '
              'echo @@@SMI; "$0" smi; echo @@@PROCS; "$4"; '
              'echo @@@BARE; env LD_PRELOAD="$5" "$4"; echo @@@END; '
              'kill $P1; kill -9 $(cat /proc/$U/task/$U/children 2>/dev/null) $U; wait')
    a = subprocess.Popen([GS, 'run', '--sim', '--name', 'a', '--memory', '4Gi', '--cores', '40', '--', 'sh', '-c',
                          script, GS, out['a1'], out['a2'], go, PROCS,
                          sanitizer_runtime() or ''],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    CHILDREN.append(a)
    ok = wait_for(lambda: all(held(p) for p in out.values()), 90)
    if not t.ok(ok, 'both slices\' processes hold their memory (B 1Gi; A 512Mi and 256Mi)'):
        for k, p in out.items():
            t.diag('%s: %r' % (k, read(p)))
        for name, proc in (('A', a), ('B', b)):
            if proc.poll() is not None:
                t.diag('slice %s ended: %r' % (name, proc.communicate()))
    pid_a1 = host_pid_of('512Mi')
    pid_a2 = host_pid_of('256Mi')
    pid_b = host_pid_of('1Gi')
    if not t.ok(pid_a1 and pid_a2 and pid_b, 'the three probes found: A %s, %s; B %s' % (
        pid_a1, pid_a2, pid_b)):
        return
    if nested and pid_a2:
        ns = [l for l in read('/proc/%d/status' % pid_a2).splitlines() if l.startswith('NSpid:')]
        t.diag('A\'s second process: %s' % (ns[0] if ns else '?'))
    t0 = time.time()
    open(go, 'w').close()
    try:
        a_out, a_err = a.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        a.kill()
        a_out, a_err = a.communicate()
    t.diag('slice A\'s checks took %.1fs' % (time.time() - t0))
    t.is_eq(a.returncode, 0, 'slice A\'s command ended normally')
    if a.returncode != 0:
        t.diag(a_err)

    # gpuslice smi inside slice A.
    smi = section(a_out, 'SMI')
    rows = smi_rows(smi)
    pids = sorted(p for p, _ in rows)
    t.ok(pids == sorted([pid_a1, pid_a2]), 'gpuslice smi in slice A lists exactly A\'s two '
         'processes, by the pids A sees (%s)' % pids, smi)
    t.ok(pid_b not in pids and str(pid_b) not in smi, 'and never B\'s process (pid %s)' % pid_b)
    used, total = smi_used(smi)
    t.is_eq(total, 4096, 'its memory line is the slice\'s 4096MiB')
    mibs = dict(rows)
    t.ok(mibs.get(pid_a1, 0) >= 512 and mibs.get(pid_a2, 0) >= 256,
         'each process shows at least what it holds (512MiB, 256MiB): %s' % mibs)
    t.ok(used is not None and abs(sum(mibs.values()) - used) <= len(mibs),
         'the processes\' usage adds up to the memory line (%s MiB vs %s MiB, MiB rounding)' % (
             sum(mibs.values()), used))

    # The NVML program under libvgpu inside slice A.
    summary, procs = parse_procs(section(a_out, 'PROCS'))
    t.is_eq(summary.get('count'), {'rc': str(NVML_ERROR_INSUFFICIENT_SIZE), 'n': '2'},
            'count query (infos NULL, *infoCount 0): NVML_ERROR_INSUFFICIENT_SIZE and 2')
    t.is_eq(summary.get('small'), {'rc': str(NVML_ERROR_INSUFFICIENT_SIZE), 'n': '2'},
            'room for 1 of 2: NVML_ERROR_INSUFFICIENT_SIZE and the count needed, 2')
    for api in ('v3', 'v2', 'v1'):
        t.is_eq(summary.get(api), {'rc': '0', 'n': '2', 'guard': 'ok'},
                '%s: NVML_SUCCESS, 2 entries, nothing written past the room given' % api)
        got = {int(p['pid']): int(p['mem']) for p in procs if p['api'] == api}
        t.is_eq(sorted(got), sorted([pid_a1, pid_a2]), '%s: A\'s pids as A sees them' % api)
        t.ok(got.get(pid_a1, 0) >= 512 * MiB and got.get(pid_a2, 0) >= 256 * MiB and
             (got.get(pid_a1, 0) >> 20) == mibs.get(pid_a1) and
             (got.get(pid_a2, 0) >> 20) == mibs.get(pid_a2),
             '%s: usedGpuMemory is the charge smi shows (%s)' % (api, got))
        if api != 'v1':
            ids = {(p['gi'], p['ci']) for p in procs if p['api'] == api}
            t.is_eq(ids, {('4294967295', '4294967295')}, '%s: no MIG instance ids' % api)
    t.is_eq(summary.get('graphics'), {'rc': '0', 'n': '0'},
            'graphics list: none of the GPU\'s (no graphics work in the slice)')
    t.is_eq(summary.get('mps'), {'rc': '0', 'n': '0'}, 'MPS list: none')

    # The same program without libvgpu: the driver lists every process, B's included.
    bare_sum, bare = parse_procs(section(a_out, 'BARE'))
    bare_pids = {int(p['pid']) for p in bare if p['api'] == 'v3'}
    t.ok(pid_b in bare_pids and pid_a1 in bare_pids,
         'without libvgpu the driver lists B\'s process too: %s' % sorted(bare_pids))

    # Outside a slice (libvgpu preloaded, no limits): the driver's list, unchanged.
    outside = dict(env)
    empty = os.path.join(TMP, 'no-limits')
    os.mkdir(empty)
    outside.update({'GPUSLICE_LIMITS_DIR': empty, 'LD_LIBRARY_PATH': P['GS_SIM_DIR'],
                    'LD_PRELOAD': ' '.join(x for x in (sanitizer_runtime(), P['GS_VGPU_LIB'])
                                           if x)})
    r = subprocess.run([PROCS], env=outside, capture_output=True, text=True, timeout=60)
    _, out_procs = parse_procs(r.stdout)
    out_pids = {int(p['pid']) for p in out_procs if p['api'] == 'v3'}
    t.ok(r.returncode == 0 and pid_b in out_pids,
         'outside a slice libvgpu passes the driver\'s list on: %s' % sorted(out_pids),
         r.stdout + r.stderr)

    if pid_b:
        os.kill(pid_b, 15)
    try:
        b.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        b.kill()
        b.communicate()


try:
    main()
finally:
    for marker in ('512Mi', '256Mi', '1Gi'):
        pid = host_pid_of(marker)
        if pid:
            os.kill(pid, 9)
    for c in CHILDREN:
        if c.poll() is None:
            c.kill()
            c.communicate()
    shutil.rmtree(TMP, ignore_errors=True)
    t.done()
