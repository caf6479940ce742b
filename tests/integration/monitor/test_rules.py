#!/usr/bin/python3
"""deploy/monitoring/prometheusrule.yaml (issue 26 #6): its spec.groups pass `promtool check rules`
and the unit tests of alerts.test.yaml (`promtool test rules`: each alert fires on the series it
is about and stays quiet before its `for`), and every metric an alert reads is one the monitor
exports (`gpuslice-monitor --list-metrics`) or Prometheus' own (`up`)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from gstest import Tap, env_paths


def main():
    t = Tap()
    p = env_paths()
    src = p['GS_SOURCE_ROOT']
    with open(os.path.join(src, 'deploy', 'monitoring', 'prometheusrule.yaml')) as f:
        rule = yaml.safe_load(f)
    t.is_eq((rule['apiVersion'], rule['kind']), ('monitoring.coreos.com/v1', 'PrometheusRule'),
            'deploy/monitoring ships a PrometheusRule')
    groups = rule['spec']['groups']
    alerts = [r['alert'] for g in groups for r in g['rules'] if 'alert' in r]
    t.ok(len(alerts) >= 6, 'alerts for memory near limit, OOM, exhausted devices, metrics absent',
         diag=alerts)
    known = set(subprocess.run([os.environ['GS_MONITOR'], '--list-metrics'], capture_output=True,
                               text=True, timeout=30).stdout.split()) | {'up'}
    used = set()
    for g in groups:
        for r in g['rules']:
            used |= {m for m in re.findall(r'\b([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:\{|\[|\s|\)|$)',
                                           r['expr'])
                     if m.startswith(('gpuslice_', 'hami_')) or m == 'up'}
    t.ok(used and used <= known, 'every metric the alerts read is exported by the monitor',
         diag=sorted(used - known))
    # Dashboard: a panel drawn in seconds plots durations only; another quantity on it has an
    # override with its own unit (panel 14 drew a count of claims in seconds).
    import json
    with open(os.path.join(src, 'deploy', 'monitoring', 'dashboard.json')) as f:
        dash = json.load(f)
    bad = []
    for pn in dash.get('panels', []):
        if pn.get('fieldConfig', {}).get('defaults', {}).get('unit') != 's':
            continue
        own = {o['matcher'].get('options') for o in pn['fieldConfig'].get('overrides', [])
               if o.get('matcher', {}).get('id') == 'byFrameRefID' and
               any(pr.get('id') == 'unit' for pr in o.get('properties', []))}
        for tg in pn.get('targets', []):
            if 'seconds' not in tg.get('expr', '') and tg.get('refId') not in own:
                bad.append(f"panel {pn.get('id')} {pn.get('title')}: {tg.get('expr')}")
    t.ok(not bad, 'dashboard: panels in seconds plot durations (others have a unit override)',
         diag=bad)
    if not shutil.which('promtool'):
        if os.environ.get('CI') == 'true':
            t.ok(False, 'promtool is installed (tools/deps.txt: prometheus)')
        else:
            t.skip('promtool check/test rules', 'promtool not installed (make deps)')
        return t.done()
    with tempfile.TemporaryDirectory(prefix='gs-rules-') as tmp:
        with open(os.path.join(tmp, 'gpuslice-alerts.rules.yaml'), 'w') as f:
            yaml.safe_dump({'groups': groups}, f, sort_keys=False)
        shutil.copy(os.path.join(src, 'tests', 'integration', 'monitor', 'alerts.test.yaml'), tmp)
        r = subprocess.run(['promtool', 'check', 'rules', 'gpuslice-alerts.rules.yaml'],
                           cwd=tmp, capture_output=True, text=True, timeout=60)
        t.ok(r.returncode == 0, 'promtool check rules', diag=r.stdout + r.stderr)
        r = subprocess.run(['promtool', 'test', 'rules', 'alerts.test.yaml'], cwd=tmp,
                           capture_output=True, text=True, timeout=120)
        t.ok(r.returncode == 0, 'promtool test rules: every alert test passes',
             diag=(r.stdout + r.stderr)[-2000:])
        with open(os.path.join(tmp, 'alerts.test.yaml')) as f:
            tested = {a['alertname'] for c in yaml.safe_load(f)['tests']
                      for a in c.get('alert_rule_test', [])}
        t.is_eq(sorted(set(alerts) - tested), [], 'every alert has a promtool unit test')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
