#!/usr/bin/python3
"""In-cluster configuration over HTTPS: no --kubeconfig; the service-account directory gives the
token, the CA and the namespace, KUBERNETES_SERVICE_HOST/PORT the server. The plugin publishes
and prepares through TLS, and keeps working after the token file rotates."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pluginlib as pl  # noqa: E402
from fakeapi import FakeAPI  # noqa: E402
from gstest import Tap, skip_unbuilt  # noqa: E402


def main():
    t = Tap()
    if not pl.gpusim_available():
        skip_unbuilt(t, 'in-cluster', 'gpusim libnvidia-ml.so.1 not built')
        return t.done()
    with pl.PluginEnv(t, use_kubeconfig=False) as probe:
        tmp = probe.tmp
        cert, key = os.path.join(tmp, 'tls.crt'), os.path.join(tmp, 'tls.key')
        r = subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                            '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
                            '-keyout', key, '-out', cert], capture_output=True, text=True)
        if r.returncode != 0:
            t.skip('in-cluster', f'openssl cannot make a certificate: {r.stderr[-200:]}')
            return t.done()
        api = FakeAPI(token='sa-token-1', tls_cert=cert, tls_key=key).start()
        sa = os.path.join(tmp, 'serviceaccount')
        os.makedirs(sa)
        with open(os.path.join(sa, 'token'), 'w') as f:
            f.write('sa-token-1')
        with open(os.path.join(sa, 'ca.crt'), 'w') as f:
            f.write(open(cert).read())
        with open(os.path.join(sa, 'namespace'), 'w') as f:
            f.write('gpuslice-system')
        try:
            env = pl.PluginEnv(t, api=api, use_kubeconfig=False, extra_env={
                'KUBERNETES_SERVICE_HOST': '127.0.0.1',
                'KUBERNETES_SERVICE_PORT': str(api.port),
                'GPUSLICE_SERVICEACCOUNT_DIR': sa})
            with env:
                env.start()
                s = env.wait_slices(lambda s: len(s) == 1)
                t.is_eq(len(s), 1, 'in-cluster over HTTPS: slice published')
                auth = {r['auth'] for r in api.requests(match='/resourceslices')}
                t.is_eq(auth, {'Bearer sa-token-1'}, 'service-account token sent')
                c = api.put(pl.claim('tls', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
                r = env.kubelet.prepare('v1', [pl.ref(c)])
                t.is_eq(r.claims[c['metadata']['uid']].error, '', 'claim fetched over HTTPS')
                # Token rotation: the API accepts only the new token from now on.
                with open(os.path.join(sa, '.token.new'), 'w') as f:
                    f.write('sa-token-2')
                os.rename(os.path.join(sa, '.token.new'), os.path.join(sa, 'token'))
                api.set_token('sa-token-2')
                c2 = api.put(pl.claim('tls2', results=[('r', 'hami-gpu-0', 10, '1Gi')]))
                r = env.kubelet.prepare('v1', [pl.ref(c2)])
                t.is_eq(r.claims[c2['metadata']['uid']].error, '',
                        'after the token file rotated the plugin still reaches the API')
                t.ok(any(q['auth'] == 'Bearer sa-token-2'
                         for q in api.requests(match='/resourceclaims/tls2')),
                     'the rotated token was used')
        finally:
            api.stop()
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
