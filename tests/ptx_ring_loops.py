#!/usr/bin/env python3
"""ptx_ring_loops.py PTX — does a ring reservation's first try run outside
every loop? (devbpf/helpers/mapimpl_internal.h, gx_ring_reserve_n)

On the GPU ptxas puts a YIELD at a loop's head (session 25 took a yielding
leader for the cause of memtrace's 1 + 31 split; GPU run 97 refuted that,
the check stays as the reservation's contract), and a site's leader lane
that yields inside its handler lets the lanes waiting for it go on without
it (GPU runs 90 and 94). So in every function of PTX that reserves ring
space (an `atom...global.add.u64` on the ring's head), the first such
fetch-add and the first release store (the commit) must lie in no cycle of
the function's control-flow graph. Prints one line per function; exit 0 if
there was at least one such function and all passed, 1 otherwise."""
import re
import sys

FUNC = re.compile(r'^\s*(?:\.visible\s+|\.weak\s+)*\.(?:func|entry)\s*(?:\([^)]*\)\s*)?([\w$]+)')
LABEL = re.compile(r'^\s*([\w$]+):')
BRA = re.compile(r'^\s*(@!?%[\w$]+\s+)?bra(?:\.uni)?\s+([\w$]+)\s*;')
END = re.compile(r'^\s*(@!?%[\w$]+\s+)?(ret|exit|trap)\b')
FADD = re.compile(r'atom\.[\w.]*global\.add\.u64')
COMMIT = re.compile(r'st\.release\.')


def functions(lines):
    """(name, body lines) of every function with a body."""
    name, body, depth = None, [], 0
    for line in lines:
        m = FUNC.match(line)
        if m and depth == 0:
            name, body = m.group(1), []
            continue
        if name is None:
            continue
        depth += line.count('{') - line.count('}')
        body.append(line)
        if depth == 0 and '}' in line:
            yield name, body
            name = None


def blocks(body):
    """Basic blocks: list of (lines, successors by index)."""
    starts, labels = [0], {}
    for i, line in enumerate(body):
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = i
            starts.append(i)
        elif BRA.match(line) or END.match(line):
            starts.append(i + 1)
    starts = sorted(set(s for s in starts if s <= len(body)))
    index = {s: k for k, s in enumerate(starts)}
    out = []
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(body)
        lines = body[s:e]
        succ = []
        last = next((l for l in reversed(lines) if l.strip() and not l.strip().startswith('//')), '')
        b, t = BRA.match(last), END.match(last)
        if b:
            succ.append(index[labels[b.group(2)]])
            if b.group(1) and k + 1 < len(starts):
                succ.append(k + 1)
        elif t:
            if t.group(1) and k + 1 < len(starts):
                succ.append(k + 1)
        elif k + 1 < len(starts):
            succ.append(k + 1)
        out.append((lines, succ))
    return out


def cyclic(bl):
    """Indices of blocks in a cycle (Tarjan's strongly connected components)."""
    sys.setrecursionlimit(100000)
    idx, low, on, stack, res, n = {}, {}, set(), [], set(), [0]

    def visit(v):
        idx[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in bl[v][1]:
            if w not in idx:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in bl[v][1]:
                res.update(comp)

    for v in range(len(bl)):
        if v not in idx:
            visit(v)
    return res


def first(bl, pat):
    for k, (lines, _) in enumerate(bl):
        if any(pat.search(l) for l in lines):
            return k
    return None


def main():
    lines = open(sys.argv[1]).read().splitlines()
    seen, bad = 0, 0
    for name, body in functions(lines):
        bl = blocks(body)
        f = first(bl, FADD)
        if f is None:
            continue
        seen += 1
        c = first(bl, COMMIT)
        cyc = cyclic(bl)
        ok = f not in cyc and c is not None and c not in cyc
        bad += not ok
        print('%s: %s: first fetch-add %s, first commit %s' %
              (name, 'ok' if ok else 'IN A LOOP', 'in a loop' if f in cyc else 'outside loops',
               'none' if c is None else 'in a loop' if c in cyc else 'outside loops'))
    return 0 if seen and not bad else 1


if __name__ == '__main__':
    sys.exit(main())
