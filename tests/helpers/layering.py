#!/usr/bin/env python3
"""layering.py - the layering and size checks of tests/00-layering.bats.

    layering.py ROOT includes   every #include "..." of launcher/ and plugin/
                                against docs/architecture.md's layering table
    layering.py ROOT table      the table itself: every folder has a row, no
                                entry names a missing folder, no circle
    layering.py ROOT sizes      no C file over 1,000 lines, no header over 200
    layering.py ROOT stale      every entry of EXCEPTIONS below still applies

The allowed arrows have one home: the table between the "layering table"
markers of docs/architecture.md (folder | what it may include: folders or
single headers, "-" for nothing).  A file may always include headers of its
own folder and config.h.  Exit status 0, or 1 after one line per finding
("FILE:LINE: ...").
"""
import os
import re
import sys

C_MAX, H_MAX = 1000, 200

# Exceptions to the layering table and the size goals (none today; the
# 'stale' check fails on an entry that no longer applies, so the list only
# shrinks).
EXCEPTIONS = {
    # (file, header it includes against the table)
    'include': {
    },
    # files over C_MAX / H_MAX lines
    'size': set(),
}

BEGIN, END = '<!-- layering table: begin -->', '<!-- layering table: end -->'


def folder_of(path):
    """launcher/X/... -> launcher/X; plugin/... -> plugin."""
    parts = path.split('/')
    return '/'.join(parts[:2]) if parts[0] == 'launcher' else parts[0]


def read_table(root):
    doc = os.path.join(root, 'docs/architecture.md')
    text = open(doc, encoding='utf-8').read()
    if BEGIN not in text or END not in text:
        sys.exit('docs/architecture.md: no layering table (%s ... %s)' % (BEGIN, END))
    start = text[:text.index(BEGIN)].count('\n') + 1
    table = {}
    for n, line in enumerate(text[text.index(BEGIN):text.index(END)].split('\n')):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) != 2 or cells[0] in ('folder', '') or set(cells[0]) <= set('-'):
            continue
        entries = [] if cells[1] == '-' else cells[1].split()
        table[cells[0]] = (start + n, entries)
    return table


def sources(root):
    for top in ('launcher', 'plugin'):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith('.'))
            for f in sorted(files):
                if f.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, src, inc):
    """The file a quoted include names: beside src, else under launcher/ (-I)."""
    for cand in (os.path.join(os.path.dirname(src), inc), os.path.join('launcher', inc)):
        cand = os.path.normpath(cand)
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def check_includes(root):
    table, bad = read_table(root), []
    for src in sources(root):
        own = folder_of(src)
        allowed = table.get(own, (0, None))[1]
        for n, line in enumerate(open(os.path.join(root, src), encoding='utf-8', errors='replace'), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m or m.group(1) == 'config.h':
                continue
            hdr = resolve(root, src, m.group(1))
            if hdr is None:
                bad.append('%s:%d: includes "%s", which is no file of the tree' % (src, n, m.group(1)))
                continue
            if folder_of(hdr) == own or (src, hdr) in EXCEPTIONS['include']:
                continue
            if allowed is None:
                bad.append('%s:%d: folder %s has no row in the layering table of docs/architecture.md'
                           % (src, n, own))
            elif folder_of(hdr) not in allowed and hdr not in allowed:
                bad.append('%s:%d: includes %s, but %s may include only %s (docs/architecture.md, layering table)'
                           % (src, n, hdr, own, ' '.join(allowed) or 'its own headers'))
    return bad


def check_table(root):
    table, bad = read_table(root), []
    folders = {folder_of(s) for s in sources(root)}
    for f in sorted(folders - set(table)):
        bad.append('docs/architecture.md: layering table: no row for %s' % f)
    edges = {}
    for f, (line, entries) in table.items():
        for e in entries:
            if not os.path.exists(os.path.join(root, e)):
                bad.append('docs/architecture.md:%d: %s may include %s, which does not exist' % (line, f, e))
        edges[f] = {folder_of(e) for e in entries} - {f}
    # a circle: depth-first search, grey = on the current path
    state, path = {}, []

    def visit(f):
        state[f] = 'grey'
        path.append(f)
        for t in sorted(edges.get(f, ())):
            if state.get(t) == 'grey':
                bad.append('docs/architecture.md: layering table has a circle: %s'
                           % ' -> '.join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t)
        path.pop()
        state[f] = 'black'

    for f in sorted(edges):
        if f not in state:
            visit(f)
    return bad


def over(root, src):
    n = open(os.path.join(root, src), encoding='utf-8', errors='replace').read().count('\n')
    limit = C_MAX if src.endswith('.c') else H_MAX
    return n if n > limit else 0


def check_sizes(root):
    bad = []
    for src in sources(root):
        n = over(root, src)
        if n and src not in EXCEPTIONS['size']:
            bad.append('%s: %d lines (goal: at most %d for a %s)'
                       % (src, n, C_MAX if src.endswith('.c') else H_MAX,
                          'C file' if src.endswith('.c') else 'header'))
    return bad


def check_stale(root):
    bad = []
    for src in sorted(EXCEPTIONS['size']):
        if not os.path.isfile(os.path.join(root, src)) or not over(root, src):
            bad.append('tests/helpers/layering.py: %s is within the size goals now: remove it from EXCEPTIONS'
                       % src)
    for src, hdr in sorted(EXCEPTIONS['include']):
        path = os.path.join(root, src)
        text = open(path, encoding='utf-8', errors='replace').read() if os.path.isfile(path) else ''
        if not any(resolve(root, src, m) == hdr for m in re.findall(r'#\s*include\s+"([^"]+)"', text)):
            bad.append('tests/helpers/layering.py: %s no longer includes %s: remove it from EXCEPTIONS'
                       % (src, hdr))
    return bad


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ('includes', 'table', 'sizes', 'stale'):
        sys.exit('usage: layering.py ROOT includes|table|sizes|stale')
    bad = globals()['check_' + sys.argv[2]](sys.argv[1])
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
