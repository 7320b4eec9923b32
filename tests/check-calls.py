#!/usr/bin/env python3
"""tests/check-calls.py [--layers SPEC] OBJ...: fail on a call circle among
the files whose objects are named (make check-unit names the worker's and
the broker's), and with --layers on a call up through the layers SPEC
names: files separated by spaces, layers by "|", the top layer first; a
file no layer names is below them all.

File A calls file B when A's object takes a symbol B's object defines
(nm: A's undefined symbols, B's defined ones). A function passed as a
pointer is no call: that is how a lower layer reaches an upper one. Each
circle (a strongly connected set of two or more files) is printed with
the symbols that tie it, as: a.c -> b.c: rf_x, rf_y.
"""
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, wanted = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            wanted.add(name)
        elif kind in "TDBRGS":  # global text, data, bss, read-only
            defined.add(name)
    return defined, wanted


def circles(edges, nodes):
    """Tarjan's strongly connected components of two or more nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(args):
    layers = None
    if args[:1] == ["--layers"] and len(args) > 1:
        layers = {}
        for rank, layer in enumerate(args[1].split("|")):
            for f in layer.split():
                layers[f] = (rank, layer.strip())
        args = args[2:]
    paths = args
    if not paths or any(p.startswith("-") for p in paths):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    top = os.path.commonpath([os.path.dirname(p) for p in paths])
    objs = {os.path.relpath(p, top)[:-2] + ".c": symbols(p) for p in paths}
    owner = {}
    for f, (defined, _) in objs.items():
        for s in defined:
            owner[s] = f
    edges, names = {}, {}
    for f, (_, wanted) in objs.items():
        for s in wanted:
            g = owner.get(s)
            if g and g != f:
                edges.setdefault(f, set()).add(g)
                names.setdefault((f, g), set()).add(s)
    found = circles(edges, objs.keys())
    for comp in found:
        print("check-calls: %s: a call circle of %d files: %s" % (top, len(comp), ", ".join(comp)))
        for f in comp:
            for g in sorted(edges.get(f, ())):
                if g in comp:
                    print("  %s -> %s: %s" % (f, g, ", ".join(sorted(names[(f, g)]))))
    up, unknown = [], []
    if layers is not None:
        unknown = sorted(f for f in layers if f not in objs)
        for f in unknown:
            print("check-calls: %s: --layers names %s, which is no object named" % (top, f))
        below = (1 << 30, "below every layer")
        for (f, g), syms in sorted(names.items()):
            lf, lg = layers.get(f, below), layers.get(g, below)
            if lg[0] < lf[0]:
                up.append((f, g))
                print("check-calls: %s: %s (layer: %s) calls %s (layer: %s), above it: %s"
                      % (top, f, lf[1], g, lg[1], ", ".join(sorted(syms))))
    if found or up or unknown:
        return 1
    print("check-calls: %s: %d files, no call circle%s" % (
        top, len(objs), "" if layers is None else ", no call up through the layers"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
