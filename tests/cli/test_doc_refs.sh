#!/usr/bin/env bash
# Every document a comment cites resolves inside the repository (issue 12 item 8): in the sources,
# tests, benchmarks and scripts, each NAME.md is a file of the tree (docs/ pages cited with their
# docs/ path, since a bare "layouts.md 3.2" cannot say whose numbering it uses), each numbered
# pointer into a docs/ page names a section, decision, vector or finding that page has, and no
# comment names a document that lives only outside the repository.  The documentation itself
# (docs/*.md, README.md, bench/README.md, tests/README.md) follows the same rules, except that a
# docs/ page may name a sibling page bare, as its links do ("[formats.md](formats.md), 5.4" is
# checked like "docs/formats.md 5.4"); naming upstream projects (ggml, llama.cpp) is of course
# fine, only the outside design/spec documents and audit ids are refused.  README.md's
# "Documentation" list must name every docs/*.md page.
# usage: test_doc_refs.sh BIN_DIR DATA_DIR  (both unused: this test reads the source tree)
#        test_doc_refs.sh --tree DIR         (check another tree; used to test this test)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
self="tests/cli/test_doc_refs.sh"
if [ "${1:-}" = "--tree" ]; then top=$(cd "$2" && pwd); fi
cd "$top" || exit 2
python3 - "$self" <<'PY'
import os, re, sys

self = sys.argv[1]
roots = ['lib', 'cmd', 'tests', 'bench', 'scripts']
exts = ('.c', '.h', '.inc', '.sh', '.py', '.cmake', '.txt', '.dict', '.md', '.yaml', '.yml')
files = [f for f in ('CMakeLists.txt', 'README.md') if os.path.exists(f)]
if os.path.isdir('docs'):
    files += [os.path.join('docs', n) for n in os.listdir('docs') if n.endswith('.md')]
for r in roots:
    for d, _, names in os.walk(r):
        files += [os.path.join(d, n) for n in names if n.endswith(exts)]
files = sorted(f for f in files if f != self)

# Documents that exist only outside this repository, and the upstream audit ids of the old reports.
outside = [
    (re.compile(r'\b(design|conversion|container|ambiguities|checkpoints|ggml-blocks)\.md\b'), 'an outside document'),
    (re.compile(r'\btensor-formats(\.txt)?\b'), 'an outside document'),
    (re.compile(r'\bspec/[A-Za-z0-9_-]+\.(md|txt)\b'), 'an outside spec file'),
    (re.compile(r'\bfinding [A-Z][0-9]'), 'an audit id without its docs/security.md section'),
    (re.compile(r'\bdesign decision\b|\bdecision [0-9]+\b'), 'a decision not cited as docs/decisions.md Dn'),
]
ref = re.compile(r'(?<![$}*A-Za-z0-9_./-])([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)\b')
numbered = re.compile(r'(?:\bdocs/|(?<![A-Za-z0-9_./-]))([a-z0-9_-]+)\.md(?:#[a-z0-9-]+)?\)?,? (?:sections? )?(D[0-9]+|item [0-9]+|items [0-9]+|[0-9]+(?:\.[0-9]+)?)(?:,? ([FMRC][0-9]+[a-z]?))?')
# Known problems in pages another branch is rewriting (file, exact text): reported, not failed.
# Remove an entry once its page no longer holds the text.
pending = []
docs = set(os.listdir('docs')) if os.path.isdir('docs') else set()
tracked = set()
for d, _, names in os.walk('.'):
    if '/.git' in d or d.startswith('./build'):
        continue
    tracked.update(n for n in names if n.endswith('.md'))
texts = {}
def doc(name):
    if name not in texts:
        texts[name] = open(os.path.join('docs', name), encoding='utf-8').read()
    return texts[name]

bad = 0
checked = 0
def fail(f, n, msg):
    global bad
    bad += 1
    print('FAIL %s:%d: %s' % (f, n, msg))

for f in files:
    try:
        lines = open(f, encoding='utf-8').read().split('\n')
    except (UnicodeDecodeError, OSError):
        continue
    in_docs = os.path.dirname(f) == 'docs'
    for n, line in enumerate(lines, 1):
        held = [t for pf, t in pending if pf == f and t in line]
        if held:
            print('PENDING %s:%d: %s (left to the branch rewriting this page)' % (f, n, ', '.join(held)))
            for t in held:
                line = line.replace(t, '')
        for pat, what in outside:
            m = pat.search(line)
            if m:
                fail(f, n, '"%s" is %s' % (m.group(0), what))
        for m in ref.finditer(line):
            name = m.group(1)
            checked += 1
            if '/' in name:
                p = name[2:] if name.startswith('./') else name
                if not (os.path.isfile(p) or os.path.isfile(os.path.join(os.path.dirname(f), p))):
                    fail(f, n, '%s does not exist in the repository' % name)
            elif name in docs:
                if not in_docs:
                    fail(f, n, '%s: cite it as docs/%s' % (name, name))
            elif name not in tracked:
                fail(f, n, '%s does not exist in the repository' % name)
        for m in numbered.finditer(line):
            page, where, finding = m.group(1) + '.md', m.group(2), m.group(3)
            if page not in docs:
                continue  # reported above
            if not m.group(0).startswith('docs/') and not in_docs:
                continue  # a bare name outside docs/ is reported above
            text = doc(page)
            if where.startswith('D'):
                ok = re.search(r'\*\*' + where + r' ', text)
            elif where.startswith('item'):
                ok = re.search(r'^' + where.split()[1] + r'\. ', text, re.M)
            else:
                ok = re.search(r'^#+ ' + re.escape(where) + r'[. ]', text, re.M)
            if not ok:
                fail(f, n, 'docs/%s has no %s' % (page, where))
            if finding and not re.search(r'\b' + finding + r'\b', text):
                fail(f, n, 'docs/%s does not describe %s' % (page, finding))
# README.md's documentation list names every page of docs/.
if os.path.exists('README.md') and docs:
    text = open('README.md', encoding='utf-8').read()
    m = re.search(r'^## Documentation\n(.*?)(?=^## |\Z)', text, re.M | re.S)
    if not m:
        fail('README.md', 1, 'no "## Documentation" section')
    else:
        listed = set(re.findall(r'\bdocs/([A-Za-z0-9_.-]+\.md)\b', m.group(1)))
        line = text[:m.start()].count('\n') + 1
        for page in sorted(n for n in docs if n.endswith('.md')):
            checked += 1
            if page not in listed:
                fail('README.md', line, 'the Documentation list does not name docs/%s' % page)
print('%d references checked, %d problems' % (checked, bad))
if checked == 0:
    print('FAIL no reference found: is the tree right?')
    sys.exit(1)
sys.exit(1 if bad else 0)
PY
