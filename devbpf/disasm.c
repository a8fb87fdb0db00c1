/* disasm.c — eBPF disassembly (bpftool/llvm-objdump syntax) and the
 * `gpuext bpf dump` listing: each instruction followed by what the verifier
 * knew before it ran, joined over every path that reached it — register
 * types, value ranges, and which values are lane-varying. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "devbpf/verifier_internal.h"
#include "common/gx_util.h"

static const char *alu_op[16] = { "+=", "-=", "*=", "/=", "|=", "&=", "<<=", ">>=",
				  "neg", "%=", "^=", "=", "s>>=", "end", "?", "?" };
static const char *jmp_op[16] = { "goto", "==", ">", ">=", "&", "!=", "s>", "s>=",
				  "call", "exit", "<", "<=", "s<", "s<=", "?", "?" };
static const char *sz_name(uint8_t sz)
{
	return sz == BPF_B ? "u8" : sz == BPF_H ? "u16" : sz == BPF_W ? "u32" : "u64";
}
static const char *ssz_name(uint8_t sz)
{
	return sz == BPF_B ? "s8" : sz == BPF_H ? "s16" : sz == BPF_W ? "s32" : "s64";
}

GX_EXPORT int gx_bpf_insn_str(const struct bpf_insn *insns, size_t cnt, size_t idx, char *buf, size_t len)
{
	if (!insns || idx >= cnt || !buf || !len)
		return gx_err(-EINVAL);
	const struct bpf_insn *in = &insns[idx];
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	char r = cls == BPF_ALU || cls == BPF_JMP32 ? 'w' : 'r';
	char src[32];
	if (BPF_SRC(in->code) == BPF_X)
		snprintf(src, sizeof(src), "%c%d", r, in->src_reg);
	else
		snprintf(src, sizeof(src), "%d", in->imm);
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		if (op == BPF_NEG)
			snprintf(buf, len, "%c%d = -%c%d", r, in->dst_reg, r, in->dst_reg);
		else if (op == BPF_END && cls == BPF_ALU64)
			snprintf(buf, len, "r%d = bswap%d r%d", in->dst_reg, in->imm, in->dst_reg);
		else if (op == BPF_END)
			snprintf(buf, len, "r%d = %s%d r%d", in->dst_reg, BPF_SRC(in->code) == BPF_TO_BE ? "be" : "le",
				 in->imm, in->dst_reg);
		else if (op == BPF_MOV && in->off)
			snprintf(buf, len, "%c%d = (s%d)%c%d", r, in->dst_reg, in->off, r, in->src_reg);
		else if ((op == BPF_DIV || op == BPF_MOD) && in->off == 1)
			snprintf(buf, len, "%c%d s%s %s", r, in->dst_reg, alu_op[op >> 4], src);
		else
			snprintf(buf, len, "%c%d %s %s", r, in->dst_reg, alu_op[op >> 4], src);
		return 1;
	case BPF_LD:
		if (in->code == (BPF_LD | BPF_IMM | BPF_DW) && idx + 1 < cnt) {
			const struct bpf_insn *in2 = in + 1;
			switch (in->src_reg) {
			case BPF_PSEUDO_MAP_IDX:
				snprintf(buf, len, "r%d = map[%d] ll", in->dst_reg, in->imm);
				break;
			case BPF_PSEUDO_MAP_IDX_VALUE:
				snprintf(buf, len, "r%d = map[%d] + %d ll", in->dst_reg, in->imm, in2->imm);
				break;
			case BPF_PSEUDO_FUNC:
				snprintf(buf, len, "r%d = func insn %lld ll", in->dst_reg, (long long)idx + in->imm + 1);
				break;
			default:
				snprintf(buf, len, "r%d = %#" PRIx64 " ll", in->dst_reg,
					 (uint64_t)(uint32_t)in->imm | ((uint64_t)(uint32_t)in2->imm << 32));
			}
			return 2;
		}
		snprintf(buf, len, "(invalid ld 0x%02x)", in->code);
		return 1;
	case BPF_LDX:
		snprintf(buf, len, "r%d = *(%s *)(r%d %+d)", in->dst_reg,
			 BPF_MODE(in->code) == BPF_MEMSX ? ssz_name(BPF_SIZE(in->code)) : sz_name(BPF_SIZE(in->code)),
			 in->src_reg, in->off);
		return 1;
	case BPF_ST:
		snprintf(buf, len, "*(%s *)(r%d %+d) = %d", sz_name(BPF_SIZE(in->code)), in->dst_reg, in->off, in->imm);
		return 1;
	case BPF_STX:
		if (BPF_MODE(in->code) == BPF_ATOMIC) {
			const char *nm = "?";
			switch (in->imm & ~BPF_FETCH) {
			case BPF_ADD: nm = "add"; break;
			case BPF_AND: nm = "and"; break;
			case BPF_OR: nm = "or"; break;
			case BPF_XOR: nm = "xor"; break;
			}
			if (in->imm == BPF_XCHG)
				nm = "xchg";
			if (in->imm == BPF_CMPXCHG)
				nm = "cmpxchg";
			snprintf(buf, len, "lock %s%s *(%s *)(r%d %+d), r%d", nm,
				 (in->imm & BPF_FETCH) && in->imm != BPF_XCHG && in->imm != BPF_CMPXCHG ? " fetch" : "",
				 sz_name(BPF_SIZE(in->code)), in->dst_reg, in->off, in->src_reg);
			return 1;
		}
		snprintf(buf, len, "*(%s *)(r%d %+d) = r%d", sz_name(BPF_SIZE(in->code)), in->dst_reg, in->off,
			 in->src_reg);
		return 1;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_EXIT) {
			snprintf(buf, len, "exit");
		} else if (op == BPF_CALL) {
			if (in->src_reg == BPF_PSEUDO_CALL)
				snprintf(buf, len, "call insn %lld", (long long)idx + in->imm + 1);
			else if (vhelper_name(in->imm))
				snprintf(buf, len, "call %s#%d", vhelper_name(in->imm), in->imm);
			else
				snprintf(buf, len, "call %d", in->imm);
		} else if (op == BPF_JA) {
			long long t = (long long)idx + (cls == BPF_JMP32 ? in->imm : in->off) + 1;
			snprintf(buf, len, "goto insn %lld", t);
		} else {
			snprintf(buf, len, "if %c%d %s %s goto insn %lld", r, in->dst_reg, jmp_op[op >> 4], src,
				 (long long)idx + in->off + 1);
		}
		return 1;
	}
	snprintf(buf, len, "(invalid 0x%02x)", in->code);
	return 1;
}

void vfacts_record(struct venv *env, uint32_t idx, const struct vstate *st)
{
	struct gx_vfacts *fa = &env->facts[idx];
	const struct vframe *f = st->frames[st->nframes - 1];
	fa->frame = (uint8_t)(st->nframes - 1);
	for (int r = 0; r < 11; r++) {
		const struct vreg *x = &f->regs[r];
		struct vreg *j = &fa->regs[r];
		if (!fa->seen) {
			*j = *x;
			continue;
		}
		/* pointers of one type into different maps or frames (a
		 * subprogram's exits may return values of different maps) */
		if (j->type != x->type ||
		    (x->type != V_SCALAR && (j->map_idx != x->map_idx || j->frame != x->frame))) {
			j->type = 0xff; /* mixed */
			j->varying |= x->varying;
			continue;
		}
		j->varying |= x->varying;
		if (x->umin < j->umin) j->umin = x->umin;
		if (x->umax > j->umax) j->umax = x->umax;
		if (x->smin < j->smin) j->smin = x->smin;
		if (x->smax > j->smax) j->smax = x->smax;
		if (x->omin < j->omin) j->omin = x->omin;
		if (x->omax > j->omax) j->omax = x->omax;
	}
	fa->seen++;
}

static void reg_str(const struct vreg *r, const struct gx_bpf_object *obj, char *buf, size_t len)
{
	const char *v = r->varying ? " VARYING" : "";
	switch (r->type) {
	case V_SCALAR:
		if (r->umin == r->umax)
			snprintf(buf, len, "%#" PRIx64 "%s", r->umin, v);
		else if (r->umin == 0 && r->umax == UINT64_MAX && r->smin == INT64_MIN && r->smax == INT64_MAX)
			snprintf(buf, len, "scalar%s", v);
		else if (r->smin < 0)
			snprintf(buf, len, "scalar[s %" PRId64 "..%" PRId64 "]%s", r->smin, r->smax, v);
		else
			snprintf(buf, len, "scalar[%" PRIu64 "..%" PRIu64 "]%s", r->umin, r->umax, v);
		return;
	case V_PTR_CTX:
		snprintf(buf, len, "ctx%+" PRId64 "%s", r->omin, v);
		return;
	case V_PTR_STACK:
		snprintf(buf, len, "fp%d%+" PRId64 "%s", r->frame, r->omin, v);
		return;
	case V_CONST_MAP:
		snprintf(buf, len, "map(%s)", obj->maps[r->map_idx].name);
		return;
	case V_PTR_MAP_VALUE:
	case V_PTR_MAP_VALUE_OR_NULL:
		if (r->omin == r->omax)
			snprintf(buf, len, "%s(%s)%+" PRId64 "%s", r->type == V_PTR_MAP_VALUE ? "value" : "value_or_null",
				 obj->maps[r->map_idx].name, r->omin, v);
		else
			snprintf(buf, len, "value(%s)+[%" PRId64 "..%" PRId64 "]%s", obj->maps[r->map_idx].name,
				 r->omin, r->omax, v);
		return;
	case V_PTR_FUNC:
		snprintf(buf, len, "func(insn %d)", r->map_idx);
		return;
	case V_PTR_ARG:
		if (r->omin == r->omax)
			snprintf(buf, len, "arg%d%+" PRId64 "%s", r->map_idx, r->omin, v);
		else
			snprintf(buf, len, "arg%d+[%" PRId64 "..%" PRId64 "]%s", r->map_idx, r->omin, r->omax, v);
		return;
	case 0xff:
		snprintf(buf, len, "mixed%s", v);
		return;
	}
	snprintf(buf, len, "?");
}

GX_EXPORT int gx_bpf_prog__dump(const struct gx_bpf_prog *prog, FILE *f)
{
	if (!prog || !f)
		return gx_err(-EINVAL);
	for (size_t i = 0; i < prog->insn_cnt;) {
		char line[160];
		int n = gx_bpf_insn_str(prog->insns, prog->insn_cnt, i, line, sizeof(line));
		if (n < 1)
			n = 1;
		bool vary = prog->varying && prog->varying[i];
		if (prog->facts) {
			/* what held on entry to the insn, joined over all paths */
			const struct gx_vfacts *fa = &prog->facts[i];
			if (!fa->seen) {
				fprintf(f, "       ; not reached\n");
			} else {
				fprintf(f, "       ;");
				if (fa->frame)
					fprintf(f, " frame %d", fa->frame);
				for (int r = 0; r < 11; r++) {
					if (fa->regs[r].type == V_NOT_INIT)
						continue;
					char rb[96];
					reg_str(&fa->regs[r], prog->obj, rb, sizeof(rb));
					fprintf(f, " r%d=%s", r, rb);
				}
				fprintf(f, "\n");
			}
		}
		fprintf(f, "%5zu: %-44s%s\n", i, line, vary ? " ; lane-varying" : "");
		i += (size_t)n;
	}
	return 0;
}
