#!/usr/bin/python3
"""The documentation names only what exists (issue 26 #9): in README.md and docs/**/*.md, inside
code spans and code blocks,

  - a repository path (deploy/, docs/, src/, tests/, tools/, bench/, include/, proto/, .ci/) exists
    in the source tree or, for a built program, in the build tree;
  - `gpuslice <command>` names a command of `gpuslice --help`;
  - a flag written after one of our binaries (`gpuslice run --memory`, `gpuslice-webhook
    --mode=legacy`) is in that binary's (or command's) --help;
  - a `make <target>` is a target of the Makefile.

Placeholders (`<...>`, `{a,b}`, `*`, `...`, `NAME`) are not checked.
"""
import os
import re
import subprocess
import sys

from gstest import Tap, env_paths

ROOTS = ('deploy/', 'docs/', 'src/', 'tests/', 'tools/', 'bench/', 'include/', 'proto/', '.ci/')
BINARIES = {'gpuslice': 'GS_GPUSLICE', 'gpuslice-kubelet-plugin': 'GS_PLUGIN',
            'gpuslice-webhook': 'GS_WEBHOOK', 'gpuslice-monitor': 'GS_MONITOR',
            'gpuslice-extender': 'GS_EXTENDER', 'gpuslice-device-plugin': 'GS_DEVICE_PLUGIN',
            'gpusim-smi': 'GS_GPUSIM_SMI'}
CODE_BLOCK = re.compile(r'^```[^\n]*\n(.*?)^```', re.S | re.M)
CODE_SPAN = re.compile(r'`([^`\n]+)`')
PLACEHOLDER = re.compile(r'[<>{}*]|\.\.\.|\$|\bNAME\b|XXXX')


def docs(root):
    out = [os.path.join(root, 'README.md')]
    for d, _, files in os.walk(os.path.join(root, 'docs')):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith('.md')]
    return sorted(out)


def snippets(text):
    """Code of a markdown text: each code block's lines, each code span."""
    out = []
    for m in CODE_BLOCK.finditer(text):
        out += m.group(1).splitlines()
    prose = CODE_BLOCK.sub('', text)
    out += CODE_SPAN.findall(prose)
    return out


def help_text(exe, *args):
    try:
        r = subprocess.run([exe, *args, '--help'], capture_output=True, text=True, timeout=30)
    except OSError:
        return ''
    return r.stdout + r.stderr


def main():
    t = Tap()
    p = env_paths()
    root, build = p['GS_SOURCE_ROOT'], p['GS_BUILD_ROOT']
    exes = {name: os.environ.get(var) for name, var in BINARIES.items()}
    missing = [n for n, e in exes.items() if not e or not os.access(e, os.X_OK)]
    t.ok(not missing, 'every documented binary is built', diag=missing)
    top = help_text(exes['gpuslice']) if exes.get('gpuslice') else ''
    commands = set(re.findall(r'^  ([a-z][a-z-]+)\s', top, re.M))
    t.ok({'run', 'schedule'} <= commands, 'gpuslice --help lists its commands', diag=top)
    with open(os.path.join(root, 'Makefile')) as f:
        targets = set(re.findall(r'^([a-z][a-z-]*):', f.read(), re.M))
    helps = {}

    def flags_of(key):
        if key not in helps:
            exe = exes.get(key[0])
            helps[key] = help_text(exe, *key[1:]) if exe else ''
        return helps[key]

    for path in docs(root):
        rel = os.path.relpath(path, root)
        with open(path) as f:
            text = f.read()
        bad_paths, bad_cmds, bad_flags, bad_make = set(), set(), set(), set()
        for code in snippets(text):
            for tok in re.findall(r'(?<![\w./-])((?:' + '|'.join(re.escape(r) for r in ROOTS) +
                                  r')[\w./@+{},*<>-]*)', code):
                tok = re.sub(r'[.:,;)]+$', '', tok.split(':')[0])
                if PLACEHOLDER.search(tok) or not tok:
                    continue
                if not any(os.path.exists(os.path.join(r, tok)) for r in (root, build)):
                    bad_paths.add(tok)
            words = code.replace('\\', ' ').split()
            for i, w in enumerate(words):
                name = os.path.basename(w)
                if name == 'make' and i + 1 < len(words):
                    nxt = words[i + 1]
                    if re.fullmatch(r'[a-z][a-z-]*', nxt) and nxt not in targets:
                        bad_make.add(nxt)
                if name not in exes or not exes[name]:
                    continue
                key = (name,)
                j = i + 1
                if name == 'gpuslice' and j < len(words) and re.fullmatch(r'[a-z][a-z-]+',
                                                                          words[j]):
                    if words[j] not in commands:
                        bad_cmds.add(words[j])
                        continue
                    key = (name, words[j])
                    j += 1
                for w2 in words[j:]:
                    if w2 in ('--', '|', '&&', ';', '#') or w2.startswith('#'):
                        break
                    m = re.fullmatch(r'(--[a-z][a-z0-9-]*)(=.*)?[.,;)]*', w2)
                    if not m or PLACEHOLDER.search(m.group(1)):
                        continue
                    flag = m.group(1)
                    if flag in ('--help', '--version'):
                        continue
                    negated = '--[no-]' + flag[2:]
                    if not re.search('(' + re.escape(flag) + '|' + re.escape(negated) + r')\b',
                                     flags_of(key)):
                        bad_flags.add(' '.join(key) + ' ' + flag)
        t.ok(not bad_paths, f'{rel}: every repository path it names exists', diag=sorted(bad_paths))
        t.ok(not bad_cmds, f'{rel}: every gpuslice command it names exists', diag=sorted(bad_cmds))
        t.ok(not bad_flags, f'{rel}: every flag it gives our binaries is in their --help',
             diag=sorted(bad_flags))
        t.ok(not bad_make, f'{rel}: every make target it names exists', diag=sorted(bad_make))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
