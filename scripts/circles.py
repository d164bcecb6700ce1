#!/usr/bin/env python3
"""No two files import each other (docs/development.md): prints each pair of files of one crate
that refer to each other by `crate::`, `super::` or `self::` paths (in `use` or inline; test
modules and comments left out; a module and the file that declares it are no pair), and exits 1
when there is one.

    scripts/circles.py [REPO]      # default: this directory; reads the files git tracks
"""
import os, re, sys, subprocess
root = sys.argv[1] if len(sys.argv) > 1 else '.'
files = subprocess.run(['git', '-C', root, 'ls-files', '*.rs'], capture_output=True, text=True).stdout.split()
crates = {}
for f in files:
    parts = f.split('/')
    if 'src' not in parts:
        continue
    i = parts.index('src')
    crates.setdefault('/'.join(parts[:i + 1]), []).append('/'.join(parts[i + 1:]))
def module_of(rel):
    p = rel[:-3].split('/')
    if p[-1] in ('mod', 'lib', 'main'):
        p = p[:-1]
    if p and p[0] == 'bin':
        return None
    return tuple(p)
def strip_tests(text):
    # drop `#[cfg(test)] mod tests { ... }` blocks (braces counted)
    out, i = [], 0
    for m in re.finditer(r'#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod \w+\s*\{', text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return ''.join(out)
found = 0
for crate, rels in crates.items():
    mods = {}
    for rel in rels:
        m = module_of(rel)
        if m is not None:
            mods[m] = rel
    edges = {}
    for m, rel in mods.items():
        text = strip_tests(open(os.path.join(root, crate, rel)).read())
        text = re.sub(r'//[^\n]*', '', text)
        refs = set()
        # expand `use crate::{a, b::c}` groups roughly: take every path starting with crate:: or super::
        for path in re.findall(r'\b((?:crate|super|self)(?:::\{?[\w]+)+)', text):
            segs = re.split(r'::\{?', path)
            base = list(m) if segs[0] != 'crate' else []
            if segs[0] == 'super':
                # super from a mod.rs/lib is its parent; from a file a/b.rs it is a
                is_dir = rel.endswith('mod.rs')
                base = list(m)[:-1] if not is_dir else list(m)[:-1]
                segs = segs[1:]
                while segs and segs[0] == 'super':
                    base = base[:-1]; segs = segs[1:]
            elif segs[0] == 'self':
                segs = segs[1:]
                if not rel.endswith(('mod.rs', 'lib.rs')):
                    continue
            else:
                segs = segs[1:]
            target = tuple(base)
            for s in segs:
                nxt = target + (s,)
                if nxt in mods:
                    target = nxt
                else:
                    break
            if target != m and target in mods:
                refs.add(target)
        # inline `{a, b}` groups after crate::x::{...}
        for grp_base, grp in re.findall(r'\bcrate((?:::\w+)*)::\{([^}]*)\}', text):
            b = tuple(x for x in grp_base.split('::') if x)
            for item in grp.split(','):
                name = item.strip().split('::')[0].split(' ')[0]
                t = b + (name,)
                if t in mods and t != m:
                    refs.add(t)
        edges[m] = refs
    for a, refs in edges.items():
        for b in refs:
            if a < b and a in edges.get(b, ()):
                # a parent module (lib.rs/mod.rs) declaring its children is not a circle
                if b[:len(a)] == a or a[:len(b)] == b:
                    continue
                print(f"{crate}: {mods[a]} <-> {mods[b]}")
                found += 1
sys.exit(1 if found else 0)
