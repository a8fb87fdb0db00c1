#!/usr/bin/env python3
"""test_cycles.py — ptx-rewrite/ reads one way: no file-level cycles.

Why: the folder is a library (parser, IR, emitter, and the helpers passes are
built from), the passes, and a driver (docs/DESIGN.md, "ptx-rewrite/"). Files
that call each other can only be understood together; this test keeps them
apart. Three graphs, each must be acyclic:

  includes  FILE -> HEADER for every `#include "ptx-rewrite/..."`;
  calls     OBJ -> OBJ when OBJ uses a symbol the other defines (`nm` on the
            objects of $BUILD/obj/ptx-rewrite: undefined vs defined);
  modules   both at once, a file and its header (x.c, x.h) as one node "x".

And the layering: no library file calls a pass (pass_*.c) or the driver
(passes.c), and no pass calls another pass.

Run from the repository root with BUILD set (make test does); prints
`ok - ...` / `not ok - ...: WHY` lines."""
import glob
import os
import re
import subprocess
import sys

SRC = "ptx-rewrite"
BUILD = os.environ.get("BUILD", "build")
NM = os.environ.get("NM", "nm")
failed = False


def check(ok, what, why=""):
    global failed
    print(f"ok - {what}" if ok else f"not ok - {what}: {why}")
    failed |= not ok


def cycle(graph):
    """A cycle of graph (node -> set of nodes) as a list, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if not state.get(d):
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n):
            c = visit(n)
            if c:
                return c
    return None


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


# ---- includes
inc = {}
for f in sorted(glob.glob(f"{SRC}/*.[ch]")):
    with open(f, encoding="utf-8") as fh:
        deps = set(re.findall(r'^\s*#\s*include\s+"ptx-rewrite/([^"]+)"', fh.read(), re.M))
    inc[os.path.basename(f)] = deps - {os.path.basename(f)}
c = cycle(inc)
check(c is None, f"includes: no cycle among {len(inc)} files", " -> ".join(c or []))

# ---- calls
srcs = sorted(stem(f) for f in glob.glob(f"{SRC}/*.c"))
objs = sorted(o for o in glob.glob(f"{BUILD}/obj/{SRC}/*.o") if stem(o) in srcs)  # not stale ones
check(sorted(stem(o) for o in objs) == srcs, f"calls: an object for each of the {len(srcs)} sources",
      f"objects {sorted(stem(o) for o in objs)} vs sources {srcs}")
defs, undef = {}, {}
for o in objs:
    out = subprocess.run([NM, o], capture_output=True, text=True, check=True).stdout
    d, u = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRCWV":
            d.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            u.add(p[1])
    defs[stem(o)], undef[stem(o)] = d, u
owner = {s: n for n, d in defs.items() for s in d}
calls = {n: {owner[s] for s in undef[n] if s in owner} - {n} for n in defs}
c = cycle(calls)
check(c is None and objs != [], f"calls: no cycle among {len(objs)} objects", " -> ".join(c or ["no objects"]))

# ---- files and their headers as one module
mods = {}
for f, deps in inc.items():
    mods.setdefault(stem(f), set()).update(stem(d) for d in deps)
for n, deps in calls.items():
    mods.setdefault(n, set()).update(deps)
for n in mods:
    mods[n].discard(n)
c = cycle(mods)
check(c is None, f"modules (file + header, includes and calls): no cycle among {len(mods)}",
      " -> ".join(c or []))

# ---- layering: library -> passes -> driver
passes = {n for n in calls if n.startswith("pass_")}
bad = sorted(f"{n} -> {d}" for n, deps in calls.items() if n not in passes | {"passes"}
             for d in deps if d in passes | {"passes"} and not (n == "rewrite" and d == "passes"))
check(not bad, "layering: library files call no pass and not the driver (rewrite.c: the driver only)",
      ", ".join(bad))
bad = sorted(f"{n} -> {d}" for n in passes for d in calls[n] if d in passes | {"passes"})
check(not bad, f"layering: the {len(passes)} passes call no other pass", ", ".join(bad))

sys.exit(1 if failed else 0)
