#!/usr/bin/env python3
"""AdmissionReview fixtures -> admit_tool (the webhook's admission code) -> the returned JSON Patch
applied with python3-jsonpatch; the Pod's new fields are compared with the v1.36 sample Pod and
every ResourceClaimTemplate is validated against the strict JSON schema (Draft 7).

usage: test_fixtures.py ADMIT_TOOL FIXTURE_DIR
"""
import base64
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonpatch
import jsonschema

from gstest import Tap, reference_json, skip_reference

LEGACY = ["nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
          "nvidia.com/gpucores"]


def cel_literals(expr):
    """Decode every double-quoted CEL string literal in expr (escapes as CEL defines them)."""
    out, i = [], 0
    while i < len(expr):
        if expr[i] != '"':
            i += 1
            continue
        i += 1
        s = ''
        while expr[i] != '"':
            c = expr[i]
            if c == '\\':
                e = expr[i + 1]
                if e in '"\\':
                    s += e
                    i += 2
                elif e == 'x':
                    s += chr(int(expr[i + 2:i + 4], 16))
                    i += 4
                elif e == 'u':
                    s += chr(int(expr[i + 2:i + 6], 16))
                    i += 6
                elif e == 'U':
                    s += chr(int(expr[i + 2:i + 10], 16))
                    i += 10
                else:
                    raise ValueError(f"unexpected escape \\{e} in {expr!r}")
            else:
                if ord(c) < 0x20 or ord(c) > 0x7e:
                    raise ValueError(f"raw character {c!r} inside a literal of {expr!r}")
                s += c
                i += 1
        out.append(s)
        i += 1
    return out


def keys_within(got, sample, where, t):
    extra = set(got) - set(sample)
    t.ok(not extra, f"{where}: only fields the v1.36 Pod has", diag=f"unknown fields {extra}")
    wrong = {k: type(v).__name__ for k, v in got.items()
             if k in sample and type(v) is not type(sample[k])}
    t.ok(not wrong, f"{where}: field types as in the v1.36 Pod", diag=wrong)


def run_case(t, tool, path, schema, sample_pod):
    name = os.path.basename(path)[:-5]
    fx = json.load(open(path))
    exp = fx['expect']
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
        if 'raw' in fx:
            f.write(fx['raw'])
        else:
            json.dump(fx['review'], f)
        review_path = f.name
    try:
        res = subprocess.run([tool, review_path] + fx['args'], capture_output=True, text=True,
                             timeout=60)
    finally:
        os.unlink(review_path)
    if not t.ok(res.returncode == 0, f"{name}: admit_tool ran", diag=res.stderr):
        return
    out = json.loads(res.stdout)
    if 'raw' in fx:
        t.is_eq(out['status'], exp['status'], f"{name}: HTTP {exp['status']}")
        t.like(out['body'] if isinstance(out['body'], str) else '', exp['message'],
               f"{name}: message names the problem")
        return
    review = fx['review']
    t.is_eq(out['status'], 200, f"{name}: HTTP 200")
    body = out['body']
    t.is_eq((body.get('apiVersion'), body.get('kind')), ('admission.k8s.io/v1', 'AdmissionReview'),
            f"{name}: AdmissionReview v1 response")
    resp = body['response']
    t.is_eq(resp['uid'], review['request']['uid'], f"{name}: uid echoed")
    t.is_eq(resp['allowed'], exp['allowed'], f"{name}: allowed={exp['allowed']}")
    for w in exp.get('warnings', []):
        t.ok(any(w in x for x in resp.get('warnings', [])), f"{name}: warning {w[:50]!r}",
             diag=resp.get('warnings'))
    if not exp['allowed']:
        t.is_eq(resp['status']['code'], exp['code'], f"{name}: status code {exp['code']}")
        t.like(resp['status']['message'], exp['message'], f"{name}: message")
        t.ok('patch' not in resp, f"{name}: no patch on denial")
        t.is_eq(out['templates'], [], f"{name}: no template created on denial")
        return
    if exp.get('patched') is False:
        t.ok('patch' not in resp and 'patchType' not in resp, f"{name}: pod unchanged")
        t.is_eq(out['templates'], [], f"{name}: no template created")
        return
    t.is_eq(resp.get('patchType'), 'JSONPatch', f"{name}: patchType JSONPatch")
    ops = json.loads(base64.b64decode(resp['patch']))
    pod = jsonpatch.apply_patch(review['request']['object'], ops)
    spec = pod['spec']
    t.is_eq(pod['metadata'].get('labels', {}).get('hami.io/dra'), 'true',
            f"{name}: mutated pod labelled hami.io/dra=true (HAMi-DRA's DraLabel)")
    legacy = list(LEGACY)
    args = fx['args']
    for flag, idx in (('--resource-name', 0), ('--resource-mem', 1),
                      ('--resource-mem-percentage', 2), ('--resource-cores', 3)):
        if flag in args:
            legacy[idx] = args[args.index(flag) + 1]
    ctrs = {c['name']: c for c in spec.get('initContainers', []) + spec['containers']}
    for cn, c in ctrs.items():
        res = c.get('resources', {})
        left = [k for k in legacy for part in ('limits', 'requests') if k in res.get(part, {})]
        t.ok(not left, f"{name}: container {cn[:20]}: legacy resources removed", diag=left)
        if sample_pod is None:
            skip_reference(t, 'pod fields as in the v1.36 sample Pod', 'k8s-api-testdata-v1.36')
            continue
        keys_within(res, sample_pod['spec']['containers'][0]['resources'],
                    f"{name}: container {cn[:20]} resources", t)
        for cl in res.get('claims', []):
            keys_within(cl, sample_pod['spec']['containers'][0]['resources']['claims'][0],
                        f"{name}: container {cn[:20]} resources.claims[]", t)
    for pc in spec.get('resourceClaims', []) if sample_pod is not None else []:
        keys_within(pc, sample_pod['spec']['resourceClaims'][0], f"{name}: spec.resourceClaims[]", t)
    by_claim = {pc['name']: pc for pc in spec.get('resourceClaims', [])}
    for keep in exp.get('keep_claims', []):
        t.ok(keep in by_claim, f"{name}: existing pod claim {keep} kept")
    templates = {tp['metadata']['name']: tp for tp in out['templates']}
    ensured = exp.get('ensured', exp.get('n_templates'))
    t.is_eq(len(out['templates']), ensured, f"{name}: {ensured} template(s) ensured")
    validator = jsonschema.Draft7Validator(schema) if schema else None
    for tn, tp in templates.items():
        t.valid(validator, tp, f"{name}: template {tn} validates against the strict schema")
        t.is_eq(tp['metadata']['namespace'], review['request'].get('namespace') or
                review['request']['object']['metadata']['namespace'],
                f"{name}: template in the pod's namespace")
        text = json.dumps(tp['spec']['spec'], sort_keys=True, separators=(',', ':'),
                          ensure_ascii=False)
        digest = hashlib.sha256(text.encode()).hexdigest()
        t.is_eq(tn, 'gpuslice-' + digest[:20],
                f"{name}: template named by the SHA-256 of its claim spec")
        t.is_eq(tp['metadata'].get('annotations', {}).get('gpuslice.io/claim-spec-sha256'),
                digest, f"{name}: template annotated with the full SHA-256")
    for cn, want in exp.get('claims', {}).items():
        c = ctrs[cn]
        names = [cl['name'] for cl in c.get('resources', {}).get('claims', [])]
        if want is None:
            t.is_eq(names, [], f"{name}: container {cn} gets no claim")
            continue
        got = [n for n in names if re.fullmatch(re.escape(want).replace(r'\*', '[0-9a-f]{8}'), n)]
        if not t.ok(len(got) == 1, f"{name}: container {cn[:20]} refers to pod claim {want}",
                    diag=names):
            continue
        t.ok(len(got[0]) <= 63, f"{name}: pod claim name is a DNS label")
        pc = by_claim.get(got[0], {})
        tpl = pc.get('resourceClaimTemplateName', '')
        t.ok(tpl.startswith('gpuslice-') and 'resourceClaimName' not in pc,
             f"{name}: pod claim {got[0][:24]} uses a generated template (no per-pod claim)")
        want_spec = exp.get('claim_specs', {}).get(want)
        if want_spec is None or ensured == 0:
            continue
        got_spec = templates.get(tpl, {}).get('spec', {}).get('spec')
        t.is_eq(got_spec, want_spec, f"{name}: claim spec of {want}")
        sels = [s['cel']['expression'] for r in got_spec['devices']['requests']
                for s in r.get('exactly', {}).get('selectors', [])]
        for i, lits in enumerate(exp.get('literals', [])):
            t.is_eq([x for x in cel_literals(sels[i]) if x != 'hami-core-gpu.project-hami.io'],
                    lits, f"{name}: selector {i} literals decode to the annotation's values")
        for m in exp.get('match', []):
            expr = sels[m['selector']]
            lits = [x for x in cel_literals(expr) if x != 'hami-core-gpu.project-hami.io']
            hit = any(x in m['productName'].lower() for x in lits)
            t.is_eq(not hit if expr.startswith('!') else hit, m['result'],
                    f"{name}: selector {m['selector']} on {m['productName']!r}")
    if ensured == 0:
        t.ok(all(pc.get('resourceClaimTemplateName', '').startswith('gpuslice-')
                 for pc in by_claim.values() if pc['name'].startswith('gpu-')),
             f"{name}: dry run still returns the patch")


def main():
    tool, fixtures = sys.argv[1], sys.argv[2]
    schema = reference_json('k8s-json-schema', 'resourceclaimtemplate-resource-v1.json')
    sample_pod = reference_json('k8s-api-testdata-v1.36', 'core.v1.Pod.json')
    t = Tap()
    for path in sorted(glob.glob(os.path.join(fixtures, '*.json'))):
        t.run(os.path.basename(path), run_case, t, tool, path, schema, sample_pod)
    sys.exit(t.done())


if __name__ == '__main__':
    main()
