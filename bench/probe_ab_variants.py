#!/usr/bin/env python3
"""probe_ab_variants — the PTX that bench/probe_ab times: the threadhist
block probe of bench/probe_ab_kernels.cu taken apart one piece at a time
(issue 40: what of the probe costs a short barrier kernel).

  probe_ab_variants.py GPUEXT TOOLDIR KERNELS.ptx OUTDIR

Writes OUTDIR/nat.ptx (the kernels as nvcc made them) and:
  th_exit     threadhist as the shim places it (exits: the kernels have barriers)
  th_entry    at the kernel's entry (GX_PTX_BLOCK_SITE=entry)
  th_lw       threadhist_lw (the block's last warp counts)
  th_none     the site with a warp test no warp passes (the uniform test alone)
  th_noreds   no counter updates (ptxas drops the lookup too: election and tests)
  th_1red     one counter update instead of three
  th_st       plain stores instead of reductions (wrong counts: what the atomic costs)
  th_w1       warp 1 counts instead of warp 0 (thread 0 loads the stencil's halo)
  th_bar0     the site moved before the kernel's first barrier, warp 0
  th_bar1     the same, warp 1 (a warp that waits at the barrier anyway)
  th_w1bar    what the rewriter makes of that: threadhist_w1 with
              GX_PTX_BLOCK_SITE=barrier (ptx-rewrite/block_barrier.c)
  th_hoist    th_exit with the warp index set once at the kernel's start
              (GX_PTX_HOIST_WARP=1): no %tid/%ntid reads at the exits
  th_none_hoist  the same with a warp test no warp passes (th_none's
              counterpart: what the hoisted test alone costs)
  th_dead     th_exit with its three reductions predicated on %smid ==
              4095 (never true, unknown to ptxas): the same code, the same
              leader path, no memory operation. Near th_exit: the exit
              path's instructions are the cost; near th_none: the writes
  th_hoistc   th_hoist with each site's constant-bank loads of __gx_devrt
              (the counters' address, the shard count) made once at the
              kernel's start into registers. GPU run 115: ptxas sinks them
              back to their use (a constant load is cheaper to repeat than
              a register to keep), so the exit path keeps its LDC: no gain
  th_addr     th_hoist with the counters' whole address (base + (SM x 64
              + warp slot) mod shards x 24) made at the kernel's start from
              the start-of-function %smid / %warpid registers, the site's
              shard arithmetic, bounds test and null test replaced by that
              register: a value ptxas cannot recompute (the reads are
              volatile), so the exit path keeps only the election, the
              lane-0 test and the reductions. GPU runs 116-117: +13.7 and
              +12.9 % (th_exit +15.8, +14.7): no gain
  th_uni_exit th_exit without the election's branch: the whole of warp 0
              runs the site's path and leaves together, the reductions
              predicated on the elected lane. GPU run 117: +17.4 % against
              th_exit's +14.7 %: the warp splitting at its exit is not the
              cost
  th_tailN    th_none (no warp passes the site's test) with warp 0 alone
              running a dependent chain of N multiply-adds on %smid before
              it leaves (N = 8, 16, 32; th_tail32x4: four chains of 8
              interleaved): what one instruction on warp 0's last cycles
              costs a block (ncu, run 117: 13 warps per scheduler, one
              instruction issued per warp every ~30 cycles)
  th_t0       th_exit with the warp test and the election replaced by one
              per-thread test, thread 0 of the block (%tid.x|y|z == 0): the
              other lanes and warps leave on it, thread 0 runs the handler
              as before (about ten fewer instructions on warp 0's tail)
  th_t0r      what the rewriter makes of th_t0 (GX_PTX_BLOCK_T0=1; thread 0's
              words as immediates, so the body's own tests fold)
  th_min      the least a thread-0 block counter can be: thread 0 adds 1,
              warps and threads to its SM's first warp slot (%smid x 64,
              no fold, no bounds or null test) with three reductions; the
              site as a whole replaced (the same counts summed per SM)
  th_pentry   th_min's counter at each kernel's start (exit sites dropped),
              every instruction predicated on thread 0 instead of a branch:
              one basic block with the kernel's first instructions, so ptxas
              can put the counter in the shadow of the kernel's first loads
  th_bentry   the same behind a branch (thread 0 jumps in, the rest skip)
  th_t0e      the rewriter's thread-0 gate at the entry site
              (GX_PTX_BLOCK_T0=1 GX_PTX_BLOCK_SITE=entry)
  th_pexit    th_min with the predicates instead of the branch, at the exits
  krs_exit    kernelretsnoop (its record table: seven plain stores at
              warp 0's exit of each recording block)
  krs_pentry  krs_exit with the sample decision made once at the kernel's
              start (branch-free, a predicate) and the exit sites testing it
  krs_dead    krs_exit with the seven stores under the same dead predicate
  krs_hoistc  krs_exit with GX_PTX_HOIST_WARP=1 and its constant-bank loads
              made at the kernel's start (th_hoistc's edit)
Each edit is checked to have happened: a variant equal to th_exit would
measure nothing."""
import os
import re
import subprocess
import sys

WARP_TEST = re.compile(r"(setp\.eq\.s32\t%__gx_h_p1, %__gx_h_r\d+, )0;")
RED = re.compile(r'^\t*red\.global\.add\.u64\t\[[^]]+\], [^;]+;\n', re.M)
# one inlined site: from its scope's opening brace to its end label
SITE = re.compile(r'\t\{\n\t\t\.reg \.pred %__gx_q;\n.*?\$__gx_Lh\d+:\n\t\}\n', re.S)


def rewrite(gx, policy, src, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([gx, 'ptx', 'rewrite', '--policy', policy, src, '-o', '-'],
                          check=True, capture_output=True, text=True, env=e).stdout


def edit(name, text, fn):
    out = fn(text)
    if out == text:
        sys.exit('probe_ab_variants: %s: the edit changed nothing' % name)
    return out


def one_red(t):
    # keep the first reduction of each site (blocks), drop warps and threads
    def site(m):
        reds = list(RED.finditer(m.group(0)))
        s = m.group(0)
        for r in reversed(reds[1:]):
            s = s[:r.start()] + s[r.end():]
        return s
    return SITE.sub(site, t)


CONST_LD = re.compile(r'^\t+ld\.const\.(u64|u32|u8)\t(%[\w]+), \[__gx_devrt\+(\d+)\];\n', re.M)
WIDTH = {'u64': 'b64', 'u32': 'b32', 'u8': 'b16'}


def hoist_const(t):
    """In every kernel, each site's ld.const of __gx_devrt+K becomes a mov
    from a register loaded once right after the kernel's opening brace."""
    parts = re.split(r'(?=^\.visible \.entry )', t, flags=re.M)
    out = []
    for p in parts:
        if not p.startswith('.visible .entry'):
            out.append(p)
            continue
        b = p.index('\n{\n') + 3
        head, body = p[:b], p[b:]
        loads = {}

        def sub(m):
            ty, reg, k = m.groups()
            name = '%%__gx_c%s_%s' % (ty, k)
            loads[name] = (ty, k)
            return '\t\tmov.%s\t%s, %s;\n' % (WIDTH[ty], reg, name)
        # only inside sites: the policy functions keep theirs
        body = SITE.sub(lambda m: CONST_LD.sub(sub, m.group(0)), body)
        pro = ''.join('\t.reg .%s %s;\n\tld.const.%s\t%s, [__gx_devrt+%s];\n' % (WIDTH[ty], n, ty, n, k)
                      for n, (ty, k) in sorted(loads.items()))
        out.append(head + pro + body)
    return ''.join(out)


# threadhist's counter address at a site (th_hoist's form): the base from
# __gx_devrt, the shard scaled by the value stride, the bounds and null tests
ADDR_CHAIN = re.compile(
    r'\t\tld\.const\.u64\t%__gx_h_rd\d+, \[__gx_devrt\+104\];\n'
    r'\t\tcvt\.u64\.u32\t%__gx_h_rd\d+, %__gx_h_r\d+;\n'
    r'\t\tmul\.lo\.s64\t%__gx_h_rd\d+, %__gx_h_rd\d+, 24;\n'
    r'\t\tadd\.s64\t%__gx_h_rd\d+, %__gx_h_rd\d+, %__gx_h_rd\d+;\n'
    r'\t\tmov\.u64\t(%__gx_h_rd\d+), %__gx_h_rd\d+;\n'
    r'\t\tsetp\.le\.u32\t(%__gx_h_p\d+), %__gx_h_r\d+, %__gx_h_r\d+;\n'
    r'\t\tsetp\.eq\.s64\t(%__gx_h_p\d+), %__gx_h_rd\d+, 0;\n')
START_SM = '\tmov.u32\t%__gx_sm, %smid;\n'
START_ADDR = ('\t.reg .b32 %__gx_ps;\n\t.reg .b32 %__gx_pn;\n\t.reg .b64 %__gx_pa;\n'
              '\tld.const.u32\t%__gx_pn, [__gx_devrt+92];\n'
              '\tshl.b32\t%__gx_ps, %__gx_sm, 6;\n\tadd.u32\t%__gx_ps, %__gx_ps, %__gx_hw;\n'
              '\trem.u32\t%__gx_ps, %__gx_ps, %__gx_pn;\n'
              '\tld.const.u64\t%__gx_pa, [__gx_devrt+104];\n'
              '\tmad.wide.u32\t%__gx_pa, %__gx_ps, 24, %__gx_pa;\n')


def start_addr(t):
    """th_addr's edit of th_hoist (kernels whose sites read the start
    registers %__gx_sm / %__gx_hw)."""
    parts = re.split(r'(?=^\.visible \.entry )', t, flags=re.M)
    out = []
    for p in parts:
        if p.startswith('.visible .entry') and START_SM in p and ADDR_CHAIN.search(p):
            p = p.replace(START_SM, START_SM + START_ADDR, 1)
            p = ADDR_CHAIN.sub(lambda m: '\t\tmov.u64\t%s, %%__gx_pa;\n\t\tsetp.ne.u32\t%s, 0, 0;\n'
                               '\t\tsetp.ne.u32\t%s, 0, 0;\n' % m.groups(), p)
        out.append(p)
    return ''.join(out)


# kernelretsnoop's record: seven stores to the table slot's address
KRS_ST = re.compile(r'^\t*st\.u64\t\[%__gx_h_rd\d+(\+\d+)?\], [^;]+;\n', re.M)


ELECT_BRA = re.compile(r'^\t\t@!%__gx_q bra\t\$__gx_Lh\d+;\n', re.M)


def uniform_leader(t):
    """Each site's leader branch dropped and its reductions predicated on
    the elected lane: the warp goes through the path together."""
    def site(m):
        s = ELECT_BRA.sub('', m.group(0))
        return RED.sub(lambda r: r.group(0).replace('red.global', '@%__gx_q red.global', 1), s)
    return SITE.sub(site, t)


WARP_TEST_REG = re.compile(r'^(\t\tsetp\.eq\.s32\t%__gx_h_p1, (%__gx_h_r\d+), 99;\n)', re.M)


def tail(n, chains=1):
    """Before each site's (never passing) warp test of th_none: warp 0
    runs `chains` interleaved dependent chains of n / chains mad.lo, then a
    trap under a predicate that is never true keeps them."""
    seq = [0]

    def one(m):
        seq[0] += 1
        lab = '$__gx_tail%d' % seq[0]
        regs = ['%%__gx_tv%d' % c for c in range(chains)]
        out = ['\t\t{\n\t\t.reg .pred %__gx_tp;\n']
        out += ['\t\t.reg .b32 %s;\n' % r for r in regs]
        out.append('\t\tsetp.ne.u32\t%%__gx_tp, %s, 0;\n\t\t@%%__gx_tp bra.uni\t%s;\n' % (m.group(2), lab))
        out += ['\t\tmov.u32\t%s, %%smid;\n' % r for r in regs]
        for i in range(n // chains):
            for c, r in enumerate(regs):
                out.append('\t\tmad.lo.u32\t%s, %s, %s, %d;\n' % (r, r, r, 7 + c))
        for r in regs[1:]:
            out.append('\t\txor.b32\t%s, %s, %s;\n' % (regs[0], regs[0], r))
        out.append('\t\tsetp.eq.u32\t%%__gx_tp, %s, 12345;\n\t\t@%%__gx_tp trap;\n%s:\n\t\t}\n' % (regs[0], lab))
        return ''.join(out) + m.group(1)
    return lambda t: WARP_TEST_REG.sub(one, t)


ELECT_SEQ = re.compile(r'^\t\t@!%__gx_h_p1 bra\.uni\t\$__gx_L[oh]\d+;\n'
                       r'\t\tactivemask\.b32\t%__gx_m;\n'
                       r'\t\telect\.sync\t%__gx_l\|%__gx_q, %__gx_m;\n', re.M)
TID0 = ('\t\tactivemask.b32\t%__gx_m;\n'
        '\t\tmov.u32\t%__gx_l, %tid.x;\n\t\tmov.u32\t%__gx_t, %tid.y;\n\t\tor.b32\t%__gx_l, %__gx_l, %__gx_t;\n'
        '\t\tmov.u32\t%__gx_t, %tid.z;\n\t\tor.b32\t%__gx_l, %__gx_l, %__gx_t;\n'
        '\t\tsetp.eq.u32\t%__gx_q, %__gx_l, 0;\n')
MIN_SITE = ('\t{{\n\t\t.reg .pred %__gx_q;\n\t\t.reg .b32 %__gx_l;\n\t\t.reg .b32 %__gx_t;\n'
            '\t\t.reg .b64 %__gx_a;\n\t\t.reg .b64 %__gx_v;\n'
            '\t\tmov.u32\t%__gx_l, %tid.x;\n\t\tmov.u32\t%__gx_t, %tid.y;\n\t\tor.b32\t%__gx_l, %__gx_l, %__gx_t;\n'
            '\t\tmov.u32\t%__gx_t, %tid.z;\n\t\tor.b32\t%__gx_l, %__gx_l, %__gx_t;\n'
            '\t\tsetp.ne.u32\t%__gx_q, %__gx_l, 0;\n\t\t@%__gx_q bra\t$__gx_LhM{n};\n'
            '\t\tmov.u32\t%__gx_l, %smid;\n\t\tld.const.u64\t%__gx_a, [__gx_devrt+104];\n'
            '\t\tmad.wide.u32\t%__gx_a, %__gx_l, 1536, %__gx_a;\n'
            '\t\tred.global.add.u64\t[%__gx_a], 1;\n'
            '\t\tmov.u32\t%__gx_l, %ntid.x;\n\t\tmov.u32\t%__gx_t, %ntid.y;\n\t\tmul.lo.u32\t%__gx_l, %__gx_l, %__gx_t;\n'
            '\t\tmov.u32\t%__gx_t, %ntid.z;\n\t\tmul.lo.u32\t%__gx_l, %__gx_l, %__gx_t;\n'
            '\t\tcvt.u64.u32\t%__gx_v, %__gx_l;\n\t\tred.global.add.u64\t[%__gx_a+16], %__gx_v;\n'
            '\t\tadd.u32\t%__gx_l, %__gx_l, 31;\n\t\tshr.u32\t%__gx_l, %__gx_l, 5;\n'
            '\t\tcvt.u64.u32\t%__gx_v, %__gx_l;\n\t\tred.global.add.u64\t[%__gx_a+8], %__gx_v;\n'
            '$__gx_LhM{n}:\n\t}}\n')


# one whole site (SITE can run on into the next one where a site ends at
# its OUT label: an entry site's; those are left as they are)
ONE_SITE = re.compile(r'\t\{\n\t\t\.reg \.pred %__gx_q;\n(?:(?!\n\t\}\n).)*?\$__gx_Lh\d+:\n\t\}\n', re.S)


def min_site(t):
    n = [0]

    def one(m):
        n[0] += 1
        return MIN_SITE.format(n=n[0])
    return ONE_SITE.sub(one, t)


# th_min's counter without a branch: every instruction under thread 0's
# predicate, so that the block's code and the counter share one basic block
# and ptxas may schedule the counter into the kernel's own stalls
PRED_MIN = ('\t{\n\t\t.reg .pred %__gx_pq;\n\t\t.reg .b32 %__gx_pl;\n\t\t.reg .b32 %__gx_pt;\n'
            '\t\t.reg .b64 %__gx_pa;\n\t\t.reg .b64 %__gx_pv;\n'
            '\t\tmov.u32\t%__gx_pl, %tid.x;\n\t\tmov.u32\t%__gx_pt, %tid.y;\n\t\tor.b32\t%__gx_pl, %__gx_pl, %__gx_pt;\n'
            '\t\tmov.u32\t%__gx_pt, %tid.z;\n\t\tor.b32\t%__gx_pl, %__gx_pl, %__gx_pt;\n'
            '\t\tsetp.eq.u32\t%__gx_pq, %__gx_pl, 0;\n'
            '\t\tmov.u32\t%__gx_pl, %smid;\n\t\tld.const.u64\t%__gx_pa, [__gx_devrt+104];\n'
            '\t\tmad.wide.u32\t%__gx_pa, %__gx_pl, 1536, %__gx_pa;\n'
            '\t\t@%__gx_pq red.global.add.u64\t[%__gx_pa], 1;\n'
            '\t\tmov.u32\t%__gx_pl, %ntid.x;\n\t\tmov.u32\t%__gx_pt, %ntid.y;\n\t\tmul.lo.u32\t%__gx_pl, %__gx_pl, %__gx_pt;\n'
            '\t\tmov.u32\t%__gx_pt, %ntid.z;\n\t\tmul.lo.u32\t%__gx_pl, %__gx_pl, %__gx_pt;\n'
            '\t\tcvt.u64.u32\t%__gx_pv, %__gx_pl;\n\t\t@%__gx_pq red.global.add.u64\t[%__gx_pa+16], %__gx_pv;\n'
            '\t\tadd.u32\t%__gx_pl, %__gx_pl, 31;\n\t\tshr.u32\t%__gx_pl, %__gx_pl, 5;\n'
            '\t\tcvt.u64.u32\t%__gx_pv, %__gx_pl;\n\t\t@%__gx_pq red.global.add.u64\t[%__gx_pa+8], %__gx_pv;\n'
            '\t}\n')
# the same with a branch around it (th_min's shape, at the entry)
BR_MIN = PRED_MIN.replace('\t\tsetp.eq.u32\t%__gx_pq, %__gx_pl, 0;\n',
                          '\t\tsetp.ne.u32\t%__gx_pq, %__gx_pl, 0;\n\t\t@%__gx_pq bra\t$__gx_LpE;\n'
                          ).replace('@%__gx_pq red', 'red').replace('\t}\n', '$__gx_LpE:\n\t}\n')
ENTRY_BODY = re.compile(r'(^\.visible \.entry [^\n]*\n(?:\t[^\n]*\n)*?\)\n\{\n(?:\t\.(?:reg|shared|local)[^\n]*\n)*)', re.M)


def at_entry(code):
    """Each kernel's exit sites dropped, `code` put at the start of its body
    (after the declarations; a label per kernel where the code has one)."""
    seq = [0]

    def one(m):
        seq[0] += 1
        return m.group(1) + code.replace('$__gx_LpE', '$__gx_LpE%d' % seq[0])
    return lambda t: ENTRY_BODY.sub(one, ONE_SITE.sub('', t))


def pred_exit(t):
    """Each exit site replaced by PRED_MIN (no branch at the exit)."""
    return ONE_SITE.sub(lambda m: PRED_MIN, t)


# kernelretsnoop's sample decision (warp 0 of a block whose linear index is
# a multiple of the sample's stride: tools_common.h) made once at the
# kernel's start, branch-free, into a predicate the exit sites test
KRS_ENTRY = ('\t{\n\t\t.reg .pred %__gx_kp;\n\t\t.reg .b32 %__gx_ka;\n\t\t.reg .b32 %__gx_kb;\n'
             '\t\t.reg .b64 %__gx_ki;\n\t\t.reg .b64 %__gx_kn;\n\t\t.reg .b64 %__gx_kt;\n'
             '\t\tmov.u32\t%__gx_ka, %tid.z;\n\t\tmov.u32\t%__gx_kb, %ntid.y;\n'
             '\t\tmov.u32\t%__gx_kc, %tid.y;\n\t\tmad.lo.u32\t%__gx_ka, %__gx_ka, %__gx_kb, %__gx_kc;\n'
             '\t\tmov.u32\t%__gx_kb, %ntid.x;\n\t\tmov.u32\t%__gx_kc, %tid.x;\n'
             '\t\tmad.lo.u32\t%__gx_ka, %__gx_ka, %__gx_kb, %__gx_kc;\n'
             '\t\tsetp.lt.u32\t%__gx_kp, %__gx_ka, 32;\n'
             '\t\tmov.u32\t%__gx_ka, %ctaid.z;\n\t\tmov.u32\t%__gx_kb, %nctaid.y;\n'
             '\t\tmul.wide.u32\t%__gx_ki, %__gx_ka, %__gx_kb;\n'
             '\t\tmov.u32\t%__gx_ka, %ctaid.y;\n\t\tcvt.u64.u32\t%__gx_kt, %__gx_ka;\n'
             '\t\tadd.s64\t%__gx_ki, %__gx_ki, %__gx_kt;\n'
             '\t\tmov.u32\t%__gx_ka, %nctaid.x;\n\t\tcvt.u64.u32\t%__gx_kt, %__gx_ka;\n'
             '\t\tmul.lo.s64\t%__gx_ki, %__gx_ki, %__gx_kt;\n'
             '\t\tmul.wide.u32\t%__gx_kn, %__gx_ka, %__gx_kb;\n'
             '\t\tmov.u32\t%__gx_ka, %ctaid.x;\n\t\tcvt.u64.u32\t%__gx_kt, %__gx_ka;\n'
             '\t\tadd.s64\t%__gx_ki, %__gx_ki, %__gx_kt;\n'
             '\t\tmov.u32\t%__gx_ka, %nctaid.z;\n\t\tcvt.u64.u32\t%__gx_kt, %__gx_ka;\n'
             '\t\tmul.lo.s64\t%__gx_kn, %__gx_kn, %__gx_kt;\n'
             '\t\tadd.s64\t%__gx_kn, %__gx_kn, -1;\n\t\tshr.u64\t%__gx_kn, %__gx_kn, 8;\n'
             '\t\tnot.b64\t%__gx_kt, %__gx_ki;\n\t\tadd.s64\t%__gx_ki, %__gx_ki, -1;\n'
             '\t\tand.b64\t%__gx_ki, %__gx_ki, %__gx_kt;\n'
             '\t\tsetp.le.and.u64\t%__gx_ks, %__gx_kn, %__gx_ki, %__gx_kp;\n'
             '\t}\n')
KRS_PRE = re.compile(r'(\t\{\n(?:\t\t\.reg[^\n]*\n)*)((?:(?!\tactivemask)[^\n]*\n)*?)(\t\tactivemask\.b32)')
KRS_KEEP = re.compile(r'^\t\tmov\.u32\t%__gx_w\d+, %[a-z.]+;\n|^\t\t(?:mad\.lo\.u32\t%__gx_t|shr\.u32\t%__gx_w25)[^\n]*\n', re.M)


def krs_entry(t):
    """krs_exit with the sample test at each kernel's start (KRS_ENTRY, a
    predicate) and each exit site testing that predicate alone before its
    election (the site's context words still set after the test)."""
    def site(m):
        lab = re.search(r'bra\.uni\t(\$__gx_Lh\d+);', m.group(2)).group(1)
        keep = ''.join(k.group(0) for k in KRS_KEEP.finditer(m.group(2)))
        return m.group(1) + '\t\t@!%%__gx_ks bra.uni\t%s;\n' % lab + keep + m.group(3)
    t = KRS_PRE.sub(site, t)
    decl = '\t.reg .pred %__gx_ks;\n\t.reg .b32 %__gx_kc;\n'

    def entry(m):
        return m.group(1) + decl + KRS_ENTRY
    return ENTRY_BODY.sub(entry, t)


def dead_ops(ops, op):
    """Every `op` (a regex of whole lines) of every site under a predicate
    that is never true but that ptxas cannot fold (%smid == 4095), set
    after the election (a SITE match may span several sites: each gets its
    own)."""
    def site(m):
        s = m.group(0)
        s = s.replace('\t\t.reg .pred %__gx_q;\n',
                      '\t\t.reg .pred %__gx_q;\n\t\t.reg .pred %__gx_dead;\n\t\t.reg .b32 %__gx_dsm;\n')
        s = re.sub(r'(\t\telect\.sync\t[^\n]*\n)',
                   r'\1\t\tmov.u32\t%__gx_dsm, %smid;\n\t\tsetp.eq.u32\t%__gx_dead, %__gx_dsm, 4095;\n', s)
        return ops.sub(lambda r: r.group(0).replace(op, '@%__gx_dead ' + op, 1), s)
    return lambda t: SITE.sub(site, t)


def to_barrier(warp):
    """Each kernel's first site moved before its first bar.sync (the
    kernels here have one straight-line first barrier), the others dropped;
    the site then counts at the barrier, once per block."""
    def fn(t):
        parts = re.split(r'(?=^\.visible \.entry )', t, flags=re.M)
        out = []
        for p in parts:
            sites = list(SITE.finditer(p))
            if not p.startswith('.visible .entry') or not sites:
                out.append(p)
                continue
            site = sites[0].group(0)
            body = SITE.sub('', p)
            i = body.find('\tbar.sync\t0;')
            if i < 0:  # tool_bench's kernels without a barrier: as they were
                out.append(p)
                continue
            if warp:
                site = WARP_TEST.sub(r'\g<1>%d;' % warp, site)
            out.append(body[:i] + site + body[i:])
        return ''.join(out)
    return fn


def main():
    gx, tools, src, outdir = sys.argv[1:5]
    os.makedirs(outdir, exist_ok=True)
    th = os.path.join(tools, 'threadhist.bpf.o')
    base = rewrite(gx, th, src)
    hoist = rewrite(gx, th, src, {'GX_PTX_HOIST_WARP': '1'})
    krs = rewrite(gx, os.path.join(tools, 'kernelretsnoop.bpf.o'), src)
    if '%__gx_wi' not in hoist:
        sys.exit('probe_ab_variants: GX_PTX_HOIST_WARP=1 hoisted nothing')
    v = {
        'nat': open(src).read(),
        'th_exit': base,
        'th_entry': rewrite(gx, th, src, {'GX_PTX_BLOCK_SITE': 'entry'}),
        'th_lw': rewrite(gx, os.path.join(tools, 'threadhist_lw.bpf.o'), src),
        'th_none': edit('th_none', base, lambda t: WARP_TEST.sub(r'\g<1>99;', t)),
        'th_tail8': edit('th_tail8', edit('th_none', base, lambda t: WARP_TEST.sub(r'\g<1>99;', t)), tail(8)),
        'th_tail16': edit('th_tail16', edit('th_none', base, lambda t: WARP_TEST.sub(r'\g<1>99;', t)), tail(16)),
        'th_tail32': edit('th_tail32', edit('th_none', base, lambda t: WARP_TEST.sub(r'\g<1>99;', t)), tail(32)),
        'th_tail32x4': edit('th_tail32x4', edit('th_none', base, lambda t: WARP_TEST.sub(r'\g<1>99;', t)),
                            tail(32, 4)),
        'th_noreds': edit('th_noreds', base, lambda t: RED.sub('', t)),
        'th_1red': edit('th_1red', base, one_red),
        'th_st': edit('th_st', base, lambda t: t.replace('red.global.add.u64', 'st.global.u64')),
        'th_w1': edit('th_w1', base, lambda t: WARP_TEST.sub(r'\g<1>1;', t)),
        'th_bar0': edit('th_bar0', base, to_barrier(0)),
        'th_bar1': edit('th_bar1', base, to_barrier(1)),
        'th_w1bar': rewrite(gx, os.path.join(tools, 'threadhist_w1.bpf.o'), src,
                            {'GX_PTX_BLOCK_SITE': 'barrier'}),
        'th_hoist': hoist,
        'th_none_hoist': edit('th_none_hoist', hoist, lambda t: WARP_TEST.sub(r'\g<1>99;', t)),
        'th_dead': edit('th_dead', base, dead_ops(RED, 'red.global')),
        'th_hoistc': edit('th_hoistc', hoist, hoist_const),
        'th_addr': edit('th_addr', hoist, start_addr),
        'th_uni_exit': edit('th_uni_exit', base, uniform_leader),
        'th_t0': edit('th_t0', base, lambda t: ELECT_SEQ.sub(TID0, t)),
        'th_t0r': rewrite(gx, th, src, {'GX_PTX_BLOCK_T0': '1'}),
        'th_min': edit('th_min', base, min_site),
        'th_pentry': edit('th_pentry', base, at_entry(PRED_MIN)),
        'th_bentry': edit('th_bentry', base, at_entry(BR_MIN)),
        'th_pexit': edit('th_pexit', base, pred_exit),
        'th_t0e': rewrite(gx, th, src, {'GX_PTX_BLOCK_T0': '1', 'GX_PTX_BLOCK_SITE': 'entry'}),
        'krs_exit': krs,

        'krs_pentry': edit('krs_pentry', krs, krs_entry),
        'krs_dead': edit('krs_dead', krs, dead_ops(KRS_ST, 'st.u64')),
        'krs_hoistc': edit('krs_hoistc', rewrite(gx, os.path.join(tools, 'kernelretsnoop.bpf.o'), src,
                                                 {'GX_PTX_HOIST_WARP': '1'}), hoist_const),
    }
    if 'elect.sync' in v['th_t0r']:
        sys.exit('probe_ab_variants: GX_PTX_BLOCK_T0=1 left an election')
    if 'before its first barrier' not in subprocess.run(
            [gx, 'ptx', 'rewrite', '--policy', os.path.join(tools, 'threadhist_w1.bpf.o'), src, '-o', '/dev/null'],
            capture_output=True, text=True, env=dict(os.environ, GX_PTX_BLOCK_SITE='barrier')).stderr:
        sys.exit('probe_ab_variants: GX_PTX_BLOCK_SITE=barrier placed no site before a barrier')
    for name, text in v.items():
        with open(os.path.join(outdir, name + '.ptx'), 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
