#!/usr/bin/env python3
"""Synthetic tool logs for the formatter golden tests: what the shim would
write for a known run (layouts of tools/tools_common.h and include/gpuext/gx_toollog.h).
argv: dir tool [v2|hostonly]. v2: launch records of the tool log's second
revision (flags, stream) with GPU times, and two launches of a SASS-only
kernel; hostonly: v2 with no device record at all (nothing instrumented);
sampled: v2 with only the odd-numbered launches timed (the shim's sample);
cap256: kernelretsnoop's records as kernelretsnoop_c256 makes them (GX_KRS_CAP=256:
the cap's shift, 8, in nctaid[2]'s top byte; the big launch records every 1024th block);
lost / lostring: kernelretsnoop, 600 launches of which only the last 200 / the first
200 and the last left records; graph: kernelretsnoop records of launches the log does
not list (below)."""
import struct, sys, os

d, tool = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else ''
v2 = mode in ('v2', 'hostonly', 'sampled')
def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
    return h
def rec(t, body):
    n = 8 + len(body); pad = (-n) % 8
    return struct.pack('<II', t, n + pad) + body + b'\0' * pad
out = rec(1, struct.pack('<IIQ64s', 4242, 0, 1_000_000, tool.encode()))
# ctx 0: sm 90, 4 SMs, calibrated: globaltimer = host + 5000 ns
out += rec(2, struct.pack('<IIIIIIqQ', 0, 0, 90, 4, 1, 0, 5000, 700))
k1, k2, k3 = fnv('vadd'), fnv('_Z6reducePf'), fnv('cublas_gemm_sm90')
out += rec(3, struct.pack('<Q', k1) + b'vadd\0')
out += rec(3, struct.pack('<Q', k2) + b'_Z6reducePf\0')
if v2:
    out += rec(3, struct.pack('<Q', k3) + b'cublas_gemm_sm90\0')
if mode == 'graph':
    # two logged launches of vadd (ids 101, 103) and, between and after
    # them, kernel nodes of a graph the log does not list: reduce with ids
    # 102 and 104 (2 blocks each, block 1 of 104 lost), and a record of
    # vadd under id 104 too (damaged: not its own launch)
    for seq, host in ((1, 10_000), (2, 50_000)):
        out += rec(4, struct.pack('<QQII6I', host, k1, 0, seq, 1, 1, 1, 128, 1, 1))
    def krs1(kid, ts, b, g, lid):
        return rec(5, struct.pack('<II', 0, 0) + struct.pack('<QQ4I4IQ', kid, ts, b, 0, 0, b, g, 1, 1, 128, lid))
    out += krs1(k1, 20_000, 0, 1, 101) + krs1(k1, 60_000, 0, 1, 103)
    out += krs1(k2, 30_000, 0, 2, 102) + krs1(k2, 31_000, 1, 2, 102) + krs1(k2, 70_000, 0, 2, 104)
    out += krs1(k1, 71_000, 0, 1, 104)
    open(os.path.join(d, '4242-%s.events' % tool), 'wb').write(out)
    sys.exit(0)
if mode == 'ringburst':
    # tests/gpu/tools.sh's ring stress, in small: 2 launches of vadd (the
    # fills), then 67 of reduce; a full ring keeps the records of the first
    # 16 reduce launches, then of a few launches after each drain (the
    # drainer's memset is a grid the log does not list: one per drain)
    L = [k1, k1] + [k2] * 67
    kept = list(range(2, 18)) + [30, 31, 32] + [50, 51] + [66]
    extra = lambda pos: (pos > 25) + (pos > 45) + (pos > 62)
    for pos, k in enumerate(L):
        out += rec(4, struct.pack('<QQII6I', 10_000 + 1000 * pos, k, 0, pos + 1, 4, 1, 1, 128, 1, 1))
    for pos in kept:
        for b in range(4):
            out += rec(5, struct.pack('<II', 0, 0) + struct.pack('<QQ4I4IQ', L[pos], 20_000 + 1000 * pos + b, b, 0, 0,
                                                                  b, 4, 1, 1, 128, 1000 + pos + extra(pos)))
    open(os.path.join(d, '4242-%s.events' % tool), 'wb').write(out)
    sys.exit(0)
if mode in ('lost', 'lostring'):
    # 600 one-block launches, vadd and reduce by turns; launch ids 1000 +
    # place, one more after place 450 (a grid the log does not list);
    # records of the last 200 launches only (lost: what a record table
    # keeps under load) or of the first 200 and the last (lostring: what a
    # full ring keeps). The report must tie each record to its own launch.
    for pos in range(600):
        out += rec(4, struct.pack('<QQII6I', 10_000 + 1000 * pos, k1 if pos % 2 == 0 else k2, 0, pos + 1, 1, 1, 1, 128, 1, 1))
    kept = range(400, 600) if mode == 'lost' else list(range(200)) + [599]
    for pos in kept:
        lid = 1000 + pos + (pos > 450)
        out += rec(5, struct.pack('<II', 0, 0) + struct.pack('<QQ4I4IQ', k1 if pos % 2 == 0 else k2,
                                                              20_000 + 1000 * pos, 0, 0, 0, pos % 4, 1, 1, 8 << 24 | 1, 128, lid))
    open(os.path.join(d, '4242-%s.events' % tool), 'wb').write(out)
    sys.exit(0)
# launches: vadd 4x1x1 blocks at host 10_000 and 50_000; reduce 2 blocks at 30_000
# kernelretsnoop also: vadd with 131073 blocks at 70_000 (sampled 1 in 16: 8193 expected)
L = [(k1, 10_000, 4), (k2, 30_000, 2), (k1, 50_000, 4)] + ([(k1, 70_000, 131073)] if tool.startswith('kernelretsnoop') else [])
if v2:
    L += [(k3, 35_000, 64), (k3, 55_000, 64)]
for seq, (kid, host, g) in enumerate(L, 1):
    if not v2:
        out += rec(4, struct.pack('<QQII6I', host, kid, 0, seq, g, 1, 1, 128, 1, 1))
        continue
    # flags: instrumented (1) unless SASS only (or nothing is, in hostonly), timed (2); stream 0x70 + seq % 2
    instr = 0 if kid == k3 or mode == 'hostonly' else 1
    timed = 0 if mode == 'sampled' and seq % 2 == 0 else 2
    out += rec(4, struct.pack('<QQII6IIIQ', host, kid, 0, seq, g, 1, 1, 128, 1, 1, instr | timed, 0, 0x70 + seq % 2))
if v2:
    # GPU times: launch seq runs from host + 2000 for 1000 * seq ns (the
    # SASS-only ones 20 us each); written later, out of order, like the drains
    for seq, (kid, host, g) in reversed(list(enumerate(L, 1))):
        if mode == 'sampled' and seq % 2 == 0:
            continue
        out += rec(7, struct.pack('<IIQQ', 0, seq, host + 2000, 20_000 if kid == k3 else 1000 * seq))
    if mode == 'hostonly':
        open(os.path.join(d, '4242-%s.events' % tool), 'wb').write(out)
        sys.exit(0)
def ring(payload):
    return rec(5, struct.pack('<II', 0, 0) + payload)
# device launch ids (%gridid): vadd #1 = 101, reduce = 102, vadd #2 = 103
if tool.startswith('kernelretsnoop'):
    # The ring interleaves launches (concurrent streams): vadd #2's block 0
    # comes first; its launch id, not the order, says where it belongs.
    # Launch 1 of vadd: blocks 0..3 on SMs 0,1,0,2; block 2 exits twice (kept last).
    nz = 8 << 24 | 1 if mode == 'cap256' else 1
    def krs(kid, ts, b, sm, g, lid):
        return ring(struct.pack('<QQ4I4IQ', kid, ts, b, 0, 0, sm, g, 1, nz, 128, lid))
    out += krs(k1, 60_000, 0, 1, 4, 103)
    for b, sm, ts in [(0, 0, 20_000), (1, 1, 21_000), (2, 0, 22_000), (2, 0, 22_500), (3, 2, 24_000)]:
        out += krs(k1, ts, b, sm, 4, 101)
    for b, sm, ts in [(0, 3, 40_000), (1, 3, 41_000)]:
        out += krs(k2, ts, b, sm, 2, 102)
    for b, sm, ts in [(1, 1, 61_000), (2, 2, 62_000)]:  # block 3 lost
        out += krs(k1, ts, b, sm, 4, 103)
    # the 131073-block launch: blocks 0, 16 and 131072 of the 8193 sampled ones (every 16th)
    for b, sm, ts in [(0, 0, 80_000), (1024 if mode == 'cap256' else 16, 1, 81_000), (131072, 2, 90_000)]:
        out += krs(k1, ts, b, sm, 131073, 104)
    out += rec(6, struct.pack('<IIQ', 0, 0, 1))
elif tool == 'launchlate':
    # device start = host + 5000 (offset) + latency 7000, 12000, 3000 ns;
    # vadd #2's record first (its launch id places it)
    for kid, host, lat, g, lid in [(k1, 50_000, 3000, 4, 103), (k1, 10_000, 7000, 4, 101),
                                   (k2, 30_000, 12000, 2, 102)]:
        out += ring(struct.pack('<QQIIQ', kid, host + 5000 + lat, 1, g, lid))
elif tool == 'memtrace':
    for i, (op, sz, addr) in enumerate([(1, 4, 0x7f0000001000), (1, 4, 0x7f0000002000), (2, 4, 0x7f0000003000),
                                        (3, 8, 0x7f0000004000), (2, 16, 0x7f0000005000)]):
        out += ring(struct.pack('<QQQIIIIII', k1 if i < 3 else k2, addr, 100_000 + i * 1000, sz, op, 1, i % 4, 32, i))
open(os.path.join(d, '4242-%s.events' % tool), 'wb').write(out)
