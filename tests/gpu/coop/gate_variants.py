#!/usr/bin/env python3
"""gate_variants.py — PTX variants of gridsync.cu's kernel for gate_ab.cu:
where memtrace's sample gate costs the cooperative sample its 2.2x.

    gate_variants.py NATIVE.ptx GATED.ptx OUTDIR

NATIVE.ptx: `nvcc --ptx` of gridsync.cu; GATED.ptx: the same rewritten by
`gpuext ptx rewrite --policy memtrace_gate.bpf.o --sample 1024` (uncapped).
Writes, each a PTX of the same kernel (the handler never runs: the variants
that call it pass a leader flag of 0, so its wrapper returns at once and no
runtime is needed):
  native          the application's kernel
  native_nounroll the same, its grid-stride loop marked "nounroll"
  gate            the rewriter's gate as it is (countdown, vote, call)
  gate_nocall     the gate with its calls removed (countdown, vote, branch)
  gate_novote     the gate without its vote (countdown, a divergent branch,
                  the call)
  deferred        the loop keeps only a countdown and a predicated save of
                  the sampled address; the call is made once after the loop
  deferred_br     the same, the save and a geometric new gap behind a
                  divergent branch
  serial_gate     the native kernel with the voted countdown (no call) at
                  each load of block 0's sum over the partials only (nvcc
                  unrolls that loop 4 ways: one thread, four loads in flight)
  serial_pred     the same with the countdown predicated (no vote, no branch)
A research tool: text edits that hold for this one kernel's PTX, no more.
"""
import re
import sys

native_path, gated_path, out = sys.argv[1:4]
native = open(native_path).read()
gated = open(gated_path).read()


def write(name, text):
    with open(f"{out}/{name}.ptx", "w") as f:
        f.write(text)


write("native", native)

LOOP = "$L__BB0_2:\n"
assert native.count(LOOP) == 1
write("native_nounroll", native.replace(LOOP, LOOP + '\t.pragma "nounroll";\n'))

# The handler's wrapper returns at once when its leader flag is 0.
LEADER = "selp.b32\t%__gx_t, 1, 0, %__gx_q;"
assert LEADER in gated
gate = gated.replace(LEADER, "mov.b32\t%__gx_t, 0;")
write("gate", gate)
write("gate_nocall", re.sub(r"\n\t*call\t\(__gx_cr\), __gx_hw2,[^\n]*", "", gate))
# gate_novote: the call kept, the vote gone (each lane's own countdown, a
# divergent branch): is the vote or the call what the loop pays for?
write("gate_novote", re.sub(r"\n\t*vote\.sync\.any\.pred\t%__gx_q, %__gx_q, %__gx_m;", "",
                            gate).replace("@!%__gx_q bra.uni\t$__gx_Lo", "@!%__gx_q bra\t$__gx_Lo"))

# deferred: the native kernel with the gate's countdown in the loop body as
# predicated instructions only (no vote, no branch, no call) and one flush
# after the loop: vote, elect, a call to the (skipped) handler.
m = re.search(r"\{\n(\t\.reg \.b32 %__gx_cs1024;.*?add\.u32\t%__gx_cn1024, %__gx_cn1024, 1;\n)", gated, re.S)
prologue = m.group(1)
hw = re.search(r"\n(\.func \(\.param \.b32 __gx_hw2_r\) __gx_hw2\(.*?\n\}\n)", gated, re.S).group(1)
d = native
# the wrapper and the policy function it calls, before the kernel
policy = re.search(r"\n(\.func \(\.param \.b32 func_retval0\) __gx_p_gxp_memtrace\(.*?\n\}\n)", gated, re.S).group(1)
globs = re.findall(r"\n(\.(?:visible|global|const|extern)[^\n]*__gx_[^\n]*;)", gated)
head_end = d.index(".visible .entry")
d = d[:head_end] + "\n".join(globs) + "\n" + policy + hw + d[head_end:]
body_start = d.index("{", d.index(".visible .entry")) + 2
extra = prologue + "\t.reg .b64 %gx_sa;\n\t.reg .b32 %gx_sp;\n\t.reg .pred %gx_q;\n\tmov.u32\t%gx_sp, 0;\n\tmov.u64\t%gx_sa, 0;\n"
d = d[:body_start] + extra + d[body_start:]
LD = "\tld.global.s32 \t%rd31, [%rd30];\n"
assert d.count(LD) == 1
save = ("\tsub.u32\t%__gx_cn1024, %__gx_cn1024, 1;\n"
        "\tsetp.eq.u32\t%gx_q, %__gx_cn1024, 0;\n"
        "\t@%gx_q mov.b64\t%gx_sa, %rd30;\n"
        "\t@%gx_q add.u32\t%gx_sp, %gx_sp, 1;\n"
        "\t@%gx_q mov.u32\t%__gx_cn1024, 1024;\n")
d = d.replace(LD, save + LD)
EXIT = "$L__BB0_3:\n"
flush = ("\t{\n\t.reg .pred %fq;\n\t.reg .b32 %fm;\n\t.reg .b32 %fl;\n\t.reg .b32 %fw<2>;\n"
         "\t.param .b32 __gx_cq;\n\t.param .b32 __gx_cw0;\n\t.param .b32 __gx_cw1;\n\t.param .b32 __gx_cw4;\n"
         "\t.param .b32 __gx_cw5;\n\t.param .b32 __gx_cw10;\n\t.param .b32 __gx_ci;\n\t.param .b32 __gx_cr;\n"
         "\tsetp.ne.u32\t%fq, %gx_sp, 0;\n\tactivemask.b32\t%fm;\n\tvote.sync.any.pred\t%fq, %fq, %fm;\n"
         "\t@!%fq bra.uni\t$gx_Lf;\n"
         "\tmov.b64\t{%fw0, %fw1}, %gx_sa;\n\tst.param.b32\t[__gx_cq], 0;\n"
         "\tst.param.b32\t[__gx_cw0], 1;\n\tst.param.b32\t[__gx_cw1], 2;\n"
         "\tst.param.b32\t[__gx_cw4], %fw0;\n\tst.param.b32\t[__gx_cw5], %fw1;\n"
         "\tst.param.b32\t[__gx_cw10], %gx_sp;\n\tst.param.b32\t[__gx_ci], 16842756;\n"
         "\tcall\t(__gx_cr), __gx_hw2, (__gx_cq, __gx_cw0, __gx_cw1, __gx_cw4, __gx_cw5, __gx_cw10, __gx_ci);\n"
         "\tbar.warp.sync\t%fm;\n$gx_Lf:\n\t}\n")
entry = d.index(".visible .entry")
assert d[entry:].count(EXIT) == 1
d = d[:entry] + d[entry:].replace(EXIT, EXIT + flush)
write("deferred", d)

# deferred_br: the same, but the countdown's reset draws the next interval
# as the gate does (geometric), behind a branch taken on the sampled trip.
hash_ = re.search(r"\t\tmov\.u32\t%__gx_t, %clock;\n(.*?\t\tadd\.u32\t%__gx_cn1024, %__gx_cn1024, 1;\n)", gated, re.S)
redraw = "\t\tmov.u32\t%__gx_t, %clock;\n" + hash_.group(1)
save_br = ("\tsub.u32\t%__gx_cn1024, %__gx_cn1024, 1;\n"
           "\tsetp.ne.u32\t%gx_q, %__gx_cn1024, 0;\n"
           "\t@%gx_q bra\t$gx_Ls;\n\t{\n\t.reg .b32 %__gx_t;\n\t.reg .b32 %__gx_l;\n"
           "\tmov.b64\t%gx_sa, %rd30;\n\tadd.u32\t%gx_sp, %gx_sp, 1;\n" + redraw + "\t}\n$gx_Ls:\n")
e = d.index(".visible .entry")
d = d[:e] + d[e:].replace(save, save_br)
write("deferred_br", d)

# serial_gate / serial_pred: is block 0's serial sum the loop that pays?
# (the session-34 reading of runs 126 and 129: a branch between the four
# unrolled loads keeps ptxas from issuing them together)
def serial(kind):
    d = native
    body_start = d.index("{", d.index(".visible .entry")) + 2
    extra = prologue + "\t.reg .pred %gx_q;\n\t.reg .b32 %gx_m;\n\t.reg .b32 %gx_sp;\n\tmov.u32\t%gx_sp, 0;\n"
    d = d[:body_start] + extra + d[body_start:]
    # the sum's four unrolled loads and its remainder loop's (the last
    # 64-bit load, of *out, comes after the second grid sync)
    loads = re.findall(r"\tld\.global\.u64 \t%rd\d+, \[%rd\d+(?:\+\d+)?\];\n", d)[:5]
    assert len(loads) == 5 and len(set(loads)) == 5, loads
    for i, ld in enumerate(loads):
        if kind == "gate":
            g = ("\tsub.u32\t%__gx_cn1024, %__gx_cn1024, 1;\n\tsetp.eq.u32\t%gx_q, %__gx_cn1024, 0;\n"
                 "\tactivemask.b32\t%gx_m;\n\tvote.sync.any.pred\t%gx_q, %gx_q, %gx_m;\n"
                 f"\t@!%gx_q bra.uni\t$gx_Ls{i};\n\tmov.u32\t%__gx_cn1024, 1024;\n"
                 "\tadd.u32\t%gx_sp, %gx_sp, 1;\n" f"$gx_Ls{i}:\n")
        else:
            g = ("\tsub.u32\t%__gx_cn1024, %__gx_cn1024, 1;\n\tsetp.eq.u32\t%gx_q, %__gx_cn1024, 0;\n"
                 "\t@%gx_q mov.u32\t%__gx_cn1024, 1024;\n\t@%gx_q add.u32\t%gx_sp, %gx_sp, 1;\n")
        d = d.replace(ld, g + ld, 1)
    return d


write("serial_gate", serial("gate"))
write("serial_pred", serial("pred"))
