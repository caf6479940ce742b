#!/usr/bin/python3
"""A small fake Kubernetes API server for tests (resource.k8s.io/v1 and a bit of core/v1).

Importable:

    from fakeapi import FakeAPI
    api = FakeAPI(token='t0k3n')          # loopback, port chosen by the kernel
    api.start()
    api.url                               # 'http://127.0.0.1:PORT'
    api.put({...ResourceClaim...})        # seed objects directly (bumps resourceVersion)
    api.fail_next(2, status=500)          # the next 2 API requests answer 500
    api.fail_next(1, status=429, retry_after=1, match='/resourceclaims')
    api.delay_next(1, 2.0)                # the next request waits 2 s before being served
    api.clear_faults()                    # forget pending faults
    api.set_gate('DRAConsumableCapacity', False)   # drop the gated fields on writes
    api.drop_on_write('resourceslices', 'spec.devices[*].bindsToNode')  # any other field
    api.compact()                         # watches from older resourceVersions get 410
    api.expire_watches()                  # open watches get an ERROR 410 event and end
    api.requests()                        # request log: [{'method','path','query','status',...}]
    api.stop()

As a program (for C tests), loopback only:

    python3 tests/lib/fakeapi.py --port 0 --print-port [--token T] [--tls-cert C --tls-key K
        [--client-ca CA]] [--bookmark-interval S] [--watch-410 event|http] [--stdin-lifetime]

prints the port on the first line of stdout, then serves until SIGTERM/SIGINT (or, with
--stdin-lifetime, until its stdin is closed). The same controls are on a control API that needs
no token and is not logged:
    POST /_fake/fail {"count","status","retry_after","match","method","message"}
    POST /_fake/delay {"count","seconds","match","method"}      POST /_fake/clear-faults
    POST /_fake/gate {"<gate>": bool}       POST /_fake/drop {"resource": plural, "path": dotted}
    POST /_fake/token {"token": str|null}   POST /_fake/compact   POST /_fake/expire-watches
    POST /_fake/objects (an object to store)                      POST /_fake/reset
    GET /_fake/log   POST /_fake/log/clear   GET /_fake/state ({"resourceVersion", "watchers"})
reset() forgets objects, history, faults, drops and the log; it keeps the token and the gates.

Semantics follow the real API where tests rely on them: paths
(/apis/resource.k8s.io/v1/resourceslices, /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/
{name}[/status], /api/v1/namespaces/{ns}/pods, ...), one global resourceVersion that increments
on every write, uid/creationTimestamp/generation, generateName, dryRun=All, optimistic concurrency
on PUT (409 Conflict), AlreadyExists, NotFound Status objects with the real messages, merge patch
and JSON patch, list with labelSelector/fieldSelector (any dotted field path)/limit/continue,
watch with resourceVersion, allowWatchBookmarks, timeoutSeconds, and 410 Gone for compacted
versions. Bodies over 3 MiB get 413.
"""
import argparse
import base64
import copy
import datetime
import json
import os
import random
import re
import signal
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 3 * 1024 * 1024

# (group, version, plural) -> (kind, namespaced, has status subresource)
RESOURCES = {
    ('resource.k8s.io', 'v1', 'resourceslices'): ('ResourceSlice', False, False),
    ('resource.k8s.io', 'v1', 'resourceclaims'): ('ResourceClaim', True, True),
    ('resource.k8s.io', 'v1', 'resourceclaimtemplates'): ('ResourceClaimTemplate', True, False),
    ('resource.k8s.io', 'v1', 'deviceclasses'): ('DeviceClass', False, False),
    ('', 'v1', 'pods'): ('Pod', True, True),
    ('', 'v1', 'nodes'): ('Node', False, True),
    ('', 'v1', 'secrets'): ('Secret', True, False),
    ('', 'v1', 'events'): ('Event', True, False),
    ('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations'):
        ('MutatingWebhookConfiguration', False, False),
}
KIND_TO_RESOURCE = {v[0]: k for k, v in RESOURCES.items()}


def api_version(res):
    group, version, _ = res
    return f'{group}/{version}' if group else version


def qualified(res):
    group, _, plural = res
    return f'{plural}.{group}' if group else plural


def status_obj(code, reason, message, res=None, name=None):
    st = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
          'message': message, 'reason': reason, 'code': code}
    if res is not None:
        st['details'] = {'name': name or '', 'group': res[0], 'kind': res[2]}
    return st


class ApiError(Exception):
    def __init__(self, code, reason, message, res=None, name=None, headers=None):
        super().__init__(message)
        self.code = code
        self.status = status_obj(code, reason, message, res, name)
        self.headers = headers or {}


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def get_path(obj, dotted):
    cur = obj
    for part in dotted.split('.'):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    if isinstance(cur, bool):
        return 'true' if cur else 'false'
    return None if cur is None else str(cur)


def parse_field_selector(sel):
    reqs = []
    for term in filter(None, (t.strip() for t in sel.split(','))):
        m = re.fullmatch(r'([A-Za-z0-9_.\-/]+)\s*(==|!=|=)\s*(.*)', term)
        if not m:
            raise ApiError(400, 'BadRequest', f'invalid field selector: "{term}"')
        reqs.append((m.group(1), m.group(2), m.group(3)))
    return reqs


def field_match(obj, reqs):
    for path, op, val in reqs:
        got = get_path(obj, path) or ''
        if (op == '!=') == (got == val):
            return False
    return True


def split_selector(sel):
    parts, depth, cur = [], 0, ''
    for ch in sel:
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


LABEL_KEY = r'[A-Za-z0-9_.\-/]+'


def parse_label_selector(sel):
    reqs = []
    for term in split_selector(sel):
        m = re.fullmatch(rf'({LABEL_KEY})\s+(in|notin)\s+\((.*)\)', term)
        if m:
            vals = {v.strip() for v in m.group(3).split(',') if v.strip()}
            reqs.append((m.group(1), m.group(2), vals))
            continue
        m = re.fullmatch(rf'({LABEL_KEY})\s*(==|!=|=)\s*([A-Za-z0-9_.\-]*)', term)
        if m:
            reqs.append((m.group(1), m.group(2), m.group(3)))
            continue
        m = re.fullmatch(rf'(!?)\s*({LABEL_KEY})', term)
        if m:
            reqs.append((m.group(2), '!exists' if m.group(1) else 'exists', None))
            continue
        raise ApiError(400, 'BadRequest', f'unable to parse requirement: "{term}"')
    return reqs


def label_match(obj, reqs):
    labels = (obj.get('metadata') or {}).get('labels') or {}
    for key, op, val in reqs:
        has = key in labels
        got = labels.get(key)
        if op in ('=', '=='):
            ok = has and got == val
        elif op == '!=':
            ok = not has or got != val
        elif op == 'in':
            ok = has and got in val
        elif op == 'notin':
            ok = not has or got not in val
        elif op == 'exists':
            ok = has
        else:
            ok = not has
        if not ok:
            return False
    return True


def drop_consumable_capacity(res, obj):
    """What an API server with the DRAConsumableCapacity feature gate off does on write."""
    if res[2] == 'resourceslices':
        for dev in (obj.get('spec') or {}).get('devices') or []:
            if isinstance(dev, dict):
                dev.pop('allowMultipleAllocations', None)
                for cap in (dev.get('capacity') or {}).values():
                    if isinstance(cap, dict):
                        cap.pop('requestPolicy', None)
    elif res[2] in ('resourceclaims', 'resourceclaimtemplates'):
        spec = obj.get('spec') or {}
        if res[2] == 'resourceclaimtemplates':
            spec = spec.get('spec') or {}
        for req in (spec.get('devices') or {}).get('requests') or []:
            if not isinstance(req, dict):
                continue
            for sub in [req.get('exactly') or {}] + list(req.get('firstAvailable') or []):
                if isinstance(sub, dict):
                    sub.pop('capacity', None)
        alloc = (obj.get('status') or {}).get('allocation') or {}
        for r in (alloc.get('devices') or {}).get('results') or []:
            if isinstance(r, dict):
                r.pop('consumedCapacity', None)
                r.pop('shareID', None)


def drop_path(obj, path):
    """Remove a dotted path from obj; `[*]` after a name walks every list element, a `*` segment
    every value of a map: 'spec.devices[*].capacity.*.requestPolicy'."""
    parts = path.split('.')

    def walk(cur, i):
        if i == len(parts) - 1:
            key = parts[i]
            if key.endswith('[*]'):
                if isinstance(cur, dict):
                    cur.pop(key[:-3], None)
            elif isinstance(cur, dict):
                cur.pop(key, None)
            return
        key = parts[i]
        if key == '*':
            for v in (cur.values() if isinstance(cur, dict) else []):
                walk(v, i + 1)
        elif key.endswith('[*]'):
            lst = cur.get(key[:-3]) if isinstance(cur, dict) else None
            for v in (lst if isinstance(lst, list) else []):
                walk(v, i + 1)
        elif isinstance(cur, dict) and key in cur:
            walk(cur[key], i + 1)

    walk(obj, 0)


class FakeAPI:
    def __init__(self, host='127.0.0.1', port=0, token=None, tls_cert=None, tls_key=None,
                 client_ca=None, bookmark_interval=1.0, watch_410='event'):
        self.host = host
        self.port = port
        self.tls_cert, self.tls_key, self.client_ca = tls_cert, tls_key, client_ca
        self.bookmark_interval = bookmark_interval
        self.watch_410 = watch_410
        self.cond = threading.Condition()
        self._reset_locked()
        self.tokens = {token} if token else set()
        self.gates = {'DRAConsumableCapacity': True}
        self.drops = []           # (plural, dotted path) removed from objects on every write
        self.server = None
        self.thread = None

    def _reset_locked(self):
        self.objects = {}         # (res, ns, name) -> obj
        self.rv = 1
        self.events = []          # (rv, type, res, ns, obj)
        self.compacted_rv = 0
        self.expire_gen = 0
        self.faults = []
        self.log = []
        self.watchers = 0
        self.stopping = False

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self):
        api = self

        class Handler(_Handler):
            fake = api

        self.server = _Server((self.host, self.port), Handler)
        self.server.daemon_threads = True
        if self.tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.load_cert_chain(self.tls_cert, self.tls_key)
            if self.client_ca:
                ctx.load_verify_locations(self.client_ca)
                ctx.verify_mode = ssl.CERT_OPTIONAL
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True,
                                                 do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        return f"{'https' if self.tls_cert else 'http'}://{self.host}:{self.port}"

    # ---- controls -------------------------------------------------------------------------------
    def reset(self):
        with self.cond:
            tokens, gates = self.tokens, self.gates
            self._reset_locked()
            self.tokens, self.gates = tokens, gates
            self.drops = []
            self.expire_gen += 1
            self.cond.notify_all()

    def set_token(self, token):
        """Accept only this bearer token from now on (None: no authentication)."""
        with self.cond:
            self.tokens = {token} if token else set()

    def set_gate(self, gate, enabled):
        with self.cond:
            self.gates[gate] = bool(enabled)

    def drop_on_write(self, plural, path):
        """Remove `path` (see drop_path) from every `plural` object written from now on, as an
        API server that does not know a field does."""
        with self.cond:
            self.drops.append((plural, path))

    def fail_next(self, count, status=500, retry_after=None, match=None, method=None,
                  message=None):
        with self.cond:
            self.faults.append({'kind': 'status', 'count': int(count), 'status': int(status),
                                'retry_after': retry_after, 'match': match, 'method': method,
                                'message': message})

    def clear_faults(self):
        """Forget every pending fault (fail_next / delay_next)."""
        with self.cond:
            self.faults = []

    def delay_next(self, count, seconds, match=None, method=None):
        with self.cond:
            self.faults.append({'kind': 'delay', 'count': int(count), 'seconds': float(seconds),
                                'match': match, 'method': method})

    def compact(self):
        """Forget history: watches from a resourceVersion older than the current one get 410."""
        with self.cond:
            self.compacted_rv = self.rv
            self.events = []

    def expire_watches(self):
        """Open watches receive an ERROR event with a 410 Status and are closed."""
        with self.cond:
            self.compact()
            self.expire_gen += 1
            self.cond.notify_all()

    def requests(self, method=None, match=None):
        with self.cond:
            return [dict(r) for r in self.log
                    if (method is None or r['method'] == method)
                    and (match is None or match in r['path'])]

    def clear_log(self):
        with self.cond:
            self.log = []

    def resource_version(self):
        with self.cond:
            return self.rv

    def put(self, obj):
        """Store an object as if created (or replaced) through the API, without faults."""
        res = KIND_TO_RESOURCE[obj['kind']]
        ns = (obj.get('metadata') or {}).get('namespace') or ('default' if RESOURCES[res][1]
                                                               else None)
        name = obj['metadata']['name']
        with self.cond:
            key = (res, ns, name)
            o = copy.deepcopy(obj)
            md = o.setdefault('metadata', {})
            if ns:
                md['namespace'] = ns
            old = self.objects.get(key)
            md.setdefault('uid', old['metadata']['uid'] if old else str(uuid.uuid4()))
            md.setdefault('creationTimestamp', _now())
            md.setdefault('generation', 1)
            self._store_locked(res, ns, name, o, 'MODIFIED' if old else 'ADDED')
            return copy.deepcopy(o)

    def get(self, res_plural, ns, name):
        with self.cond:
            for (res, ons, oname), obj in self.objects.items():
                if res[2] == res_plural and ons == ns and oname == name:
                    return copy.deepcopy(obj)
        return None

    def list(self, res_plural):
        with self.cond:
            return [copy.deepcopy(o) for (res, _, _), o in self.objects.items()
                    if res[2] == res_plural]

    # ---- storage (hold self.cond) ---------------------------------------------------------------
    def _store_locked(self, res, ns, name, obj, etype):
        self.rv += 1
        obj['metadata']['resourceVersion'] = str(self.rv)
        obj['apiVersion'] = api_version(res)
        obj['kind'] = RESOURCES[res][0]
        if etype == 'DELETED':
            self.objects.pop((res, ns, name), None)
        else:
            self.objects[(res, ns, name)] = obj
        self.events.append((self.rv, etype, res, ns, copy.deepcopy(obj)))
        if len(self.events) > 10000:
            drop = self.events[:5000]
            self.events = self.events[5000:]
            self.compacted_rv = drop[-1][0]
        self.cond.notify_all()

    def _take_fault_locked(self, method, path):
        for f in self.faults:
            if f['count'] <= 0:
                continue
            if f['match'] and f['match'] not in path:
                continue
            if f['method'] and f['method'] != method:
                continue
            f['count'] -= 1
            return dict(f)
        return None


class _Server(ThreadingHTTPServer):
    # A real listen backlog: socketserver's default of 5 drops the SYNs of a client that opens
    # several connections at once (the plugin fetches 8 claims in parallel), each costing a 1 s
    # retransmission.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError, TimeoutError)):
            return  # a client that went away is not our problem
        super().handle_error(request, client_address)


def _sort_key(kv):
    (_, ns, name), _ = kv
    return (ns or '', name)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def _gen_suffix():
    return ''.join(random.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    # as a real API server (Go sets TCP_NODELAY): otherwise header and body writes meet the
    # client's delayed ACK and every keep-alive request costs ~40 ms on loopback
    disable_nagle_algorithm = True
    fake = None  # set by FakeAPI.start
    server_version = 'fakeapi'

    def log_message(self, *args):
        pass

    # every verb goes through one dispatcher
    def do_GET(self):
        self._dispatch('GET')

    def do_POST(self):
        self._dispatch('POST')

    def do_PUT(self):
        self._dispatch('PUT')

    def do_PATCH(self):
        self._dispatch('PATCH')

    def do_DELETE(self):
        self._dispatch('DELETE')

    # ---- plumbing -------------------------------------------------------------------------------
    def _send_json(self, code, obj, headers=None):
        body = json.dumps(obj, separators=(',', ':')).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def _read_body(self):
        n = int(self.headers.get('Content-Length') or 0)
        if n > MAX_BODY:
            # drain what we can so the connection stays sane, then refuse
            self.close_connection = True
            raise ApiError(413, 'RequestEntityTooLarge', 'the request body is too large')
        return self.rfile.read(n) if n else b''

    def _json_body(self, raw):
        try:
            return json.loads(raw.decode() or 'null')
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(400, 'BadRequest', f'the body is not JSON: {e}')

    def _authenticated(self):
        fake = self.fake
        with fake.cond:
            tokens = set(fake.tokens)
        if not tokens:
            return True
        auth = self.headers.get('Authorization') or ''
        if auth.startswith('Bearer ') and auth[7:] in tokens:
            return True
        try:
            if fake.client_ca and self.connection.getpeercert():
                return True
        except (AttributeError, ValueError):
            pass
        return False

    def _dispatch(self, method):
        fake = self.fake
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            raw = self._read_body()
        except ApiError as e:
            self._send_json(e.code, e.status)
            return
        if url.path.startswith('/_fake/'):
            try:
                self._control(method, url.path, raw)
            except ApiError as e:
                self._send_json(e.code, e.status)
            return
        entry = {'method': method, 'path': url.path, 'query': query, 'status': None,
                 'auth': self.headers.get('Authorization'),
                 'content_type': self.headers.get('Content-Type'),
                 'body': raw.decode(errors='replace'), 'time': time.monotonic()}
        with fake.cond:
            fake.log.append(entry)
            fault = fake._take_fault_locked(method, url.path)
        try:
            if fault and fault['kind'] == 'delay':
                time.sleep(fault['seconds'])
            if fault and fault['kind'] == 'status':
                st = fault['status']
                hdrs = {}
                if fault.get('retry_after') is not None:
                    hdrs['Retry-After'] = fault['retry_after']
                reason = {429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable',
                          504: 'Timeout', 410: 'Expired', 403: 'Forbidden'}.get(st, 'Unknown')
                msg = fault.get('message') or f'injected fault: {st}'
                raise ApiError(st, reason, msg, headers=hdrs)
            if not self._authenticated():
                raise ApiError(401, 'Unauthorized', 'Unauthorized')
            code, obj = self._api(method, url.path, query, raw)
            if code is None:  # a watch already wrote its response
                entry['status'] = 200
                return
            entry['status'] = code
            self._send_json(code, obj)
        except ApiError as e:
            entry['status'] = e.code
            try:
                self._send_json(e.code, e.status, e.headers)
            except (ConnectionError, ssl.SSLError):
                self.close_connection = True
        except (ConnectionError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # noqa: BLE001 - a bug in the fake must not look like a hang
            import traceback
            traceback.print_exc()
            entry['status'] = 500
            self._send_json(500, status_obj(500, 'InternalError', f'fakeapi bug: {e!r}'))

    # ---- control API ----------------------------------------------------------------------------
    def _control(self, method, path, raw):
        fake = self.fake
        body = self._json_body(raw) if raw else {}
        name = path[len('/_fake/'):]
        if method == 'GET' and name == 'log':
            self._send_json(200, {'requests': fake.requests()})
            return
        if method == 'GET' and name == 'state':
            with fake.cond:
                self._send_json(200, {'resourceVersion': fake.rv, 'watchers': fake.watchers})
            return
        if method != 'POST':
            raise ApiError(405, 'MethodNotAllowed', f'{method} {path}')
        if name == 'fail':
            fake.fail_next(body.get('count', 1), body.get('status', 500),
                           body.get('retry_after'), body.get('match'), body.get('method'),
                           body.get('message'))
        elif name == 'clear-faults':
            fake.clear_faults()
        elif name == 'delay':
            fake.delay_next(body.get('count', 1), body.get('seconds', 1.0), body.get('match'),
                            body.get('method'))
        elif name == 'gate':
            for k, v in body.items():
                fake.set_gate(k, v)
        elif name == 'token':
            fake.set_token(body.get('token'))
        elif name == 'drop':
            fake.drop_on_write(body['resource'], body['path'])
        elif name == 'compact':
            fake.compact()
        elif name == 'expire-watches':
            fake.expire_watches()
        elif name == 'objects':
            self._send_json(201, fake.put(body))
            return
        elif name == 'reset':
            fake.reset()
        elif name == 'log/clear':
            fake.clear_log()
        else:
            raise ApiError(404, 'NotFound', f'no control {name}')
        self._send_json(200, {'ok': True})

    # ---- the API --------------------------------------------------------------------------------
    def _route(self, path):
        parts = [p for p in path.split('/') if p]
        if len(parts) >= 2 and parts[0] == 'api':
            group, version, rest = '', parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == 'apis':
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        ns = None
        if len(rest) >= 3 and rest[0] == 'namespaces':
            ns, rest = rest[1], rest[2:]
        if not rest:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        res = (group, version, rest[0])
        if res not in RESOURCES:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        namespaced = RESOURCES[res][1]
        if ns is not None and not namespaced:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) >= 3 else None
        binding = sub == 'binding' and res == ('', 'v1', 'pods')
        if len(rest) > 3 or (sub is not None and not binding and
                             (sub != 'status' or not RESOURCES[res][2])):
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        return res, ns, name, sub

    def _api(self, method, path, query, raw):
        res, ns, name, sub = self._route(path)
        namespaced = RESOURCES[res][1]
        dry = query.get('dryRun') == 'All'
        if method == 'GET' and name is None:
            if query.get('watch') in ('1', 'true'):
                self._watch(res, ns, query)
                return None, None
            return 200, self._list(res, ns, query)
        if name is None and method != 'POST':
            raise ApiError(405, 'MethodNotAllowed', f'{method} is not allowed on a collection')
        if namespaced and ns is None:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        if method == 'GET':
            return 200, self._get(res, ns, name)
        if method == 'POST' and sub == 'binding':
            return 201, self._bind(res, ns, name, self._json_body(raw))
        if method == 'POST':
            if name is not None:
                raise ApiError(405, 'MethodNotAllowed', 'POST is only allowed on a collection')
            return 201, self._create(res, ns, self._json_body(raw), dry)
        if method == 'PUT':
            return 200, self._update(res, ns, name, sub, self._json_body(raw), dry)
        if method == 'PATCH':
            return 200, self._patch(res, ns, name, sub, raw, dry)
        if method == 'DELETE':
            return 200, self._delete(res, ns, name, raw, dry)
        raise ApiError(405, 'MethodNotAllowed', f'{method} not allowed')

    def _bind(self, res, ns, name, binding):
        """POST pods/{name}/binding (v1 Binding): sets spec.nodeName once, as the real API."""
        target = (binding or {}).get('target') or {}
        node = target.get('name')
        if not node or target.get('kind', 'Node') != 'Node':
            raise ApiError(422, 'Invalid', f'Binding "{name}" is invalid: target.name: Required '
                           'value', res, name)
        with self.fake.cond:
            old = self.fake.objects.get((res, ns, name))
            if old is None:
                raise self._not_found(res, name)
            uid = ((binding.get('metadata') or {}).get('uid'))
            if uid and uid != old['metadata'].get('uid'):
                raise ApiError(409, 'Conflict', f'Operation cannot be fulfilled on pods/binding '
                               f'"{name}": Precondition failed: UID in precondition: {uid}, UID '
                               f'in object meta: {old["metadata"].get("uid")}', res, name)
            if (old.get('spec') or {}).get('nodeName'):
                raise ApiError(409, 'Conflict', f'Operation cannot be fulfilled on pods/binding '
                               f'"{name}": pod {name} is already assigned to node '
                               f'"{old["spec"]["nodeName"]}"', res, name)
            new = copy.deepcopy(old)
            new.setdefault('spec', {})['nodeName'] = node
            # The Binding's annotations land on the pod in the same update (BindingREST.Create
            # -> setPodNodeAndMetadata in pkg/registry/core/pod/storage).
            ann = (binding.get('metadata') or {}).get('annotations') or {}
            if ann:
                new['metadata'].setdefault('annotations', {}).update(ann)
            self._replace_locked(res, ns, name, None, new, False)
        return {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Success', 'code': 201}

    def _not_found(self, res, name):
        return ApiError(404, 'NotFound', f'{qualified(res)} "{name}" not found', res, name)

    def _get(self, res, ns, name):
        fake = self.fake
        with fake.cond:
            obj = fake.objects.get((res, ns, name))
            if obj is None:
                raise self._not_found(res, name)
            return copy.deepcopy(obj)

    def _list(self, res, ns, query):
        fake = self.fake
        fsel = parse_field_selector(query.get('fieldSelector', ''))
        lsel = parse_label_selector(query.get('labelSelector', ''))
        with fake.cond:
            items = [copy.deepcopy(o) for (r, ons, _), o in sorted(fake.objects.items(),
                                                                    key=_sort_key)
                     if r == res and (ns is None or ons == ns)
                     and field_match(o, fsel) and label_match(o, lsel)]
            rv = str(fake.rv)
        start = 0
        if query.get('continue'):
            try:
                start = int(base64.b64decode(query['continue']).decode())
            except (ValueError, UnicodeDecodeError):
                raise ApiError(400, 'BadRequest', 'invalid continue token')
        meta = {'resourceVersion': rv}
        limit = int(query.get('limit') or 0)
        if limit > 0:
            if start + limit < len(items):
                meta['continue'] = base64.b64encode(str(start + limit).encode()).decode()
            items = items[start:start + limit]
        return {'kind': RESOURCES[res][0] + 'List', 'apiVersion': api_version(res),
                'metadata': meta, 'items': items}

    def _check_body(self, res, ns, obj, name=None):
        if not isinstance(obj, dict):
            raise ApiError(400, 'BadRequest', 'the body is not an object')
        kind = obj.get('kind')
        if kind and kind != RESOURCES[res][0]:
            raise ApiError(400, 'BadRequest',
                           f'{kind} in the body does not match {RESOURCES[res][0]}')
        md = obj.setdefault('metadata', {})
        if not isinstance(md, dict):
            raise ApiError(400, 'BadRequest', 'metadata is not an object')
        if md.get('namespace') and ns and md['namespace'] != ns:
            raise ApiError(400, 'BadRequest',
                           'the namespace of the provided object does not match the namespace '
                           'sent on the request')
        if name is not None and md.get('name') and md['name'] != name:
            raise ApiError(400, 'BadRequest',
                           'the name of the object does not match the name on the URL')
        return md

    def _gated(self, res, obj):
        if not self.fake.gates.get('DRAConsumableCapacity', True):
            drop_consumable_capacity(res, obj)
        for plural, path in self.fake.drops:
            if plural == res[2]:
                drop_path(obj, path)

    def _create(self, res, ns, obj, dry):
        fake = self.fake
        md = self._check_body(res, ns, obj)
        with fake.cond:
            name = md.get('name')
            if not name:
                gen = md.get('generateName')
                if not gen:
                    raise ApiError(422, 'Invalid', f'{RESOURCES[res][0]}.{res[0]} "" is invalid: '
                                   'metadata.name: Required value: name or generateName is '
                                   'required', res, '')
                for _ in range(100):
                    name = gen + _gen_suffix()
                    if (res, ns, name) not in fake.objects:
                        break
            if not re.fullmatch(r'[a-z0-9]([-a-z0-9.]*[a-z0-9])?', name) or len(name) > 253:
                raise ApiError(422, 'Invalid', f'{RESOURCES[res][0]}.{res[0]} "{name}" is '
                               f'invalid: metadata.name: Invalid value: "{name}"', res, name)
            if (res, ns, name) in fake.objects:
                raise ApiError(409, 'AlreadyExists', f'{qualified(res)} "{name}" already exists',
                               res, name)
            o = copy.deepcopy(obj)
            md = o['metadata']
            md['name'] = name
            if ns:
                md['namespace'] = ns
            md['uid'] = str(uuid.uuid4())
            md['creationTimestamp'] = _now()
            md['generation'] = 1
            md.pop('resourceVersion', None)
            if RESOURCES[res][2]:
                o.pop('status', None)
            self._gated(res, o)
            if dry:
                o['apiVersion'] = api_version(res)
                o['kind'] = RESOURCES[res][0]
                return o
            fake._store_locked(res, ns, name, o, 'ADDED')
            return copy.deepcopy(o)

    def _replace_locked(self, res, ns, name, sub, new, dry):
        fake = self.fake
        old = fake.objects.get((res, ns, name))
        if old is None:
            raise self._not_found(res, name)
        want_rv = (new.get('metadata') or {}).get('resourceVersion')
        if want_rv and want_rv != old['metadata']['resourceVersion']:
            raise ApiError(409, 'Conflict',
                           f'Operation cannot be fulfilled on {qualified(res)} "{name}": the '
                           'object has been modified; please apply your changes to the latest '
                           'version and try again', res, name)
        if sub == 'status':
            o = copy.deepcopy(old)
            if 'status' in new:
                o['status'] = copy.deepcopy(new['status'])
            else:
                o.pop('status', None)
        else:
            o = copy.deepcopy(new)
            md = o.setdefault('metadata', {})
            for k in ('uid', 'creationTimestamp', 'generation', 'name'):
                md[k] = old['metadata'][k]
            if ns:
                md['namespace'] = ns
            if RESOURCES[res][2]:  # status only through /status
                if 'status' in old:
                    o['status'] = copy.deepcopy(old['status'])
                else:
                    o.pop('status', None)
            if o.get('spec') != old.get('spec'):
                md['generation'] = old['metadata'].get('generation', 1) + 1
        self._gated(res, o)
        if dry:
            o['metadata']['resourceVersion'] = old['metadata']['resourceVersion']
            return o
        fake._store_locked(res, ns, name, o, 'MODIFIED')
        return copy.deepcopy(o)

    def _update(self, res, ns, name, sub, obj, dry):
        self._check_body(res, ns, obj, name)
        with self.fake.cond:
            return self._replace_locked(res, ns, name, sub, obj, dry)

    def _patch(self, res, ns, name, sub, raw, dry):
        ctype = (self.headers.get('Content-Type') or '').split(';')[0].strip()
        patch = self._json_body(raw)
        with self.fake.cond:
            old = self.fake.objects.get((res, ns, name))
            if old is None:
                raise self._not_found(res, name)
            if ctype == 'application/merge-patch+json':
                if not isinstance(patch, dict):
                    raise ApiError(400, 'BadRequest', 'a merge patch must be an object')
                new = merge_patch(old, patch)
            elif ctype == 'application/json-patch+json':
                try:
                    import jsonpatch
                    new = jsonpatch.apply_patch(old, patch)
                except ImportError:
                    raise ApiError(415, 'UnsupportedMediaType', 'jsonpatch module not installed')
                except Exception as e:  # noqa: BLE001 - any patch failure is a 422
                    raise ApiError(422, 'Invalid', f'the JSON patch cannot be applied: {e}')
            else:
                raise ApiError(415, 'UnsupportedMediaType',
                               f'the body of the request was in an unknown format - accepted '
                               f'media types include: application/json-patch+json, '
                               f'application/merge-patch+json (got "{ctype}")')
            if not isinstance(new, dict):
                raise ApiError(422, 'Invalid', 'the patched object is not an object')
            new.setdefault('metadata', {})
            if (patch if isinstance(patch, dict) else {}).get('metadata', {}).get(
                    'resourceVersion') is None:
                new['metadata']['resourceVersion'] = old['metadata']['resourceVersion']
            return self._replace_locked(res, ns, name, sub, new, dry)

    def _delete(self, res, ns, name, raw, dry):
        opts = self._json_body(raw) if raw else {}
        fake = self.fake
        with fake.cond:
            old = fake.objects.get((res, ns, name))
            if old is None:
                raise self._not_found(res, name)
            pre = (opts or {}).get('preconditions') or {}
            if pre.get('uid') and pre['uid'] != old['metadata']['uid']:
                raise ApiError(409, 'Conflict',
                               f'Operation cannot be fulfilled on {qualified(res)} "{name}": '
                               f'Precondition failed: UID in precondition: {pre["uid"]}, UID in '
                               f'object meta: {old["metadata"]["uid"]}', res, name)
            if dry:
                return copy.deepcopy(old)
            o = copy.deepcopy(old)
            fake._store_locked(res, ns, name, o, 'DELETED')
            return copy.deepcopy(o)

    # ---- watch ----------------------------------------------------------------------------------
    def _write_line(self, obj):
        self.wfile.write(json.dumps(obj, separators=(',', ':')).encode() + b'\n')
        self.wfile.flush()

    def _watch(self, res, ns, query):
        fake = self.fake
        fsel = parse_field_selector(query.get('fieldSelector', ''))
        lsel = parse_label_selector(query.get('labelSelector', ''))
        bookmarks = query.get('allowWatchBookmarks') in ('true', '1')
        timeout = float(query.get('timeoutSeconds') or 1800)
        rv_param = query.get('resourceVersion', '')
        try:
            since = int(rv_param) if rv_param else 0
        except ValueError:
            raise ApiError(400, 'BadRequest', f'invalid resourceVersion "{rv_param}"')

        def wanted(r, ons, o):
            return (r == res and (ns is None or ons == ns) and field_match(o, fsel)
                    and label_match(o, lsel))

        with fake.cond:
            too_old = since > 0 and since < fake.compacted_rv
            if too_old and fake.watch_410 == 'http':
                raise ApiError(410, 'Expired', f'too old resource version: {since} '
                               f'({fake.compacted_rv})')
            initial = []
            if since == 0:  # start at the current state: synthetic ADDED events
                initial = [copy.deepcopy(o) for (r, ons, _), o in sorted(fake.objects.items(),
                                                                          key=_sort_key)
                           if wanted(r, ons, o)]
                since = fake.rv
            gen = fake.expire_gen
            fake.watchers += 1
        self.close_connection = True
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Connection', 'close')
        self.end_headers()
        try:
            if too_old:
                self._write_line({'type': 'ERROR', 'object': status_obj(
                    410, 'Expired', f'too old resource version: {since} ({fake.compacted_rv})')})
                return
            for o in initial:
                self._write_line({'type': 'ADDED', 'object': o})
            deadline = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            sent = since
            while True:
                with fake.cond:
                    pending = [e for e in fake.events if e[0] > sent]
                    if not pending and not fake.stopping and fake.expire_gen == gen:
                        wait = min(deadline - time.monotonic(),
                                   fake.bookmark_interval if bookmarks else deadline)
                        if wait > 0:
                            fake.cond.wait(wait)
                        pending = [e for e in fake.events if e[0] > sent]
                    stopping = fake.stopping
                    expired = fake.expire_gen != gen
                    current = fake.rv
                    compacted = fake.compacted_rv
                if stopping:
                    return
                if expired:
                    self._write_line({'type': 'ERROR', 'object': status_obj(
                        410, 'Expired', f'too old resource version: {sent} ({compacted})')})
                    return
                for erv, etype, r, ons, o in pending:
                    sent = erv
                    if wanted(r, ons, o):
                        self._write_line({'type': etype, 'object': o})
                now = time.monotonic()
                if now >= deadline:
                    return
                if bookmarks and now - last_bookmark >= fake.bookmark_interval:
                    sent = max(sent, current)
                    self._write_line({'type': 'BOOKMARK', 'object': {
                        'kind': RESOURCES[res][0], 'apiVersion': api_version(res),
                        'metadata': {'resourceVersion': str(sent)}}})
                    last_bookmark = now
        finally:
            with fake.cond:
                fake.watchers -= 1


def main(argv=None):
    ap = argparse.ArgumentParser(description='fake Kubernetes API server for tests (loopback)')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--print-port', action='store_true', help='print the port on stdout first')
    ap.add_argument('--token', help='require this bearer token')
    ap.add_argument('--tls-cert')
    ap.add_argument('--tls-key')
    ap.add_argument('--client-ca', help='accept client certificates signed by this CA')
    ap.add_argument('--bookmark-interval', type=float, default=1.0)
    ap.add_argument('--watch-410', choices=['event', 'http'], default='event')
    ap.add_argument('--gate-off', action='append', default=[],
                    help='start with this feature gate off (e.g. DRAConsumableCapacity)')
    ap.add_argument('--stdin-lifetime', action='store_true', help='exit when stdin is closed')
    a = ap.parse_args(argv)
    api = FakeAPI(port=a.port, token=a.token, tls_cert=a.tls_cert, tls_key=a.tls_key,
                  client_ca=a.client_ca, bookmark_interval=a.bookmark_interval,
                  watch_410=a.watch_410)
    for g in a.gate_off:
        api.set_gate(g, False)
    api.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if a.print_port:
        print(api.port, flush=True)
    if a.stdin_lifetime:
        def watch_stdin():
            try:
                while os.read(0, 4096):
                    pass
            except OSError:
                pass
            done.set()
        threading.Thread(target=watch_stdin, daemon=True).start()
    while not done.wait(0.5):
        pass
    api.stop()
    sys.stdout.flush()
    os._exit(0)  # daemon threads (watches, stdin) need no orderly interpreter shutdown


if __name__ == '__main__':
    sys.exit(main())
