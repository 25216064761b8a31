#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""call-cycles.py - which of a directory's source files call each other in
a circle, from their objects' symbols (nm): file A calls file B when A
uses a function or variable that B defines (libc's names left out: an
interposer defines them too).  Prints one line per cycle (its files,
sorted, space-separated), the strongly connected components of more
than one file; with -v, the calls inside each."""
import os
import subprocess
import sys


def libc_names():
    for path in ('/lib/x86_64-linux-gnu/libc.so.6', '/lib/aarch64-linux-gnu/libc.so.6',
                 '/usr/lib/libc.so.6', '/lib64/libc.so.6'):
        if os.path.exists(path):
            out = subprocess.run(['nm', '-D', '--defined-only', path], capture_output=True,
                                 text=True).stdout
            return {l.split()[-1].split('@')[0] for l in out.splitlines() if l.split()}
    return set()


def graph(objects, prefix):
    skip = libc_names()
    defs, uses = {}, {}
    for o in objects:
        name = os.path.basename(o)[:-2]
        if name.startswith(prefix):
            name = name[len(prefix):]
        out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'TDBRG' and f[2] not in skip:
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == 'U' and f[1] not in skip:
                uses.setdefault(name, set()).add(f[1])
    edges = {}
    for a, syms in uses.items():
        for s in syms:
            b = defs.get(s)
            if b and b != a:
                edges.setdefault(a, {}).setdefault(b, set()).add(s)
    return edges


def cycles(edges):
    """Tarjan's strongly connected components, those of 2 or more."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def main():
    args = sys.argv[1:]
    verbose = args[:1] == ['-v']
    args = args[1:] if verbose else args
    prefix, objects = args[0], args[1:]
    edges = graph(objects, prefix)
    for comp in cycles(edges):
        print(' '.join(comp))
        for a in comp if verbose else ():
            for b in sorted(edges.get(a, {})):
                if b in comp:
                    print('  %s -> %s: %s' % (a, b, ' '.join(sorted(edges[a][b]))))


main()
