#!/usr/bin/env python3
"""Lists the file-level import circles of host/src: groups of source files that
`use` each other (directly or around a loop), by the module paths in their `use`
lines (`crate::`, `super::`, `self::`). A module is its file (`a/b.rs` or
`a/b/mod.rs`); a use of an item inside a file counts for that file. Exits 1 when
there is a circle, so it can gate; prints each as `a.rs -> b.rs -> a.rs`."""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "host", "src")
USE = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?use\s+([^;]+);", re.M)


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def files():
    out = {}
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(dirpath, name)
                out[module_of(path)] = path
    return out


def expand(tree):
    """`a::{b, c::{d}}` into `a::b`, `a::c::d` (paths only, no renames)."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree.split(" as ")[0]]
    prefix, inner = m.groups()
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        parts.append(cur)
    return [p for part in parts for p in expand(prefix + part)]


def target(module, path, modules):
    """The file a use path reaches from `module` (the longest module prefix)."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        base = list(module)
        # A file `a/b.rs` (module a::b): `super` is a, `self` is a::b.
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    else:
        return None
    full = base + segs
    for n in range(len(full), 0, -1):
        if tuple(full[:n]) in modules:
            return tuple(full[:n])
    return None


def main():
    modules = files()
    edges = {}
    for module, path in modules.items():
        text = open(path, encoding="utf-8").read()
        # Test modules may import what they test back: only the shipped code counts.
        text = text.split("#[cfg(test)]\nmod tests")[0]
        deps = set()
        for tree in USE.findall(text):
            for p in expand(tree):
                t = target(module, p, modules)
                if t and t != module and not module[: len(t)] == t:
                    deps.add(t)
        edges[module] = deps
    # Strongly connected components (Tarjan).
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    name = lambda m: os.path.relpath(modules[m], ROOT)
    for scc in sccs:
        print("circle: " + " <-> ".join(name(m) for m in scc))
    print(f"{len(sccs)} import circles among {len(modules)} files")
    return 1 if sccs else 0


if __name__ == "__main__":
    sys.exit(main())
