#!/usr/bin/python3
"""docs/troubleshooting.md quotes only messages the programs print (issue 36 item 4).

Every **Message:** entry's code spans are split at placeholders (`<...>`); each fixed fragment of
six characters or more must appear in a C source file under src/ (a string literal or format
string), and every section says which command tells why and what the fix is. A message reworded in the code without the page fails here.
"""
import os
import re

from gstest import Tap, env_paths

MESSAGE = re.compile(r'^\*\*Message:\*\*(.*?)(?=^\s*$|^- )', re.S | re.M)
SPAN = re.compile(r'`([^`\n]+)`')
PLACEHOLDER = re.compile(r'<[^>]*>')
SECTION = re.compile(r'^## (.*)$', re.M)


def sources(root):
    text = []
    for d, _, files in os.walk(os.path.join(root, 'src')):
        for f in sorted(files):
            if f.endswith(('.c', '.h', '.def')):
                with open(os.path.join(d, f), encoding='utf-8', errors='replace') as fh:
                    text.append(fh.read())
    return '\n'.join(text)


def fragments(span):
    return [f for f in PLACEHOLDER.split(span) if len(f.strip()) >= 6]


def main():
    t = Tap()
    root = env_paths()['GS_SOURCE_ROOT']
    page = os.path.join(root, 'docs', 'troubleshooting.md')
    with open(page, encoding='utf-8') as fh:
        doc = fh.read()
    src = sources(root)
    messages = MESSAGE.findall(doc)
    t.ok(len(messages) >= 8, 'troubleshooting.md quotes at least 8 messages',
         '%d found' % len(messages))
    for m in messages:
        for span in SPAN.findall(m):
            for frag in fragments(span):
                t.ok(frag in src, 'message fragment %r is printed by src/' % frag,
                     'not in any src/ file: reword the page or the code together')
    sections = SECTION.split(doc)[1:]
    for title, body in zip(sections[0::2], sections[1::2]):
        t.ok('**Command:**' in body, 'section %r says which command tells why' % title)
        t.ok('**Fix:**' in body, 'section %r says the fix' % title)
    t.done()


if __name__ == '__main__':
    main()
