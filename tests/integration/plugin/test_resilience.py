#!/usr/bin/python3
"""The kubelet plugin under a hung API server, a second instance, crash leftovers, a huge
checkpoint and hostile claim strings -- judged from kubelet's side of the gRPC sockets and from
the files on disk.

- Worker starvation: with every claim GET hanging, more NodePrepareResources calls than gRPC
  workers are in flight; an unprepare of a prepared claim and a re-prepare of a prepared claim
  are still answered (they need no API), and every stuck prepare ends by its gRPC deadline with an
  error naming the deadline instead of holding a thread for 30 s x 5 attempts. A call kubelet
  cancels stops its API request at once.
- Single instance: a second plugin on the same state directory refuses to start and says why;
  the first keeps serving. A plugin removes only sockets it created.
- Temporaries of interrupted atomic writes are removed at start-up (ours only).
- A 100 MB checkpoint is moved aside like any corrupt one; the plugin starts.
- A NUL byte or invalid UTF-8 in a claim's namespace/name/UID is refused, not truncated.
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

import pluginlib as pl  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402

PREPARE_V1 = '/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources'
UNPREPARE_V1 = '/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources'
STUCK_CALLS = 6  # more than --grpc-threads (4)


def stuck_prepare(env, c, results, i):
    try:
        results[i] = env.kubelet.prepare('v1', [pl.ref(c)], timeout=3)
    except grpc.RpcError as e:
        results[i] = e


def test_starvation(t, env):
    ready = [env.api.put(pl.claim(f'ready-{i}', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
             for i in range(2)]
    resp = env.kubelet.prepare('v1', [pl.ref(c) for c in ready])
    t.ok(all(not resp.claims[c['metadata']['uid']].error for c in ready),
         'starvation: two claims prepared while the API answers')

    stuck = [env.api.put(pl.claim(f'stuck-{i}', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
             for i in range(STUCK_CALLS)]
    env.api.clear_log()
    env.api.delay_next(1000, 30, match='/resourceclaims/')  # every claim GET hangs for 30 s
    results = [None] * STUCK_CALLS
    threads = [threading.Thread(target=stuck_prepare, args=(env, c, results, i))
               for i, c in enumerate(stuck)]
    for th in threads:
        th.start()
    # The event that proves every gRPC worker could be taken: each stuck call reached the API.
    reached = pl.wait_for(lambda: len(env.api.requests('GET', '/resourceclaims/stuck-'))
                          >= STUCK_CALLS, timeout=20)
    t.ok(reached, f'starvation: all {STUCK_CALLS} prepares are waiting on the hung API server',
         diag=len(env.api.requests('GET', '/resourceclaims/stuck-')))

    try:
        again = env.kubelet.prepare('v1', [pl.ref(ready[0])], timeout=5)
        t.ok(not again.claims[ready[0]['metadata']['uid']].error and
             len(again.claims[ready[0]['metadata']['uid']].devices) == 1,
             'starvation: a prepared claim is re-prepared from the checkpoint meanwhile')
    except grpc.RpcError as e:
        t.ok(False, 'starvation: a prepared claim is re-prepared from the checkpoint meanwhile',
             diag=f'{e.code()}: {e.details()}')
    try:
        un = env.kubelet.unprepare('v1', [pl.ref(ready[1])], timeout=5)
        t.ok(not un.claims[ready[1]['metadata']['uid']].error,
             'starvation: an unprepare of a prepared claim is answered meanwhile')
    except grpc.RpcError as e:
        t.ok(False, 'starvation: an unprepare of a prepared claim is answered meanwhile',
             diag=f'{e.code()}: {e.details()}')
    t.ok(not [f for f in env.claim_files() if ready[1]['metadata']['uid'] in f],
         'starvation: and its files are gone')

    for th in threads:
        th.join(30)
    for i, r in enumerate(results):
        uid = stuck[i]['metadata']['uid']
        if isinstance(r, grpc.RpcError):
            # The answer may lose the race with the deadline on a loaded machine.
            t.ok(r.code() == grpc.StatusCode.DEADLINE_EXCEEDED,
                 f'starvation: stuck prepare {i} ends at its deadline', diag=r.code())
        else:
            err = r.claims[uid].error if r is not None else ''
            t.ok('deadline' in err, f'starvation: stuck prepare {i} answered with an error naming '
                 'the deadline', diag=err)
    # Every stuck handler ended (it logs the claim as not prepared) while the API still hangs.
    ended = pl.wait_for(lambda: all(c['metadata']['uid'] in env.log() and
                                    'deadline exceeded' in env.log() for c in stuck), timeout=15)
    t.ok(ended, 'starvation: every stuck prepare gave up its API request at the deadline',
         diag=env.log()[-2000:])
    t.ok(not any(c['metadata']['uid'] in f for c in stuck for f in env.claim_files()),
         'starvation: nothing of the stuck claims was written')
    env.api.clear_faults()
    fresh = env.api.put(pl.claim('after-hang', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
    resp = env.kubelet.prepare('v1', [pl.ref(fresh)], timeout=20)
    t.ok(not resp.claims[fresh['metadata']['uid']].error,
         'starvation: prepare works again once the API answers')


def test_client_cancel(t, env):
    """kubelet gives up on a call (its context is cancelled): the plugin stops the API request at
    once instead of holding it until the call's deadline."""
    c = env.api.put(pl.claim('cancel-me', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
    uid = c['metadata']['uid']
    env.api.delay_next(1000, 30, match='/resourceclaims/cancel-me')
    pb, stub = env.kubelet._stub('v1')
    req = pb.NodePrepareResourcesRequest(claims=[pb.Claim(namespace=c['metadata']['namespace'],
                                                          name='cancel-me', uid=uid)])
    fut = stub.NodePrepareResources.future(req, timeout=120)
    reached = pl.wait_for(lambda: env.api.requests('GET', '/resourceclaims/cancel-me'), 20)
    t.ok(reached, 'cancel: the prepare is waiting on the hung API server')
    fut.cancel()
    # The deadline is 120 s away: a log line within 20 s can only come from the cancellation.
    line = pl.wait_for(lambda: [ln for ln in env.log().splitlines()
                                if uid in ln and 'claim not prepared' in ln], 20)
    t.ok(line and 'cancel' in line[0], 'cancel: the handler stops its API request when kubelet '
         'cancels the call', diag=line or env.log()[-1500:])
    env.api.clear_faults()


def test_slow_api(t, env):
    """Issue 21: every claim GET takes 2 s, kubelet's deadline is 5 s, 20 claims. The caller's
    deadline (not the API cut-off half a second before it) decides: what was fetched in time is
    prepared, and retries converge (each finds more claims prepared)."""
    cs = [env.api.put(pl.claim(f'slow-{i}', results=[('r', 'hami-gpu-0', 1, '100Mi')]))
          for i in range(20)]
    env.api.delay_next(100000, 2, match='/resourceclaims/slow-')
    refs = [pl.ref(c) for c in cs]
    done, rounds = set(), []
    try:
        for _ in range(6):
            try:
                resp = env.kubelet.prepare('v1', refs, timeout=5)
            except grpc.RpcError as e:
                rounds.append(str(e.code()))
                continue
            ok = {u for u, r in resp.claims.items() if not r.error}
            rounds.append(len(ok))
            done |= ok
            if len(done) == len(cs):
                break
    finally:
        env.api.clear_faults()
    t.ok(isinstance(rounds[0], int) and rounds[0] > 0, 'slow API: the first call prepares the '
         'claims it fetched in time', diag=rounds)
    t.is_eq(len(done), len(cs), 'slow API: retries converge: all 20 claims prepared',
            )
    t.diag(f'prepared per call: {rounds}')
    env.kubelet.unprepare('v1', refs, timeout=30)


def test_single_instance(t, env):
    r = subprocess.run(env.args(), capture_output=True, text=True, env=env.env(), timeout=60)
    t.ok(r.returncode != 0, 'single instance: a second plugin on the same state dir exits',
         diag=r.returncode)
    t.like(r.stderr, 'refusing to start a second one', 'single instance: and says why')
    t.like(r.stderr, str(env.proc.pid), 'single instance: naming the running pid')
    try:
        info = env.kubelet.get_info(env.kubelet.wait_socket(5), timeout=5)
        t.ok(bool(info.name), 'single instance: the first plugin still answers', diag=info)
    except grpc.RpcError as e:
        t.ok(False, 'single instance: the first plugin still answers', diag=e.code())


def test_shared_dirs(t, env):
    """A second instance with its own state directory but the same socket and CDI directories
    (issue 21) must refuse to start: it used to delete the first's CDI specs at start and both
    sockets at exit."""
    import tempfile
    other = tempfile.mkdtemp(prefix='gs-plugin-state2-')
    args = env.args()
    args[args.index('--state-dir') + 1] = other
    cdi = sorted(os.listdir(env.dirs['cdi']))
    socks = sorted(os.listdir(env.dirs['plugin'])) + sorted(os.listdir(env.dirs['registrar']))
    r = subprocess.run(args, capture_output=True, text=True, env=env.env(), timeout=60)
    t.ok(r.returncode != 0 and 'refusing to start a second one' in r.stderr,
         'shared dirs: a second plugin with its own state dir but the same socket and CDI dirs '
         'refuses to start', diag=r.stderr[-600:])
    t.like(r.stderr, str(env.proc.pid), 'shared dirs: naming the running pid')
    t.is_eq(sorted(os.listdir(env.dirs['cdi'])), cdi, "shared dirs: the first's CDI specs stay")
    t.is_eq(sorted(os.listdir(env.dirs['plugin'])) + sorted(os.listdir(env.dirs['registrar'])),
            socks, "shared dirs: the first's sockets stay")
    info, why = None, None
    try:
        info = env.kubelet.get_info(env.kubelet.wait_socket(5), timeout=5)
    except grpc.RpcError as e:
        why = e.code()
    t.ok(info is not None, 'shared dirs: the first plugin still answers', diag=why)


def test_socket_ownership(t, env):
    dra = os.path.join(env.dirs['plugin'], 'dra.sock')
    t.ok(os.path.exists(dra), 'sockets: the DRA socket exists')
    os.unlink(dra)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(dra)  # someone else's socket now lives at the path
    ino = os.stat(dra).st_ino
    rc = env.stop()
    t.is_eq(rc, 0, 'sockets: the plugin stops cleanly on SIGTERM')
    t.ok(os.path.exists(dra) and os.stat(dra).st_ino == ino,
         'sockets: a socket the plugin did not create is left in place at shutdown')
    reg = os.path.join(env.dirs['registrar'], f'{pl.DRIVER}-reg.sock')
    t.ok(not os.path.exists(reg), 'sockets: its own registration socket is removed')
    other.close()
    os.unlink(dra)


def test_temporaries(t, env):
    uid = str(uuid.uuid4())
    cdi, state = env.dirs['cdi'], env.dirs['state']
    ours = [os.path.join(cdi, f'.k8s.{pl.DRIVER}-claim_{uid}.json.tmp.Ab12Cd'),
            os.path.join(cdi, f'.k8s.{pl.DRIVER}-claim_{uid}.json.Xy34Zw'),  # older naming
            os.path.join(state, '.checkpoint.json.tmp.Qw12Er'),
            os.path.join(state, '.checkpoint.json.Rt56Yu')]
    foreign = [os.path.join(cdi, '.k8s.other.example.com-claim_x.json.tmp.abcdef'),
               os.path.join(cdi, 'vendor.json')]
    for p in ours + foreign:
        with open(p, 'w') as f:
            f.write('{"partial":')
    env.start()
    t.ok(not [p for p in ours if os.path.exists(p)],
         'temporaries: interrupted writes of ours are removed at start-up',
         diag=[p for p in ours if os.path.exists(p)])
    t.ok(all(os.path.exists(p) for p in foreign), "temporaries: other drivers' files stay")
    env.stop()


def test_huge_checkpoint(t, env):
    path = os.path.join(env.dirs['state'], 'checkpoint.json')
    with open(path, 'wb') as f:
        f.write(b'{"version":1,"claims":{' + b' ' * 1024)
        f.truncate(100 * 1024 * 1024)
    env.start()
    t.ok(env.proc.poll() is None, 'huge checkpoint: the plugin starts with a 100 MB checkpoint')
    t.ok(os.path.exists(path + '.corrupt'), 'huge checkpoint: moved aside to checkpoint.json.corrupt')
    t.like(env.log(), 'checkpoint is corrupt, moved aside', 'huge checkpoint: and says so')
    os.unlink(path + '.corrupt')


def ld(field, data):
    """Protobuf length-delimited field (lengths here are < 128)."""
    return bytes([field << 3 | 2, len(data)]) + data


def claim_msg(ns, uid, name):
    return ld(1, ld(1, ns) + ld(2, uid) + ld(3, name))


def test_hostile_strings(t, env):
    c = env.api.put(pl.claim('hostile', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
    uid = c['metadata']['uid'].encode()
    cases = [
        ('NUL in the UID', claim_msg(b'test-dra', uid + b'\x00../../etc', b'hostile'),
         'claims[0].uid contains a NUL byte'),
        ('NUL in the namespace', claim_msg(b'test-dra\x00evil', uid, b'hostile'),
         'claims[0].namespace contains a NUL byte'),
        ('invalid UTF-8 in the name', claim_msg(b'test-dra', uid, b'host\xffile'),
         'claims[0].name is not valid UTF-8'),
        ('overlong UTF-8 in the namespace', claim_msg(b'test-\xc0\xafdra', uid, b'hostile'),
         'claims[0].namespace is not valid UTF-8'),
    ]
    for method, verb in ((PREPARE_V1, 'prepare'), (UNPREPARE_V1, 'unprepare')):
        for what, msg, want in cases:
            try:
                env.kubelet.raw_call(method, msg, timeout=10)
                t.ok(False, f'strings: {verb} with {what} is refused')
            except grpc.RpcError as e:
                t.is_eq(e.code(), grpc.StatusCode.INVALID_ARGUMENT,
                        f'strings: {verb} with {what} -> INVALID_ARGUMENT')
                t.is_eq(e.details(), want, f'strings: {verb}: the message names the field only')
    t.ok(not [f for f in env.claim_files() if c['metadata']['uid'] in f],
         'strings: nothing was prepared under the truncated UID')
    t.ok('../../etc' not in env.log() and 'evil' not in env.log(),
         'strings: the hostile bytes are not echoed into the log')


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'plugin resilience', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    with pl.PluginEnv(t) as env:
        env.start()
        t.run('starvation', test_starvation, t, env)
        t.run('hostile strings', test_hostile_strings, t, env)
        t.run('client cancel', test_client_cancel, t, env)
        t.run('slow api', test_slow_api, t, env)
        t.run('single instance', test_single_instance, t, env)
        t.run('shared dirs', test_shared_dirs, t, env)
        t.run('socket ownership', test_socket_ownership, t, env)
        t.run('temporaries', test_temporaries, t, env)
        t.run('huge checkpoint', test_huge_checkpoint, t, env)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
